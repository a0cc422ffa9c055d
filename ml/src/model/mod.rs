//! Models: specs that travel in plans, and the libtorch networks they become.

mod network;
mod spec;

pub use network::Network;
pub use spec::{Activation, Layer, ModelSpec, SpecError};
