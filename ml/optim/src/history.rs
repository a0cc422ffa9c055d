//! L-BFGS's memory: the last steps and gradient changes, and the direction they give (the two-loop recursion).

use std::collections::VecDeque;

use crate::vector::{axpy, dot};

/// The approximate inverse Hessian of L-BFGS: the last `memory` pairs of step `s = x₊ − x` and gradient change
/// `y = g₊ − g`, newest first.
///
/// ```
/// use hearth_optim::InverseHessian;
/// // With no pairs yet, the direction is the negative gradient.
/// let history = InverseHessian::new(10);
/// assert_eq!(history.direction(&[1.0, -2.0]).unwrap(), vec![-1.0, 2.0]);
/// ```
#[derive(Clone, Debug)]
pub struct InverseHessian {
    memory: usize,
    steps: VecDeque<Vec<f64>>,
    gradient_changes: VecDeque<Vec<f64>>,
}

/// The curvature pairs became unusable (`s·y` negative or not a number): the minimizer starts its memory over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BadCurvature;

impl InverseHessian {
    /// An empty memory of at most `memory` pairs.
    pub fn new(memory: usize) -> Self {
        Self {
            memory: memory.max(1),
            steps: VecDeque::new(),
            gradient_changes: VecDeque::new(),
        }
    }

    /// The memory with the pair `(step, gradient_change)` added as the newest, the oldest dropped past `memory`.
    pub fn push(&mut self, step: Vec<f64>, gradient_change: Vec<f64>) {
        self.steps.push_front(step);
        self.gradient_changes.push_front(gradient_change);
        self.steps.truncate(self.memory);
        self.gradient_changes.truncate(self.memory);
    }

    /// How many pairs it holds.
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    /// Whether it holds no pair.
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// The descent direction `−H·g`: the two-loop recursion, the initial matrix scaled by `s·y / y·y` of the
    /// newest pair (the identity with no pair).
    pub fn direction(&self, gradient: &[f64]) -> Result<Vec<f64>, BadCurvature> {
        let scale = match (self.steps.front(), self.gradient_changes.front()) {
            (Some(s), Some(y)) => {
                let sy = dot(s, y);
                if sy < 0.0 || sy.is_nan() {
                    return Err(BadCurvature);
                }
                sy / dot(y, y)
            }
            _ => 1.0,
        };
        let mut direction = gradient.to_vec();
        let mut alphas = Vec::with_capacity(self.len());
        let mut rhos = Vec::with_capacity(self.len());
        for (s, y) in self.steps.iter().zip(&self.gradient_changes) {
            let rho = dot(s, y);
            let alpha = dot(s, &direction) / rho;
            if alpha.is_nan() {
                return Err(BadCurvature);
            }
            axpy(-alpha, y, &mut direction);
            alphas.push(alpha);
            rhos.push(rho);
        }
        direction.iter_mut().for_each(|d| *d *= scale);
        for i in (0..self.len()).rev() {
            let beta = dot(&self.gradient_changes[i], &direction) / rhos[i];
            axpy(alphas[i] - beta, &self.steps[i], &mut direction);
        }
        direction.iter_mut().for_each(|d| *d = -*d);
        Ok(direction)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_pair_of_a_quadratic_gives_its_newton_step_along_that_pair() {
        // f = x² (Hessian 2): a step of 1 changes the gradient by 2, so H⁻¹ ≈ 1/2 and −H⁻¹·g = −g/2.
        let mut history = InverseHessian::new(3);
        history.push(vec![1.0], vec![2.0]);
        assert_eq!(history.direction(&[4.0]).unwrap(), vec![-2.0]);
    }

    #[test]
    fn negative_curvature_is_refused_and_memory_is_bounded() {
        let mut history = InverseHessian::new(2);
        history.push(vec![1.0], vec![-1.0]);
        assert_eq!(history.direction(&[1.0]), Err(BadCurvature));
        history.push(vec![1.0], vec![1.0]);
        history.push(vec![1.0], vec![1.0]);
        assert_eq!(history.len(), 2);
    }
}
