//! From Spark Connect's plans to DataFusion's: relations, expressions, Spark's functions, literals and data
//! sources.

mod describe;
mod expressions;
mod functions;
mod libsvm;
mod literals;
mod named;
mod relations;
mod reshape;
mod sources;
mod vectors;

pub use literals::scalar;
pub(crate) use relations::Planner;
pub(crate) use sources::schema_from_text;
