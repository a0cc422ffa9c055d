//! # hearth-stats
//!
//! The statistics hearth computes without libtorch: [`evaluation`] holds the evaluators' mergeable states
//! (binary, multiclass, regression, clustering), [`clustering`] k-means' distance measures, per-cluster sums,
//! k-means++ and silhouette, and [`random`] the seeded draws every sampler shares, so a result does not depend
//! on the platform's random generator.
//!
//! ```
//! use hearth_stats::evaluation::RegressionState;
//!
//! let mut state = RegressionState::default();
//! state.add(1.0, 1.5, 1.0);
//! state.add(3.0, 2.5, 1.0);
//! assert_eq!((state.weight(), state.mae()), (2.0, 0.5));
//! ```

// No function over 80 lines in the library (clippy.toml); tests, examples and benchmarks are exempt.
#![warn(clippy::too_many_lines)]

pub mod clustering;
pub mod evaluation;
pub mod random;
