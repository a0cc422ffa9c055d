//! Early stopping: training ends once the validation loss has gone `patience` epochs without improving by
//! the least amount that counts, and the model keeps the best epoch's weights — Keras's
//! `EarlyStopping(patience, min_delta, restore_best_weights=True)`. BigQuery ML's `early_stop` with
//! `min_rel_progress` is patience 1 with a relative improvement.
//!
//! Where training stands is a function of the history alone ([`EarlyStopping::verdict`]), so a run resumed
//! from a checkpoint (whose history and best weights travel with it) decides as the first run would have.

use hearth_collective::{CollectiveError, Communicator};
use serde::{Deserialize, Serialize};
use tch::{TchError, Tensor};

use super::error::OptionsError;
use super::report::EpochStats;
use crate::model::{NamedTensor, host_copies};

/// When training stops before its last epoch.
///
/// ```
/// use hearth_torch::train::EarlyStopping;
/// let keras = EarlyStopping::new(3, 1e-4);
/// let bigquery = EarlyStopping::relative(1, 0.01);
/// assert!(keras.check().is_ok() && bigquery.check().is_ok());
/// assert!(EarlyStopping::new(0, 0.0).check().is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct EarlyStopping {
    /// Epochs in a row without improvement after which training stops (at least 1).
    pub patience: usize,
    /// The least decrease of the validation loss that counts as an improvement.
    pub min_improvement: Improvement,
}

/// The least decrease of the validation loss below the best so far that counts as an improvement.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum Improvement {
    /// By at least this much (Keras's `min_delta`).
    Absolute(f64),
    /// By at least this fraction of the best loss (BigQuery ML's `min_rel_progress`).
    Relative(f64),
}

/// Where training stands after some epochs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// The epoch (from 1) whose weights the model keeps: the last that improved on the best before it.
    pub best_epoch: Option<usize>,
    /// Whether training stops now.
    pub stop: bool,
}

impl EarlyStopping {
    /// Stop after `patience` epochs that do not lower the validation loss by `min_delta` (Keras).
    pub fn new(patience: usize, min_delta: f64) -> Self {
        Self {
            patience,
            min_improvement: Improvement::Absolute(min_delta),
        }
    }

    /// Stop after `patience` epochs that do not lower the validation loss by `min_rel_progress` of the best
    /// loss so far (BigQuery ML: patience 1, `min_rel_progress` 0.01 by default).
    pub fn relative(patience: usize, min_rel_progress: f64) -> Self {
        Self {
            patience,
            min_improvement: Improvement::Relative(min_rel_progress),
        }
    }

    /// Refuses a patience of 0 and an improvement that is negative or not a number.
    pub fn check(&self) -> Result<(), OptionsError> {
        let refused = |message: String| {
            Err(OptionsError {
                option: "early_stopping",
                message,
            })
        };
        let (name, value) = match self.min_improvement {
            Improvement::Absolute(delta) => ("min_delta", delta),
            Improvement::Relative(progress) => ("min_rel_progress", progress),
        };
        if self.patience == 0 {
            return refused("patience must be at least 1 epoch, got 0".to_string());
        }
        if !(value.is_finite() && value >= 0.0) {
            return refused(format!("{name} must be a number ≥ 0, got {value}"));
        }
        Ok(())
    }

    /// Whether `loss` improves on `best` by enough.
    fn improves(&self, loss: f64, best: f64) -> bool {
        match self.min_improvement {
            Improvement::Absolute(delta) => loss < best - delta,
            Improvement::Relative(progress) => best - loss > progress * best.abs(),
        }
    }

    /// Where training stands after `history`: the best epoch so far, and whether `patience` epochs have
    /// passed since it. Epochs without a validation loss (or with NaN) never improve.
    ///
    /// ```
    /// use hearth_torch::train::{EarlyStopping, EpochStats};
    /// let epoch = |epoch: usize, loss: f64| EpochStats {
    ///     epoch,
    ///     loss,
    ///     accuracy: None,
    ///     validation_loss: Some(loss),
    ///     validation_accuracy: None,
    ///     learning_rate: 0.001,
    ///     seconds: 1.0,
    ///     rows: 100,
    /// };
    /// let history = [epoch(1, 0.9), epoch(2, 0.5), epoch(3, 0.499), epoch(4, 0.6)];
    /// let verdict = EarlyStopping::new(2, 0.01).verdict(&history);
    /// assert_eq!((verdict.best_epoch, verdict.stop), (Some(2), true));
    /// assert!(!EarlyStopping::new(3, 0.01).verdict(&history).stop);
    /// ```
    pub fn verdict(&self, history: &[EpochStats]) -> Verdict {
        let mut best: Option<(usize, f64)> = None;
        for stats in history {
            let Some(loss) = stats.validation_loss.filter(|l| !l.is_nan()) else {
                continue;
            };
            if best.is_none_or(|(_, best_loss)| self.improves(loss, best_loss)) {
                best = Some((stats.epoch, loss));
            }
        }
        let last = history.last().map_or(0, |s| s.epoch);
        let waited = last - best.map_or(0, |(epoch, _)| epoch);
        Verdict {
            best_epoch: best.map(|(epoch, _)| epoch),
            stop: !history.is_empty() && waited >= self.patience,
        }
    }
}

