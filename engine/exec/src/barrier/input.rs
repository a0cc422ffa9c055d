//! A barrier task's partition as its function gets it: held in memory while it fits the stage's memory budget,
//! else spilled to the task's disk as it arrives, in sorted runs, and read back as a stream.
//!
//! While the partition arrives, each batch's row hashes give the task's content position — the smallest
//! hash, which its rank follows — without keeping the rows. A partition that outgrows a third of the budget (what a
//! trainer needs to hold it, its dense copy and its tensors) is spilled: the rows held so far and every batch
//! after them go into runs of at most a third of the budget, each sorted by row hash (ties in arrival order)
//! and written as Arrow IPC with the hashes alongside. [`BarrierInput::canonical_batches`] merges the runs,
//! a batch of each at a time, into the partition's canonical order — the order
//! [`canonical_order`](super::canonical_order) gives in memory — so a spilled task computes what a held one
//! does. The runs live in a private folder of the session's spill directory and go with the input.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::Path;
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, RecordBatch, UInt64Array};
use datafusion::arrow::compute::interleave_record_batch;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::ipc::reader::FileReader;
use datafusion::arrow::ipc::writer::FileWriter;
use datafusion::common::cast::as_uint64_array;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{DiskManager, SendableRecordBatchStream};
use futures::TryStreamExt;
use hearth_common::scratch::scratch_dir_in;
use tempfile::TempDir;

use super::row_order::row_hashes;

/// The column of row hashes a spilled run carries after the partition's own.
const HASH_COLUMN: &str = "__hearth_row_hash";

/// Rows per batch of the merged stream.
pub const SPILL_BATCH_ROWS: usize = 8192;

/// Rows per batch of a run on disk: the merge holds one batch of every run, so they are small.
const RUN_BATCH_ROWS: usize = 256;

/// A barrier task's partition: its rows in memory, or spilled to disk beyond the stage's memory budget.
///
/// ```
/// use std::sync::Arc;
/// use datafusion::arrow::array::{Int64Array, RecordBatch};
/// use hearth_exec::barrier::BarrierInput;
///
/// let batch = RecordBatch::try_from_iter([("x", Arc::new(Int64Array::from(vec![3, 1, 2])) as _)]).unwrap();
/// let input = BarrierInput::from_batches(vec![batch]).unwrap();
/// assert_eq!((input.rows(), input.is_spilled()), (3, false));
/// let rows: usize = input.canonical_batches(2).unwrap().map(|b| b.unwrap().num_rows()).sum();
/// assert_eq!(rows, 3);
/// ```
pub struct BarrierInput {
    schema: SchemaRef,
    rows: usize,
    lowest_hash: u64,
    peak_bytes: usize,
    budget: Option<usize>,
    held: Held,
}

enum Held {
    Memory(Vec<RecordBatch>),
    Spilled { dir: TempDir, runs: Vec<usize> },
}

impl BarrierInput {
    /// Rows given in memory (no budget).
    pub fn from_batches(batches: Vec<RecordBatch>) -> Result<Self> {
        let schema = match batches.first() {
            Some(batch) => batch.schema(),
            None => Arc::new(Schema::empty()),
        };
        let mut lowest_hash = u64::MAX;
        for batch in &batches {
            lowest_hash = row_hashes(batch)?.into_iter().fold(lowest_hash, u64::min);
        }
        Ok(Self {
            schema,
            rows: batches.iter().map(RecordBatch::num_rows).sum(),
            peak_bytes: batches.iter().map(RecordBatch::get_array_memory_size).sum(),
            lowest_hash,
            budget: None,
            held: Held::Memory(batches),
        })
    }

