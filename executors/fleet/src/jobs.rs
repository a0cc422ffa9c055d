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
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use hearth_common::files::write_file_whole;
use hearth_exec::ballista::{FleetAccess, FleetTls, Role, SECRET_FILE_ENV, TLS_DIR_ENV, now_ms};
use hearth_exec::driver_job::JOB_ID_ENV;
use hearth_exec::session::APP_NAME_ENV;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};

use crate::error::{FleetError, Result};

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
    /// `hearth job kill` stopped it, or the scheduler stopped while it ran (the record says which).
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
    /// How many times `hearth job resume` started its driver again.
    #[serde(default)]
    pub resumes: u32,
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
pub const KILL_GRACE: Duration = Duration::from_secs(5);

/// The jobs of one scheduler: their folders, and the drivers now running.
#[derive(Debug)]
pub struct JobBoard {
    dir: PathBuf,
    master: String,
    /// The scheduler's secret and TLS: the drivers it starts get their job's key of the secret.
    access: FleetAccess,
    /// The client's TLS the drivers speak, or why there is none to give them.
    drivers_tls: std::result::Result<Option<FleetTls>, String>,
    /// The directories and URL prefixes, besides its own folder, that a job's statements may name.
    data_roots: Vec<String>,
    program: PathBuf,
    sequence: AtomicUsize,
    running: Mutex<HashMap<String, StopReason>>,
}

/// Why a running driver is being stopped, once something stops it.
type StopReason = Arc<Mutex<Option<&'static str>>>;

/// The message of a job `hearth job kill` stopped.
const KILLED_BY_USER: &str = "killed by hearth job kill";

/// The message of a job whose scheduler stopped it on the way down.
const KILLED_BY_SHUTDOWN: &str = "the scheduler stopped";

impl JobBoard {
    /// What jobs' statements may not name even under a data root: every job's folder (a job's own folder is a
    /// root of its own), and where the fleet's secret and TLS keys are.
    fn denied_to_jobs(&self) -> Vec<PathBuf> {
        let secret = std::env::var_os(SECRET_FILE_ENV).and_then(|file| Some(Path::new(&file).parent()?.to_path_buf()));
        let tls = std::env::var_os(TLS_DIR_ENV).map(PathBuf::from);
        let scheduler_tls = self
            .access
            .tls
            .iter()
            .flat_map(|tls| [tls.root().to_path_buf(), tls.dir().to_path_buf()]);
        std::iter::once(self.dir.clone())
            .chain(secret)
            .chain(tls)
            .chain(scheduler_tls)
            .collect()
    }

    /// The jobs kept under `work_dir/jobs`, whose drivers connect to `master` as clients of the fleet `access`
    /// reaches (its client certificate when the fleet's TLS has roles) and may name files only in their job's
    /// folder and under `data_roots`. Jobs a previous scheduler left running are marked failed: their drivers
    /// lost their fleet.
    pub fn open(work_dir: &Path, master: String, access: FleetAccess, data_roots: Vec<String>) -> Result<Self> {
        let drivers_tls = (access.tls.as_ref().map(|tls| tls.as_role(Role::Client)).transpose()).map_err(|e| {
            let why = format!("the drivers of cluster-mode jobs need the fleet's client certificate: {e}");
            log::warn!("cluster-mode jobs will be refused: {why}");
            why
        });
        let dir = work_dir.join("jobs");
        std::fs::create_dir_all(&dir).map_err(|e| FleetError::jobs(&dir, e))?;
        let program = std::env::current_exe().map_err(|e| FleetError::driver("cannot find the hearth program", e))?;
        let board = Self {
            sequence: AtomicUsize::new(0),
            dir,
            master,
            access,
            drivers_tls,
            data_roots,
            program,
            running: Mutex::default(),
        };
        let records = board.list();
        board.sequence.store(records.len(), Ordering::Relaxed);
        for mut record in records.into_iter().filter(|r| r.state == JobState::Running) {
            board.stop_orphan(&record);
            record.state = JobState::Failed;
            record.ended_ms = Some(now_ms());
            record.pid = None;
            record.message = Some("the scheduler stopped while the driver ran".to_string());
            board.save(&record)?;
        }
        Ok(board)
    }

