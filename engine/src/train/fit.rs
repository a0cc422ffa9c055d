//! The driver's training loop around the barrier stage: attempts, checkpoints, the outcome.

use std::time::{Duration, Instant};

use datafusion::prelude::DataFrame;
use hearth_ml::artifact::ModelArtifact;
use hearth_ml::train::{Checkpoint, RankReport};
use serde::{Deserialize, Serialize};

use super::function::{TrainArgs, read_outcome};
use crate::barrier::{BarrierStage, TRAIN_FUNCTION};
use crate::error::{HearthError, Result};

/// How the training stage runs: its workers (one partition and one trainer each), attempts and timeouts.
#[derive(Clone, Debug, PartialEq)]
pub struct StageParams {
    /// Trainers running at once; the rows are repartitioned into this many partitions.
    pub workers: usize,
    /// Runs of the whole stage before giving up; each retry resumes from rank 0's last checkpoint.
    pub max_attempts: usize,
    /// The longest any one collective may take.
    pub timeout: Duration,
    /// How long the driver waits for every trainer to register.
    pub rendezvous_timeout: Duration,
}

impl Default for StageParams {
    fn default() -> Self {
        Self {
            workers: 1,
            max_attempts: 3,
            timeout: Duration::from_secs(120),
            rendezvous_timeout: Duration::from_secs(300),
        }
    }
}

/// One run of the training stage, as the driver saw it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AttemptReport {
    /// 1 for the first run.
    pub attempt: usize,
    /// The epochs already done when it started (from a checkpoint).
    pub resumed_from_epoch: usize,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// Why it failed; none when it succeeded.
    pub error: Option<String>,
}

/// How a model was trained: every rank's report and every attempt.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TrainingSummary {
    /// Each rank's host, device, rows, steps, per-epoch history and time, in rank order.
    pub ranks: Vec<RankReport>,
    /// Each run of the stage; the last one succeeded.
    pub attempts: Vec<AttemptReport>,
}

/// Trains on `df` (already narrowed to the feature and label columns) and returns the model and summary.
pub(crate) async fn train(
    df: &DataFrame,
    mut args: TrainArgs,
    params: &StageParams,
) -> Result<(ModelArtifact, TrainingSummary)> {
    let mut summary = TrainingSummary::default();
    let attempts = params.max_attempts.max(1);
    for attempt in 1..=attempts {
        let started = Instant::now();
        let resumed_from_epoch = args.resume.as_ref().map_or(0, |c| c.epoch);
        let json = serde_json::to_string(&args).map_err(|e| HearthError::Barrier {
            job: TRAIN_FUNCTION.to_string(),
            message: format!("cannot write the training arguments: {e}"),
        })?;
        let stage = BarrierStage::new(TRAIN_FUNCTION, json)
            .workers(params.workers)
            .timeout(params.timeout)
            .rendezvous_timeout(params.rendezvous_timeout);
        let run = stage.attempt(df).await;
        let outcome = run
            .result
            .and_then(|batches| read_outcome(&batches).map_err(HearthError::from));
        let seconds = started.elapsed().as_secs_f64();
        match outcome {
            Ok((ranks, artifact)) => {
                summary.attempts.push(AttemptReport {
                    attempt,
                    resumed_from_epoch,
                    seconds,
                    error: None,
                });
                summary.ranks = ranks;
                return Ok((artifact, summary));
            }
            // Nothing a retry could change: the stage never started.
            Err(e @ (HearthError::Gang { .. } | HearthError::InvalidParam { .. })) => return Err(e),
            Err(e) => {
                log::warn!("training attempt {attempt} of {attempts} failed: {e}");
                summary.attempts.push(AttemptReport {
                    attempt,
                    resumed_from_epoch,
                    seconds,
                    error: Some(e.to_string()),
                });
                if let Some(upload) = run.latest_upload {
                    match Checkpoint::from_bytes(&upload.bytes) {
                        Ok(checkpoint) => args.resume = Some(checkpoint),
                        Err(e) => log::warn!("rank {}'s checkpoint is unreadable: {e}", upload.rank),
                    }
                }
            }
        }
    }
    let report: Vec<String> = summary
        .attempts
        .iter()
        .map(|a| {
            format!(
                "attempt {} (from epoch {}): {}",
                a.attempt,
                a.resumed_from_epoch,
                a.error.as_deref().unwrap_or("ok")
            )
        })
        .collect();
    Err(HearthError::Barrier {
        job: TRAIN_FUNCTION.to_string(),
        message: format!("training failed {attempts} times:\n  {}", report.join("\n  ")),
    })
}
