//! Spark MLlib's feature stages with Spark's parameters, defaults and edge cases (see each type for the
//! exact rules). Each stage has a folder holding its estimator, its model and the SQL functions that fit and
//! apply it; [`functions`](crate::functions) registers them all.

pub mod one_hot_encoder;
mod sql_columns;
pub mod standard_scaler;
pub mod string_indexer;
pub mod vector_assembler;

pub use one_hot_encoder::{OneHotEncoder, OneHotEncoderModel};
pub use sql_columns::{SqlColumn, SqlColumns};
pub use standard_scaler::{StandardScaler, StandardScalerModel};
pub use string_indexer::{StringIndexer, StringIndexerModel};
pub use vector_assembler::VectorAssembler;
