//! A shard as tensors where its rank trains: moved to the rank's device once, each step's batch picked there.
//!
//! On a GPU the shard is copied to the device when training starts and every batch is an index into it, so a
//! step copies nothing from the host (the epoch's row order goes over once an epoch). A shard too large for
//! the device stays on the host, and each batch is picked there and copied over (the job's log says so once).
//! On the CPU "the device" is where the rows already are.

use std::borrow::Cow;
use std::iter::Peekable;

use tch::{Device, Tensor};

use super::loss::label_tensor;
use super::options::Loss;
use crate::data::Shard;

/// A shard's features, labels and sample weights as tensors.
pub(super) struct ShardTensors<'a> {
    shard: Cow<'a, Shard>,
    features: Tensor,
    labels: Tensor,
    weights: Option<Tensor>,
    /// Where batches are wanted: the rank's device.
    device: Device,
}

/// One step's rows: features, labels, sample weights (if the shard has them), on the rank's device; how many
/// rows, and their weight (their sample weights' sum, else their count).
pub(super) struct Batch {
    pub(super) features: Tensor,
    pub(super) labels: Tensor,
    pub(super) weights: Option<Tensor>,
    pub(super) rows: usize,
    pub(super) weight: f64,
}

impl Batch {
    /// `rows` as tensors on `device` (on a GPU, copied from pinned memory without waiting: see [`onto`]).
    pub(super) fn of(rows: &Shard, loss: Loss, device: Device) -> Self {
        let features = Tensor::from_slice(rows.features()).view([rows.rows() as i64, rows.dim() as i64]);
        Self {
            features: onto(features, device),
            labels: onto(label_tensor(loss, rows.labels()), device),
            weights: rows.weights().map(|w| onto(Tensor::from_slice(w), device)),
            rows: rows.rows(),
            weight: rows.total_weight(),
        }
    }
}

/// `host` on `device`. On a GPU the copy is queued from pinned memory and the host goes on without waiting
/// for it (PyTorch's `pin_memory` with `non_blocking=True`), so a batch made one ahead ([`OneAhead`]) is on its
/// way while the step on the one before runs; a tensor that cannot be pinned is copied as usual.
fn onto(host: Tensor, device: Device) -> Tensor {
    if !device.is_cuda() {
        return host;
    }
    match host.f_pin_memory(device) {
        Ok(pinned) => pinned.to_device_(device, pinned.kind(), true, false),
        Err(_) => host.to_device(device),
    }
}

/// An iterator whose next item is made as soon as the current one is handed out: batches read from disk are
/// on their device one step ahead of the step that takes them.
pub(super) struct OneAhead<I: Iterator> {
    items: Peekable<I>,
}

impl<I: Iterator> OneAhead<I> {
    /// `items`, each made one ahead.
    pub(super) fn new(items: I) -> Self {
        Self {
            items: items.peekable(),
        }
    }
}

impl<I: Iterator> Iterator for OneAhead<I> {
    type Item = I::Item;

    fn next(&mut self) -> Option<I::Item> {
        let item = self.items.next();
        self.items.peek();
        item
    }
}

impl<'a> ShardTensors<'a> {
    /// `shard` as tensors, on `device` when they fit there (on the host otherwise).
    pub(super) fn new(shard: Cow<'a, Shard>, loss: Loss, device: Device, rank: usize) -> Self {
        let host = Self {
            features: Tensor::from_slice(shard.features()).view([shard.rows() as i64, shard.dim() as i64]),
            labels: label_tensor(loss, shard.labels()),
            weights: shard.weights().map(Tensor::from_slice),
            shard,
            device,
        };
        if device == Device::Cpu {
            return host;
        }
        let moved = (|| -> Result<_, tch::TchError> {
            let weights = host.weights.as_ref().map(|w| w.f_to_device(device)).transpose()?;
            Ok((
                host.features.f_to_device(device)?,
                host.labels.f_to_device(device)?,
                weights,
            ))
        })();
        match moved {
            Ok((features, labels, weights)) => Self {
                features,
                labels,
                weights,
                ..host
            },
            Err(e) => {
                log::warn!(
                    "rank {rank}: the shard's {} rows stay on the host and each batch is copied to {device:?} ({e})",
                    host.shard.rows()
                );
                host
            }
        }
    }

    /// The shard's rows.
    pub(super) fn shard(&self) -> &Shard {
        &self.shard
    }

    /// The bytes the rows take in the host's memory: the shard, and its tensors where they stay on the host.
    pub(super) fn bytes(&self) -> usize {
        match self.features.device() {
            Device::Cpu => 2 * self.shard.bytes(),
            _ => self.shard.bytes(),
        }
    }

    /// An epoch's row order, where the rows are.
    pub(super) fn order(&self, order: &[i64]) -> Tensor {
        Tensor::from_slice(order).to_device(self.features.device())
    }

    /// The rows `order[start..start + len]` (`shuffled`: else rows `start..start + len`, in place), where
    /// `order_tensor` is `order` where the rows are.
    pub(super) fn batch(
        &self,
        order: &[i64],
        order_tensor: &Tensor,
        start: usize,
        len: usize,
        shuffled: bool,
    ) -> Batch {
        let weight = self.weight_of(&order[start..start + len]);
        let (start, len) = (start as i64, len as i64);
        let pick = |all: &Tensor| {
            if shuffled {
                all.index_select(0, &order_tensor.narrow(0, start, len))
            } else {
                all.narrow(0, start, len)
            }
            .to_device(self.device)
        };
        Batch {
            features: pick(&self.features),
            labels: pick(&self.labels),
            weights: self.weights.as_ref().map(pick),
            rows: len as usize,
            weight,
        }
    }

    /// Every row, `rows` at a time, each part on the rank's device.
    pub(super) fn parts(&self, rows: usize) -> impl Iterator<Item = Batch> + '_ {
        let total = self.shard.rows();
        (0..total).step_by(rows.max(1)).map(move |start| {
            let len = rows.min(total - start) as i64;
            let part = |all: &Tensor| all.narrow(0, start as i64, len).to_device(self.device);
            Batch {
                features: part(&self.features),
                labels: part(&self.labels),
                weights: self.weights.as_ref().map(part),
                rows: len as usize,
                weight: self.weight_of_range(start, len as usize),
            }
        })
    }

    /// The weight of `rows`: their sample weights' sum, else their count (read on the host: no wait on the
    /// device).
    fn weight_of(&self, rows: &[i64]) -> f64 {
        match self.shard.weights() {
            Some(weights) => rows.iter().map(|&row| f64::from(weights[row as usize])).sum(),
            None => rows.len() as f64,
        }
    }

    /// The weight of rows `start..start + len`, as [`Self::weight_of`] gives it.
    fn weight_of_range(&self, start: usize, len: usize) -> f64 {
        match self.shard.weights() {
            Some(weights) => weights[start..start + len].iter().map(|&w| f64::from(w)).sum(),
            None => len as f64,
        }
    }

    /// This rank's weight (rows, or their sample weights) at each of an epoch's `steps` of `batch` rows in
    /// `order` (none after the shard runs out).
    pub(super) fn step_weights(&self, order: &[i64], steps: usize, batch: usize) -> Vec<f32> {
        (0..steps)
            .map(|step| {
                let start = (step * batch).min(order.len());
                self.weight_of(&order[start..(start + batch).min(order.len())]) as f32
            })
            .collect()
    }
}
