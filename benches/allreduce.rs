//! Benchmark: ring allreduce bus bandwidth at N = 2 — over loopback TCP with frames integrity-checked (the
//! default between processes) and with them encrypted, and through memory (ranks of one process, as `local[2]`
//! runs them) — against a raw loopback TCP copy of the same bytes and against `torch.distributed`'s gloo
//! backend (two Python processes, `benches/gloo_allreduce.py`, which neither checks nor encrypts), measured in
//! the same run.
//!
//! Bus bandwidth is NCCL's measure: `size / time × 2(N − 1)/N`, the rate each link carries. Two baselines:
//! the same number of bytes sent one way over one loopback TCP connection, and sent both ways at once (one
//! connection each way, as the ring's two links are used). On a real network the two are the same figure;
//! on loopback both directions share the host's cores, so on a small host the second is the link rate an
//! allreduce can reach.
//!
//! ```text
//! cargo bench --bench allreduce
//! ```

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Instant;

use hearth::collective::{FrameProtection, LocalWorld};
use prettytable::{Table, row};

const WORLD: usize = 2;

/// Alternated rounds of the raw copy and the allreduce at each size.
const ROUNDS: usize = 3;

/// Repetitions for a message of `bytes`: enough to run about a quarter of a second, at least 3.
fn repetitions(bytes: usize) -> usize {
    (256 * 1024 * 1024 / bytes.max(1)).clamp(3, 2000)
}

/// Seconds per copy of `bytes` over each of `links` loopback TCP connections at once (best of the
/// repetitions, slowest connection).
fn raw_copy(bytes: usize, links: usize) -> f64 {
    let reps = repetitions(bytes);
    let start_line = Arc::new(Barrier::new(links));
    let copies: Vec<_> = (0..links)
        .map(|_| {
            let start_line = Arc::clone(&start_line);
            thread::spawn(move || one_way_copies(bytes, reps, &start_line))
        })
        .collect();
    let per_link: Vec<Vec<f64>> = copies.into_iter().map(|c| c.join().expect("copy")).collect();
    (0..reps)
        .map(|i| per_link.iter().map(|t| t[i]).fold(0.0, f64::max))
        .fold(f64::MAX, f64::min)
}

/// Seconds of each of `reps` copies of `bytes` over one loopback TCP connection, each started when every
/// connection is at `start_line`.
fn one_way_copies(bytes: usize, reps: usize, start_line: &Barrier) -> Vec<f64> {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let address = listener.local_addr().expect("address");
    let reader = thread::spawn(move || {
        let (mut stream, _) = listener.accept().expect("accept");
        let mut buf = vec![0u8; bytes];
        for _ in 0..reps {
            stream.read_exact(&mut buf).expect("read");
            stream.write_all(&[1]).expect("ack");
        }
    });
    let mut stream = TcpStream::connect(address).expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    let payload = vec![7u8; bytes];
    let mut ack = [0u8; 1];
    let times = (0..reps)
        .map(|_| {
            start_line.wait();
            let started = Instant::now();
            stream.write_all(&payload).expect("write");
            stream.read_exact(&mut ack).expect("ack");
            started.elapsed().as_secs_f64()
        })
        .collect();
    reader.join().expect("reader");
    times
}

/// How the ranks' values travel.
#[derive(Clone, Copy)]
enum Links {
    /// Over loopback TCP, each frame protected so.
    Tcp(FrameProtection),
    /// Through memory.
    Memory,
}

/// Seconds per allreduce of `bytes` of f32 across `WORLD` ranks linked as `links` says (best of the
/// repetitions, slowest rank).
fn allreduce(bytes: usize, links: Links) -> f64 {
    let reps = repetitions(bytes);
    let start_line = Barrier::new(WORLD);
    let world = match links {
        Links::Tcp(protection) => LocalWorld::new(WORLD).share_memory(false).frame_protection(protection),
        Links::Memory => LocalWorld::new(WORLD),
    };
    let per_rank: Vec<Vec<f64>> = world
        .run(|mut comm| {
            let mut values = vec![1.0f32; bytes / 4];
            let mut times = Vec::with_capacity(reps);
            for _ in 0..reps {
                comm.barrier().expect("barrier");
                start_line.wait();
                let started = Instant::now();
                comm.allreduce_sum(&mut values).expect("allreduce");
                times.push(started.elapsed().as_secs_f64());
            }
            times
        })
        .expect("ranks join");
    (0..reps)
        .map(|i| per_rank.iter().map(|t| t[i]).fold(0.0, f64::max))
        .fold(f64::MAX, f64::min)
}

