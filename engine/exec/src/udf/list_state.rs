//! Building the one-row list and struct values that hearth's aggregate functions keep as state and return.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, ListArray, StructArray};
use datafusion::arrow::buffer::OffsetBuffer;
use datafusion::arrow::datatypes::{DataType, Field, Fields};
use datafusion::common::ScalarValue;
use datafusion::error::Result;

/// `List<item>` with nullable items, the type of every list hearth's aggregates hold.
pub fn list_type(item: DataType) -> DataType {
    DataType::List(Arc::new(Field::new_list_field(item, true)))
}

/// A one-row list scalar holding all of `values`.
pub fn list_scalar(values: ArrayRef) -> Result<ScalarValue> {
    let item = Arc::new(Field::new_list_field(values.data_type().clone(), true));
    let offsets = OffsetBuffer::from_lengths([values.len()]);
    Ok(ScalarValue::List(Arc::new(ListArray::try_new(
        item, offsets, values, None,
    )?)))
}

/// A struct scalar with one row, from named one-row columns.
pub fn struct_scalar(fields: Fields, columns: Vec<ArrayRef>) -> Result<ScalarValue> {
    Ok(ScalarValue::Struct(Arc::new(StructArray::try_new(
        fields, columns, None,
    )?)))
}
