//! `ML.EVALUATE`: a model's metrics over the rows given or held out.

use datafusion::logical_expr::LogicalPlan;
use hearth_exec::error::Result;

use super::{MlArgs, MlTableFunction, ModelKind};
use crate::ml_functions::MlFunction;

/// How a query calls `ML.EVALUATE` and what it gives.
pub(super) const DECLARATION: MlFunction = MlFunction {
    name: "evaluate",
    syntax: "ML.EVALUATE(MODEL m [, rows])",
    takes_rows: true,
    settings: None,
    gives: "One row of metrics, over the rows given or else the rows held out when training: a classifier's \
                `f1`, `accuracy`, `weightedPrecision`, `weightedRecall`, `logLoss` (and `areaUnderROC`, \
                `areaUnderPR` for two classes); a regressor's `rmse`, `mse`, `mae`, `r2`, `var` and BigQuery's \
                `mean_absolute_error`, `mean_squared_error`, `r2_score`; k-means' `davies_bouldin_index` and \
                `mean_squared_distance` (without rows: its training rows', computed when it was created).",
};

/// `ML.EVALUATE`.
pub(super) struct Evaluate;

impl MlTableFunction for Evaluate {
    fn declaration(&self) -> &'static MlFunction {
        &DECLARATION
    }

    fn plan(&self, args: &MlArgs<'_>, kind: &dyn ModelKind) -> Result<LogicalPlan> {
        kind.evaluate(args)
    }
}
