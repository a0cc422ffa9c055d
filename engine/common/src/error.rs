//! hearth's error type, and the failed REST request to a fleet's scheduler that it can hold.

use std::path::PathBuf;

use datafusion_common::DataFusionError;
use datafusion_common::arrow::error::ArrowError;

/// Everything that can go wrong in hearth's engine. Each message names what was wrong and where.
#[derive(Debug, thiserror::Error)]
pub enum HearthError {
    /// A query failed: reading a file, or a value a stage refuses (its message names the column and value).
    #[error(transparent)]
    DataFusion(#[from] DataFusionError),
    /// An Arrow kernel failed.
    #[error(transparent)]
    Arrow(#[from] ArrowError),
    /// A stage was configured with a parameter it cannot use.
    #[error("{stage}: parameter {param}: {message}")]
    InvalidParam {
        /// The stage's uid, or the name of what failed when it is not a stage (an evaluator, `random_split`).
        stage: String,
        /// The parameter's name, as Spark spells it.
        param: &'static str,
        /// What is wrong with it.
        message: String,
    },
    /// An input column is missing or has a type the stage cannot take.
    #[error("{stage}: column {column:?}: {message}")]
    Schema {
        /// The stage's uid, or the name of what failed when it is not a stage (an evaluator, `random_split`).
        stage: String,
        /// The column in question.
        column: String,
        /// What is wrong with it.
        message: String,
    },
    /// The data a stage was fitted on cannot be fitted (empty, negative indices, …).
    #[error("{stage}: column {column:?}: {message}")]
    InvalidData {
        /// The stage's uid, or the name of what failed when it is not a stage (an evaluator, `random_split`).
        stage: String,
        /// The column in question.
        column: String,
        /// What was found, and where.
        message: String,
    },
    /// A saved pipeline could not be written or read.
    #[error("{}: {message}", path.display())]
    Persistence {
        /// The file or directory.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// A master URL hearth cannot run.
    #[error("master {master:?}: {message}")]
    Master {
        /// The master as given.
        master: String,
        /// Why it cannot be used.
        message: String,
    },
    /// A barrier stage needs more task slots at once than the session has.
    #[error(
        "a barrier stage needs {workers} task slots at once, but {master} has {slots}; use fewer workers or more slots"
    )]
    Gang {
        /// Tasks the stage needs.
        workers: usize,
        /// Slots found.
        slots: usize,
        /// The session's master.
        master: String,
    },
    /// A barrier stage needs more GPUs at once than the session has where its tasks can run.
    #[error(
        "a barrier stage of {workers} tasks needs {gpus} GPUs at once (one per task), but {master} can give {found} tasks a GPU at once{why}; use device cpu, fewer workers or more GPUs"
    )]
    GangGpus {
        /// GPUs the stage needs.
        gpus: usize,
        /// Its tasks.
        workers: usize,
        /// GPUs found where a task slot goes with each.
        found: usize,
        /// Why there are none in this process, when there are none (` (libtorch: …)`), else empty.
        why: String,
        /// The session's master.
        master: String,
    },
    /// A fleet's scheduler did not answer a REST request as expected.
    #[error(transparent)]
    Fleet(#[from] RestError),

    /// A plot that cannot be drawn (nothing to draw, or the drawing failed).
    #[error("plot {plot}: {message}")]
    Plot {
        /// Which plot.
        plot: &'static str,
        /// Why.
        message: String,
    },
    /// A barrier stage could not run: its rendezvous, or every attempt failed.
    #[error("barrier stage {job}: {message}")]
    Barrier {
        /// The job.
        job: String,
        /// What went wrong.
        message: String,
    },
}

/// Result type of the engine.
pub type Result<T, E = HearthError> = std::result::Result<T, E>;

/// A REST request to a scheduler that failed: which scheduler, which request, and why.
#[derive(Debug, thiserror::Error)]
#[error("scheduler {url}: {request}: {message}")]
pub struct RestError {
    /// The scheduler's base URL.
    pub url: String,
    /// The request, as `GET /path`.
    pub request: String,
    /// The HTTP status it answered, when it answered.
    pub status: Option<u16>,
    /// What went wrong.
    pub message: String,
}

impl RestError {
    /// Whether the scheduler answered 404: it has no such route (a plain Ballista scheduler) or no such item.
    pub fn is_not_found(&self) -> bool {
        self.status == Some(404)
    }
}

impl From<crate::files::WholeDirError> for HearthError {
    fn from(error: crate::files::WholeDirError) -> Self {
        Self::Persistence {
            path: error.path,
            message: error.message,
        }
    }
}
