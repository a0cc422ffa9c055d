//! Outputs in an S3-compatible store (moto's server on loopback): `hearth fit-transform` and `transform`
//! write their features straight from the tasks to the store — on a fleet and on `local[N]` — committed once
//! by the driver under Spark's save modes, readable by pyarrow through the S3 API; a job killed while it
//! writes leaves nothing in the destination.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::commands::CreditFiles;
use crate::common::{Fleet, dataset, hearth, pyarrow_reads, shown};
use crate::s3::{self, S3Server};

/// The bucket the tests read from and write to.
const BUCKET: &str = "hearth-data";

/// `command` pointed at `store`: its endpoint and keys.
fn with_store<'c>(command: &'c mut Command, store: &S3Server) -> &'c mut Command {
    command.envs(store.driver_env())
}

/// The part files under `prefix/`, by name, then the marker.
fn written(store: &S3Server, prefix: &str) -> Vec<String> {
    let mut keys: Vec<String> = store
        .keys(BUCKET, &format!("{prefix}/"))
        .into_iter()
        .map(|key| key.trim_start_matches(&format!("{prefix}/")).to_string())
        .collect();
    keys.sort_by_key(|name| (name == "_SUCCESS", name.clone()));
    keys
}

/// Checks a committed output — part files named as Spark names them, then `_SUCCESS`; no staging file left
/// in the bucket but those of the killed writes' `leftovers` — and returns how many parts it holds.
fn assert_committed(store: &S3Server, prefix: &str, leftovers: &[String]) -> usize {
    let names = written(store, prefix);
    assert_eq!(names.last().map(String::as_str), Some("_SUCCESS"), "{names:?}");
    let parts = names.len() - 1;
    assert!(parts >= 1, "{names:?}");
    for name in &names[..parts] {
        assert!(
            name.starts_with("part-") && name.ends_with(".snappy.parquet"),
            "{names:?}"
        );
    }
    let staging_of = |key: &str| key.split('/').next().unwrap_or_default().to_string();
    let killed: Vec<String> = leftovers.iter().map(|key| staging_of(key)).collect();
    let staging: Vec<String> = (store.keys(BUCKET, "").into_iter())
        .filter(|key| key.contains("hearth-staging") && !killed.contains(&staging_of(key)))
        .collect();
    assert!(staging.is_empty(), "the staging files are removed: {staging:?}");
    parts
}

/// `hearth --master MASTER transform MODEL INPUT --select features,class --mode MODE --output OUTPUT`.
fn transform(hearth: &mut Command, master: &str, model: &Path, input: &str, mode: &str, output: &str) -> Output {
    hearth
        .args(["--master", master, "transform"])
        .arg(model)
        .arg(input)
        .args(["--select", "features,class", "--mode", mode, "--output", output])
        .output()
        .unwrap()
}

#[test]
fn features_go_from_the_tasks_to_an_s3_store_under_spark_save_modes() {
    let input = dataset("german_credit/credit-g.csv");
    let store = S3Server::start(
        &[],
        "127.0.0.1",
        &[BUCKET],
        &[("s3://hearth-data/credit-g.csv", &input)],
    );
    let files = CreditFiles::new();
    // The executors hold the keys; the endpoint reaches them with each job.
    let credentials = s3::credentials();
    let env: Vec<(&str, &str)> = credentials.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let fleet = Fleet::start_with_env(&["--executors", "2", "--slots", "2"], &env);

    let fit = with_store(&mut fleet.hearth(), &store)
        .args(["--master", &fleet.master, "fit-transform"])
        .args([&files.spec, Path::new("s3://hearth-data/credit-g.csv"), &files.model])
        .args(["--select", "features,class", "--output", "s3://hearth-data/features"])
        .output()
        .unwrap();
    assert!(fit.status.success(), "{}", shown(&fit));
    assert!(
        String::from_utf8_lossy(&fit.stdout).contains("wrote 1000 rows"),
        "{}",
        shown(&fit)
    );
    let parts = assert_committed(&store, "features", &[]);
    assert_eq!(
        pyarrow_reads("hearth-data/features", Some(&store.endpoint)),
        "1000 2 float 11 True"
    );

    // The same from an embedded session, beside the fleet's output (a name it starts with).
    let local = transform(
        with_store(&mut hearth(), &store),
        "local[3]",
        &files.model,
        input.to_str().unwrap(),
        "error",
        "s3://hearth-data/features-local",
    );
    assert!(local.status.success(), "{}", shown(&local));
    let local_parts = assert_committed(&store, "features-local", &[]);
    assert_eq!(
        pyarrow_reads("hearth-data/features-local", Some(&store.endpoint)),
        "1000 2 float 11 True"
    );

    // Spark's save modes, on the fleet: error refuses, append adds, overwrite replaces.
    let on_fleet = |mode: &str| {
        let features = "s3://hearth-data/features";
        let mut command = fleet.hearth();
        transform(
            with_store(&mut command, &store),
            &fleet.master,
            &files.model,
            "s3://hearth-data/credit-g.csv",
            mode,
            features,
        )
    };
    let refused = on_fleet("error");
    assert_eq!(refused.status.code(), Some(1), "{}", shown(&refused));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("already exists"),
        "{}",
        shown(&refused)
    );
    let appended = on_fleet("append");
    assert!(appended.status.success(), "{}", shown(&appended));
    assert_eq!(
        pyarrow_reads("hearth-data/features", Some(&store.endpoint)),
        "2000 2 float 11 True"
    );
    let replaced = on_fleet("overwrite");
    assert!(replaced.status.success(), "{}", shown(&replaced));
    assert_eq!(
        pyarrow_reads("hearth-data/features", Some(&store.endpoint)),
        "1000 2 float 11 True"
    );
    assert_eq!(
        assert_committed(&store, "features", &[]),
        parts,
        "the replaced files are gone"
    );
    assert_eq!(
        assert_committed(&store, "features-local", &[]),
        local_parts,
        "a sibling is left alone"
    );

    // A whole bucket is no destination: an overwrite there would remove everything in it.
    let bucket = transform(
        with_store(&mut hearth(), &store),
        "local[1]",
        &files.model,
        input.to_str().unwrap(),
        "overwrite",
        "s3://hearth-data/",
    );
    assert_eq!(bucket.status.code(), Some(1), "{}", shown(&bucket));
    assert!(
        String::from_utf8_lossy(&bucket.stderr).contains("names a whole bucket"),
        "{}",
        shown(&bucket)
    );
    assert_eq!(assert_committed(&store, "features", &[]), parts, "nothing removed");
}

