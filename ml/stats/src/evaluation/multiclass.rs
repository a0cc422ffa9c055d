//! Multiclass classification metrics with Spark's definitions (`MulticlassClassificationEvaluator`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A label or prediction value as an ordered map key (labels are whole numbers stored as doubles).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
struct Class(i64);

impl Class {
    fn of(value: f64) -> Self {
        Class(value.round() as i64)
    }
}

/// The mergeable state of a multiclass evaluation: the weighted confusion counts and the log-loss sum.
///
/// ```
/// use hearth_stats::evaluation::MulticlassState;
///
/// let mut state = MulticlassState::default();
/// for (label, prediction) in [(0.0, 0.0), (0.0, 1.0), (1.0, 1.0), (1.0, 1.0)] {
///     state.add(label, prediction, 1.0, None);
/// }
/// assert_eq!(state.accuracy(), 0.75);
/// assert!((state.weighted_f_measure(1.0) - 0.7333333333333334).abs() < 1e-12);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MulticlassState {
    /// Weight per (true label, predicted label).
    confusion: BTreeMap<(Class, Class), f64>,
    /// Σ w · −log(clip(p[label])) over rows that carried probabilities.
    log_loss: f64,
    /// Σ w over rows that carried probabilities.
    log_loss_weight: f64,
}

impl MulticlassState {
    /// Adds one row: its true `label`, its `prediction`, its `weight` and, for log-loss, the probability the
    /// model gave the true label (already clipped by the caller or clipped here with `eps = 1e-15`).
    pub fn add(&mut self, label: f64, prediction: f64, weight: f64, probability_of_label: Option<f64>) {
        *self
            .confusion
            .entry((Class::of(label), Class::of(prediction)))
            .or_insert(0.0) += weight;
        if let Some(p) = probability_of_label {
            self.add_log_loss(p, weight, 1e-15);
        }
    }

    /// Adds one row's log-loss term with Spark's clipping `clip(p, eps, 1 − eps)`.
    pub fn add_log_loss(&mut self, probability_of_label: f64, weight: f64, eps: f64) {
        let p = probability_of_label.clamp(eps, 1.0 - eps);
        self.log_loss -= weight * p.ln();
        self.log_loss_weight += weight;
    }

    /// How many bytes [`to_bytes`](Self::to_bytes) writes.
    pub fn encoded_len(&self) -> usize {
        16 + self.confusion.len() * 24
    }

