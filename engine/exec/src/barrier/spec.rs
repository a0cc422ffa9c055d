//! What a barrier stage's plan carries to every task: the function and its arguments, the rendezvous, the
//! job's secret and deadlines, and the driver program that holds the function when executors must run a copy.

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;

use datafusion::error::DataFusionError;
use hearth_collective::{FrameProtection, JobSecret};
use serde::{Deserialize, Serialize};

use super::ResumePoint;

/// Everything a barrier task needs besides its rows; it travels inside the plan.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BarrierSpec {
    /// The registered [`BarrierFunction`] every task runs.
    pub function: String,
    /// The function's argument string, the same for every task.
    pub args: String,
    /// The number of tasks, which is the input's partition count.
    pub world_size: usize,
    /// The driver's rendezvous coordinator.
    pub coordinator: SocketAddr,
    /// The job secret, hex; every connection of the stage proves it.
    pub secret: String,
    /// Seconds any one collective (the rendezvous included) may take.
    pub timeout_secs: f64,
    /// The job's name in messages.
    pub job: String,
    /// What a retried stage's tasks resume from.
    #[serde(default)]
    pub resume: Option<ResumePoint>,
    /// GPUs each task holds while it runs (0 or 1): the scheduler places the stage only where its tasks
    /// find them, and a task trains on the one it holds.
    #[serde(default)]
    pub gpus_per_task: usize,
    /// How the stage's links protect their frames.
    #[serde(default)]
    pub frame_protection: FrameProtection,
    /// The driver program holding the function, when the function is the program's own and the stage runs
    /// on a fleet, whose executors run it in copies of the program.
    #[serde(default)]
    pub program: Option<ProgramRef>,
}

impl BarrierSpec {
    /// The job's secret with the protection its frames get; `None` if the plan's secret is not hex.
    pub(crate) fn job_secret(&self) -> Option<JobSecret> {
        JobSecret::from_hex(&self.secret).map(|secret| secret.with_protection(self.frame_protection))
    }
}

/// A driver program as a stage's plan names it, for executors that must run its functions.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProgramRef {
    /// The executable's absolute path on the driver's host.
    pub path: PathBuf,
    /// Its arguments, which lead a copy to the same registrations.
    pub args: Vec<String>,
    /// The driver's working directory, which a copy starts in where the executor's host has it.
    pub dir: Option<PathBuf>,
    /// The executable's size in bytes.
    pub size: u64,
    /// Its SHA-256, hex.
    pub sha256: String,
    /// The function's output schema, as an Arrow IPC stream without batches (base64), for the plan's
    /// schema on hosts without the function.
    pub schema: String,
}

/// A task's failure, naming the stage, the task and what it was doing.
pub(super) fn task_error(spec: &BarrierSpec, task: &str, doing: &str, error: &dyn fmt::Display) -> DataFusionError {
    DataFusionError::Execution(format!(
        "barrier stage {} ({}), {task}, {doing}: {error}",
        spec.job, spec.function
    ))
}

/// An error's message without DataFusion's kind prefix, so wrapped errors read once.
pub(super) fn reason(error: &DataFusionError) -> String {
    error.message().into_owned()
}
