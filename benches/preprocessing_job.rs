//! Benchmark: the whole preprocessing job as a Spark user runs it — read the Higgs-schema CSV, fit the
//! four-stage pipeline (`higgs::four_stage_preprocessing`), transform the same rows and write `features` and
//! `label` as snappy Parquet (`FrameWriter`) — against, in the same run, the physical limit on this machine (a
//! bare scan of the CSV computing one aggregate, plus writing and syncing as many bytes as the job wrote) and
//! PySpark 4.0 ML doing the same job on the same file (`benches/pyspark_preprocessing.py`; pyspark is installed
//! into the libtorch environment when missing; the JVM's start is excluded). The job's parts — the fit, and
//! fit + transform with the rows drained unwritten — show where the time goes; the same bare scan by a plain
//! DataFusion context (arrow's CSV decoder, not hearth's) shows what hearth's decoder of plain lines saves.
//!
//! ```text
//! ./dev bench --bench preprocessing_job                 # 1,000,000 rows, local[2]
//! ./dev bench --bench preprocessing_job -- 10000000 2   # rows, partitions; HEARTH_BENCH_PYSPARK=0 skips PySpark
//! ```

mod common;
#[path = "common/python.rs"]
mod python;

use std::fs::{self, File};
use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{bare_aggregate, fit_transform_drained, generated_csv};
use datafusion::logical_expr::ident;
use datafusion::prelude::{CsvReadOptions, DataFrame, SessionConfig, SessionContext};
use hearth::datasets::higgs;
use hearth::exec::write::{FrameWriter, OutputFormat, SaveMode};
use hearth::prelude::*;
use prettytable::{Table, row};

/// Runs of each job, in turn; the fastest of each is reported.
const RUNS: usize = 3;

/// The PySpark release the comparison installs.
const PYSPARK: &str = "pyspark==4.0.5";

