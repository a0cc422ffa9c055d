//! hearth's integration tests: one binary (each test binary re-links DataFusion and libtorch).

mod artifact;
mod barrier;
mod clustering;
mod collectives;
mod common;
mod conformance;
mod connect;
mod csv_decoding;
mod datasets;
mod display;
mod docs_reference;
mod early_stopping;
mod errors;
mod evaluators;
mod explanations;
mod fleet;
mod fleet_ports;
mod frames;
mod fuzz;
mod horovod;
mod images;
mod linear_models;
mod parity;
mod perceptron_models;
mod pipelines;
#[cfg(feature = "polars")]
mod polars;
mod programs;
mod repeated_training;
mod slt;
mod sql;
mod sql_clustering;
mod sql_evaluation;
mod sql_linear;
mod sql_tuning;
mod strategies;
mod streaming;
mod torch_parity;
#[path = "../../benches/common/torch_peer.rs"]
mod torch_peer;
mod training;
mod tuning;
