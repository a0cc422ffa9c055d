//! Data-parallel training: options, optimizers, and the per-rank loop.

mod optimizer;
mod options;
mod rank;

pub use optimizer::{Optimizer, OptimizerSpec};
pub use options::{DeviceChoice, Loss, LrSchedule, TrainOptions};
pub use rank::{Checkpoint, EpochStats, RankOutcome, RankReport, TrainError, cuda_device_count, train_rank};
