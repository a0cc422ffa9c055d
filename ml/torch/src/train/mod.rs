//! Data-parallel training: what a run is ([`TrainOptions`] = model + loss + [`TrainSettings`]), the
//! optimizers, how ranks combine what they learn ([`Strategy`]), when training stops early
//! ([`EarlyStopping`]), and one rank's loop ([`RankTrainer`]) with its checkpoints and reports.

mod augment;
mod averaging;
mod batches;
mod checkpoint;
mod device;
mod early_stopping;
mod error;
mod exchange;
mod loss;
mod optimizer;
mod options;
mod precision;
mod report;
mod rows;
mod setup;
mod strategy;
mod trainer;

pub use augment::Augmentation;
pub use checkpoint::{Checkpoint, CheckpointError};
pub use device::{
    CudaLibrary, UnseenGpus, cuda_device_count, cuda_library, libtorch_sees_gpus, prediction_device, why_no_gpus,
};
pub use early_stopping::{EarlyStopping, Improvement, Verdict};
pub use error::{OptionsError, TrainError};
pub use optimizer::{Optimizer, OptimizerSpec};
pub use options::{DeviceChoice, Loss, LrSchedule, Precision, TrainOptions, TrainSettings};
pub use report::{EpochStats, RankOutcome, RankReport};
pub use rows::RankData;
pub use strategy::{Strategy, pushed_change};
pub use trainer::RankTrainer;