/// The second half: `bytes` written to a file in 8 MiB writes and synced, as the job's writer syncs its files.
fn bare_write(path: &Path, bytes: u64) -> Duration {
    let chunk: Vec<u8> = (0..8 << 20)
        .map(|i: u32| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    let started = Instant::now();
    let mut file = File::create(path).expect("create");
    let mut left = bytes as usize;
    while left > 0 {
        let n = left.min(chunk.len());
        file.write_all(&chunk[..n]).expect("write");
        left -= n;
    }
    file.sync_all().expect("sync");
    let elapsed = started.elapsed();
    fs::remove_file(path).expect("remove");
    elapsed
}

/// The whole job; returns the bytes written.
async fn whole_job(df: &DataFrame, out: &Path) -> u64 {
    let (_, transformed) = higgs::four_stage_preprocessing().fit_transform(df).await.expect("fit");
    let features = transformed
        .select(vec![ident("features"), ident("label")])
        .expect("select");
    let writer = FrameWriter::new(OutputFormat::Parquet).mode(SaveMode::Overwrite);
    writer.save(features, out).await.expect("write").bytes
}

/// This process's peak resident memory, in MiB (Linux).
fn peak_rss_mib() -> f64 {
    let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(f64::NAN, |kib| kib / 1024.0)
}

/// The peak resident memory of a fresh process of this benchmark that reads `csv` and, when `job`, runs the
/// whole job once: (with the job, without it), in MiB.
fn fresh_process_peaks(csv: &Path, out: &Path, partitions: usize) -> (f64, f64) {
    let peak = |job: bool| {
        let exe = std::env::current_exe().expect("this program");
        let output = Command::new(exe)
            .args([PEAK_MODE, if job { "job" } else { "idle" }])
            .arg(csv)
            .arg(out)
            .arg(partitions.to_string())
            .output()
            .expect("a fresh process");
        String::from_utf8_lossy(&output.stdout)
            .trim()
            .parse()
            .unwrap_or(f64::NAN)
    };
    (peak(true), peak(false))
}

/// The first argument that makes this program a fresh process measuring its peak memory.
const PEAK_MODE: &str = "peak-of";

/// In a fresh process: reads the CSV, runs the whole job when asked, prints the peak resident MiB.
async fn measure_peak(args: &[String]) {
    let [_, what, csv, out, partitions] = args else {
        panic!("usage: {PEAK_MODE} job|idle CSV OUT PARTITIONS");
    };
    let session = Session::builder()
        .with_default_features()
        .local(partitions.parse().expect("partitions"));
    let df = session.read_csv(csv, &CsvOptions::new()).await.expect("read csv");
    if what == "job" {
        whole_job(&df, Path::new(out)).await;
    }
    println!("{}", peak_rss_mib());
}

/// PySpark's runs of the same job: (best whole job, its fit, version), or why there are none.
fn pyspark(csv: &Path, out: &Path, partitions: usize) -> Result<(f64, f64, String), String> {
    if std::env::var("HEARTH_BENCH_PYSPARK").is_ok_and(|v| v == "0") {
        return Err("skipped (HEARTH_BENCH_PYSPARK=0)".to_string());
    }
    python::ensure_module("pyspark", PYSPARK)?;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/pyspark_preprocessing.py");
    let args = [
        csv.as_os_str().to_owned(),
        out.as_os_str().to_owned(),
        RUNS.to_string().into(),
        partitions.to_string().into(),
    ];
    let report = python::json_report("PySpark", script, args)?;
    let runs = report["runs"].as_array().cloned().unwrap_or_default();
    let best = runs
        .iter()
        .filter_map(|run| Some((run["seconds"].as_f64()?, run["fit"].as_f64()?)))
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .ok_or("PySpark reported no runs")?;
    let version = report["spark"].as_str().unwrap_or("?").to_string();
    Ok((best.0, best.1, version))
}

/// The CSV as a bare DataFusion context reads it (arrow's CSV decoder), `partitions` ways.
async fn datafusion_scan(csv: &Path, partitions: usize) -> DataFrame {
    let config = SessionConfig::new().with_target_partitions(partitions);
    SessionContext::new_with_config(config)
        .read_csv(csv.to_str().expect("a UTF-8 path"), CsvReadOptions::new())
        .await
        .expect("read csv")
}

/// The fastest of `runs` timings of `job`.
fn best(times: &[Duration]) -> f64 {
    times.iter().min().map_or(f64::NAN, Duration::as_secs_f64)
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    if args.first().is_some_and(|a| a == PEAK_MODE) {
        return measure_peak(&args).await;
    }
    let rows: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(1_000_000);
    let partitions: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(2);
    let session = Session::builder().with_default_features().local(partitions);

    let (dir, csv, csv_mib) = generated_csv(rows);
    let df = session.read_csv(&csv, &CsvOptions::new()).await.expect("read csv");
    let arrow_df = datafusion_scan(&csv, partitions).await;
    let out = dir.path().join("features.parquet");
    println!(
        "preprocessing job benchmark: {rows} Higgs-schema rows ({csv_mib:.0} MiB of CSV), local[{partitions}], \
         best of {RUNS} runs of each, in turn\n"
    );

    // One run first, for the bytes the limit's write must match.
    let bytes = whole_job(&df, &out).await;
    let mut times: [Vec<Duration>; 6] = Default::default();
    for _ in 0..RUNS {
        let started = Instant::now();
        std::hint::black_box(bare_aggregate(&df).await);
        times[0].push(started.elapsed());
        let started = Instant::now();
        std::hint::black_box(bare_aggregate(&arrow_df).await);
        times[5].push(started.elapsed());
        times[1].push(bare_write(&dir.path().join("bytes"), bytes));
        let started = Instant::now();
        std::hint::black_box(higgs::four_stage_preprocessing().fit(&df).await.expect("fit"));
        times[2].push(started.elapsed());
        let started = Instant::now();
        std::hint::black_box(fit_transform_drained(&df).await);
        times[3].push(started.elapsed());
        // Each run writes its output afresh: the last one is removed before the clock starts, as the PySpark
        // script removes its own (an `overwrite` would also time deleting the last run's files).
        fs::remove_dir_all(&out).expect("remove the last output");
        let started = Instant::now();
        std::hint::black_box(whole_job(&df, &out).await);
        times[4].push(started.elapsed());
    }
    let (peak, idle) = fresh_process_peaks(&csv, &out, partitions);
    let [scan, write, fit, drained, job, arrow_scan] = times.map(|t| best(&t));
    let limit = scan + write;
    let spark = pyspark(&csv, &dir.path().join("spark.parquet"), partitions);

    let mut table = Table::new();
    table.set_titles(row!["job", "seconds", "rows/s", "× limit", "PySpark ÷ hearth"]);
    let rate = |s: f64| format!("{:.0}", rows as f64 / s);
    let line = |table: &mut Table, name: &str, s: f64, speedup: String| {
        table.add_row(row![
            name,
            format!("{s:.3}"),
            rate(s),
            format!("{:.2}", s / limit),
            speedup
        ]);
    };
    line(
        &mut table,
        "reference: DataFusion's own CSV scan",
        arrow_scan,
        String::new(),
    );
    line(&mut table, "limit: bare CSV scan", scan, String::new());
    line(&mut table, "limit: writing the same bytes", write, String::new());
    line(&mut table, "limit: scan + write", limit, String::new());
    let versus = |hearth: f64, spark: f64| format!("{:.1}", spark / hearth);
    match &spark {
        Ok((spark_job, spark_fit, _)) => {
            line(&mut table, "hearth: fit", fit, versus(fit, *spark_fit));
            line(&mut table, "hearth: fit + transform, drained", drained, String::new());
            line(
                &mut table,
                "hearth: whole job (fit, transform, write)",
                job,
                versus(job, *spark_job),
            );
            line(&mut table, "PySpark: fit", *spark_fit, String::new());
            line(&mut table, "PySpark: whole job", *spark_job, String::new());
        }
        Err(_) => {
            line(&mut table, "hearth: fit", fit, String::new());
            line(&mut table, "hearth: fit + transform, drained", drained, String::new());
            line(
                &mut table,
                "hearth: whole job (fit, transform, write)",
                job,
                String::new(),
            );
        }
    }
    table.printstd();
    println!(
        "\nhearth's output: {:.1} MiB of Parquet (snappy); peak resident memory of a process running the whole job \
         once: {peak:.0} MiB (one that only reads the CSV's schema: {idle:.0} MiB)",
        bytes as f64 / (1 << 20) as f64
    );
    println!("whole job: {:.2}× the limit (target ≤ 1.5)", job / limit);
    match spark {
        Ok((spark_job, _, version)) => println!(
            "whole job: {:.1}× faster than PySpark {version} local[{partitions}] (target ≥ 20; JVM start excluded)",
            spark_job / job
        ),
        Err(why) => println!("PySpark: {why}"),
    }
}
