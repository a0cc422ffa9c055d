//! Training progress as it happens, from the per-epoch checkpoints rank 0 sends the driver (which passes on
//! the latest every 200 ms, so a fast model skips epochs): a bar that redraws in place on a terminal
//! (indicatif), and lines in a notebook cell, streamed while the cell runs. (evcxr's kernel passes a cell's
//! output on line by line and cannot replace what a cell showed, so a notebook gets a line a second rather
//! than a bar redrawn.)
//!
//! Every session has one without being asked when the program runs in a notebook (evcxr's kernel) or with
//! standard error on a terminal; [`Session::with_progress`](hearth_exec::session::Session::with_progress) replaces
//! it, e.g. with `Arc::new(TrainingBar::lines())` to log epochs from a batch job.
//!
//! ```
//! use hearth_training::train::{EpochStats, epoch_line};
//!
//! let stats = EpochStats {
//!     epoch: 3,
//!     loss: 0.4123,
//!     accuracy: Some(0.81),
//!     validation_loss: None,
//!     validation_accuracy: None,
//!     learning_rate: 1e-3,
//!     seconds: 0.5,
//!     rows: 800,
//! };
//! assert_eq!(epoch_line(&stats, 10), "epoch 3 of 10, loss 0.4123, accuracy 0.8100, 800 rows, 1600 rows/s");
//! ```

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::IsTerminal;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

use hearth_torch::train::EpochStats;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::progress::TrainingProgress;

/// What evcxr sets in the process that runs a notebook's cells.
const EVCXR_RUNTIME: &str = "EVCXR_IS_RUNTIME";

/// Epoch `stats.epoch` of `epochs` in words: loss, accuracies when known, rows and rows per second.
pub fn epoch_line(stats: &EpochStats, epochs: usize) -> String {
    let mut line = format!("epoch {} of {epochs}, loss {:.4}", stats.epoch, stats.loss);
    if let Some(accuracy) = stats.accuracy {
        let _ = write!(line, ", accuracy {accuracy:.4}");
    }
    if let Some(loss) = stats.validation_loss {
        let _ = write!(line, ", validation loss {loss:.4}");
    }
    if let Some(accuracy) = stats.validation_accuracy {
        let _ = write!(line, ", validation accuracy {accuracy:.4}");
    }
    let rate = stats.rows as f64 / stats.seconds.max(1e-9);
    let _ = write!(line, ", {} rows, {rate:.0} rows/s", stats.rows);
    line
}

/// Where a [`TrainingBar`] shows the epochs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    /// A bar per model on standard error, redrawn in place.
    Terminal,
    /// A line per epoch on standard output (at most one a second, and the last): a notebook cell shows each
    /// as it comes.
    Lines,
    /// A `log` record at info level per epoch the driver hears of (target `hearth::training`).
    Log,
}

/// The target of the log records [`TrainingBar::logged`] writes.
const LOG_TARGET: &str = "hearth::training";

/// The least time between two lines of one model, as tqdm's `mininterval`: a fast model's thousand epochs
/// do not flood a notebook.
const LINE_INTERVAL: Duration = Duration::from_secs(1);

/// What is shown of one model being trained.
#[derive(Debug)]
enum Shown {
    Bar(ProgressBar),
    LineAt(Instant),
}

/// Shows each model's epochs as training runs: a bar per model on a terminal, or lines.
///
/// ```
/// use std::sync::Arc;
/// use hearth_training::train::{ProgressSessionExt, TrainingBar};
/// use hearth_exec::session::Session;
/// use hearth_training::functions::DefaultFeatures;
///
/// let session = Session::builder().with_default_features().local(2).with_progress(Arc::new(TrainingBar::lines()));
/// ```
#[derive(Debug)]
pub struct TrainingBar {
    target: Target,
    /// The terminal's bars, one per model, drawn together (models may train at once).
    bars: MultiProgress,
    /// What is shown of each model being trained, by the model's uid.
    shown: Mutex<HashMap<String, Shown>>,
}

impl TrainingBar {
    /// A bar per model on standard error, redrawn in place (hidden when standard error is not a terminal).
    pub fn terminal() -> Self {
        Self::new(Target::Terminal)
    }

    /// Lines on standard output, as a notebook or a log wants them: an epoch's line when a second has passed
    /// since the model's last one, and the last epoch's.
    pub fn lines() -> Self {
        Self::new(Target::Lines)
    }

    /// A `log` record at info level (target `hearth::training`) for each epoch the driver hears of, as a
    /// batch job's log wants it: what a driver shows with `RUST_LOG=info` and no terminal.
    pub fn logged() -> Self {
        Self::new(Target::Log)
    }

    fn new(target: Target) -> Self {
        Self {
            target,
            bars: MultiProgress::with_draw_target(ProgressDrawTarget::stderr()),
            shown: Mutex::new(HashMap::new()),
        }
    }

    /// What this process shows without being asked: lines in a notebook, a bar on a terminal, log records
    /// when the log takes info records, else nothing.
    pub fn for_this_process() -> Option<Self> {
        if std::env::var_os(EVCXR_RUNTIME).is_some() {
            Some(Self::lines())
        } else if std::io::stderr().is_terminal() {
            Some(Self::terminal())
        } else if log::log_enabled!(target: LOG_TARGET, log::Level::Info) {
            Some(Self::logged())
        } else {
            None
        }
    }
}

fn new_bar(model: &str, epochs: usize) -> ProgressBar {
    let bar = ProgressBar::new(epochs as u64);
    bar.set_style(
        ProgressStyle::with_template("{prefix} [{bar:30}] {msg} ({elapsed})")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar.set_prefix(model.to_string());
    bar
}

impl TrainingProgress for TrainingBar {
    fn epoch(&self, model: &str, stats: &EpochStats, epochs: usize) {
        let last = stats.epoch >= epochs;
        let mut shown = self.shown.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match (self.target, shown.get(model)) {
            (Target::Terminal, current) => {
                let bar = match current {
                    Some(Shown::Bar(bar)) => bar.clone(),
                    _ => {
                        let bar = self.bars.add(new_bar(model, epochs));
                        shown.insert(model.to_string(), Shown::Bar(bar.clone()));
                        bar
                    }
                };
                bar.set_message(epoch_line(stats, epochs));
                bar.set_position(stats.epoch as u64);
            }
            (Target::Log, _) => log::info!(target: LOG_TARGET, "{model}: {}", epoch_line(stats, epochs)),
            (Target::Lines, Some(Shown::LineAt(at))) if !last && at.elapsed() < LINE_INTERVAL => {}
            (Target::Lines, _) => {
                println!("{model}: {}", epoch_line(stats, epochs));
                shown.insert(model.to_string(), Shown::LineAt(Instant::now()));
            }
        }
        if last && let Some(Shown::Bar(bar)) = shown.remove(model) {
            bar.finish();
        }
    }
}

/// The progress every session shows unless given another: [`TrainingBar::for_this_process`], chosen once.
pub(crate) fn default_progress() -> Option<Arc<dyn TrainingProgress>> {
    static DEFAULT: LazyLock<Option<Arc<dyn TrainingProgress>>> =
        LazyLock::new(|| TrainingBar::for_this_process().map(|bar| Arc::new(bar) as Arc<dyn TrainingProgress>));
    DEFAULT.clone()
}
