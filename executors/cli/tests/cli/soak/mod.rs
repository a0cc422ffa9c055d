//! The fleet under randomized faults. Each run trains a model on a fleet of its own (a scheduler, three
//! executors of one slot) and injects one fault at a random point: an executor killed, an executor stopped
//! (SIGSTOP) for longer than the collectives' deadline, the driver killed, the scheduler killed and started
//! again on its port, a connection between two ranks dropped mid-allreduce (`ss -K`), the model directory's
//! file system filled (a small tmpfs in a mount namespace of the driver's own). Each run is then counted:
//! succeeded, failed with a clear error, or hung; processes and ports it left behind; a half-written model;
//! the epochs each retry lost. The table prints with `--nocapture` (RELIABILITY.md has a long run).
//!
//! `HEARTH_SOAK_RUNS` runs (default 12: each fault twice, CI's short version), `HEARTH_SOAK_SEED` repeats
//! a soak's random choices.

mod driver;
mod saves;

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use serde_json::Value;

use crate::common::{Fleet, TrainingSlots, shown};
use crate::faults::training_job;

use crate::procfs::{drop_a_rank_link, listening_ports, proc_strings, processes_of};
use driver::{Driver, DriverKind, Ended, NO_NAMESPACE, spawn_logged};

/// Epochs of the faulted job: long enough (several seconds) for a fault to land mid-training, after training
/// has been told from preprocessing (3 s) and a random delay (up to 3 s).
const EPOCHS: usize = 600;
/// The collectives' deadline the job sets (`timeout_seconds`): a stopped rank is given up after it.
const DEADLINE: Duration = Duration::from_secs(5);
/// How long a driver may take to end once its fault is injected before its job counts as hung.
const JOB_LIMIT: Duration = Duration::from_secs(240);
/// What the drivers log: warnings (a retry) and each epoch they hear of.
const DRIVER_LOG: &str = "warn,hearth::training=info";

/// One fault a run injects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    KillExecutor,
    StopExecutor,
    KillDriver,
    RestartScheduler,
    DropConnection,
    FillModelDisk,
}

const FAULTS: [Fault; 6] = [
    Fault::KillExecutor,
    Fault::StopExecutor,
    Fault::KillDriver,
    Fault::RestartScheduler,
    Fault::DropConnection,
    Fault::FillModelDisk,
];

impl Fault {
    fn name(self) -> &'static str {
        match self {
            Fault::KillExecutor => "kill an executor",
            Fault::StopExecutor => "SIGSTOP an executor",
            Fault::KillDriver => "kill the driver",
            Fault::RestartScheduler => "restart the scheduler",
            Fault::DropConnection => "drop a rank's connection",
            Fault::FillModelDisk => "fill the model's disk",
        }
    }

    /// Whether the fault can be given a job in cluster mode (the driver a child of the scheduler); the
    /// others need the driver in the soak's hands.
    fn any_mode(self) -> bool {
        !matches!(self, Fault::KillDriver | Fault::FillModelDisk)
    }
}

/// How a run's job ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    Succeeded,
    ClearError,
    UnclearError,
    Hung,
}

/// What one run did and left.
#[derive(Debug)]
struct Run {
    fault: Fault,
    cluster_mode: bool,
    /// What was injected, and when after training started.
    injected: String,
    /// Whether the fault reached the job (training had not ended, a connection was there to drop, …).
    landed: bool,
    outcome: Outcome,
    /// The epochs each retry trained again: the epoch under way when its attempt failed, less the epoch of
    /// the checkpoint it resumed from.
    epochs_lost: Vec<usize>,
    leftover_processes: Vec<String>,
    leftover_ports: Vec<u16>,
    half_written: Option<String>,
    /// After a scheduler restart: whether the fleet trained a model again.
    recovered: Option<bool>,
    seconds: f64,
    /// The error the job ended with, or why it counts as it does.
    said: String,
}

