//! A job whose driver died resumes from its last checkpoint: a cluster-mode SQL job on the three-host lab
//! trains six epochs, its input and its checkpoints in the S3 server; its driver is killed (SIGKILL, as a
//! lost machine would end it) once epoch 3's checkpoint is kept, and `hearth job resume` finishes the job
//! from the last checkpoint kept, training at most one epoch a second time.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use crate::common::{shown, wait_for};
use crate::lab::{Lab, lab_or_skip, start_fleet_reading};
use crate::s3::S3Server;

/// The job: six epochs over the store's rows, one batch of 8 rows at a time on both executors (so an epoch
/// takes long enough to kill the driver within it), its checkpoints in the store.
const RESUMABLE_JOB: &str = "\
CREATE EXTERNAL TABLE readings STORED AS CSV LOCATION 's3://hearth-lab/data/readings.csv'
OPTIONS ('format.has_header' 'true');

CREATE MODEL alarm
OPTIONS (model_type = 'mlp_classifier', input_label_cols = ['alarm'], hidden_units = [32],
         max_iterations = 6, batch_size = 8, seed = 3, workers = 2,
         checkpoint_dir = 's3://hearth-lab/checkpoints')
AS SELECT * FROM readings;

SELECT epoch FROM ML.TRAINING_INFO(MODEL alarm);
";

/// Rows of five readings and an alarm raised when the first two add up to more than 1.
fn readings(rows: usize) -> String {
    let mut csv = String::from("a,b,c,d,e,alarm\n");
    for i in 0..rows {
        let value = |k: usize| ((i * (7 + 2 * k) + k * 13) % 101) as f64 / 50.0 - 1.0;
        let (a, b) = (value(0), value(1));
        let _ = writeln!(
            csv,
            "{a:.3},{b:.3},{:.3},{:.3},{:.3},{}",
            value(2),
            value(3),
            value(4),
            u8::from(a + b > 1.0)
        );
    }
    csv
}

#[test]
fn a_driver_killed_after_epoch_three_of_six_is_resumed_from_its_last_checkpoint() {
    let test = "a_driver_killed_after_epoch_three_of_six_is_resumed_from_its_last_checkpoint";
    let Some(mut lab) = lab_or_skip(test) else {
        return;
    };
    let data = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let input = data.path().join("readings.csv");
    std::fs::write(&input, readings(60_000)).unwrap();
    let store = S3Server::start(
        &lab.on_host(0),
        &lab.address(0),
        &["hearth-lab"],
        &[("s3://hearth-lab/data/readings.csv", &input)],
    );
    // The scheduler passes its environment on to the drivers it starts: the store's address, and the
    // training progress in their logs.
    lab.env = store.driver_env();
    lab.env.push(("RUST_LOG".into(), "warn,hearth::training=info".into()));
    let scheduler = start_fleet_reading(&mut lab, &["s3://hearth-lab/"], &[]);
    let master = format!("df://{scheduler}");
    let job = data.path().join("resumable.sql");
    std::fs::write(&job, RESUMABLE_JOB).unwrap();
    // The catalog in the store too, under the fleet's data roots like everything a cluster-mode job names.
    let submitted = lab
        .hearth_on(0, &["--master", &master, "submit", "--deploy-mode", "cluster"])
        .args(["--models", "s3://hearth-lab/models"])
        .arg(&job)
        .output()
        .unwrap();
    assert!(submitted.status.success(), "{}", shown(&submitted));
    // Submitted job driver-… (resumable) to df://…
    let stdout = String::from_utf8_lossy(&submitted.stdout);
    let id = stdout.split_whitespace().nth(2).unwrap().to_string();
    let log = lab.logs.path().join("scheduler-work/jobs").join(&id).join("driver.log");
    let driver_log = || std::fs::read_to_string(&log).unwrap_or_default();

    let deadline = Instant::now() + Duration::from_secs(180);
    while !driver_log().contains("checkpoint of epoch 3 kept") {
        assert!(
            Instant::now() < deadline,
            "epoch 3's checkpoint was not kept within 180 s:\n{}",
            driver_log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let pid = job_record(&lab, &master, &id)["pid"]
        .as_u64()
        .expect("the driver's pid");
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status();
    assert!(killed.unwrap().success());
    let record = wait_for("the job ends", Duration::from_secs(30), || {
        let record = job_record(&lab, &master, &id);
        (record["state"] != "running").then_some(record)
    });
    assert_eq!(record["state"], "failed", "{record}");
    let first_run = driver_log();
    assert!(
        !first_run.contains("epoch 6 of 6"),
        "the driver was killed before training ended:\n{first_run}"
    );
    let kept_in = format!("checkpoint of epoch 3 kept in s3://hearth-lab/checkpoints/{id}/hearth.train-");
    assert!(
        first_run.contains(&kept_in),
        "the checkpoints are in the store:\n{first_run}"
    );

    let resumed = lab
        .hearth_on(0, &["--master", &master, "job", "resume", &id])
        .output()
        .unwrap();
    assert!(resumed.status.success(), "{}", shown(&resumed));
    let record = wait_for("the resumed job ends", Duration::from_secs(240), || {
        let record = job_record(&lab, &master, &id);
        (record["state"] != "running").then_some(record)
    });
    let whole = driver_log();
    assert_eq!(record["state"], "succeeded", "{record}\n{whole}");
    assert_eq!(record["resumes"], 1, "{record}");
    let second_run = &whole[first_run.len()..];
    finished_from_the_checkpoint(&first_run, second_run);
}

/// The second run resumed from a checkpoint of epoch 3 or later, trained only the epochs after it, and at
/// most one epoch trained in the first run is trained again; the model's history holds all six epochs.
fn finished_from_the_checkpoint(first_run: &str, second_run: &str) {
    let resumed_from: usize = second_run
        .split("resuming from the checkpoint of epoch ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("the second run resumed from a checkpoint:\n{second_run}"));
    assert!(
        (3..6).contains(&resumed_from),
        "resumed from epoch {resumed_from}:\n{second_run}"
    );
    let trained = |run: &str| -> Vec<usize> {
        run.split(": epoch ")
            .skip(1)
            .filter_map(|rest| rest.split_whitespace().next()?.parse().ok())
            .collect()
    };
    let (before, after) = (trained(first_run), trained(second_run));
    assert_eq!(
        after,
        ((resumed_from + 1)..=6).collect::<Vec<_>>(),
        "the second run trains the epochs after its checkpoint:\n{second_run}"
    );
    let again = before.iter().filter(|epoch| after.contains(epoch)).count();
    assert!(again <= 1, "epochs {before:?} then {after:?}: {again} trained twice");
    // ML.TRAINING_INFO lists every epoch, the first run's from the checkpoint's history.
    let listed: Vec<usize> = second_run
        .lines()
        .filter_map(|line| line.trim().trim_matches('|').trim().parse().ok())
        .collect();
    assert_eq!(listed, (1..=6).collect::<Vec<_>>(), "{second_run}");
}

/// Job `id`'s record, asked from the lab's first host.
fn job_record(lab: &Lab, master: &str, id: &str) -> serde_json::Value {
    let out = lab
        .hearth_on(0, &["--master", master, "job", "status", id, "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", shown(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}
