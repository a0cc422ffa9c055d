//! Binary classification metrics with Spark's curve rules (`BinaryClassificationEvaluator`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A score as an ordered key; NaN sorts as the lowest score.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
struct Score(f64);

impl Eq for Score {}

impl PartialOrd for Score {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Score {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// The mergeable state of a binary evaluation: positive and negative weight per distinct score.
///
/// ```
/// use hearth_stats::evaluation::BinaryState;
///
/// let mut state = BinaryState::default();
/// for (score, label) in [(0.9, 1.0), (0.8, 0.0), (0.7, 1.0), (0.1, 0.0)] {
///     state.add(score, label, 1.0);
/// }
/// assert_eq!(state.area_under_roc(1000), 0.75);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BinaryState {
    /// Score → (positive weight, negative weight).
    counts: BTreeMap<Score, (f64, f64)>,
}

/// A point on a curve.
type Point = (f64, f64);

impl BinaryState {
    /// Adds one row: the model's score for the positive class, the true label (positive when > 0.5, as
    /// Spark) and the row weight.
    pub fn add(&mut self, score: f64, label: f64, weight: f64) {
        let entry = self.counts.entry(Score(score)).or_insert((0.0, 0.0));
        if label > 0.5 {
            entry.0 += weight;
        } else {
            entry.1 += weight;
        }
    }

    /// Folds another partial state into this one.
    pub fn merge(&mut self, other: &BinaryState) {
        for (score, (p, n)) in &other.counts {
            let entry = self.counts.entry(*score).or_insert((0.0, 0.0));
            entry.0 += p;
            entry.1 += n;
        }
    }

    /// How many bytes [`to_bytes`](Self::to_bytes) writes.
    pub fn encoded_len(&self) -> usize {
        self.counts.len() * 24
    }

    /// The state as bytes, for the partial and final halves of an aggregate.
    ///
    /// ```
    /// use hearth_stats::evaluation::BinaryState;
    /// let mut state = BinaryState::default();
    /// state.add(0.7, 1.0, 1.0);
    /// assert_eq!(BinaryState::from_bytes(&state.to_bytes()).unwrap(), state);
    /// ```
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(self.counts.len() * 24);
        for (score, (p, n)) in &self.counts {
            super::encoding::put(&mut bytes, &[score.0, *p, *n]);
        }
        bytes
    }

    /// Reads a state written by [`BinaryState::to_bytes`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, super::StateDecodeError> {
        let values = super::encoding::values("binary", bytes, 3)?;
        let counts = values.chunks_exact(3).map(|r| (Score(r[0]), (r[1], r[2]))).collect();
        Ok(Self { counts })
    }

    /// Cumulative (positives, negatives) at each threshold, highest score first, after Spark's
    /// down-sampling: with `num_bins > 0` and at least two distinct scores per bin, consecutive scores
    /// are merged into groups of `distinct / num_bins`.
    fn cumulative(&self, num_bins: usize) -> Vec<(f64, f64)> {
        let descending: Vec<(f64, f64)> = self.counts.values().rev().copied().collect();
        let grouping = descending.len().checked_div(num_bins).unwrap_or(1);
        let binned: Vec<(f64, f64)> = if grouping < 2 {
            descending
        } else {
            descending
                .chunks(grouping)
                .map(|group| group.iter().fold((0.0, 0.0), |(p, n), (gp, gn)| (p + gp, n + gn)))
                .collect()
        };
        let mut running = (0.0, 0.0);
        binned
            .into_iter()
            .map(|(p, n)| {
                running = (running.0 + p, running.1 + n);
                running
            })
            .collect()
    }

    /// The ROC curve `(false-positive rate, true-positive rate)`, from `(0, 0)` to `(1, 1)`.
    pub fn roc(&self, num_bins: usize) -> Vec<Point> {
        let cumulative = self.cumulative(num_bins);
        let (positives, negatives) = cumulative.last().copied().unwrap_or((0.0, 0.0));
        let mut curve = vec![(0.0, 0.0)];
        curve.extend(cumulative.iter().map(|&(tp, fp)| (fp / negatives, tp / positives)));
        curve.push((1.0, 1.0));
        curve
    }

    /// The precision-recall curve `(recall, precision)`, starting at `(0, precision of the first point)`.
    pub fn pr(&self, num_bins: usize) -> Vec<Point> {
        let cumulative = self.cumulative(num_bins);
        let positives = cumulative.last().map_or(0.0, |c| c.0);
        let points: Vec<Point> = cumulative
            .iter()
            .map(|&(tp, fp)| {
                let precision = if tp + fp == 0.0 { 1.0 } else { tp / (tp + fp) };
                (tp / positives, precision)
            })
            .collect();
        let first_precision = points.first().map_or(1.0, |p| p.1);
        std::iter::once((0.0, first_precision)).chain(points).collect()
    }

    /// Area under the ROC curve by the trapezoidal rule.
    pub fn area_under_roc(&self, num_bins: usize) -> f64 {
        trapezoid(&self.roc(num_bins))
    }

    /// Area under the precision-recall curve by the trapezoidal rule.
    pub fn area_under_pr(&self, num_bins: usize) -> f64 {
        trapezoid(&self.pr(num_bins))
    }
}

/// `Σ (x₂ − x₁)·(y₁ + y₂)/2` over consecutive points.
fn trapezoid(points: &[Point]) -> f64 {
    points
        .windows(2)
        .map(|w| (w[1].0 - w[0].0) * (w[0].1 + w[1].1) / 2.0)
        .sum()
}
