//! The main job — in SQL and in Rust, its input and catalog in an object store — TLS, and shipped driver
//! programs on a fleet of three hosts ([`lab`](crate::lab)): a scheduler and the driver on one, an executor on
//! each other.

use std::path::{Path, PathBuf};

use crate::cluster::evaluation;
use crate::common::{dataset, hearth, repository, shown};
use crate::lab::{Lab, lab_or_skip, start_fleet};
use crate::s3::{self, S3Server};

/// The SQL main job.
const MAIN_JOB: &str = "examples/german_credit.sql";

#[test]
fn a_fleet_of_three_hosts_runs_the_main_job_with_the_local_metrics() {
    if let Some(lab) = lab_or_skip("a_fleet_of_three_hosts_runs_the_main_job_with_the_local_metrics") {
        main_job_on_three_hosts(lab, &FleetJob::main());
    }
}

#[test]
fn a_fleet_of_three_hosts_reads_the_main_jobs_input_from_an_s3_store() {
    let Some(mut lab) = lab_or_skip("a_fleet_of_three_hosts_reads_the_main_jobs_input_from_an_s3_store") else {
        return;
    };
    // The store on the first host's address. Every process of the lab holds the keys, as each machine of a
    // fleet has its own; only the driver knows where the store is, and its job tells the others.
    let input = dataset("german_credit/credit-g.csv");
    let store = S3Server::start(
        &lab.on_host(0),
        &lab.address(0),
        &["hearth-data"],
        &[("s3://hearth-data/german_credit/credit-g.csv", &input)],
    );
    lab.env = s3::credentials();
    let sql = std::fs::read_to_string(repository().join(MAIN_JOB)).unwrap();
    let from_store = sql.replace(
        "LOCATION 'datasets/german_credit/credit-g.csv'",
        "LOCATION 's3://hearth-data/german_credit/credit-g.csv'",
    );
    assert_ne!(sql, from_store, "the main job reads the dataset's CSV file");
    let jobs = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let job = jobs.path().join("german_credit_s3.sql");
    std::fs::write(&job, from_store).unwrap();
    // The model catalog in the store too: nothing but the store is shared between the driver and the
    // executors, which read the held-out rows of ML.EVALUATE from there.
    let job = FleetJob {
        sql: &job,
        models: Some("s3://hearth-data/models"),
        driver_env: &store.driver_env(),
    };
    let (lab, master, evaluated) = main_job_on_three_hosts(lab, &job);
    // A second `hearth sql` process, with nothing in its cache, finds the model in the store and evaluates
    // it the same on the fleet.
    let cache = tempfile::tempdir().unwrap();
    let again = lab
        .hearth_on(
            0,
            &["sql", "--master", &master, "--models", "s3://hearth-data/models", "-e"],
        )
        .arg("SHOW MODELS; SELECT * FROM ML.EVALUATE(MODEL credit_risk)")
        .envs(store.driver_env())
        .env("HEARTH_CACHE", cache.path())
        .output()
        .unwrap();
    assert!(again.status.success(), "{}", shown(&again));
    assert_eq!(evaluation(&String::from_utf8_lossy(&again.stdout)), evaluated);
}