#[test]
fn a_fleet_under_randomized_faults_never_hangs_leaks_or_half_writes() {
    let runs: usize = std::env::var("HEARTH_SOAK_RUNS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(2 * FAULTS.len());
    let seed: u64 = std::env::var("HEARTH_SOAK_SEED")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| rand::rng().random());
    println!("soak: {runs} runs, HEARTH_SOAK_SEED={seed}");
    let mut rng = StdRng::seed_from_u64(seed);
    // Each fault as often as the others, in a random order.
    let mut faults: Vec<Fault> = FAULTS.iter().copied().cycle().take(runs).collect();
    faults.shuffle(&mut rng);
    let started = Instant::now();
    let mut done = Vec::new();
    for (index, fault) in faults.into_iter().enumerate() {
        let cluster_mode = fault.any_mode() && rng.random_bool(0.5);
        let keep = std::env::temp_dir().join(format!("hearth-soak-{seed}-run-{}", index + 1));
        let run = soak_run(fault, cluster_mode, &mut rng, &keep);
        println!("soak run {:>2}: {}", index + 1, run_line(&run));
        done.push(run);
    }
    println!("\n{}", table(&done, started.elapsed()));

    let mut failures: Vec<String> = done.iter().filter(|run| run.bad()).map(run_line).collect();
    for fault in FAULTS {
        let runs = done.iter().filter(|run| run.fault == fault).count();
        if runs > 0 && !done.iter().any(|run| run.fault == fault && run.landed) {
            failures.push(format!("{}: injected in none of its {runs} runs", fault.name()));
        }
    }
    assert!(failures.is_empty(), "HEARTH_SOAK_SEED={seed}:\n{}", failures.join("\n"));
}

impl Run {
    /// Whether the run shows something the fleet must never do.
    fn bad(&self) -> bool {
        matches!(self.outcome, Outcome::Hung | Outcome::UnclearError)
            || !self.leftover_processes.is_empty()
            || !self.leftover_ports.is_empty()
            || self.half_written.is_some()
            || self.epochs_lost.iter().any(|&lost| lost > 1)
            || self.recovered == Some(false)
    }
}

/// One run: a fleet, a job, one fault at a random point, and what it all left; a bad run's directories
/// (the fleet's logs, the job's output) are copied to `keep`.
fn soak_run(fault: Fault, cluster_mode: bool, rng: &mut StdRng, keep: &Path) -> Run {
    let started = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let fleet = Fleet::start_with_env(&["--executors", "3", "--slots", "1"], &[("RUST_LOG", "info")]);
    let mut pids: BTreeSet<u64> = fleet.pids().into_iter().collect();
    let ballista_ports = listening_ports(&pids);
    let models = dir.path().join("models");
    let job = training_job(
        dir.path(),
        "soak",
        EPOCHS,
        &format!(", timeout_seconds = {}", DEADLINE.as_secs()),
    );
    let mut run = Run {
        fault,
        cluster_mode,
        injected: String::new(),
        landed: false,
        outcome: Outcome::Hung,
        epochs_lost: Vec::new(),
        leftover_processes: Vec::new(),
        leftover_ports: Vec::new(),
        half_written: None,
        recovered: None,
        seconds: 0.0,
        said: String::new(),
    };

    let mut driver = match fault {
        Fault::FillModelDisk => Driver::on_a_small_disk(&fleet, dir.path(), &job, rng),
        _ if cluster_mode => Driver::cluster(&fleet, &job, &models),
        _ => Driver::client(&fleet, dir.path(), &job, &models),
    };
    pids.extend(driver.pid(&fleet));
    // Training has begun when it has held the same two slots for 3 s (its preprocessing holds two for a moment:
    // a driver killed then leaves no rank to say why it stopped); a driver that ends first is judged by what it
    // said.
    let mut early = None;
    let mut slots = TrainingSlots::default();
    let training = poll(Duration::from_secs(90), || {
        if let Some(ended) = driver.ended(&fleet) {
            early = Some(ended);
            return Some(false);
        }
        slots.seen(fleet.busy_executors()).map(|_| true)
    });
    let mut restarted = Restarted(None);
    if training == Some(true) && fault != Fault::FillModelDisk {
        let delay = Duration::from_millis(rng.random_range(200..3000));
        std::thread::sleep(delay);
        let injected = inject(fault, &fleet, &mut driver, &ballista_ports, rng);
        run.landed = injected.landed;
        run.injected = format!("{} {:.1} s into training", injected.what, delay.as_secs_f64());
        if let Some(scheduler) = injected.restarted {
            pids.insert(scheduler.id().into());
            restarted = Restarted(Some(scheduler));
        }
        if fault == Fault::KillDriver {
            (run.outcome, run.said) = after_driver_killed(&fleet);
            run.half_written = half_written(&fleet, &models);
        }
    } else if fault == Fault::FillModelDisk {
        run.injected = driver.disk.clone();
        run.landed = true;
    } else {
        run.injected = match training {
            Some(_) => "nothing: the job ended before training was seen".to_string(),
            None => "nothing: training was not seen within 90 s".to_string(),
        };
    }

    if fault != Fault::KillDriver || !run.landed {
        match early.or_else(|| poll(JOB_LIMIT, || driver.ended(&fleet))) {
            Some(ended) => {
                (run.outcome, run.said) = judge(&ended);
                run.epochs_lost = epochs_lost(&ended.output);
                if fault == Fault::FillModelDisk && ended.code == Some(NO_NAMESPACE) {
                    run.landed = false;
                    run.injected = "nothing: this machine gives no user a mount namespace (unshare)".to_string();
                } else if fault == Fault::FillModelDisk {
                    run.half_written = ended.disk_check_failure();
                } else {
                    run.half_written = half_written(&fleet, &models);
                }
            }
            None => {
                run.outcome = Outcome::Hung;
                run.said = format!("the driver did not end within {JOB_LIMIT:?}");
                driver.kill(&fleet);
            }
        }
    }
    if fault == Fault::RestartScheduler && run.landed {
        run.recovered = Some(trains_again(&fleet, dir.path()));
    }

    // Stop the fleet as its operator would (and the scheduler this soak started again), then count what is
    // left of the run.
    let _ = fleet.hearth().args(["cluster", "stop"]).output();
    drop(restarted);
    let marks = [fleet.state.path(), dir.path()];
    std::thread::sleep(Duration::from_millis(200));
    let lingering = poll(Duration::from_secs(15), || {
        let left = processes_of(&pids, &marks);
        left.is_empty().then_some(())
    });
    if lingering.is_none() {
        // What is left, and the ports it still listens on, counted before it is killed.
        let left = processes_of(&pids, &marks);
        let left_pids: BTreeSet<u64> = left.iter().map(|(pid, _)| *pid).collect();
        run.leftover_ports = listening_ports(&left_pids).into_iter().collect();
        for (pid, line) in left {
            run.leftover_processes.push(format!("{pid} {line}"));
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
        }
    }
    run.seconds = started.elapsed().as_secs_f64();
    if run.bad() {
        std::fs::create_dir_all(keep).unwrap();
        let copied = Command::new("cp")
            .arg("-a")
            .args([fleet.state.path(), dir.path()])
            .arg(keep)
            .status();
        if copied.is_ok_and(|status| status.success()) {
            let _ = write!(run.said, " (its logs: {})", keep.display());
        }
    }
    run
}

