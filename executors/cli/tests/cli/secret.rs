//! The fleet's secret: `hearth cluster start` makes one readable by its user alone, its processes and clients
//! prove it, and the scheduler refuses executors and clients that do not — logging each refusal. The secret
//! itself never crosses the wire, nor reaches a log.

use std::collections::BTreeSet;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::process::Stdio;
use std::time::Duration;

use crate::common::{Fleet, as_another_user, hearth, runs_as_root, shown, wait_for};
use crate::faults::training_job;
use crate::procfs::listening_ports;
use crate::relay::RecordingRelay;

#[test]
fn a_fleet_refuses_executors_and_clients_without_its_secret() {
    let fleet = Fleet::start(&["--executors", "1", "--slots", "1"]);
    let secret_file = fleet.state.path().join("secret");
    let mode = std::fs::metadata(&secret_file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the secret must be readable by its owner alone");

    // Clients of the fleet find its secret in its state directory.
    let status = fleet.status();
    assert_eq!(status["executors"].as_array().unwrap().len(), 1, "{status}");

    // A client without it, or with another, is refused.
    let elsewhere = tempfile::tempdir().unwrap();
    let without = || {
        let mut command = hearth();
        command
            .env("HEARTH_CLUSTER_DIR", elsewhere.path())
            .env_remove("HEARTH_SECRET")
            .env_remove("HEARTH_SECRET_FILE");
        command
    };
    for wrong in [None, Some("0123456789abcdef0123456789abcdef")] {
        let mut command = without();
        if let Some(wrong) = wrong {
            command.env("HEARTH_SECRET", wrong);
        }
        let refused = command.args(["status", "--master", &fleet.master]).output().unwrap();
        assert!(!refused.status.success(), "{}", shown(&refused));
        assert!(
            String::from_utf8_lossy(&refused.stderr).contains("cluster secret"),
            "{}",
            shown(&refused)
        );
    }
    let with_file = without()
        .env("HEARTH_SECRET_FILE", &secret_file)
        .args(["status", "--master", &fleet.master])
        .output()
        .unwrap();
    assert!(with_file.status.success(), "{}", shown(&with_file));

    // An executor without it does not start unless told to run --insecure, and then never registers: the
    // scheduler says whom it refused.
    let scheduler = fleet.master.trim_start_matches("df://").to_string();
    for role in [
        vec!["scheduler", "--bind", "127.0.0.1:0"],
        vec!["executor", "--scheduler", &scheduler],
    ] {
        let refused = without().args(&role).output().unwrap();
        assert!(!refused.status.success(), "{}", shown(&refused));
        let said = String::from_utf8_lossy(&refused.stderr);
        assert!(
            said.contains("--secret-file") && said.contains("--insecure"),
            "{}",
            shown(&refused)
        );
    }
    let mut intruder = without()
        .args(["executor", "--scheduler", &scheduler, "--slots", "1", "--insecure"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let log = fleet.state.path().join("logs").join("scheduler.log");
    let refusal = wait_for("the scheduler logs a refusal", Duration::from_secs(30), || {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        text.lines()
            .find(|line| line.contains("refused") && line.contains("from 127.0.0.1:"))
            .map(str::to_string)
    });
    assert!(refusal.contains("did not present the cluster secret"), "{refusal}");
    std::thread::sleep(Duration::from_secs(2));
    let status = fleet.status();
    assert_eq!(status["executors"].as_array().unwrap().len(), 1, "{status}");
    let _ = intruder.kill();
    let _ = intruder.wait();

    // A token for a tool of one's own goes into a header file only its owner reads, which curl presents.
    let header = elsewhere.path().join("auth");
    std::fs::write(&header, "left by someone else").unwrap();
    std::fs::set_permissions(&header, std::fs::Permissions::from_mode(0o644)).unwrap();
    let wrote = fleet.ok(&["cluster", "token", "--write", header.to_str().unwrap()]);
    assert!(wrote.trim().is_empty(), "the token went to the terminal too: {wrote}");
    assert_eq!(std::fs::metadata(&header).unwrap().permissions().mode() & 0o777, 0o600);
    let text = std::fs::read_to_string(&header).unwrap();
    assert!(
        text.starts_with("Authorization: Bearer hearth-token/2/loopback/api/"),
        "{text}"
    );
    let url = format!("http://{scheduler}/hearth/executors");
    let with_header_file = || {
        let answered = std::process::Command::new("curl")
            .args(["--silent", "--max-time", "10", "--write-out", " %{http_code}"])
            .arg("-H")
            .arg(format!("@{}", header.display()))
            .arg(&url)
            .output()
            .unwrap();
        String::from_utf8_lossy(&answered.stdout).into_owned()
    };
    assert!(with_header_file().ends_with(" 200"));
    // It admits one connection: the same file again is refused.
    let again = with_header_file();
    assert!(again.ends_with(" 401") && again.contains("used before"), "{again}");
    // The same token in another user's hands, from this machine, is refused: the kernel's socket table says
    // whose process connects.
    if runs_as_root() {
        fleet.ok(&["cluster", "token", "--write", header.to_str().unwrap()]);
        let fresh = std::fs::read_to_string(&header).unwrap();
        let replayed = as_another_user("curl")
            .args(["--silent", "--max-time", "10", "--write-out", " %{http_code}", "-H"])
            .arg(fresh.trim())
            .arg(&url)
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&replayed.stdout);
        assert!(
            said.ends_with(" 401") && said.contains("only the processes of the user it runs as"),
            "{}",
            shown(&replayed)
        );
    }

    // A secret file others can read is refused before anything starts.
    let open = elsewhere.path().join("secret");
    std::fs::copy(&secret_file, &open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o644)).unwrap();
    let refused = without()
        .args(["executor", "--scheduler", &scheduler, "--secret-file"])
        .arg(&open)
        .output()
        .unwrap();
    assert!(!refused.status.success(), "{}", shown(&refused));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("is readable by others (mode 644)"),
        "{}",
        shown(&refused)
    );
}

