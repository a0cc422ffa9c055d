//! # hearth-torch
//!
//! hearth's libtorch side: everything that turns Arrow data into a trained model. It holds no DataFusion; the
//! engine calls into it, and it keeps its ranks in step through `hearth-collective`.
//!
//! The pieces, bottom up: [`data`] turns Arrow batches into a rank's [`Shard`](data::Shard); [`model`] builds
//! a [`ModelSpec`](model::ModelSpec) as a libtorch network; [`train`] is one rank's loop
//! ([`RankTrainer`](train::RankTrainer)) with its optimizers and strategies; [`artifact`] saves a trained model
//! as safetensors + JSON; [`explain`] attributes a trained model's outputs to its inputs; [`horovod`] is
//! Horovod's API for hand-written training loops.
//!
//! ```
//! use hearth_collective::LocalWorld;
//! use hearth_torch::data::Shard;
//! use hearth_torch::model::ModelSpec;
//! use hearth_torch::train::{DeviceChoice, RankTrainer, TrainOptions, TrainSettings};
//!
//! // Two ranks learn x -> x from four rows, averaging gradients with allreduce.
//! let rows = Shard::new(vec![0.0, 1.0, 0.0, 1.0], vec![0.0, 1.0, 0.0, 1.0], 1).unwrap();
//! let settings = TrainSettings { epochs: 1, device: DeviceChoice::Cpu, ..TrainSettings::default() };
//! let options = TrainOptions::new(ModelSpec::Linear { inputs: 1, outputs: 2 }, settings);
//! let outcomes = LocalWorld::new(2)
//!     .run(|mut comm| RankTrainer::new(&rows.round_robin(comm.rank(), 2), &options).run(&mut comm))
//!     .unwrap();
//! assert_eq!(outcomes.len(), 2);
//! ```

// No function over 80 lines in the library (clippy.toml); tests, examples and benchmarks are exempt.
#![warn(clippy::too_many_lines)]

pub mod artifact;
pub mod data;
pub mod explain;
pub mod horovod;
pub mod model;
pub mod threads;
pub mod train;

/// The libtorch release hearth is built against (`tch` 0.26).
pub const LIBTORCH_VERSION: &str = "2.13.0";
