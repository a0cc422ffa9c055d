//! Benchmark: fit + transform of the four-stage preprocessing pipeline (StringIndexer → OneHotEncoder →
//! VectorAssembler → StandardScaler) on generated Higgs-schema rows, from CSV and from memory, against a bare
//! DataFusion scan computing one aggregate over the same columns in the same run.
//!
//! ```text
//! ./dev bench                 # 1,000,000 rows on local[2]
//! ./dev bench -- 200000 4     # rows, partitions
//! ```

use std::fs;
use std::time::{Duration, Instant};

use datafusion::functions_aggregate::expr_fn::sum;
use datafusion::logical_expr::{Expr, ident};
use datafusion::prelude::DataFrame;
use futures::StreamExt;
use hearth::datasets::higgs;
use hearth::prelude::*;
use prettytable::{Table, row};

const RUNS: usize = 5;

/// Peak resident memory since the last reset, in MiB (Linux; 0 elsewhere).
fn peak_rss_mib() -> f64 {
    let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// Starts a new peak-memory window (Linux resets VmHWM on writing 5 to clear_refs).
fn reset_peak_rss() {
    let _ = fs::write("/proc/self/clear_refs", "5");
}

/// Runs every batch of `df` to completion and drops it; returns the rows seen.
async fn drain(df: DataFrame) -> usize {
    let mut stream = df.execute_stream().await.expect("plan");
    let mut rows = 0;
    while let Some(batch) = stream.next().await {
        rows += batch.expect("batch").num_rows();
    }
    rows
}

/// The fastest of `RUNS` runs of `job`, and the peak memory over them.
async fn measure<F, Fut>(mut job: F) -> (Duration, f64)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = usize>,
{
    reset_peak_rss();
    let mut best = Duration::MAX;
    for _ in 0..RUNS {
        let started = Instant::now();
        std::hint::black_box(job().await);
        best = best.min(started.elapsed());
    }
    (best, peak_rss_mib())
}

fn float_features() -> Vec<&'static str> {
    higgs::FEATURES
        .iter()
        .copied()
        .filter(|f| *f != "PRI_jet_num")
        .collect()
}

fn pipeline() -> Pipeline {
    let mut assembled: Vec<&str> = float_features();
    assembled.push("jet_vec");
    Pipeline::new()
        .stage(
            StringIndexer::new()
                .input_cols(["PRI_jet_num", "Label"])
                .output_cols(["jet_idx", "label"]),
        )
        .stage(OneHotEncoder::new().input_col("jet_idx").output_col("jet_vec"))
        .stage(VectorAssembler::new().input_cols(assembled).output_col("raw"))
        .stage(
            StandardScaler::new()
                .input_col("raw")
                .output_col("features")
                .with_mean(true),
        )
}

/// The baseline: one aggregate over the same columns the pipeline reads.
async fn bare_aggregate(df: &DataFrame) -> usize {
    let sums: Vec<Expr> = higgs::FEATURES.iter().map(|f| sum(ident(*f)).alias(*f)).collect();
    drain(df.clone().aggregate(vec![], sums).expect("aggregate")).await
}

/// Fit and transform, running the transform to completion.
async fn fit_and_transform(df: &DataFrame) -> usize {
    let (_, transformed) = pipeline().fit_transform(df).await.expect("fit");
    drain(
        transformed
            .select(vec![ident("features"), ident("label")])
            .expect("select"),
    )
    .await
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let rows: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(1_000_000);
    let partitions: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(2);
    let session = Session::local(partitions);

    let dir = tempfile::tempdir().expect("temp dir");
    let csv = dir.path().join("higgs.csv");
    higgs::write_csv(&csv, rows, 42).expect("write csv");
    let csv_mib = fs::metadata(&csv).map_or(0.0, |m| m.len() as f64 / (1024.0 * 1024.0));
    let from_csv = session.read_csv(&csv, &CsvOptions::new()).await.expect("read csv");
    let in_memory = session
        .read_batches(higgs::schema(), higgs::batches(rows, 8192, 42))
        .expect("memory table");

    println!(
        "preprocessing benchmark: {rows} Higgs-schema rows ({csv_mib:.0} MiB of CSV), local[{partitions}], best of {RUNS}\n"
    );
    let (csv_base, csv_base_mem) = measure(|| bare_aggregate(&from_csv)).await;
    let (csv_fit, csv_fit_mem) = measure(|| fit_and_transform(&from_csv)).await;
    let (mem_base, mem_base_mem) = measure(|| bare_aggregate(&in_memory)).await;
    let (mem_fit, mem_fit_mem) = measure(|| fit_and_transform(&in_memory)).await;

    let mut table = Table::new();
    table.set_titles(row!["source", "job", "seconds", "× baseline", "target", "peak RSS MiB"]);
    let secs = |d: Duration| format!("{:.3}", d.as_secs_f64());
    let ratio = |d: Duration, base: Duration| d.as_secs_f64() / base.as_secs_f64();
    table.add_row(row![
        "CSV",
        "bare scan + 30-column aggregate",
        secs(csv_base),
        "1.00",
        "",
        format!("{csv_base_mem:.0}")
    ]);
    table.add_row(row![
        "CSV",
        "pipeline fit + transform",
        secs(csv_fit),
        format!("{:.2}", ratio(csv_fit, csv_base)),
        "≤ 2",
        format!("{csv_fit_mem:.0}")
    ]);
    table.add_row(row![
        "memory",
        "bare 30-column aggregate",
        secs(mem_base),
        "1.00",
        "",
        format!("{mem_base_mem:.0}")
    ]);
    table.add_row(row![
        "memory",
        "pipeline fit + transform",
        secs(mem_fit),
        format!("{:.2}", ratio(mem_fit, mem_base)),
        "≤ 5",
        format!("{mem_fit_mem:.0}")
    ]);
    table.printstd();
    println!(
        "\nrows/s, pipeline fit + transform: {:.0} from CSV, {:.0} from memory",
        rows as f64 / csv_fit.as_secs_f64(),
        rows as f64 / mem_fit.as_secs_f64()
    );
}
