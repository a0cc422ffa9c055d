//! Horovod's API over hearth's ring, for people who write their own training loop with tch: a [`Horovod`]
//! handle per rank (`rank`, `size`, `local_rank`, `allreduce`, `broadcast`, `allgather` of tensors,
//! `broadcast_parameters`) and a [`DistributedOptimizer`] that averages every step's gradients over the ranks
//! before applying them, as `hvd.DistributedOptimizer` does. Tensors travel as `f32` over the authenticated
//! ring, whatever their device and kind, and come back in both.
//!
//! ```
//! use hearth_collective::LocalWorld;
//! use hearth_torch::horovod::Horovod;
//! use tch::Tensor;
//!
//! // Two ranks average a tensor, as `hvd.allreduce(t)` does.
//! let sums = LocalWorld::new(2)
//!     .run(|mut comm| {
//!         let mut hvd = Horovod::new(&mut comm);
//!         let mine = Tensor::from_slice(&[hvd.rank() as f32, 10.0]);
//!         Vec::<f32>::try_from(hvd.allreduce(&mine).unwrap()).unwrap()
//!     })
//!     .unwrap();
//! assert_eq!(sums, vec![vec![0.5, 10.0], vec![0.5, 10.0]]);
//! ```

mod optimizer;

pub use optimizer::DistributedOptimizer;

use tch::{Device, Kind, Tensor};

use hearth_collective::{CollectiveError, Communicator};

/// Why a Horovod operation failed.
#[derive(Debug, thiserror::Error)]
pub enum HorovodError {
    /// The ring failed (a peer died, stalled or misbehaved); names the rank and peer.
    #[error(transparent)]
    Collective(#[from] CollectiveError),
    /// libtorch refused an operation on this rank.
    #[error("rank {rank}: libtorch: {source}")]
    Torch {
        /// This rank.
        rank: usize,
        /// libtorch's error.
        source: tch::TchError,
    },
    /// The ranks passed tensors that do not fit together.
    #[error("rank {rank}: {message}")]
    Shape {
        /// This rank.
        rank: usize,
        /// What differs.
        message: String,
    },
}

/// One rank's view of the job: who it is, and the collectives over tensors, on the rank's communicator.
pub struct Horovod<'a> {
    comm: &'a mut Communicator,
    local_rank: usize,
    local_size: usize,
}

impl<'a> Horovod<'a> {
    /// The handle of the rank `comm` belongs to; the local rank counts the ranks on this rank's host.
    pub fn new(comm: &'a mut Communicator) -> Self {
        let host = &comm.peers()[comm.rank()].registration.host;
        let local: Vec<usize> = comm
            .peers()
            .iter()
            .filter(|p| &p.registration.host == host)
            .map(|p| p.rank)
            .collect();
        Self {
            local_rank: local.iter().position(|&r| r == comm.rank()).unwrap_or(0),
            local_size: local.len(),
            comm,
        }
    }

    /// This rank, 0 to `size() − 1` (`hvd.rank()`).
    pub fn rank(&self) -> usize {
        self.comm.rank()
    }

    /// How many ranks train together (`hvd.size()`).
    pub fn size(&self) -> usize {
        self.comm.world_size()
    }

    /// This rank among the ranks on its host (`hvd.local_rank()`: the GPU to use).
    pub fn local_rank(&self) -> usize {
        self.local_rank
    }

    /// How many ranks share this rank's host (`hvd.local_size()`).
    pub fn local_size(&self) -> usize {
        self.local_size
    }

    /// The ring underneath, for byte-level collectives.
    pub fn communicator(&mut self) -> &mut Communicator {
        self.comm
    }

    /// Waits until every rank got here.
    pub fn barrier(&mut self) -> Result<(), HorovodError> {
        Ok(self.comm.barrier()?)
    }

    fn torch(&self, source: tch::TchError) -> HorovodError {
        HorovodError::Torch {
            rank: self.rank(),
            source,
        }
    }

    /// The tensor's values as `f32` on the host.
    pub(crate) fn host_values(&self, tensor: &Tensor) -> Result<Vec<f32>, HorovodError> {
        let flat = tensor
            .detach()
            .flatten(0, -1)
            .to_kind(Kind::Float)
            .to_device(Device::Cpu);
        Vec::<f32>::try_from(&flat).map_err(|e| self.torch(e))
    }

    /// `values` shaped, typed and placed like `like`.
    fn shaped_like(&self, values: &[f32], like: &Tensor) -> Tensor {
        Tensor::from_slice(values)
            .view(like.size().as_slice())
            .to_kind(like.kind())
            .to_device(like.device())
    }

