//! # hearth-optim
//!
//! The full-batch solvers Spark MLlib fits its linear models and perceptron with, and those fits ([`glm`],
//! [`perceptron`]), without libtorch:
//! [`Lbfgs`] (L-BFGS with a strong Wolfe line search; OWL-QN when coordinates carry an L1 penalty; L-BFGS-B
//! within [`Bounds`]) and
//! [`normal_equation`] (a Cholesky solve of a Gram matrix). They take their steps as Breeze — Spark's optimizer
//! library — takes them, so a solve stops where Spark's stops and gives Spark's coefficients.
//!
//! A solver sees only an [`Objective`]: in hearth each rank evaluates its shard and an allreduce sums the
//! ranks' values and gradients, so every rank takes the same steps.
//!
//! ```
//! use hearth_optim::{Lbfgs, Stop};
//!
//! // Least squares of y = 2x on three points: f(w) = ½·Σ (w·x − y)².
//! let (xs, ys) = ([1.0, 2.0, 3.0], [2.0, 4.0, 6.0]);
//! let mut f = |w: &mut [f64]| {
//!     let residuals: Vec<f64> = xs.iter().zip(&ys).map(|(x, y)| w[0] * x - y).collect();
//!     let value = 0.5 * residuals.iter().map(|r| r * r).sum::<f64>();
//!     let gradient = residuals.iter().zip(&xs).map(|(r, x)| r * x).sum::<f64>();
//!     Ok::<_, ()>((value, vec![gradient]))
//! };
//! let minimum = Lbfgs::new().minimize(&mut f, vec![0.0]).unwrap();
//! assert!((minimum.x[0] - 2.0).abs() < 1e-6);
//! assert_ne!(minimum.stop, Stop::MaxIterations);
//! ```

// No function over 80 lines in the library (clippy.toml); tests, examples and benchmarks are exempt.
#![warn(clippy::too_many_lines)]

mod convergence;
pub mod glm;
mod history;
mod lbfgs;
mod lbfgsb;
mod line_search;
mod normal;
mod objective;
mod owlqn;
pub mod perceptron;
mod vector;

pub use convergence::{Minimum, Stop};
pub use history::{BadCurvature, InverseHessian};
pub use lbfgs::Lbfgs;
pub use lbfgsb::Bounds;
pub use normal::{NotPositiveDefinite, normal_equation, normal_equation_and_inverse_diagonal};
pub use objective::Objective;
