//! A fleet that speaks TLS: `hearth cluster start --tls-dir` with the authority and the certificate per role
//! `hearth cluster certs` made, the main job over it in client and cluster mode with the metrics it has
//! locally, and what a client without the fleet's certificate meets: nothing in clear on any of the fleet's
//! ports, and a TLS handshake refused for want of a certificate. A client's or an executor's certificate is
//! refused by every executor's task port (the scheduler's alone is admitted there), and one admitted without the secret is
//! refused by every executor port. `hearth status` shows each certificate's expiry. The fleet's Spark Connect
//! server speaks TLS with the scheduler's certificate: PySpark trusting the fleet's authority runs a job
//! through it.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::cluster::{evaluation, main_job_locally_and_in_client_mode};
use crate::common::{Fleet, hearth, pyspark, shown};

/// A PySpark client of the Spark Connect URL it is given: how many of 0…999 leave each remainder by 3.
const PYSPARK_COUNTS: &str = "
import sys
from pyspark.sql import SparkSession
spark = SparkSession.builder.remote(sys.argv[1]).getOrCreate()
df = spark.range(0, 1000, numPartitions=4)
print([row['count'] for row in df.groupBy((df.id % 3).alias('k')).count().orderBy('k').collect()])
";

/// `hearth cluster certs` into `dir`: a new authority, and a certificate for this machine.
fn certificates(dir: &Path) {
    let out = hearth()
        .args(["cluster", "certs", "--out"])
        .arg(dir)
        .args(["--host", "localhost"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", shown(&out));
    for role in ["scheduler", "executor", "client"] {
        let key = std::fs::metadata(dir.join(role).join("key.pem")).unwrap();
        assert_eq!(
            key.permissions().mode() & 0o777,
            0o600,
            "the {role}'s key is its owner's alone"
        );
    }
    // A second run replaces nothing.
    let again = hearth().args(["cluster", "certs", "--out"]).arg(dir).output().unwrap();
    let error = String::from_utf8_lossy(&again.stderr);
    assert!(!again.status.success() && error.contains("ca.pem"), "{}", shown(&again));
}

/// What a server on `port` answers a plain-text HTTP request with (at most 64 bytes; empty when it closes).
fn answer_in_clear(port: u16) -> Vec<u8> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let _ = stream.write_all(b"GET /api/version HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    let mut answer = vec![0u8; 64];
    let read = stream.read(&mut answer).unwrap_or(0);
    answer.truncate(read);
    answer
}

/// The Flight and task ports each executor printed it listens on.
fn executor_ports(fleet: &Fleet) -> Vec<[u16; 2]> {
    fleet
        .executor_logs()
        .lines()
        .filter_map(|line| {
            let rest = line.split(" on 127.0.0.1:").nth(1)?;
            let (flight, rest) = rest.split_once(" (tasks on ")?;
            Some([flight.parse().ok()?, rest.split(')').next()?.parse().ok()?])
        })
        .collect()
}

/// A `StopExecutor` call on `port` with `role`'s certificate from `tls` and no secret: the response headers
/// when the TLS handshake succeeded, curl's error when it did not.
fn stop_executor_as(tls: &Path, role: &str, port: u16) -> (bool, String) {
    let url = format!("https://127.0.0.1:{port}/ballista.protobuf.ExecutorGrpc/StopExecutor");
    let side = tls.join(role);
    let call = Command::new("curl")
        .args([
            "--silent",
            "--show-error",
            "--http2",
            "--max-time",
            "10",
            "--dump-header",
            "-",
        ])
        .args(["--output", "/dev/null", "--cacert"])
        .arg(side.join("ca.pem"))
        .arg("--cert")
        .arg(side.join("cert.pem"))
        .arg("--key")
        .arg(side.join("key.pem"))
        // No body: the refusal answers the headers, so nothing is left unsent when the stream ends.
        .args([
            "-X",
            "POST",
            "-H",
            "content-type: application/grpc",
            "-H",
            "te: trailers",
        ])
        .arg(&url)
        .output()
        .unwrap();
    let answered = !call.stdout.is_empty();
    (answered, format!("{url} as {role}: {}", shown(&call)))
}

#[test]
fn a_fleet_over_tls_runs_the_main_job_and_answers_nothing_in_clear() {
    let tls = tempfile::tempdir().unwrap();
    certificates(tls.path());
    let fleet = Fleet::start(&[
        "--executors",
        "2",
        "--slots",
        "2",
        "--tls-dir",
        tls.path().to_str().unwrap(),
        "--connect",
        "127.0.0.1:0",
    ]);
    assert!(fleet.master.starts_with("df://127.0.0.1:"), "{}", fleet.master);
    let status = fleet.status();
    assert_eq!(status["executors"].as_array().map(Vec::len), Some(2), "{status}");
    let scheduler_log = std::fs::read_to_string(fleet.state.path().join("logs/scheduler.log")).unwrap();
    assert!(
        scheduler_log.contains("TLS on") && !scheduler_log.contains("not encrypted"),
        "{scheduler_log}"
    );

    // The main job, locally and over TLS in both modes: the same metrics.
    let models = tempfile::tempdir().unwrap();
    let local = main_job_locally_and_in_client_mode(&fleet, models.path());
    let cluster_models = models.path().join("cluster");
    let id = fleet.submit_cluster(
        "examples/german_credit.sql",
        &["--models", cluster_models.to_str().unwrap()],
    );
    let job = fleet.job_ended(&id, Duration::from_secs(180));
    let logs = fleet.ok(&["job", "logs", &id]);
    assert_eq!(job["state"], "succeeded", "{job}\n{logs}");
    assert_eq!(evaluation(&logs), local, "cluster mode over TLS");

    // PySpark reaches the fleet through its Spark Connect server, over TLS (trusting the fleet's authority)
    // with the token in the state directory.
    let cluster_status = fleet.ok(&["cluster", "status"]);
    let connect_url = cluster_status
        .lines()
        .find_map(|line| line.strip_prefix("Spark Connect: "))
        .and_then(|line| line.split_whitespace().next())
        .unwrap_or_else(|| panic!("no Spark Connect line: {cluster_status}"));
    assert!(connect_url.contains(";use_ssl=true"), "{connect_url}");
    // The token through PySpark's variable, not a command line other users can read.
    let token = std::fs::read_to_string(fleet.state.path().join("connect-token")).unwrap();
    let counts = pyspark(
        PYSPARK_COUNTS,
        &[&connect_url.replace(";token=…", "")],
        &[
            (
                "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH",
                tls.path().join("ca.pem").as_os_str(),
            ),
            ("SPARK_CONNECT_AUTHENTICATE_TOKEN", token.trim().as_ref()),
        ],
    );
    assert_eq!(counts.trim(), "[334, 333, 333]");
    let connect_log = std::fs::read_to_string(fleet.state.path().join("logs/connect.log")).unwrap();
    assert!(
        connect_log.contains(&format!("(master {})", fleet.master)),
        "{connect_log}"
    );
    let connect_port: u16 = connect_url
        .rsplit(':')
        .next()
        .and_then(|tail| tail.split('/').next())
        .and_then(|port| port.parse().ok())
        .unwrap_or_else(|| panic!("no port in {connect_url}"));

    // Nothing answers in clear: the scheduler's port and each executor's Flight and task ports answer a
    // plain request with a TLS alert (a record of type 21) or by closing.
    let scheduler_port: u16 = fleet.master.rsplit(':').next().unwrap().parse().unwrap();
    let ports = executor_ports(&fleet);
    assert_eq!(ports.len(), 2, "two ports per executor: {ports:?}");
    let servers = [scheduler_port, connect_port];
    for port in servers.into_iter().chain(ports.iter().flatten().copied()) {
        let answer = answer_in_clear(port);
        assert!(
            answer.is_empty() || answer[0] == 21,
            "port {port} answered in clear: {:?}",
            String::from_utf8_lossy(&answer)
        );
    }

    // Roles: a client's certificate is refused by each task port in the handshake, naming the rule in the
    // executor's log; the scheduler's is admitted there and a client's on Flight, and without the secret both
    // are refused before Ballista sees the call (UNAUTHENTICATED). The executors run on.
    for [flight, tasks] in ports {
        for role in ["client", "executor"] {
            let (answered, said) = stop_executor_as(tls.path(), role, tasks);
            assert!(!answered, "{role}'s certificate on the task port: {said}");
        }
        for (role, port) in [("scheduler", tasks), ("client", flight)] {
            let (answered, said) = stop_executor_as(tls.path(), role, port);
            assert!(
                answered && said.to_ascii_lowercase().contains("grpc-status: 16"),
                "{said}"
            );
        }
    }
    let executor_logs = fleet.executor_logs();
    assert!(
        executor_logs.contains("a client certificate may not call an executor's task port"),
        "{executor_logs}"
    );
    std::thread::sleep(Duration::from_secs(1));
    let status = fleet.status();
    assert_eq!(status["executors"].as_array().map(Vec::len), Some(2), "{status}");
    assert_eq!(status["certificates"]["client"]["role"], "client", "{status}");
    assert_eq!(status["certificates"]["scheduler"]["role"], "scheduler", "{status}");
    for executor in status["executors"].as_array().unwrap() {
        assert!(executor["certificate_expires_at"].as_i64().is_some(), "{executor}");
    }
    let shown_status = fleet.ok(&["status"]);
    assert!(
        shown_status.contains("TLS certificates") && shown_status.contains("the scheduler"),
        "{shown_status}"
    );

    // A TLS client that trusts the fleet but has no certificate of its own is refused in the handshake; with
    // the fleet's certificate (and secret) it is answered.
    let url = format!("https://127.0.0.1:{scheduler_port}/api/version");
    let ca = tls.path().join("ca.pem");
    let client = tls.path().join("client");
    let anonymous = Command::new("curl")
        .args(["--silent", "--show-error", "--max-time", "10", "--cacert"])
        .arg(&ca)
        .arg(&url)
        .output()
        .unwrap();
    assert!(!anonymous.status.success(), "{}", shown(&anonymous));
    let token = fleet.ok(&["cluster", "token"]);
    let member = Command::new("curl")
        .args(["--silent", "--show-error", "--fail", "--max-time", "10", "--cacert"])
        .arg(&ca)
        .arg("--cert")
        .arg(client.join("cert.pem"))
        .arg("--key")
        .arg(client.join("key.pem"))
        .args(["-H", &format!("Authorization: Bearer {}", token.trim()), &url])
        .output()
        .unwrap();
    assert!(member.status.success(), "{}", shown(&member));
    let scheduler_log = std::fs::read_to_string(fleet.state.path().join("logs/scheduler.log")).unwrap();
    assert!(
        scheduler_log.contains("TLS handshake failed"),
        "the refusals are logged: {scheduler_log}"
    );
}
