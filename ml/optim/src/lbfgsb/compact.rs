//! L-BFGS-B's memory in compact form (Byrd, Nocedal & Schnabel, 1994): the Hessian approximated as
//! `θ·I − W·M·Wᵀ` from the last steps `S` and gradient changes `Y`, kept as Breeze keeps it for Spark.

use nalgebra::{DMatrix, DVector};

/// A pair is kept only where `|s·y| > EPS·‖y‖` (Breeze's test, on the norm rather than its square).
const EPS: f64 = 2.2e-16;

/// `θ`, `W = [Y, θ·S]` and `M`, the inverse of `[[−D, Lᵀ], [L, θ·SᵀS]]` (`D` the diagonal of `SᵀY`, `L` its
/// strict lower triangle), from at most `memory` pairs, oldest first.
#[derive(Clone, Debug)]
pub(super) struct CompactHistory {
    memory: usize,
    pub(super) theta: f64,
    pub(super) w: DMatrix<f64>,
    pub(super) m: DMatrix<f64>,
    steps: Vec<DVector<f64>>,
    gradient_changes: Vec<DVector<f64>>,
}

impl CompactHistory {
    /// No pair yet: `θ = 1`, `W` and `M` zero (`n × 2·memory` and `2·memory` square).
    pub(super) fn new(n: usize, memory: usize) -> Self {
        let memory = memory.max(1);
        Self {
            memory,
            theta: 1.0,
            w: DMatrix::zeros(n, 2 * memory),
            m: DMatrix::zeros(2 * memory, 2 * memory),
            steps: Vec::new(),
            gradient_changes: Vec::new(),
        }
    }

    /// The memory with the pair `(step, gradient_change)` added, the oldest dropped past `memory`; unchanged
    /// where the pair fails the curvature test or its middle matrix has no inverse.
    pub(super) fn updated(&self, step: &[f64], gradient_change: &[f64]) -> Self {
        let (s, y) = (
            DVector::from_column_slice(step),
            DVector::from_column_slice(gradient_change),
        );
        if EPS * y.norm() >= s.dot(&y).abs() {
            return self.clone();
        }
        let mut steps = self.steps.clone();
        let mut gradient_changes = self.gradient_changes.clone();
        steps.push(s.clone());
        gradient_changes.push(y.clone());
        if steps.len() > self.memory {
            steps.remove(0);
            gradient_changes.remove(0);
        }
        let theta = y.dot(&y) / y.dot(&s);
        let big_s = DMatrix::from_columns(&steps);
        let big_y = DMatrix::from_columns(&gradient_changes);
        let k = steps.len();
        let a = big_s.transpose() * &big_y;
        let mut middle = DMatrix::zeros(2 * k, 2 * k);
        let sts = big_s.transpose() * &big_s * theta;
        for i in 0..k {
            middle[(i, i)] = -a[(i, i)];
            for j in 0..i {
                // L below the diagonal of the lower-left block, Lᵀ in the upper-right one.
                middle[(k + i, j)] = a[(i, j)];
                middle[(j, k + i)] = a[(i, j)];
            }
        }
        middle.view_mut((k, k), (k, k)).copy_from(&sts);
        let Some(m) = middle.try_inverse() else {
            return self.clone();
        };
        let mut w = DMatrix::zeros(s.len(), 2 * k);
        w.view_mut((0, 0), (s.len(), k)).copy_from(&big_y);
        w.view_mut((0, k), (s.len(), k)).copy_from(&(big_s * theta));
        Self {
            memory: self.memory,
            theta,
            w,
            m,
            steps,
            gradient_changes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_pair_of_a_quadratic_gives_its_curvature() {
        // f = x² + 2y²: the step (1, 1) changes the gradient by (2, 4).
        let history = CompactHistory::new(2, 5).updated(&[1.0, 1.0], &[2.0, 4.0]);
        assert_eq!(history.theta, 20.0 / 6.0);
        assert_eq!((history.w.ncols(), history.m.nrows()), (2, 2));
        // B = θI − W·M·Wᵀ reproduces the secant equation B·s = y.
        let b = DMatrix::identity(2, 2) * history.theta - &history.w * &history.m * history.w.transpose();
        let bs = b * DVector::from_column_slice(&[1.0, 1.0]);
        assert!((bs[0] - 2.0).abs() < 1e-12 && (bs[1] - 4.0).abs() < 1e-12, "{bs}");
    }

    #[test]
    fn a_pair_without_curvature_is_not_kept() {
        let history = CompactHistory::new(2, 5).updated(&[1.0, 0.0], &[0.0, 1.0]);
        assert_eq!((history.theta, history.w.ncols()), (1.0, 10));
    }
}