    /// Kills the driver a previous scheduler left running for `record`, if its process is still that job's
    /// driver (its command line names the job's statements): lost with its fleet, it would otherwise run on
    /// beside a resumed one, writing the same checkpoints.
    fn stop_orphan(&self, record: &JobRecord) {
        let Some(pid) = record.pid else {
            return;
        };
        let statements = self.dir.join(&record.id).join("job.sql");
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let names_it =
            (cmdline.split(|&b| b == 0)).any(|arg| Path::new(std::ffi::OsStr::from_bytes(arg)) == statements);
        if names_it {
            log::warn!(
                "job {}: stopping its driver (pid {pid}), left by the scheduler before",
                record.id
            );
            let _ = kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
        }
    }

    fn running(&self) -> MutexGuard<'_, HashMap<String, StopReason>> {
        self.running.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The folder of job `id`, when `id` is a job id.
    fn folder(&self, id: &str) -> Option<PathBuf> {
        let valid = id.strip_prefix("driver-").is_some_and(|rest| {
            rest.len() >= 19
                && rest
                    .bytes()
                    .enumerate()
                    .all(|(i, b)| if i == 14 { b == b'-' } else { b.is_ascii_digit() })
        });
        valid.then(|| self.dir.join(id))
    }

    /// What job `id`'s driver reaches the fleet with: its job's key, not the fleet's secret (see
    /// `ClusterSecret::for_job`), and the client's certificate.
    fn driver_access(&self, id: &str) -> Result<FleetAccess> {
        let access = FleetAccess {
            secret: self.access.secret.clone(),
            tls: self.drivers_tls.clone().map_err(FleetError::Refused)?,
        };
        Ok(access.for_job(id))
    }

