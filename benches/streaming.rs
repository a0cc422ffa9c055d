//! Benchmark: training on more rows than a rank holds in memory. The dist-keras Higgs job — the three-stage
//! preprocessing, then an MLP 64-64 for one epoch on `local[2]` — over generated Higgs events produced as
//! they are read (no file, nothing held by the source), trained twice in the same run: with the rows held in
//! memory (an unbounded budget: training as it was before streaming) and streamed (a 64 MiB budget per
//! rank, the default shuffle buffer). Each run is a process of its own, so its peak RSS is its own. Both
//! modes cache the pipeline's input with a 64 MiB memory limit (`Pipeline::cache_memory_limit`; the rest
//! goes to local disk), so the process's memory is bounded by settings alone.
//!
//! ```text
//! ./dev bench --bench streaming                        # 1,000,000 and 10,000,000 events
//! ./dev bench --bench streaming -- 1000000 40000000    # any row counts
//! ```
//!
//! Printed per row count and mode: the process's peak RSS, the most a rank's rows held in memory at once (the
//! Ranks table's peak memory), the epoch's samples/s (both ranks together), the whole fit's seconds (preprocessing, spilling and training), and the accuracy on 200,000 held-out events.
//! A held run is skipped where its rows cannot fit the machine, judged from the peak RSS per event of the last
//! held run (row counts are best given smallest first).

use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::streaming::StreamingTable;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::streaming::PartitionStream;
use hearth::datasets::higgs;
use hearth::prelude::*;
use prettytable::{Table, row};

/// Events per generated batch.
const BATCH: usize = 8192;
/// Held-out events scored after training.
const TEST_ROWS: usize = 200_000;
/// The streamed runs' budget per rank.
const STREAMED_BUDGET: u64 = 64 << 20;
/// The memory the pipeline's input cache may hold before it writes the rest to disk, in every run.
const CACHE_MEMORY: usize = 64 << 20;
const SEED: u64 = 42;

/// Events `first .. first + rows`, generated batch by batch as a partition is read.
#[derive(Debug)]
struct Events {
    schema: SchemaRef,
    first: usize,
    rows: usize,
}

impl PartitionStream for Events {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, _ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        let (first, end) = (self.first, self.first + self.rows);
        let batches = (first..end)
            .step_by(BATCH)
            .map(move |start| Ok(higgs::batch(start as u64, BATCH.min(end - start), SEED)));
        Box::pin(RecordBatchStreamAdapter::new(
            Arc::clone(&self.schema),
            futures::stream::iter(batches),
        ))
    }
}

/// Events `first .. first + rows` as a frame of two partitions generated on the fly.
fn events(session: &Session, first: usize, rows: usize) -> DataFrame {
    let schema = higgs::schema();
    let half = rows / 2;
    let partitions: Vec<Arc<dyn PartitionStream>> = vec![
        Arc::new(Events {
            schema: Arc::clone(&schema),
            first,
            rows: half,
        }),
        Arc::new(Events {
            schema: Arc::clone(&schema),
            first: first + half,
            rows: rows - half,
        }),
    ];
    let table = StreamingTable::try_new(schema, partitions).expect("table");
    session.context().read_table(Arc::new(table)).expect("frame")
}

