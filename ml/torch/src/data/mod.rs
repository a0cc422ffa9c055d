//! A rank's rows: Arrow batches turned into a dense [`Shard`], and, for rows beyond a rank's memory budget,
//! a [`ShardFile`] on disk read back an epoch at a time through a shuffle buffer ([`StreamedShard`]).

mod labels;
mod shard;
mod spill;
mod stream;

use arrow_schema::{ArrowError, DataType};

pub use labels::LabelSummary;
pub use shard::Shard;
pub use spill::{ShardFile, ShardFileReader, ShardFileWriter};
pub use stream::{EpochBatches, HeldBytes, Hold, StreamedShard};

/// Why batches cannot become a shard.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    /// A column is missing or has the wrong type.
    #[error("column {column:?}: {message}{}", cause.as_ref().map(|e| format!(": {e}")).unwrap_or_default())]
    Column {
        /// The column.
        column: String,
        /// What is wrong.
        message: String,
        /// Arrow's error, when a cast of the column failed.
        #[source]
        cause: Option<ArrowError>,
    },
    /// Rows spilled to disk could not be written or read back.
    #[error("the rows spilled to {path}: {message}")]
    Spill {
        /// The spill file.
        path: String,
        /// What failed.
        message: String,
    },
}

impl DataError {
    /// The spill file `path` failed: `message` says how.
    pub(crate) fn spill(path: &std::path::Path, message: impl ToString) -> Self {
        Self::Spill {
            path: path.display().to_string(),
            message: message.to_string(),
        }
    }

    /// Column `column` cannot be used: `message` says why.
    pub(crate) fn column(column: &str, message: impl Into<String>) -> Self {
        Self::Column {
            column: column.to_string(),
            message: message.into(),
            cause: None,
        }
    }

    /// Column `column` cannot be cast to `to`: Arrow's `cause` says why.
    pub(crate) fn uncastable(column: &str, to: &DataType, cause: ArrowError) -> Self {
        Self::Column {
            column: column.to_string(),
            message: format!("cannot cast to {to}"),
            cause: Some(cause),
        }
    }
}
