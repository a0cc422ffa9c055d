//! hearth's vector column type: `FixedSizeList<Float32>` of a fixed dimension, Spark's dense `Vector`.

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, FixedSizeListArray, Float32Array, GenericListArray, OffsetSizeTrait,
};
use datafusion::arrow::buffer::NullBuffer;
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Fields};
use datafusion::common::cast::{as_fixed_size_list_array, as_float32_array};
use datafusion::common::{Result, exec_err};

/// The Arrow type of a `dim`-dimensional vector column.
///
/// ```
/// use hearth_exec::vector::{vector_dim, vector_type};
/// assert_eq!(vector_dim(&vector_type(3)), Some(3));
/// ```
pub fn vector_type(dim: usize) -> DataType {
    DataType::FixedSizeList(Arc::new(Field::new_list_field(DataType::Float32, true)), dim as i32)
}

/// The dimension of a vector type: a `FixedSizeList` of any numeric element type. `None` for other types.
pub fn vector_dim(data_type: &DataType) -> Option<usize> {
    match data_type {
        DataType::FixedSizeList(item, dim) if item.data_type().is_numeric() => Some(*dim as usize),
        _ => None,
    }
}

/// The fields of a probabilistic classifier's scores for `classes` classes, Spark's `rawPrediction`,
/// `probability` (vectors) and `prediction` (the class index).
///
/// ```
/// use hearth_exec::vector::classifier_score_fields;
/// assert_eq!(classifier_score_fields(3)[2].name(), "prediction");
/// ```
pub fn classifier_score_fields(classes: usize) -> Fields {
    Fields::from(vec![
        Field::new("rawPrediction", vector_type(classes), true),
        Field::new("probability", vector_type(classes), true),
        Field::new("prediction", DataType::Float64, true),
    ])
}

/// The values of a vector array as one row-major `f32` buffer of `len × dim` values (converted when the
/// elements are not `f32`), plus the row validity.
pub fn vector_values(array: &ArrayRef) -> Result<(Float32Array, Option<NullBuffer>)> {
    let list = as_fixed_size_list_array(array)?;
    let values = cast(list.values(), &DataType::Float32)?;
    let values = as_float32_array(&values)?.clone();
    Ok((values, list.nulls().cloned()))
}

/// An `array<double>` column (a `List` or `LargeList` of numbers, each row as long as the others) as a vector
/// column, as Spark's evaluators take one; `None` for a column that is no list of numbers. An error names
/// `column` and the first row whose length differs.
///
/// ```
/// use std::sync::Arc;
/// use datafusion::arrow::array::{ArrayRef, ListArray};
/// use datafusion::arrow::datatypes::Float64Type;
/// use hearth_exec::vector::{list_as_vector, vector_dim};
///
/// let rows: ArrayRef = Arc::new(ListArray::from_iter_primitive::<Float64Type, _, _>([
///     Some(vec![Some(0.2), Some(0.8)]),
///     Some(vec![Some(0.6), Some(0.4)]),
/// ]));
/// let vectors = list_as_vector(&rows, "probability").unwrap().unwrap();
/// assert_eq!(vector_dim(vectors.data_type()), Some(2));
/// ```
pub fn list_as_vector(array: &ArrayRef, column: &str) -> Result<Option<ArrayRef>> {
    match array.data_type() {
        DataType::List(item) if item.data_type().is_numeric() => rows_as_vector(array.as_list::<i32>(), column),
        DataType::LargeList(item) if item.data_type().is_numeric() => rows_as_vector(array.as_list::<i64>(), column),
        _ => Ok(None),
    }
}

fn rows_as_vector<O: OffsetSizeTrait>(list: &GenericListArray<O>, column: &str) -> Result<Option<ArrayRef>> {
    let length = |row: usize| list.value_length(row).as_usize();
    let first = (0..list.len()).find(|&row| list.is_valid(row));
    let dim = first.map_or(0, length);
    if let Some(row) = (0..list.len()).find(|&row| list.is_valid(row) && length(row) != dim) {
        let first = first.unwrap_or(0);
        return exec_err!(
            "column {column:?} holds {} values at row {row} and {dim} at row {first}: a vector's rows are all as long",
            length(row)
        );
    }
    Ok(Some(cast(list, &vector_type(dim))?))
}

/// Builds a vector array of `rows` rows from a row-major buffer of `rows × dim` values (`dim` may be 0: Spark's
/// empty vectors).
pub fn vector_array(rows: usize, dim: usize, values: Vec<f32>, nulls: Option<NullBuffer>) -> Result<ArrayRef> {
    let item = Arc::new(Field::new_list_field(DataType::Float32, true));
    let values = Arc::new(Float32Array::from(values));
    let list = FixedSizeListArray::try_new_with_length(item, dim as i32, values, nulls, rows)?;
    Ok(Arc::new(list))
}
