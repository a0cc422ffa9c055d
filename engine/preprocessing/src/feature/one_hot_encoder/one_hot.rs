//! `ml_one_hot(index, category_size, drop_last, handle_invalid)`: Spark's `OneHotEncoderModel` transform.

use std::sync::{Arc, LazyLock};

use datafusion::arrow::array::Array;
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::cast::as_float64_array;
use datafusion::common::{exec_err, plan_err};
use datafusion::error::Result;
use datafusion::logical_expr::{
    ColumnarValue, Documentation, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use hearth_common::params::HandleInvalid;
use hearth_exec::udf::ML_DOC_SECTION;
use hearth_exec::udf::args::{as_bool, as_string, as_usize, constant, planned_constant};
use hearth_exec::vector::{vector_array, vector_type};

/// The SQL name.
pub const NAME: &str = "ml_one_hot";

/// One-hot encodes a category index into a vector, exactly as Spark: with `n = category_size`, the vector has
/// `n − 1` slots (drop_last, error), `n` (no drop_last, error), `n + 1` (no drop_last, keep: invalid values
/// get the extra slot) or `n` (drop_last, keep: invalid values are all zeros). A null index gives a null
/// vector; a fractional index is truncated.
///
/// ```sql
/// SELECT ml_one_hot(purpose_idx, 10, true, 'error') AS purpose_vec FROM indexed
/// ```
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct OneHotUdf {
    signature: Signature,
}

impl Default for OneHotUdf {
    fn default() -> Self {
        Self {
            signature: Signature::any(4, Volatility::Immutable),
        }
    }
}

/// `ml_one_hot`, built once.
pub(crate) static ONE_HOT: LazyLock<Arc<ScalarUDF>> = LazyLock::new(|| Arc::new(ScalarUDF::from(OneHotUdf::default())));

/// The SQL documentation of `ml_one_hot`.
static DOCS: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        ML_DOC_SECTION,
        "Spark's `OneHotEncoderModel` transform: a category index as a one-hot vector (`FixedSizeList<Float32>`). \
         With `n = category_size` the vector has `n − 1` slots (`drop_last`, `'error'`), `n` (no `drop_last`, \
         `'error'`), `n + 1` (no `drop_last`, `'keep'`: an invalid index gets the extra slot) or `n` (`drop_last`, \
         `'keep'`: an invalid index is all zeros). Under `'error'` a negative or unseen index fails the query naming \
         the column and the row's place in its batch. A null index gives a null vector; a fractional index is truncated.",
        "ml_one_hot(index, category_size, drop_last, handle_invalid)",
    )
    .with_argument("index", "Each row's category index, a numeric column.")
    .with_argument(
        "category_size",
        "How many categories the encoder was fitted on, a non-negative integer constant.",
    )
    .with_argument(
        "drop_last",
        "Whether the last category is dropped (encoded as all zeros), a boolean constant.",
    )
    .with_argument(
        "handle_invalid",
        "What an invalid index does, a string constant: `'error'` or `'keep'`.",
    )
    .with_sql_example("```sql\nSELECT ml_one_hot(purpose_idx, 10, true, 'error') AS purpose_vec FROM indexed\n```")
    .build()
});

/// The vector width for a category size and the two flags.
pub(crate) fn encoded_width(category_size: usize, drop_last: bool, keep_invalid: bool) -> usize {
    match (drop_last, keep_invalid) {
        (true, false) => category_size.saturating_sub(1),
        (false, false) | (true, true) => category_size,
        (false, true) => category_size + 1,
    }
}

fn keep_invalid(mode: &str) -> Result<bool> {
    match HandleInvalid::parse(mode) {
        Some(HandleInvalid::Error) => Ok(false),
        Some(HandleInvalid::Keep) => Ok(true),
        _ => exec_err!("OneHotEncoder: handle_invalid must be 'error' or 'keep', got {mode:?}"),
    }
}

impl ScalarUDFImpl for OneHotUdf {
    fn name(&self) -> &str {
        NAME
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        plan_err!("{NAME}: category_size, drop_last and handle_invalid must be constants")
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let input = &args.arg_fields[0];
        if !input.data_type().is_numeric() {
            return plan_err!(
                "OneHotEncoder: column {:?} has type {}; it must hold numeric category indices",
                input.name(),
                input.data_type()
            );
        }
        let size = as_usize(
            NAME,
            planned_constant(NAME, args.scalar_arguments, 1, "category_size")?,
            "category_size",
        )?;
        let drop_last = as_bool(
            NAME,
            planned_constant(NAME, args.scalar_arguments, 2, "drop_last")?,
            "drop_last",
        )?;
        let mode = as_string(
            NAME,
            planned_constant(NAME, args.scalar_arguments, 3, "handle_invalid")?,
            "handle_invalid",
        )?;
        let width = encoded_width(size, drop_last, keep_invalid(&mode)?);
        Ok(Arc::new(Field::new(NAME, vector_type(width), input.is_nullable())))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let size = as_usize(NAME, &constant(NAME, &args.args, 1, "category_size")?, "category_size")?;
        let drop_last = as_bool(NAME, &constant(NAME, &args.args, 2, "drop_last")?, "drop_last")?;
        let mode = as_string(
            NAME,
            &constant(NAME, &args.args, 3, "handle_invalid")?,
            "handle_invalid",
        )?;
        let keep = keep_invalid(&mode)?;
        let width = encoded_width(size, drop_last, keep);
        let rows = args.number_rows;
        let input = cast(&args.args[0].to_array(rows)?, &DataType::Float64)?;
        let input = as_float64_array(&input)?;
        let column = args.arg_fields[0].name();
        // One spare value past the rows: the dropped last category (and the invalid one beyond it) writes its
        // 1 there, so the write needs no branch on the category.
        let spare = rows * width;
        let mut out = vec![0f32; spare + 1];
        let at = |row: usize, slot: usize| {
            let encoded = usize::from(slot < width);
            encoded * (row * width + slot) + (1 - encoded) * spare
        };
        let values = input.values();
        let nulls = input.nulls().filter(|n| n.null_count() > 0);
        let all_categories = values.iter().fold(true, |all, &v| all & (v >= 0.0) & (v < size as f64));
        if nulls.is_none() && all_categories && size <= i32::MAX as usize {
            // Checked in one vectorised pass above (every value is a category, below `size`, so it fits an i32);
            // this loop has nothing left to check.
            let cells = out.as_mut_slice();
            for (row, &value) in values.iter().enumerate() {
                cells[at(row, value as i32 as usize)] = 1.0;
            }
        } else {
            for (row, &value) in values.iter().enumerate() {
                if nulls.is_some_and(|n| n.is_null(row)) {
                    continue;
                }
                let slot = if value >= 0.0 && value < size as f64 {
                    value as usize
                } else if keep {
                    size
                } else if value < 0.0 {
                    return exec_err!(
                        "OneHotEncoder: negative value {value} in column {column:?} (row {row} of a {rows}-row batch); \
                         indices can't be negative; set handle_invalid to \"keep\" to encode invalid values"
                    );
                } else {
                    return exec_err!(
                        "OneHotEncoder: unseen value {value} in column {column:?} (row {row} of a {rows}-row batch): \
                         the encoder was fitted on {size} categories; set handle_invalid to \"keep\" to encode invalid values"
                    );
                };
                out[at(row, slot)] = 1.0;
            }
        }
        out.truncate(spare);
        Ok(ColumnarValue::Array(vector_array(
            rows,
            width,
            out,
            input.nulls().cloned(),
        )?))
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(&DOCS)
    }
}
