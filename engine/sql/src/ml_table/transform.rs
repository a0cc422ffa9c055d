//! `ML.TRANSFORM`: the fitted preprocessing's output for the rows given.

use datafusion::logical_expr::LogicalPlan;
use hearth_exec::error::Result;

use super::{MlArgs, MlTableFunction, ModelKind};
use crate::ml_functions::MlFunction;
use crate::table_functions::transform;

/// How a query calls `ML.TRANSFORM` and what it gives.
pub(super) const DECLARATION: MlFunction = MlFunction {
    name: "transform",
    syntax: "ML.TRANSFORM(MODEL m, rows)",
    takes_rows: true,
    settings: None,
    gives: "The fitted preprocessing's output columns (its `TRANSFORM` select list) for each row, and the \
                label when the rows have it; the rows' other columns are not kept.",
};

/// `ML.TRANSFORM`.
pub(super) struct Transform;

impl MlTableFunction for Transform {
    fn declaration(&self) -> &'static MlFunction {
        &DECLARATION
    }

    fn plan(&self, args: &MlArgs<'_>, _kind: &dyn ModelKind) -> Result<LogicalPlan> {
        transform(args.model, args.rows("the rows to transform are missing")?)
    }
}
