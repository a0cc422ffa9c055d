//! What can go wrong in a collective, named by operation, rank and host.

use std::error::Error;
use std::io;
use std::net::SocketAddr;

/// A collective or rendezvous failure. Every variant says which operation failed on which rank and, where a
/// peer is to blame, that peer's rank and host.
#[derive(Debug, thiserror::Error)]
pub enum CollectiveError {
    /// A peer died, stalled past the deadline, or sent something that is not the expected message.
    #[error("{op} on rank {rank}: peer rank {peer} ({host}) {cause}")]
    Peer {
        /// The operation, e.g. `allreduce #12`.
        op: String,
        /// This rank.
        rank: usize,
        /// The peer's rank.
        peer: usize,
        /// The peer's host.
        host: String,
        /// What happened: closed the connection, missed the deadline, sent garbage.
        cause: String,
    },
    /// The rendezvous could not complete (timeout with ranks missing, coordinator gone, …).
    #[error("rendezvous at {coordinator}: {message}{}", caused(cause))]
    Rendezvous {
        /// The coordinator's address.
        coordinator: SocketAddr,
        /// What went wrong.
        message: String,
        /// The lower-level error (the socket's, the decoder's, a refused handshake's), when there is one.
        #[source]
        cause: Option<Box<dyn Error + Send + Sync>>,
    },
    /// A connection did not prove the job secret, or this side's proof was refused.
    #[error("authentication with {addr} failed: {message}")]
    Auth {
        /// The other end.
        addr: String,
        /// What went wrong.
        message: String,
    },
    /// The communicator failed before and its links are closed.
    #[error("rank {rank}: the communicator is closed after an earlier failure ({first})")]
    Closed {
        /// This rank.
        rank: usize,
        /// The first failure.
        first: String,
    },
    /// A GPU collective (NCCL) or its device failed on this rank.
    #[error("rank {rank}: {message}")]
    Device {
        /// This rank.
        rank: usize,
        /// What failed, on which device.
        message: String,
    },
    /// A local socket operation (bind, accept) failed.
    #[error("{what}: {source}")]
    Local {
        /// What was being done.
        what: String,
        /// The OS error.
        source: io::Error,
    },
}

impl CollectiveError {
    /// The rendezvous at `coordinator` failed: `message` says what went wrong.
    pub(crate) fn rendezvous(coordinator: SocketAddr, message: impl Into<String>) -> Self {
        Self::Rendezvous {
            coordinator,
            message: message.into(),
            cause: None,
        }
    }

    /// The rendezvous at `coordinator` failed: `message` says what went wrong, and `cause` is the lower-level
    /// error it came from.
    pub(crate) fn rendezvous_caused(
        coordinator: SocketAddr,
        message: impl Into<String>,
        cause: impl Into<Box<dyn Error + Send + Sync>>,
    ) -> Self {
        Self::Rendezvous {
            coordinator,
            message: message.into(),
            cause: Some(cause.into()),
        }
    }
}

/// How a cause reads after its error's message: `": {cause}"`, or nothing.
fn caused(cause: &Option<Box<dyn Error + Send + Sync>>) -> String {
    cause.as_ref().map(|e| format!(": {e}")).unwrap_or_default()
}

/// Result type of the collectives.
pub type Result<T, E = CollectiveError> = std::result::Result<T, E>;

/// How a socket error reads in a peer error.
pub(crate) fn describe_io(error: &io::Error) -> String {
    match error.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => "missed the deadline (no data in time)".to_string(),
        io::ErrorKind::UnexpectedEof => "closed the connection".to_string(),
        io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionAborted => {
            format!("dropped the connection ({error})")
        }
        io::ErrorKind::InvalidData => error.to_string(),
        _ => format!("failed: {error}"),
    }
}
