//! The fleet's processes — a Ballista scheduler and executors that carry hearth's codec and SQL functions —
//! and what the scheduler adds to Ballista's: the gang policy for barrier stages, the book of executors'
//! resources (slots, memory, GPUs), cluster-mode jobs, and the REST routes that show them. The `hearth`
//! program (`hearth-cli`) starts them as `hearth scheduler` and `hearth executor`.

// No function over 80 lines in the library (clippy.toml); tests, examples and benchmarks are exempt.
#![warn(clippy::too_many_lines)]

pub mod admission;
mod book;
mod error;
mod executor;
mod flight;
pub mod front;
mod gang;
mod grpc;
pub mod guard;
mod jobs;
pub mod launch;
mod limits;
mod ownership;
mod private_dir;
mod resources;
mod routes;
mod scheduler;
pub mod tls;

pub use error::{FleetError, Result};
pub use executor::{ExecutorOptions, executor};
pub use jobs::{JobRecord, JobState, LogChunk, SubmitRequest};
pub use limits::raise_open_files_limit;
pub use ownership::JobOwners;
pub use resources::{GpuRequest, GpuShare, choose_gpus, gpu_shares};
pub use scheduler::{SchedulerOptions, scheduler};

/// Resolves when the process is asked to stop: SIGTERM, or Ctrl-C.
async fn stopped() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let Ok(mut terminate) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) else {
            return std::future::pending().await;
        };
        tokio::select! {
            _ = interrupt => {}
            _ = terminate.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = interrupt.await;
}