#[test]
fn the_secret_never_crosses_the_wire_nor_reaches_a_log_nor_a_plan() {
    let fleet = Fleet::start(&["--executors", "1", "--slots", "1"]);
    let secret_file = fleet.state.path().join("secret");
    let secret = std::fs::read_to_string(&secret_file).unwrap().trim().to_string();
    let scheduler = fleet.master.trim_start_matches("df://").to_string();
    let relay = RecordingRelay::start(&scheduler);
    let through_relay = format!("df://{}", relay.address);
    // `hearth` holding the secret as a program away from the fleet's state would.
    let member = || {
        let mut command = fleet.hearth();
        command.env("HEARTH_SECRET_FILE", &secret_file);
        command
    };

    // An executor, `hearth status` and the main job, each reaching the scheduler through the relay.
    let executor_log = fleet.state.path().join("logs").join("relayed-executor.log");
    let mut executor = member()
        .args(["executor", "--scheduler", &relay.address, "--slots", "1"])
        .stdout(std::fs::File::create(&executor_log).unwrap())
        .stderr(std::fs::File::create(fleet.state.path().join("logs").join("relayed-executor.err")).unwrap())
        .spawn()
        .unwrap();
    wait_for("the relayed executor registers", Duration::from_secs(60), || {
        let out = member()
            .args(["status", "--master", &through_relay, "--json"])
            .output()
            .unwrap();
        let status: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
        (status["executors"].as_array()?.len() == 2).then_some(())
    });
    let job = member()
        .args(["sql", "--master", &through_relay, "examples/german_credit.sql"])
        .output()
        .unwrap();
    assert!(job.status.success(), "{}", shown(&job));

    let captured = relay.captured();
    let text = String::from_utf8_lossy(&captured);
    assert!(
        text.contains("hearth-token/2/loopback/api/"),
        "the REST requests carried tokens"
    );
    assert!(!text.contains(&secret), "the secret crossed the relay");
    // The training stage's plan names where its job secret comes from, and carries none.
    assert!(
        text.contains("\"secret_from\":{"),
        "the training plan crossed the relay"
    );
    let carried: Vec<&str> = text
        .match_indices("\"secret\":\"")
        .map(|(at, found)| &text[at + found.len()..(at + found.len() + 8).min(text.len())])
        .filter(|after| !after.starts_with('"'))
        .collect();
    assert!(carried.is_empty(), "a plan carried a job secret: {carried:?}");
    let _ = executor.kill();
    let _ = executor.wait();
    for log in std::fs::read_dir(fleet.state.path().join("logs")).unwrap() {
        let log = log.unwrap().path();
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(!text.contains(&secret), "the secret is in {}", log.display());
    }
}

