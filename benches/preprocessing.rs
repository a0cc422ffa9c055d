//! Benchmark: fit + transform of the four-stage preprocessing pipeline (StringIndexer → OneHotEncoder →
//! VectorAssembler → StandardScaler) on generated Higgs-schema rows, from CSV and from memory, against a bare
//! DataFusion scan computing one aggregate over the same columns in the same run.
//!
//! ```text
//! ./dev bench                 # 1,000,000 rows on local[2]
//! ./dev bench --bench preprocessing -- 200000 4     # rows, partitions
//! ```

mod common;

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, AtomicIsize};
use std::time::{Duration, Instant};

use hearth::datasets::higgs;
use hearth::prelude::*;
use mimalloc::MiMalloc;
use prettytable::{Table, row};

use common::{bare_aggregate, fit_transform_drained, generated_csv};

/// Runs of each job from CSV (about a second each) and from memory (tens of milliseconds each).
const CSV_RUNS: usize = 5;
const MEMORY_RUNS: usize = 15;

/// mimalloc, as DataFusion's own benchmarks allocate, for the baseline and hearth alike (docs/src/introduction.md: an
/// application that preprocesses with hearth gains from it too); while `COUNTING` is on it also keeps the most bytes
/// held at once, for a job's peak memory.
struct PeakCountingAllocator;

#[global_allocator]
static ALLOCATOR: PeakCountingAllocator = PeakCountingAllocator;
static COUNTING: AtomicBool = AtomicBool::new(false);
static HELD: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);

impl PeakCountingAllocator {
    fn count(&self, bytes: isize) {
        if COUNTING.load(Relaxed) {
            let held = HELD.fetch_add(bytes, Relaxed) + bytes;
            PEAK.fetch_max(held, Relaxed);
        }
    }
}

// SAFETY: every call is passed on to mimalloc unchanged, so its guarantees are this allocator's; counting only
// reads the sizes.
unsafe impl GlobalAlloc for PeakCountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's guarantees, passed on.
        let ptr = unsafe { MiMalloc.alloc(layout) };
        if !ptr.is_null() {
            self.count(layout.size() as isize);
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's guarantees, passed on.
        let ptr = unsafe { MiMalloc.alloc_zeroed(layout) };
        if !ptr.is_null() {
            self.count(layout.size() as isize);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's guarantees, passed on.
        unsafe { MiMalloc.dealloc(ptr, layout) };
        self.count(-(layout.size() as isize));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's guarantees, passed on.
        let moved = unsafe { MiMalloc.realloc(ptr, layout, new_size) };
        if !moved.is_null() {
            self.count(new_size as isize - layout.size() as isize);
        }
        moved
    }
}

/// The most memory `job` holds at once above what was held when it started, in MiB, from one run.
async fn peak_heap_mib<F: Future<Output = usize>>(job: impl FnOnce() -> F) -> f64 {
    HELD.store(0, Relaxed);
    PEAK.store(0, Relaxed);
    COUNTING.store(true, Relaxed);
    std::hint::black_box(job().await);
    COUNTING.store(false, Relaxed);
    PEAK.load(Relaxed) as f64 / (1024.0 * 1024.0)
}

/// The fastest of `runs` runs of `baseline` and of `job`, run in turn so that both meet the machine in the same
/// states, then the peak memory of each from one more run.
async fn measure<B, BFut, J, JFut>(runs: usize, mut baseline: B, mut job: J) -> [(Duration, f64); 2]
where
    B: FnMut() -> BFut,
    BFut: Future<Output = usize>,
    J: FnMut() -> JFut,
    JFut: Future<Output = usize>,
{
    let mut best = [Duration::MAX; 2];
    for _ in 0..runs {
        let started = Instant::now();
        std::hint::black_box(baseline().await);
        best[0] = best[0].min(started.elapsed());
        let started = Instant::now();
        std::hint::black_box(job().await);
        best[1] = best[1].min(started.elapsed());
    }
    let baseline_peak = peak_heap_mib(&mut baseline).await;
    let job_peak = peak_heap_mib(&mut job).await;
    [(best[0], baseline_peak), (best[1], job_peak)]
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let rows: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(1_000_000);
    let partitions: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(2);
    let session = Session::builder().with_default_features().local(partitions);

    let (_dir, csv, csv_mib) = generated_csv(rows);
    let from_csv = session.read_csv(&csv, &CsvOptions::new()).await.expect("read csv");
    let in_memory = session
        .read_batches(higgs::schema(), higgs::batches(rows, 8192, 42))
        .expect("memory table");

    println!(
        "preprocessing benchmark: {rows} Higgs-schema rows ({csv_mib:.0} MiB of CSV), local[{partitions}], best of {CSV_RUNS} runs from CSV and {MEMORY_RUNS} from memory, each \
         job run in turn with its baseline\n"
    );
    let [(csv_base, csv_base_mem), (csv_fit, csv_fit_mem)] = measure(
        CSV_RUNS,
        || bare_aggregate(&from_csv),
        || fit_transform_drained(&from_csv),
    )
    .await;
    let [(mem_base, mem_base_mem), (mem_fit, mem_fit_mem)] = measure(
        MEMORY_RUNS,
        || bare_aggregate(&in_memory),
        || fit_transform_drained(&in_memory),
    )
    .await;

    let mut table = Table::new();
    table.set_titles(row![
        "source",
        "job",
        "seconds",
        "× baseline",
        "target",
        "peak heap MiB"
    ]);
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