#[test]
fn the_rust_main_job_on_three_hosts_reads_its_input_from_an_s3_store_with_the_local_metrics() {
    let test = "the_rust_main_job_on_three_hosts_reads_its_input_from_an_s3_store_with_the_local_metrics";
    let Some(mut lab) = lab_or_skip(test) else {
        return;
    };
    let program = example("german_credit");
    let store = S3Server::start(
        &lab.on_host(0),
        &lab.address(0),
        &["hearth-data"],
        &[("s3://hearth-data/credit-g.csv", &dataset("german_credit/credit-g.csv"))],
    );
    lab.env = s3::credentials();
    let scheduler = start_fleet(&mut lab, &[]);
    let saved = tempfile::tempdir().unwrap();
    let local = std::process::Command::new(&program)
        .arg(saved.path().join("local"))
        .env("HEARTH_MASTER", "local[2]")
        .env_remove("HEARTH_CREDIT_CSV")
        .output()
        .unwrap();
    assert!(local.status.success(), "{}", shown(&local));
    let fleet_saved = saved.path().join("fleet");
    let on_fleet = lab
        .program_on(0, &program, &[fleet_saved.to_str().unwrap()])
        .env("HEARTH_MASTER", format!("df://{scheduler}"))
        .env("HEARTH_CREDIT_CSV", "s3://hearth-data/credit-g.csv")
        .envs(store.driver_env())
        .output()
        .unwrap();
    let logs = format!("{}\n{}", lab.log("executor-1"), lab.log("executor-2"));
    assert!(on_fleet.status.success(), "{}\n{logs}", shown(&on_fleet));
    let metrics = |output: &std::process::Output| -> String {
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        let evaluation = stdout.split("Evaluation on the").nth(1).unwrap_or_default();
        evaluation
            .split("Saved the fitted pipeline")
            .next()
            .unwrap_or_default()
            .to_string()
    };
    assert!(metrics(&local).contains("areaUnderROC"), "{}", shown(&local));
    assert_eq!(metrics(&on_fleet), metrics(&local), "the same metrics on the fleet");
    for i in 1..3 {
        let executor = lab.log(&format!("executor-{i}"));
        assert!(executor.contains("Execute task"), "executor {i} ran tasks:\n{executor}");
    }
}

#[test]
fn a_fleet_of_three_hosts_over_tls_runs_the_main_job_with_the_local_metrics() {
    let Some(mut lab) = lab_or_skip("a_fleet_of_three_hosts_over_tls_runs_the_main_job_with_the_local_metrics") else {
        return;
    };
    // A certificate per role, naming the hosts' addresses; where every host sees it (not /tmp).
    let certs = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let dir = certs.path().join("tls");
    let mut command = hearth();
    command.args(["cluster", "certs", "--out"]).arg(&dir);
    for i in 0..3 {
        command.args(["--host", &lab.address(i)]);
    }
    let made = command.output().unwrap();
    assert!(made.status.success(), "{}", shown(&made));
    lab.tls = Some(dir);
    main_job_on_three_hosts(lab, &FleetJob::main());
}

#[test]
fn a_driver_program_runs_its_functions_on_hosts_that_lack_it() {
    let Some(mut lab) = lab_or_skip("a_driver_program_runs_its_functions_on_hosts_that_lack_it") else {
        return;
    };
    // HorovodRunner's example only on the driver's host: in its /tmp, which the executors' hosts do not see.
    let built = example("horovod_runner");
    let driver_only = tempfile::tempdir_in("/tmp").unwrap();
    let program = driver_only.path().join("horovod_runner");
    std::fs::copy(&built, &program).unwrap();
    let scheduler = start_fleet(&mut lab, &["--run-shipped-programs"]);
    let master = format!("df://{scheduler}");
    let run = lab
        .program_on(0, &program, &["--master", &master, "--np", "2", "--epochs", "1"])
        .output()
        .unwrap();
    let logs = format!("{}\n{}", lab.log("executor-1"), lab.log("executor-2"));
    assert!(run.status.success(), "{}\n{logs}", shown(&run));
    let output = String::from_utf8_lossy(&run.stdout);
    let accuracy: f64 = output
        .lines()
        .find_map(|line| line.split("training accuracy ").nth(1))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no training accuracy in:\n{}", shown(&run)));
    assert!(accuracy > 0.85, "training accuracy {accuracy}: {}", shown(&run));
    // Each executor fetched the build from the driver once, and ran its tasks in it.
    for i in 1..3 {
        let executor = lab.log(&format!("executor-{i}"));
        assert_eq!(
            executor.matches("fetched the driver program").count(),
            1,
            "executor {i}:\n{executor}"
        );
    }
}

/// A SQL job driven from the lab's first host.
struct FleetJob<'a> {
    /// Its file.
    sql: &'a Path,
    /// Its model catalog, when not a directory the hosts share.
    models: Option<&'a str>,
    /// The driver's variables.
    driver_env: &'a [(String, String)],
}

