//! Benchmark: what the fleet's token checks cost a request. Two bare schedulers on loopback, one started
//! `--insecure` (no check at all: the baseline) and one with a secret, where each request carries a new `api`
//! token that the scheduler checks — proof, address, service, expiry — and remembers against replays;
//! `GET /hearth/executors` round trips through hearth's REST client, in alternated rounds. Also the two
//! halves timed in this process: making a token, and checking one with its replay memory.
//!
//! ```text
//! ./dev bench -p hearth-cli --bench tokens
//! ```

use std::io::{BufRead, BufReader};
use std::net::{IpAddr, Ipv4Addr};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use hearth_exec::ballista::{ClusterSecret, DEFAULT_VALID_FOR, Presented, ReplayMemory, SchedulerRest, Service};
use prettytable::{Table, row};

/// Alternated rounds against each scheduler.
const ROUNDS: usize = 7;
/// Round trips per round.
const CALLS: usize = 400;
/// Tokens made and checked in this process.
const TOKENS: usize = 20_000;
/// The guarded scheduler's secret.
const SECRET: &str = "0123456789abcdef0123456789abcdef";

/// A bare `hearth scheduler` on a loopback port, with `secret` or `--insecure`, killed when dropped.
struct Scheduler {
    process: Child,
    address: String,
}

impl Scheduler {
    fn start(secret: Option<&str>) -> Self {
        let mut command = Command::new(env!("CARGO_BIN_EXE_hearth"));
        command
            .args(["scheduler", "--bind", "127.0.0.1:0"])
            .env_remove("HEARTH_SECRET_FILE")
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        match secret {
            Some(secret) => command.env("HEARTH_SECRET", secret),
            None => command.env_remove("HEARTH_SECRET").arg("--insecure"),
        };
        let mut process = command.spawn().expect("start hearth scheduler");
        let stdout = process.stdout.take().expect("its output");
        let address = BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .find_map(|line| line.strip_prefix("hearth scheduler listening on ").map(str::to_string))
            .expect("the scheduler says where it listens");
        Self { process, address }
    }
}

impl Drop for Scheduler {
    fn drop(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

/// Microseconds per round trip of [`CALLS`] `GET /hearth/executors` in a row.
async fn round_trips(rest: &SchedulerRest) -> f64 {
    let started = Instant::now();
    for _ in 0..CALLS {
        let _: serde_json::Value = rest.get("/hearth/executors").await.expect("the executors");
    }
    started.elapsed().as_secs_f64() * 1e6 / CALLS as f64
}

/// Microseconds per call of `work`, over [`TOKENS`] calls.
fn per_call(mut work: impl FnMut(usize)) -> f64 {
    let started = Instant::now();
    (0..TOKENS).for_each(&mut work);
    started.elapsed().as_secs_f64() * 1e6 / TOKENS as f64
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

#[tokio::main]
async fn main() {
    let secret = ClusterSecret::parse(SECRET).expect("a secret");
    let open = Scheduler::start(None);
    let guarded = Scheduler::start(Some(SECRET));
    let open_rest = SchedulerRest::new(&open.address).expect("a client").with_secret(None);
    let guarded_rest = SchedulerRest::new(&guarded.address)
        .expect("a client")
        .with_secret(Some(secret.clone()));
    // Warm both: connections made, first answers served.
    round_trips(&open_rest).await;
    round_trips(&guarded_rest).await;
    let (mut unchecked, mut checked) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        unchecked.push(round_trips(&open_rest).await);
        checked.push(round_trips(&guarded_rest).await);
    }

    let maker = secret.tokens_for(&open.address);
    let tokens: Vec<String> = (0..TOKENS).map(|_| maker.bearer()).collect();
    let make = per_call(|_| drop(maker.token(Service::Api, DEFAULT_VALID_FOR)));
    let memory = ReplayMemory::default();
    let at = IpAddr::V4(Ipv4Addr::LOCALHOST);
    let check = per_call(|n| {
        let admitted = secret
            .check(Presented::bearer(&tokens[n]), at, Service::Api)
            .expect("admitted");
        memory
            .admit(&admitted.once.expect("an expiring token"), n as u64)
            .expect("not a replay");
    });

    println!("{ROUNDS} alternated rounds of {CALLS} REST round trips on loopback, one client each\n");
    let mut table = Table::new();
    table.set_titles(row!["GET /hearth/executors", "median µs", "min µs", "vs no check"]);
    let baseline = median(unchecked.clone());
    for (name, times) in [
        ("scheduler --insecure: no check (baseline)", unchecked),
        ("scheduler with a secret: a new token per request, checked", checked),
    ] {
        let min = times.iter().copied().fold(f64::INFINITY, f64::min);
        let m = median(times);
        table.add_row(row![
            name,
            format!("{m:.1}"),
            format!("{min:.1}"),
            format!("{:+.1} µs ({:+.1} %)", m - baseline, 100.0 * (m / baseline - 1.0))
        ]);
    }
    table.printstd();
    let mut halves = Table::new();
    halves.set_titles(row![format!("in this process, {TOKENS} tokens"), "µs each"]);
    halves.add_row(row![
        "making a token (client, its addresses found once)",
        format!("{make:.2}")
    ]);
    halves.add_row(row![
        "checking it and remembering its nonce (server)",
        format!("{check:.2}")
    ]);
    halves.printstd();
}
