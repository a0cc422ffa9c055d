//! Jobs submitted in cluster mode (`hearth submit --deploy-mode cluster`): the scheduler starts each job's
//! driver — `hearth sql` on the job's statements, connected to this fleet — and keeps its record and output
//! in the job's folder, so both outlive the driver and the client that submitted it.
//!
//! ```text
//! WORK_DIR/jobs/driver-20261123104501-0000/
//!     job.json     the record: name, state, times, exit code, why it failed
//!     job.sql      the statements submitted
//!     driver.log   the driver's standard output and error
//! ```

use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use hearth_engine::ballista::now_ms;
use hearth_engine::session::{APP_NAME_ENV, JOB_ID_ENV};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};

/// What `hearth submit --deploy-mode cluster` sends the scheduler.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SubmitRequest {
    /// The job's name (Spark's `spark.app.name`); its Ballista jobs carry it.
    pub name: String,
    /// The file the statements came from, as the user named it.
    pub file: String,
    /// The statements.
    pub sql: String,
    /// The model catalog's directory, as the driver sees it.
    pub models: String,
    /// Where the driver runs (relative paths in the statements start there), when the scheduler's host has
    /// that directory; the job's folder otherwise.
    pub working_dir: Option<String>,
}

/// Where a job is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobState {
    /// Its driver runs.
    Running,
    /// Its driver finished with exit code 0.
    Succeeded,
    /// Its driver failed (the record says why).
    Failed,
    /// `hearth job kill` stopped it.
    Killed,
}

impl JobState {
    /// The word `hearth jobs` prints.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
            Self::Killed => "killed",
        }
    }
}

/// A submitted job, as the scheduler keeps it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct JobRecord {
    /// Its id, `driver-YYYYMMDDhhmmss-NNNN` as Spark's standalone drivers.
    pub id: String,
    /// Its name.
    pub name: String,
    /// The file its statements came from.
    pub file: String,
    /// Where it is.
    pub state: JobState,
    /// When it was submitted (milliseconds since the Unix epoch).
    pub submitted_ms: u64,
    /// When its driver ended.
    pub ended_ms: Option<u64>,
    /// The driver's exit code, once it ended (none when a signal ended it).
    pub exit_code: Option<i32>,
    /// Why it failed, or how it ended.
    pub message: Option<String>,
    /// The directory the driver runs in.
    pub working_dir: String,
    /// The model catalog's directory.
    pub models: String,
    /// The driver's process id on the scheduler's host.
    pub pid: Option<u32>,
}

/// A chunk of a job's driver output (`GET /hearth/jobs/ID/logs?offset=N`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LogChunk {
    /// The output from the byte offset asked for (up to 1 MiB, whole characters).
    pub text: String,
    /// The offset to ask for next.
    pub next_offset: u64,
    /// Whether the driver has ended (so nothing more will come once `text` is empty).
    pub ended: bool,
}

/// The largest chunk of output one request returns.
const MAX_CHUNK: u64 = 1 << 20;

/// How long a killed driver has to stop before it is killed without asking.
const KILL_GRACE: Duration = Duration::from_secs(5);

/// The jobs of one scheduler: their folders, and the drivers now running.
#[derive(Debug)]
pub struct JobBoard {
    dir: PathBuf,
    master: String,
    program: PathBuf,
    sequence: AtomicUsize,
    running: Mutex<HashMap<String, Arc<AtomicBool>>>,
}

impl JobBoard {
    /// The jobs kept under `work_dir/jobs`, whose drivers connect to `master`. Jobs a previous scheduler left
    /// running are marked failed: their drivers lost their fleet.
    pub fn open(work_dir: &Path, master: String) -> Result<Self, String> {
        let dir = work_dir.join("jobs");
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let program = std::env::current_exe().map_err(|e| format!("cannot find the hearth program: {e}"))?;
        let board = Self {
            sequence: AtomicUsize::new(0),
            dir,
            master,
            program,
            running: Mutex::default(),
        };
        let records = board.list();
        board.sequence.store(records.len(), Ordering::Relaxed);
        for mut record in records.into_iter().filter(|r| r.state == JobState::Running) {
            record.state = JobState::Failed;
            record.ended_ms = Some(now_ms());
            record.message = Some("the scheduler stopped while the driver ran".to_string());
            board.save(&record)?;
        }
        Ok(board)
    }