/// A run's early stopping: its rule, and rank 0's copy of the best epoch's weights so far.
pub(super) struct BestWeights {
    rule: Option<EarlyStopping>,
    tensors: Vec<NamedTensor>,
}

impl BestWeights {
    pub(super) fn new(rule: Option<EarlyStopping>) -> Self {
        Self {
            rule,
            tensors: Vec::new(),
        }
    }

    /// Takes the best weights a checkpoint kept.
    pub(super) fn restore(&mut self, tensors: &[NamedTensor]) {
        self.tensors = tensors.to_vec();
    }

    /// Whether training stops before the next epoch: rank 0's verdict on `history`, broadcast so every rank
    /// stops at the same epoch (never, without a rule).
    pub(super) fn stops(&self, history: &[EpochStats], comm: &mut Communicator) -> Result<bool, CollectiveError> {
        let Some(rule) = &self.rule else {
            return Ok(false);
        };
        let mut stop = [f32::from(u8::from(rule.verdict(history).stop))];
        if comm.world_size() > 1 {
            comm.broadcast(&mut stop, 0)?;
        }
        Ok(stop[0] > 0.0)
    }

    /// On rank 0, copies `named` when the epoch `history` ends with is the best so far.
    pub(super) fn observe(
        &mut self,
        rank: usize,
        history: &[EpochStats],
        named: &[(String, Tensor)],
    ) -> Result<(), TchError> {
        let Some(rule) = &self.rule else {
            return Ok(());
        };
        let last = history.last().map(|s| s.epoch);
        if rank == 0 && rule.verdict(history).best_epoch == last {
            self.tensors = host_copies(named)?;
        }
        Ok(())
    }

    /// The best epoch's weights, once one was kept.
    pub(super) fn tensors(&self) -> Option<&[NamedTensor]> {
        Some(self.tensors.as_slice()).filter(|t| !t.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn history(losses: &[f64]) -> Vec<EpochStats> {
        losses
            .iter()
            .enumerate()
            .map(|(i, &loss)| EpochStats {
                epoch: i + 1,
                loss,
                accuracy: None,
                validation_loss: Some(loss),
                validation_accuracy: None,
                learning_rate: 0.1,
                seconds: 0.0,
                rows: 1,
            })
            .collect()
    }

    #[test]
    fn relative_progress_stops_at_the_first_epoch_that_gains_too_little() {
        let rule = EarlyStopping::relative(1, 0.01);
        assert!(!rule.verdict(&history(&[1.0, 0.9])).stop);
        // 0.9 → 0.895 is 0.56 % better: not enough.
        let verdict = rule.verdict(&history(&[1.0, 0.9, 0.895]));
        assert_eq!((verdict.best_epoch, verdict.stop), (Some(2), true));
    }

    #[test]
    fn a_later_improvement_resets_the_patience() {
        let rule = EarlyStopping::new(2, 0.0);
        let verdict = rule.verdict(&history(&[1.0, 1.1, 0.8, 0.9]));
        assert_eq!((verdict.best_epoch, verdict.stop), (Some(3), false));
        assert!(rule.verdict(&history(&[1.0, 1.1, 0.8, 0.9, 0.85])).stop);
    }

    #[test]
    fn no_history_or_no_validation_loss_never_improves() {
        let rule = EarlyStopping::new(1, 0.0);
        assert_eq!(
            rule.verdict(&[]),
            Verdict {
                best_epoch: None,
                stop: false
            }
        );
        let mut unvalidated = history(&[1.0, 0.5]);
        unvalidated.iter_mut().for_each(|s| s.validation_loss = None);
        assert_eq!(
            rule.verdict(&unvalidated),
            Verdict {
                best_epoch: None,
                stop: true
            }
        );
    }

    #[test]
    fn negative_or_nan_improvements_are_refused() {
        assert!(EarlyStopping::new(1, -0.1).check().is_err());
        let error = EarlyStopping::relative(2, f64::NAN).check().unwrap_err();
        assert_eq!(error.option, "early_stopping");
        assert!(error.message.contains("min_rel_progress"), "{}", error.message);
    }
}