/// Whose tokens a call presents: the fleet's member's, or a cluster-mode job's driver's; a new one for each
/// call, as each admits one connection.
struct Caller<'a> {
    fleet: &'a Fleet,
    job: Option<&'a str>,
}

impl<'a> Caller<'a> {
    fn member(fleet: &'a Fleet) -> Self {
        Self { fleet, job: None }
    }

    fn job(fleet: &'a Fleet, job: &'a str) -> Self {
        Self { fleet, job: Some(job) }
    }

    /// A new token for `service` (`api` or `grpc`) at the fleet's scheduler, from `hearth cluster token`.
    fn token(&self, service: &str) -> String {
        self.token_for(service, self.fleet.master.trim_start_matches("df://"))
    }

    /// A new token for `service` at `server` (`host:port`), from `hearth cluster token --for`.
    fn token_for(&self, service: &str, server: &str) -> String {
        let mut args = vec!["cluster", "token", "--service", service, "--for", server];
        if let Some(job) = self.job {
            args.extend(["--job", job]);
        }
        self.fleet.ok(&args).trim().to_string()
    }
}

/// `curl`, quiet, giving up after 30 s, presenting `token`.
fn curl_with(token: &str) -> std::process::Command {
    let mut curl = std::process::Command::new("curl");
    curl.args([
        "--silent",
        "--max-time",
        "30",
        "-H",
        &format!("Authorization: Bearer {token}"),
    ]);
    curl
}

/// What `curl` gets for `method path` on the fleet's scheduler with `token`: the HTTP status.
fn status_with(fleet: &Fleet, token: &str, method: &str, path: &str) -> String {
    let url = format!("http://{}{path}", fleet.master.trim_start_matches("df://"));
    let out = curl_with(token)
        .args([
            "--output",
            "/dev/null",
            "--write-out",
            "%{http_code}",
            "-X",
            method,
            &url,
        ])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The ids of the Ballista jobs the fleet's scheduler knows.
fn ballista_job_ids(fleet: &Fleet) -> Vec<String> {
    let status = fleet.status();
    let jobs = status["jobs"].as_array().unwrap();
    jobs.iter()
        .map(|job| job["job_id"].as_str().unwrap().to_string())
        .collect()
}

/// `bytes` as a length-delimited protobuf field number `field` (every length here is under 128).
fn field(field: u8, bytes: &[u8]) -> Vec<u8> {
    [&[field << 3 | 2, bytes.len() as u8][..], bytes].concat()
}

/// The gRPC status `address` answers a call to `path` with one `message`, made with `token` (`curl` over
/// HTTP/2 without TLS).
fn grpc_status(address: &str, path: &str, token: &str, message: &[u8]) -> String {
    let body = [&[0u8][..], &(message.len() as u32).to_be_bytes(), message].concat();
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), body).unwrap();
    grpc_call_status(
        curl_with(token),
        address,
        path,
        &["--data-binary", &format!("@{}", file.path().display())],
    )
}

