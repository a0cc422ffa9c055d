//! `ML.ROC_CURVE`: a binary classifier's ROC curve.

use datafusion::logical_expr::LogicalPlan;
use hearth_exec::error::Result;

use super::{MlArgs, MlTableFunction, ModelKind};
use crate::evaluation_tables::roc_curve;
use crate::ml_functions::MlFunction;

/// How a query calls `ML.ROC_CURVE` and what it gives.
pub(super) const DECLARATION: MlFunction = MlFunction {
    name: "roc_curve",
    syntax: "ML.ROC_CURVE(MODEL m [, rows] [, settings])",
    takes_rows: true,
    settings: Some(
        "`GENERATE_ARRAY(start, end, step)` or `[t, …]`: the thresholds (none given: every distinct score, or \
             from 200 of them on, Spark's 100 to 199 down-sampled groups)",
    ),
    gives: "A binary classifier's `threshold`, `recall`, `false_positive_rate`, `true_positives`, \
                `false_positives`, `true_negatives`, `false_negatives` per threshold; over the held-out rows \
                when no rows are given.",
};

/// `ML.ROC_CURVE`.
pub(super) struct RocCurve;

impl MlTableFunction for RocCurve {
    fn declaration(&self) -> &'static MlFunction {
        &DECLARATION
    }

    fn check_kind(&self, args: &MlArgs<'_>, kind: &dyn ModelKind) -> Result<()> {
        kind.labelled(args)
    }

    fn plan(&self, args: &MlArgs<'_>, _kind: &dyn ModelKind) -> Result<LogicalPlan> {
        roc_curve(args.model, args.rows_or_held_out()?, args.settings)
    }
}
