//! The two kinds of pipeline stage, as in Spark ML and scikit-learn: an [`Estimator`] is fitted on data and
//! returns a [`Transformer`]; a transformer adds columns to a data frame.

use std::future::Future;

use datafusion::arrow::datatypes::Field;
use datafusion::prelude::DataFrame;

use crate::error::{HearthError, Result};

/// Adds columns computed from existing ones. Transforming builds a query plan; nothing runs until the data
/// frame is collected.
pub trait Transformer {
    /// The data frame with this stage's output columns added.
    fn transform(&self, df: &DataFrame) -> Result<DataFrame>;
}

/// Learns a [`Transformer`] from data with one aggregate query.
pub trait Estimator {
    /// The fitted stage.
    type Model: Transformer;

    /// Fits the stage on `df`.
    fn fit(&self, df: &DataFrame) -> impl Future<Output = Result<Self::Model>> + Send;
}

/// The input column `column` of `df`, or an error naming the stage, the column and the columns there are.
pub(crate) fn input_field<'a>(stage: &str, df: &'a DataFrame, column: &str) -> Result<&'a Field> {
    df.schema()
        .field_with_unqualified_name(column)
        .map(AsRef::as_ref)
        .map_err(|_| HearthError::Schema {
            stage: stage.to_string(),
            column: column.to_string(),
            message: format!(
                "no such column; the input has {}",
                df.schema()
                    .fields()
                    .iter()
                    .map(|f| format!("{:?}", f.name()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        })
}

/// Fails when `column` already exists, as Spark refuses to overwrite a column.
pub(crate) fn ensure_new_column(stage: &str, df: &DataFrame, column: &str) -> Result<()> {
    if df.schema().field_with_unqualified_name(column).is_ok() {
        return Err(HearthError::Schema {
            stage: stage.to_string(),
            column: column.to_string(),
            message: "output column already exists".to_string(),
        });
    }
    Ok(())
}

/// Checks that input and output column lists are non-empty and pair up.
pub(crate) fn check_column_pairs(stage: &str, inputs: &[String], outputs: &[String]) -> Result<()> {
    let invalid = |param, message: String| HearthError::InvalidParam {
        stage: stage.to_string(),
        param,
        message,
    };
    if inputs.is_empty() {
        return Err(invalid("inputCols", "no input column is set".to_string()));
    }
    if inputs.len() != outputs.len() {
        return Err(invalid(
            "outputCols",
            format!("{} input columns but {} output columns", inputs.len(), outputs.len()),
        ));
    }
    Ok(())
}

/// Spark's column setters for a stage that maps input columns to output columns one to one: `inputCol` /
/// `outputCol` for one column, `inputCols` / `outputCols` for several. The stage has `uid`, `input_cols`
/// and `output_cols` fields; a single input without an output column gets Spark's `<uid>__output`.
macro_rules! column_pair_setters {
    () => {
        /// Process one column (Spark's `inputCol`).
        pub fn input_col(mut self, column: impl Into<String>) -> Self {
            self.input_cols = vec![column.into()];
            if self.output_cols.is_empty() {
                self.output_cols = vec![format!("{}__output", self.uid)];
            }
            self
        }

        /// The output column for a single input (Spark's `outputCol`).
        pub fn output_col(mut self, column: impl Into<String>) -> Self {
            self.output_cols = vec![column.into()];
            self
        }

        /// Process several columns, each on its own (Spark's `inputCols`).
        pub fn input_cols<S: Into<String>>(mut self, columns: impl IntoIterator<Item = S>) -> Self {
            self.input_cols = columns.into_iter().map(Into::into).collect();
            self
        }

        /// The output columns, one per input (Spark's `outputCols`).
        pub fn output_cols<S: Into<String>>(mut self, columns: impl IntoIterator<Item = S>) -> Self {
            self.output_cols = columns.into_iter().map(Into::into).collect();
            self
        }
    };
}

pub(crate) use column_pair_setters;