/// The gRPC status `address` answers a call to `path` that has no body yet, made with no credential by
/// another user of the machine: a server that refuses it at once answers before any body could race its reset
/// of the stream.
fn refusal_status(address: &str, path: &str) -> String {
    grpc_call_status(curl_as_another_user(), address, path, &["-X", "POST"])
}

/// `curl` run as another user of the machine (see [`as_another_user`]), with no credential.
fn curl_as_another_user() -> std::process::Command {
    let mut curl = as_another_user("curl");
    curl.args(["--silent", "--max-time", "30"]);
    curl
}

/// The gRPC status `address` answers a call to `path` made by `curl` (with its credential, if any) and curl's
/// `body` arguments.
fn grpc_call_status(mut curl: std::process::Command, address: &str, path: &str, body: &[&str]) -> String {
    let out = curl
        .args([
            "--http2-prior-knowledge",
            "--raw",
            "--dump-header",
            "-",
            "--output",
            "/dev/null",
        ])
        .args(["-H", "content-type: application/grpc", "-H", "te: trailers"])
        .args(body)
        .arg(format!("http://{address}{path}"))
        .output()
        .unwrap();
    // A refusal comes in the headers; an answer's status in the trailers, which curl prints with them.
    let headers = String::from_utf8_lossy(&out.stdout).to_lowercase();
    let status = headers.lines().find_map(|line| line.strip_prefix("grpc-status:"));
    status
        .unwrap_or_else(|| panic!("no grpc-status for {path} from {address}: {headers} ({})", shown(&out)))
        .trim()
        .to_string()
}

/// The gRPC status the fleet's scheduler answers Ballista's `call` on Ballista job `job` with, made with
/// `token` (each of these calls names the job in its first field).
fn scheduler_status_with(fleet: &Fleet, token: &str, call: &str, job: &str) -> String {
    let scheduler = fleet.master.trim_start_matches("df://");
    let path = format!("/ballista.protobuf.SchedulerGrpc/{call}");
    grpc_status(scheduler, &path, token, &field(1, job.as_bytes()))
}

/// The Flight address of the fleet's first executor, from Ballista's REST API (asked with `token`).
fn flight_address(fleet: &Fleet, token: &str) -> String {
    let url = format!("http://{}/api/executors", fleet.master.trim_start_matches("df://"));
    let out = curl_with(token).arg(&url).output().unwrap();
    let executors: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    format!("{}:{}", executors[0]["host"].as_str().unwrap(), executors[0]["port"])
}

/// The gRPC status an executor's Flight port (`address`) answers a `DoGet` of a partition of Ballista job
/// `job` with, made with `token`: a ticket holding Ballista's `Action` with a `FetchPartition` (field 3).
fn fetch_status_with(address: &str, token: &str, job: &str) -> String {
    let ticket = field(1, &field(3, &field(1, job.as_bytes())));
    grpc_status(address, "/arrow.flight.protocol.FlightService/DoGet", token, &ticket)
}

