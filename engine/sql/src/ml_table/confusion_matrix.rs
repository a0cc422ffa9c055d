//! `ML.CONFUSION_MATRIX`: a classifier's confusion matrix.

use datafusion::logical_expr::LogicalPlan;
use hearth_exec::error::Result;

use super::{MlArgs, MlTableFunction, ModelKind};
use crate::evaluation_tables::confusion_matrix;
use crate::ml_functions::MlFunction;

/// How a query calls `ML.CONFUSION_MATRIX` and what it gives.
pub(super) const DECLARATION: MlFunction = MlFunction {
    name: "confusion_matrix",
    syntax: "ML.CONFUSION_MATRIX(MODEL m [, rows] [, settings])",
    takes_rows: true,
    settings: Some(
        "`STRUCT(t AS threshold)`: a binary model predicts its positive class at a probability of `t` or more",
    ),
    gives: "A row per actual label (`expected_label`) and a column per predicted label, named as BigQuery \
                names them; over the held-out rows when no rows are given.",
};

/// `ML.CONFUSION_MATRIX`.
pub(super) struct ConfusionMatrix;

impl MlTableFunction for ConfusionMatrix {
    fn declaration(&self) -> &'static MlFunction {
        &DECLARATION
    }

    fn check_kind(&self, args: &MlArgs<'_>, kind: &dyn ModelKind) -> Result<()> {
        kind.labelled(args)
    }

    fn plan(&self, args: &MlArgs<'_>, _kind: &dyn ModelKind) -> Result<LogicalPlan> {
        confusion_matrix(args.model, args.rows_or_held_out()?, args.settings)
    }
}
