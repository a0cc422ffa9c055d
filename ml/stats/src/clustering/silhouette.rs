//! Spark's silhouette (`ClusteringEvaluator`), computed in two passes: the first gathers per-cluster
//! statistics, the second scores each point against them in constant time per cluster.
//!
//! With squared Euclidean distance a point's mean distance to the points of cluster `C` is
//! `‖x‖² + Ψ_C/W_C − 2 x·Y_C/W_C`, where `Y_C` is the weighted sum of `C`'s points, `Ψ_C` the weighted sum of
//! their squared norms and `W_C` their weight. With cosine distance it is `1 − x̂·Ŷ_C/W_C`, `Ŷ_C` summing the
//! points scaled to unit length.

use std::collections::BTreeMap;

use super::measure::{DistanceMeasure, dot, norm};
use crate::evaluation::StateDecodeError;
use crate::evaluation::encoding::{put, values};

const NAME: &str = "silhouette";

/// A row the silhouette cannot take or score.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SilhouetteError {
    /// A row's vector is not as wide as the rows before it.
    #[error("a vector of {found} slots among vectors of {expected}")]
    Width {
        /// The row's width.
        found: usize,
        /// The width of the rows before it.
        expected: usize,
    },
    /// A row's cluster was not among the first pass's.
    #[error("cluster {cluster} was not in the first pass")]
    UnknownCluster {
        /// The row's cluster (its prediction).
        cluster: f64,
    },
}

/// One cluster's statistics.
#[derive(Clone, Debug, PartialEq)]
struct ClusterStats {
    features: Vec<f64>,
    squared_norms: f64,
    weight: f64,
}

/// The first pass's mergeable state: statistics per cluster, keyed by the prediction's bits so every
/// prediction value is a cluster of its own.
///
/// ```
/// use hearth_stats::clustering::{DistanceMeasure, SilhouetteStats};
/// let rows = [(0.0, [0.0, 0.0]), (0.0, [0.0, 1.0]), (1.0, [5.0, 5.0]), (1.0, [5.0, 6.0])];
/// let mut stats = SilhouetteStats::new(DistanceMeasure::Euclidean);
/// for (cluster, point) in &rows {
///     stats.add(*cluster, point, 1.0).unwrap();
/// }
/// let total: f64 = rows.iter().map(|(c, p)| stats.coefficient(*c, p, 1.0).unwrap()).sum();
/// assert!((total / 4.0 - 0.980002).abs() < 1e-6);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct SilhouetteStats {
    measure: DistanceMeasure,
    dim: Option<usize>,
    clusters: BTreeMap<u64, ClusterStats>,
}

impl SilhouetteStats {
    /// No rows yet.
    pub fn new(measure: DistanceMeasure) -> Self {
        Self {
            measure,
            dim: None,
            clusters: BTreeMap::new(),
        }
    }

    /// How many clusters the rows fell in.
    pub fn clusters(&self) -> usize {
        self.clusters.len()
    }

    /// Adds a row of `cluster`; errors when its width differs from the rows before.
    pub fn add(&mut self, cluster: f64, point: &[f64], weight: f64) -> Result<(), SilhouetteError> {
        self.check_dim(point.len())?;
        let stats = self.clusters.entry(cluster.to_bits()).or_insert_with(|| ClusterStats {
            features: vec![0.0; point.len()],
            squared_norms: 0.0,
            weight: 0.0,
        });
        let length = norm(point);
        let scale = match self.measure {
            DistanceMeasure::Euclidean => weight,
            DistanceMeasure::Cosine if length == 0.0 => 0.0,
            DistanceMeasure::Cosine => weight / length,
        };
        for (sum, x) in stats.features.iter_mut().zip(point) {
            *sum += scale * x;
        }
        stats.squared_norms += weight * length * length;
        stats.weight += weight;
        Ok(())
    }

    fn check_dim(&mut self, dim: usize) -> Result<(), SilhouetteError> {
        match self.dim {
            Some(known) if known != dim => Err(SilhouetteError::Width {
                found: dim,
                expected: known,
            }),
            _ => {
                self.dim = Some(dim);
                Ok(())
            }
        }
    }

