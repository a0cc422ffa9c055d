//! `ML.TRIAL_INFO`: a tuned model's trials.

use datafusion::logical_expr::LogicalPlan;
use hearth_exec::error::Result;

use super::{MlArgs, MlTableFunction, ModelKind};
use crate::ml_functions::MlFunction;
use crate::trials::trial_info;

/// How a query calls `ML.TRIAL_INFO` and what it gives.
pub(super) const DECLARATION: MlFunction = MlFunction {
    name: "trial_info",
    syntax: "ML.TRIAL_INFO(MODEL m)",
    takes_rows: false,
    settings: None,
    gives: "A row per tuning trial: `trial_id`, `hyperparameters`, `hparam_tuning_evaluation_metrics`, \
                `training_loss`, `eval_loss`, `status`, `error_message`, `start_seconds`, `seconds`, `is_optimal`.",
};

/// `ML.TRIAL_INFO`.
pub(super) struct TrialInfo;

impl MlTableFunction for TrialInfo {
    fn declaration(&self) -> &'static MlFunction {
        &DECLARATION
    }

    fn plan(&self, args: &MlArgs<'_>, _kind: &dyn ModelKind) -> Result<LogicalPlan> {
        trial_info(args.model)
    }
}
