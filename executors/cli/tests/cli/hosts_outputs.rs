//! Outputs in the S3 store on the fleet of three hosts ([`lab`](crate::lab)): `hearth fit-transform --output
//! s3://…` writes from the executors' tasks, pyarrow reads the Parquet through the S3 API on the lab's network,
//! and a write whose driver is killed after its first task's file is staged leaves nothing in the destination
//! — the next write there commits whole.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use crate::commands::CreditFiles;
use crate::common::{pyarrow_reads_with, shown};
use crate::lab::{Lab, lab_or_skip, start_fleet};
use crate::s3::{self, S3Server};

/// The bucket the test reads from and writes to.
const BUCKET: &str = "hearth-data";

/// What pyarrow sees in the store at `endpoint`, asked from the lab's first host: `list PREFIX` prints the
/// keys under `PREFIX` (`bucket/…`); `wait PREFIX TEXT` waits (up to 240 s, polling every 20 ms) until a key
/// holding `TEXT` is there and prints it. (What pyarrow reads of the Parquet: [`pyarrow_reads_on_lab`].)
const STORE_SCRIPT: &str = r#"
import sys, time, pyarrow.fs as fs
scheme, host = sys.argv[1].split('://')
s3 = fs.S3FileSystem(access_key='hearth-test', secret_key='hearth-test-secret', endpoint_override=host,
                     scheme=scheme, region='us-east-1')
def keys(prefix):
    try:
        infos = s3.get_file_info(fs.FileSelector(prefix, recursive=True))
    except FileNotFoundError:
        return []
    return sorted(i.path for i in infos if i.type == fs.FileType.File)
mode, prefix = sys.argv[2], sys.argv[3]
if mode == 'list':
    print('\n'.join(keys(prefix)))
else:
    deadline = time.time() + 240
    while time.time() < deadline:
        found = [k for k in keys(prefix) if sys.argv[4] in k]
        if found:
            print(found[0], flush=True)
            break
        time.sleep(0.02)
"#;

/// `python3 STORE_SCRIPT ENDPOINT args…` on the lab's first host.
fn store_script(lab: &Lab, store: &S3Server, args: &[&str]) -> Command {
    let mut script = vec!["-c", STORE_SCRIPT, store.endpoint.as_str()];
    script.extend(args);
    lab.program_on(0, std::path::Path::new("python3"), &script)
}

/// The output of [`STORE_SCRIPT`] run to its end.
/// What pyarrow on the lab's first host reads of `prefix` through the store's S3 API (see [`pyarrow_reads`]).
fn pyarrow_reads_on_lab(lab: &Lab, store: &S3Server, prefix: &str) -> String {
    let python = |args: &[&str]| lab.program_on(0, std::path::Path::new("python3"), args).output();
    pyarrow_reads_with(python, prefix, Some(&store.endpoint))
}

fn ask_store(lab: &Lab, store: &S3Server, args: &[&str]) -> String {
    let out = store_script(lab, store, args).output().unwrap();
    assert!(out.status.success(), "{}", shown(&out));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn a_fleet_of_three_hosts_writes_to_an_s3_store_and_a_killed_write_leaves_nothing_there() {
    let test = "a_fleet_of_three_hosts_writes_to_an_s3_store_and_a_killed_write_leaves_nothing_there";
    let Some(mut lab) = lab_or_skip(test) else {
        return;
    };
    let files = CreditFiles::new();
    // An input large enough that the driver can be killed while its tasks write: 400 copies of the rows.
    let csv = std::fs::read_to_string(&files.data).unwrap();
    let (header, rows) = csv.split_once('\n').unwrap();
    let large = files.dir.path().join("large.csv");
    std::fs::write(&large, format!("{header}\n{}", rows.repeat(400))).unwrap();
    let store = S3Server::start(
        &lab.on_host(0),
        &lab.address(0),
        &[BUCKET],
        &[
            ("s3://hearth-data/credit-g.csv", &files.data),
            ("s3://hearth-data/large.csv", &large),
        ],
    );
    // The executors hold the keys; where the store is reaches them with each job.
    lab.env = s3::credentials();
    let master = format!("df://{}", start_fleet(&mut lab, &[]));
    let (spec, model) = (files.spec.to_str().unwrap(), files.model.to_str().unwrap());
    let driver = |args: &[&str]| {
        let mut command = lab.hearth_on(0, &["--master", &master]);
        command.args(args).envs(store.driver_env());
        command
    };

    let fit = driver(&["fit-transform", spec, "s3://hearth-data/credit-g.csv", model])
        .args(["--select", "features,class", "--output", "s3://hearth-data/features"])
        .output()
        .unwrap();
    assert!(fit.status.success(), "{}", shown(&fit));
    assert!(
        String::from_utf8_lossy(&fit.stdout).contains("wrote 1000 rows"),
        "{}",
        shown(&fit)
    );
    assert_eq!(
        pyarrow_reads_on_lab(&lab, &store, "hearth-data/features"),
        "1000 2 float 11 True"
    );
    let written = ask_store(&lab, &store, &["list", "hearth-data/features"]);
    let names: Vec<&str> = written
        .lines()
        .filter_map(|key| key.strip_prefix("hearth-data/features/"))
        .collect();
    assert!(names.contains(&"_SUCCESS"), "{written}");
    assert!(
        (names.iter().filter(|name| **name != "_SUCCESS"))
            .all(|name| name.starts_with("part-") && name.ends_with(".snappy.parquet")),
        "Spark's part names: {written}"
    );

    // Killed once its first task's file is staged, before the driver commits.
    let mut watching = store_script(&lab, &store, &["wait", BUCKET, "hearth-staging"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut writing = driver(&["transform", model, "s3://hearth-data/large.csv"])
        .args(["--select", "features,class", "--output", "s3://hearth-data/large"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut staged = String::new();
    BufReader::new(watching.stdout.take().unwrap())
        .read_line(&mut staged)
        .unwrap();
    // The driver runs under `timeout`, in its process group: the group is killed.
    let killed = Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", writing.id())])
        .status()
        .unwrap();
    let status = writing.wait().unwrap();
    let _ = watching.wait();
    assert!(
        killed.success() && !staged.trim().is_empty() && !status.success(),
        "killed while its tasks wrote ({status:?}, staged: {staged:?})"
    );
    let left = ask_store(&lab, &store, &["list", "hearth-data/large"]);
    assert_eq!(left, "", "nothing in the destination");

    // The next write to the destination finds it empty, and commits whole.
    let again = driver(&["transform", model, "s3://hearth-data/credit-g.csv"])
        .args(["--select", "features,class", "--output", "s3://hearth-data/large"])
        .output()
        .unwrap();
    assert!(again.status.success(), "{}", shown(&again));
    assert_eq!(
        pyarrow_reads_on_lab(&lab, &store, "hearth-data/large"),
        "1000 2 float 11 True"
    );
}
