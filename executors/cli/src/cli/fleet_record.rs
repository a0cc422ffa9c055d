//! Where `hearth cluster start` records a fleet — its state directory and `cluster.json` — and what the other
//! commands read there: the master URL to talk to, and the fleet's secret and TLS.

use std::error::Error;
use std::path::{Path, PathBuf};

use clap::Args;
use hearth_common::files::write_file_whole;
use hearth_exec::ballista::{ClusterSecret, FleetAccess, FleetTls, Role};
use serde::{Deserialize, Serialize};

use super::cache_dir;
use super::failed::Failed;
use super::processes::Started;

/// The environment variable that moves the state directory.
pub const STATE_DIR_ENV: &str = "HEARTH_CLUSTER_DIR";

/// Where a fleet started by `hearth cluster start` is recorded.
#[derive(Clone, Debug, Args)]
pub struct StateDir {
    /// The fleet's state directory (default: `cluster` in hearth's cache, ~/.cache/hearth).
    #[arg(long = "state-dir", env = STATE_DIR_ENV)]
    pub state_dir: Option<PathBuf>,
}

impl StateDir {
    /// The directory: the one given, else the default.
    pub fn path(&self) -> Result<PathBuf, Failed> {
        self.state_dir
            .clone()
            .or_else(default_state_dir)
            .ok_or_else(|| Failed::new(format!("no state directory: pass --state-dir or set {STATE_DIR_ENV}")))
    }
}

/// The state directory of the fleet recorded in the default one, for a client of `master` (none: the
/// recorded fleet): its secret and TLS are this client's. Another master gets none: one fleet's secret is
/// never sent to another scheduler.
pub fn recorded_fleet_dir(master: Option<&str>) -> Option<PathBuf> {
    let dir = default_state_dir()?;
    let record = read_record(&dir).ok()??;
    master.is_none_or(|master| master == record.master).then_some(dir)
}

/// The fleet's secret in its state directory.
pub const SECRET_FILE: &str = "secret";

/// How the `hearth` commands reach the fleet recorded in `dir`: with its secret, and its TLS when it has.
pub fn fleet_access(dir: &Path) -> Result<FleetAccess, Box<dyn Error>> {
    let tls = dir.join(TLS_DIR);
    Ok(FleetAccess {
        secret: ClusterSecret::read(&dir.join(SECRET_FILE)).ok(),
        tls: tls
            .exists()
            .then(|| FleetTls::read_as(&tls, Role::Client))
            .transpose()?,
    })
}

/// The copy of the fleet's TLS certificates in its state directory (`--tls-dir`'s).
pub const TLS_DIR: &str = "tls";

/// The state directory when none is given: `HEARTH_CLUSTER_DIR`, else `cluster` in hearth's cache.
pub fn default_state_dir() -> Option<PathBuf> {
    std::env::var_os(STATE_DIR_ENV)
        .map(PathBuf::from)
        .or_else(|| Some(cache_dir()?.join("cluster")))
}

/// What `hearth cluster start` recorded.
#[derive(Debug, Serialize, Deserialize)]
pub struct ClusterRecord {
    /// The master URL (empty until the scheduler listens).
    pub master: String,
    /// When `start` began, in milliseconds since the epoch.
    pub started_ms: u64,
    /// The scheduler's process.
    pub scheduler: Started,
    /// The executors' processes.
    pub executors: Vec<Started>,
    /// The Spark Connect server's process, when `--connect` started one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect: Option<Started>,
}

impl ClusterRecord {
    /// The scheduler's process, the executors' and the Spark Connect server's.
    pub fn processes(&self) -> impl Iterator<Item = &Started> {
        std::iter::once(&self.scheduler)
            .chain(&self.executors)
            .chain(&self.connect)
    }
}

/// The record's file in the state directory.
pub fn record_file(dir: &Path) -> PathBuf {
    dir.join("cluster.json")
}

/// The record in `dir`, none when nothing was started there.
pub fn read_record(dir: &Path) -> Result<Option<ClusterRecord>, Failed> {
    let file = record_file(dir);
    match std::fs::read_to_string(&file) {
        Ok(json) => serde_json::from_str(&json)
            .map(Some)
            .map_err(|e| Failed::because(format!("{}: not a fleet's record", file.display()), e)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Failed::file(&file, e)),
    }
}

/// Replaces the record in `dir` in one rename.
pub fn write_record(dir: &Path, record: &ClusterRecord) -> Result<(), Failed> {
    let file = record_file(dir);
    let json = serde_json::to_string_pretty(record).map_err(|e| Failed::file(&file, e))?;
    write_file_whole(&file, json.as_bytes()).map_err(|e| Failed::file(&file, e))
}

/// The master the fleet's commands talk to: `--master` (a `df://` URL), else the fleet `hearth cluster
/// start` recorded, when it runs.
pub fn fleet_master(explicit: Option<&str>) -> Result<String, Failed> {
    if let Some(master) = explicit {
        return match master.starts_with("df://") {
            true => Ok(master.to_string()),
            false => Err(Failed::new(format!(
                "--master {master}: this command talks to a fleet's scheduler, df://HOST:PORT"
            ))),
        };
    }
    let no_fleet = || {
        Failed::new(
            "no fleet: pass --master df://HOST:PORT (or set HEARTH_MASTER), or start one with `hearth cluster start`",
        )
    };
    let dir = default_state_dir().ok_or_else(no_fleet)?;
    match read_record(&dir)? {
        Some(record) if !record.master.is_empty() && record.scheduler.alive() => Ok(record.master),
        _ => Err(no_fleet()),
    }
}
