//! L-BFGS-B: L-BFGS within a box `lower ≤ x ≤ upper` (Byrd, Lu, Nocedal & Zhu, 1995), which Spark fits
//! `LogisticRegression` with when bounds are set on its coefficients or intercepts — step for step as Breeze's
//! `LBFGSB`: a compact memory, the generalized Cauchy point, subspace minimization, a strong Wolfe search
//! bounded by the box, every point clipped into it. It stops when the projected gradient is below 1e-5, or by
//! [`Lbfgs`](crate::Lbfgs)'s tests.

mod cauchy;
mod compact;

use crate::convergence::{Minimum, Progress, Stop};
use crate::line_search::{LineFunction, Probe, StrongWolfe};
use crate::objective::{Cached, Objective};
use crate::vector::{difference, dot, norm};
use cauchy::{cauchy_point, subspace_minimum};
use compact::CompactHistory;

/// Breeze's fixed threshold on the projected gradient's largest coordinate.
const PROJECTED_GRADIENT_EPS: f64 = 1e-5;
/// Breeze's limits on the line search's trial and zoom steps for L-BFGS-B.
const LINE_SEARCH_STEPS: usize = 64;

/// A box: a lower and an upper bound per coordinate, either infinite where there is none.
///
/// ```
/// use hearth_optim::{Bounds, Lbfgs};
/// // f(x, y) = (x − 1)² + (y + 2)², with x ≤ 0.5 and y ≥ −1.
/// let mut f = |p: &mut [f64]| {
///     Ok::<_, ()>(((p[0] - 1.0).powi(2) + (p[1] + 2.0).powi(2), vec![2.0 * (p[0] - 1.0), 2.0 * (p[1] + 2.0)]))
/// };
/// let bounds = Bounds::new(vec![f64::NEG_INFINITY, -1.0], vec![0.5, f64::INFINITY]);
/// let minimum = Lbfgs::new().bounds(bounds).minimize(&mut f, vec![0.0, 0.0]).unwrap();
/// assert_eq!(minimum.x, vec![0.5, -1.0]);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Bounds {
    pub(crate) lower: Vec<f64>,
    pub(crate) upper: Vec<f64>,
}

impl Bounds {
    /// The box `lower ≤ x ≤ upper`, coordinate by coordinate.
    pub fn new(lower: Vec<f64>, upper: Vec<f64>) -> Self {
        Self { lower, upper }
    }

    /// `x` moved into the box.
    pub fn clip(&self, mut x: Vec<f64>) -> Vec<f64> {
        for ((v, lower), upper) in x.iter_mut().zip(&self.lower).zip(&self.upper) {
            if *v > *upper {
                *v = *upper;
            }
            if *v < *lower {
                *v = *lower;
            }
        }
        x
    }

    /// The largest coordinate of `P(x − g) − x`, the projected gradient step.
    fn projected_gradient(&self, x: &[f64], g: &[f64]) -> f64 {
        (0..x.len())
            .map(|i| {
                let v = x[i] - g[i];
                let projected = if v <= self.lower[i] {
                    self.lower[i]
                } else if self.upper[i] <= v {
                    self.upper[i]
                } else {
                    v
                };
                (projected - x[i]).abs()
            })
            .fold(0.0, f64::max)
    }

    /// The longest step along `direction` from `x` that stays in the box; `None` when a coordinate at its
    /// bound is asked to leave the box.
    fn step_bound(&self, x: &[f64], direction: &[f64]) -> Option<f64> {
        let mut bound = f64::INFINITY;
        for i in 0..x.len() {
            let d = direction[i];
            if d != 0.0 {
                let face = if d < 0.0 { self.lower[i] } else { self.upper[i] };
                let step = (face - x[i]) / d;
                // Not a number counts as no room too.
                let room = step > 0.0;
                if !room {
                    return None;
                }
                bound = bound.min(step);
            }
        }
        Some(bound)
    }
}

/// One iterate.
#[derive(Clone, Debug)]
struct State {
    x: Vec<f64>,
    value: f64,
    gradient: Vec<f64>,
}

/// An iteration found no step: the memory is cleared once, then the solve stops.
struct Failed;

/// Minimizes `objective` within `bounds` from `x0` (moved into the box first), remembering `memory` pairs,
/// with `(max_iter, tol)` as [`Lbfgs`](crate::Lbfgs)'s.
pub(crate) fn minimize<O: Objective>(
    bounds: &Bounds,
    memory: usize,
    (max_iter, tol): (usize, f64),
    objective: &mut O,
    x0: Vec<f64>,
) -> Result<Minimum, O::Error> {
    let mut f = Cached::new(objective);
    let mut state = evaluated(&mut f, bounds.clip(x0))?;
    let dim = state.x.len();
    let mut history = CompactHistory::new(dim, memory);
    let mut progress = Progress::new(max_iter, tol, state.value);
    let stop = loop {
        if bounds.projected_gradient(&state.x, &state.gradient) < PROJECTED_GRADIENT_EPS {
            break Stop::ProjectedGradient;
        }
        if let Some(stop) = progress.stop(state.value, norm(&state.gradient)) {
            break stop;
        }
        match iterate(&mut f, bounds, &state, &history, progress.iterations())? {
            Ok(next) => {
                history = history.updated(
                    &difference(&next.x, &state.x),
                    &difference(&next.gradient, &state.gradient),
                );
                progress.stepped(next.value);
                state = next;
            }
            Err(Failed) => {
                if progress.failed(state.value) {
                    history = CompactHistory::new(dim, memory);
                }
            }
        }
    };
    Ok(progress.finish(state.x, stop, f.evaluations()))
}

