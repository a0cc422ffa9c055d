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

/// The weight of rows on each side of a threshold: a row is predicted positive when its score is at least
/// the threshold.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ThresholdCounts {
    /// The threshold.
    pub threshold: f64,
    /// Positive rows at or above it.
    pub true_positives: f64,
    /// Negative rows at or above it.
    pub false_positives: f64,
    /// Negative rows below it.
    pub true_negatives: f64,
    /// Positive rows below it.
    pub false_negatives: f64,
}

impl ThresholdCounts {
    /// The true-positive rate: true positives over all positives (NaN without positives).
    pub fn recall(&self) -> f64 {
        self.true_positives / (self.true_positives + self.false_negatives)
    }

    /// False positives over all negatives (NaN without negatives).
    pub fn false_positive_rate(&self) -> f64 {
        self.false_positives / (self.false_positives + self.true_negatives)
    }
}

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

    /// The ROC curve `(false-positive rate, true-positive rate)`, from `(0, 0)` to `(1, 1)`: the points of
    /// [`threshold_counts`](Self::threshold_counts) between the two.
    pub fn roc(&self, num_bins: usize) -> Vec<Point> {
        let points = self
            .threshold_counts(num_bins, None)
            .into_iter()
            .map(|c| (c.false_positive_rate(), c.recall()));
        std::iter::once((0.0, 0.0)).chain(points).chain([(1.0, 1.0)]).collect()
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

    /// The counts at each of `thresholds`, or — when none are given — at the lowest score of each group of
    /// [`roc`](Self::roc)'s down-sampling (`num_bins`), highest first: the ROC curve's points as a table.
    ///
    /// ```
    /// use hearth_stats::evaluation::BinaryState;
    /// let mut state = BinaryState::default();
    /// for (score, label) in [(0.9, 1.0), (0.8, 0.0), (0.7, 1.0), (0.1, 0.0)] {
    ///     state.add(score, label, 1.0);
    /// }
    /// let at_07 = state.threshold_counts(0, Some(&[0.7]))[0];
    /// assert_eq!((at_07.true_positives, at_07.false_positives, at_07.true_negatives), (2.0, 1.0, 1.0));
    /// assert_eq!((at_07.recall(), at_07.false_positive_rate()), (1.0, 0.5));
    /// assert_eq!(state.threshold_counts(0, None).len(), 4);
    /// ```
    pub fn threshold_counts(&self, num_bins: usize, thresholds: Option<&[f64]>) -> Vec<ThresholdCounts> {
        let (positives, negatives) = self
            .counts
            .values()
            .fold((0.0, 0.0), |(p, n), (gp, gn)| (p + gp, n + gn));
        let counts = |threshold: f64, (tp, fp): (f64, f64)| ThresholdCounts {
            threshold,
            true_positives: tp,
            false_positives: fp,
            true_negatives: negatives - fp,
            false_negatives: positives - tp,
        };
        match thresholds {
            Some(thresholds) => thresholds
                .iter()
                .map(|&t| {
                    let above = self
                        .counts
                        .range(Score(t)..)
                        .fold((0.0, 0.0), |(p, n), (_, (gp, gn))| (p + gp, n + gn));
                    counts(t, above)
                })
                .collect(),
            None => {
                let lowest = self.group_lowest_scores(num_bins);
                lowest
                    .into_iter()
                    .zip(self.cumulative(num_bins))
                    .map(|(t, c)| counts(t, c))
                    .collect()
            }
        }
    }

    /// The lowest score of each group [`cumulative`](Self::cumulative) sums, highest group first.
    fn group_lowest_scores(&self, num_bins: usize) -> Vec<f64> {
        let descending: Vec<f64> = self.counts.keys().rev().map(|s| s.0).collect();
        let grouping = descending.len().checked_div(num_bins).unwrap_or(1);
        match grouping < 2 {
            true => descending,
            false => descending
                .chunks(grouping)
                .filter_map(|group| group.last().copied())
                .collect(),
        }
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
