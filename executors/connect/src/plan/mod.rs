//! From Spark Connect's plans to DataFusion's: relations, expressions, Spark's functions, literals and data
//! sources.

mod expressions;
mod functions;
mod literals;
mod named;
mod relations;
mod reshape;
mod sources;

pub use literals::scalar;
pub(crate) use relations::Planner;
pub(crate) use sources::schema_from_text;