/// One iteration: the Cauchy point (and from the second iteration on the subspace minimum) as the target, a
/// bounded strong Wolfe step towards it, the objective there.
fn iterate<O: Objective>(
    f: &mut Cached<'_, O>,
    bounds: &Bounds,
    state: &State,
    history: &CompactHistory,
    iteration: usize,
) -> Result<Result<State, Failed>, O::Error> {
    let (x, g) = (state.x.as_slice(), state.gradient.as_slice());
    let (cauchy, c) = cauchy_point(bounds, history, x, g);
    let cauchy = bounds.clip(cauchy);
    let target = if iteration == 0 {
        cauchy
    } else {
        match subspace_minimum(bounds, history, (x, g), &cauchy, &c) {
            Ok(minimum) => bounds.clip(minimum),
            Err(_) => return Ok(Err(Failed)),
        }
    };
    let direction = difference(&target, x);
    let Some(bound) = bounds.step_bound(x, &direction).filter(|bound| *bound >= 1.0) else {
        return Ok(Err(Failed));
    };
    let search = StrongWolfe {
        max_zoom: LINE_SEARCH_STEPS,
        max_search: LINE_SEARCH_STEPS,
        bound,
    };
    let mut line = Line {
        f,
        bounds,
        x,
        direction: &direction,
    };
    let Ok(t) = search.search(&mut line, 1.0)? else {
        return Ok(Err(Failed));
    };
    evaluated(f, stepped_within(bounds, x, &direction, t)).map(Ok)
}

/// `x + t·d` moved into the box.
fn stepped_within(bounds: &Bounds, x: &[f64], d: &[f64], t: f64) -> Vec<f64> {
    bounds.clip(crate::vector::stepped(x, d, t))
}

fn evaluated<O: Objective>(f: &mut Cached<'_, O>, mut x: Vec<f64>) -> Result<State, O::Error> {
    let (value, gradient) = f.evaluate(&mut x)?;
    Ok(State { x, value, gradient })
}

/// The objective along the direction, each point moved into the box.
struct Line<'s, 'f, O: Objective> {
    f: &'s mut Cached<'f, O>,
    bounds: &'s Bounds,
    x: &'s [f64],
    direction: &'s [f64],
}

impl<O: Objective> LineFunction<O::Error> for Line<'_, '_, O> {
    fn probe(&mut self, t: f64) -> Result<Probe, O::Error> {
        let mut x = stepped_within(self.bounds, self.x, self.direction, t);
        let (value, gradient) = self.f.evaluate(&mut x)?;
        Ok(Probe {
            t,
            value,
            slope: dot(&gradient, self.direction),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Lbfgs;

    /// A convex quadratic ½·xᵀAx − bᵀx in four coordinates.
    fn quadratic(p: &mut [f64]) -> Result<(f64, Vec<f64>), ()> {
        let a = [
            [4.0, 1.0, 0.0, 0.5],
            [1.0, 3.0, 0.5, 0.0],
            [0.0, 0.5, 2.0, 0.2],
            [0.5, 0.0, 0.2, 1.0],
        ];
        let b = [1.0, -2.0, 3.0, 4.0];
        let ax: Vec<f64> = a.iter().map(|row| dot(row, p)).collect();
        Ok((
            0.5 * dot(p, &ax) - dot(&b, p),
            ax.iter().zip(&b).map(|(v, bi)| v - bi).collect(),
        ))
    }

    #[test]
    fn a_box_that_holds_the_minimum_changes_nothing() {
        let wide = Bounds::new(vec![-100.0; 4], vec![100.0; 4]);
        let bounded = Lbfgs::new()
            .tol(1e-12)
            .bounds(wide)
            .minimize(&mut quadratic, vec![0.0; 4])
            .unwrap();
        let free = Lbfgs::new().tol(1e-12).minimize(&mut quadratic, vec![0.0; 4]).unwrap();
        for (a, b) in bounded.x.iter().zip(&free.x) {
            assert!((a - b).abs() < 1e-5, "{:?} against {:?}", bounded.x, free.x);
        }
    }

    #[test]
    fn active_bounds_meet_the_optimality_conditions() {
        let bounds = Bounds::new(vec![0.0, -0.5, f64::NEG_INFINITY, 0.0], vec![0.1, 0.0, 1.0, 2.0]);
        let minimum = Lbfgs::new()
            .bounds(bounds.clone())
            .minimize(&mut quadratic, vec![0.0; 4])
            .unwrap();
        let (_, g) = quadratic(&mut minimum.x.clone()).unwrap();
        assert!(bounds.projected_gradient(&minimum.x, &g) < 1e-5, "{minimum:?}");
        assert_eq!(minimum.stop, Stop::ProjectedGradient);
        assert_eq!(minimum.x[2], 1.0, "pressed against its upper bound");
    }
}