/// Seconds per allreduce of each size with `torch.distributed`'s gloo backend on `WORLD` processes, from the
/// Python `torch` on PATH (the libtorch install provides it); `Err` says why it could not be measured.
fn gloo(sizes: &[usize]) -> Result<HashMap<usize, f64>, String> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/gloo_allreduce.py");
    let output = Command::new("python3")
        .arg(script)
        .args(sizes.iter().map(ToString::to_string))
        .output()
        .map_err(|e| format!("python3 could not run: {e}"))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(format!("python3 failed: {}", stderr.lines().last().unwrap_or("")));
    }
    let times: HashMap<String, f64> =
        serde_json::from_slice(&output.stdout).map_err(|e| format!("unreadable gloo timings: {e}"))?;
    Ok(times
        .into_iter()
        .filter_map(|(size, t)| Some((size.parse().ok()?, t)))
        .collect())
}

/// Bus bandwidth in GB/s of an allreduce of `bytes` taking `seconds`.
fn bus(bytes: usize, seconds: f64) -> f64 {
    bytes as f64 / seconds * 2.0 * (WORLD - 1) as f64 / WORLD as f64 / 1e9
}

fn main() {
    let sizes = [4 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20];
    let gloo = gloo(&sizes);
    let mut table = Table::new();
    table.set_titles(row![
        "size",
        "raw one way GB/s",
        "raw both ways GB/s",
        "integrity bus GB/s",
        "/ raw both ways",
        "encrypted bus GB/s",
        "/ raw both ways",
        "gloo bus GB/s",
        "integrity / gloo",
        "target",
        "encrypted / gloo",
        "memory bus GB/s",
        "memory / gloo"
    ]);
    for bytes in sizes {
        // They alternate, each keeping its best: this machine's speed drifts, all see the same drift.
        let (mut one_way_seconds, mut both_ways_seconds) = (f64::MAX, f64::MAX);
        let (mut checked_seconds, mut encrypted_seconds, mut memory_seconds) = (f64::MAX, f64::MAX, f64::MAX);
        for _ in 0..ROUNDS {
            one_way_seconds = one_way_seconds.min(raw_copy(bytes, 1));
            both_ways_seconds = both_ways_seconds.min(raw_copy(bytes, 2));
            checked_seconds = checked_seconds.min(allreduce(bytes, Links::Tcp(FrameProtection::Integrity)));
            encrypted_seconds = encrypted_seconds.min(allreduce(bytes, Links::Tcp(FrameProtection::Encryption)));
            memory_seconds = memory_seconds.min(allreduce(bytes, Links::Memory));
        }
        let (one_way, both_ways) = (
            bytes as f64 / one_way_seconds / 1e9,
            bytes as f64 / both_ways_seconds / 1e9,
        );
        let (checked, encrypted, memory) = (
            bus(bytes, checked_seconds),
            bus(bytes, encrypted_seconds),
            bus(bytes, memory_seconds),
        );
        let label = if bytes >= 1 << 20 {
            format!("{} MiB", bytes >> 20)
        } else {
            format!("{} KiB", bytes >> 10)
        };
        let theirs = gloo.as_ref().ok().and_then(|g| g.get(&bytes)).map(|&t| bus(bytes, t));
        let versus = |ours: f64| theirs.map_or("-".to_string(), |g| format!("{:.2}", ours / g));
        table.add_row(row![
            label,
            format!("{one_way:.2}"),
            format!("{both_ways:.2}"),
            format!("{checked:.2}"),
            format!("{:.2}", checked / both_ways),
            format!("{encrypted:.2}"),
            format!("{:.2}", encrypted / both_ways),
            theirs.map_or("-".to_string(), |g| format!("{g:.2}")),
            versus(checked),
            "> 1",
            versus(encrypted),
            format!("{memory:.2}"),
            versus(memory)
        ]);
    }
    println!(
        "ring allreduce, N = {WORLD} ranks of one process, f32 sum, best of the repetitions in {ROUNDS} alternated rounds\n"
    );
    table.printstd();
    if let Err(why) = gloo {
        println!("gloo not measured: {why}");
    }
}
