//! L-BFGS, OWL-QN when coordinates carry an L1 penalty, and L-BFGS-B within bounds: the quasi-Newton
//! minimizers Spark fits `LogisticRegression`, `LinearRegression` and `MultilayerPerceptronClassifier` with, step
//! for step as Breeze (Spark's optimizer library) takes them, so a solve stops where Spark's stops.

use crate::convergence::{Minimum, Progress};
use crate::history::InverseHessian;
use crate::lbfgsb::Bounds;
use crate::line_search::{Backtracking, LineFunction, Probe, StrongWolfe};
use crate::objective::{Cached, Objective};
use crate::owlqn::L1;
use crate::vector::{difference, dot, norm, stepped};

/// Minimizes a smooth objective by L-BFGS with a strong Wolfe line search, by OWL-QN with a backtracking one
/// when [`l1`](Self::l1) gives a coordinate a positive penalty, or by L-BFGS-B within [`bounds`](Self::bounds).
/// Spark's defaults: 100 iterations, a memory of 10 pairs, a relative tolerance of 1e-6.
///
/// The solve is deterministic: the same objective values give the same steps on every machine, so ranks
/// that each run it on allreduced values take identical steps.
///
/// ```
/// use hearth_optim::Lbfgs;
/// // f(x, y) = (x − 1)² + 10·(y + 2)²
/// let mut f = |p: &mut [f64]| {
///     let (x, y) = (p[0], p[1]);
///     Ok::<_, ()>(((x - 1.0).powi(2) + 10.0 * (y + 2.0).powi(2), vec![2.0 * (x - 1.0), 20.0 * (y + 2.0)]))
/// };
/// let minimum = Lbfgs::new().tol(1e-10).minimize(&mut f, vec![0.0, 0.0]).unwrap();
/// assert!((minimum.x[0] - 1.0).abs() < 1e-6 && (minimum.x[1] + 2.0).abs() < 1e-6);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Lbfgs {
    max_iter: usize,
    memory: usize,
    tol: f64,
    l1: Vec<f64>,
    bounds: Option<Bounds>,
}

impl Default for Lbfgs {
    fn default() -> Self {
        Self {
            max_iter: 100,
            memory: 10,
            tol: 1e-6,
            l1: Vec::new(),
            bounds: None,
        }
    }
}

/// One iterate: the point, its objective and gradient, and both with the L1 term added.
#[derive(Clone, Debug)]
struct State {
    x: Vec<f64>,
    value: f64,
    gradient: Vec<f64>,
    adjusted_value: f64,
    adjusted_gradient: Vec<f64>,
}

/// Why an iteration took no step.
enum NoStep {
    /// The curvature memory gave an unusable direction or the line search found no step.
    Failed,
}

impl Lbfgs {
    /// Spark's defaults (see the type).
    pub fn new() -> Self {
        Self::default()
    }

    /// At most this many iterations (Spark's `maxIter`).
    pub fn max_iter(mut self, max_iter: usize) -> Self {
        self.max_iter = max_iter;
        self
    }

    /// Remember this many curvature pairs (Spark: 10).
    pub fn memory(mut self, memory: usize) -> Self {
        self.memory = memory;
        self
    }

    /// The relative tolerance of the stopping tests (Spark's `tol`).
    pub fn tol(mut self, tol: f64) -> Self {
        self.tol = tol;
        self
    }

    /// An L1 penalty `Σ lᵢ·|xᵢ|` on the coordinates, one non-negative weight each: the solve becomes
    /// OWL-QN when any is positive.
    pub fn l1(mut self, weights: Vec<f64>) -> Self {
        self.l1 = weights;
        self
    }

    /// Keep every point within `bounds`: the solve becomes L-BFGS-B (which takes no L1 penalty).
    pub fn bounds(mut self, bounds: Bounds) -> Self {
        self.bounds = Some(bounds);
        self
    }

    /// `x` within the bounds, if any.
    pub fn clip(&self, x: Vec<f64>) -> Vec<f64> {
        match &self.bounds {
            Some(bounds) => bounds.clip(x),
            None => x,
        }
    }