impl FleetJob<'static> {
    /// The SQL main job, its catalog on a disk every host sees.
    fn main() -> Self {
        FleetJob {
            sql: Path::new(MAIN_JOB),
            models: None,
            driver_env: &[],
        }
    }
}

/// A scheduler on the lab's first host, an executor of one slot on each other, and `job` driven from the
/// first host: it gives the metrics of the main job run locally, and both executors run its tasks. Returns
/// the lab, its master and the fleet's evaluation table.
fn main_job_on_three_hosts(mut lab: Lab, job: &FleetJob) -> (Lab, String, String) {
    let scheduler = start_fleet(&mut lab, &[]);
    // Unless the job names a store, the model catalog is on a disk every host sees (as an NFS mount would
    // be): the executors read the evaluation the driver writes there. Not /tmp, which is each executor's own.
    let models = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let local = hearth()
        .current_dir(repository())
        .args(["--master", "local", "sql", "--models"])
        .arg(models.path().join("local"))
        .arg(MAIN_JOB)
        .output()
        .unwrap();
    assert!(local.status.success(), "{}", shown(&local));
    let fleet_models = job.models.map_or_else(|| models.path().join("fleet"), PathBuf::from);
    let on_fleet = lab
        .hearth_on(0, &["sql", "--master", &format!("df://{scheduler}"), "--models"])
        .arg(fleet_models)
        .arg(job.sql)
        .envs(job.driver_env.iter().map(|(name, value)| (name, value)))
        .output()
        .unwrap();
    let logs = || {
        format!(
            "{}\n{}\n{}",
            lab.log("scheduler"),
            lab.log("executor-1"),
            lab.log("executor-2")
        )
    };
    assert!(on_fleet.status.success(), "{}\n{}", shown(&on_fleet), logs());
    // The same metrics; a sum over rows split across two hosts may differ in its last digits.
    let (fleet, local) = (
        evaluation(&String::from_utf8_lossy(&on_fleet.stdout)),
        evaluation(&String::from_utf8_lossy(&local.stdout)),
    );
    let metrics = |table: &str| -> Vec<String> { table.split('|').map(|cell| cell.trim().to_string()).collect() };
    for (on_fleet, locally) in metrics(&fleet).iter().zip(metrics(&local)) {
        match (on_fleet.parse::<f64>(), locally.parse::<f64>()) {
            (Ok(a), Ok(b)) => assert!((a - b).abs() <= 1e-9 * b.abs().max(1.0), "{fleet}\nlocally:\n{local}"),
            _ => assert_eq!(*on_fleet, locally, "the same metrics"),
        }
    }
    let log = logs();
    if lab.tls.is_some() {
        assert!(lab.log("scheduler").contains("TLS on"), "the fleet speaks TLS:\n{log}");
    }
    for i in 1..3 {
        let registered = format!("host: Some(\"{}\")", lab.address(i));
        assert!(
            lab.log("scheduler").contains(&registered),
            "executor {i} registered from its own address:\n{log}"
        );
        // One slot each: the training stage's two ranks ran on both hosts, over the lab's links.
        let executor = lab.log(&format!("executor-{i}"));
        assert!(executor.contains("Execute task"), "executor {i} ran tasks:\n{executor}");
        // Its work folder (shuffle files, spilled rows, shipped programs) is its user's alone.
        let folders = lab.temporary_folders(&format!("executor-{i}"));
        let work: Vec<_> = (folders.iter())
            .filter(|(name, _)| name.starts_with("hearth-scratch-executor-"))
            .collect();
        assert!(!work.is_empty(), "executor {i}'s work folder in its /tmp: {folders:?}");
        assert!(work.iter().all(|(_, mode)| *mode == 0o700), "executor {i}: {work:?}");
    }
    (lab, format!("df://{scheduler}"), fleet)
}

/// The example program `name`, which `cargo test --workspace` builds beside `hearth`.
fn example(name: &str) -> PathBuf {
    let built = PathBuf::from(env!("CARGO_BIN_EXE_hearth"))
        .with_file_name("examples")
        .join(name);
    assert!(
        built.exists(),
        "{} is missing: `cargo test --workspace` builds the examples",
        built.display()
    );
    built
}
