//! The normal equation `A·x = b` for a symmetric positive definite `A` (a Gram matrix `XᵀWX`, regularized),
//! solved by Cholesky, as Spark's `WeightedLeastSquares` solves it before falling back to L-BFGS.

use nalgebra::{DMatrix, DVector};

/// The matrix was not positive definite (singular: a constant or duplicated feature, no regularization).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the normal equation's matrix is singular (not positive definite)")]
pub struct NotPositiveDefinite;

/// Solves `A·x = b` by a Cholesky factorization of the `n×n` row-major `a`, with `n = b.len()`.
///
/// ```
/// use hearth_optim::normal_equation;
/// let x = normal_equation(&[4.0, 2.0, 2.0, 3.0], &[6.0, 5.0]).unwrap();
/// assert!((x[0] - 1.0).abs() < 1e-12 && (x[1] - 1.0).abs() < 1e-12);
/// assert!(normal_equation(&[1.0, 1.0, 1.0, 1.0], &[1.0, 1.0]).is_err());
/// ```
pub fn normal_equation(a: &[f64], b: &[f64]) -> Result<Vec<f64>, NotPositiveDefinite> {
    let n = b.len();
    assert_eq!(a.len(), n * n, "a {n}x{n} matrix");
    let matrix = DMatrix::from_row_slice(n, n, a);
    let factor = matrix.cholesky().ok_or(NotPositiveDefinite)?;
    let solution = factor.solve(&DVector::from_column_slice(b));
    if solution.iter().all(|v| v.is_finite()) {
        Ok(solution.iter().copied().collect())
    } else {
        Err(NotPositiveDefinite)
    }
}
