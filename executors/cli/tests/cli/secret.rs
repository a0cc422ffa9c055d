//! The fleet's secret: `hearth cluster start` makes one readable by its user alone, its processes and clients
//! present it, and the scheduler refuses executors and clients that do not — logging each refusal.

use std::os::unix::fs::PermissionsExt;
use std::process::Stdio;
use std::time::Duration;

use crate::common::{Fleet, hearth, shown, wait_for};

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
