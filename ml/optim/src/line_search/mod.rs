//! Line searches: how far to go along a descent direction. L-BFGS uses a strong Wolfe search, OWL-QN a
//! backtracking one, as Breeze (Spark's optimizer library) does.

mod backtracking;
mod strong_wolfe;

pub(crate) use backtracking::Backtracking;
pub(crate) use strong_wolfe::StrongWolfe;

/// The objective along a line, `φ(t) = f(x + t·d)`, and its slope `φ'(t) = ∇f(x + t·d)·d`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Probe {
    pub(crate) t: f64,
    pub(crate) value: f64,
    pub(crate) slope: f64,
}

/// Something a line search can probe: the objective along one line; its errors end the solve.
pub(crate) trait LineFunction<E> {
    /// `φ(t)` and `φ'(t)`.
    fn probe(&mut self, t: f64) -> Result<Probe, E>;
}

/// Why a line search found no step; the minimizer forgets its curvature pairs once, then stops.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum LineSearchFailed {
    /// The direction goes uphill: `φ'(0)` is this positive slope.
    NotDescent(f64),
    /// Every trial step was used up.
    Exhausted,
}
