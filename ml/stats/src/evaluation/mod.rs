//! Evaluator math with Spark MLlib's definitions. Each evaluation is a mergeable state — rows are added on
//! the partitions, states merged, metrics read at the end — so the engine runs it as an aggregate.

mod binary;
mod clustering;
pub(crate) mod encoding;
mod multiclass;
mod regression;

pub use binary::{BinaryState, ThresholdCounts};
pub use clustering::{ClusteringState, hungarian};
pub use encoding::StateDecodeError;
pub use multiclass::MulticlassState;
pub use regression::RegressionState;