    /// Drains `stream`, holding its rows while they fit a third of `budget` bytes and spilling them to a
    /// folder of `disk`'s (its first directory, else the system's temporary one) beyond it.
    pub async fn collect(
        mut stream: SendableRecordBatchStream,
        budget: Option<usize>,
        disk: &Arc<DiskManager>,
    ) -> Result<Self> {
        let schema = stream.schema();
        let hold_up_to = budget.map_or(usize::MAX, |b| b / 3);
        let run_bytes = budget.map_or(usize::MAX, |b| b / 4);
        let mut collecting = Collecting {
            memory: Vec::new(),
            memory_bytes: 0,
            spill: None,
            lowest_hash: u64::MAX,
            rows: 0,
            peak_bytes: 0,
        };
        while let Some(batch) = stream.try_next().await? {
            let bytes = batch.get_array_memory_size();
            if collecting.spill.is_none() && collecting.memory_bytes + bytes <= hold_up_to {
                collecting.add(batch, (hold_up_to, run_bytes), &schema, disk)?;
                continue;
            }
            // Sorting and writing runs blocks: off the async workers.
            let (schema, disk) = (Arc::clone(&schema), Arc::clone(disk));
            collecting = blocking(move || {
                collecting.add(batch, (hold_up_to, run_bytes), &schema, &disk)?;
                Ok(collecting)
            })
            .await?;
        }
        let held = match collecting.spill {
            Some(mut spill) => {
                let schema = Arc::clone(&schema);
                let spill = blocking(move || spill.flush(&schema).map(|()| spill)).await?;
                Held::Spilled {
                    dir: spill.dir,
                    runs: spill.runs,
                }
            }
            None => Held::Memory(collecting.memory),
        };
        Ok(Self {
            schema,
            rows: collecting.rows,
            lowest_hash: collecting.lowest_hash,
            peak_bytes: collecting.peak_bytes,
            budget,
            held,
        })
    }

    /// The rows' schema.
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// Rows in the partition.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Whether the rows were spilled to disk.
    pub fn is_spilled(&self) -> bool {
        matches!(self.held, Held::Spilled { .. })
    }

    /// The stage's memory budget for this task, in bytes (none: unbounded).
    pub fn budget(&self) -> Option<usize> {
        self.budget
    }

    /// The most bytes of rows held in memory at once while the partition arrived.
    pub fn peak_bytes(&self) -> usize {
        self.peak_bytes
    }

    /// The smallest row hash (`u64::MAX` without rows): where the partition's rank comes from.
    pub fn lowest_hash(&self) -> u64 {
        self.lowest_hash
    }

    /// The folder the spilled runs are in, where a function may keep files of its own for as long as the
    /// input lives (none in memory).
    pub fn spill_dir(&self) -> Option<&Path> {
        match &self.held {
            Held::Memory(_) => None,
            Held::Spilled { dir, .. } => Some(dir.path()),
        }
    }

    /// Every row in memory, in arrival order (spilled rows: in canonical order), for functions that want them
    /// all at once.
    pub fn into_batches(self) -> Result<Vec<RecordBatch>> {
        match self.held {
            Held::Memory(batches) => Ok(batches),
            Held::Spilled { .. } => self.canonical_batches(SPILL_BATCH_ROWS)?.collect(),
        }
    }

    /// The rows in their canonical order (by row hash over every column, ties in arrival order), `rows` at a
    /// time: merged from the spilled runs a batch of each at a time, or sorted in memory.
    pub fn canonical_batches(&self, rows: usize) -> Result<Box<dyn Iterator<Item = Result<RecordBatch>> + Send + '_>> {
        let rows = rows.max(1);
        match &self.held {
            Held::Memory(batches) => {
                let names: Vec<&str> = self.schema.fields().iter().map(|f| f.name().as_str()).collect();
                let sorted = super::canonical_order(batches, &names)?;
                let slices = sorted.into_iter().flat_map(move |all| {
                    (0..all.num_rows())
                        .step_by(rows)
                        .map(|start| Ok(all.slice(start, rows.min(all.num_rows() - start))))
                        .collect::<Vec<_>>()
                });
                Ok(Box::new(slices))
            }
            Held::Spilled { dir, runs } => Ok(Box::new(Merge::open(dir.path(), runs.len(), rows)?)),
        }
    }
}

/// `work` on a thread where blocking is expected.
async fn blocking<T: Send + 'static>(work: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| DataFusionError::Execution(format!("spilling the partition: {e}")))?
}

/// A partition arriving.
struct Collecting {
    memory: Vec<RecordBatch>,
    memory_bytes: usize,
    spill: Option<Spill>,
    lowest_hash: u64,
    rows: usize,
    peak_bytes: usize,
}

