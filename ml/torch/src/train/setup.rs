//! What a rank settles before its first step: where it runs (rank, host, device, threads), the tensors it
//! keeps in fp32 under mixed precision, and the image shape augmentation works on.

use hearth_collective::Communicator;
use tch::{Device, Tensor};

use super::device::pick_device;
use super::error::TrainError;
use super::optimizer::Optimizer;
use super::options::{Precision, TrainOptions, TrainSettings};
use super::precision::Bf16Compute;
use crate::model::{Layer, ModelSpec, Network};
use crate::threads::set_intra_op_threads;

/// Where a rank trains.
pub(super) struct Placement {
    /// Its rank.
    pub rank: usize,
    /// Its host, as it registered.
    pub host: String,
    /// The device it picked.
    pub device: Device,
}

impl Placement {
    /// The rank's device (the `local_rank`-th GPU of its host, for `cuda`) and libtorch's threads on the
    /// rank's own thread (the host's cores shared by the ranks on it, unless `threads` says).
    pub(super) fn of(comm: &Communicator, settings: &TrainSettings) -> Result<Self, TrainError> {
        let rank = comm.rank();
        let host = comm.peers()[rank].registration.host.clone();
        let local_ranks: Vec<usize> = comm
            .peers()
            .iter()
            .filter(|p| p.registration.host == host)
            .map(|p| p.rank)
            .collect();
        let local_rank = local_ranks.iter().position(|&r| r == rank).unwrap_or(0);
        let device = pick_device(&settings.device, local_rank).map_err(|why| TrainError::Options {
            rank,
            message: format!("on host {host}"),
            cause: Some(why),
        })?;
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        set_intra_op_threads(settings.threads.unwrap_or((cores / local_ranks.len().max(1)).max(1)));
        Ok(Self { rank, host, device })
    }
}

/// A network's named tensors (fp32), and the bfloat16 copy it computes with under mixed precision.
pub(super) type Precisioned = (Vec<(String, Tensor)>, Option<Bf16Compute>);

/// The named tensors checkpoints and the allreduce see, and under bf16 the bfloat16 copy the network computes
/// with: the names keep the fp32 master tensors (new handles on their memory), the network's own parameters
/// move to the copy. An error, as rank `rank`'s, where the network cannot train in the precision asked for.
pub(super) fn precision_split(
    rank: usize,
    options: &TrainOptions,
    network: &Network,
    optimizer: &Optimizer,
) -> Result<Precisioned, TrainError> {
    let named = network.named_tensors();
    match options.settings.precision {
        Precision::Fp32 => Ok((named, None)),
        Precision::Bf16 if options.model.layers().1.contains(&Layer::BatchNorm) => Err(TrainError::Options {
            rank,
            message: "precision bf16 is not available for networks with batch normalisation yet; use fp32".into(),
            cause: None,
        }),
        Precision::Bf16 => {
            let master = named.iter().map(|(name, t)| (name.clone(), t.detach())).collect();
            Ok((
                master,
                Some(Bf16Compute::new(&mut network.parameters(), &optimizer.values())),
            ))
        }
    }
}

/// The `[C, H, W]` shape of the images, when training augments them; an error, as rank `rank`'s, where the
/// model does not take images.
pub(super) fn image_shape(rank: usize, options: &TrainOptions) -> Result<Option<[i64; 3]>, TrainError> {
    match (&options.model, options.settings.augmentation.is_identity()) {
        (_, true) => Ok(None),
        (ModelSpec::Sequential { input_shape, .. }, false) if input_shape.len() == 3 => Ok(Some([
            input_shape[0] as i64,
            input_shape[1] as i64,
            input_shape[2] as i64,
        ])),
        (model, false) => Err(TrainError::Options {
            rank,
            message: format!(
                "augmentation (flips, crops) needs a Sequential model whose input shape is [channels, height, \
                 width]; this model's input is {:?}",
                model.layers().0
            ),
            cause: None,
        }),
    }
}