    /// Folds another partial state into this one.
    pub fn merge(&mut self, other: &SilhouetteStats) -> Result<(), StateDecodeError> {
        if let Some(dim) = other.dim {
            self.check_dim(dim).map_err(|e| StateDecodeError {
                state: NAME,
                message: e.to_string(),
            })?;
        }
        for (key, theirs) in &other.clusters {
            match self.clusters.get_mut(key) {
                Some(ours) => {
                    for (a, b) in ours.features.iter_mut().zip(&theirs.features) {
                        *a += b;
                    }
                    ours.squared_norms += theirs.squared_norms;
                    ours.weight += theirs.weight;
                }
                None => {
                    self.clusters.insert(*key, theirs.clone());
                }
            }
        }
        Ok(())
    }

    /// The mean distance from `point` to the points of cluster `key`.
    fn mean_distance(&self, stats: &ClusterStats, point: &[f64], length: f64) -> f64 {
        match self.measure {
            DistanceMeasure::Euclidean => {
                length * length + stats.squared_norms / stats.weight - 2.0 * dot(point, &stats.features) / stats.weight
            }
            DistanceMeasure::Cosine if length == 0.0 => 1.0,
            DistanceMeasure::Cosine => 1.0 - dot(point, &stats.features) / (length * stats.weight),
        }
    }

    /// The silhouette of one row of `cluster` with `weight`: 0 for a row alone in its cluster, otherwise
    /// `1 − a/b` or `b/a − 1` with `a` its mean distance to the rest of its own cluster and `b` that to the
    /// nearest other cluster. Errors when `cluster` was not seen in the first pass.
    pub fn coefficient(&self, cluster: f64, point: &[f64], weight: f64) -> Result<f64, SilhouetteError> {
        let own = self
            .clusters
            .get(&cluster.to_bits())
            .ok_or(SilhouetteError::UnknownCluster { cluster })?;
        if own.weight == weight {
            return Ok(0.0);
        }
        let length = norm(point);
        let nearest_other = self
            .clusters
            .iter()
            .filter(|(key, _)| **key != cluster.to_bits())
            .map(|(_, stats)| self.mean_distance(stats, point, length))
            .fold(f64::INFINITY, f64::min);
        // The point's own distance (0) is in its cluster's mean: take it out.
        let own_distance = self.mean_distance(own, point, length) * own.weight / (own.weight - weight);
        Ok(if own_distance < nearest_other {
            1.0 - own_distance / nearest_other
        } else if own_distance > nearest_other {
            nearest_other / own_distance - 1.0
        } else {
            0.0
        })
    }

    /// How many bytes [`to_bytes`](Self::to_bytes) writes.
    pub fn encoded_len(&self) -> usize {
        8 * (2 + self.clusters.len() * (3 + self.dim.unwrap_or(0)))
    }

