//! How a barrier stage runs: its tasks, its attempts and its deadlines — one settings struct for every
//! barrier stage, the trainers' included.

use std::fmt;
use std::time::Duration;

use hearth_collective::FrameProtection;
use serde::{Deserialize, Serialize};

/// The settings of a barrier stage. `Default` is hearth's: one task, three attempts, a two-minute deadline
/// on every collective, five minutes for all tasks to register, and every frame between tasks
/// integrity-checked.
///
/// ```
/// use hearth_exec::barrier::BarrierOptions;
/// let options = BarrierOptions { workers: 4, ..BarrierOptions::default() };
/// assert_eq!(
///     options.to_string(),
///     "workers=4, max_attempts=3, timeout=120s, rendezvous_timeout=300s, gpus_per_task=0, frame_protection=encryption"
/// );
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BarrierOptions {
    /// Tasks running at once, one per partition: the rows are repartitioned into exactly this many
    /// (default 1). The session must have this many task slots.
    pub workers: usize,
    /// Runs of the whole stage before giving up; a retry gives every task the last bytes a task sent the
    /// driver (a checkpoint) to resume from (default 3).
    pub max_attempts: usize,
    /// The longest any one collective may take before every task fails (default 2 minutes).
    #[serde(with = "seconds")]
    pub timeout: Duration,
    /// How long the driver waits for every task to register before failing the stage, naming who is
    /// missing (default 5 minutes).
    #[serde(with = "seconds")]
    pub rendezvous_timeout: Duration,
    /// GPUs each task needs (0 or 1; default 0): the stage runs only where every task gets its own.
    pub gpus_per_task: usize,
    /// How the links between tasks (and to the driver) protect each frame after their handshake: encryption
    /// (default), as Spark's `spark.network.crypto.enabled`, or an integrity tag alone, an explicit opt-in
    /// for a network whose every user is trusted (faster at large sizes; on a fleet that speaks TLS, frames
    /// are encrypted whatever is chosen).
    pub frame_protection: FrameProtection,
    /// Where the driver keeps the stage's checkpoints (the bytes rank 0 sends after each epoch), a local
    /// directory or an object store's URL (`s3://bucket/checkpoints`), so that a job whose driver died
    /// resumes from its last epoch ([`Session::resume_job`](crate::session::Session::resume_job),
    /// `hearth job resume`). Default none: `$HEARTH_CHECKPOINT_DIR` when it is set, else the driver's memory
    /// alone (for its own retries). The layout is in [`checkpoints`](super::checkpoints).
    pub checkpoint_dir: Option<String>,
    /// The bytes of its partition each task may hold in memory; a larger partition is spilled to the task's
    /// disk and read back as a stream ([`BarrierInput`](super::BarrierInput)). Default none: half the
    /// memory the executor's host has free, shared by the tasks it can run at once.
    pub memory_budget: Option<u64>,
}

impl Default for BarrierOptions {
    fn default() -> Self {
        Self {
            workers: 1,
            max_attempts: 3,
            timeout: Duration::from_secs(120),
            rendezvous_timeout: Duration::from_secs(300),
            gpus_per_task: 0,
            frame_protection: FrameProtection::Encryption,
            checkpoint_dir: None,
            memory_budget: None,
        }
    }
}

impl fmt::Display for BarrierOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "workers={}, max_attempts={}, timeout={}s, rendezvous_timeout={}s, gpus_per_task={}, frame_protection={}",
            self.workers,
            self.max_attempts,
            self.timeout.as_secs_f64(),
            self.rendezvous_timeout.as_secs_f64(),
            self.gpus_per_task,
            self.frame_protection
        )?;
        if let Some(dir) = &self.checkpoint_dir {
            write!(f, ", checkpoint_dir={dir}")?;
        }
        match self.memory_budget {
            Some(bytes) => write!(f, ", memory_budget={bytes}"),
            None => Ok(()),
        }
    }
}

/// A duration as a number of seconds in JSON.
mod seconds {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(duration: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_f64(duration.as_secs_f64())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
        let seconds = f64::deserialize(deserializer)?;
        Duration::try_from_secs_f64(seconds)
            .map_err(|_| serde::de::Error::custom(format!("{seconds} is not a number of seconds")))
    }
}
