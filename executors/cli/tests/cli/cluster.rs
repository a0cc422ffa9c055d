//! A fleet as users run it: `hearth cluster start` → `status` → the SQL main job submitted in client and in
//! cluster mode → `jobs`, `job status`, `job logs` → `cluster stop`, which leaves nothing behind; and the same
//! fleet started on "hosts" through ssh, over TLS.

use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{Fleet, alive, as_another_user, hearth, repository, shown, wait_for};

/// The table `SELECT * FROM ML.EVALUATE(…)` prints in a job's output: its header line and its row.
pub(crate) fn evaluation(output: &str) -> String {
    let lines: Vec<&str> = output.lines().collect();
    let header = lines
        .iter()
        .position(|line| line.starts_with("| f1 "))
        .unwrap_or_else(|| panic!("no evaluation table in:\n{output}"));
    format!("{}\n{}", lines[header], lines[header + 2])
}

/// The main SQL job's evaluation table run locally, after checking `hearth submit` in client mode prints the
/// same on `fleet` (models under `models`).
pub(crate) fn main_job_locally_and_in_client_mode(fleet: &Fleet, models: &Path) -> String {
    let local = hearth()
        .current_dir(repository())
        .args(["--master", "local", "sql", "--models"])
        .arg(models.join("local"))
        .arg("examples/german_credit.sql")
        .output()
        .unwrap();
    assert!(local.status.success(), "{}", shown(&local));
    let local = evaluation(&String::from_utf8_lossy(&local.stdout));
    let client_models = models.join("client");
    let client = fleet.ok(&[
        "submit",
        "--models",
        client_models.to_str().unwrap(),
        "examples/german_credit.sql",
    ]);
    assert_eq!(evaluation(&client), local, "client mode on {}", fleet.master);
    local
}

