//! A fleet's faults as users meet them: a scheduler that is down, a job that asks for GPUs the fleet lacks,
//! a job killed mid-training, an executor killed while a cluster-mode job trains.

use std::net::TcpListener;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{Fleet, TrainingSlots, hearth, shown, wait_for};

/// A SQL job training a small MLP on german_credit for `epochs` epochs on two workers, with `options`.
pub(crate) fn training_job(dir: &Path, name: &str, epochs: usize, options: &str) -> String {
    let file = dir.join(format!("{name}.sql"));
    let sql = format!(
        "CREATE EXTERNAL TABLE credit STORED AS CSV LOCATION 'datasets/german_credit/credit-g.csv' \
         OPTIONS ('format.has_header' 'true');
         CREATE OR REPLACE MODEL {name}
         OPTIONS (model_type = 'mlp_classifier', input_label_cols = ['class'], hidden_units = [8],
                  max_iterations = {epochs}, batch_size = 32, workers = 2, seed = 3{options})
         TRANSFORM (ML.VECTOR_ASSEMBLER(duration, credit_amount, age) OVER () AS features, class)
         AS SELECT * FROM credit;"
    );
    std::fs::write(&file, sql).unwrap();
    file.display().to_string()
}

#[test]
fn submitting_to_a_scheduler_that_is_down_fails_in_seconds() {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let started = Instant::now();
    let out = hearth()
        .args([
            "submit",
            "--master",
            &format!("df://127.0.0.1:{port}"),
            "examples/german_credit.sql",
        ])
        .current_dir(crate::common::repository())
        .output()
        .unwrap();
    let error = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{}", shown(&out));
    assert!(
        error.contains(&format!("127.0.0.1:{port}")) && error.contains("is the scheduler running?"),
        "{error}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );
}

#[test]
fn gpus_missing_a_killed_job_and_a_killed_executor() {
    let fleet = Fleet::start(&["--executors", "3", "--slots", "1"]);
    let jobs = tempfile::tempdir().unwrap();
    let models = jobs.path().join("models");
    let models = models.to_str().unwrap();

    // A job asking for GPUs on a fleet without any fails before training, naming both.
    let started = Instant::now();
    let gpu = fleet
        .hearth()
        .args(["submit", "--models", models])
        .arg(training_job(jobs.path(), "on_gpu", 2, ", device = 'cuda'"))
        .output()
        .unwrap();
    let error = String::from_utf8_lossy(&gpu.stderr);
    assert_eq!(gpu.status.code(), Some(1), "{}", shown(&gpu));
    assert!(
        error.contains("needs 2 GPUs at once") && error.contains(&format!("{} can give 0 tasks a GPU", fleet.master)),
        "{error}"
    );
    assert!(started.elapsed() < Duration::from_secs(30));

    // `job kill` mid-training: the driver and every rank stop, the slots free again.
    let id = fleet.submit_cluster(
        &training_job(jobs.path(), "endless", 100_000, ""),
        &["--models", models],
    );
    training_slots(&fleet);
    let killed = fleet.ok(&["job", "kill", &id]);
    assert!(killed.contains("killed"), "{killed}");
    assert_eq!(fleet.job_state(&id)["state"], "killed");
    wait_for("the killed job's slots free", Duration::from_secs(20), || {
        fleet.busy_executors().is_empty().then_some(())
    });
    let said = |logs: &str| {
        ["cancelled in epoch", "the driver is gone", "(the stage was cancelled)"]
            .iter()
            .any(|reason| logs.contains(reason))
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while !said(&fleet.executor_logs()) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
    }
    let logs = fleet.executor_logs();
    let last: Vec<&str> = logs.lines().rev().take(40).collect();
    assert!(
        said(&logs),
        "no executor log says why the killed job's ranks stopped; the logs end:\n{}\njob logs:\n{}",
        last.into_iter().rev().collect::<Vec<_>>().join("\n"),
        fleet.ok(&["job", "logs", &id])
    );

    // An executor killed while a cluster-mode job trains: the stage is retried from its checkpoint on the
    // two executors left, and the job succeeds on its second attempt.
    let id = fleet.submit_cluster(&training_job(jobs.path(), "survivor", 300, ""), &["--models", models]);
    let busy = training_slots(&fleet);
    let pid = fleet.executor_pid(&busy[0]);
    nix_kill(pid);
    let job: Value = fleet.job_ended(&id, Duration::from_secs(240));
    let logs = fleet.ok(&["job", "logs", &id]);
    assert_eq!(job["state"], "succeeded", "{job}\n{logs}");
    assert!(
        logs.contains("attempt 1 of 3 failed"),
        "the retry shows in the output: {logs}"
    );
    assert_eq!(attempts(&logs), Some(2), "CREATE MODEL says 2 attempts: {logs}");

    // `cluster stop` while a cluster-mode job trains: its driver ends with the scheduler, and its record
    // says why.
    let id = fleet.submit_cluster(
        &training_job(jobs.path(), "interrupted", 100_000, ""),
        &["--models", models],
    );
    training_slots(&fleet);
    let driver = fleet.job_state(&id)["pid"]
        .as_u64()
        .expect("a running job has a driver pid");
    fleet.ok(&["cluster", "stop"]);
    assert!(!crate::common::alive(driver), "driver {driver} outlived its scheduler");
    let record = fleet.state.path().join(format!("scheduler/jobs/{id}/job.json"));
    let record: Value = serde_json::from_str(&std::fs::read_to_string(&record).unwrap()).unwrap();
    assert_eq!(record["state"], "killed", "{record}");
    assert_eq!(record["message"], "the scheduler stopped", "{record}");
}

/// The two executors a training job's ranks hold, once it trains ([`TrainingSlots`]): a job killed, or a
/// task lost, during its preprocessing never reaches training.
fn training_slots(fleet: &Fleet) -> Vec<String> {
    let mut slots = TrainingSlots::default();
    wait_for("training holds two slots for 3 s", Duration::from_secs(90), || {
        slots.seen(fleet.busy_executors())
    })
}

/// The `attempts` column of the table CREATE MODEL printed.
fn attempts(output: &str) -> Option<u64> {
    let mut lines = output
        .lines()
        .map(|line| line.split('|').map(str::trim).collect::<Vec<_>>());
    let header = lines.find(|cells| cells.contains(&"attempts"))?;
    let column = header.iter().position(|cell| *cell == "attempts")?;
    lines.find_map(|cells| cells.get(column)?.parse().ok())
}

/// Kills process `pid` without warning (as a machine that dies).
fn nix_kill(pid: u64) {
    let status = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}
