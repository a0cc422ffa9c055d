//! Benchmark: a fleet of many hosts with its data in an object store, against the same fleet on files every
//! host sees. The three-host lab of the tests (network namespaces and a private `/tmp` per executor, so it
//! needs root): a scheduler and the driver on one host, an executor of one slot on each other, and the S3
//! server of the tests (moto) on the first host's address. In the same run, alternated:
//!
//! - the Higgs-like preprocessing job (`hearth fit-transform` of the four-stage pipeline, `features` and
//!   `label` written as snappy Parquet) from the S3 server to the S3 server, and from a local CSV file to a
//!   local directory — at 1,000,000 and 10,000,000 rows — with the driver's peak resident memory in each;
//! - one epoch of an MLP (`CREATE MODEL … max_iterations = 1` on both executors) over 1,000,000 rows read from
//!   the store, and from the local file.
//!
//! ```text
//! ./dev bench -p hearth-cli --bench stores                       # 1M and 10M rows
//! ./dev bench -p hearth-cli --bench stores -- 1000000            # the sizes to run
//! ```

#[allow(dead_code)]
#[path = "../tests/cli/common.rs"]
mod common;
#[allow(dead_code)]
#[path = "../../../datasets/higgs.rs"]
mod higgs;
#[allow(dead_code)]
#[path = "../tests/cli/lab.rs"]
mod lab;
#[allow(dead_code)]
#[path = "../tests/cli/s3.rs"]
mod s3;

use std::path::{Path, PathBuf};
use std::time::Instant;

use prettytable::{Table, row};

use crate::common::shown;
use crate::lab::{Lab, lab_or_skip, start_fleet};
use crate::s3::S3Server;

/// The store's bucket.
const BUCKET: &str = "bench";

/// What one run of a job measured.
struct Run {
    seconds: f64,
    /// The driver's peak resident memory, in MiB.
    driver_peak_mib: f64,
}

