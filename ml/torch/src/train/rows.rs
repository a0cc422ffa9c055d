//! A rank's rows as its loop reads them: held as tensors (the whole shard in memory, shuffled in full every
//! epoch), or streamed from disk through a shuffle buffer when they are beyond the rank's memory budget.
//!
//! Held rows are what every rank trained on before streaming existed, and stay so: an epoch shuffles the row
//! order with the epoch's draws and picks each batch from the tensors. Streamed rows whose buffer holds them
//! all are read once and held, so they train exactly as held rows do; others are read every epoch
//! ([`StreamedShard::epoch`]), shuffled with draws of their own.

use std::borrow::Cow;

use hearth_stats::random::Draws;
use tch::{Device, Tensor};

use super::batches::{Batch, OneAhead, ShardTensors};
use super::error::TrainError;
use super::loss::check_rows;
use super::options::Loss;
use crate::data::{DataError, EpochBatches, LabelSummary, Shard, StreamedShard};

/// A rank's rows as the trainer is given them.
#[derive(Clone, Copy)]
pub enum RankData<'a> {
    /// Every row in memory.
    Held(&'a Shard),
    /// Rows on disk, read an epoch at a time.
    Streamed(&'a StreamedShard),
}

impl<'a> From<&'a Shard> for RankData<'a> {
    fn from(shard: &'a Shard) -> Self {
        Self::Held(shard)
    }
}

impl<'a> From<&'a StreamedShard> for RankData<'a> {
    fn from(shard: &'a StreamedShard) -> Self {
        Self::Streamed(shard)
    }
}

impl RankData<'_> {
    /// Rows there are.
    pub fn rows(&self) -> usize {
        match self {
            Self::Held(shard) => shard.rows(),
            Self::Streamed(shard) => shard.rows(),
        }
    }
}

/// A rank's rows where its loop reads them.
pub(super) enum RankRows<'a> {
    /// As tensors, on the device where they fit.
    Held(ShardTensors<'a>),
    /// Read from disk every epoch.
    Streamed {
        shard: &'a StreamedShard,
        loss: Loss,
        device: Device,
    },
}

/// The salt of a streamed epoch's draws, which are not the epoch's main draws (those go to dropout and MixUp).
const STREAM_SALT: u64 = 0x7374_7265_616d;

impl<'a> RankRows<'a> {
    /// `data` for the loop of `rank` on `device`; checks every row fits the model (`inputs` features, a label
    /// for `outputs` under `loss`), naming `what` rows and the row that does not.
    pub(super) fn new(
        data: RankData<'a>,
        what: &str,
        (inputs, outputs, loss): (usize, usize, Loss),
        device: Device,
        rank: usize,
    ) -> Result<Self, TrainError> {
        let data_error = |e: DataError| TrainError::Data {
            rank,
            message: format!("{what} rows: {e}"),
        };
        let rows = match data {
            RankData::Held(shard) => Self::Held(ShardTensors::new(Cow::Borrowed(shard), loss, device, rank)),
            RankData::Streamed(shard) if shard.fits_in_buffer() => {
                let all = shard.read_all().map_err(data_error)?;
                Self::Held(ShardTensors::new(Cow::Owned(all), loss, device, rank))
            }
            RankData::Streamed(shard) => Self::Streamed { shard, loss, device },
        };
        let (dim, labels) = match &rows {
            Self::Held(tensors) => (tensors.shard().dim(), LabelSummary::of(tensors.shard().labels(), 0)),
            Self::Streamed { shard, .. } => (shard.dim(), *shard.labels()),
        };
        check_rows(rank, what, (rows.rows(), dim, &labels), (inputs, outputs, loss))?;
        Ok(rows)
    }

    /// Rows there are.
    pub(super) fn rows(&self) -> usize {
        match self {
            Self::Held(tensors) => tensors.shard().rows(),
            Self::Streamed { shard, .. } => shard.rows(),
        }
    }

    /// The rows' total weight (their sample weights' sum, else their count), summed as held rows always were;
    /// none for streamed rows, whose parts say theirs.
    pub(super) fn held_weight(&self) -> Option<f32> {
        match self {
            Self::Held(tensors) => {
                let shard = tensors.shard();
                Some(shard.weights().map_or(shard.rows() as f32, |w| w.iter().sum()))
            }
            Self::Streamed { .. } => None,
        }
    }

    /// Whether the rows are read from disk every epoch.
    pub(super) fn streamed(&self) -> bool {
        matches!(self, Self::Streamed { .. })
    }

    /// The most bytes the rows held in the host's memory so far.
    pub(super) fn peak_bytes(&self) -> usize {
        match self {
            Self::Held(tensors) => tensors.bytes(),
            Self::Streamed { shard, .. } => shard.held().peak(),
        }
    }

