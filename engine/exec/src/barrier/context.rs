//! What a barrier task knows and can do: Spark's `BarrierTaskContext`, with the ring communicator.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hearth_collective::{CollectiveError, Communicator, JobSecret, JoinOptions, Peer, upload};
use hearth_common::host::{address_towards, host_name};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::gpus::GpuLease;

/// What a retried stage resumes from: the latest bytes a task of the previous attempt sent the driver
/// through its [`DriverChannel`] (a checkpoint), and the epoch they belong to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResumePoint {
    /// The epoch the bytes were sent for.
    pub epoch: usize,
    /// The bytes (base64 in the plan).
    #[serde(serialize_with = "to_base64", deserialize_with = "from_base64")]
    pub bytes: Vec<u8>,
}

fn to_base64<S: Serializer>(bytes: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&STANDARD.encode(bytes))
}

fn from_base64<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<u8>, D::Error> {
    let text = String::deserialize(deserializer)?;
    STANDARD.decode(text).map_err(serde::de::Error::custom)
}

/// One task's view of its barrier stage: its rank among the `world_size` tasks, the peers, and the
/// collectives that keep them together. Every call ends within the stage's timeout.
#[derive(Debug)]
pub struct BarrierTaskContext {
    communicator: Communicator,
    coordinator: SocketAddr,
    secret: JobSecret,
    timeout: Duration,
    resume: Option<ResumePoint>,
    gpu: Option<GpuLease>,
    cancelled: Arc<AtomicBool>,
}

/// How a task joins its stage: where it is among its host's tasks, what a retry resumes from, the GPU it
/// holds, and the flag that says the stage was cancelled.
pub(crate) struct Joining {
    pub position: usize,
    pub resume: Option<ResumePoint>,
    pub gpu: Option<GpuLease>,
    pub cancelled: Arc<AtomicBool>,
}

impl BarrierTaskContext {
    /// Joins the stage: registers with the driver's coordinator and opens the ring links.
    pub(crate) fn join(
        coordinator: SocketAddr,
        secret: JobSecret,
        timeout: Duration,
        joining: Joining,
    ) -> Result<Self, CollectiveError> {
        let devices = match &joining.gpu {
            Some(gpu) => vec![format!("cuda:{}", gpu.index())],
            None => vec!["cpu".to_string()],
        };
        let options = JoinOptions {
            bind: address_towards(coordinator).unwrap_or(coordinator.ip()),
            host: host_name(),
            devices,
            position: joining.position,
            timeout,
            share_memory: true,
        };
        let communicator = Communicator::join(coordinator, &secret, &options)?;
        Ok(Self {
            communicator,
            coordinator,
            secret,
            timeout,
            resume: joining.resume,
            gpu: joining.gpu,
            cancelled: joining.cancelled,
        })
    }

    /// This task's rank, assigned at the rendezvous (ranks are sorted by host).
    pub fn rank(&self) -> usize {
        self.communicator.rank()
    }

    /// The number of tasks in the stage.
    pub fn world_size(&self) -> usize {
        self.communicator.world_size()
    }

    /// Every task's rank, host, address and devices.
    pub fn peers(&self) -> &[Peer] {
        self.communicator.peers()
    }

    /// On a retried stage, the latest bytes a task of the failed attempt sent the driver (the same on every
    /// task); `None` on a first attempt.
    pub fn resume(&self) -> Option<&ResumePoint> {
        self.resume.as_ref()
    }

    /// The CUDA device this task holds, when its stage asked for GPUs.
    pub fn gpu(&self) -> Option<usize> {
        self.gpu.as_ref().map(GpuLease::index)
    }

    /// Set when the stage was cancelled (its job killed, its query dropped): long work checks it and ends.
    pub fn cancelled(&self) -> &Arc<AtomicBool> {
        &self.cancelled
    }

    /// Waits until every task has reached this point.
    pub fn barrier(&mut self) -> datafusion::error::Result<()> {
        self.communicator.barrier().map_err(collective_error)
    }

    /// Every task's bytes, in rank order.
    pub fn all_gather(&mut self, mine: &[u8]) -> datafusion::error::Result<Vec<Vec<u8>>> {
        self.communicator.allgather_bytes(mine).map_err(collective_error)
    }

    /// The ring: allreduce, broadcast and the rest.
    pub fn communicator(&mut self) -> &mut Communicator {
        &mut self.communicator
    }

    /// A channel to the driver, usable while the communicator is in use.
    pub fn driver_channel(&self) -> DriverChannel {
        DriverChannel {
            coordinator: self.coordinator,
            secret: self.secret.clone(),
            rank: self.rank(),
            timeout: self.timeout,
        }
    }
}

/// Sends bytes (a checkpoint) from a task to the driver, which keeps the latest epoch's for a retry of the
/// stage.
#[derive(Clone, Debug)]
pub struct DriverChannel {
    coordinator: SocketAddr,
    secret: JobSecret,
    rank: usize,
    timeout: Duration,
}

impl DriverChannel {
    /// Sends `bytes` as this task's upload for `epoch`, waiting for the driver to confirm.
    pub fn send(&self, epoch: usize, bytes: &[u8]) -> Result<(), CollectiveError> {
        upload(self.coordinator, &self.secret, self.rank, epoch, bytes, self.timeout)
    }
}

/// A collective's failure as an execution error (never an IO error, which a cluster would retry alone).
fn collective_error(error: CollectiveError) -> datafusion::error::DataFusionError {
    datafusion::error::DataFusionError::Execution(error.to_string())
}