#[test]
fn a_cluster_mode_job_reaches_only_its_own_business_and_files() {
    let fleet = Fleet::start(&["--executors", "1", "--slots", "2"]);
    let models = tempfile::tempdir().unwrap();
    let models = models.path().to_str().unwrap();
    // Each driver holds only its job's key. The main job runs with it and ends; then a long training job
    // runs, whose credential is tried while it runs, and again once it was killed.
    let first = fleet.submit_cluster("examples/german_credit.sql", &["--models", models]);
    let job = fleet.job_ended(&first, Duration::from_secs(180));
    assert_eq!(
        job["state"],
        "succeeded",
        "{job}\n{}",
        fleet.ok(&["job", "logs", &first])
    );
    let other_queries = ballista_job_ids(&fleet);
    let scripts = tempfile::tempdir().unwrap();
    let training = training_job(scripts.path(), "long", 100_000, "");
    let second = fleet.submit_cluster(&training, &["--models", models]);
    let own_queries = wait_for("the training job's queries", Duration::from_secs(120), || {
        let new: Vec<String> = (ballista_job_ids(&fleet).into_iter())
            .filter(|q| !other_queries.contains(q))
            .collect();
        (!new.is_empty()).then_some(new)
    });
    assert!(!other_queries.is_empty(), "the main job ran Ballista jobs");
    let (member, driver) = (Caller::member(&fleet), Caller::job(&fleet, &second));

    // The running job's credential: its own record, log and kill, and the executors' resources — nothing else.
    let (own, other) = (format!("/hearth/jobs/{second}"), format!("/hearth/jobs/{first}"));
    let asks = [
        ("GET", own.clone(), "200"),
        ("GET", format!("{own}/logs"), "200"),
        ("GET", "/hearth/executors".to_string(), "200"),
        ("GET", other.clone(), "403"),
        ("POST", format!("{other}/kill"), "403"),
        ("GET", "/hearth/jobs".to_string(), "403"),
        ("POST", "/hearth/jobs".to_string(), "403"),
        ("POST", "/hearth/executors".to_string(), "403"),
    ];
    for (method, path, expected) in asks {
        assert_eq!(
            status_with(&fleet, &driver.token("api"), method, &path),
            expected,
            "{method} {path}"
        );
    }
    // Ballista's calls on jobs: its own queries, not the main job's.
    for (call, query, expected) in [
        ("GetJobStatus", &own_queries[0], "0"),
        ("GetJobMetrics", &own_queries[0], "0"),
        ("GetJobStatus", &other_queries[0], "7"),
        ("GetJobMetrics", &other_queries[0], "7"),
        ("CancelJob", &other_queries[0], "7"),
        ("CleanJobData", &other_queries[0], "7"),
    ] {
        assert_eq!(
            scheduler_status_with(&fleet, &driver.token("grpc"), call, query),
            expected,
            "{call} of {query}"
        );
    }
    // The executor's Flight port serves the job its own queries' partitions, not the main job's.
    let flight = flight_address(&fleet, &member.token("api"));
    assert_ne!(
        fetch_status_with(&flight, &driver.token_for("grpc", &flight), &own_queries[0]),
        "7",
        "its own partition"
    );
    assert_eq!(
        fetch_status_with(&flight, &driver.token_for("grpc", &flight), &other_queries[0]),
        "7",
        "another job's partition"
    );
    assert_ne!(
        fetch_status_with(&flight, &member.token_for("grpc", &flight), &other_queries[0]),
        "7",
        "a member fetches any"
    );
    assert_eq!(status_with(&fleet, &member.token("api"), "GET", &other), "200");
    assert_eq!(
        scheduler_status_with(&fleet, &member.token("grpc"), "GetJobStatus", &other_queries[0]),
        "0"
    );
    assert_eq!(
        fleet.job_state(&second)["state"],
        "running",
        "the checks ran while the job did"
    );

    // Once a job has ended, its key is refused, on REST and gRPC alike.
    fleet.ok(&["job", "kill", &second]);
    fleet.job_ended(&second, Duration::from_secs(60));
    for job in [&first, &second] {
        let ended = Caller::job(&fleet, job);
        let own = format!("/hearth/jobs/{job}");
        assert_eq!(status_with(&fleet, &ended.token("api"), "GET", &own), "401", "{job}");
        assert_eq!(
            scheduler_status_with(&fleet, &ended.token("grpc"), "GetJobStatus", &own_queries[0]),
            "16",
            "{job}"
        );
    }
    let log = std::fs::read_to_string(fleet.state.path().join("logs/scheduler.log")).unwrap();
    assert!(
        log.contains(&format!("job {second} may not ask it"))
            && log.contains(&format!(
                "refused CancelJob of Ballista job {} to job {second}",
                other_queries[0]
            ))
            && log.contains(&format!("its token is job {second}'s, which has ended")),
        "the refusals are logged"
    );

    // Its statements name files only under the fleet's data roots (here the repository and the temporary
    // directory) and in its own folder, never in the fleet's state: a table over /etc/passwd (however its
    // URL is spelled) or over the fleet's secret, or a catalog in /var/tmp, is refused.
    let script = tempfile::tempdir().unwrap();
    let secret = fleet.state.path().join("secret");
    let tables = [
        "CREATE EXTERNAL TABLE p STORED AS CSV LOCATION '/etc/passwd';".to_string(),
        "CREATE EXTERNAL TABLE p STORED AS CSV LOCATION 'file://localhost/etc/passwd';".to_string(),
        format!("CREATE EXTERNAL TABLE s STORED AS CSV LOCATION '{}';", secret.display()),
    ];
    let mut jobs: Vec<(String, &str)> = Vec::new();
    for (i, statement) in tables.iter().enumerate() {
        let file = script.path().join(format!("outside-{i}.sql"));
        std::fs::write(&file, statement).unwrap();
        jobs.push((file.display().to_string(), models));
    }
    jobs.push(("examples/german_credit.sql".to_string(), "/var/tmp/hearth-models"));
    for (file, models) in jobs {
        let id = fleet.submit_cluster(&file, &["--models", models]);
        let job = fleet.job_ended(&id, Duration::from_secs(60));
        let logs = fleet.ok(&["job", "logs", &id]);
        assert_eq!(job["state"], "failed", "{file}: {job}\n{logs}");
        assert!(logs.contains("is outside the data roots"), "{file}: {logs}");
    }
}

