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
    /// Within bounds (L-BFGS-B): the projected gradient step is below 1e-5 in every coordinate.
    ProjectedGradient,
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
            Stop::ProjectedGradient => "projected gradient converged",
            Stop::Direct => "solved directly",
        })
    }
}

/// Where a solve ended and how it got there.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Minimum {
    /// The last point.
    pub x: Vec<f64>,
    /// The objective (with its L1 term) at the start and after every iteration: Spark's `objectiveHistory`.
    pub objective_history: Vec<f64>,
    /// The iterations taken (`objective_history` has one more entry, the start).
    pub iterations: usize,
    /// Why it stopped.
    pub stop: Stop,
    /// How many times the objective was evaluated (passes over the data).
    pub evaluations: usize,
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

/// A solve's bookkeeping, as Breeze's `FirstOrderMinimizer` keeps it for every minimizer: the stopping rule,
/// the objective after each iteration, and the failed searches (the first clears the memory, a second right
/// after it stops the solve).
#[derive(Clone, Debug)]
pub(crate) struct Progress {
    convergence: Convergence,
    initial: f64,
    objective_history: Vec<f64>,
    iterations: usize,
    failed_once: bool,
    search_failed: bool,
}

impl Progress {
    /// A solve of at most `max_iter` iterations to tolerance `tol`, starting at objective `initial`.
    pub(crate) fn new(max_iter: usize, tol: f64, initial: f64) -> Self {
        Self {
            convergence: Convergence::new(max_iter, tol),
            initial,
            objective_history: vec![initial],
            iterations: 0,
            failed_once: false,
            search_failed: false,
        }
    }

    /// The iterations taken so far.
    pub(crate) fn iterations(&self) -> usize {
        self.iterations
    }

    /// Whether to stop at objective `value` with a gradient of norm `gradient_norm`.
    pub(crate) fn stop(&self, value: f64, gradient_norm: f64) -> Option<Stop> {
        let at = (value, gradient_norm);
        self.convergence
            .stop(self.iterations, at, self.initial, self.search_failed)
    }

    /// An iteration stepped to objective `value`.
    pub(crate) fn stepped(&mut self, value: f64) {
        self.convergence.record(value);
        self.iterations += 1;
        self.failed_once = false;
        self.objective_history.push(value);
    }

    /// An iteration found no step, at objective `value`: whether to clear the memory and try again (the first
    /// failure; after a second the solve stops).
    pub(crate) fn failed(&mut self, value: f64) -> bool {
        let retry = !self.failed_once;
        self.failed_once = true;
        self.search_failed = !retry;
        self.objective_history.push(value);
        retry
    }

    /// The solve's result: it ended at `x` for `stop`, after `evaluations` evaluations of the objective.
    pub(crate) fn finish(self, x: Vec<f64>, stop: Stop, evaluations: usize) -> Minimum {
        Minimum {
            x,
            objective_history: self.objective_history,
            iterations: self.iterations,
            stop,
            evaluations,
        }
    }
}
