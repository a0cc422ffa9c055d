//! A rank's rows streamed from a [`ShardFile`] every epoch, with memory bounded by a shuffle buffer instead of
//! by the data: Ray Data's local shuffle buffer (`local_shuffle_buffer_size`) over a seeded order of chunks.
//!
//! An epoch reads the file's chunks in an order shuffled for the epoch, appends each to a buffer, and whenever
//! the buffer holds `buffer_rows` rows shuffles them and hands out every whole batch, keeping the rest for the
//! next fill; the last rows of the epoch make the last, short batch. A thread of its own reads ahead (a few
//! batches) while the rank steps. The same seed, rank and epoch give the same batches on every run.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use hearth_stats::random::Draws;

use super::{DataError, LabelSummary, Shard, ShardFile};

/// Batches read ahead of the step that trains on them.
const READ_AHEAD: usize = 4;

/// The bytes a rank's rows take in its memory, now and at their peak, counted where buffers are made.
///
/// ```
/// use hearth_torch::data::HeldBytes;
/// let held = HeldBytes::default();
/// let hold = held.hold(100);
/// drop(hold);
/// let _more = held.hold(40);
/// assert_eq!((held.now(), held.peak()), (40, 100));
/// ```
#[derive(Clone, Debug, Default)]
pub struct HeldBytes(Arc<Counters>);

#[derive(Debug, Default)]
struct Counters {
    now: AtomicUsize,
    peak: AtomicUsize,
}

impl HeldBytes {
    /// Counts `bytes` as held until the returned guard is dropped.
    pub fn hold(&self, bytes: usize) -> Hold {
        let now = self.0.now.fetch_add(bytes, Ordering::Relaxed) + bytes;
        self.0.peak.fetch_max(now, Ordering::Relaxed);
        Hold {
            counters: Arc::clone(&self.0),
            bytes,
        }
    }

    /// Bytes held now.
    pub fn now(&self) -> usize {
        self.0.now.load(Ordering::Relaxed)
    }

    /// The most bytes held at once.
    pub fn peak(&self) -> usize {
        self.0.peak.load(Ordering::Relaxed)
    }
}

/// Bytes counted as held while it lives.
#[derive(Debug)]
pub struct Hold {
    counters: Arc<Counters>,
    bytes: usize,
}

impl Hold {
    /// Counts `bytes` instead of what was counted.
    fn resize(&mut self, bytes: usize) {
        if bytes >= self.bytes {
            let now = self.counters.now.fetch_add(bytes - self.bytes, Ordering::Relaxed) + bytes - self.bytes;
            self.counters.peak.fetch_max(now, Ordering::Relaxed);
        } else {
            self.counters.now.fetch_sub(self.bytes - bytes, Ordering::Relaxed);
        }
        self.bytes = bytes;
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        self.counters.now.fetch_sub(self.bytes, Ordering::Relaxed);
    }
}

/// A rank's rows on disk, read every epoch through a shuffle buffer of `buffer_rows` rows.
///
/// ```
/// use hearth_stats::random::Draws;
/// use hearth_torch::data::{HeldBytes, Shard, ShardFileWriter, StreamedShard};
///
/// let dir = tempfile::tempdir().unwrap();
/// let mut writer = ShardFileWriter::new(dir.path().join("rows.arrow"), 4);
/// let labels: Vec<f32> = (0..10).map(|i| i as f32).collect();
/// writer.push(&Shard::new(labels.clone(), labels, 1).unwrap()).unwrap();
/// let rows = StreamedShard::new(writer.finish().unwrap(), 6, HeldBytes::default());
/// let batches: Vec<Shard> = rows.epoch(3, Some(Draws::new(1))).unwrap().collect::<Result<_, _>>().unwrap();
/// assert_eq!(batches.iter().map(Shard::rows).collect::<Vec<_>>(), [3, 3, 3, 1]);
/// let mut seen: Vec<f32> = batches.iter().flat_map(|b| b.labels().to_vec()).collect();
/// seen.sort_by(f32::total_cmp);
/// assert_eq!(seen, (0..10).map(|i| i as f32).collect::<Vec<_>>());
/// ```
pub struct StreamedShard {
    file: Arc<ShardFile>,
    buffer_rows: usize,
    held: HeldBytes,
}

impl StreamedShard {
    /// The rows of `file`, shuffled through a buffer of `buffer_rows` rows (at least one batch's), counting what
    /// they hold in `held`.
    pub fn new(file: ShardFile, buffer_rows: usize, held: HeldBytes) -> Self {
        Self {
            file: Arc::new(file),
            buffer_rows: buffer_rows.max(1),
            held,
        }
    }

    /// Rows in the shard.
    pub fn rows(&self) -> usize {
        self.file.rows()
    }

    /// Features per row.
    pub fn dim(&self) -> usize {
        self.file.dim()
    }

    /// Whether the rows have sample weights.
    pub fn weighted(&self) -> bool {
        self.file.weighted()
    }