/// What an injection did.
struct Injected {
    what: String,
    landed: bool,
    /// The scheduler started again, when the fault was its restart.
    restarted: Option<Child>,
}

impl Injected {
    fn done(what: impl Into<String>) -> Self {
        Self {
            what: what.into(),
            landed: true,
            restarted: None,
        }
    }

    fn missed(what: impl Into<String>) -> Self {
        Self {
            what: what.into(),
            landed: false,
            restarted: None,
        }
    }
}

/// A scheduler the soak started again, killed when the run ends (or the test panics).
struct Restarted(Option<Child>);

impl Drop for Restarted {
    fn drop(&mut self) {
        if let Some(scheduler) = &mut self.0 {
            let _ = scheduler.kill();
            let _ = scheduler.wait();
        }
    }
}

/// Injects `fault` into the running job.
fn inject(
    fault: Fault,
    fleet: &Fleet,
    driver: &mut Driver,
    ballista_ports: &BTreeSet<u16>,
    rng: &mut StdRng,
) -> Injected {
    let signal = |signal: &str, pid: u64| {
        let _ = Command::new("kill").args([signal, &pid.to_string()]).status();
    };
    match fault {
        Fault::KillExecutor => {
            let executors = &fleet.pids()[1..];
            let pid = executors[rng.random_range(0..executors.len())];
            let busy = fleet.busy_executors().iter().any(|id| fleet.executor_pid(id) == pid);
            signal("-KILL", pid);
            Injected::done(format!(
                "killed executor {pid} ({})",
                if busy { "training" } else { "idle" }
            ))
        }
        Fault::StopExecutor => {
            let busy = fleet.busy_executors();
            if busy.is_empty() {
                return Injected::missed("nothing: training had ended");
            }
            let pid = fleet.executor_pid(&busy[rng.random_range(0..busy.len())]);
            let pause = DEADLINE + Duration::from_millis(rng.random_range(1000..4000));
            signal("-STOP", pid);
            std::thread::sleep(pause);
            signal("-CONT", pid);
            Injected::done(format!("stopped executor {pid} for {:.1} s", pause.as_secs_f64()))
        }
        Fault::KillDriver => {
            if driver.ended(fleet).is_some() {
                return Injected::missed("nothing: the job had ended");
            }
            let pid = driver.pid(fleet).unwrap();
            signal("-KILL", pid);
            if let DriverKind::Client(child) = &mut driver.kind {
                let _ = child.wait();
            }
            Injected::done(format!("killed driver {pid}"))
        }
        Fault::RestartScheduler => {
            let pid = fleet.pids()[0];
            let port = fleet.master.rsplit(':').next().unwrap().to_string();
            let args: Vec<String> = proc_strings(pid, "cmdline")
                .into_iter()
                .map(|arg| arg.replace("127.0.0.1:0", &format!("127.0.0.1:{port}")))
                .collect();
            let env: Vec<(String, String)> = proc_strings(pid, "environ")
                .into_iter()
                .filter_map(|pair| pair.split_once('=').map(|(k, v)| (k.to_string(), v.to_string())))
                .collect();
            signal("-KILL", pid);
            std::thread::sleep(Duration::from_millis(rng.random_range(200..2000)));
            let log = fleet.state.path().join("logs/scheduler-restarted.log");
            let scheduler = spawn_logged(Command::new(&args[0]).args(&args[1..]).env_clear().envs(env), &log);
            Injected {
                what: "scheduler restarted".to_string(),
                landed: true,
                restarted: Some(scheduler),
            }
        }
        Fault::DropConnection => match poll(Duration::from_secs(3), || {
            drop_a_rank_link(&fleet.pids()[1..], ballista_ports)
        }) {
            Some((a, b)) => Injected::done(format!("dropped the ranks' connection {a} ↔ {b}")),
            None => Injected::missed("found no connection between ranks to drop"),
        },
        Fault::FillModelDisk => unreachable!("the disk is filled by the driver's own namespace"),
    }
}

