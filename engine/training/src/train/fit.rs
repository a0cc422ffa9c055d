//! The driver's side of training: one barrier stage of [`TRAIN_FUNCTION`](super::TRAIN_FUNCTION) (retried
//! as a whole from rank 0's last checkpoint), its progress, and what it reports.

use datafusion::prelude::DataFrame;
use hearth_collective::UploadRule;
use hearth_exec::barrier::{AttemptReport, BarrierOptions, BarrierStage};
use hearth_exec::error::{HearthError, Result};
use hearth_torch::artifact::ModelArtifact;
use hearth_torch::train::RankReport;
use serde::{Deserialize, Serialize};

use super::function::{TRAIN_FUNCTION, TrainArgs, read_outcome};
use super::label_scale::LabelScale;
use super::progress::{on_checkpoint, progress_of};

/// How a model was trained: every rank's report and every attempt.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TrainingSummary {
    /// Each rank's host, device, rows, steps, per-epoch history and time, in rank order.
    pub ranks: Vec<RankReport>,
    /// Each run of the stage; the last one succeeded.
    pub attempts: Vec<AttemptReport>,
}

/// Trains on `df` (already narrowed to the training columns) and returns the model and summary; the
/// session's [`TrainingProgress`] hears of every epoch of the model `uid`, its losses in the label's units
/// (`scale`, when the label was standardized).
pub(crate) async fn train(
    df: &DataFrame,
    uid: &str,
    args: &TrainArgs,
    options: &BarrierOptions,
    scale: Option<LabelScale>,
) -> Result<(ModelArtifact, TrainingSummary)> {
    let json = serde_json::to_string(args)
        .map_err(|e| HearthError::barrier(TRAIN_FUNCTION, "cannot write the training arguments").caused_by(e))?;
    // Rank 0 sends a checkpoint after each epoch; nothing else is one.
    let rule = UploadRule {
        rank: 0,
        last_epoch: args.options.settings.epochs,
    };
    let mut stage = BarrierStage::new(TRAIN_FUNCTION, json)
        .options(options.clone())
        .keep_uploads(rule);
    if let Some(progress) = progress_of(df) {
        stage = stage.on_upload(on_checkpoint(
            progress,
            uid.to_string(),
            args.options.settings.epochs,
            scale,
        ));
    }
    let run = stage.run_reporting(df).await?;
    let (ranks, artifact) = read_outcome(&run.batches)?;
    Ok((
        artifact,
        TrainingSummary {
            ranks,
            attempts: run.attempts,
        },
    ))
}
