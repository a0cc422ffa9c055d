//! Why a rank's training fails.

use crate::model::{LoadError, SpecError};
use hearth_collective::CollectiveError;

/// Why a rank's training failed.
#[derive(Debug, thiserror::Error)]
pub enum TrainError {
    /// A collective failed (a peer died, stalled or misbehaved).
    #[error(transparent)]
    Collective(#[from] CollectiveError),
    /// The model spec is inconsistent.
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// libtorch refused an operation.
    #[error("rank {rank}: libtorch: {source}")]
    Torch {
        /// The rank.
        rank: usize,
        /// libtorch's error.
        source: tch::TchError,
    },
    /// The shard does not fit the model or the loss.
    #[error("rank {rank}: {message}")]
    Data {
        /// The rank.
        rank: usize,
        /// What is wrong, with the row and value.
        message: String,
    },
    /// The options cannot train on this stage (a strategy's parameter, one worker asked for on several).
    #[error("rank {rank}: {message}")]
    Options {
        /// The rank.
        rank: usize,
        /// What is wrong, naming the option and its value.
        message: String,
    },
    /// The job was cancelled while the rank trained.
    #[error("rank {rank}: cancelled in epoch {epoch}")]
    Cancelled {
        /// The rank.
        rank: usize,
        /// The epoch it was in (from 1).
        epoch: usize,
    },
}

impl TrainError {
    /// A failure to load tensors (from a checkpoint or a broadcast), as rank `rank`'s error.
    pub(crate) fn loading(rank: usize, error: LoadError) -> Self {
        match error {
            LoadError::Torch(source) => TrainError::Torch { rank, source },
            mismatch => TrainError::Data {
                rank,
                message: format!("the checkpoint does not fit this model: it {mismatch}"),
            },
        }
    }
}