/// Runs `hearth args…` on the lab's first host (the driver's) under `/usr/bin/time`, and returns its wall
/// time, its peak resident memory and its standard output.
fn driver(lab: &Lab, args: &[&str]) -> (Run, String) {
    let hearth = env!("CARGO_BIN_EXE_hearth");
    let mut timed = vec!["-f", "driver peak %M KiB", hearth];
    timed.extend(args);
    let started = Instant::now();
    let output = lab.program_on(0, Path::new("/usr/bin/time"), &timed).output().unwrap();
    let seconds = started.elapsed().as_secs_f64();
    assert!(output.status.success(), "hearth {args:?}: {}", shown(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    let kib: f64 = stderr
        .lines()
        .rev()
        .find_map(|line| line.strip_prefix("driver peak ")?.strip_suffix(" KiB")?.parse().ok())
        .unwrap_or_else(|| panic!("no peak memory in: {stderr}"));
    let run = Run {
        seconds,
        driver_peak_mib: kib / 1024.0,
    };
    (run, String::from_utf8_lossy(&output.stdout).into_owned())
}

/// The preprocessing job from `input` to `output` (overwriting it).
fn preprocessing(lab: &Lab, master: &str, pipeline: &Path, input: &str, output: &str, model: &Path) -> Run {
    let (pipeline, model) = (pipeline.to_str().unwrap(), model.to_str().unwrap());
    let args = [
        "--master",
        master,
        "fit-transform",
        pipeline,
        input,
        model,
        "--select",
        "features,label",
        "--mode",
        "overwrite",
        "--output",
        output,
    ];
    let _ = std::fs::remove_dir_all(model);
    driver(lab, &args).0
}

/// One epoch of an MLP on both executors over the events at `input`; returns the run and the training's own
/// seconds (the `seconds` of CREATE MODEL's answer).
fn mlp_epoch(lab: &Lab, master: &str, input: &str, work: &Path) -> (Run, f64) {
    let sql = format!(
        "CREATE EXTERNAL TABLE events STORED AS CSV LOCATION '{input}' OPTIONS ('format.has_header' 'true');
         CREATE OR REPLACE MODEL higgs_mlp
         OPTIONS (model_type = 'mlp_classifier', input_label_cols = ['Label'], hidden_units = [64, 64],
                  max_iterations = 1, batch_size = 256, seed = 1, workers = 2, data_split_method = 'no_split')
         AS SELECT * EXCLUDE (EventId, Weight) FROM events;"
    );
    let job = work.join("mlp_epoch.sql");
    std::fs::write(&job, sql).unwrap();
    let models = work.join("models");
    let (job, models) = (job.to_str().unwrap(), models.to_str().unwrap());
    let (run, stdout) = driver(lab, &["--master", master, "sql", "--models", models, job]);
    // | higgs_mlp | trained | rows | rows | loss | seconds | attempts | path |
    let training: f64 = stdout
        .lines()
        .find(|line| line.contains("| higgs_mlp"))
        .and_then(|line| line.split('|').nth(6)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no training seconds in:\n{stdout}"));
    (run, training)
}

/// The row counts to run: the arguments, else 1M and 10M.
fn sizes() -> Vec<usize> {
    let given: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    match given.is_empty() {
        true => vec![1_000_000, 10_000_000],
        false => given,
    }
}

fn main() {
    let Some(mut lab) = lab_or_skip("stores benchmark") else {
        return;
    };
    // Files every host sees (not /tmp, which is each executor's own).
    let work = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let sizes = sizes();
    let mut inputs: Vec<(usize, PathBuf)> = Vec::new();
    for &rows in &sizes {
        let path = work.path().join(format!("higgs-{rows}.csv"));
        let started = Instant::now();
        higgs::write_csv(&path, rows, 42).unwrap();
        let mib = path.metadata().unwrap().len() as f64 / (1 << 20) as f64;
        eprintln!(
            "wrote {rows} events ({mib:.0} MiB) in {:.1} s",
            started.elapsed().as_secs_f64()
        );
        inputs.push((rows, path));
    }
    let puts: Vec<(String, &Path)> = (inputs.iter())
        .map(|(rows, path)| (format!("s3://{BUCKET}/higgs-{rows}.csv"), path.as_path()))
        .collect();
    let puts: Vec<(&str, &Path)> = puts.iter().map(|(url, path)| (url.as_str(), *path)).collect();
    let started = Instant::now();
    let store = S3Server::start(&lab.on_host(0), &lab.address(0), &[BUCKET], &puts);
    eprintln!(
        "uploaded the inputs to the S3 server in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    // Every process holds the keys; the drivers know where the store is (the executors learn it from the job).
    lab.env = s3::credentials();
    let scheduler = start_fleet(&mut lab, &[]);
    let master = format!("df://{scheduler}");
    lab.env = store.driver_env();
    let pipeline = work.path().join("pipeline");
    higgs::four_stage_preprocessing().save(&pipeline).unwrap();
    let pipeline = pipeline.join("pipeline.json");
    let model = work.path().join("model");

    let mut table = Table::new();
    table.set_titles(row![
        "job",
        "rows",
        "local → local: s",
        "S3 → S3: s",
        "S3 ÷ local",
        "driver peak, local: MiB",
        "driver peak, S3: MiB"
    ]);
    for (rows, path) in &inputs {
        let local_out = work.path().join(format!("features-{rows}"));
        let runs = if *rows >= 10_000_000 { 1 } else { 2 };
        let (mut local, mut remote) = (Vec::new(), Vec::new());
        for _ in 0..runs {
            let input = path.to_str().unwrap();
            local.push(preprocessing(
                &lab,
                &master,
                &pipeline,
                input,
                local_out.to_str().unwrap(),
                &model,
            ));
            let input = format!("s3://{BUCKET}/higgs-{rows}.csv");
            let output = format!("s3://{BUCKET}/features-{rows}");
            remote.push(preprocessing(&lab, &master, &pipeline, &input, &output, &model));
        }
        let (local, remote) = (fastest(local), fastest(remote));
        let job = "preprocessing (fit-transform, Parquet out)";
        add_row(
            &mut table,
            job,
            *rows,
            (local.seconds, remote.seconds),
            Some((&local, &remote)),
        );
        eprintln!("{rows} rows: local {:.2} s, S3 {:.2} s", local.seconds, remote.seconds);
    }
    if let Some((rows, path)) = inputs.iter().find(|(rows, _)| *rows == 1_000_000).or(inputs.first()) {
        let (local, local_training) = mlp_epoch(&lab, &master, path.to_str().unwrap(), work.path());
        let input = format!("s3://{BUCKET}/higgs-{rows}.csv");
        let (remote, remote_training) = mlp_epoch(&lab, &master, &input, work.path());
        let job = "MLP 64-64, 1 epoch on 2 executors (whole job)";
        add_row(
            &mut table,
            job,
            *rows,
            (local.seconds, remote.seconds),
            Some((&local, &remote)),
        );
        let job = "  of which training (CREATE MODEL's seconds)";
        add_row(&mut table, job, *rows, (local_training, remote_training), None);
    }
    table.printstd();
}

/// A row of the table: `job` over `rows` rows, its seconds from local files and from the store, and the
/// drivers' peaks where measured.
fn add_row(table: &mut Table, job: &str, rows: usize, (local, remote): (f64, f64), peaks: Option<(&Run, &Run)>) {
    let peak = |run: Option<&Run>| run.map_or(String::new(), |r| format!("{:.0}", r.driver_peak_mib));
    table.add_row(row![
        job,
        rows,
        format!("{local:.2}"),
        format!("{remote:.2}"),
        format!("{:.2}", remote / local),
        peak(peaks.map(|p| p.0)),
        peak(peaks.map(|p| p.1))
    ]);
}

/// The fastest of `runs`, with the largest driver peak among them.
fn fastest(runs: Vec<Run>) -> Run {
    let peak = runs.iter().map(|r| r.driver_peak_mib).fold(0.0, f64::max);
    let seconds = runs.iter().map(|r| r.seconds).fold(f64::INFINITY, f64::min);
    Run {
        seconds,
        driver_peak_mib: peak,
    }
}
