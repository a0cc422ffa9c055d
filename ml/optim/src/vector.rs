//! The few dense vector operations the solvers need, on `f64` slices.

/// `Σ aᵢ·bᵢ`.
pub(crate) fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// `y += a·x`.
pub(crate) fn axpy(a: f64, x: &[f64], y: &mut [f64]) {
    y.iter_mut().zip(x).for_each(|(yi, xi)| *yi += a * xi);
}

/// The Euclidean norm.
pub(crate) fn norm(x: &[f64]) -> f64 {
    dot(x, x).sqrt()
}

/// `x + t·d`.
pub(crate) fn stepped(x: &[f64], d: &[f64], t: f64) -> Vec<f64> {
    x.iter().zip(d).map(|(xi, di)| xi + di * t).collect()
}

/// `a − b`.
pub(crate) fn difference(a: &[f64], b: &[f64]) -> Vec<f64> {
    a.iter().zip(b).map(|(x, y)| x - y).collect()
}
