//! What training reports: each epoch's metrics and each rank's outcome.

use hearth_collective::Staleness;
use serde::{Deserialize, Serialize};

use crate::model::NamedTensor;

/// Metrics of one epoch, averaged over all ranks' rows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EpochStats {
    /// Epoch number, from 1.
    pub epoch: usize,
    /// Mean training loss.
    pub loss: f64,
    /// Training accuracy (classification).
    pub accuracy: Option<f64>,
    /// Mean loss on the validation shards, when given.
    pub validation_loss: Option<f64>,
    /// Accuracy on the validation shards (classification).
    pub validation_accuracy: Option<f64>,
    /// The learning rate at the end of the epoch.
    pub learning_rate: f64,
    /// Wall-clock seconds of the epoch on this rank.
    pub seconds: f64,
    /// Rows trained on in the epoch, over all ranks.
    #[serde(default)]
    pub rows: u64,
}

/// What a rank reports when training ends.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankReport {
    /// The rank.
    pub rank: usize,
    /// Its host.
    pub host: String,
    /// The device it trained on.
    pub device: String,
    /// Rows in its shard.
    pub rows: usize,
    /// Steps it took part in.
    pub steps: usize,
    /// Per-epoch metrics (the same on every rank).
    pub history: Vec<EpochStats>,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// Whether its rows were streamed from disk every epoch (beyond its memory budget) instead of held.
    #[serde(default)]
    pub streamed: bool,
    /// The most bytes its rows took in memory at once (their Arrow input, the dense copy and tensors, or the
    /// shuffle buffer and the batches read ahead).
    #[serde(default)]
    pub peak_bytes: u64,
    /// How stale its updates to the parameter server were (the asynchronous strategies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub staleness: Option<Staleness>,
}

/// The outcome on a rank: its report, and on rank 0 the trained tensors.
#[derive(Debug)]
pub struct RankOutcome {
    /// The report.
    pub report: RankReport,
    /// The final network tensors (rank 0 only).
    pub tensors: Option<Vec<NamedTensor>>,
}
