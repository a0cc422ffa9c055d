//! The normal equation `A·x = b` for a symmetric positive definite `A` (a Gram matrix `XᵀWX`, regularized),
//! solved by Cholesky, as Spark's `WeightedLeastSquares` solves it before falling back to L-BFGS.

use nalgebra::{Cholesky, DMatrix, DVector, Dyn};

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
    let factor = cholesky(a, b.len())?;
    solve(&factor, b)
}

/// Solves `A·x = b` as [`normal_equation`] does (the same bits), and gives the diagonal of `A⁻¹` beside the
/// solution: what a least-squares fit's standard errors are made of.
///
/// ```
/// use hearth_optim::normal_equation_and_inverse_diagonal;
/// let (x, inverse) = normal_equation_and_inverse_diagonal(&[4.0, 0.0, 0.0, 2.0], &[8.0, 2.0]).unwrap();
/// let close = |a: &[f64], b: &[f64]| a.iter().zip(b).all(|(a, b)| (a - b).abs() < 1e-12);
/// assert!(close(&x, &[2.0, 1.0]) && close(&inverse, &[0.25, 0.5]));
/// ```
pub fn normal_equation_and_inverse_diagonal(a: &[f64], b: &[f64]) -> Result<(Vec<f64>, Vec<f64>), NotPositiveDefinite> {
    let factor = cholesky(a, b.len())?;
    let solution = solve(&factor, b)?;
    let diagonal = factor.inverse().diagonal().iter().copied().collect();
    Ok((solution, diagonal))
}

fn cholesky(a: &[f64], n: usize) -> Result<Cholesky<f64, Dyn>, NotPositiveDefinite> {
    assert_eq!(a.len(), n * n, "a {n}x{n} matrix");
    DMatrix::from_row_slice(n, n, a).cholesky().ok_or(NotPositiveDefinite)
}

fn solve(factor: &Cholesky<f64, Dyn>, b: &[f64]) -> Result<Vec<f64>, NotPositiveDefinite> {
    let solution = factor.solve(&DVector::from_column_slice(b));
    if solution.iter().all(|v| v.is_finite()) {
        Ok(solution.iter().copied().collect())
    } else {
        Err(NotPositiveDefinite)
    }
}
