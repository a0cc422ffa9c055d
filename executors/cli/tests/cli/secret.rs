//! The fleet's secret: `hearth cluster start` makes one readable by its user alone, its processes and clients
//! prove it, and the scheduler refuses executors and clients that do not — logging each refusal. The secret
//! itself never crosses the wire, nor reaches a log.

use std::os::unix::fs::PermissionsExt;
use std::process::Stdio;
use std::time::Duration;

use crate::common::{Fleet, hearth, shown, wait_for};
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

    // An executor without it never registers; the scheduler says whom it refused.
    let scheduler = fleet.master.trim_start_matches("df://").to_string();
    let mut intruder = without()
        .args(["executor", "--scheduler", &scheduler, "--slots", "1"])
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
    assert!(text.contains("hearth-token/1/loopback/"), "the requests carried tokens");
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

/// What `curl` gets for `method path` on the fleet's scheduler with `token`: the HTTP status.
fn status_with(fleet: &Fleet, token: &str, method: &str, path: &str) -> String {
    let url = format!("http://{}{path}", fleet.master.trim_start_matches("df://"));
    let out = std::process::Command::new("curl")
        .args([
            "--silent",
            "--max-time",
            "10",
            "--output",
            "/dev/null",
            "--write-out",
            "%{http_code}",
        ])
        .args(["-X", method, "-H", &format!("Authorization: Bearer {token}"), &url])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_cluster_mode_job_reaches_only_its_own_business_and_files() {
    let fleet = Fleet::start(&["--executors", "1", "--slots", "2"]);
    let models = tempfile::tempdir().unwrap();
    let models = models.path().to_str().unwrap();
    // Each driver holds only its job's key, and the main job runs with it.
    let first = fleet.submit_cluster("examples/german_credit.sql", &["--models", models]);
    let second = fleet.submit_cluster("examples/german_credit.sql", &["--models", models]);
    for id in [&first, &second] {
        let job = fleet.job_ended(id, Duration::from_secs(180));
        assert_eq!(job["state"], "succeeded", "{job}\n{}", fleet.ok(&["job", "logs", id]));
    }

    // The first job's credential: its own record, log and kill, and the executors' resources — nothing else.
    let token = fleet.ok(&["cluster", "token", "--job", &first]);
    let token = token.trim();
    let (own, other) = (format!("/hearth/jobs/{first}"), format!("/hearth/jobs/{second}"));
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
        assert_eq!(status_with(&fleet, token, method, &path), expected, "{method} {path}");
    }
    let member = fleet.ok(&["cluster", "token"]);
    assert_eq!(status_with(&fleet, member.trim(), "GET", &other), "200");
    let log = std::fs::read_to_string(fleet.state.path().join("logs/scheduler.log")).unwrap();
    assert!(
        log.contains(&format!("job {first} may not ask it")),
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
