//! Spark MLlib's generalized linear models fitted as Spark fits them: [`fit_logistic`] (`LogisticRegression`) and
//! [`fit_linear`] (`LinearRegression`: the normal equation, or L-BFGS). Every rank calls the same fit on its
//! [`Shard`] with a [`Reduce`] that sums across ranks; each evaluation of the objective is one pass over the
//! shards and one sum, and every rank ends with the same coefficients.

mod bounds;
mod linear;
mod linear_model;
mod logistic;
mod moments;
mod normal_path;
mod penalty;
mod reduce;
mod shard;
#[cfg(test)]
mod spark_reference;
#[cfg(test)]
pub(crate) mod testing;

pub use bounds::{BoundMatrix, LogisticBounds};
pub use linear::fit_linear;
pub use linear_model::{LinearFit, LinearSettings, LinearSolver, MAX_FEATURES_FOR_NORMAL};
pub use logistic::{Family, LogisticFit, LogisticSettings, fit_logistic};
pub use moments::Moments;
#[cfg(test)]
pub(crate) use reduce::threads;
pub use reduce::{Alone, Reduce};
pub use shard::{Shard, ShardError};

use serde::{Deserialize, Serialize};

use crate::{Minimum, Stop};

/// How a fit's solve went: Spark's `objectiveHistory` and `totalIterations`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Solved {
    /// The objective at the start and after each iteration.
    pub objective_history: Vec<f64>,
    /// Iterations taken.
    pub total_iterations: usize,
    /// Why the solver stopped.
    pub stop: Stop,
    /// Passes over the data the solve made.
    pub evaluations: usize,
}

/// A model read without its training record (one Spark saved) reports no iterations.
impl Default for Solved {
    fn default() -> Self {
        Self::unsolved()
    }
}

impl Solved {
    /// What Spark reports when nothing was iterated (a Cholesky solve, a constant label): a history of `[0]`.
    pub(crate) fn unsolved() -> Self {
        Self {
            objective_history: vec![0.0],
            total_iterations: 0,
            stop: Stop::Direct,
            evaluations: 0,
        }
    }
}

impl From<Minimum> for Solved {
    fn from(minimum: Minimum) -> Self {
        Self {
            objective_history: minimum.objective_history,
            total_iterations: minimum.iterations,
            stop: minimum.stop,
            evaluations: minimum.evaluations,
        }
    }
}

/// Why a fit failed.
#[derive(Debug, thiserror::Error)]
pub enum FitError<E> {
    /// Summing across ranks failed.
    #[error("summing across ranks failed: {0}")]
    Ranks(E),
    /// A classification label is not a class index.
    #[error("row {row}: label {label} is not a class index (0, 1, 2, …)")]
    Label {
        /// The row, counted from 0 in this rank's shard.
        row: usize,
        /// The label found.
        label: f64,
    },
    /// The binomial family was asked for more than two classes.
    #[error("family 'binomial' takes 1 or 2 classes, the labels have {num_classes}")]
    Binomial {
        /// Classes found.
        num_classes: usize,
    },
    /// No rank had a row.
    #[error("no rows to fit")]
    NoRows,
    /// The settings cannot be fitted (what is wrong, by name).
    #[error("{0}")]
    Settings(String),
    /// A constant label without an intercept cannot be standardized when regularized.
    #[error("the label is constant ({mean}) and fit_intercept is false: reg_param must be 0")]
    ConstantLabel {
        /// The label's value.
        mean: f64,
    },
}