#[test]
fn a_fleet_started_with_one_command_runs_the_main_job_in_both_modes_and_stops_clean() {
    let fleet = Fleet::start(&["--executors", "2", "--slots", "2"]);
    let port = fleet.master.rsplit(':').next().unwrap().parse::<u16>().unwrap();

    // A second start finds this fleet running and starts nothing.
    let again = fleet.hearth().args(["cluster", "start"]).output().unwrap();
    let error = String::from_utf8_lossy(&again.stderr);
    assert!(
        !again.status.success() && error.contains("already running"),
        "{}",
        shown(&again)
    );

    // What the fleet has, as scripts and as people read it.
    let status = fleet.status();
    let executors = status["executors"].as_array().unwrap();
    assert_eq!(executors.len(), 2, "{status}");
    for executor in executors {
        assert_eq!(
            (executor["slots"].as_u64(), executor["free_slots"].as_u64()),
            (Some(2), Some(2))
        );
        assert_eq!(
            executor["gpus"].as_array().map(Vec::len),
            Some(0),
            "no GPUs here: {executor}"
        );
        assert!(executor["memory_bytes"].as_u64().unwrap() > 0);
    }
    let table = fleet.ok(&["status"]);
    assert!(
        table.contains("2 executors, 4 slots (4 free)") && table.contains("| 2/2 "),
        "{table}"
    );
    let cluster_status = fleet.ok(&["cluster", "status"]);
    assert_eq!(cluster_status.matches("running").count(), 3, "{cluster_status}");

    // The main job in SQL, locally and on the fleet in both modes: the same metrics.
    let models = tempfile::tempdir().unwrap();
    let local = main_job_locally_and_in_client_mode(&fleet, models.path());

    let cluster_models = models.path().join("cluster");
    let id = fleet.submit_cluster(
        "examples/german_credit.sql",
        &[
            "--name",
            "credit-on-the-fleet",
            "--models",
            cluster_models.to_str().unwrap(),
        ],
    );
    let job = fleet.job_ended(&id, Duration::from_secs(180));
    assert_eq!(job["state"], "succeeded", "{job}\n{}", fleet.ok(&["job", "logs", &id]));
    assert_eq!(job["exit_code"], 0);
    let logs = fleet.ok(&["job", "logs", &id]);
    assert_eq!(evaluation(&logs), local, "cluster mode");
    assert!(
        logs.contains(&cluster_models.join("credit_risk").display().to_string()),
        "the model's path: {logs}"
    );
    assert!(
        cluster_models.join("credit_risk").is_dir(),
        "the model where the user said"
    );
    let jobs = fleet.ok(&["jobs"]);
    assert!(
        jobs.contains(&id) && jobs.contains("credit-on-the-fleet") && jobs.contains("succeeded"),
        "{jobs}"
    );
    let status = fleet.status();
    let names: Vec<&str> = status["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|j| j["job_name"].as_str())
        .collect();
    assert!(
        names.contains(&"credit-on-the-fleet") && names.contains(&"german_credit"),
        "Ballista's job names: {names:?}"
    );

    // A driver program in client mode gets the master, the name and its arguments, and its exit code is
    // submit's.
    let driver = models.path().join("driver.sh");
    std::fs::write(
        &driver,
        "#!/bin/sh\necho \"master=$HEARTH_MASTER name=$HEARTH_APP_NAME args=$*\"\nexit 3\n",
    )
    .unwrap();
    std::fs::set_permissions(&driver, std::fs::Permissions::from_mode(0o755)).unwrap();
    let program = fleet
        .hearth()
        .args(["submit", "--name", "custom"])
        .arg(&driver)
        .args(["--epochs", "3"])
        .output()
        .unwrap();
    assert_eq!(program.status.code(), Some(3), "{}", shown(&program));
    assert_eq!(
        String::from_utf8_lossy(&program.stdout).trim(),
        format!("master={} name=custom args=--epochs 3", fleet.master)
    );

    // Stop: no process and no listening port left.
    let pids = fleet.pids();
    let stopped = fleet.ok(&["cluster", "stop"]);
    assert!(stopped.contains("Stopped the fleet"), "{stopped}");
    for pid in pids {
        assert!(!alive(pid), "process {pid} still runs");
    }
    assert!(
        TcpStream::connect(("127.0.0.1", port)).is_err(),
        "the scheduler's port still listens"
    );
    let gone = fleet.hearth().args(["status"]).output().unwrap();
    assert!(
        String::from_utf8_lossy(&gone.stderr).contains("no fleet"),
        "{}",
        shown(&gone)
    );
}

/// An `ssh` that runs the command here, as `ssh HOST COMMAND` runs it on HOST.
fn ssh_here(dir: &Path) {
    let ssh = dir.join("ssh");
    std::fs::write(
        &ssh,
        "#!/bin/sh\n# ssh [-o OPTION]... HOST COMMAND: run COMMAND here\nwhile [ \"$1\" = -o ]; do shift 2; done\nshift\nexec sh -c \"$*\"\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&ssh, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn hosts_without_tls_are_refused_unless_insecure_is_given() {
    let bin = tempfile::tempdir().unwrap();
    let hosts = bin.path().join("workers");
    std::fs::write(&hosts, "node-1\n").unwrap();
    let state = tempfile::tempdir().unwrap();
    let start = hearth()
        .env("HEARTH_CLUSTER_DIR", state.path())
        .args(["cluster", "start", "--hosts"])
        .arg(&hosts)
        .output()
        .unwrap();
    assert_eq!(start.status.code(), Some(1), "{}", shown(&start));
    let said = String::from_utf8_lossy(&start.stderr);
    assert!(
        said.contains("--hosts without --tls-dir") && said.contains("--insecure"),
        "{said}"
    );
    assert_eq!(
        std::fs::read_dir(state.path()).unwrap().count(),
        0,
        "nothing started or written"
    );
}

#[test]
fn a_hosts_file_starts_one_executor_per_host_through_ssh() {
    let bin = tempfile::tempdir().unwrap();
    ssh_here(bin.path());
    let hosts = bin.path().join("workers");
    std::fs::write(&hosts, "# two hosts\nlocalhost\n127.0.0.1\n").unwrap();
    let path = format!("{}:{}", bin.path().display(), std::env::var("PATH").unwrap_or_default());
    let state = tempfile::tempdir().unwrap();
    // Over TLS: each host's executor is given the certificates' directory, at the same path there.
    let tls = bin.path().join("tls");
    let certs = hearth().args(["cluster", "certs", "--out"]).arg(&tls).output().unwrap();
    assert!(certs.status.success(), "{}", shown(&certs));
    let start = hearth()
        .env("PATH", &path)
        .env("HEARTH_CLUSTER_DIR", state.path())
        .args(["cluster", "start", "--slots", "1", "--bind", "127.0.0.1:0", "--hosts"])
        .arg(&hosts)
        .arg("--tls-dir")
        .arg(&tls)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&start.stdout).into_owned();
    let record: serde_json::Value = std::fs::read_to_string(state.path().join("cluster.json"))
        .map(|json| serde_json::from_str(&json).unwrap())
        .unwrap_or_default();
    let stop = || {
        hearth()
            .env("PATH", &path)
            .env("HEARTH_CLUSTER_DIR", state.path())
            .args(["cluster", "stop"])
            .output()
            .unwrap()
    };
    if !start.status.success() {
        let _ = stop();
        panic!("cluster start --hosts: {}", shown(&start));
    }
    assert!(text.contains("2 executors, 2 slots"), "{text}");
    let hosts: Vec<&str> = record["executors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["ssh_host"].as_str().unwrap())
        .collect();
    assert_eq!(hosts, ["localhost", "127.0.0.1"]);
    // What the hosts' executors write — their logs, their work folders — is the fleet user's alone.
    for (folder, expected) in [
        ("executor-0", 0o700),
        ("executor-1", 0o700),
        ("logs/executor-0.log", 0o600),
    ] {
        let mode = std::fs::metadata(state.path().join(folder)).map(|m| m.permissions().mode() & 0o777);
        assert_eq!(mode.ok(), Some(expected), "{folder}");
    }
    let pids: Vec<u64> = record["executors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["pid"].as_u64().unwrap())
        .collect();
    let stopped = stop();
    assert!(stopped.status.success(), "{}", shown(&stopped));
    wait_for(
        "the executors started through ssh stop",
        Duration::from_secs(20),
        || pids.iter().all(|&pid| !alive(pid)).then_some(()),
    );
}

/// The soft and hard limits of open files `/proc/PID/limits` shows (`self` for this process).
fn open_files_limits(pid: &str) -> Option<(u64, u64)> {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).ok()?;
    let line = limits.lines().find(|line| line.starts_with("Max open files"))?;
    let numbers: Vec<u64> = line.split_whitespace().filter_map(|word| word.parse().ok()).collect();
    Some((*numbers.first()?, *numbers.get(1)?))
}

/// Started under the 1,024 open files many systems give a process (`prlimit`), a fleet's scheduler raises its
/// soft limit to the hard one: held connections cannot exhaust it early.
#[test]
fn a_scheduler_started_under_a_low_descriptor_limit_raises_it() {
    let (_, hard) = open_files_limits("self").expect("this process's limits");
    assert!(hard > 1024, "the test needs a hard limit above 1,024, got {hard}");
    let mut scheduler = Command::new("prlimit")
        .arg(format!("--nofile=1024:{hard}"))
        .arg(env!("CARGO_BIN_EXE_hearth"))
        .args(["scheduler", "--bind", "127.0.0.1:0", "--insecure"])
        .env_remove("HEARTH_SECRET")
        .env_remove("HEARTH_SECRET_FILE")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("prlimit (util-linux) starts hearth");
    let pid = scheduler.id().to_string();
    let deadline = Instant::now() + Duration::from_secs(30);
    let raised = loop {
        let limits = open_files_limits(&pid);
        if limits.is_some_and(|(soft, _)| soft == hard) || Instant::now() > deadline {
            break limits;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let _ = scheduler.kill();
    let _ = scheduler.wait();
    assert_eq!(raised, Some((hard, hard)), "the scheduler's open files limits");
}

/// Holds `count` silent TCP connections to `address` (its own descriptor limit raised to the hard one); on a
/// line on its standard input, prints how many of them the server has closed.
const SILENT_CONNECTIONS: &str = r#"
import resource, socket, sys
_, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
host, port, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
held = [socket.create_connection((host, port), timeout=10) for _ in range(count)]
print("held", len(held), flush=True)
sys.stdin.readline()
closed = 0
for s in held:
    s.setblocking(False)
    try:
        closed += s.recv(1) == b""
    except BlockingIOError:
        pass
    except ConnectionResetError:
        closed += 1
print("closed", closed, flush=True)
"#;

/// 2,000 connections that never send a byte, opened to the scheduler by another user of the machine, with the
/// fleet's processes held to the 1,024 descriptors many systems give (`prlimit`, soft and hard): the scheduler
/// keeps a bounded number of them (the oldest closed first, the rest at their deadline), holds far fewer
/// descriptors than its limit, and goes on serving its executor and clients — a query runs on the fleet while
/// the flood is held.
#[test]
fn a_flood_of_silent_connections_leaves_the_fleet_serving() {
    use std::io::{BufRead, BufReader, Write};

    let fleet = Fleet::start(&["--executors", "1", "--slots", "2"]);
    for pid in fleet.pids() {
        let limited = Command::new("prlimit")
            .arg(format!("--pid={pid}"))
            .arg("--nofile=1024:1024")
            .output()
            .unwrap();
        assert!(limited.status.success(), "prlimit: {}", shown(&limited));
    }
    let scheduler = fleet.master.trim_start_matches("df://").to_string();
    let (host, port) = scheduler.rsplit_once(':').unwrap();
    let mut flood = as_another_user("python3")
        .args(["-c", SILENT_CONNECTIONS, host, port, "2000"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut said = BufReader::new(flood.stdout.take().unwrap()).lines();
    let held = said.next().unwrap().unwrap();
    assert_eq!(held, "held 2000");
    let flooded_at = Instant::now();

    let scheduler_pid = fleet.pids()[0];
    let descriptors = std::fs::read_dir(format!("/proc/{scheduler_pid}/fd")).unwrap().count();
    assert!(
        descriptors < 600,
        "the scheduler holds {descriptors} descriptors under the flood"
    );
    let query = fleet
        .hearth()
        .args(["sql", "--master", &fleet.master, "-e"])
        .arg("SELECT count(*) AS n FROM (VALUES (1), (2), (3)) AS t(x)")
        .output()
        .unwrap();
    assert!(
        query.status.success() && shown(&query).contains("| 3 "),
        "{}",
        shown(&query)
    );
    assert!(
        flooded_at.elapsed() < Duration::from_secs(10),
        "the query ran while the flood was still held"
    );

    std::thread::sleep(Duration::from_secs(12).saturating_sub(flooded_at.elapsed()));
    writeln!(flood.stdin.as_mut().unwrap()).unwrap();
    let closed = said.next().unwrap().unwrap();
    let _ = flood.wait();
    assert_eq!(
        closed, "closed 2000",
        "every silent connection is closed by its deadline"
    );
    let status = fleet.status();
    assert_eq!(status["executors"].as_array().unwrap().len(), 1, "{status}");
    let log = std::fs::read_to_string(fleet.state.path().join("logs").join("scheduler.log")).unwrap();
    assert!(
        log.contains("closing the oldest"),
        "the scheduler says it made room: {log}"
    );
}