    /// The state as bytes, for the partial and final halves of an aggregate.
    ///
    /// ```
    /// use hearth_stats::evaluation::MulticlassState;
    /// let mut state = MulticlassState::default();
    /// state.add(1.0, 0.0, 2.0, Some(0.25));
    /// assert_eq!(MulticlassState::from_bytes(&state.to_bytes()).unwrap(), state);
    /// ```
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(16 + self.confusion.len() * 24);
        super::encoding::put(&mut bytes, &[self.log_loss, self.log_loss_weight]);
        for ((label, prediction), weight) in &self.confusion {
            super::encoding::put(&mut bytes, &[label.0 as f64, prediction.0 as f64, *weight]);
        }
        bytes
    }

    /// Reads a state written by [`MulticlassState::to_bytes`]; no bytes is the empty state.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, super::StateDecodeError> {
        let values = super::encoding::values("multiclass", bytes, 1)?;
        let Some((head, records)) = values.split_first_chunk::<2>() else {
            return if values.is_empty() {
                Ok(Self::default())
            } else {
                Err(super::StateDecodeError {
                    state: "multiclass",
                    message: "a state of one number".to_string(),
                })
            };
        };
        if !records.len().is_multiple_of(3) {
            return Err(super::StateDecodeError {
                state: "multiclass",
                message: format!(
                    "{} numbers after the log-loss sums are not whole records of 3",
                    records.len()
                ),
            });
        }
        let confusion = records
            .chunks_exact(3)
            .map(|r| ((Class::of(r[0]), Class::of(r[1])), r[2]))
            .collect();
        Ok(Self {
            confusion,
            log_loss: head[0],
            log_loss_weight: head[1],
        })
    }

    /// Folds another partial state into this one.
    pub fn merge(&mut self, other: &MulticlassState) {
        for (key, weight) in &other.confusion {
            *self.confusion.entry(*key).or_insert(0.0) += weight;
        }
        self.log_loss += other.log_loss;
        self.log_loss_weight += other.log_loss_weight;
    }

    /// The confusion matrix: `(true label, predicted label, weight)` for every pair seen, by label.
    ///
    /// ```
    /// let mut state = hearth_stats::evaluation::MulticlassState::default();
    /// state.add(1.0, 0.0, 2.0, None);
    /// state.add(1.0, 1.0, 1.0, None);
    /// assert_eq!(state.confusion(), vec![(1, 0, 2.0), (1, 1, 1.0)]);
    /// ```
    pub fn confusion(&self) -> Vec<(i64, i64, f64)> {
        self.confusion.iter().map(|(&(l, p), &w)| (l.0, p.0, w)).collect()
    }

    /// The total weight `W`.
    pub fn weight(&self) -> f64 {
        self.confusion.values().sum()
    }

    /// Weight of rows whose true label is `label` (`w_ℓ`).
    fn label_weight(&self, label: Class) -> f64 {
        self.confusion
            .iter()
            .filter(|((l, _), _)| *l == label)
            .map(|(_, w)| w)
            .sum()
    }

    fn true_positives(&self, label: Class) -> f64 {
        self.confusion.get(&(label, label)).copied().unwrap_or(0.0)
    }

    fn false_positives(&self, label: Class) -> f64 {
        self.confusion
            .iter()
            .filter(|((l, p), _)| *p == label && *l != label)
            .map(|(_, w)| w)
            .sum()
    }

    /// The labels that occur as true labels, in order.
    fn labels(&self) -> Vec<Class> {
        let mut labels: Vec<Class> = self.confusion.keys().map(|(l, _)| *l).collect();
        labels.dedup();
        labels
    }

    /// `Σ_ℓ (w_ℓ / W) · f(ℓ)` over the true labels.
    fn weighted(&self, f: impl Fn(Class) -> f64) -> f64 {
        let total = self.weight();
        self.labels()
            .into_iter()
            .map(|l| self.label_weight(l) / total * f(l))
            .sum()
    }

    /// Σ tp / W.
    pub fn accuracy(&self) -> f64 {
        self.labels().into_iter().map(|l| self.true_positives(l)).sum::<f64>() / self.weight()
    }

    /// Misclassified weight / W.
    pub fn hamming_loss(&self) -> f64 {
        1.0 - self.accuracy()
    }

    /// `tp / (tp + fp)` for `label`, 0 when nothing was predicted as it.
    pub fn precision(&self, label: f64) -> f64 {
        let label = Class::of(label);
        let (tp, fp) = (self.true_positives(label), self.false_positives(label));
        if tp + fp == 0.0 { 0.0 } else { tp / (tp + fp) }
    }

    /// `tp / w_ℓ` for `label` (its true-positive rate).
    pub fn recall(&self, label: f64) -> f64 {
        let class = Class::of(label);
        let weight = self.label_weight(class);
        if weight == 0.0 {
            0.0
        } else {
            self.true_positives(class) / weight
        }
    }

    /// `fp / (W − w_ℓ)` for `label`.
    pub fn false_positive_rate(&self, label: f64) -> f64 {
        let class = Class::of(label);
        let negatives = self.weight() - self.label_weight(class);
        if negatives == 0.0 {
            0.0
        } else {
            self.false_positives(class) / negatives
        }
    }

    /// `(1 + β²)·P·R / (β²·P + R)` for `label`, 0 when `P + R = 0`.
    pub fn f_measure(&self, label: f64, beta: f64) -> f64 {
        let (p, r) = (self.precision(label), self.recall(label));
        if p + r == 0.0 {
            0.0
        } else {
            let b2 = beta * beta;
            (1.0 + b2) * p * r / (b2 * p + r)
        }
    }

    /// Support-weighted precision.
    pub fn weighted_precision(&self) -> f64 {
        self.weighted(|l| self.precision(l.0 as f64))
    }

    /// Support-weighted recall (equals accuracy).
    pub fn weighted_recall(&self) -> f64 {
        self.weighted(|l| self.recall(l.0 as f64))
    }

    /// Support-weighted false-positive rate.
    pub fn weighted_false_positive_rate(&self) -> f64 {
        self.weighted(|l| self.false_positive_rate(l.0 as f64))
    }

    /// Support-weighted F-measure: Spark's `f1` with `beta = 1`.
    pub fn weighted_f_measure(&self, beta: f64) -> f64 {
        self.weighted(|l| self.f_measure(l.0 as f64, beta))
    }

    /// Weighted mean log-loss of the rows that carried probabilities.
    pub fn log_loss(&self) -> f64 {
        self.log_loss / self.log_loss_weight
    }
}
