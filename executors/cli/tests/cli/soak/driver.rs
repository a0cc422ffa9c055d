//! A soak run's driver: `hearth submit` in client mode (maybe in a mount namespace of its own, on a small
//! disk), or a cluster-mode job; how it ended.

use std::collections::BTreeSet;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use rand::Rng;
use rand::rngs::StdRng;
use serde_json::Value;

use super::DRIVER_LOG;
use crate::common::{Fleet, alive, shown};
use crate::procfs::processes_of;

/// A job's driver: `hearth submit` in client mode (maybe inside a mount namespace), or a cluster-mode job.
pub(super) struct Driver {
    pub(super) kind: DriverKind,
    /// The output of a client-mode driver.
    pub(super) output: PathBuf,
    /// How the model's file system was limited (fill-the-disk runs).
    pub(super) disk: String,
}

pub(super) enum DriverKind {
    Client(Child),
    Cluster { id: String },
}

/// How a driver ended: its exit code when known and its output.
pub(super) struct Ended {
    pub(super) code: Option<i32>,
    pub(super) output: String,
}

impl Ended {
    /// For a driver run on a small disk: what is wrong with the model directory after it, from the checks
    /// the namespace's script printed.
    pub(super) fn disk_check_failure(&self) -> Option<String> {
        let said = |mark: &str| self.output.lines().any(|line| line.starts_with(mark));
        if said("soak: the previous model is intact") && said("soak: load exit 0") {
            None
        } else {
            Some(format!(
                "after a full disk the model directory differs from the model before, or does not load: {}",
                self.output
                    .lines()
                    .filter(|line| line.starts_with("soak: "))
                    .collect::<Vec<_>>()
                    .join("; ")
            ))
        }
    }
}

impl Driver {
    /// `hearth submit JOB` in client mode, its output to a file in `dir`.
    pub(super) fn client(fleet: &Fleet, dir: &Path, job: &str, models: &Path) -> Driver {
        let output = dir.join("driver.log");
        let mut command = fleet.hearth();
        command.args(["submit", "--models"]).arg(models).arg(job);
        Self::spawn(command, output, String::new())
    }

    /// `hearth submit JOB` in cluster mode.
    pub(super) fn cluster(fleet: &Fleet, job: &str, models: &Path) -> Driver {
        let id = fleet.submit_cluster(job, &["--models", models.to_str().unwrap()]);
        let output = fleet.state.path().join(format!("scheduler/jobs/{id}/driver.log"));
        Driver {
            kind: DriverKind::Cluster { id },
            output,
            disk: String::new(),
        }
    }

    /// A client-mode driver whose model directory is a tmpfs of its own holding the model a first job
    /// trained, with room for a random part of another: the job's `CREATE OR REPLACE MODEL` meets a full
    /// disk at a random file. The namespace's script then checks the directory and loads the model in it.
    pub(super) fn on_a_small_disk(fleet: &Fleet, dir: &Path, job: &str, rng: &mut StdRng) -> Driver {
        let previous = dir.join("previous");
        let first = fleet
            .hearth()
            .args(["submit", "--models"])
            .arg(&previous)
            .arg(job)
            .output()
            .unwrap();
        assert!(
            first.status.success(),
            "the job before the full disk: {}",
            shown(&first)
        );
        let pages = pages_of(&previous);
        let extra = rng.random_range(0..pages);
        let bytes = (pages + extra) * 4096;
        let mount = dir.join("small-disk");
        std::fs::create_dir(&mount).unwrap();
        let script = r#"
            mount -t tmpfs -o size="$SOAK_BYTES" soak "$SOAK_MODELS" || exit 90 # NO_NAMESPACE
            cp -a "$SOAK_PREVIOUS"/. "$SOAK_MODELS"/ || exit 91
            "$SOAK_HEARTH" submit --models "$SOAK_MODELS" "$SOAK_JOB"
            echo "soak: driver exit $?"
            echo "soak: entries $(ls -A "$SOAK_MODELS" | tr '\n' ' ')"
            diff -r "$SOAK_PREVIOUS" "$SOAK_MODELS" > /dev/null && echo "soak: the previous model is intact"
            "$SOAK_HEARTH" --master local sql --models "$SOAK_MODELS" --format json \
                -e "SELECT count(*) AS epochs FROM ML.TRAINING_INFO(MODEL soak)"
            echo "soak: load exit $?"
        "#;
        let mut command = fleet.command("unshare");
        command
            .args(["--user", "--map-root-user", "--mount", "sh", "-c", script])
            .env("SOAK_BYTES", bytes.to_string())
            .env("SOAK_MODELS", &mount)
            .env("SOAK_PREVIOUS", &previous)
            .env("SOAK_HEARTH", env!("CARGO_BIN_EXE_hearth"))
            .env("SOAK_JOB", job);
        let disk = format!(
            "a {} KiB tmpfs for a {} KiB model and its replacement",
            bytes / 1024,
            pages * 4
        );
        Self::spawn(command, dir.join("driver.log"), disk)
    }

