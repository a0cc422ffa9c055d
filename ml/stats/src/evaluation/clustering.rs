//! Clustering accuracy: the share of rows whose cluster maps to their label under the best one-to-one
//! matching of clusters to labels (the Hungarian algorithm).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The mergeable state: weight per (cluster, label).
///
/// ```
/// use hearth_stats::evaluation::ClusteringState;
///
/// let mut state = ClusteringState::default();
/// // Clusters 5 and 9 are labels 0 and 1 with the names swapped; one row is misplaced.
/// for (cluster, label) in [(5, 0), (5, 0), (9, 1), (9, 1), (9, 0)] {
///     state.add(cluster, label, 1.0);
/// }
/// assert_eq!(state.accuracy(), 0.8);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClusteringState {
    counts: BTreeMap<(i64, i64), f64>,
}

impl ClusteringState {
    /// Adds one row.
    pub fn add(&mut self, cluster: i64, label: i64, weight: f64) {
        *self.counts.entry((cluster, label)).or_insert(0.0) += weight;
    }

    /// Folds another partial state into this one.
    pub fn merge(&mut self, other: &ClusteringState) {
        for (key, weight) in &other.counts {
            *self.counts.entry(*key).or_insert(0.0) += weight;
        }
    }

    /// The total weight added.
    pub fn weight(&self) -> f64 {
        self.counts.values().sum()
    }

    /// How many bytes [`to_bytes`](Self::to_bytes) writes.
    pub fn encoded_len(&self) -> usize {
        24 * self.counts.len()
    }

    /// The state as bytes: a `(cluster, label, weight)` record per pair seen.
    ///
    /// ```
    /// use hearth_stats::evaluation::ClusteringState;
    /// let mut state = ClusteringState::default();
    /// state.add(3, 1, 2.0);
    /// assert_eq!(ClusteringState::from_bytes(&state.to_bytes()).unwrap(), state);
    /// ```
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(self.encoded_len());
        for ((cluster, label), weight) in &self.counts {
            super::encoding::put(&mut bytes, &[*cluster as f64, *label as f64, *weight]);
        }
        bytes
    }

    /// Reads a state written by [`ClusteringState::to_bytes`]; no bytes is the empty state.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, super::StateDecodeError> {
        let mut state = Self::default();
        for record in super::encoding::values("clustering", bytes, 3)?.chunks_exact(3) {
            state.add(record[0] as i64, record[1] as i64, record[2]);
        }
        Ok(state)
    }

    /// The weight of each `(cluster, label)` pair seen, in order.
    pub fn counts(&self) -> impl Iterator<Item = ((i64, i64), f64)> + '_ {
        self.counts.iter().map(|(key, weight)| (*key, *weight))
    }

    /// The best one-to-one matching of clusters to labels: `(cluster, label)` pairs, the clusters in order.
    /// With more clusters than labels, the clusters left over are absent (their rows count as misplaced).
    ///
    /// ```
    /// use hearth_stats::evaluation::ClusteringState;
    /// let mut state = ClusteringState::default();
    /// for (cluster, label) in [(5, 0), (5, 0), (9, 1), (9, 1), (9, 0), (4, 1)] {
    ///     state.add(cluster, label, 1.0);
    /// }
    /// assert_eq!(state.matching(), vec![(5, 0), (9, 1)]);
    /// ```
    pub fn matching(&self) -> Vec<(i64, i64)> {
        let mut clusters: Vec<i64> = self.counts.keys().map(|k| k.0).collect();
        clusters.dedup();
        let mut labels: Vec<i64> = self.counts.keys().map(|k| k.1).collect();
        labels.sort_unstable();
        labels.dedup();
        let size = clusters.len().max(labels.len());
        // Cost = −weight, padded to a square matrix with zeros.
        let mut cost = vec![vec![0.0; size]; size];
        for ((cluster, label), weight) in &self.counts {
            let i = clusters.binary_search(cluster).unwrap_or_default();
            let j = labels.binary_search(label).unwrap_or_default();
            cost[i][j] = -weight;
        }
        hungarian(&cost)
            .into_iter()
            .enumerate()
            .filter_map(|(i, j)| Some((*clusters.get(i)?, *labels.get(j)?)))
            .collect()
    }

    /// Matched weight / total weight under the best cluster → label matching.
    pub fn accuracy(&self) -> f64 {
        let total: f64 = self.counts.values().sum();
        if total == 0.0 {
            return 0.0;
        }
        let matched: f64 = self.matching().iter().filter_map(|pair| self.counts.get(pair)).sum();
        matched / total
    }
}

/// The minimum-cost perfect matching of a square cost matrix (Kuhn–Munkres with potentials, O(n³)):
/// `result[row] = column`.
pub fn hungarian(cost: &[Vec<f64>]) -> Vec<usize> {
    let n = cost.len();
    // 1-based arrays with a sentinel column 0, as in the classic formulation.
    let mut u = vec![0.0; n + 1];
    let mut v = vec![0.0; n + 1];
    let mut matched_row = vec![0usize; n + 1]; // column → row
    let mut way = vec![0usize; n + 1];
    for row in 1..=n {
        matched_row[0] = row;
        let mut column = 0;
        let mut min_to = vec![f64::INFINITY; n + 1];
        let mut used = vec![false; n + 1];
        loop {
            used[column] = true;
            let current_row = matched_row[column];
            let mut delta = f64::INFINITY;
            let mut next = 0;
            for j in 1..=n {
                if used[j] {
                    continue;
                }
                let reduced = cost[current_row - 1][j - 1] - u[current_row] - v[j];
                if reduced < min_to[j] {
                    min_to[j] = reduced;
                    way[j] = column;
                }
                if min_to[j] < delta {
                    delta = min_to[j];
                    next = j;
                }
            }
            for j in 0..=n {
                if used[j] {
                    u[matched_row[j]] += delta;
                    v[j] -= delta;
                } else {
                    min_to[j] -= delta;
                }
            }
            column = next;
            if matched_row[column] == 0 {
                break;
            }
        }
        while column != 0 {
            let previous = way[column];
            matched_row[column] = matched_row[previous];
            column = previous;
        }
    }
    let mut assignment = vec![0; n];
    for j in 1..=n {
        if matched_row[j] > 0 {
            assignment[matched_row[j] - 1] = j - 1;
        }
    }
    assignment
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hungarian_finds_the_minimum_cost_matching() {
        let cost = vec![vec![4.0, 1.0, 3.0], vec![2.0, 0.0, 5.0], vec![3.0, 2.0, 2.0]];
        let assignment = hungarian(&cost);
        let total: f64 = assignment.iter().enumerate().map(|(i, &j)| cost[i][j]).sum();
        assert_eq!(total, 5.0);
        assert_eq!(assignment, vec![1, 0, 2]);
    }

    #[test]
    fn more_clusters_than_labels() {
        let mut state = ClusteringState::default();
        for (cluster, label) in [(0, 7), (1, 7), (1, 7), (2, 8)] {
            state.add(cluster, label, 1.0);
        }
        assert_eq!(state.accuracy(), 0.75);
    }
}