impl Collecting {
    /// Takes `batch`: held while the rows fit `hold_up_to` bytes, else into runs of `run_bytes`.
    fn add(
        &mut self,
        batch: RecordBatch,
        (hold_up_to, run_bytes): (usize, usize),
        schema: &SchemaRef,
        disk: &Arc<DiskManager>,
    ) -> Result<()> {
        let hashes = row_hashes(&batch)?;
        self.lowest_hash = hashes.iter().copied().fold(self.lowest_hash, u64::min);
        self.rows += batch.num_rows();
        let bytes = batch.get_array_memory_size();
        if self.spill.is_none() && self.memory_bytes + bytes <= hold_up_to {
            self.memory_bytes += bytes;
            self.peak_bytes = self.peak_bytes.max(self.memory_bytes);
            self.memory.push(batch);
            return Ok(());
        }
        let spill = match &mut self.spill {
            Some(spill) => spill,
            None => {
                let mut spill = Spill::start(disk, run_bytes)?;
                for held in std::mem::take(&mut self.memory) {
                    let hashes = row_hashes(&held)?;
                    spill.add(held, hashes, schema)?;
                }
                self.memory_bytes = 0;
                self.spill.insert(spill)
            }
        };
        spill.add(batch, hashes, schema)?;
        self.peak_bytes = self.peak_bytes.max(spill.peak_bytes);
        Ok(())
    }
}

/// Runs being written: the current run's batches and their row hashes.
struct Spill {
    dir: TempDir,
    run_bytes: usize,
    batches: Vec<RecordBatch>,
    hashes: Vec<Vec<u64>>,
    bytes: usize,
    runs: Vec<usize>,
    peak_bytes: usize,
}

impl Spill {
    fn start(disk: &Arc<DiskManager>, run_bytes: usize) -> Result<Self> {
        if !disk.tmp_files_enabled() {
            return Err(DataFusionError::ResourcesExhausted(
                "the partition is beyond the stage's memory budget, and this session's disk manager is disabled, \
                 so it cannot be spilled"
                    .to_string(),
            ));
        }
        let root = disk
            .temp_dir_paths()
            .into_iter()
            .next()
            .unwrap_or_else(std::env::temp_dir);
        let dir = scratch_dir_in("barrier", &root).map_err(|e| spill_error(&root, &e))?;
        Ok(Self {
            dir,
            run_bytes,
            batches: Vec::new(),
            hashes: Vec::new(),
            bytes: 0,
            runs: Vec::new(),
            peak_bytes: 0,
        })
    }

    /// Adds a batch to the current run, after writing the run when the batch would take it over its size.
    fn add(&mut self, batch: RecordBatch, hashes: Vec<u64>, schema: &SchemaRef) -> Result<()> {
        let bytes = batch.get_array_memory_size() + hashes.len() * size_of::<u64>();
        if self.bytes > 0 && self.bytes + bytes > self.run_bytes {
            self.flush_holding(schema, bytes)?;
        }
        self.bytes += bytes;
        self.peak_bytes = self.peak_bytes.max(self.bytes);
        self.batches.push(batch);
        self.hashes.push(hashes);
        Ok(())
    }

    /// Writes the current run (see [`flush`](Self::flush)) while `waiting` more bytes are held.
    fn flush_holding(&mut self, schema: &SchemaRef, waiting: usize) -> Result<()> {
        self.bytes += waiting;
        let flushed = self.flush(schema);
        self.bytes = 0;
        flushed
    }

    /// Sorts the current run and writes it, with its hashes, as run file `runs.len()`.
    fn flush(&mut self, schema: &SchemaRef) -> Result<()> {
        if self.batches.is_empty() {
            return Ok(());
        }
        let mut keyed: Vec<(u64, usize, usize)> = Vec::new();
        for (index, hashes) in self.hashes.iter().enumerate() {
            keyed.extend(hashes.iter().enumerate().map(|(row, &hash)| (hash, index, row)));
        }
        keyed.sort_unstable();
        let positions: Vec<(usize, usize)> = keyed.iter().map(|&(_, batch, row)| (batch, row)).collect();
        let batches: Vec<&RecordBatch> = self.batches.iter().collect();
        let sorted = interleave_record_batch(&batches, &positions)?;
        let hashes = UInt64Array::from(keyed.iter().map(|&(hash, _, _)| hash).collect::<Vec<_>>());
        self.peak_bytes = self.peak_bytes.max(self.bytes + sorted.get_array_memory_size());
        let path = run_path(self.dir.path(), self.runs.len());
        let with_hashes = with_hash_column(schema);
        let file = File::create(&path).map_err(|e| spill_error(&path, &e))?;
        let mut writer = FileWriter::try_new(BufWriter::new(file), &with_hashes)?;
        for start in (0..sorted.num_rows()).step_by(RUN_BATCH_ROWS) {
            let len = RUN_BATCH_ROWS.min(sorted.num_rows() - start);
            let mut columns: Vec<ArrayRef> = sorted.slice(start, len).columns().to_vec();
            columns.push(Arc::new(hashes.slice(start, len)));
            writer.write(&RecordBatch::try_new(Arc::clone(&with_hashes), columns)?)?;
        }
        writer.finish()?;
        self.runs.push(sorted.num_rows());
        self.batches.clear();
        self.hashes.clear();
        self.bytes = 0;
        Ok(())
    }
}

