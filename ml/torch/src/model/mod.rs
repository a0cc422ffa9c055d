//! Models: specs that travel in plans, and the libtorch networks they become.

mod dropout;
mod named;
mod network;
mod spec;

pub use named::{LoadError, NamedTensor, SafetensorsError, from_safetensors, host_copies, load_into, to_safetensors};
pub use network::Network;
pub use spec::{Activation, Layer, ModelSpec, SpecError};
