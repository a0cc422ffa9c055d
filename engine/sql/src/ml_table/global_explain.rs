//! `ML.GLOBAL_EXPLAIN`: each feature's mean attribution.

use datafusion::logical_expr::LogicalPlan;
use hearth_exec::error::Result;

use super::{MlArgs, MlTableFunction, ModelKind};
use crate::explain::global_explain;
use crate::ml_functions::MlFunction;

/// How a query calls `ML.GLOBAL_EXPLAIN` and what it gives.
pub(super) const DECLARATION: MlFunction = MlFunction {
    name: "global_explain",
    syntax: "ML.GLOBAL_EXPLAIN(MODEL m [, rows])",
    takes_rows: true,
    settings: None,
    gives: "Each feature's mean attribution magnitude (`feature`, `attribution`) over the held-out rows or \
                the rows given; network, `linear_reg` and `logistic_reg` models (not k-means).",
};

/// `ML.GLOBAL_EXPLAIN`.
pub(super) struct GlobalExplain;

impl MlTableFunction for GlobalExplain {
    fn declaration(&self) -> &'static MlFunction {
        &DECLARATION
    }

    fn check_kind(&self, args: &MlArgs<'_>, kind: &dyn ModelKind) -> Result<()> {
        kind.labelled(args)
    }

    fn plan(&self, args: &MlArgs<'_>, _kind: &dyn ModelKind) -> Result<LogicalPlan> {
        global_explain(args.model, args.rows_or_held_out()?)
    }
}
