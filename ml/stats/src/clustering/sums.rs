//! One pass of Lloyd's algorithm as a mergeable state: per cluster, the weighted sum of its points, their
//! weight and count, and the weighted cost of the pass.

use super::measure::{Centers, DistanceMeasure};
use crate::evaluation::StateDecodeError;
use crate::evaluation::encoding::{put, values};

const NAME: &str = "k-means sums";

/// What one pass over the points gives, with the points assigned to the nearest of the pass's centers.
///
/// ```
/// use hearth_stats::clustering::{Centers, ClusterSums, DistanceMeasure};
/// let centers = Centers::new(1, vec![0.0, 10.0]).unwrap();
/// let mut sums = ClusterSums::new(2, 1);
/// for x in [1.0, 2.0, 9.0] {
///     sums.add(DistanceMeasure::Euclidean, &centers, &[x], 1.0);
/// }
/// assert_eq!(sums.cost(), 1.0 + 4.0 + 1.0);
/// assert_eq!(sums.centroid(DistanceMeasure::Euclidean, 0), Some(vec![1.5]));
/// assert_eq!(sums.rows(1), 1);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct ClusterSums {
    k: usize,
    dim: usize,
    cost: f64,
    weights: Vec<f64>,
    rows: Vec<u64>,
    sums: Vec<f64>,
}

impl ClusterSums {
    /// The empty state for `k` clusters of `dim` slots.
    pub fn new(k: usize, dim: usize) -> Self {
        Self {
            k,
            dim,
            cost: 0.0,
            weights: vec![0.0; k],
            rows: vec![0; k],
            sums: vec![0.0; k * dim],
        }
    }

    /// Assigns `point` to its nearest center and adds it with `weight`; returns the cluster.
    pub fn add(&mut self, measure: DistanceMeasure, centers: &Centers, point: &[f64], weight: f64) -> usize {
        let (cluster, distance) = measure.closest(centers, point);
        self.cost += weight * distance;
        self.weights[cluster] += weight;
        self.rows[cluster] += 1;
        measure.add_to_sum(
            &mut self.sums[cluster * self.dim..(cluster + 1) * self.dim],
            point,
            weight,
        );
        cluster
    }

    /// Folds another partial state of the same shape into this one; an empty state (no clusters) is
    /// nothing to fold.
    pub fn merge(&mut self, other: &ClusterSums) -> Result<(), StateDecodeError> {
        if other.k == 0 {
            return Ok(());
        }
        if self.k == 0 {
            *self = other.clone();
            return Ok(());
        }
        if (other.k, other.dim) != (self.k, self.dim) {
            return Err(StateDecodeError {
                state: NAME,
                message: format!(
                    "{} clusters of {} slots cannot merge into {} clusters of {} slots",
                    other.k, other.dim, self.k, self.dim
                ),
            });
        }
        self.cost += other.cost;
        for (a, b) in self.weights.iter_mut().zip(&other.weights) {
            *a += b;
        }
        for (a, b) in self.rows.iter_mut().zip(&other.rows) {
            *a += b;
        }
        for (a, b) in self.sums.iter_mut().zip(&other.sums) {
            *a += b;
        }
        Ok(())
    }

    /// The weighted cost of the pass: each point's distance to its nearest center times its weight.
    pub fn cost(&self) -> f64 {
        self.cost
    }

    /// How many clusters.
    pub fn k(&self) -> usize {
        self.k
    }

    /// The points assigned to `cluster`.
    pub fn rows(&self, cluster: usize) -> u64 {
        self.rows[cluster]
    }

    /// The total weight assigned to `cluster`.
    pub fn weight(&self, cluster: usize) -> f64 {
        self.weights[cluster]
    }

    /// The new center of `cluster`, or `None` when no weight was assigned to it (Spark keeps the old center).
    pub fn centroid(&self, measure: DistanceMeasure, cluster: usize) -> Option<Vec<f64>> {
        let weight = self.weights[cluster];
        (weight > 0.0).then(|| measure.centroid(&self.sums[cluster * self.dim..(cluster + 1) * self.dim], weight))
    }

