//! Benchmark: what running on a fleet costs a job. A fleet of two executors (2 slots each) is started with
//! `hearth cluster start`; the SQL main job (`examples/german_credit.sql`) then runs, in alternated rounds,
//! four ways: `hearth sql --master local` and `hearth sql --master df://…` (the baselines: the same job
//! without and with the fleet), `hearth submit` (client mode) and `hearth submit --deploy-mode cluster`
//! (timed from the submission until the scheduler records the job's end) — and `hearth submit` to a second
//! fleet that speaks TLS (certificates from `hearth cluster certs`), what TLS costs the job. Also: how long
//! `cluster start` takes until every executor has registered, `hearth status`, and `cluster stop`.
//!
//! ```text
//! ./dev bench -p hearth-cli --bench fleet
//! ```

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use hearth_exec::ballista::{ClusterSecret, SchedulerRest};
use hearth_fleet::{JobRecord, JobState};
use prettytable::{Table, row};

/// Alternated rounds of each way to run the job.
const ROUNDS: usize = 5;

fn repository() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `hearth args…` in the repository with the fleet's state directory; fails on a non-zero exit.
fn hearth(state: &Path, args: &[&str]) -> Output {
    let output = Command::new(env!("CARGO_BIN_EXE_hearth"))
        .current_dir(repository())
        .env("HEARTH_CLUSTER_DIR", state)
        .env_remove("HEARTH_MASTER")
        .args(args)
        .output()
        .expect("run hearth");
    assert!(
        output.status.success(),
        "hearth {args:?}: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn timed(work: impl FnOnce()) -> f64 {
    let started = Instant::now();
    work();
    started.elapsed().as_secs_f64()
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Submits the job in cluster mode and waits until the scheduler records its end (polling every 20 ms).
async fn cluster_job(state: &Path, rest: &SchedulerRest, models: &str) -> f64 {
    let started = Instant::now();
    let output = hearth(
        state,
        &[
            "submit",
            "--deploy-mode",
            "cluster",
            "--models",
            models,
            "examples/german_credit.sql",
        ],
    );
    let text = String::from_utf8_lossy(&output.stdout);
    let id = text
        .split_whitespace()
        .find(|word| word.starts_with("driver-"))
        .expect("a job id")
        .to_string();
    loop {
        let job: JobRecord = rest.get(&format!("/hearth/jobs/{id}")).await.expect("the job's record");
        match job.state {
            JobState::Running => tokio::time::sleep(Duration::from_millis(20)).await,
            JobState::Succeeded => return started.elapsed().as_secs_f64(),
            other => panic!("job {id} ended {other:?}: {:?}", job.message),
        }
    }
}

/// Stops the fleet recorded in a state directory, if it still runs, when dropped: a bench that fails midway
/// leaves no fleet behind.
struct StopOnDrop<'a>(&'a Path);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        if self.0.join("cluster.json").exists() {
            let _ = Command::new(env!("CARGO_BIN_EXE_hearth"))
                .env("HEARTH_CLUSTER_DIR", self.0)
                .args(["cluster", "stop"])
                .output();
        }
    }
}

#[tokio::main]
async fn main() {
    let state = tempfile::tempdir().expect("a state directory");
    let models = tempfile::tempdir().expect("a model directory");
    let model_dir = |name: &str| models.path().join(name).display().to_string();
    let state = state.path();

    // Cluster-mode jobs may use the repository (their data) and the models' directory.
    let roots = [repository().display().to_string(), models.path().display().to_string()];
    let start_seconds = timed(|| {
        let start = ["cluster", "start", "--executors", "2", "--slots", "2", "--data-roots"];
        hearth(state, &[&start[..], &[&roots[0], &roots[1]]].concat());
    });
    let _plain = StopOnDrop(state);
    let status = String::from_utf8_lossy(&hearth(state, &["cluster", "status"]).stdout).into_owned();
    let master = status
        .split_whitespace()
        .find(|word| word.starts_with("df://"))
        .expect("the master")
        .to_string();
    let rest = SchedulerRest::new(&master)
        .expect("a REST client")
        .with_secret(ClusterSecret::read(&state.join("secret")).ok());
    // The same fleet over TLS, beside it.
    let certificates = tempfile::tempdir().expect("a TLS directory");
    let tls_dir = certificates.path().join("tls").display().to_string();
    hearth(state, &["cluster", "certs", "--out", &tls_dir]);
    let tls_state = tempfile::tempdir().expect("a state directory");
    let tls_state = tls_state.path();
    let tls_start_seconds = timed(|| {
        hearth(
            tls_state,
            &[
                "cluster",
                "start",
                "--executors",
                "2",
                "--slots",
                "2",
                "--tls-dir",
                &tls_dir,
            ],
        );
    });
    let _tls = StopOnDrop(tls_state);
    let status_seconds = median(
        (0..ROUNDS)
            .map(|_| timed(|| drop(hearth(state, &["status"]))))
            .collect(),
    );

    let (mut local, mut direct, mut client, mut cluster) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut tls_client = Vec::new();
    for round in 0..ROUNDS {
        let job = "examples/german_credit.sql";
        let dir = model_dir(&format!("local-{round}"));
        local.push(timed(|| {
            drop(hearth(state, &["--master", "local", "sql", "--models", &dir, job]));
        }));
        let dir = model_dir(&format!("direct-{round}"));
        direct.push(timed(|| {
            drop(hearth(state, &["--master", &master, "sql", "--models", &dir, job]));
        }));
        let dir = model_dir(&format!("client-{round}"));
        client.push(timed(|| drop(hearth(state, &["submit", "--models", &dir, job]))));
        cluster.push(cluster_job(state, &rest, &model_dir(&format!("cluster-{round}"))).await);
        let dir = model_dir(&format!("tls-{round}"));
        tls_client.push(timed(|| drop(hearth(tls_state, &["submit", "--models", &dir, job]))));
    }
    let stop_seconds = timed(|| drop(hearth(state, &["cluster", "stop"])));
    hearth(tls_state, &["cluster", "stop"]);

    let direct_median = median(direct.clone());
    let mut table = Table::new();
    table.set_titles(row![
        "the SQL main job",
        "median s",
        "min s",
        "vs hearth sql on the fleet"
    ]);
    for (name, times) in [
        ("hearth sql --master local (baseline)", local),
        ("hearth sql --master df:// (baseline)", direct),
        ("hearth submit (client mode)", client),
        ("hearth submit --deploy-mode cluster, to its end", cluster),
        ("hearth submit (client mode) to the fleet over TLS", tls_client),
    ] {
        let min = times.iter().copied().fold(f64::INFINITY, f64::min);
        let m = median(times);
        table.add_row(row![
            name,
            format!("{m:.3}"),
            format!("{min:.3}"),
            format!(
                "{:+.3} s ({:+.1} %)",
                m - direct_median,
                100.0 * (m / direct_median - 1.0)
            )
        ]);
    }
    println!("Fleet of 2 executors × 2 slots on loopback, {ROUNDS} alternated rounds\n");
    table.printstd();
    let mut fleet = Table::new();
    fleet.set_titles(row!["fleet command", "seconds"]);
    fleet.add_row(row![
        "hearth cluster start (until both executors registered)",
        format!("{start_seconds:.3}")
    ]);
    fleet.add_row(row![
        "hearth cluster start --tls-dir (the TLS fleet)",
        format!("{tls_start_seconds:.3}")
    ]);
    fleet.add_row(row!["hearth status (median)", format!("{status_seconds:.3}")]);
    fleet.add_row(row!["hearth cluster stop", format!("{stop_seconds:.3}")]);
    fleet.printstd();
}
