//! `ML.TRAINING_INFO`: the training's figures.

use datafusion::logical_expr::LogicalPlan;
use hearth_exec::error::Result;

use super::{MlArgs, MlTableFunction, ModelKind};
use crate::ml_functions::MlFunction;

/// How a query calls `ML.TRAINING_INFO` and what it gives.
pub(super) const DECLARATION: MlFunction = MlFunction {
    name: "training_info",
    syntax: "ML.TRAINING_INFO(MODEL m)",
    takes_rows: false,
    settings: None,
    gives: "A row per epoch: `attempt`, `epoch`, `loss`, `accuracy`, `validation_loss`, \
                `validation_accuracy`, `learning_rate`, `duration_ms`; a linear model solved exactly: a row per \
                solver iteration from 0, its objective in `loss` (a normal-equation solve: row 0 alone, `loss` \
                NULL); k-means: one row of `iterations`, `training_cost`, `cluster_sizes`.",
};

/// `ML.TRAINING_INFO`.
pub(super) struct TrainingInfo;

impl MlTableFunction for TrainingInfo {
    fn declaration(&self) -> &'static MlFunction {
        &DECLARATION
    }

    fn plan(&self, args: &MlArgs<'_>, kind: &dyn ModelKind) -> Result<LogicalPlan> {
        kind.training_info(args.model)
    }
}