    /// How many bytes [`to_bytes`](Self::to_bytes) writes.
    pub fn encoded_len(&self) -> usize {
        8 * (3 + 2 * self.k + self.sums.len())
    }

    /// The state as bytes: `k`, `dim`, the cost, then per cluster its weight, count and sum.
    ///
    /// ```
    /// use hearth_stats::clustering::{Centers, ClusterSums, DistanceMeasure};
    /// let mut sums = ClusterSums::new(1, 2);
    /// sums.add(DistanceMeasure::Euclidean, &Centers::new(2, vec![0.0, 0.0]).unwrap(), &[1.0, 2.0], 0.5);
    /// assert_eq!(ClusterSums::from_bytes(&sums.to_bytes()).unwrap(), sums);
    /// ```
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(self.encoded_len());
        put(&mut bytes, &[self.k as f64, self.dim as f64, self.cost]);
        for cluster in 0..self.k {
            put(&mut bytes, &[self.weights[cluster], self.rows[cluster] as f64]);
            put(&mut bytes, &self.sums[cluster * self.dim..(cluster + 1) * self.dim]);
        }
        bytes
    }

    /// Reads a state written by [`ClusterSums::to_bytes`]; no bytes is the empty state.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, StateDecodeError> {
        let numbers = values(NAME, bytes, 1)?;
        let Some(&[k, dim, cost]) = numbers.first_chunk::<3>() else {
            return match numbers.is_empty() {
                true => Ok(Self::new(0, 0)),
                false => Err(cut_short(numbers.len())),
            };
        };
        let (k, dim) = (k as usize, dim as usize);
        if numbers.len() != 3 + k * (2 + dim) {
            return Err(cut_short(numbers.len()));
        }
        let mut state = Self::new(k, dim);
        state.cost = cost;
        for (cluster, record) in numbers[3..].chunks_exact(2 + dim).enumerate() {
            state.weights[cluster] = record[0];
            state.rows[cluster] = record[1] as u64;
            state.sums[cluster * dim..(cluster + 1) * dim].copy_from_slice(&record[2..]);
        }
        Ok(state)
    }
}

fn cut_short(numbers: usize) -> StateDecodeError {
    StateDecodeError {
        state: NAME,
        message: format!("{numbers} numbers do not make a header and whole clusters"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_halves_equal_one_pass() {
        let centers = Centers::new(2, vec![0.0, 0.0, 5.0, 5.0]).unwrap();
        let points = [[0.0, 1.0], [1.0, 0.0], [5.0, 6.0], [4.0, 4.0]];
        let mut whole = ClusterSums::new(2, 2);
        let mut halves = [ClusterSums::new(2, 2), ClusterSums::new(2, 2)];
        for (i, point) in points.iter().enumerate() {
            whole.add(DistanceMeasure::Euclidean, &centers, point, 2.0);
            halves[i % 2].add(DistanceMeasure::Euclidean, &centers, point, 2.0);
        }
        let [mut first, second] = halves;
        first
            .merge(&ClusterSums::from_bytes(&second.to_bytes()).unwrap())
            .unwrap();
        assert_eq!(first, whole);
        assert_eq!(whole.centroid(DistanceMeasure::Euclidean, 1), Some(vec![4.5, 5.0]));
        assert_eq!(whole.cost(), 2.0 * (1.0 + 1.0 + 1.0 + 2.0));
    }

    #[test]
    fn bytes_cut_short_are_refused() {
        let bytes = ClusterSums::new(2, 3).to_bytes();
        let error = ClusterSums::from_bytes(&bytes[..bytes.len() - 8]).unwrap_err();
        assert!(error.to_string().contains("whole clusters"), "{error}");
        let error = ClusterSums::new(2, 3).merge(&ClusterSums::new(3, 3)).unwrap_err();
        assert!(error.to_string().contains("cannot merge"), "{error}");
    }
}
