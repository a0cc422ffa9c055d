//! A checkpoint: what a retried stage resumes from, sent by rank 0 to the driver after every epoch as one
//! safetensors buffer (`model.*`, `optimizer.*` and, under early stopping, `best.*` tensors).

use serde::{Deserialize, Serialize};

use super::report::EpochStats;
use crate::model::{NamedTensor, SafetensorsError};

/// What is needed to resume training after an epoch.
#[derive(Clone, Debug, PartialEq)]
pub struct Checkpoint {
    /// Epochs completed.
    pub epoch: usize,
    /// The network's tensors.
    pub tensors: Vec<NamedTensor>,
    /// Optimizer steps taken.
    pub optimizer_steps: i64,
    /// The optimizer's state tensors.
    pub optimizer_state: Vec<NamedTensor>,
    /// History so far.
    pub history: Vec<EpochStats>,
    /// Under early stopping, the best epoch's network tensors (empty otherwise).
    pub best_tensors: Vec<NamedTensor>,
}

/// The metadata key of a checkpoint's bytes that holds its epoch, step count and history.
const CHECKPOINT_KEY: &str = "hearth.checkpoint";

/// Why a checkpoint cannot become bytes, or bytes a checkpoint.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// The tensors cannot be written as safetensors, or the bytes read as safetensors.
    #[error(transparent)]
    Tensors(#[from] SafetensorsError),
    /// The bytes are safetensors, but hold no checkpoint's header.
    #[error("not a checkpoint: no {:?} metadata", CHECKPOINT_KEY)]
    NotACheckpoint,
    /// The header (epoch, step count, history) cannot be written or read.
    #[error("the checkpoint's header: {0}")]
    Header(#[source] serde_json::Error),
}

#[derive(Serialize, Deserialize)]
struct CheckpointHeader {
    epoch: usize,
    optimizer_steps: i64,
    history: Vec<EpochStats>,
}

impl Checkpoint {
    /// The checkpoint as one safetensors buffer: `model.*`, `optimizer.*` and `best.*` tensors, the rest in
    /// metadata.
    pub fn to_bytes(&self) -> Result<Vec<u8>, CheckpointError> {
        let header = CheckpointHeader {
            epoch: self.epoch,
            optimizer_steps: self.optimizer_steps,
            history: self.history.clone(),
        };
        let metadata = std::collections::HashMap::from([(
            CHECKPOINT_KEY.to_string(),
            serde_json::to_string(&header).map_err(CheckpointError::Header)?,
        )]);
        let parts = [
            ("model.", &self.tensors),
            ("optimizer.", &self.optimizer_state),
            ("best.", &self.best_tensors),
        ];
        let tensors: Vec<NamedTensor> = parts
            .into_iter()
            .flat_map(|(prefix, tensors)| {
                tensors.iter().map(move |t| NamedTensor {
                    name: format!("{prefix}{}", t.name),
                    ..t.clone()
                })
            })
            .collect();
        Ok(crate::model::to_safetensors(&tensors, metadata)?)
    }

    /// Reads a checkpoint written by [`Checkpoint::to_bytes`].
    ///
    /// ```
    /// use hearth_torch::model::NamedTensor;
    /// use hearth_torch::train::Checkpoint;
    /// let tensor = |name: &str| NamedTensor { name: name.into(), shape: vec![1], values: vec![0.5] };
    /// let checkpoint = Checkpoint {
    ///     epoch: 2,
    ///     tensors: vec![tensor("0.weight")],
    ///     optimizer_steps: 8,
    ///     optimizer_state: vec![tensor("state.0"), tensor("state.1")],
    ///     history: vec![],
    ///     best_tensors: vec![tensor("0.weight")],
    /// };
    /// assert_eq!(Checkpoint::from_bytes(&checkpoint.to_bytes().unwrap()).unwrap(), checkpoint);
    /// ```
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, CheckpointError> {
        let (tensors, metadata) = crate::model::from_safetensors(bytes)?;
        let header: CheckpointHeader =
            serde_json::from_str(metadata.get(CHECKPOINT_KEY).ok_or(CheckpointError::NotACheckpoint)?)
                .map_err(CheckpointError::Header)?;
        let (mut model, mut optimizer, mut best) = (Vec::new(), Vec::new(), Vec::new());
        for t in tensors {
            let (part, name) = match t.name.split_once('.') {
                Some(("model", name)) => (&mut model, name.to_string()),
                Some(("optimizer", name)) => (&mut optimizer, name.to_string()),
                Some(("best", name)) => (&mut best, name.to_string()),
                _ => continue,
            };
            part.push(NamedTensor { name, ..t });
        }
        // The optimizer's state is positional: state.0, state.1, … state.10 in numeric order.
        optimizer.sort_by_key(|t| t.name.rsplit('.').next().and_then(|i| i.parse::<usize>().ok()));
        Ok(Self {
            epoch: header.epoch,
            tensors: model,
            optimizer_steps: header.optimizer_steps,
            optimizer_state: optimizer,
            history: header.history,
            best_tensors: best,
        })
    }
}
