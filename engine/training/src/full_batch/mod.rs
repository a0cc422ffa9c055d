//! Full-batch fits on the barrier stage, the way Spark fits its linear models and perceptron: every rank reads
//! its partition into a shard and runs the same solver (`hearth-optim`), each pass's totals summed over the ranks,
//! so every rank takes the same steps; rank 0 hands the fitted model to the driver. [`linear`](crate::linear)
//! and [`perceptron`](crate::perceptron) are its estimators.

mod fit;
mod function;
mod shard;

pub(crate) use fit::{Fitted, Inputs, check_params, fit_full_batch};
pub use function::{FULL_BATCH_FUNCTION, FullBatchArgs, FullBatchFit, FullBatchFunction, FullBatchModel};
