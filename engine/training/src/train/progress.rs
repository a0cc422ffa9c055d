//! Training progress on the driver: every epoch's figures as rank 0's checkpoint reaches the driver, for a
//! progress bar or a notebook — set on the session, read by every estimator that trains through it.

use std::fmt;
use std::sync::Arc;

use datafusion::prelude::DataFrame;
use hearth_collective::Upload;
use hearth_exec::session::Session;
use hearth_torch::train::{Checkpoint, EpochStats};

use super::label_scale::LabelScale;

/// Receives the progress of training stages, on the driver, as each epoch ends.
///
/// ```
/// use std::sync::Arc;
/// use hearth_training::functions::DefaultFeatures;
/// use hearth_training::train::{ProgressSessionExt, TrainingProgress};
/// use hearth_torch::train::EpochStats;
///
/// #[derive(Debug)]
/// struct Print;
/// impl TrainingProgress for Print {
///     fn epoch(&self, model: &str, stats: &EpochStats, epochs: usize) {
///         eprintln!("{model}: epoch {} of {epochs}, loss {:.4}", stats.epoch, stats.loss);
///     }
/// }
/// let session = hearth_exec::session::Session::builder().with_default_features().local(2).with_progress(Arc::new(Print));
/// ```
pub trait TrainingProgress: fmt::Debug + Send + Sync {
    /// Epoch `stats.epoch` of `epochs` of the model `model` (its estimator's uid) has ended.
    fn epoch(&self, model: &str, stats: &EpochStats, epochs: usize);
}

/// The progress receiver a session carries in its configuration.
#[derive(Clone, Debug)]
pub(crate) struct ProgressReceiver(pub Arc<dyn TrainingProgress>);

/// The progress receiver of `df`'s session, else what this process shows by default (a bar on a terminal,
/// lines in a notebook: [`TrainingBar::for_this_process`](super::TrainingBar::for_this_process)).
pub(crate) fn progress_of(df: &DataFrame) -> Option<Arc<dyn TrainingProgress>> {
    df.task_ctx()
        .session_config()
        .get_extension::<ProgressReceiver>()
        .map(|receiver| Arc::clone(&receiver.0))
        .or_else(super::progress_bar::default_progress)
}

/// What a barrier stage calls with each new upload: the epoch's figures from rank 0's checkpoint, passed on.
pub(crate) fn on_checkpoint(
    progress: Arc<dyn TrainingProgress>,
    model: String,
    epochs: usize,
    scale: Option<LabelScale>,
) -> Arc<dyn Fn(&Upload) + Send + Sync> {
    Arc::new(move |upload: &Upload| {
        if let Some(mut stats) = Checkpoint::from_bytes(&upload.bytes)
            .ok()
            .and_then(|checkpoint| checkpoint.history.last().cloned())
        {
            if let Some(scale) = &scale {
                scale.unscale_stats(&mut stats);
            }
            progress.epoch(&model, &stats, epochs);
        }
    })
}

/// Where a [`Session`] sends the epochs of the models trained through it. In `hearth_training::prelude`.
pub trait ProgressSessionExt {
    /// The session with `progress` receiving the epochs of every model trained through it.
    fn with_progress(self, progress: Arc<dyn TrainingProgress>) -> Self;
}

impl ProgressSessionExt for Session {
    fn with_progress(self, progress: Arc<dyn TrainingProgress>) -> Self {
        self.with_config_extension(Arc::new(ProgressReceiver(progress)))
    }
}
