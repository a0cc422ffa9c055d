//! When a quasi-Newton solve stops, as Breeze decides it for Spark: iterations used up, the objective no
//! longer moving, the gradient small, or the line search failed twice.

use serde::{Deserialize, Serialize};

/// Why a solve stopped.
///
/// ```
/// use hearth_optim::Stop;
/// assert_eq!(Stop::MaxIterations.to_string(), "max iterations reached");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stop {
    /// `max_iter` iterations ran.
    MaxIterations,
    /// The objective moved less than `tol` relative to its first value over the remembered iterations.
    FunctionValues,
    /// The gradient's norm fell below `tol` relative to the objective.
    Gradient,
    /// No step decreased the objective, even after the curvature memory was cleared.
    SearchFailed,
    /// Nothing to iterate: solved in closed form (a Cholesky solve, a constant label).
    Direct,
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Stop::MaxIterations => "max iterations reached",
            Stop::FunctionValues => "function values converged",
            Stop::Gradient => "gradient converged",
            Stop::SearchFailed => "line search failed",
            Stop::Direct => "solved directly",
        })
    }
}

/// The objective values a solve remembers for its function-values test.
const REMEMBERED_VALUES: usize = 20;

/// The stopping rule: Breeze's default convergence check of `maxIter` and `tol`, relative.
#[derive(Clone, Debug)]
pub(crate) struct Convergence {
    max_iter: usize,
    tol: f64,
    /// The last objective values, oldest first.
    recent: Vec<f64>,
}

impl Convergence {
    pub(crate) fn new(max_iter: usize, tol: f64) -> Self {
        Self {
            max_iter,
            tol,
            recent: vec![f64::INFINITY],
        }
    }

    /// Records the objective of an iteration just taken.
    pub(crate) fn record(&mut self, value: f64) {
        self.recent.push(value);
        if self.recent.len() > REMEMBERED_VALUES {
            self.recent.remove(0);
        }
    }

    /// Whether to stop after `iterations`, at objective `value` with a gradient of norm `gradient_norm`, the
    /// first objective having been `initial` and the last line search having failed or not.
    pub(crate) fn stop(
        &self,
        iterations: usize,
        (value, gradient_norm): (f64, f64),
        initial: f64,
        search_failed: bool,
    ) -> Option<Stop> {
        if iterations >= self.max_iter {
            return Some(Stop::MaxIterations);
        }
        let largest = self.recent.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if self.recent.len() >= 2 && (value - largest).abs() <= self.tol * initial.abs() {
            return Some(Stop::FunctionValues);
        }
        if gradient_norm <= (self.tol * value.abs()).max(1e-8) {
            return Some(Stop::Gradient);
        }
        search_failed.then_some(Stop::SearchFailed)
    }
}
