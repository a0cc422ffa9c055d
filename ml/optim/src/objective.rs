//! What the solvers minimize: a function that gives its value and gradient at a point.

/// A differentiable objective: its value and gradient at `x`. In hearth every rank evaluates its shard and the
/// allreduce sums the ranks' values, so an evaluation is one pass over the data; its errors (a lost peer) end
/// the solve.
///
/// An objective may also move the point it is given, and the solver carries on from where it was moved: Spark's
/// normal-equation fallback profiles its intercept out that way, writing the intercept's closed form into every
/// point it evaluates. Closures `FnMut(&mut [f64]) -> Result<(f64, Vec<f64>), E>` are objectives.
///
/// ```
/// use hearth_optim::Objective;
/// let mut f = |x: &mut [f64]| Ok::<_, ()>((x[0] * x[0], vec![2.0 * x[0]]));
/// assert_eq!(f.evaluate(&mut [3.0]), Ok((9.0, vec![6.0])));
/// ```
pub trait Objective {
    /// What an evaluation may fail with.
    type Error;

    /// The value and gradient at `x`, which the objective may move.
    fn evaluate(&mut self, x: &mut [f64]) -> Result<(f64, Vec<f64>), Self::Error>;
}

impl<F, E> Objective for F
where
    F: FnMut(&mut [f64]) -> Result<(f64, Vec<f64>), E>,
{
    type Error = E;

    fn evaluate(&mut self, x: &mut [f64]) -> Result<(f64, Vec<f64>), E> {
        self(x)
    }
}

/// An objective that remembers its last evaluation, so the point a line search accepted is not evaluated
/// again (Breeze's `CachedDiffFunction`): every evaluation is a pass over the data.
pub(crate) struct Cached<'a, O: Objective> {
    objective: &'a mut O,
    last: Option<(Vec<f64>, f64, Vec<f64>)>,
    evaluations: usize,
}

impl<'a, O: Objective> Cached<'a, O> {
    pub(crate) fn new(objective: &'a mut O) -> Self {
        Self {
            objective,
            last: None,
            evaluations: 0,
        }
    }

    /// How many times the objective itself was evaluated.
    pub(crate) fn evaluations(&self) -> usize {
        self.evaluations
    }

    /// The evaluation at `x` (moved as the objective moves it), from memory when `x` is the point last evaluated.
    pub(crate) fn evaluate(&mut self, x: &mut [f64]) -> Result<(f64, Vec<f64>), O::Error> {
        if let Some((at, value, gradient)) = &self.last
            && at.as_slice() == x
        {
            return Ok((*value, gradient.clone()));
        }
        let (value, gradient) = self.objective.evaluate(x)?;
        self.evaluations += 1;
        self.last = Some((x.to_vec(), value, gradient.clone()));
        Ok((value, gradient))
    }
}
