//! What a training run is: the model, the loss, the optimizer and its schedule, and the loop's settings.

use serde::{Deserialize, Serialize};

use super::optimizer::OptimizerSpec;
use crate::model::ModelSpec;

/// The loss minimised.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Loss {
    /// Softmax cross-entropy over `outputs` classes; labels are class indices.
    SoftmaxCrossEntropy,
    /// Binary cross-entropy on one logit; labels are 0 or 1.
    BinaryCrossEntropy,
    /// Mean squared error; labels are targets.
    MeanSquaredError,
}

/// How the learning rate changes over epochs (after any warm-up).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "schedule", rename_all = "snake_case")]
pub enum LrSchedule {
    /// The same rate throughout.
    #[default]
    Constant,
    /// Multiply by `gamma` every `every` epochs.
    Step {
        /// Epochs between decays.
        every: usize,
        /// Factor.
        gamma: f64,
    },
    /// Multiply by `gamma` every epoch.
    Exponential {
        /// Factor.
        gamma: f64,
    },
}

/// Where a rank trains.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeviceChoice {
    /// A GPU when the host has one (rank `r` of a host with `G` GPUs uses `cuda:(r mod G)`), else the CPU.
    #[default]
    Auto,
    /// The CPU.
    Cpu,
    /// A GPU: `cuda` picks by local rank as `auto` does, `cuda:i` names one.
    Cuda(Option<usize>),
}

/// A complete description of a training run, the same on every rank.
///
/// ```
/// use hearth_ml::model::{Activation, ModelSpec};
/// use hearth_ml::train::{OptimizerSpec, TrainOptions};
/// let options = TrainOptions::new(
///     ModelSpec::Mlp { inputs: 30, hidden: vec![64], outputs: 2, activation: Activation::Relu, dropout: 0.0 },
///     OptimizerSpec::adam(1e-3),
/// );
/// assert_eq!(options.batch_size, 64);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrainOptions {
    /// The network.
    pub model: ModelSpec,
    /// The loss (default: cross-entropy for several outputs, binary cross-entropy for one).
    pub loss: Loss,
    /// The optimizer.
    pub optimizer: OptimizerSpec,
    /// The learning-rate schedule.
    #[serde(default)]
    pub schedule: LrSchedule,
    /// Epochs over which the rate ramps up linearly from its unscaled value to the world-size-scaled one
    /// (Horovod's warm-up; no effect without `scale_lr_by_world_size`).
    #[serde(default)]
    pub warmup_epochs: f64,
    /// Multiply the learning rate by the number of ranks (Horovod's recipe).
    #[serde(default)]
    pub scale_lr_by_world_size: bool,
    /// Passes over the data.
    pub epochs: usize,
    /// Rows per step on each rank.
    pub batch_size: usize,
    /// Shuffle each rank's rows every epoch (seeded by seed, rank and epoch).
    #[serde(default = "yes")]
    pub shuffle: bool,
    /// Seed of the initial parameters, shuffling, dropout and MixUp.
    #[serde(default)]
    pub seed: u64,
    /// Per-class loss weights (cross-entropy).
    #[serde(default)]
    pub class_weights: Option<Vec<f64>>,
    /// MixUp's Beta(α, α) parameter; none or 0 turns MixUp off.
    #[serde(default)]
    pub mixup_alpha: Option<f64>,
    /// Where each rank trains.
    #[serde(default)]
    pub device: DeviceChoice,
    /// libtorch threads per rank (default: cores / local ranks).
    #[serde(default)]
    pub threads: Option<usize>,
}

fn yes() -> bool {
    true
}

impl TrainOptions {
    /// Options with the defaults: the loss that fits the model's outputs, 10 epochs of 64-row batches,
    /// shuffled, constant rate, CPU or GPU automatically.
    pub fn new(model: ModelSpec, optimizer: OptimizerSpec) -> Self {
        let loss = match model.outputs() {
            Ok(1) => Loss::BinaryCrossEntropy,
            _ => Loss::SoftmaxCrossEntropy,
        };
        Self {
            model,
            loss,
            optimizer,
            schedule: LrSchedule::Constant,
            warmup_epochs: 0.0,
            scale_lr_by_world_size: false,
            epochs: 10,
            batch_size: 64,
            shuffle: true,
            seed: 0,
            class_weights: None,
            mixup_alpha: None,
            device: DeviceChoice::Auto,
            threads: None,
        }
    }

    /// The learning rate at `progress` epochs into training (fractional within an epoch) on `world` ranks.
    pub fn learning_rate(&self, progress: f64, world: usize) -> f64 {
        let scale = if self.scale_lr_by_world_size { world as f64 } else { 1.0 };
        let base = self.optimizer.learning_rate() * scale;
        let epoch = progress.floor() as i32;
        let scheduled = match &self.schedule {
            LrSchedule::Constant => base,
            LrSchedule::Step { every, gamma } => base * gamma.powi(epoch / (*every).max(1) as i32),
            LrSchedule::Exponential { gamma } => base * gamma.powi(epoch),
        };
        if self.warmup_epochs > 0.0 && progress < self.warmup_epochs {
            let start = 1.0 / scale;
            scheduled * (start + (1.0 - start) * progress / self.warmup_epochs)
        } else {
            scheduled
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ModelSpec;

    fn options(schedule: LrSchedule) -> TrainOptions {
        let mut options = TrainOptions::new(ModelSpec::Linear { inputs: 2, outputs: 2 }, OptimizerSpec::sgd(0.1));
        options.schedule = schedule;
        options
    }

    #[test]
    fn schedules_decay_by_epoch() {
        let step = options(LrSchedule::Step { every: 2, gamma: 0.5 });
        let rates: Vec<f64> = (0..5).map(|e| step.learning_rate(e as f64, 1)).collect();
        assert_eq!(rates, [0.1, 0.1, 0.05, 0.05, 0.025]);
        let exponential = options(LrSchedule::Exponential { gamma: 0.5 });
        assert_eq!(exponential.learning_rate(2.7, 1), 0.025);
        assert_eq!(options(LrSchedule::Constant).learning_rate(9.0, 4), 0.1);
    }

    #[test]
    fn world_size_scaling_warms_up_from_the_unscaled_rate() {
        let mut scaled = options(LrSchedule::Constant);
        scaled.scale_lr_by_world_size = true;
        scaled.warmup_epochs = 2.0;
        assert!((scaled.learning_rate(0.0, 4) - 0.1).abs() < 1e-12);
        assert!((scaled.learning_rate(1.0, 4) - 0.25).abs() < 1e-12);
        assert!((scaled.learning_rate(2.0, 4) - 0.4).abs() < 1e-12);
        assert!((scaled.learning_rate(5.0, 4) - 0.4).abs() < 1e-12);
    }
}
