//! Spark's distance measures for k-means: squared Euclidean distance (`euclidean`) and cosine distance
//! (`cosine`), with the centroid and convergence rules that go with each.

use serde::{Deserialize, Serialize};

/// How far a point is from a center, as Spark's `distanceMeasure` parameter names it.
///
/// ```
/// use hearth_stats::clustering::DistanceMeasure;
/// let measure = DistanceMeasure::parse("cosine").unwrap();
/// assert!((measure.distance(&[1.0, 0.0], &[0.0, 2.0]) - 1.0).abs() < 1e-12);
/// assert_eq!(DistanceMeasure::Euclidean.distance(&[1.0, 0.0], &[0.0, 2.0]), 5.0);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DistanceMeasure {
    /// The squared Euclidean distance (the k-means cost).
    #[default]
    Euclidean,
    /// `1 − cos(angle)`; points and centers are compared by direction only.
    Cosine,
}

impl DistanceMeasure {
    /// The measure Spark calls `name` (`"euclidean"` or `"cosine"`).
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "euclidean" => Some(Self::Euclidean),
            "cosine" => Some(Self::Cosine),
            _ => None,
        }
    }

    /// Spark's name of the measure.
    pub fn name(self) -> &'static str {
        match self {
            Self::Euclidean => "euclidean",
            Self::Cosine => "cosine",
        }
    }

    /// The distance between `a` and `b`: squared Euclidean, or cosine distance (1 when either is zero).
    pub fn distance(self, a: &[f64], b: &[f64]) -> f64 {
        match self {
            Self::Euclidean => a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum(),
            Self::Cosine => {
                let (norm_a, norm_b) = (norm(a), norm(b));
                if norm_a == 0.0 || norm_b == 0.0 {
                    return 1.0;
                }
                1.0 - dot(a, b) / (norm_a * norm_b)
            }
        }
    }

    /// The index of the center nearest `point` and its distance; the lowest index wins a tie, as in Spark.
    pub fn closest(self, centers: &Centers, point: &[f64]) -> (usize, f64) {
        let point_norm = norm(point);
        let mut best = (0, f64::INFINITY);
        for index in 0..centers.len() {
            let center = centers.center(index);
            let distance = match self {
                Self::Euclidean => self.distance(point, center),
                Self::Cosine => {
                    let norms = point_norm * centers.norms[index];
                    if norms == 0.0 {
                        1.0
                    } else {
                        1.0 - dot(point, center) / norms
                    }
                }
            };
            if distance < best.1 {
                best = (index, distance);
            }
        }
        best
    }

    /// Adds `point` with `weight` into a cluster's running sum: the point itself for Euclidean, the point
    /// scaled to unit length for cosine.
    pub fn add_to_sum(self, sum: &mut [f64], point: &[f64], weight: f64) {
        let scale = match self {
            Self::Euclidean => weight,
            Self::Cosine => match norm(point) {
                0.0 => 0.0,
                length => weight / length,
            },
        };
        for (s, x) in sum.iter_mut().zip(point) {
            *s += scale * x;
        }
    }

    /// The new center of a cluster from its sum and total weight: the mean, scaled to unit length for cosine.
    pub fn centroid(self, sum: &[f64], weight: f64) -> Vec<f64> {
        let mean: Vec<f64> = sum.iter().map(|s| s / weight).collect();
        match self {
            Self::Euclidean => mean,
            Self::Cosine => match norm(&mean) {
                0.0 => mean,
                length => mean.iter().map(|x| x / length).collect(),
            },
        }
    }

    /// Whether a center moved less than `tol`: by Euclidean distance (squared distance ≤ tol²), or by cosine
    /// distance ≤ tol.
    pub fn converged(self, old: &[f64], new: &[f64], tol: f64) -> bool {
        match self {
            Self::Euclidean => self.distance(old, new) <= tol * tol,
            Self::Cosine => self.distance(old, new) <= tol,
        }
    }
}

/// The Euclidean norm.
pub fn norm(values: &[f64]) -> f64 {
    values.iter().map(|x| x * x).sum::<f64>().sqrt()
}

/// The dot product.
pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Cluster centers of one dimension, stored row-major with their norms.
///
/// ```
/// use hearth_stats::clustering::{Centers, DistanceMeasure};
/// let centers = Centers::new(2, vec![0.0, 0.0, 10.0, 10.0]).unwrap();
/// assert_eq!(DistanceMeasure::Euclidean.closest(&centers, &[9.0, 9.5]).0, 1);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Centers {
    dim: usize,
    values: Vec<f64>,
    norms: Vec<f64>,
}

impl Centers {
    /// Centers of `dim` slots from their values one after another; `None` when the values are not whole
    /// centers.
    pub fn new(dim: usize, values: Vec<f64>) -> Option<Self> {
        if (dim == 0 && !values.is_empty()) || (dim > 0 && !values.len().is_multiple_of(dim)) {
            return None;
        }
        let norms = values.chunks_exact(dim.max(1)).map(norm).collect();
        Some(Self { dim, values, norms })
    }

    /// Centers from one vector each (all of `dim` slots).
    pub fn from_rows(dim: usize, rows: &[Vec<f64>]) -> Option<Self> {
        if rows.iter().any(|row| row.len() != dim) {
            return None;
        }
        Self::new(dim, rows.concat())
    }

    /// How many centers there are.
    pub fn len(&self) -> usize {
        self.norms.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.norms.is_empty()
    }

    /// The dimension.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Center `index`.
    pub fn center(&self, index: usize) -> &[f64] {
        &self.values[index * self.dim..(index + 1) * self.dim]
    }

    /// Every center's values, one after another.
    pub fn values(&self) -> &[f64] {
        &self.values
    }

    /// Each center as a vector of its own.
    pub fn rows(&self) -> Vec<Vec<f64>> {
        (0..self.len()).map(|i| self.center(i).to_vec()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cosine_sums_unit_vectors_and_centroids_have_unit_length() {
        let mut sum = vec![0.0; 2];
        DistanceMeasure::Cosine.add_to_sum(&mut sum, &[3.0, 4.0], 2.0);
        assert!((sum[0] - 1.2).abs() < 1e-15 && (sum[1] - 1.6).abs() < 1e-15, "{sum:?}");
        let center = DistanceMeasure::Cosine.centroid(&[1.0, 1.0], 4.0);
        assert!((norm(&center) - 1.0).abs() < 1e-15);
    }

    #[test]
    fn ties_go_to_the_lowest_index() {
        let centers = Centers::new(1, vec![-1.0, 1.0]).unwrap();
        assert_eq!(DistanceMeasure::Euclidean.closest(&centers, &[0.0]), (0, 1.0));
    }

    #[test]
    fn convergence_compares_distance_with_tol() {
        assert!(DistanceMeasure::Euclidean.converged(&[0.0], &[1e-5], 1e-4));
        assert!(!DistanceMeasure::Euclidean.converged(&[0.0], &[2e-4], 1e-4));
    }
}
