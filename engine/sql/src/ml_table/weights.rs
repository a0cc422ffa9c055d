//! `ML.WEIGHTS`: a linear model's weights.

use datafusion::logical_expr::LogicalPlan;
use hearth_exec::error::Result;

use super::{MlArgs, MlTableFunction, ModelKind};
use crate::ml_functions::MlFunction;
use crate::weights::weights;

/// How a query calls `ML.WEIGHTS` and what it gives.
pub(super) const DECLARATION: MlFunction = MlFunction {
    name: "weights",
    syntax: "ML.WEIGHTS(MODEL m [, settings])",
    takes_rows: false,
    settings: Some("`STRUCT(TRUE AS standardize)`: each number's weight per standard deviation instead of per unit"),
    gives: "A linear model's weights in its input columns' units: `processed_input` (the intercept as \
                `__INTERCEPT__`), `weight`, a string column's `category_weights` (`[{category, weight}, …]`), \
                and `class_label` for a multinomial logistic regression.",
};

/// `ML.WEIGHTS`.
pub(super) struct Weights;

impl MlTableFunction for Weights {
    fn declaration(&self) -> &'static MlFunction {
        &DECLARATION
    }

    fn plan(&self, args: &MlArgs<'_>, _kind: &dyn ModelKind) -> Result<LogicalPlan> {
        weights(args.model, args.settings)
    }
}