    /// The element-wise sum of the tensor over every rank (each passes one of the same shape).
    pub fn allreduce_sum(&mut self, tensor: &Tensor) -> Result<Tensor, HorovodError> {
        let mut values = self.host_values(tensor)?;
        self.comm.allreduce_sum(&mut values)?;
        Ok(self.shaped_like(&values, tensor))
    }

    /// The element-wise mean over every rank (`hvd.allreduce(t)`, whose default op is the average).
    pub fn allreduce(&mut self, tensor: &Tensor) -> Result<Tensor, HorovodError> {
        let mut values = self.host_values(tensor)?;
        self.comm.allreduce_sum(&mut values)?;
        let size = self.size() as f32;
        values.iter_mut().for_each(|v| *v /= size);
        Ok(self.shaped_like(&values, tensor))
    }

    /// Rank `root`'s tensor, on every rank (each passes one of the same shape).
    pub fn broadcast(&mut self, tensor: &Tensor, root: usize) -> Result<Tensor, HorovodError> {
        let mut values = self.host_values(tensor)?;
        self.comm.broadcast(&mut values, root)?;
        Ok(self.shaped_like(&values, tensor))
    }

    /// Every rank's tensor concatenated along the first dimension in rank order (`hvd.allgather`); the
    /// tensors may differ in their first dimension only.
    pub fn allgather(&mut self, tensor: &Tensor) -> Result<Tensor, HorovodError> {
        let shape = tensor.size();
        let mut mine = Vec::new();
        for value in self.host_values(tensor)? {
            mine.extend_from_slice(&value.to_le_bytes());
        }
        let gathered = self.comm.allgather_bytes(&mine)?;
        let row: i64 = shape.iter().skip(1).product();
        let mut values = Vec::new();
        let mut rows = 0i64;
        for (rank, bytes) in gathered.iter().enumerate() {
            let count = (bytes.len() / 4) as i64;
            if row == 0 || count % row != 0 || bytes.len() % 4 != 0 {
                return Err(HorovodError::Shape {
                    rank: self.rank(),
                    message: format!("allgather: rank {rank} sent {count} values, not whole rows of {shape:?}[1..]"),
                });
            }
            rows += count / row;
            values.extend(
                bytes
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            );
        }
        let mut gathered_shape = shape.clone();
        if let Some(first) = gathered_shape.first_mut() {
            *first = rows;
        }
        Ok(Tensor::from_slice(&values)
            .view(gathered_shape.as_slice())
            .to_kind(tensor.kind())
            .to_device(tensor.device()))
    }

    /// Copies rank `root`'s values into every rank's `tensors` in place (`hvd.broadcast_parameters`): the
    /// ranks start from the same model. One fused transfer.
    pub fn broadcast_parameters(&mut self, tensors: &[Tensor], root: usize) -> Result<(), HorovodError> {
        let mut fused = Vec::new();
        for tensor in tensors {
            fused.extend(self.host_values(tensor)?);
        }
        self.comm.broadcast(&mut fused, root)?;
        let mut offset = 0;
        for tensor in tensors {
            let len = tensor.numel();
            let values = self.shaped_like(&fused[offset..offset + len], tensor);
            tch::no_grad(|| tensor.shallow_clone().copy_(&values));
            offset += len;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hearth_collective::LocalWorld;

    #[test]
    fn broadcast_gather_and_parameters_reach_every_rank() {
        let results = LocalWorld::new(3)
            .run(|mut comm| {
                let mut hvd = Horovod::new(&mut comm);
                let rank = hvd.rank() as f32;
                let broadcast = hvd.broadcast(&Tensor::from_slice(&[rank, rank]), 2).unwrap();
                // Rank r sends r + 1 rows of [r, r].
                let rows = Tensor::full([hvd.rank() as i64 + 1, 2], f64::from(rank), (Kind::Float, Device::Cpu));
                let gathered = hvd.allgather(&rows).unwrap();
                let weights = [Tensor::full([2], f64::from(rank), (Kind::Float, Device::Cpu))];
                hvd.broadcast_parameters(&weights, 0).unwrap();
                (
                    Vec::<f32>::try_from(broadcast).unwrap(),
                    gathered.size(),
                    Vec::<f32>::try_from(gathered.flatten(0, -1)).unwrap(),
                    Vec::<f32>::try_from(&weights[0]).unwrap(),
                    (hvd.local_rank(), hvd.local_size()),
                )
            })
            .unwrap();
        for (rank, (broadcast, shape, gathered, weights, local)) in results.into_iter().enumerate() {
            assert_eq!(broadcast, vec![2.0, 2.0]);
            assert_eq!(shape, vec![6, 2]);
            assert_eq!(
                gathered,
                vec![0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0]
            );
            assert_eq!(weights, vec![0.0, 0.0]);
            assert_eq!(local, (rank, 3));
        }
    }
}