    /// An epoch's batches of `batch` rows, shuffled when `shuffle` with `draws` (held rows) or with the draws of
    /// `seed`, `rank` and `epoch` (streamed rows).
    pub(super) fn epoch(
        &self,
        batch: usize,
        shuffle: bool,
        draws: &mut Draws,
        (seed, rank, epoch): (u64, usize, usize),
    ) -> Result<EpochRows<'_>, TrainError> {
        match self {
            Self::Held(tensors) => {
                let mut order: Vec<i64> = (0..tensors.shard().rows() as i64).collect();
                if shuffle {
                    draws.shuffle(&mut order);
                }
                Ok(EpochRows::Held {
                    order_tensor: tensors.order(&order),
                    tensors,
                    order,
                    shuffle,
                    batch,
                    next: 0,
                })
            }
            Self::Streamed { shard, loss, device } => {
                let draws = shuffle.then(|| Draws::for_rank(seed ^ STREAM_SALT, rank, epoch));
                let batches = shard.epoch(batch, draws.clone()).map_err(|e| streaming(rank, e))?;
                Ok(EpochRows::Streamed {
                    shard,
                    batches: Box::new(on_device(batches, *loss, *device, rank)),
                    draws,
                    batch,
                    rank,
                })
            }
        }
    }

    /// Every row, `rows` at a time, in order.
    pub(super) fn parts(
        &self,
        rows: usize,
        rank: usize,
    ) -> Result<Box<dyn Iterator<Item = Result<Batch, TrainError>> + '_>, TrainError> {
        match self {
            Self::Held(tensors) => Ok(Box::new(tensors.parts(rows).map(Ok))),
            Self::Streamed { shard, loss, device } => {
                let parts = shard.epoch(rows, None).map_err(|e| streaming(rank, e))?;
                Ok(Box::new(on_device(parts, *loss, *device, rank)))
            }
        }
    }
}

/// Batches read from disk, each made on `device` one ahead of the step that takes it.
fn on_device(
    batches: EpochBatches,
    loss: Loss,
    device: Device,
    rank: usize,
) -> OneAhead<impl Iterator<Item = Result<Batch, TrainError>>> {
    OneAhead::new(batches.map(move |rows| Ok(Batch::of(&rows.map_err(|e| streaming(rank, e))?, loss, device))))
}

fn streaming(rank: usize, e: DataError) -> TrainError {
    TrainError::Data {
        rank,
        message: format!("streaming its rows: {e}"),
    }
}

/// One epoch's batches on a rank, in the order it steps on them.
pub(super) enum EpochRows<'r> {
    /// Picked from held tensors in a shuffled order.
    Held {
        tensors: &'r ShardTensors<'r>,
        order: Vec<i64>,
        order_tensor: Tensor,
        shuffle: bool,
        batch: usize,
        next: usize,
    },
    /// Read from disk ahead of the steps, each batch made on the device one step ahead.
    Streamed {
        shard: &'r StreamedShard,
        batches: Box<dyn Iterator<Item = Result<Batch, TrainError>>>,
        draws: Option<Draws>,
        batch: usize,
        rank: usize,
    },
}

impl EpochRows<'_> {
    /// The next batch (none once the rows are exhausted).
    pub(super) fn next_batch(&mut self) -> Result<Option<Batch>, TrainError> {
        match self {
            Self::Held {
                tensors,
                order,
                order_tensor,
                shuffle,
                batch,
                next,
            } => {
                if *next >= order.len() {
                    return Ok(None);
                }
                let len = (*batch).min(order.len() - *next);
                let picked = tensors.batch(order, order_tensor, *next, len, *shuffle);
                *next += len;
                Ok(Some(picked))
            }
            Self::Streamed { batches, .. } => batches.next().transpose(),
        }
    }

    /// This rank's weight (rows, or their sample weights) at each of the epoch's `steps` (none after its rows
    /// run out).
    pub(super) fn step_weights(&self, steps: usize) -> Result<Vec<f32>, TrainError> {
        match self {
            Self::Held {
                tensors, order, batch, ..
            } => Ok(tensors.step_weights(order, steps, *batch)),
            Self::Streamed {
                shard,
                draws,
                batch,
                rank,
                ..
            } if shard.weighted() => {
                let mut weights = vec![0f32; steps];
                let rows = shard.epoch(*batch, draws.clone()).map_err(|e| streaming(*rank, e))?;
                for (step, rows) in rows.enumerate().take(steps) {
                    weights[step] = rows.map_err(|e| streaming(*rank, e))?.total_weight() as f32;
                }
                Ok(weights)
            }
            Self::Streamed { shard, batch, .. } => Ok((0..steps)
                .map(|step| shard.rows().saturating_sub(step * batch).min(*batch) as f32)
                .collect()),
        }
    }
}
