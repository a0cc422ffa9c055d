//! Why a fleet process could not start or stopped, or a cluster-mode job could not be submitted, read or
//! stopped: the option, address, file or part that failed, with its cause.

use std::io;
use std::path::PathBuf;

use ballista_core::error::BallistaError;
use hearth_exec::ballista::RestError;
use hearth_exec::error::Cause;

/// What stops `hearth scheduler` or `hearth executor`, or fails a request about a cluster-mode job. Each message
/// names the option, address, file or part at fault.
///
/// ```
/// use hearth_fleet::FleetError;
///
/// let error = FleetError::option("--slots", "must be at least 1");
/// assert_eq!(error.to_string(), "--slots: must be at least 1");
/// ```
#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    /// An option that cannot be used as given.
    #[error("{option}: {message}")]
    Option {
        /// The option, as the command line spells it.
        option: &'static str,
        /// What is wrong with it.
        message: String,
    },
    /// An address the process could not listen on.
    #[error("cannot listen on {address}: {source}")]
    Listen {
        /// The address, `host` or `host:port`.
        address: String,
        /// The operating system's reason.
        #[source]
        source: io::Error,
    },
    /// The GPUs an executor was asked to offer (`--gpus`) cannot be offered: the message names the request and
    /// what this host has; the cause, when there is one, why its GPUs cannot be known or used.
    #[error("{message}{}", cause.as_ref().map_or_else(String::new, |e| format!(": {e}")))]
    Gpus {
        /// The request, and what is wrong with it.
        message: String,
        /// Why the host's GPUs cannot be known (the CUDA driver failed) or used (libtorch does not see them).
        #[source]
        cause: Option<Cause>,
    },
    /// The fleet's TLS certificates cannot be used.
    #[error("TLS: {0}")]
    Tls(#[source] Cause),
    /// A file or folder of the scheduler's cluster-mode jobs cannot be written or read.
    #[error("{}: {source}", path.display())]
    Jobs {
        /// The file or folder.
        path: PathBuf,
        /// The file system's (or the record's encoder's) error.
        #[source]
        source: io::Error,
    },
    /// A process of cluster-mode jobs cannot be found, started or stopped: the hearth program that runs their
    /// drivers, or a job's driver.
    #[error("{message}: {source}")]
    Driver {
        /// What could not be done, naming the program or the job and its driver's pid.
        message: String,
        /// The operating system's error.
        #[source]
        source: Cause,
    },
    /// A request about a cluster-mode job that cannot be carried out as asked: a job without a name, or one that
    /// is not running (the message names it).
    #[error("{0}")]
    Refused(String),
    /// Ballista's scheduler or executor failed.
    #[error("Ballista's {part}: {source}")]
    Ballista {
        /// `scheduler` or `executor`.
        part: &'static str,
        /// Ballista's error.
        #[source]
        source: BallistaError,
    },
    /// The scheduler's REST API could not be reached.
    #[error(transparent)]
    Rest(#[from] RestError),
    /// A server of the process stopped with an error.
    #[error("{server} stopped: {source}")]
    Served {
        /// Which server.
        server: &'static str,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The process stopped for a reason its log gives.
    #[error("{0}")]
    Stopped(String),
    /// hearth's engine refused a setting (the error names it).
    #[error(transparent)]
    Engine(#[from] hearth_exec::error::HearthError),
}

impl FleetError {
    /// An option that cannot be used, and why.
    pub fn option(option: &'static str, message: impl Into<String>) -> Self {
        Self::Option {
            option,
            message: message.into(),
        }
    }

    /// An address that could not be listened on.
    pub fn listen(address: impl ToString, source: io::Error) -> Self {
        Self::Listen {
            address: address.to_string(),
            source,
        }
    }

    /// Ballista's scheduler's error.
    pub fn scheduler(source: BallistaError) -> Self {
        Self::Ballista {
            part: "scheduler",
            source,
        }
    }

    /// GPUs that cannot be offered: `message` names the request and what is wrong with it.
    pub fn gpus(message: impl Into<String>) -> Self {
        Self::Gpus {
            message: message.into(),
            cause: None,
        }
    }

    /// The fleet's TLS certificates cannot be used, for the reason `cause` gives.
    pub fn tls(cause: impl Into<Cause>) -> Self {
        Self::Tls(cause.into())
    }

    /// A file or folder of cluster-mode jobs at `path` that cannot be written or read.
    pub fn jobs(path: impl Into<PathBuf>, source: io::Error) -> Self {
        Self::Jobs {
            path: path.into(),
            source,
        }
    }

    /// A process of cluster-mode jobs that cannot be found, started or stopped: `message` says which and what.
    pub fn driver(message: impl Into<String>, source: impl Into<Cause>) -> Self {
        Self::Driver {
            message: message.into(),
            source: source.into(),
        }
    }

    /// This error, keeping `cause` as its source (its text printed after the message). Only an error about
    /// GPUs keeps one this way; the others hold their cause from the start, or have none, and are returned as
    /// they are.
    #[must_use]
    pub fn caused_by(mut self, cause: impl Into<Cause>) -> Self {
        if let Self::Gpus { cause: kept, .. } = &mut self {
            *kept = Some(cause.into());
        }
        self
    }
}

/// What the fleet's processes return.
pub type Result<T, E = FleetError> = std::result::Result<T, E>;
