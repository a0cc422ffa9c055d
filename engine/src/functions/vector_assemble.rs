//! `ml_vector_assemble(handle_invalid, col, ...)`: numeric, boolean and vector columns into one vector.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::cast::as_float64_array;
use datafusion::common::{exec_err, plan_err};
use datafusion::error::Result;
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use super::args::{as_string, constant};
use crate::params::HandleInvalid;
use crate::vector::{vector_array, vector_dim, vector_type, vector_values};

/// The SQL name.
pub const NAME: &str = "ml_vector_assemble";

/// Spark's `VectorAssembler` as a scalar function. The first argument is `'error'` (a null, or NaN in a scalar
/// column, fails the query naming the column and row) or `'keep'` (null becomes NaN, NaN stays);
/// `'skip'` behaves as `'keep'` here because dropping rows is the transformer's filter.
///
/// ```sql
/// SELECT ml_vector_assemble('error', duration, credit_amount, age) AS features FROM credit
/// ```
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct VectorAssembleUdf {
    signature: Signature,
}

impl Default for VectorAssembleUdf {
    fn default() -> Self {
        Self {
            signature: Signature::variadic_any(Volatility::Immutable),
        }
    }
}

/// How many vector slots a column of this type fills, or why it cannot be assembled.
fn slot_count(field: &Field) -> Result<usize> {
    let data_type = field.data_type();
    if let Some(dim) = vector_dim(data_type) {
        Ok(dim)
    } else if data_type.is_numeric() || *data_type == DataType::Boolean {
        Ok(1)
    } else {
        plan_err!(
            "{NAME}: data type {data_type} of column {:?} is not supported (numeric, boolean or vector columns only)",
            field.name()
        )
    }
}

fn output_dim(inputs: &[FieldRef]) -> Result<usize> {
    if inputs.len() < 2 {
        return plan_err!("{NAME}: expects handle_invalid and at least one column");
    }
    inputs[1..].iter().map(|f| slot_count(f)).sum()
}

/// Rows assembled together, so the output rows being written stay in cache.
const TILE_ROWS: usize = 256;

/// One input column's values, checked: nulls are already NaN (keep) or were refused (error).
enum Input {
    /// A numeric or boolean column, one slot a row.
    Scalar(Vec<f32>),
    /// A vector column, `width` slots a row.
    Vector { values: Vec<f32>, width: usize },
}

impl Input {
    /// Reads a column, failing under `error` (`keep == false`) at the first null, or NaN in a scalar column.
    fn read(array: &ArrayRef, field: &Field, keep: bool, rows: usize) -> Result<Self> {
        let invalid = |what: &str, row: usize| {
            exec_err!(
                "VectorAssembler: {what} in column {:?} (row {row} of a {rows}-row batch) with handle_invalid = \"error\"; \
                 use \"skip\" to drop such rows or \"keep\" to assemble NaN",
                field.name()
            )
        };
        if let Some(width) = vector_dim(field.data_type()) {
            let (values, nulls) = vector_values(array)?;
            let mut values = values.values().to_vec();
            if let Some(nulls) = nulls.filter(|n| n.null_count() > 0) {
                if !keep {
                    return invalid("null", nulls.iter().position(|valid| !valid).unwrap_or(0));
                }
                for row in (0..rows).filter(|&r| nulls.is_null(r)) {
                    values[row * width..(row + 1) * width].fill(f32::NAN);
                }
            }
            return Ok(Input::Vector { values, width });
        }
        let numbers = cast(array, &DataType::Float64)?;
        let numbers = as_float64_array(&numbers)?;
        let nulls = numbers.nulls().filter(|n| n.null_count() > 0);
        if !keep {
            if let Some(row) = nulls.and_then(|n| n.iter().position(|valid| !valid)) {
                return invalid("null", row);
            }
            // A branch-free scan first (it vectorises); the position only when there is a NaN.
            if numbers.values().iter().fold(false, |any, x| any | x.is_nan()) {
                return invalid("NaN", numbers.values().iter().position(|x| x.is_nan()).unwrap_or(0));
            }
        }
        let values: Vec<f32> = match nulls {
            None => numbers.values().iter().map(|&x| x as f32).collect(),
            Some(nulls) => numbers
                .values()
                .iter()
                .zip(nulls.iter())
                .map(|(&x, valid)| if valid { x as f32 } else { f32::NAN })
                .collect(),
        };
        Ok(Input::Scalar(values))
    }
}

impl ScalarUDFImpl for VectorAssembleUdf {
    fn name(&self) -> &str {
        NAME
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        let fields: Vec<FieldRef> = arg_types
            .iter()
            .enumerate()
            .map(|(i, t)| Arc::new(Field::new(format!("argument {}", i + 1), t.clone(), true)))
            .collect();
        Ok(vector_type(output_dim(&fields)?))
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let dim = output_dim(args.arg_fields)?;
        Ok(Arc::new(Field::new(NAME, vector_type(dim), true)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let mode = as_string(
            NAME,
            &constant(NAME, &args.args, 0, "handle_invalid")?,
            "handle_invalid",
        )?;
        let keep = match HandleInvalid::parse(&mode) {
            Some(HandleInvalid::Error) => false,
            Some(HandleInvalid::Keep | HandleInvalid::Skip) => true,
            None => return exec_err!("{NAME}: handle_invalid must be 'error', 'skip' or 'keep', got {mode:?}"),
        };
        let rows = args.number_rows;
        let dim = output_dim(&args.arg_fields)?;
        let mut inputs = Vec::with_capacity(args.args.len() - 1);
        for (value, field) in args.args[1..].iter().zip(&args.arg_fields[1..]) {
            inputs.push(Input::read(&value.to_array(rows)?, field, keep, rows)?);
        }
        // Column by column within tiles of rows, so the output rows being written stay in cache.
        let mut out = vec![0f32; rows * dim];
        let stride = dim.max(1);
        for (tile, tile_out) in out.chunks_mut(TILE_ROWS * stride).enumerate() {
            let first = tile * TILE_ROWS;
            let mut offset = 0;
            for input in &inputs {
                match input {
                    Input::Scalar(values) => {
                        for (slots, &x) in tile_out.chunks_exact_mut(stride).zip(&values[first..]) {
                            slots[offset] = x;
                        }
                        offset += 1;
                    }
                    Input::Vector { values, width } => {
                        let source = values[first * width..].chunks_exact(*width);
                        for (slots, x) in tile_out.chunks_exact_mut(stride).zip(source) {
                            slots[offset..offset + width].copy_from_slice(x);
                        }
                        offset += width;
                    }
                }
            }
        }
        Ok(ColumnarValue::Array(vector_array(dim, out, None)?))
    }
}
