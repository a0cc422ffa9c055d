//! `ML.FEATURE_INFO`: the fitted preprocessing stages.

use datafusion::logical_expr::LogicalPlan;
use hearth_exec::error::Result;

use super::{MlArgs, MlTableFunction, ModelKind};
use crate::ml_functions::MlFunction;
use crate::table_functions::feature_info;

/// How a query calls `ML.FEATURE_INFO` and what it gives.
pub(super) const DECLARATION: MlFunction = MlFunction {
    name: "feature_info",
    syntax: "ML.FEATURE_INFO(MODEL m)",
    takes_rows: false,
    settings: None,
    gives: "A row per fitted preprocessing stage: `stage`, `class`, `uid`, `state` (its labels, sizes, means \
                or standard deviations, as text) and `params` (JSON).",
};

/// `ML.FEATURE_INFO`.
pub(super) struct FeatureInfo;

impl MlTableFunction for FeatureInfo {
    fn declaration(&self) -> &'static MlFunction {
        &DECLARATION
    }

    fn plan(&self, args: &MlArgs<'_>, _kind: &dyn ModelKind) -> Result<LogicalPlan> {
        feature_info(args.model)
    }
}
