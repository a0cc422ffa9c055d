//! hearth's error type, and the failed REST request to a fleet's scheduler that it can hold.
//!
//! Every error is made by a one-line constructor that names what was wrong and where, and keeps the
//! lower-level error it came from as its [`source`](std::error::Error::source) (its text follows the message,
//! as DataFusion's errors print theirs):
//!
//! ```
//! use std::error::Error;
//! use hearth_exec::error::HearthError;
//!
//! let missing = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
//! let error = HearthError::persistence("model/stages", "cannot read the stages").caused_by(missing);
//! assert_eq!(error.to_string(), "model/stages: cannot read the stages: no such file");
//! assert_eq!(error.source().unwrap().to_string(), "no such file");
//!
//! let refused = HearthError::invalid_param("scaler_1", "withMean", "is not a boolean");
//! assert_eq!(refused.to_string(), "scaler_1: parameter withMean: is not a boolean");
//! assert!(refused.source().is_none());
//! ```
//!
//! Each error says who is to blame, as DataFusion groups its errors ([`Blame`]: the user's plan, the data at run
//! time, a peer, I/O, hearth itself, or what hearth does not do), and takes context on its way up
//! ([`HearthError::context`], or [`ResultExt::context`] on a result), printed before it:
//!
//! ```
//! use hearth_exec::error::{Blame, HearthError, ResultExt};
//!
//! let failed: Result<(), HearthError> = Err(HearthError::schema("scaler_1", "age", "is not a vector"));
//! let error = failed.context("stage 2 of 3 (StandardScaler)").unwrap_err();
//! assert_eq!(error.to_string(), "stage 2 of 3 (StandardScaler): scaler_1: column \"age\": is not a vector");
//! assert_eq!(error.blame(), Blame::Plan);
//! assert!(matches!(error.root(), HearthError::Schema { .. }));
//! ```

use std::fmt;
use std::path::PathBuf;

use datafusion::arrow::error::ArrowError;
use datafusion::common::DataFusionError;

/// The lower-level error a [`HearthError`] was caused by, kept as its source.
pub type Cause = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Who is to blame for an error, as DataFusion groups its own: what the user asked for, the data met at run
/// time, a peer (a rank, an executor, a scheduler), I/O (files, stores, the network), hearth itself, or what
/// hearth does not do.
///
/// ```
/// use hearth_exec::error::{Blame, HearthError};
///
/// assert_eq!(HearthError::invalid_param("lr_1", "maxIter", "is negative").blame(), Blame::Plan);
/// assert_eq!(HearthError::invalid_data("lr_1", "label", "holds 1.5").blame(), Blame::Data);
/// assert_eq!(HearthError::persistence("model", "cannot write").blame(), Blame::Io);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Blame {
    /// The user's plan: a parameter, an option, a column or a model that is not there, more than a session has.
    Plan,
    /// The data met at run time: values a stage cannot fit or transform.
    Data,
    /// A peer: a rank, an executor or a scheduler failed or did not answer.
    Peer,
    /// Reading or writing files, stores or the network, or running out of memory or disk.
    Io,
    /// hearth itself: a state it should never reach.
    Internal,
    /// Something hearth does not do (yet).
    NotImplemented,
}

