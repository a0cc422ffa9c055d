//! The job a driver runs as: the name its barrier stages keep their checkpoints under
//! ([`BarrierOptions::checkpoint_dir`](crate::barrier::BarrierOptions::checkpoint_dir)), so that a later run of
//! the same job resumes them. A fleet names the drivers it starts (`hearth submit --deploy-mode cluster`,
//! `hearth job resume`); a program names its own with [`Session::resume_job`](crate::session::Session::resume_job)
//! or `HEARTH_JOB_ID`; any other driver is a job of its own, named once per process.
//!
//! ```
//! use hearth_exec::driver_job::is_job_name;
//! assert!(is_job_name("driver-20261128101500-0000"));
//! assert!(!is_job_name("../elsewhere"));
//! ```

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use datafusion::prelude::SessionConfig;

/// The environment variable that names a driver's job: `hearth submit --deploy-mode cluster` and
/// `hearth job resume` give it to the driver they start, whose Ballista session takes it as its id.
pub const JOB_ID_ENV: &str = "HEARTH_JOB_ID";

/// The environment variable that gives a driver's training stages a checkpoint directory when their options
/// name none (a fleet's scheduler passes its own on to the drivers it starts).
pub const CHECKPOINT_DIR_ENV: &str = "HEARTH_CHECKPOINT_DIR";

/// The job a driver's stages run as, and how many stages of each kind it has started — so that a run of the
/// job names its stages as an earlier run did (see [`DriverJob::number_stage`]).
#[derive(Clone, Debug)]
pub(crate) struct DriverJob {
    /// The job's id.
    pub id: String,
    /// Stages started, by kind.
    started: Arc<Mutex<HashMap<String, usize>>>,
    /// Whether a stage of the job has kept checkpoints yet.
    checkpointed: Arc<AtomicBool>,
}

impl DriverJob {
    /// Job `id`, no stage started yet.
    pub fn new(id: String) -> Self {
        Self {
            id,
            started: Arc::default(),
            checkpointed: Arc::default(),
        }
    }

    /// The job of the driver whose session has `config`: the session's (`Session::resume_job`), else this
    /// process's — `$HEARTH_JOB_ID`, else one made for it (`run-<id>`).
    pub fn of(config: &SessionConfig) -> Self {
        static THIS_PROCESS: OnceLock<DriverJob> = OnceLock::new();
        if let Some(job) = config.get_extension::<DriverJob>() {
            return DriverJob::clone(&job);
        }
        THIS_PROCESS
            .get_or_init(|| {
                let id = std::env::var(JOB_ID_ENV).ok().filter(|job| {
                    let valid = is_job_name(job);
                    if !valid {
                        log::warn!("{JOB_ID_ENV}={job:?} is not a job's id ({JOB_NAME_RULE}): running as a new job");
                    }
                    valid
                });
                DriverJob::new(id.unwrap_or_else(|| format!("run-{}", hearth_common::ids::unique_id())))
            })
            .clone()
    }

    /// Whether this is the first time a stage of the job keeps checkpoints in this driver (the moment to
    /// say which job it runs as).
    pub fn first_checkpoints(&self) -> bool {
        !self.checkpointed.swap(true, Ordering::Relaxed)
    }

    /// Which of the job's stages of kind `kind` (a function and its arguments) this one is: 1 for the first.
    /// A job's driver starts its stages in the same order when it runs again, so the same stage gets the same
    /// number (a cross-validation's folds, which share their arguments, get one each).
    pub fn number_stage(&self, kind: &str) -> usize {
        let mut started = self.started.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let count = started.entry(kind.to_string()).or_default();
        *count += 1;
        *count
    }
}

/// What a job's id may be made of.
pub(crate) const JOB_NAME_RULE: &str = "1 to 128 letters, digits, '-', '_' and '.', not only dots";

/// Whether `job` can name a job: letters, digits, `-`, `_` and `.` (not only dots), at most 128 of them —
/// a folder of a checkpoint directory that stays in it.
pub fn is_job_name(job: &str) -> bool {
    !job.is_empty()
        && job.len() <= 128
        && job
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !job.chars().all(|c| c == '.')
}

/// The checkpoint directory a stage uses when its options name none: `$HEARTH_CHECKPOINT_DIR`, if set.
pub(crate) fn default_checkpoint_dir() -> Option<String> {
    std::env::var(CHECKPOINT_DIR_ENV)
        .ok()
        .filter(|dir| !dir.trim().is_empty())
}
