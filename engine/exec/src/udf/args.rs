//! Reading the constant arguments that carry a fitted stage's state into hearth's SQL functions.
//!
//! The state travels as literal arguments (DESIGN §4), so a function sees it either as a scalar or, when the
//! planner did not fold it, as an array whose first row holds it.

use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{ScalarValue, exec_err, plan_err};
use datafusion::error::Result;
use datafusion::logical_expr::ColumnarValue;
use datafusion::logical_expr::function::AccumulatorArgs;
use datafusion::physical_expr::expressions::Literal;

use hearth_common::params::HandleInvalid;

/// The constant value of argument `index` of `function`, as a scalar.
pub fn constant(function: &str, args: &[ColumnarValue], index: usize, what: &str) -> Result<ScalarValue> {
    match args.get(index) {
        Some(ColumnarValue::Scalar(value)) => Ok(value.clone()),
        Some(ColumnarValue::Array(array)) if !array.is_empty() => ScalarValue::try_from_array(array, 0),
        Some(ColumnarValue::Array(_)) => exec_err!("{function}: argument {} ({what}) is empty", index + 1),
        None => exec_err!("{function}: argument {} ({what}) is missing", index + 1),
    }
}

/// The literal argument `index` of an aggregate call to `function`, read when its accumulator is built.
pub fn aggregate_constant<'a>(
    function: &str,
    args: &'a AccumulatorArgs,
    index: usize,
    what: &str,
) -> Result<&'a ScalarValue> {
    match args.exprs.get(index).and_then(|e| e.downcast_ref::<Literal>()) {
        Some(literal) => Ok(literal.value()),
        None => plan_err!("{function}: argument {} ({what}) must be a constant", index + 1),
    }
}

/// Every argument in `values` as an array of `rows` rows (constants repeated).
pub fn arrays(values: &[ColumnarValue], rows: usize) -> Result<Vec<ArrayRef>> {
    values.iter().map(|value| value.to_array(rows)).collect()
}

/// A `handle_invalid` constant: whether invalid values are kept (`'keep'`, and `'skip'`, whose row filter is
/// the transformer's) rather than refused (`'error'`).
pub fn keeps_invalid(function: &str, value: &ScalarValue) -> Result<bool> {
    let mode = as_string(function, value, "handle_invalid")?;
    match HandleInvalid::parse(&mode) {
        Some(HandleInvalid::Error) => Ok(false),
        Some(HandleInvalid::Keep | HandleInvalid::Skip) => Ok(true),
        None => exec_err!("{function}: handle_invalid must be 'error', 'skip' or 'keep', got {mode:?}"),
    }
}

/// The literal argument `index` at planning time, when the planner knows it.
pub fn planned_constant<'a>(
    function: &str,
    scalars: &[Option<&'a ScalarValue>],
    index: usize,
    what: &str,
) -> Result<&'a ScalarValue> {
    match scalars.get(index).copied().flatten() {
        Some(value) => Ok(value),
        None => plan_err!("{function}: argument {} ({what}) must be a constant", index + 1),
    }
}

/// A string constant such as `'keep'`.
pub fn as_string(function: &str, value: &ScalarValue, what: &str) -> Result<String> {
    match value {
        ScalarValue::Utf8(Some(s)) | ScalarValue::LargeUtf8(Some(s)) | ScalarValue::Utf8View(Some(s)) => Ok(s.clone()),
        other => exec_err!("{function}: {what} must be a string constant, got {other}"),
    }
}

/// A boolean constant.
pub fn as_bool(function: &str, value: &ScalarValue, what: &str) -> Result<bool> {
    match value {
        ScalarValue::Boolean(Some(b)) => Ok(*b),
        other => exec_err!("{function}: {what} must be a boolean constant, got {other}"),
    }
}

/// A non-negative integer constant.
pub fn as_usize(function: &str, value: &ScalarValue, what: &str) -> Result<usize> {
    let n = match value {
        ScalarValue::Int8(Some(v)) => Some(i64::from(*v)),
        ScalarValue::Int16(Some(v)) => Some(i64::from(*v)),
        ScalarValue::Int32(Some(v)) => Some(i64::from(*v)),
        ScalarValue::Int64(Some(v)) => Some(*v),
        ScalarValue::UInt8(Some(v)) => Some(i64::from(*v)),
        ScalarValue::UInt16(Some(v)) => Some(i64::from(*v)),
        ScalarValue::UInt32(Some(v)) => Some(i64::from(*v)),
        ScalarValue::UInt64(Some(v)) => i64::try_from(*v).ok(),
        _ => None,
    };
    match n.and_then(|n| usize::try_from(n).ok()) {
        Some(n) => Ok(n),
        None => exec_err!("{function}: {what} must be a non-negative integer constant, got {value}"),
    }
}

/// The elements of a list constant (`[1.0, 2.0]`, `make_array(...)`), as an array of `element` type.
fn list_elements(function: &str, value: &ScalarValue, element: &DataType, what: &str) -> Result<ArrayRef> {
    let values = match value {
        ScalarValue::List(list) if list.len() == 1 && !list.is_null(0) => list.value(0),
        ScalarValue::LargeList(list) if list.len() == 1 && !list.is_null(0) => list.value(0),
        ScalarValue::FixedSizeList(list) if list.len() == 1 && !list.is_null(0) => list.value(0),
        other => return exec_err!("{function}: {what} must be a list constant, got {other}"),
    };
    Ok(cast(&values, element)?)
}

/// A list of numbers, as `f64`.
pub fn as_f64_list(function: &str, value: &ScalarValue, what: &str) -> Result<Vec<f64>> {
    let values = list_elements(function, value, &DataType::Float64, what)?;
    let values = values.as_primitive::<arrow::datatypes::Float64Type>();
    if values.null_count() > 0 {
        return exec_err!("{function}: {what} must not contain nulls");
    }
    Ok(values.values().to_vec())
}

/// A list of strings.
pub fn as_string_list(function: &str, value: &ScalarValue, what: &str) -> Result<Vec<String>> {
    let values = list_elements(function, value, &DataType::Utf8, what)?;
    let values = values.as_string::<i32>();
    if values.null_count() > 0 {
        return exec_err!("{function}: {what} must not contain nulls");
    }
    Ok(values.iter().map(|s| s.unwrap_or_default().to_string()).collect())
}

/// A list literal of `f64` values, for building a call from Rust.
pub fn f64_list_literal(values: &[f64]) -> ScalarValue {
    let items: Vec<ScalarValue> = values.iter().map(|v| ScalarValue::Float64(Some(*v))).collect();
    ScalarValue::List(ScalarValue::new_list_nullable(&items, &DataType::Float64))
}

/// A list literal of strings, for building a call from Rust.
pub fn string_list_literal(values: &[String]) -> ScalarValue {
    let items: Vec<ScalarValue> = values.iter().map(|v| ScalarValue::Utf8(Some(v.clone()))).collect();
    ScalarValue::List(ScalarValue::new_list_nullable(&items, &DataType::Utf8))
}