/// Everything that can go wrong in hearth's engine. Each message names what was wrong and where; made by the
/// constructors below ([`HearthError::invalid_param`], [`HearthError::persistence`], …), with
/// [`HearthError::caused_by`] to keep what caused it.
#[derive(Debug, thiserror::Error)]
pub enum HearthError {
    /// A query failed: reading a file, or a value a stage refuses (its message names the column and value).
    #[error(transparent)]
    DataFusion(DataFusionError),
    /// An Arrow kernel failed.
    #[error(transparent)]
    Arrow(#[from] ArrowError),
    /// A stage was configured with a parameter it cannot use.
    #[error("{stage}: parameter {param}: {message}{}", Caused(cause))]
    InvalidParam {
        /// The stage's uid, or the name of what failed when it is not a stage (an evaluator, `random_split`).
        stage: String,
        /// The parameter's name, as Spark spells it.
        param: &'static str,
        /// What is wrong with it.
        message: String,
        /// What it came from, when a lower-level error refused it.
        #[source]
        cause: Option<Cause>,
    },
    /// An input column is missing or has a type the stage cannot take.
    #[error("{stage}: column {column:?}: {message}{}", Caused(cause))]
    Schema {
        /// The stage's uid, or the name of what failed when it is not a stage (an evaluator, `random_split`).
        stage: String,
        /// The column in question.
        column: String,
        /// What is wrong with it.
        message: String,
        /// What it came from, when a lower-level error refused it.
        #[source]
        cause: Option<Cause>,
    },
    /// The data a stage was fitted on cannot be fitted (empty, negative indices, …).
    #[error("{stage}: column {column:?}: {message}{}", Caused(cause))]
    InvalidData {
        /// The stage's uid, or the name of what failed when it is not a stage (an evaluator, `random_split`).
        stage: String,
        /// The column in question.
        column: String,
        /// What was found, and where.
        message: String,
        /// What it came from, when a lower-level error refused it.
        #[source]
        cause: Option<Cause>,
    },
    /// A saved pipeline could not be written or read.
    #[error("{}: {message}{}", path.display(), Caused(cause))]
    Persistence {
        /// The file or directory.
        path: PathBuf,
        /// What went wrong.
        message: String,
        /// The file system's (or the decoder's) error, when there is one.
        #[source]
        cause: Option<Cause>,
    },
    /// A master URL hearth cannot run.
    #[error("master {master:?}: {message}{}", Caused(cause))]
    Master {
        /// The master as given.
        master: String,
        /// Why it cannot be used.
        message: String,
        /// The connection's (or the parser's) error, when there is one.
        #[source]
        cause: Option<Cause>,
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
    #[error("plot {plot}: {message}{}", Caused(cause))]
    Plot {
        /// Which plot.
        plot: &'static str,
        /// Why.
        message: String,
        /// The drawing library's error, when there is one.
        #[source]
        cause: Option<Cause>,
    },
    /// A barrier stage could not run: its rendezvous, or every attempt failed.
    #[error("barrier stage {job}: {message}{}", Caused(cause))]
    Barrier {
        /// The job.
        job: String,
        /// What went wrong.
        message: String,
        /// The collective's (or the task's) error, when there is one.
        #[source]
        cause: Option<Cause>,
    },
    /// An error with where it happened, printed before it (`stage 2 of 3 (StandardScaler): …`).
    #[error("{context}: {source}")]
    Context {
        /// Where, or doing what.
        context: String,
        /// The error.
        #[source]
        source: Box<HearthError>,
    },
}

impl HearthError {
    /// A stage (or evaluator, or function) cannot use the value of its parameter `param`.
    pub fn invalid_param(stage: impl Into<String>, param: &'static str, message: impl Into<String>) -> Self {
        Self::InvalidParam {
            stage: stage.into(),
            param,
            message: message.into(),
            cause: None,
        }
    }

    /// An input column of `stage` is missing or has a type it cannot take.
    pub fn schema(stage: impl Into<String>, column: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Schema {
            stage: stage.into(),
            column: column.into(),
            message: message.into(),
            cause: None,
        }
    }

    /// The data in `column` cannot be fitted or transformed by `stage`; `message` says what was found where.
    pub fn invalid_data(stage: impl Into<String>, column: impl Into<String>, message: impl Into<String>) -> Self {
        Self::InvalidData {
            stage: stage.into(),
            column: column.into(),
            message: message.into(),
            cause: None,
        }
    }

    /// The file or directory at `path` cannot be written or read.
    pub fn persistence(path: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        Self::Persistence {
            path: path.into(),
            message: message.into(),
            cause: None,
        }
    }

    /// The master URL `master` cannot be run.
    pub fn master(master: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Master {
            master: master.into(),
            message: message.into(),
            cause: None,
        }
    }

    /// The barrier stage of `job` could not run.
    pub fn barrier(job: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Barrier {
            job: job.into(),
            message: message.into(),
            cause: None,
        }
    }

    /// The plot `plot` cannot be drawn.
    pub fn plot(plot: &'static str, message: impl Into<String>) -> Self {
        Self::Plot {
            plot,
            message: message.into(),
            cause: None,
        }
    }

    /// This error, with `context` (where it happened, or doing what) printed before it.
    #[must_use]
    pub fn context(self, context: impl Into<String>) -> Self {
        Self::Context {
            context: context.into(),
            source: Box::new(self),
        }
    }

    /// The error under any context, and under DataFusion's own layers when one carries a hearth error (a
    /// repartition shares its input's error, a task's error comes back as an `External`): the one to match on.
    pub fn root(&self) -> &HearthError {
        match self {
            Self::Context { source, .. } => source.root(),
            Self::DataFusion(error) => carried(error).map_or(self, HearthError::root),
            other => other,
        }
    }

    /// Who is to blame: see [`Blame`].
    pub fn blame(&self) -> Blame {
        match self {
            Self::DataFusion(error) => datafusion_blame(error),
            Self::Arrow(error) => arrow_blame(error),
            Self::InvalidParam { .. } | Self::Schema { .. } | Self::Gang { .. } | Self::GangGpus { .. } => Blame::Plan,
            Self::InvalidData { .. } => Blame::Data,
            Self::Persistence { .. } => Blame::Io,
            Self::Master { cause, .. } => cause.as_ref().map_or(Blame::Plan, |_| Blame::Peer),
            Self::Fleet(_) => Blame::Peer,
            Self::Plot { cause, .. } => cause.as_ref().map_or(Blame::Data, |_| Blame::Internal),
            Self::Barrier { cause, .. } => cause_blame(cause.as_ref()).unwrap_or(Blame::Peer),
            Self::Context { source, .. } => source.blame(),
        }
    }

    /// This error, keeping `cause` as its source (its text printed after the message). Errors that are
    /// themselves a lower-level error (DataFusion's, Arrow's, a REST request's), a count of slots or GPUs, or
    /// what hearth does not do have no message to explain a cause and are returned as they are; an error with
    /// context keeps the cause in the error under it.
    #[must_use]
    pub fn caused_by(self, cause: impl Into<Cause>) -> Self {
        match self {
            Self::Context { context, source } => Self::Context {
                context,
                source: Box::new(source.caused_by(cause)),
            },
            mut error => {
                if let Some(kept) = error.cause_mut() {
                    *kept = Some(cause.into());
                }
                error
            }
        }
    }

    /// Where this error keeps its cause, when it has a message to explain one.
    fn cause_mut(&mut self) -> Option<&mut Option<Cause>> {
        match self {
            Self::InvalidParam { cause, .. }
            | Self::Schema { cause, .. }
            | Self::InvalidData { cause, .. }
            | Self::Persistence { cause, .. }
            | Self::Master { cause, .. }
            | Self::Plot { cause, .. }
            | Self::Barrier { cause, .. } => Some(cause),
            Self::DataFusion(_)
            | Self::Arrow(_)
            | Self::Gang { .. }
            | Self::GangGpus { .. }
            | Self::Fleet(_)
            | Self::Context { .. } => None,
        }
    }
}

/// Context on a fallible result's error, as [`HearthError::context`] gives it.
///
/// ```
/// use hearth_exec::error::{HearthError, ResultExt};
///
/// let read: Result<u32, HearthError> = Err(HearthError::persistence("model/metadata", "is empty"));
/// let error = read.with_context(|| format!("loading model {}", "credit")).unwrap_err();
/// assert_eq!(error.to_string(), "loading model credit: model/metadata: is empty");
/// ```
pub trait ResultExt<T> {
    /// The error, if any, with `context` printed before it.
    fn context(self, context: impl Into<String>) -> Result<T>;

    /// The error, if any, with the context `context()` makes (only when there is an error) printed before it.
    fn with_context<C: Into<String>>(self, context: impl FnOnce() -> C) -> Result<T>;
}

impl<T, E: Into<HearthError>> ResultExt<T> for std::result::Result<T, E> {
    fn context(self, context: impl Into<String>) -> Result<T> {
        self.map_err(|error| error.into().context(context))
    }

    fn with_context<C: Into<String>>(self, context: impl FnOnce() -> C) -> Result<T> {
        self.map_err(|error| error.into().context(context()))
    }
}

/// The hearth error a DataFusion error carries, under its contexts and shared copies.
fn carried(error: &DataFusionError) -> Option<&HearthError> {
    match error {
        DataFusionError::External(cause) => cause.downcast_ref::<HearthError>(),
        DataFusionError::Context(_, inner) | DataFusionError::Diagnostic(_, inner) => carried(inner),
        DataFusionError::Shared(inner) => carried(inner),
        _ => None,
    }
}

/// Who is to blame for a DataFusion error, by its own grouping.
fn datafusion_blame(error: &DataFusionError) -> Blame {
    match error {
        DataFusionError::Plan(_)
        | DataFusionError::SchemaError(..)
        | DataFusionError::SQL(..)
        | DataFusionError::Configuration(_) => Blame::Plan,
        DataFusionError::Execution(_) | DataFusionError::ParquetError(_) => Blame::Data,
        DataFusionError::ArrowError(error, _) => arrow_blame(error),
        DataFusionError::IoError(_) | DataFusionError::ObjectStore(_) | DataFusionError::ResourcesExhausted(_) => {
            Blame::Io
        }
        DataFusionError::NotImplemented(_) => Blame::NotImplemented,
        DataFusionError::External(cause) => cause_blame(Some(cause)).unwrap_or(Blame::Io),
        DataFusionError::Context(_, inner) | DataFusionError::Diagnostic(_, inner) => datafusion_blame(inner),
        DataFusionError::Shared(inner) => datafusion_blame(inner),
        DataFusionError::Collection(errors) => errors.first().map_or(Blame::Internal, datafusion_blame),
        _ => Blame::Internal,
    }
}

/// Who is to blame for an Arrow error.
fn arrow_blame(error: &ArrowError) -> Blame {
    match error {
        ArrowError::IoError(..) | ArrowError::MemoryError(_) => Blame::Io,
        ArrowError::NotYetImplemented(_) => Blame::NotImplemented,
        ArrowError::ExternalError(cause) => cause_blame(Some(cause)).unwrap_or(Blame::Data),
        _ => Blame::Data,
    }
}

/// The blame of a cause that is itself a hearth or DataFusion error.
fn cause_blame(cause: Option<&Cause>) -> Option<Blame> {
    let cause = cause?;
    if let Some(error) = cause.downcast_ref::<HearthError>() {
        Some(error.blame())
    } else {
        cause.downcast_ref::<DataFusionError>().map(datafusion_blame)
    }
}

/// A DataFusion error that carries a hearth error (planning calls back into hearth: the `ML.` functions, the
/// barrier stage) is that hearth error again, its context and causes kept.
impl From<DataFusionError> for HearthError {
    fn from(error: DataFusionError) -> Self {
        match error {
            DataFusionError::External(cause) => match cause.downcast::<HearthError>() {
                Ok(error) => *error,
                Err(cause) => Self::DataFusion(DataFusionError::External(cause)),
            },
            other => Self::DataFusion(other),
        }
    }
}

/// A hearth error where DataFusion expects its own, kept whole as its `External` (and given back by the `From`
/// above), so its blame, context and causes survive planning and execution.
impl From<HearthError> for DataFusionError {
    fn from(error: HearthError) -> Self {
        match error {
            HearthError::DataFusion(error) => error,
            other => DataFusionError::External(Box::new(other)),
        }
    }
}

/// A cause as it follows a message: `": cause"`, or nothing.
struct Caused<'a>(&'a Option<Cause>);

impl fmt::Display for Caused<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(cause) => write!(f, ": {cause}"),
            None => Ok(()),
        }
    }
}