    /// The state as bytes: the measure (0 Euclidean, 1 cosine), the width, then per cluster its key, weight,
    /// squared norms and feature sums.
    ///
    /// ```
    /// use hearth_stats::clustering::{DistanceMeasure, SilhouetteStats};
    /// let mut stats = SilhouetteStats::new(DistanceMeasure::Cosine);
    /// stats.add(3.0, &[1.0, 2.0], 1.0).unwrap();
    /// assert_eq!(SilhouetteStats::from_bytes(&stats.to_bytes()).unwrap(), stats);
    /// ```
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(self.encoded_len());
        let measure = match self.measure {
            DistanceMeasure::Euclidean => 0.0,
            DistanceMeasure::Cosine => 1.0,
        };
        put(&mut bytes, &[measure, self.dim.map_or(-1.0, |d| d as f64)]);
        for (key, stats) in &self.clusters {
            put(&mut bytes, &[f64::from_bits(*key), stats.weight, stats.squared_norms]);
            put(&mut bytes, &stats.features);
        }
        bytes
    }

    /// Reads a state written by [`SilhouetteStats::to_bytes`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, StateDecodeError> {
        let numbers = values(NAME, bytes, 1)?;
        let broken = |message: String| StateDecodeError { state: NAME, message };
        let Some(&[measure, dim]) = numbers.first_chunk::<2>() else {
            return Err(broken(format!("{} numbers hold no header", numbers.len())));
        };
        let measure = match measure {
            0.0 => DistanceMeasure::Euclidean,
            1.0 => DistanceMeasure::Cosine,
            other => return Err(broken(format!("unknown distance measure {other}"))),
        };
        let mut stats = Self::new(measure);
        if dim < 0.0 {
            return Ok(stats);
        }
        let dim = dim as usize;
        stats.dim = Some(dim);
        let records = &numbers[2..];
        if !records.len().is_multiple_of(3 + dim) {
            return Err(broken(format!(
                "{} numbers are not whole clusters of {dim} slots",
                records.len()
            )));
        }
        for record in records.chunks_exact(3 + dim) {
            stats.clusters.insert(
                record[0].to_bits(),
                ClusterStats {
                    weight: record[1],
                    squared_norms: record[2],
                    features: record[3..].to_vec(),
                },
            );
        }
        Ok(stats)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Silhouette by its definition: mean distances over every pair of points.
    fn by_definition(measure: DistanceMeasure, rows: &[(f64, Vec<f64>)]) -> f64 {
        let mean_to = |point: &[f64], cluster: f64, skip: usize| {
            let others: Vec<f64> = rows
                .iter()
                .enumerate()
                .filter(|(j, (c, _))| *c == cluster && *j != skip)
                .map(|(_, (_, q))| measure.distance(point, q))
                .collect();
            others.iter().sum::<f64>() / others.len() as f64
        };
        let scores: Vec<f64> = rows
            .iter()
            .enumerate()
            .map(|(i, (cluster, point))| {
                if rows.iter().filter(|(c, _)| c == cluster).count() == 1 {
                    return 0.0;
                }
                let a = mean_to(point, *cluster, i);
                let b = rows
                    .iter()
                    .map(|(c, _)| *c)
                    .filter(|c| c != cluster)
                    .map(|c| mean_to(point, c, usize::MAX))
                    .fold(f64::INFINITY, f64::min);
                (b - a) / a.max(b)
            })
            .collect();
        scores.iter().sum::<f64>() / scores.len() as f64
    }

    #[test]
    fn two_passes_equal_the_definition() {
        let rows: Vec<(f64, Vec<f64>)> = vec![
            (0.0, vec![1.0, 2.0]),
            (0.0, vec![1.5, 1.0]),
            (0.0, vec![0.5, 1.8]),
            (1.0, vec![4.0, 4.5]),
            (1.0, vec![5.0, 3.0]),
            (2.0, vec![-3.0, 0.5]),
        ];
        for measure in [DistanceMeasure::Euclidean, DistanceMeasure::Cosine] {
            let mut stats = SilhouetteStats::new(measure);
            for (cluster, point) in &rows {
                stats.add(*cluster, point, 1.0).unwrap();
            }
            let stats = SilhouetteStats::from_bytes(&stats.to_bytes()).unwrap();
            let total: f64 = rows.iter().map(|(c, p)| stats.coefficient(*c, p, 1.0).unwrap()).sum();
            let expected = by_definition(measure, &rows);
            assert!(
                (total / rows.len() as f64 - expected).abs() < 1e-12,
                "{measure:?}: {expected}"
            );
        }
    }

    #[test]
    fn mixed_widths_and_unknown_clusters_are_errors() {
        let mut stats = SilhouetteStats::new(DistanceMeasure::Euclidean);
        stats.add(0.0, &[1.0, 2.0], 1.0).unwrap();
        assert!(
            stats
                .add(0.0, &[1.0], 1.0)
                .unwrap_err()
                .to_string()
                .contains("1 slots among vectors of 2")
        );
        assert!(
            stats
                .coefficient(4.0, &[1.0, 2.0], 1.0)
                .unwrap_err()
                .to_string()
                .contains("cluster 4")
        );
    }
}