    fn running(&self) -> MutexGuard<'_, HashMap<String, Arc<AtomicBool>>> {
        self.running.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The folder of job `id`, when `id` is a job id.
    fn folder(&self, id: &str) -> Option<PathBuf> {
        let valid = id.strip_prefix("driver-").is_some_and(|rest| {
            rest.len() == 19
                && rest
                    .bytes()
                    .enumerate()
                    .all(|(i, b)| if i == 14 { b == b'-' } else { b.is_ascii_digit() })
        });
        valid.then(|| self.dir.join(id))
    }

    /// Starts a driver for `request` and returns its job's record.
    pub fn submit(self: &Arc<Self>, request: SubmitRequest) -> Result<JobRecord, String> {
        if request.name.trim().is_empty() {
            return Err("the job's name is empty".to_string());
        }
        let sequence = self.sequence.fetch_add(1, Ordering::Relaxed);
        let id = format!("driver-{}-{sequence:04}", chrono::Utc::now().format("%Y%m%d%H%M%S"));
        let folder = self.dir.join(&id);
        std::fs::create_dir_all(&folder).map_err(|e| format!("{}: {e}", folder.display()))?;
        let statements = folder.join("job.sql");
        std::fs::write(&statements, &request.sql).map_err(|e| format!("{}: {e}", statements.display()))?;
        let working_dir = request
            .working_dir
            .as_deref()
            .map(PathBuf::from)
            .filter(|dir| dir.is_dir())
            .unwrap_or_else(|| folder.clone());
        let log_path = folder.join("driver.log");
        let log = File::create(&log_path).map_err(|e| format!("{}: {e}", log_path.display()))?;
        let log_too = log.try_clone().map_err(|e| format!("{}: {e}", log_path.display()))?;
        let mut child = tokio::process::Command::new(&self.program)
            .arg("sql")
            .arg("--master")
            .arg(&self.master)
            .arg("--models")
            .arg(&request.models)
            .arg(&statements)
            .env(APP_NAME_ENV, &request.name)
            .env(JOB_ID_ENV, &id)
            .current_dir(&working_dir)
            .stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(log_too))
            .spawn()
            .map_err(|e| format!("cannot start the driver {}: {e}", self.program.display()))?;
        let record = JobRecord {
            id: id.clone(),
            name: request.name,
            file: request.file,
            state: JobState::Running,
            submitted_ms: now_ms(),
            ended_ms: None,
            exit_code: None,
            message: None,
            working_dir: working_dir.display().to_string(),
            models: request.models,
            pid: child.id(),
        };
        self.save(&record)?;
        let killed = Arc::new(AtomicBool::new(false));
        self.running().insert(id.clone(), Arc::clone(&killed));
        log::info!("job {id} ({}): driver started, pid {:?}", record.name, record.pid);
        let board = Arc::clone(self);
        let started = record.clone();
        tokio::spawn(async move {
            let status = child.wait().await;
            board.running().remove(&started.id);
            let record = board.ended(started, status, killed.load(Ordering::Relaxed));
            log::info!("job {}: {}", record.id, record.state.as_str());
            if let Err(e) = board.save(&record) {
                log::error!("job {}: {e}", record.id);
            }
        });
        Ok(record)
    }

    /// The record of a job whose driver ended with `status`.
    fn ended(
        &self,
        mut record: JobRecord,
        status: std::io::Result<std::process::ExitStatus>,
        killed: bool,
    ) -> JobRecord {
        record.ended_ms = Some(now_ms());
        record.pid = None;
        match status {
            Ok(status) => {
                record.exit_code = status.code();
                record.state = match (killed, status.success()) {
                    (true, _) => JobState::Killed,
                    (false, true) => JobState::Succeeded,
                    (false, false) => JobState::Failed,
                };
                record.message = match record.state {
                    JobState::Killed => Some("killed by hearth job kill".to_string()),
                    JobState::Failed => Some(self.last_error(&record.id).unwrap_or_else(|| status.to_string())),
                    _ => None,
                };
            }
            Err(e) => {
                record.state = JobState::Failed;
                record.message = Some(format!("lost the driver: {e}"));
            }
        }
        record
    }

    /// The last line of a job's output that reports an error.
    fn last_error(&self, id: &str) -> Option<String> {
        let log = std::fs::read_to_string(self.folder(id)?.join("driver.log")).ok()?;
        log.lines()
            .rev()
            .find_map(|line| line.strip_prefix("error: "))
            .map(str::to_string)
    }

    /// Writes a record whole (a temporary file renamed over the old one).
    fn save(&self, record: &JobRecord) -> Result<(), String> {
        let folder = self.dir.join(&record.id);
        let json = serde_json::to_string_pretty(record).map_err(|e| e.to_string())?;
        let temporary = folder.join("job.json.tmp");
        std::fs::write(&temporary, json)
            .and_then(|()| std::fs::rename(&temporary, folder.join("job.json")))
            .map_err(|e| format!("{}: {e}", folder.display()))
    }

    /// Job `id`'s record.
    pub fn get(&self, id: &str) -> Option<JobRecord> {
        let json = std::fs::read_to_string(self.folder(id)?.join("job.json")).ok()?;
        serde_json::from_str(&json).ok()
    }

    /// Every job's record, oldest first.
    pub fn list(&self) -> Vec<JobRecord> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut records: Vec<JobRecord> = entries
            .filter_map(|entry| self.get(entry.ok()?.file_name().to_str()?))
            .collect();
        records.sort_by(|a, b| a.id.cmp(&b.id));
        records
    }

    /// Job `id`'s driver output from byte `offset`.
    pub fn logs(&self, id: &str, offset: u64) -> Option<Result<LogChunk, String>> {
        let record = self.get(id)?;
        let path = self.folder(id)?.join("driver.log");
        let read = || -> std::io::Result<LogChunk> {
            let mut file = File::open(&path)?;
            file.seek(SeekFrom::Start(offset))?;
            let mut bytes = Vec::new();
            file.take(MAX_CHUNK).read_to_end(&mut bytes)?;
            let whole = match std::str::from_utf8(&bytes) {
                Ok(_) => bytes.len(),
                Err(e) if bytes.len() as u64 == MAX_CHUNK || e.error_len().is_none() => e.valid_up_to(),
                Err(_) => bytes.len(),
            };
            bytes.truncate(whole);
            Ok(LogChunk {
                text: String::from_utf8_lossy(&bytes).into_owned(),
                next_offset: offset + whole as u64,
                ended: record.state != JobState::Running,
            })
        };
        Some(read().map_err(|e| format!("{}: {e}", path.display())))
    }

    /// Stops job `id`'s driver (SIGTERM, then SIGKILL after 5 s). Its record says `killed` once it ended.
    pub fn kill(self: &Arc<Self>, id: &str) -> Option<Result<JobRecord, String>> {
        let record = self.get(id)?;
        let Some(killed) = self.running().get(id).cloned() else {
            return Some(Err(format!("job {id} is not running: it {}", record.state.as_str())));
        };
        let Some(pid) = record.pid else {
            return Some(Err(format!("job {id}: its driver's process id is unknown")));
        };
        killed.store(true, Ordering::Relaxed);
        let pid = Pid::from_raw(pid as i32);
        if let Err(e) = kill(pid, Signal::SIGTERM) {
            return Some(Err(format!("job {id}: cannot stop its driver (pid {pid}): {e}")));
        }
        let board = Arc::clone(self);
        let id = id.to_string();
        tokio::spawn(async move {
            tokio::time::sleep(KILL_GRACE).await;
            if board.running().contains_key(&id) {
                log::warn!("job {id}: its driver did not stop in {KILL_GRACE:?}; killing it");
                let _ = kill(pid, Signal::SIGKILL);
            }
        });
        Some(Ok(record))
    }

    /// Stops every running driver and waits until their records say so (the scheduler is stopping).
    pub async fn stop_all(self: &Arc<Self>) {
        let ids: Vec<String> = self.running().keys().cloned().collect();
        for id in ids {
            if let Some(Err(e)) = self.kill(&id) {
                log::warn!("{e}");
            }
        }
        let deadline = tokio::time::Instant::now() + KILL_GRACE + Duration::from_secs(1);
        while !self.running().is_empty() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}