/// Result type of the engine.
pub type Result<T, E = HearthError> = std::result::Result<T, E>;

/// A REST request to a scheduler that failed: which scheduler, which request, and why.
#[derive(Debug, thiserror::Error)]
#[error("scheduler {url}: {request}: {message}{}", Caused(cause))]
pub struct RestError {
    /// The scheduler's base URL.
    pub url: String,
    /// The request, as `GET /path`.
    pub request: String,
    /// The HTTP status it answered, when it answered.
    pub status: Option<u16>,
    /// What went wrong.
    pub message: String,
    /// The HTTP client's (or TLS's) error, when there is one.
    #[source]
    pub cause: Option<Cause>,
}

impl RestError {
    /// The request `request` (`GET /path`, or `connecting`) to the scheduler at `url` failed: `message` says how.
    pub fn new(
        url: impl Into<String>,
        request: impl Into<String>,
        status: Option<u16>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            url: url.into(),
            request: request.into(),
            status,
            message: message.into(),
            cause: None,
        }
    }

    /// This error, keeping `cause` as its source (its text printed after the message).
    #[must_use]
    pub fn caused_by(mut self, cause: impl Into<Cause>) -> Self {
        self.cause = Some(cause.into());
        self
    }

    /// Whether the scheduler answered 404: it has no such route (a plain Ballista scheduler) or no such item.
    pub fn is_not_found(&self) -> bool {
        self.status == Some(404)
    }
}

impl From<hearth_common::files::WholeDirError> for HearthError {
    fn from(error: hearth_common::files::WholeDirError) -> Self {
        let cause = error.cause.map(Cause::from);
        Self::Persistence {
            path: error.path,
            message: error.message,
            cause,
        }
    }
}
