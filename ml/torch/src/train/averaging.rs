//! How a step's gradient is summed over the ranks when they average every step (the synchronous strategy on
//! several ranks): through NCCL when every rank trains on a GPU, otherwise through the ring — where the
//! optimizer's buffer lies on the CPU, or through a host copy of it from a GPU.
//!
//! Through the ring the step's row count (or sample weight) rides in the buffer's last slot, so one allreduce
//! brings both. NCCL sums only the gradient, on the devices; the trainer sums every step's weight over the
//! ranks once an epoch instead ([`Averaging::needs_step_weights`]), so a step never waits on the device.

use hearth_collective::{Communicator, Nccl, NcclVote};
use tch::{Device, Kind, Tensor};

use super::error::TrainError;
use super::optimizer::Optimizer;

/// A job's way of averaging gradients.
pub(super) enum Averaging {
    /// Each rank steps on its own gradient (one rank, or a strategy that exchanges parameters instead).
    Not,
    /// Through the ring, with the host copy of a GPU's buffer (never filled for a CPU's: summed in place).
    Ring { host: Vec<f32> },
    /// Through NCCL, on the GPUs.
    Nccl(Nccl),
}

impl Averaging {
    /// How a job whose ranks average every step does it: NCCL when every rank trains on a GPU and has NCCL,
    /// the ring otherwise (every rank of the job calls this; a rank on a GPU logs why NCCL is not used).
    pub(super) fn start(comm: &mut Communicator, device: Device) -> Result<Self, TrainError> {
        let ordinal = match device {
            Device::Cuda(ordinal) => Some(ordinal),
            _ => None,
        };
        Ok(match Nccl::join(comm, &NcclVote::of(ordinal))? {
            Ok(nccl) => Self::Nccl(nccl),
            Err(why) => {
                if ordinal.is_some() {
                    log::info!(
                        "rank {}: gradients are averaged through the host ring, not NCCL: {why}",
                        comm.rank()
                    );
                }
                Self::Ring { host: Vec::new() }
            }
        })
    }

    /// Whether gradients are averaged at all.
    pub(super) fn is_on(&self) -> bool {
        !matches!(self, Self::Not)
    }

    /// Whether the sum of every step's weight over the ranks must be known before the epoch's steps (NCCL
    /// does not carry it).
    pub(super) fn needs_step_weights(&self) -> bool {
        matches!(self, Self::Nccl(_))
    }

    /// Every few steps: lets the GPU run at most one mark behind, waiting at most `within` for this rank's
    /// NCCL operations (a no-op for the others, whose operations end within their own deadlines).
    pub(super) fn mark(&mut self, within: std::time::Duration) -> Result<(), TrainError> {
        match self {
            Self::Nccl(nccl) => Ok(nccl.mark(within)?),
            _ => Ok(()),
        }
    }

    /// At an epoch's end: waits at most `within` for the GPU to finish this rank's NCCL operations.
    pub(super) fn settle(&mut self, within: std::time::Duration) -> Result<(), TrainError> {
        match self {
            Self::Nccl(nccl) => Ok(nccl.wait(within)?),
            _ => Ok(()),
        }
    }

    /// Sums the optimizer's gradient over the ranks, in place, and returns the step's weight over all of them:
    /// `total` where it was summed beforehand, else `rows` summed with the gradient (this rank's own, not
    /// averaging).
    pub(super) fn sum(
        &mut self,
        comm: &mut Communicator,
        optimizer: &Optimizer,
        rows: f32,
        total: Option<f32>,
    ) -> Result<f32, TrainError> {
        match (self, total) {
            (Self::Not, _) => Ok(rows),
            (Self::Nccl(nccl), Some(total)) => {
                let gradient = optimizer.gradient();
                // SAFETY: the optimizer's contiguous f32 gradient on this rank's GPU, kept alive by the optimizer
                // for the whole job; libtorch's later work on it is queued behind the allreduce on the same stream.
                unsafe { nccl.allreduce_sum(gradient.data_ptr(), gradient.numel()) }?;
                Ok(total)
            }
            (Self::Nccl(_), None) => Err(TrainError::Options {
                rank: comm.rank(),
                message: "a step averaged through NCCL without its weight summed beforehand".into(),
                cause: None,
            }),
            (Self::Ring { host }, _) => allreduce_with_count(comm, &optimizer.gradient_and_count(), host, rows),
        }
    }
}

/// Puts `rows` in the last slot of `buffer` (the gradient, then that slot), sums the buffer over every rank and
/// returns the summed rows. A CPU buffer is summed where it lies; a GPU one through a copy in `host`.
fn allreduce_with_count(
    comm: &mut Communicator,
    buffer: &Tensor,
    host: &mut Vec<f32>,
    rows: f32,
) -> Result<f32, TrainError> {
    let rank = comm.rank();
    let torch = |source| TrainError::Torch { rank, source };
    let n = buffer.numel();
    let _ = buffer
        .narrow(0, n as i64 - 1, 1)
        .f_fill_(f64::from(rows))
        .map_err(torch)?;
    if buffer.device() == Device::Cpu && buffer.kind() == Kind::Float && buffer.is_contiguous() {
        // SAFETY: the buffer is a contiguous CPU tensor of `n` f32 values, the optimizer's own gradient
        // storage; nothing else reads or writes it until this rank's allreduce returns (libtorch works on it
        // only in this thread's forward, backward and step).
        let values = unsafe { std::slice::from_raw_parts_mut(buffer.data_ptr() as *mut f32, n) };
        comm.allreduce_sum(values)?;
        return Ok(values[n - 1]);
    }
    host.resize(n, 0.0);
    buffer
        .f_to_device(Device::Cpu)
        .and_then(|b| b.f_copy_data(host, n))
        .map_err(torch)?;
    comm.allreduce_sum(host)?;
    let summed = Tensor::f_from_slice(host)
        .and_then(|t| t.f_to_device(buffer.device()))
        .map_err(torch)?;
    buffer.shallow_clone().f_copy_(&summed).map_err(torch)?;
    Ok(host[n - 1])
}
