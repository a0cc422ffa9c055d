//! Why a fleet process could not start or stopped: the option, address or part that failed, with its cause.

use std::io;

use ballista_core::error::BallistaError;
use hearth_engine::ballista::RestError;

/// What stops `hearth scheduler` or `hearth executor`. Each message names the option, address or part at fault.
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
    /// The GPUs the executor was asked to offer cannot be offered.
    #[error("--gpus: {0}")]
    Gpus(String),
    /// The fleet's TLS certificates cannot be used.
    #[error("TLS: {0}")]
    Tls(String),
    /// The scheduler's record of cluster-mode jobs cannot be opened.
    #[error("jobs: {0}")]
    Jobs(String),
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
}

/// What the fleet's processes return.
pub type Result<T, E = FleetError> = std::result::Result<T, E>;