    /// The minimum from `x0`; an error of the objective ends the solve with it.
    pub fn minimize<O: Objective>(&self, objective: &mut O, x0: Vec<f64>) -> Result<Minimum, O::Error> {
        if let Some(bounds) = &self.bounds {
            let limits = (self.max_iter, self.tol);
            return crate::lbfgsb::minimize(bounds, self.memory, limits, objective, x0);
        }
        let l1 = L1::new(&self.l1);
        let mut f = Cached::new(objective);
        let mut state = evaluated(&mut f, &l1, x0)?;
        let mut history = InverseHessian::new(self.memory);
        let mut progress = Progress::new(self.max_iter, self.tol, state.adjusted_value);
        let stop = loop {
            if let Some(stop) = progress.stop(state.adjusted_value, norm(&state.adjusted_gradient)) {
                break stop;
            }
            match self.iterate(&mut f, &l1, &state, &history, progress.iterations())? {
                Ok(next) => {
                    history.push(
                        difference(&next.x, &state.x),
                        difference(&next.gradient, &state.gradient),
                    );
                    progress.stepped(next.adjusted_value);
                    state = next;
                }
                Err(NoStep::Failed) => {
                    if progress.failed(state.adjusted_value) {
                        history = InverseHessian::new(self.memory);
                    }
                }
            }
        };
        Ok(progress.finish(state.x, stop, f.evaluations()))
    }

    /// One iteration from `state`: a direction, a step along it, the objective there.
    fn iterate<O: Objective>(
        &self,
        f: &mut Cached<'_, O>,
        l1: &L1,
        state: &State,
        history: &InverseHessian,
        iteration: usize,
    ) -> Result<Result<State, NoStep>, O::Error> {
        let Ok(direction) = history.direction(&state.adjusted_gradient) else {
            return Ok(Err(NoStep::Failed));
        };
        if l1.is_none() {
            let mut line = Line {
                f,
                l1,
                state,
                direction: &direction,
                project: false,
            };
            let start = if iteration == 0 { 1.0 / norm(&direction) } else { 1.0 };
            let search = StrongWolfe {
                max_zoom: 10,
                max_search: 10,
                bound: f64::INFINITY,
            };
            let Ok(t) = search.search(&mut line, start)? else {
                return Ok(Err(NoStep::Failed));
            };
            if t * norm(&state.gradient) < 1e-10 {
                return Ok(Err(NoStep::Failed));
            }
            return evaluated(f, l1, stepped(&state.x, &direction, t)).map(Ok);
        }
        let direction = l1.corrected(direction, &state.adjusted_gradient);
        let mut line = Line {
            f,
            l1,
            state,
            direction: &direction,
            project: true,
        };
        let search = Backtracking::owlqn(state.value, iteration);
        let start = if iteration == 0 {
            0.5 / norm(&state.gradient)
        } else {
            1.0
        };
        let Ok(t) = search.search(&mut line, start)? else {
            return Ok(Err(NoStep::Failed));
        };
        let x = l1.projected(stepped(&state.x, &direction, t), &state.x, &state.adjusted_gradient);
        evaluated(f, l1, x).map(Ok)
    }
}

/// The state at `x`: the objective evaluated, and adjusted by the L1 term.
fn evaluated<O: Objective>(f: &mut Cached<'_, O>, l1: &L1, mut x: Vec<f64>) -> Result<State, O::Error> {
    let (value, gradient) = f.evaluate(&mut x)?;
    let (adjusted_value, adjusted_gradient) = l1.adjust(&x, &gradient, value);
    Ok(State {
        x,
        value,
        gradient,
        adjusted_value,
        adjusted_gradient,
    })
}

/// The objective along the search direction from a state, as the line searches probe it.
struct Line<'s, 'f, O: Objective> {
    f: &'s mut Cached<'f, O>,
    l1: &'s L1,
    state: &'s State,
    direction: &'s [f64],
    /// OWL-QN's line: the stepped point is projected on the state's orthant, values and slopes adjusted.
    project: bool,
}

impl<O: Objective> LineFunction<O::Error> for Line<'_, '_, O> {
    fn probe(&mut self, t: f64) -> Result<Probe, O::Error> {
        let mut x = stepped(&self.state.x, self.direction, t);
        if self.project {
            x = self.l1.projected(x, &self.state.x, &self.state.adjusted_gradient);
        }
        let (value, gradient) = self.f.evaluate(&mut x)?;
        let (value, gradient) = self.l1.adjust(&x, &gradient, value);
        Ok(Probe {
            t,
            value,
            slope: dot(&gradient, self.direction),
        })
    }
}
