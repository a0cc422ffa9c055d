//! Model selection as Spark's `pyspark.ml.tuning` does it: a [`ParamGridBuilder`] grid of parameter values,
//! tried on any estimator by [`TrainValidationSplit`] or [`CrossValidator`] with `parallelism` trials at
//! once, the best refitted on all the data, every [`Trial`]'s metrics returned. [`search`] is the loop under
//! them, which SQL's `num_trials` runs too.

mod grid;
pub mod search;
mod validation;

pub use grid::{ParamGridBuilder, ParamMap, with_params};
pub use validation::{CrossValidator, TrainValidationSplit, Trial, TuningModel};