    /// Starts a driver for `request` and returns its job's record.
    pub fn submit(self: &Arc<Self>, request: SubmitRequest) -> Result<JobRecord> {
        if request.name.trim().is_empty() {
            return Err(FleetError::Refused("the job's name is empty".to_string()));
        }
        let sequence = self.sequence.fetch_add(1, Ordering::Relaxed);
        let id = format!("driver-{}-{sequence:04}", chrono::Utc::now().format("%Y%m%d%H%M%S"));
        let folder = self.dir.join(&id);
        std::fs::create_dir_all(&folder).map_err(|e| FleetError::jobs(&folder, e))?;
        let statements = folder.join("job.sql");
        std::fs::write(&statements, &request.sql).map_err(|e| FleetError::jobs(&statements, e))?;
        let working_dir = request
            .working_dir
            .as_deref()
            .map(PathBuf::from)
            .filter(|dir| dir.is_dir())
            .unwrap_or_else(|| folder.clone());
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
            pid: None,
            resumes: 0,
        };
        self.running().insert(id.clone(), StopReason::default());
        let started = self.start_driver(record, |path: &Path| File::create(path));
        if started.is_err() {
            let _ = std::fs::remove_dir_all(&folder);
        }
        started
    }

    /// Claims job `id` for a resume: its record, marked running and counting one more resume, once the job is
    /// among the running ones — so no other resume or submission of it starts meanwhile. A job that runs, or
    /// that succeeded, or whose working directory is gone, is refused. [`start_resumed`](Self::start_resumed)
    /// then starts its driver.
    pub fn claim_resume(&self, id: &str) -> Option<Result<JobRecord>> {
        let mut record = self.get(id)?;
        let mut running = self.running();
        let refused = match record.state {
            _ if running.contains_key(id) => Some("it is running".to_string()),
            JobState::Running => Some("its record says it runs".to_string()),
            JobState::Succeeded => Some("it succeeded: there is nothing to resume".to_string()),
            _ if !Path::new(&record.working_dir).is_dir() => Some(format!(
                "its working directory {} is gone from the scheduler's host",
                record.working_dir
            )),
            JobState::Failed | JobState::Killed => None,
        };
        if let Some(why) = refused {
            return Some(Err(FleetError::Refused(format!("job {id} cannot be resumed: {why}"))));
        }
        running.insert(id.to_string(), StopReason::default());
        record.state = JobState::Running;
        (record.ended_ms, record.exit_code, record.message, record.pid) = (None, None, None, None);
        record.resumes += 1;
        Some(Ok(record))
    }

    /// Starts the driver of a job [`claim_resume`](Self::claim_resume) claimed, on the same statements, as the
    /// same job — so each of its training stages resumes from the last checkpoint a run of the job kept in its
    /// checkpoint directory — and returns its record. Its output is added to its log.
    pub fn start_resumed(self: &Arc<Self>, record: JobRecord) -> Result<JobRecord> {
        let resumes = record.resumes;
        let log = |path: &Path| -> std::io::Result<File> {
            let mut log = File::options().append(true).create(true).open(path)?;
            writeln!(log, "\n--- resumed by hearth job resume ({resumes}) ---")?;
            Ok(log)
        };
        self.start_driver(record, log)
    }

    /// Starts `record`'s driver — `hearth sql` on its job's statements as job `record.id`, its output to the
    /// log `open_log` opens — saves the record with the driver's pid, and watches it to its end. The job is
    /// already among the running ones, and is no longer if the driver cannot start.
    fn start_driver(
        self: &Arc<Self>,
        mut record: JobRecord,
        open_log: impl FnOnce(&Path) -> std::io::Result<File>,
    ) -> Result<JobRecord> {
        let id = record.id.clone();
        let started = self.spawn_driver(&record, open_log).and_then(|child| {
            record.pid = child.id();
            match self.save(&record) {
                Ok(()) => Ok(child),
                Err(e) => {
                    let mut child = child;
                    let _ = child.start_kill();
                    Err(e)
                }
            }
        });
        let mut child = match started {
            Ok(child) => child,
            Err(e) => {
                self.running().remove(&id);
                return Err(e);
            }
        };
        let stop_reason = self.running().get(&id).cloned().unwrap_or_default();
        log::info!("job {id} ({}): driver started, pid {:?}", record.name, record.pid);
        let board = Arc::clone(self);
        let started = record.clone();
        tokio::spawn(async move {
            let status = child.wait().await;
            let reason = *stop_reason.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let record = board.ended(started, status, reason);
            log::info!("job {}: {}", record.id, record.state.as_str());
            if let Err(e) = board.save(&record) {
                log::error!("job {}: {e}", record.id);
            }
            board.running().remove(&record.id);
        });
        Ok(record)
    }

    /// The driver process of `record`'s job, started.
    fn spawn_driver(
        &self,
        record: &JobRecord,
        open_log: impl FnOnce(&Path) -> std::io::Result<File>,
    ) -> Result<tokio::process::Child> {
        let folder = self.dir.join(&record.id);
        let access = self.driver_access(&record.id)?;
        let path = folder.join("driver.log");
        let log = open_log(&path).map_err(|e| FleetError::jobs(&path, e))?;
        let log_too = log.try_clone().map_err(|e| FleetError::jobs(&path, e))?;
        tokio::process::Command::new(&self.program)
            .arg("sql")
            .arg("--master")
            .arg(&self.master)
            .arg("--models")
            .arg(&record.models)
            .arg("--data-roots")
            .arg(&folder)
            .args(&self.data_roots)
            .arg("--data-deny")
            .args(self.denied_to_jobs())
            .arg("--")
            .arg(folder.join("job.sql"))
            .env(APP_NAME_ENV, &record.name)
            .env(JOB_ID_ENV, &record.id)
            .envs(access.environment())
            .current_dir(&record.working_dir)
            .stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(log_too))
            .spawn()
            .map_err(|e| FleetError::driver(format!("cannot start the driver {}", self.program.display()), e))
    }

    /// The record of a job whose driver ended with `status`.
    fn ended(
        &self,
        mut record: JobRecord,
        status: std::io::Result<std::process::ExitStatus>,
        stop_reason: Option<&'static str>,
    ) -> JobRecord {
        record.ended_ms = Some(now_ms());
        record.pid = None;
        match status {
            Ok(status) => {
                record.exit_code = status.code();
                record.state = match (stop_reason, status.success()) {
                    (Some(_), _) => JobState::Killed,
                    (None, true) => JobState::Succeeded,
                    (None, false) => JobState::Failed,
                };
                record.message = match (record.state, stop_reason) {
                    (JobState::Killed, Some(reason)) => Some(reason.to_string()),
                    (JobState::Failed, _) => Some(self.last_error(&record.id).unwrap_or_else(|| status.to_string())),
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
    fn save(&self, record: &JobRecord) -> Result<()> {
        let folder = self.dir.join(&record.id);
        let file = folder.join("job.json");
        let json = serde_json::to_string_pretty(record).map_err(|e| FleetError::jobs(&file, e.into()))?;
        write_file_whole(&file, json.as_bytes()).map_err(|e| FleetError::jobs(&folder, e))
    }

    /// Whether job `id`'s driver runs (or its record is not written yet).
    pub fn is_running(&self, id: &str) -> bool {
        self.running().contains_key(id)
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
    pub fn logs(&self, id: &str, offset: u64) -> Option<Result<LogChunk>> {
        let record = self.get(id)?;
        let path = self.folder(id)?.join("driver.log");
        let read = || -> std::io::Result<LogChunk> {
            let mut file = File::open(&path)?;
            file.seek(SeekFrom::Start(offset))?;
            let mut bytes = Vec::new();
            file.take(MAX_CHUNK).read_to_end(&mut bytes)?;
            let ended = record.state != JobState::Running;
            let whole = match ended && (bytes.len() as u64) < MAX_CHUNK {
                true => bytes.len(),
                false => bytes.len() - incomplete_tail(&bytes),
            };
            bytes.truncate(whole);
            Ok(LogChunk {
                text: String::from_utf8_lossy(&bytes).into_owned(),
                next_offset: offset + whole as u64,
                ended,
            })
        };
        Some(read().map_err(|e| FleetError::jobs(&path, e)))
    }

    /// Stops job `id`'s driver (SIGTERM, then SIGKILL after 5 s). Its record says `killed` once it ended.
    pub fn kill(self: &Arc<Self>, id: &str) -> Option<Result<JobRecord>> {
        self.stop(id, KILLED_BY_USER)
    }

    /// Stops job `id`'s driver, its record to say `reason` once it ended.
    fn stop(self: &Arc<Self>, id: &str, reason: &'static str) -> Option<Result<JobRecord>> {
        let record = self.get(id)?;
        let Some(stop_reason) = self.running().get(id).cloned() else {
            let state = record.state.as_str();
            return Some(Err(FleetError::Refused(format!(
                "job {id} is not running: it has ended ({state})"
            ))));
        };
        let Some(pid) = record.pid else {
            return Some(Err(FleetError::Refused(format!(
                "job {id}: its driver's process id is unknown"
            ))));
        };
        stop_reason
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get_or_insert(reason);
        let pid = Pid::from_raw(pid as i32);
        match kill(pid, Signal::SIGTERM) {
            // The driver ended on its own a moment ago; its waiter writes its record.
            Ok(()) | Err(nix::errno::Errno::ESRCH) => {}
            Err(e) => {
                let message = format!("job {id}: cannot stop its driver (pid {pid})");
                return Some(Err(FleetError::driver(message, e)));
            }
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
            if let Some(Err(e)) = self.stop(&id, KILLED_BY_SHUTDOWN) {
                log::warn!("{e}");
            }
        }
        let deadline = tokio::time::Instant::now() + KILL_GRACE + Duration::from_secs(1);
        while !self.running().is_empty() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// How many bytes at the end of `bytes` begin a UTF-8 character that is not whole yet (0 to 3): a log
/// chunk stops before them, so a character written in two parts is read whole by the next request.
fn incomplete_tail(bytes: &[u8]) -> usize {
    let last = bytes.len().saturating_sub(4);
    let Some(start) = (last..bytes.len())
        .rev()
        .find(|&i| bytes[i] & 0b1100_0000 != 0b1000_0000)
    else {
        return 0;
    };
    let needed = match bytes[start] {
        0xF0..=0xF7 => 4,
        0xE0..=0xEF => 3,
        0xC0..=0xDF => 2,
        _ => 1,
    };
    let present = bytes.len() - start;
    if present < needed { present } else { 0 }
}

#[cfg(test)]
mod tests {
    use super::incomplete_tail;

    #[test]
    fn a_chunk_stops_before_a_character_cut_in_two() {
        let text = "loss 0.5 → 0.4".as_bytes();
        assert_eq!(incomplete_tail(text), 0);
        let arrow = text.iter().position(|&b| b == 0xE2).unwrap();
        assert_eq!(incomplete_tail(&text[..arrow + 1]), 1);
        assert_eq!(incomplete_tail(&text[..arrow + 2]), 2);
        assert_eq!(incomplete_tail(&text[..arrow + 3]), 0);
        assert_eq!(incomplete_tail(b"plain"), 0);
        assert_eq!(
            incomplete_tail(&[0xFF, 0xFF]),
            0,
            "invalid bytes are passed on, decoded lossily"
        );
    }
}
