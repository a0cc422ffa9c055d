//! # hearth-collective
//!
//! Collectives for data-parallel training: a rendezvous that assigns ranks, a ring communicator with
//! allreduce, broadcast, allgather and barrier over authenticated TCP links whose every frame is
//! integrity-checked (or encrypted) — through memory when every rank shares one process — a parameter server on
//! rank 0 for the asynchronous strategies — every operation bounded by a deadline — and NCCL for ranks whose
//! gradients all live on GPUs.
//!
//! The driver starts a [`Coordinator`]; each rank calls [`Communicator::join`] with the coordinator's address
//! and the job's [`JobSecret`]; [`LocalWorld`] runs a whole job as threads of one process. Values travel in
//! the machine's byte order (little-endian on every platform hearth supports).
//!
//! It links neither libtorch nor DataFusion: the trainer (`hearth-torch`) and the barrier stage above it
//! hand it flat `f32` buffers.

// No function over 80 lines in the library (clippy.toml); tests, examples and benchmarks are exempt.
#![warn(clippy::too_many_lines)]

mod acceptor;
mod auth;
mod center;
mod error;
mod frames;
mod link;
mod local;
mod memory;
mod nccl;
mod rendezvous;
mod ring;
mod shipping;
#[cfg(test)]
mod tampering;
mod transfer;
mod update;
mod wire;

pub use auth::JobSecret;
pub use center::{CenterClient, CenterServer, Staleness};
pub use error::{CollectiveError, Result};
pub use frames::FrameProtection;
pub use local::LocalWorld;
pub use nccl::{Nccl, NcclDeclined, NcclVote, nccl_choice};
pub use rendezvous::{Coordinator, Peer, Registration, Upload, UploadRule, fetch_program, register, upload};
pub use ring::{Communicator, JoinOptions};
pub use update::{add_into, elastic_exchange};
