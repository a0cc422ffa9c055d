//! What a barrier stage's plan carries to every task: the function and its arguments, the rendezvous, where
//! the job's secret comes from, deadlines, and the driver program that holds the function when executors must
//! run a copy.
//!
//! On a fleet with a secret the plan carries no secret: the driver derives the stage's job secret from the
//! key it holds (the fleet's secret, or its cluster-mode job's key) and a fresh nonce, and each executor
//! derives it again from the fleet's secret and the plan's job and nonce ([`DerivedSecret`]) — so a listener
//! on a fleet without TLS who reads the plan cannot join the stage's ranks or forge its checkpoints.
//! Embedded sessions, and fleets without a secret, carry a random secret in the plan.

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;

use datafusion::error::DataFusionError;
use hearth_collective::{FrameProtection, JobSecret};
use serde::{Deserialize, Serialize};

use super::ResumePoint;
use crate::ballista::ClusterSecret;

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
    /// The job secret, hex, which every connection of the stage proves; empty when the executors derive it
    /// ([`BarrierSpec::secret_from`]).
    pub secret: String,
    /// Where the executors derive the job secret from when the plan does not carry it.
    #[serde(default)]
    pub secret_from: Option<DerivedSecret>,
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
    /// The bytes of its partition a task may hold in memory (none: half the host's free memory, shared by
    /// the tasks it can run at once).
    #[serde(default)]
    pub memory_budget: Option<u64>,
}

impl BarrierSpec {
    /// The job's secret with the protection its frames get: the plan's, or derived here from the fleet's
    /// secret; an error says why there is none.
    pub(crate) fn job_secret(&self) -> Result<JobSecret, String> {
        let secret = match (&self.secret_from, self.secret.is_empty()) {
            (Some(derived), true) => derived.secret()?,
            _ => JobSecret::from_hex(&self.secret).ok_or("the plan's job secret is not hex")?,
        };
        Ok(secret.with_protection(self.frame_protection))
    }

    /// This spec carrying its job secret (derived here when the plan names where from), for a copy of a
    /// driver program, which is given none of the fleet's credentials.
    pub(crate) fn with_secret_resolved(&self) -> Result<Self, String> {
        let secret = self.job_secret()?;
        Ok(Self {
            secret: secret.to_hex(),
            secret_from: None,
            ..self.clone()
        })
    }
}

/// A job secret a stage's plan names without carrying: an HMAC of `nonce` under the fleet's secret, or under
/// the key of cluster-mode job `job` when the driver held that ([`ClusterSecret::training_secret`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DerivedSecret {
    /// The cluster-mode job whose key the driver held; none when it held the fleet's secret.
    pub job: Option<String>,
    /// The stage's random nonce.
    pub nonce: String,
}

impl DerivedSecret {
    /// A new stage's job secret and where executors derive it from: from `key` (what the driver holds) and a
    /// fresh nonce.
    pub(crate) fn new_from(key: &ClusterSecret) -> (JobSecret, Self) {
        let nonce = JobSecret::generate().to_hex();
        let derived = Self {
            job: key.job().map(str::to_string),
            nonce,
        };
        (key.training_secret(&derived.nonce), derived)
    }

    /// The secret, derived from this process's fleet secret (an executor's).
    fn secret(&self) -> Result<JobSecret, String> {
        let fleet = ClusterSecret::find()
            .map_err(|e| format!("reading the fleet's secret to derive the job's: {e}"))?
            .ok_or_else(|| {
                format!(
                    "the job's secret is derived from the fleet's secret, and this executor (on {}) has none: start it with --secret-file or HEARTH_SECRET_FILE",
                    hearth_common::host::host_name()
                )
            })?;
        if fleet.job().is_some() {
            return Err(
                "the job's secret is derived from the fleet's secret, and this process holds only a job's key".into(),
            );
        }
        let key = match &self.job {
            Some(job) => fleet.for_job(job),
            None => fleet,
        };
        Ok(key.training_secret(&self.nonce))
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
