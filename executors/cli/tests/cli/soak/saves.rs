//! Saves and appends killed at random: `hearth fit --overwrite` replacing a fitted model, and `hearth
//! transform --mode append` adding 1,000 rows to a Parquet directory, each `kill -9`ed at a random moment of
//! its run (from a little after it starts until a little after an uninterrupted run would have ended, so
//! kills land in reading, fitting, writing the files and the commit). After each kill: the model loads (the
//! old or the new one: a model lost is one that does not), the directory holds the rows it held or those and
//! all 1,000 new ones (never some of them), and the next write sweeps what the killed one left beside them.
//! The table prints with `--nocapture`; `HEARTH_SOAK_SAVE_RUNS` (default 12) and `HEARTH_SOAK_SEED`.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::commands::CreditFiles;
use crate::common::{hearth, shown};

/// What one kind of write did under its kills.
#[derive(Default)]
struct Counts {
    runs: usize,
    /// Runs whose process ended by itself before the kill came.
    finished_first: usize,
    /// Models that no longer load, or appends that left part of their rows.
    lost: Vec<String>,
}

#[test]
fn saves_and_appends_killed_at_random_lose_nothing() {
    let runs: usize = std::env::var("HEARTH_SOAK_SAVE_RUNS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(12);
    let seed: u64 = std::env::var("HEARTH_SOAK_SEED")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| rand::rng().random());
    let mut rng = StdRng::seed_from_u64(seed);
    let files = CreditFiles::new();
    let (spec, data, model, out) = (&files.spec, &files.data, &files.model, &files.out);
    let fit = || {
        let mut command = hearth();
        command
            .args(["--master", "local[2]", "fit", "--overwrite"])
            .args([spec, data, model]);
        command
    };
    let append = || {
        let mut command = hearth();
        command
            .args(["--master", "local[2]", "transform"])
            .args([model, data])
            .args(["--select", "features,class", "--mode", "append", "--output"])
            .arg(out);
        command
    };
    // Each once uninterrupted: the model and the first 1,000 rows, and how long a run takes.
    let fit_takes = timed(fit());
    let append_takes = timed(append());

    let (mut saves, mut appends) = (Counts::default(), Counts::default());
    for run in 0..runs {
        let (counts, command, takes) = match run % 2 {
            0 => (&mut saves, fit(), fit_takes),
            _ => (&mut appends, append(), append_takes),
        };
        let rows_before = rows(out);
        counts.runs += 1;
        if killed_at_random(command, takes, &mut rng) {
            counts.finished_first += 1;
        }
        if !loads(model, data) {
            counts.lost.push(format!("run {}: the model no longer loads", run + 1));
        }
        let rows_after = rows(out);
        if rows_after != rows_before && rows_after != rows_before + 1000 {
            counts
                .lost
                .push(format!("run {}: {rows_before} rows became {rows_after}", run + 1));
        }
    }
    // One more of each, uninterrupted: it sweeps what the killed ones left beside the model and the rows.
    timed(fit());
    timed(append());
    let beside: Vec<String> = std::fs::read_dir(files.dir.path())
        .unwrap()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with('.'))
        .collect();

    println!("saves killed at random, HEARTH_SOAK_SEED={seed}");
    println!("| write | runs | ended before its kill | models lost / rows partly appended |\n|---|---|---|---|");
    for (name, counts) in [
        ("fit --overwrite (a model replaced)", &saves),
        ("transform --mode append (1,000 rows)", &appends),
    ] {
        println!(
            "| {name} | {} | {} | {} |",
            counts.runs,
            counts.finished_first,
            counts.lost.len()
        );
    }
    println!("left beside them after the next write: {beside:?}");
    let lost: Vec<&String> = saves.lost.iter().chain(&appends.lost).collect();
    assert!(lost.is_empty(), "HEARTH_SOAK_SEED={seed}: {lost:?}");
    assert!(
        beside.is_empty(),
        "HEARTH_SOAK_SEED={seed}: left beside them: {beside:?}"
    );
}

/// Runs `command` to its end, asserting it succeeded; how long it took.
fn timed(mut command: Command) -> Duration {
    let started = Instant::now();
    let out = command.output().unwrap();
    assert!(out.status.success(), "{}", shown(&out));
    started.elapsed()
}

/// Starts `command` and kills it (`kill -9`) between a tenth of `takes` and 1.1 × `takes` later; whether it
/// had ended by itself first.
fn killed_at_random(mut command: Command, takes: Duration, rng: &mut StdRng) -> bool {
    let mut child = command
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let delay = takes.mul_f64(rng.random_range(0.1..1.1));
    std::thread::sleep(delay);
    let finished = child.try_wait().unwrap().is_some();
    let _ = child.kill();
    let _ = child.wait();
    finished
}

/// Whether the fitted model in `model` loads and transforms a row of `data`.
fn loads(model: &Path, data: &Path) -> bool {
    let out = hearth().arg("transform").args([model, data]).arg("1").output().unwrap();
    out.status.success() && String::from_utf8_lossy(&out.stdout).contains("features")
}

/// The rows of the Parquet directory `dir` as pyarrow reads them (hidden and `_` files aside), 0 when none.
fn rows(dir: &Path) -> usize {
    if !dir.exists() {
        return 0;
    }
    let script = "import sys, pyarrow.dataset as ds\nprint(ds.dataset(sys.argv[1], format='parquet').count_rows())";
    let out = Command::new("python3").args(["-c", script]).arg(dir).output().unwrap();
    assert!(out.status.success(), "{}", shown(&out));
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}