/// A `standalone[2]` session's scheduler and executor admit only the process that started them: a client of
/// another user of the machine (`nobody` where the tests run as root), without the session's secret (which is
/// never written anywhere), is refused on every port
/// the process listens on — Ballista's scheduler calls and Flight alike — and the session still runs its
/// statements.
#[test]
fn a_standalone_session_admits_only_its_own_process() {
    let mut sql = Ended(Some(
        hearth()
            .args(["sql", "--master", "standalone[2]"])
            .env_remove("HEARTH_SECRET")
            .env_remove("HEARTH_SECRET_FILE")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    ));
    let pid = BTreeSet::from([u64::from(sql.0.as_ref().unwrap().id())]);
    // Its scheduler and its executor's Flight server, listening before it reads its statements.
    let ports = wait_for("the session's two servers", Duration::from_secs(60), || {
        let ports = listening_ports(&pid);
        (ports.len() >= 2).then_some(ports)
    });
    // Each port refuses the calls it serves (the other's are not routed there: UNIMPLEMENTED).
    let calls = [
        "/ballista.protobuf.SchedulerGrpc/GetJobStatus",
        "/arrow.flight.protocol.FlightService/ListActions",
    ];
    let mut refused = BTreeSet::new();
    for port in &ports {
        let address = format!("127.0.0.1:{port}");
        for call in calls {
            let status = refusal_status(&address, call);
            assert!(
                ["16", "12"].contains(&status.as_str()),
                "{call} on {address}: status {status}"
            );
            if status == "16" {
                refused.insert(call);
            }
        }
    }
    assert_eq!(refused.len(), calls.len(), "refused as UNAUTHENTICATED: {refused:?}");
    let mut sql = sql.0.take().unwrap();
    let mut statements = sql.stdin.take().unwrap();
    statements
        .write_all(b"SELECT count(*) AS n FROM (VALUES (1), (2), (3)) AS t(x);\n")
        .unwrap();
    drop(statements);
    let output = sql.wait_with_output().unwrap();
    let shown = shown(&output);
    assert!(output.status.success() && shown.contains("| 3 "), "{shown}");
    assert!(shown.contains("refused a call from 127.0.0.1"), "{shown}");
}

/// A child process, killed and reaped when a failed assertion unwinds past it.
struct Ended(Option<std::process::Child>);

impl Drop for Ended {
    fn drop(&mut self) {
        if let Some(child) = &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