#[test]
fn a_write_to_a_store_killed_before_its_commit_leaves_nothing_there() {
    let store = S3Server::start(&[], "127.0.0.1", &[BUCKET], &[]);
    let files = CreditFiles::new();
    let fit = hearth()
        .args(["--master", "local[2]", "fit"])
        .args([&files.spec, &files.data, &files.model])
        .output()
        .unwrap();
    assert!(fit.status.success(), "{}", shown(&fit));
    // An input large enough that its eight partitions finish one after another: 400,000 rows.
    let csv = std::fs::read_to_string(&files.data).unwrap();
    let (header, rows) = csv.split_once('\n').unwrap();
    let large = files.dir.path().join("large.csv");
    std::fs::write(&large, format!("{header}\n{}", rows.repeat(400))).unwrap();

    let mut running = with_store(&mut hearth(), &store)
        .args(["--master", "local[8]", "transform"])
        .arg(&files.model)
        .arg(&large)
        .args(["--select", "features,class", "--output", "s3://hearth-data/large"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Killed once the first task's file is in the staging prefix, before the driver commits.
    let deadline = Instant::now() + Duration::from_secs(240);
    let staged = loop {
        let staged: Vec<String> = store
            .keys(BUCKET, "")
            .into_iter()
            .filter(|k| k.contains("hearth-staging"))
            .collect();
        if !staged.is_empty() || running.try_wait().unwrap().is_some() || Instant::now() > deadline {
            break staged;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let _ = running.kill();
    let status = running.wait().unwrap();
    assert!(
        !staged.is_empty() && !status.success(),
        "killed while its tasks wrote ({status:?}, {staged:?})"
    );
    assert_eq!(
        written(&store, "large"),
        Vec::<String>::new(),
        "nothing visible in the destination"
    );

    // The next write to the destination finds it empty, and commits whole.
    let again = transform(
        with_store(&mut hearth(), &store),
        "local[2]",
        &files.model,
        files.data.to_str().unwrap(),
        "error",
        "s3://hearth-data/large",
    );
    assert!(again.status.success(), "{}", shown(&again));
    assert_committed(&store, "large", &staged);
}

#[test]
fn a_fleet_writes_a_directory_every_executor_sees_from_its_tasks() {
    let files = CreditFiles::new();
    let fleet = Fleet::start(&["--executors", "2", "--slots", "2"]);
    // The same machine's disk: every executor sees the driver's directory, as an NFS mount would be.
    let out = files.dir.path().join("features");
    let fit = fleet
        .hearth()
        .args(["--master", &fleet.master, "fit-transform"])
        .args([&files.spec, &files.data, &files.model])
        .args(["--select", "features,class", "--output"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(fit.status.success(), "{}", shown(&fit));
    let mut names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort_by_key(|name| (name == "_SUCCESS", name.clone()));
    assert_eq!(names.last().map(String::as_str), Some("_SUCCESS"), "{names:?}");
    for (part, name) in names[..names.len() - 1].iter().enumerate() {
        assert!(
            name.starts_with(&format!("part-{part:05}-")) && name.ends_with(".snappy.parquet"),
            "{names:?}"
        );
    }
    assert_eq!(pyarrow_reads(out.to_str().unwrap(), None), "1000 2 float 11 True");
}
