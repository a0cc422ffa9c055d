//! Binary classification metrics with Spark's curve rules (`BinaryClassificationEvaluator`).

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

/// A score as an ordered key, in IEEE total order (−0 below 0, NaN above every number).
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
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct BinaryState {
    /// (score, positive weight, negative weight) of rows or groups of rows, in the order they came: adding a
    /// row is a push, and a million rows are sorted once rather than inserted one by one.
    entries: Vec<(Score, f64, f64)>,
    /// The entries by ascending score, each distinct score once: made when first read, dropped on a change.
    #[serde(skip)]
    by_score: OnceLock<Vec<(Score, f64, f64)>>,
}

/// Rows [`BinaryState::add`] keeps before it folds equal scores together: memory stays that many entries plus
/// the distinct scores, however many rows come.
const UNFOLDED_ROWS: usize = 1 << 20;

impl PartialEq for BinaryState {
    fn eq(&self, other: &Self) -> bool {
        self.by_score() == other.by_score()
    }
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
        self.by_score.take();
        if self.entries.len() >= self.entries.capacity() && self.entries.len() >= UNFOLDED_ROWS {
            self.fold_equal_scores();
        }
        if label > 0.5 {
            self.entries.push((Score(score), weight, 0.0));
        } else {
            self.entries.push((Score(score), 0.0, weight));
        }
    }

    /// Folds another partial state into this one.
    pub fn merge(&mut self, other: &BinaryState) {
        self.by_score.take();
        self.entries.extend_from_slice(other.by_score());
        if self.entries.len() >= UNFOLDED_ROWS {
            self.fold_equal_scores();
        }
    }

    /// Each distinct score once, ascending, with its positive and negative weight.
    fn by_score(&self) -> &[(Score, f64, f64)] {
        self.by_score.get_or_init(|| folded(self.entries.clone()))
    }

    /// Replaces the entries by one per distinct score, leaving room for as many more rows again as there are
    /// distinct scores (and at least [`UNFOLDED_ROWS`]) before the next fold.
    fn fold_equal_scores(&mut self) {
        let mut entries = folded(std::mem::take(&mut self.entries));
        entries.shrink_to_fit();
        entries.reserve_exact(entries.len().max(UNFOLDED_ROWS));
        self.entries = entries;
    }

    /// At most how many bytes [`to_bytes`](Self::to_bytes) writes, and about the memory the state holds (24
    /// per entry room is kept for, before equal scores are folded): cheap, as an aggregate asks it after every
    /// batch.
    pub fn encoded_len(&self) -> usize {
        let sorted = self.by_score.get().map_or(0, Vec::len);
        (self.entries.capacity() + sorted) * 24
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
        let by_score = self.by_score();
        let mut bytes = Vec::with_capacity(by_score.len() * 24);
        for (score, p, n) in by_score {
            super::encoding::put(&mut bytes, &[score.0, *p, *n]);
        }
        bytes
    }

    /// Reads a state written by [`BinaryState::to_bytes`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, super::StateDecodeError> {
        let values = super::encoding::values("binary", bytes, 3)?;
        let entries = values.chunks_exact(3).map(|r| (Score(r[0]), r[1], r[2])).collect();
        Ok(Self {
            entries,
            by_score: OnceLock::new(),
        })
    }

    /// Cumulative (positives, negatives) at each threshold, highest score first, after Spark's
    /// down-sampling: with `num_bins > 0` and at least two distinct scores per bin, consecutive scores
    /// are merged into groups of `distinct / num_bins`.
    fn cumulative(&self, num_bins: usize) -> Vec<(f64, f64)> {
        let descending: Vec<(f64, f64)> = self.by_score().iter().rev().map(|&(_, p, n)| (p, n)).collect();
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
        let by_score = self.by_score();
        let (positives, negatives) = by_score.iter().fold((0.0, 0.0), |(p, n), (_, gp, gn)| (p + gp, n + gn));
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
                    let from = by_score.partition_point(|(score, _, _)| *score < Score(t));
                    let above = by_score[from..]
                        .iter()
                        .fold((0.0, 0.0), |(p, n), (_, gp, gn)| (p + gp, n + gn));
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
        let descending: Vec<f64> = self.by_score().iter().rev().map(|(s, _, _)| s.0).collect();
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

/// `entries` sorted by score, each score's weights added into one entry.
fn folded(mut entries: Vec<(Score, f64, f64)>) -> Vec<(Score, f64, f64)> {
    // Stable, so each score's weights add in the order they came, as they did into a map.
    entries.sort_by_key(|entry| entry.0);
    let mut merged: Vec<(Score, f64, f64)> = Vec::with_capacity(entries.len());
    for (score, p, n) in entries {
        match merged.last_mut() {
            Some(last) if last.0.cmp(&score).is_eq() => {
                last.1 += p;
                last.2 += n;
            }
            _ => merged.push((score, p, n)),
        }
    }
    merged
}

/// `Σ (x₂ − x₁)·(y₁ + y₂)/2` over consecutive points.
fn trapezoid(points: &[Point]) -> f64 {
    points
        .windows(2)
        .map(|w| (w[1].0 - w[0].0) * (w[0].1 + w[1].1) / 2.0)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_are_told_apart_as_an_ordered_map_tells_them() {
        let mut state = BinaryState::default();
        for (score, label) in [(0.0, 1.0), (-0.0, 0.0), (f64::NAN, 1.0), (f64::NAN, 0.0), (0.5, 1.0)] {
            state.add(score, label, 1.0);
        }
        let scores: Vec<String> = state.by_score().iter().map(|e| format!("{:?}", e.0.0)).collect();
        assert_eq!(scores, ["-0.0", "0.0", "0.5", "NaN"]);
    }

    #[test]
    fn many_rows_of_few_scores_fold_and_give_the_same_curve() {
        let mut folded_as_it_goes = BinaryState::default();
        let mut few = BinaryState::default();
        for row in 0..(5 * UNFOLDED_ROWS / 2) {
            let score = (row % 1000) as f64 / 1000.0;
            let label = f64::from(u8::from(row % 7 < 3 + row % 1000 / 250));
            folded_as_it_goes.add(score, label, 1.0);
            if row < 1000 * 7 {
                few.add(score, label, 1.0);
            }
        }
        assert!(
            folded_as_it_goes.entries.len() < 2 * UNFOLDED_ROWS,
            "{}",
            folded_as_it_goes.entries.len()
        );
        assert_eq!(folded_as_it_goes.by_score().len(), 1000);
        let auc = folded_as_it_goes.area_under_roc(0);
        assert!((0.5..1.0).contains(&auc), "{auc}");
        // Merging parts gives the whole.
        let mut merged = BinaryState::default();
        merged.merge(&few);
        merged.merge(&few);
        let mut twice = few.clone();
        for (score, p, n) in few.by_score() {
            twice.entries.push((*score, *p, *n));
        }
        twice.by_score.take();
        assert_eq!(merged, twice);
    }
}
