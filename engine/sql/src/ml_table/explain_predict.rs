//! `ML.EXPLAIN_PREDICT`: predictions with each row's largest feature attributions.

use datafusion::logical_expr::LogicalPlan;
use hearth_exec::error::Result;

use super::{MlArgs, MlTableFunction, ModelKind};
use crate::explain::explain_predict;
use crate::ml_functions::MlFunction;

/// How a query calls `ML.EXPLAIN_PREDICT` and what it gives.
pub(super) const DECLARATION: MlFunction = MlFunction {
    name: "explain_predict",
    syntax: "ML.EXPLAIN_PREDICT(MODEL m, rows [, settings])",
    takes_rows: true,
    settings: Some("`STRUCT(k AS top_k_features)`: how many attributions each row keeps (5 by default)"),
    gives: "`ML.PREDICT`'s columns plus `top_feature_attributions` (the largest by magnitude, by integrated \
                gradients from the training rows' mean), `baseline_prediction_value`, `prediction_value` and \
                `approximation_error`; network, `linear_reg` and `logistic_reg` models (not k-means).",
};

/// `ML.EXPLAIN_PREDICT`.
pub(super) struct ExplainPredict;

impl MlTableFunction for ExplainPredict {
    fn declaration(&self) -> &'static MlFunction {
        &DECLARATION
    }

    fn check_kind(&self, args: &MlArgs<'_>, kind: &dyn ModelKind) -> Result<()> {
        kind.labelled(args)
    }

    fn plan(&self, args: &MlArgs<'_>, _kind: &dyn ModelKind) -> Result<LogicalPlan> {
        explain_predict(args.model, args.rows("the rows to explain are missing")?, args.settings)
    }
}