/// After a driver was killed: whether every rank stopped (the executors' slots free within a minute) and
/// an executor's log says why (each run has a fleet of its own, so its logs hold this job's ranks only).
fn after_driver_killed(fleet: &Fleet) -> (Outcome, String) {
    let freed = poll(Duration::from_secs(60), || {
        fleet.busy_executors().is_empty().then_some(())
    });
    let reason = poll(Duration::from_secs(10), || {
        fleet
            .executor_logs()
            .lines()
            .find(|line| line.contains("the driver is gone") || line.contains("cancelled"))
            .map(str::to_string)
    });
    match (freed, reason) {
        (None, _) => (
            Outcome::Hung,
            "the ranks still hold their slots a minute after".to_string(),
        ),
        (Some(()), Some(reason)) => (Outcome::ClearError, reason),
        (Some(()), None) => (
            Outcome::UnclearError,
            "the slots freed, but no executor says why its rank stopped".to_string(),
        ),
    }
}

/// Succeeded (the model trained), a clear error (the driver's `error:` line, no panic), or neither.
fn judge(ended: &Ended) -> (Outcome, String) {
    let trained = ended
        .output
        .lines()
        .any(|line| line.starts_with("| soak ") && line.contains("| trained "));
    let error = ended
        .output
        .lines()
        .find(|line| line.starts_with("error: ") && line.len() > "error: ".len() + 10);
    let panicked = ended.output.contains("panicked");
    match (trained, error) {
        (true, None) if ended.code.unwrap_or(0) == 0 && !panicked => {
            let attempts = ended.output.matches("retrying from").count() + 1;
            (Outcome::Succeeded, format!("{attempts} attempt(s)"))
        }
        (_, Some(error)) if !panicked => (Outcome::ClearError, error.to_string()),
        _ => (
            Outcome::UnclearError,
            format!(
                "exit {:?}, no clear error: {}",
                ended.code,
                ended.output.lines().rev().take(5).collect::<Vec<_>>().join(" / ")
            ),
        ),
    }
}

/// The epochs each retry in a driver's output lost: the epoch under way when its attempt failed (one past
/// the last the driver heard of) less the epoch it resumed from.
fn epochs_lost(output: &str) -> Vec<usize> {
    let mut last_epoch: usize = 0;
    let mut lost = Vec::new();
    for line in output.lines() {
        if line.contains("retrying from the start") {
            lost.push(last_epoch + 1);
            last_epoch = 0;
        } else if let Some(resumed) = number_after(line, "retrying from the checkpoint of epoch ") {
            lost.push((last_epoch + 1).saturating_sub(resumed));
            last_epoch = resumed;
        } else if let Some(epoch) = number_after(line, ": epoch ") {
            last_epoch = epoch;
        }
    }
    lost
}

/// The number right after `prefix` in `line`.
fn number_after(line: &str, prefix: &str) -> Option<usize> {
    let rest = &line[line.find(prefix)? + prefix.len()..];
    rest.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
}