fn with_hash_column(schema: &SchemaRef) -> SchemaRef {
    let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    fields.push(Field::new(HASH_COLUMN, DataType::UInt64, false));
    Arc::new(Schema::new(fields))
}

fn run_path(dir: &Path, run: usize) -> std::path::PathBuf {
    dir.join(format!("run-{run}.arrow"))
}

fn spill_error(path: &Path, error: &dyn std::fmt::Display) -> DataFusionError {
    DataFusionError::Execution(format!("spilling the partition to {}: {error}", path.display()))
}

/// The k-way merge of sorted runs into the canonical order.
struct Merge {
    runs: Vec<RunCursor>,
    heap: BinaryHeap<Reverse<(u64, usize, usize)>>,
    rows: usize,
}

/// A run's reader and its current batch.
struct RunCursor {
    reader: FileReader<BufReader<File>>,
    batch: Option<(RecordBatch, UInt64Array)>,
    /// Where in the run its current batch starts.
    offset: usize,
}

impl RunCursor {
    /// Reads the next batch of the run (none at its end), splitting off its hashes.
    fn advance(&mut self) -> Result<()> {
        if let Some((batch, _)) = &self.batch {
            self.offset += batch.num_rows();
        }
        self.batch = match self.reader.next().transpose()? {
            Some(batch) => {
                let last = batch.num_columns() - 1;
                let hashes = as_uint64_array(batch.column(last))?.clone();
                let mut batch = batch;
                batch.remove_column(last);
                Some((batch, hashes))
            }
            None => None,
        };
        Ok(())
    }
}

impl Merge {
    fn open(dir: &Path, runs: usize, rows: usize) -> Result<Self> {
        let mut merge = Self {
            runs: Vec::with_capacity(runs),
            heap: BinaryHeap::new(),
            rows,
        };
        for run in 0..runs {
            let path = run_path(dir, run);
            let file = File::open(&path).map_err(|e| spill_error(&path, &e))?;
            let mut cursor = RunCursor {
                reader: FileReader::try_new(BufReader::new(file), None)?,
                batch: None,
                offset: 0,
            };
            cursor.advance()?;
            if let Some((_, hashes)) = &cursor.batch {
                merge.heap.push(Reverse((hashes.value(0), run, 0)));
            }
            merge.runs.push(cursor);
        }
        Ok(merge)
    }

    /// The next `rows` rows in canonical order.
    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        // Batches the output's rows come from: each run's current batch, and those a run moved past.
        let mut sources: Vec<RecordBatch> = Vec::new();
        let mut source_of_run: Vec<Option<usize>> = vec![None; self.runs.len()];
        let mut positions = Vec::with_capacity(self.rows);
        while positions.len() < self.rows {
            let Some(Reverse((_, run, at))) = self.heap.pop() else {
                break;
            };
            let cursor = &mut self.runs[run];
            let Some((batch, _)) = &cursor.batch else {
                continue;
            };
            let source = *source_of_run[run].get_or_insert_with(|| {
                sources.push(batch.clone());
                sources.len() - 1
            });
            let row = at - cursor.offset;
            positions.push((source, row));
            if row + 1 == batch.num_rows() {
                cursor.advance()?;
                source_of_run[run] = None;
            }
            if let Some((_, hashes)) = &cursor.batch {
                let next = at + 1 - cursor.offset;
                self.heap.push(Reverse((hashes.value(next), run, at + 1)));
            }
        }
        if positions.is_empty() {
            return Ok(None);
        }
        let sources: Vec<&RecordBatch> = sources.iter().collect();
        Ok(Some(interleave_record_batch(&sources, &positions)?))
    }
}

impl Iterator for Merge {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_batch().transpose()
    }
}