/// One run, in this process: fit, train, score; prints `peak_kib samples_per_s fit_seconds accuracy held
/// rank_peak_bytes`.
async fn run(mode: &str, rows: usize) {
    let session = Session::builder().with_default_features().local(2);
    let started = Instant::now();
    let (preprocessing, prepared) = higgs::preprocessing()
        .cache_memory_limit(CACHE_MEMORY)
        .fit_transform(&events(&session, 0, rows))
        .await
        .expect("preprocessing");
    let mlp = MlpClassifier::new()
        .hidden_layers([64, 64])
        .epochs(1)
        .batch_size(128)
        .workers(2)
        .seed(SEED)
        .device(DeviceChoice::Cpu);
    let mlp = match mode {
        "held" => mlp.memory_budget(u64::MAX),
        _ => mlp.memory_budget(STREAMED_BUDGET),
    };
    let model = mlp.fit(&prepared).await.expect("training");
    let fit_seconds = started.elapsed().as_secs_f64();
    let epoch = &model.history()[0];
    let test = preprocessing
        .transform(&events(&session, rows, TEST_ROWS))
        .expect("test rows");
    let accuracy = MulticlassClassificationEvaluator::new()
        .metric_name("accuracy")
        .evaluate(&model.transform(&test).expect("scores"))
        .await
        .expect("accuracy");
    let ranks = &model.summary().ranks;
    let streamed = ranks.iter().all(|r| r.streamed);
    let rank_peak = ranks.iter().map(|r| r.peak_bytes).max().unwrap_or(0);
    println!(
        "RESULT {} {:.0} {fit_seconds:.1} {accuracy:.4} {} {rank_peak}",
        peak_kib(),
        epoch.rows as f64 / epoch.seconds,
        if streamed { "streamed" } else { "held" }
    );
}

/// This process's peak resident memory, in KiB (`VmHWM`).
fn peak_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Memory this machine has available, in bytes.
fn available_bytes() -> f64 {
    let info = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    info.lines()
        .find_map(|line| line.strip_prefix("MemAvailable:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kib| kib * 1024.0)
}

/// Runs one mode at one row count in a process of its own and reads its result line.
fn child(mode: &str, rows: usize) -> Option<Vec<String>> {
    let output = Command::new(std::env::current_exe().expect("this program"))
        .args(["--run", mode, &rows.to_string()])
        .output()
        .expect("run");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let result = stdout.lines().find_map(|line| line.strip_prefix("RESULT "));
    if result.is_none() {
        eprintln!(
            "{mode} at {rows} rows failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    result.map(|line| line.split_whitespace().map(str::to_string).collect())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    if args.first().map(String::as_str) == Some("--run") {
        let rows = args[2].parse().expect("rows");
        let runtime = tokio::runtime::Runtime::new().expect("runtime");
        runtime.block_on(run(&args[1], rows));
        return;
    }
    let counts: Vec<usize> = match args.is_empty() {
        true => vec![1_000_000, 10_000_000],
        false => args.iter().map(|a| a.parse().expect("a row count")).collect(),
    };
    let mut table = Table::new();
    table.set_titles(row![
        "events",
        "mode",
        "peak RSS (MiB)",
        "rank peak (MiB)",
        "samples/s",
        "fit (s)",
        "test accuracy"
    ]);
    // Bytes per event of the last held run, peak RSS over events: whether a larger held run would fit here.
    let mut held_bytes_per_row: Option<f64> = None;
    for rows in counts {
        for mode in ["held", "streamed"] {
            let held_need = held_bytes_per_row.map(|per_row| rows as f64 * per_row);
            if mode == "held" && held_need.is_some_and(|need| need > 0.6 * available_bytes()) {
                table.add_row(row![rows, mode, "does not fit", "-", "-", "-", "-"]);
                continue;
            }
            match child(mode, rows) {
                Some(cells) => {
                    let rss = cells[0].parse::<f64>().unwrap_or(0.0) / 1024.0;
                    let rank_peak = cells[5].parse::<f64>().unwrap_or(0.0) / (1024.0 * 1024.0);
                    if mode == "held" {
                        held_bytes_per_row = Some(rss * 1024.0 * 1024.0 / rows as f64);
                    }
                    table.add_row(row![
                        rows,
                        cells[4],
                        format!("{rss:.0}"),
                        format!("{rank_peak:.0}"),
                        cells[1],
                        cells[2],
                        cells[3]
                    ]);
                }
                None => {
                    table.add_row(row![rows, mode, "failed", "-", "-", "-", "-"]);
                }
            }
        }
    }
    table.printstd();
}