/// What is half-written in `models` after a job: anything beside the model (a save's staging left), or a
/// model that does not load with every epoch.
fn half_written(fleet: &Fleet, models: &Path) -> Option<String> {
    let entries: Vec<String> = std::fs::read_dir(models)
        .map(|dir| {
            dir.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    if entries.iter().any(|name| name != "soak") {
        return Some(format!("{} holds {entries:?}", models.display()));
    }
    if entries.is_empty() {
        return None;
    }
    let loaded = fleet
        .hearth()
        .args(["--master", "local", "sql", "--format", "json", "--models"])
        .arg(models)
        .args(["-e", "SELECT max(epoch) AS epochs FROM ML.TRAINING_INFO(MODEL soak)"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&loaded.stdout);
    let epochs = text
        .lines()
        .find_map(|line| serde_json::from_str::<Value>(line).ok()?["epochs"].as_u64());
    (epochs != Some(EPOCHS as u64)).then(|| format!("the model saved does not load whole: {}", shown(&loaded)))
}

/// After a scheduler restart: whether the executors are back and a new job trains on them. (The fleet's
/// record names the scheduler `hearth cluster start` started, so these commands are given the master and
/// the secret, as any program that did not start the fleet is.)
fn trains_again(fleet: &Fleet, dir: &Path) -> bool {
    let hearth = || {
        let mut command = fleet.hearth();
        command
            .env("HEARTH_MASTER", &fleet.master)
            .env("HEARTH_SECRET_FILE", fleet.state.path().join("secret"));
        command
    };
    let back = poll(Duration::from_secs(90), || {
        let out = hearth().args(["status", "--json"]).output().ok()?;
        let status: Value = serde_json::from_slice(&out.stdout).ok()?;
        (status["executors"].as_array()?.len() >= 2).then_some(())
    });
    if back.is_none() {
        println!("soak: the executors did not register with the restarted scheduler within 90 s");
        return false;
    }
    let job = training_job(dir, "again", 5, "");
    let out = hearth()
        .args(["submit", "--models"])
        .arg(dir.join("again"))
        .arg(job)
        .output()
        .unwrap();
    if !out.status.success() {
        println!("soak: the job after the restart failed: {}", shown(&out));
    }
    out.status.success()
}

/// Polls `probe` every 200 ms for at most `limit`.
fn poll<T>(limit: Duration, mut probe: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(found) = probe() {
            return Some(found);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A run in one line.
fn run_line(run: &Run) -> String {
    let mut line = format!(
        "{:<24} {:<7} {:<12} {:>5.0} s  {}; {}",
        run.fault.name(),
        if run.cluster_mode { "cluster" } else { "client" },
        format!("{:?}", run.outcome),
        run.seconds,
        run.injected,
        run.said
    );
    if !run.epochs_lost.is_empty() {
        let _ = write!(line, "; epochs lost per retry {:?}", run.epochs_lost);
    }
    if let Some(recovered) = run.recovered {
        let _ = write!(line, "; trained again after: {recovered}");
    }
    if !run.leftover_processes.is_empty() {
        let _ = write!(line, "; LEFT PROCESSES {:?}", run.leftover_processes);
    }
    if !run.leftover_ports.is_empty() {
        let _ = write!(line, "; LEFT PORTS {:?}", run.leftover_ports);
    }
    if let Some(half) = &run.half_written {
        let _ = write!(line, "; HALF-WRITTEN: {half}");
    }
    line
}

/// The counts per fault and in all, as RELIABILITY.md shows them.
fn table(runs: &[Run], took: Duration) -> String {
    let mut text = String::from(
        "| fault | runs | not injected | succeeded | failed, clear error | failed, unclear | hung | left a process | left a port | half-written model | most epochs lost per retry |\n|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    let mut row = |name: &str, runs: Vec<&Run>| {
        let count = |outcome: Outcome| runs.iter().filter(|r| r.outcome == outcome).count();
        let _ = writeln!(
            text,
            "| {name} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            runs.len(),
            runs.iter().filter(|r| !r.landed).count(),
            count(Outcome::Succeeded),
            count(Outcome::ClearError),
            count(Outcome::UnclearError),
            count(Outcome::Hung),
            runs.iter().filter(|r| !r.leftover_processes.is_empty()).count(),
            runs.iter().filter(|r| !r.leftover_ports.is_empty()).count(),
            runs.iter().filter(|r| r.half_written.is_some()).count(),
            runs.iter()
                .flat_map(|r| r.epochs_lost.iter().copied())
                .max()
                .map_or("no retry".to_string(), |most| most.to_string()),
        );
    };
    for fault in FAULTS {
        row(fault.name(), runs.iter().filter(|r| r.fault == fault).collect());
    }
    row("all", runs.iter().collect());
    let _ = write!(text, "\n{} runs in {:.0} s", runs.len(), took.as_secs_f64());
    text
}
