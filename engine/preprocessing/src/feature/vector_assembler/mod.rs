//! `VectorAssembler`: numeric, boolean and vector columns into one vector column.

use datafusion::arrow::datatypes::DataType;
use datafusion::logical_expr::{Expr, ident, lit};
use datafusion::prelude::DataFrame;
use hearth_common::params::{HandleInvalid, new_uid};
use hearth_exec::error::{HearthError, Result};
use hearth_exec::vector::vector_dim;
use serde::{Deserialize, Serialize};

pub(crate) mod assembly;
mod vector_assemble;

pub use vector_assemble::VectorAssembleUdf;
pub(crate) use vector_assemble::{VECTOR_ASSEMBLE, assembled_arguments};

use crate::stage::{Transformer, ensure_new_column, input_field, serde_stage};

/// Concatenates numeric, boolean and vector columns into one vector, Spark's `VectorAssembler`.
///
/// `handle_invalid`: `error` (default) fails on a null, or on NaN in a scalar column; `skip` drops rows with a
/// null in any input or NaN in a scalar input; `keep` assembles NaN for a null (as many NaNs as the vector
/// has slots) and keeps NaN. Vector widths come from the column type, so `keep` needs no size hint.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use hearth_exec::session::Session;
/// use hearth_preprocessing::functions::PreprocessingFeature;
/// use hearth_preprocessing::{feature::VectorAssembler, stage::Transformer};
/// let session = Session::builder().with_preprocessing().local(1);
/// let df = session.context().sql("SELECT 1 AS a, 2.5 AS b, true AS c").await.unwrap();
/// let assembled = VectorAssembler::new().input_cols(["a", "b", "c"]).output_col("features").transform(&df).unwrap();
/// assert!(assembled.schema().field_with_unqualified_name("features").is_ok());
/// # });
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct VectorAssembler {
    uid: String,
    input_cols: Vec<String>,
    output_col: String,
    handle_invalid: HandleInvalid,
}

impl Default for VectorAssembler {
    fn default() -> Self {
        Self::new()
    }
}

impl VectorAssembler {
    /// An assembler with Spark's defaults: no inputs yet, output `<uid>__output`, `handle_invalid = error`.
    pub fn new() -> Self {
        let uid = new_uid("VectorAssembler");
        Self {
            output_col: format!("{uid}__output"),
            uid,
            input_cols: Vec::new(),
            handle_invalid: HandleInvalid::Error,
        }
    }

    /// The columns to concatenate, in order.
    pub fn input_cols<S: Into<String>>(mut self, columns: impl IntoIterator<Item = S>) -> Self {
        self.input_cols = columns.into_iter().map(Into::into).collect();
        self
    }

    /// The vector column to add.
    pub fn output_col(mut self, column: impl Into<String>) -> Self {
        self.output_col = column.into();
        self
    }

    /// What to do with nulls and NaNs.
    pub fn handle_invalid(mut self, handle_invalid: HandleInvalid) -> Self {
        self.handle_invalid = handle_invalid;
        self
    }

    /// The columns concatenated.
    pub fn get_input_cols(&self) -> &[String] {
        &self.input_cols
    }

    /// The vector column added.
    pub fn get_output_col(&self) -> &str {
        &self.output_col
    }

    /// Rows kept by `skip`: no null in any input, no NaN in a floating-point scalar input.
    fn valid_rows(&self, df: &DataFrame) -> Result<Option<Expr>> {
        let mut predicate: Option<Expr> = None;
        for column in &self.input_cols {
            let field = input_field(&self.uid, df, column)?;
            let mut valid = ident(column).is_not_null();
            if matches!(
                field.data_type(),
                DataType::Float16 | DataType::Float32 | DataType::Float64
            ) {
                valid = valid.and(Expr::Not(Box::new(datafusion::functions::expr_fn::isnan(ident(
                    column,
                )))));
            }
            predicate = Some(match predicate {
                Some(p) => p.and(valid),
                None => valid,
            });
        }
        Ok(predicate)
    }
}

impl Transformer for VectorAssembler {
    fn transform(&self, df: &DataFrame) -> Result<DataFrame> {
        if self.input_cols.is_empty() {
            return Err(HearthError::invalid_param(
                &self.uid,
                "inputCols",
                "no input column is set",
            ));
        }
        for column in &self.input_cols {
            let field = input_field(&self.uid, df, column)?;
            let data_type = field.data_type();
            if !(data_type.is_numeric() || *data_type == DataType::Boolean || vector_dim(data_type).is_some()) {
                return Err(HearthError::schema(
                    &self.uid,
                    column,
                    format!("data type {data_type} is not supported (numeric, boolean or vector only)"),
                ));
            }
        }
        ensure_new_column(&self.uid, df, &self.output_col)?;
        let input = match self.handle_invalid {
            HandleInvalid::Skip => match self.valid_rows(df)? {
                Some(predicate) => df.clone().filter(predicate)?,
                None => df.clone(),
            },
            _ => df.clone(),
        };
        let mut args = vec![lit(self.handle_invalid.as_str())];
        args.extend(self.input_cols.iter().map(ident));
        Ok(input.with_column(&self.output_col, VECTOR_ASSEMBLE.call(args))?)
    }
}

crate::stage_class!(transformer VectorAssembler);
crate::stage_example!(
    VectorAssembler,
    VectorAssembler::new().input_cols(["x", "y"]).output_col("assembled")
);

impl VectorAssembler {
    /// What [`Stage::describe`] says.
    fn summary(&self) -> String {
        format!("{} input columns", self.input_cols.len())
    }
}

serde_stage!(VectorAssembler, "VectorAssembler", summary);
