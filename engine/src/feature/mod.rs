//! Spark MLlib's feature stages with Spark's parameters, defaults and edge cases
//! (see each type for the exact rules).

mod one_hot_encoder;
mod standard_scaler;
mod string_indexer;
mod vector_assembler;

pub use one_hot_encoder::{OneHotEncoder, OneHotEncoderModel};
pub use standard_scaler::{StandardScaler, StandardScalerModel};
pub use string_indexer::{StringIndexer, StringIndexerModel};
pub use vector_assembler::VectorAssembler;
