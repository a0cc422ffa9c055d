//! What a training run is: the model, the loss, the optimizer and its schedule, and the loop's settings.

use serde::{Deserialize, Serialize};

use super::augment::Augmentation;
use super::early_stopping::EarlyStopping;
use super::optimizer::OptimizerSpec;
use super::strategy::Strategy;
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
    /// A GPU per rank where there are enough, else the CPU. In a barrier stage: a GPU its executor gives
    /// each rank when the session has one for every rank; alone: `cuda:(r mod G)` for local rank `r` of a
    /// host with `G` GPUs.
    #[default]
    Auto,
    /// The CPU.
    Cpu,
    /// A GPU. In a barrier stage each rank trains on the GPU its executor gives it, and a session with fewer
    /// GPUs than ranks fails before training; alone, `cuda` picks by local rank as `auto` does and `cuda:i`
    /// names one.
    Cuda(Option<usize>),
}

/// The number format a network computes in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Precision {
    /// 32-bit floats throughout.
    #[default]
    Fp32,
    /// bfloat16 forward and backward passes over an fp32 master copy of the parameters, which the optimizer
    /// steps and the ranks average (mixed precision; a network with batch normalisation trains in fp32).
    Bf16,
}

/// How a run trains, whatever the model: optimizer, schedule, epochs, batches, seed, device. Its
/// `Default` is hearth's defaults for every estimator (Adam at 0.001, 10 epochs of 64-row batches, shuffled,
/// seed 0, a constant rate, a GPU where the host has one); estimators hold one and override fields.
///
/// ```
/// use hearth_torch::train::TrainSettings;
/// let settings = TrainSettings { epochs: 3, ..TrainSettings::default() };
/// assert_eq!((settings.epochs, settings.batch_size), (3, 64));
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TrainSettings {
    /// The optimizer (default Adam, learning rate 0.001).
    pub optimizer: OptimizerSpec,
    /// The learning-rate schedule (default constant).
    pub schedule: LrSchedule,
    /// Epochs over which the rate ramps up linearly from its unscaled value to the world-size-scaled one
    /// (Horovod's warm-up; no effect without `scale_lr_by_world_size`; default 0).
    pub warmup_epochs: f64,
    /// Multiply the learning rate by the number of ranks (Horovod's recipe; default false).
    pub scale_lr_by_world_size: bool,
    /// Passes over the data (default 10).
    pub epochs: usize,
    /// Rows per step on each rank (default 64).
    pub batch_size: usize,
    /// Shuffle each rank's rows every epoch, seeded by seed, rank and epoch (default true).
    pub shuffle: bool,
    /// Seed of the initial parameters, shuffling, dropout and MixUp (default 0).
    pub seed: u64,
    /// Per-class loss weights (cross-entropy; default none).
    pub class_weights: Option<Vec<f64>>,
    /// MixUp's Beta(α, α) parameter; none or 0 turns MixUp off (default).
    pub mixup_alpha: Option<f64>,
    /// Random flips and crops of image inputs (a `Sequential` model whose input shape is `[C, H, W]`;
    /// default none).
    pub augmentation: Augmentation,
    /// Where each rank trains (default: a GPU where the host has one).
    pub device: DeviceChoice,
    /// libtorch threads per rank (default: cores / local ranks).
    pub threads: Option<usize>,
    /// The number format of the forward and backward passes (default fp32).
    pub precision: Precision,
    /// How the ranks combine what they learn (default: every step's gradient averaged).
    pub strategy: Strategy,
    /// Stop once the validation loss stops improving, keeping the best epoch's weights (default: train
    /// every epoch; needs validation rows).
    pub early_stopping: Option<EarlyStopping>,
    /// The bytes of its rows each rank may hold in memory (default: half the memory the host has free,
    /// shared by the ranks it runs): a rank whose rows fit trains on them in memory; one whose rows do not
    /// streams them from a spill on its disk through a shuffle buffer.
    pub memory_budget: Option<u64>,
    /// Rows in a streaming rank's shuffle buffer (Ray Data's `local_shuffle_buffer_size`; default: what a
    /// quarter of the memory budget holds). A buffer that holds every row shuffles exactly as in memory.
    pub shuffle_buffer_rows: Option<usize>,
}

impl Default for TrainSettings {
    fn default() -> Self {
        Self {
            optimizer: OptimizerSpec::adam(1e-3),
            schedule: LrSchedule::Constant,
            warmup_epochs: 0.0,
            scale_lr_by_world_size: false,
            epochs: 10,
            batch_size: 64,
            shuffle: true,
            seed: 0,
            class_weights: None,
            mixup_alpha: None,
            augmentation: Augmentation::default(),
            device: DeviceChoice::Auto,
            threads: None,
            precision: Precision::Fp32,
            strategy: Strategy::Synchronous,
            early_stopping: None,
            memory_budget: None,
            shuffle_buffer_rows: None,
        }
    }
}

impl TrainSettings {
    /// The optimizer's rate, times `world` when it is scaled by the number of ranks: the rate the schedule
    /// starts from once any warm-up is over.
    pub fn scaled_learning_rate(&self, world: usize) -> f64 {
        let scale = if self.scale_lr_by_world_size { world as f64 } else { 1.0 };
        self.optimizer.learning_rate() * scale
    }

    /// The learning rate at `progress` epochs into training (fractional within an epoch) on `world` ranks.
    ///
    /// ```
    /// use hearth_torch::train::{LrSchedule, OptimizerSpec, TrainSettings};
    /// let settings = TrainSettings {
    ///     optimizer: OptimizerSpec::sgd(0.1),
    ///     schedule: LrSchedule::Step { every: 2, gamma: 0.5 },
    ///     ..TrainSettings::default()
    /// };
    /// assert_eq!(settings.learning_rate(2.5, 1), 0.05);
    /// ```
    pub fn learning_rate(&self, progress: f64, world: usize) -> f64 {
        let scale = if self.scale_lr_by_world_size { world as f64 } else { 1.0 };
        let base = self.scaled_learning_rate(world);
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

/// A complete description of a training run, the same on every rank: the network, the loss, and the
/// settings (written flat beside them in JSON).
///
/// ```
/// use hearth_torch::model::{Activation, ModelSpec};
/// use hearth_torch::train::{Loss, TrainOptions, TrainSettings};
/// let options = TrainOptions::new(
///     ModelSpec::Mlp { inputs: 30, hidden: vec![64], outputs: 2, activation: Activation::Relu, dropout: 0.0 },
///     TrainSettings::default(),
/// );
/// assert_eq!(options.loss, Loss::SoftmaxCrossEntropy);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrainOptions {
    /// The network.
    pub model: ModelSpec,
    /// The loss (default: cross-entropy for several outputs, binary cross-entropy for one).
    pub loss: Loss,
    /// Optimizer, schedule, epochs, batches, seed, device.
    #[serde(flatten)]
    pub settings: TrainSettings,
}

impl TrainOptions {
    /// Options for `model` with `settings` and the loss that fits the model's outputs.
    pub fn new(model: ModelSpec, settings: TrainSettings) -> Self {
        let loss = match model.outputs() {
            Ok(1) => Loss::BinaryCrossEntropy,
            _ => Loss::SoftmaxCrossEntropy,
        };
        Self { model, loss, settings }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(schedule: LrSchedule) -> TrainSettings {
        TrainSettings {
            optimizer: OptimizerSpec::sgd(0.1),
            schedule,
            ..TrainSettings::default()
        }
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
