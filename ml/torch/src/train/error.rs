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
    #[error("rank {rank}: {message}{}", cause.as_ref().map(|e| format!(": {e}")).unwrap_or_default())]
    Options {
        /// The rank.
        rank: usize,
        /// What is wrong, naming the option and its value (or, with a cause, where it was checked).
        message: String,
        /// The option's check that refused it, when there is one.
        #[source]
        cause: Option<OptionsError>,
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

/// An option whose value cannot be used: which option, and what is wrong with its value.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct OptionsError {
    /// The option, as the settings name it: `optimizer`, `strategy` or `device`.
    pub option: &'static str,
    /// What is wrong, naming the parameter and its value.
    pub message: String,
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