    /// What the rows' labels hold.
    pub fn labels(&self) -> &LabelSummary {
        self.file.labels()
    }

    /// Rows the shuffle buffer holds.
    pub fn buffer_rows(&self) -> usize {
        self.buffer_rows
    }

    /// What the rows hold in memory.
    pub fn held(&self) -> &HeldBytes {
        &self.held
    }

    /// Whether the buffer holds every row: the rows can be read once and kept.
    pub fn fits_in_buffer(&self) -> bool {
        self.buffer_rows >= self.rows()
    }

    /// Every row in one shard (for a buffer that holds them all).
    pub fn read_all(&self) -> Result<Shard, DataError> {
        let mut reader = self.file.open()?;
        let mut all = Shard::default();
        let mut hold = self.held.hold(0);
        for chunk in 0..self.file.chunks() {
            all.append(&reader.read(chunk)?);
            hold.resize(all.bytes());
        }
        Ok(all)
    }

    /// An epoch's batches of `batch` rows: shuffled with `draws` (chunk order and buffer), else in the file's
    /// order.
    pub fn epoch(&self, batch: usize, draws: Option<Draws>) -> Result<EpochBatches, DataError> {
        let reading = Reading {
            file: Arc::clone(&self.file),
            batch: batch.max(1),
            buffer_rows: self.buffer_rows.max(batch),
            draws,
            held: self.held.clone(),
        };
        let (sender, receiver) = sync_channel(READ_AHEAD);
        let failure = Arc::new(Mutex::new(None));
        let failed = Arc::clone(&failure);
        let thread = std::thread::Builder::new()
            .name("hearth-rows".to_string())
            .spawn(move || {
                if let Err(e) = reading.run(&sender) {
                    *failed.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(e);
                }
            })
            .map_err(|e| DataError::spill(self.file.path(), format!("starting its reader: {e}")))?;
        Ok(EpochBatches {
            receiver: Some(receiver),
            thread: Some(thread),
            failure,
        })
    }
}

/// One epoch's batches, read ahead on a thread of their own; dropping it stops the reading.
pub struct EpochBatches {
    receiver: Option<Receiver<(Shard, Hold)>>,
    thread: Option<JoinHandle<()>>,
    failure: Arc<Mutex<Option<DataError>>>,
}

impl Iterator for EpochBatches {
    type Item = Result<Shard, DataError>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.receiver.as_ref()?.recv() {
            Ok((batch, _hold)) => Some(Ok(batch)),
            Err(_) => {
                // The reader is done: it ended the epoch, or failed.
                self.receiver = None;
                if let Some(thread) = self.thread.take() {
                    let _ = thread.join();
                }
                let failure = self
                    .failure
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .take();
                failure.map(Err)
            }
        }
    }
}

impl Drop for EpochBatches {
    fn drop(&mut self) {
        self.receiver = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// What an epoch's reader thread does.
struct Reading {
    file: Arc<ShardFile>,
    batch: usize,
    buffer_rows: usize,
    draws: Option<Draws>,
    held: HeldBytes,
}

impl Reading {
    /// Reads the chunks into the buffer and sends its batches; stops early when nobody receives them.
    fn run(mut self, sender: &SyncSender<(Shard, Hold)>) -> Result<(), DataError> {
        let mut chunks: Vec<usize> = (0..self.file.chunks()).collect();
        if let Some(draws) = &mut self.draws {
            draws.shuffle(&mut chunks);
        }
        let mut reader = self.file.open()?;
        let mut buffer = Shard::default();
        let mut hold = self.held.hold(0);
        for chunk in chunks {
            let rows = reader.read(chunk)?;
            hold.resize(buffer.bytes() + rows.bytes());
            buffer.append(&rows);
            drop(rows);
            hold.resize(buffer.bytes());
            if buffer.rows() >= self.buffer_rows && !self.send_batches(&mut buffer, false, sender) {
                return Ok(());
            }
            hold.resize(buffer.bytes());
        }
        self.send_batches(&mut buffer, true, sender);
        Ok(())
    }

    /// Shuffles the buffer and sends its whole batches (at the end, every row), keeping the rest in it; false
    /// when nobody receives them.
    fn send_batches(&mut self, buffer: &mut Shard, last: bool, sender: &SyncSender<(Shard, Hold)>) -> bool {
        let mut order: Vec<usize> = (0..buffer.rows()).collect();
        if let Some(draws) = &mut self.draws {
            draws.shuffle(&mut order);
        }
        let whole = match last {
            true => order.len(),
            false => order.len() - order.len() % self.batch,
        };
        for rows in order[..whole].chunks(self.batch) {
            let batch = buffer.picked(rows);
            let hold = self.held.hold(batch.bytes());
            if sender.send((batch, hold)).is_err() {
                return false;
            }
        }
        *buffer = buffer.picked(&order[whole..]);
        true
    }
}