    pub(super) fn spawn(mut command: Command, output: PathBuf, disk: String) -> Driver {
        let child = spawn_logged(command.env("RUST_LOG", DRIVER_LOG), &output);
        Driver {
            kind: DriverKind::Client(child),
            output,
            disk,
        }
    }

    /// The driver's process id (a cluster-mode job's, from its record).
    pub(super) fn pid(&self, fleet: &Fleet) -> Option<u64> {
        match &self.kind {
            DriverKind::Client(child) => Some(child.id().into()),
            DriverKind::Cluster { id } => job_record(fleet, id)?["pid"].as_u64(),
        }
    }

    /// How the driver ended, once it has.
    pub(super) fn ended(&mut self, fleet: &Fleet) -> Option<Ended> {
        let code = match &mut self.kind {
            DriverKind::Client(child) => child.try_wait().unwrap()?.code(),
            DriverKind::Cluster { id } => {
                // The scheduler records how the job ended; a scheduler killed meanwhile does not, and then the
                // driver's process says.
                let record = job_record(fleet, id)?;
                if record["pid"].as_u64().is_some_and(alive) {
                    return None;
                }
                record["exit_code"].as_i64().map(|code| code as i32)
            }
        };
        let output = std::fs::read_to_string(&self.output).unwrap_or_default();
        Some(Ended { code, output })
    }

    /// Kills the driver (and, in a namespace, what it runs).
    pub(super) fn kill(&mut self, fleet: &Fleet) {
        if let Some(pid) = self.pid(fleet) {
            for child in processes_of(&BTreeSet::new(), &[self.output.parent().unwrap()]) {
                let _ = Command::new("kill").args(["-9", &child.0.to_string()]).status();
            }
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
        }
        if let DriverKind::Client(child) = &mut self.kind {
            let _ = child.wait();
        }
    }
}

impl Drop for Driver {
    /// A client-mode driver still running when its run ends (a test that panicked) is killed.
    fn drop(&mut self) {
        if let DriverKind::Client(child) = &mut self.kind
            && child.try_wait().ok().flatten().is_none()
        {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The exit code of the small-disk script when it gets no mount namespace.
pub(super) const NO_NAMESPACE: i32 = 90;

/// A cluster-mode job's record, as its scheduler wrote it.
pub(super) fn job_record(fleet: &Fleet, id: &str) -> Option<Value> {
    let file = fleet.state.path().join(format!("scheduler/jobs/{id}/job.json"));
    serde_json::from_str(&std::fs::read_to_string(file).ok()?).ok()
}

/// 4 KiB pages the files under `dir` take on a tmpfs.
pub(super) fn pages_of(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|entry| {
            let meta = entry.metadata().unwrap();
            if meta.is_dir() {
                pages_of(&entry.path())
            } else {
                meta.len().div_ceil(4096)
            }
        })
        .sum()
}

/// Starts `command` with no input and its output (both streams) in a new file `log`.
pub(super) fn spawn_logged(command: &mut Command, log: &Path) -> Child {
    let log = File::create(log).unwrap();
    command
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap()
}
