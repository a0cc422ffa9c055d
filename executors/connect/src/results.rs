//! Results as a PySpark client reads them: Arrow IPC streams of at most [`CHUNK_BYTES`] each, in the types
//! PySpark's Arrow conversion knows (no view or dictionary types).

use std::sync::Arc;

use bytes::Bytes;
use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, FixedSizeListArray, Float64Array, Int8Array, ListArray, RecordBatch, StructArray,
    new_null_array,
};
use datafusion::arrow::buffer::OffsetBuffer;
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Fields, Float32Type, Schema, SchemaRef};
use datafusion::arrow::ipc::writer::StreamWriter;

use crate::errors::Result;

/// The most bytes of Arrow data one response carries (Spark's server keeps batches near 4 MiB; gRPC's client
/// refuses messages over 128 MiB).
pub(crate) const CHUNK_BYTES: usize = 4 << 20;

/// Spark's `VectorUDT` storage: `struct<type: tinyint, size: int, indices: array<int>, values: array<double>>`
/// (type 1: dense, with only `values`; 0: sparse).
pub(crate) fn vector_struct_fields() -> Fields {
    Fields::from(vec![
        Field::new("type", DataType::Int8, false),
        Field::new("size", DataType::Int32, true),
        Field::new(
            "indices",
            DataType::List(Arc::new(Field::new_list_field(DataType::Int32, false))),
            true,
        ),
        Field::new(
            "values",
            DataType::List(Arc::new(Field::new_list_field(DataType::Float64, false))),
            true,
        ),
    ])
}

/// Whether a column of `data_type` is one of hearth's vectors (a fixed-size list of floats).
pub(crate) fn is_vector(data_type: &DataType) -> bool {
    matches!(data_type, DataType::FixedSizeList(item, _) if item.data_type().is_floating())
}

/// The type a column is sent in: vectors as Spark's `VectorUDT` storage, view and dictionary types as their
/// plain forms.
fn wire_type(data_type: &DataType) -> DataType {
    match data_type {
        vector if is_vector(vector) => DataType::Struct(vector_struct_fields()),
        DataType::Utf8View => DataType::Utf8,
        DataType::BinaryView => DataType::Binary,
        DataType::Dictionary(_, value) => wire_type(value),
        DataType::List(element) => DataType::List(Arc::new(wire_field(element))),
        DataType::LargeList(element) => DataType::LargeList(Arc::new(wire_field(element))),
        DataType::Struct(fields) => DataType::Struct(fields.iter().map(|f| wire_field(f)).collect()),
        other => other.clone(),
    }
}

fn wire_field(field: &Field) -> Field {
    field.clone().with_data_type(wire_type(field.data_type()))
}

/// The schema results are sent in.
pub(crate) fn wire_schema(schema: &Schema) -> SchemaRef {
    Arc::new(Schema::new(
        schema.fields().iter().map(|f| wire_field(f)).collect::<Vec<_>>(),
    ))
}

/// `batch` in the wire schema.
pub(crate) fn to_wire(batch: &RecordBatch, schema: &SchemaRef) -> Result<RecordBatch> {
    let columns = (batch.columns().iter().zip(schema.fields()))
        .map(|(column, field)| {
            if column.data_type() == field.data_type() {
                Ok(Arc::clone(column))
            } else if is_vector(column.data_type()) {
                dense_vectors(column.as_fixed_size_list())
            } else {
                Ok(cast(column, field.data_type())?)
            }
        })
        .collect::<Result<Vec<ArrayRef>>>()?;
    Ok(RecordBatch::try_new(Arc::clone(schema), columns)?)
}

/// hearth's vectors as Spark's dense `VectorUDT` structs: type 1, no size or indices, the values as doubles.
fn dense_vectors(vectors: &FixedSizeListArray) -> Result<ArrayRef> {
    let rows = vectors.len();
    let width = usize::try_from(vectors.value_length()).unwrap_or(0);
    let values = as_spark_doubles(vectors.values())?;
    let offsets = OffsetBuffer::from_lengths(std::iter::repeat_n(width, rows));
    let fields = vector_struct_fields();
    let DataType::List(item) = fields[3].data_type() else {
        unreachable!("values is a list")
    };
    let values = ListArray::try_new(Arc::clone(item), offsets, values, None)?;
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int8Array::from(vec![1; rows])),
        new_null_array(&DataType::Int32, rows),
        new_null_array(fields[2].data_type(), rows),
        Arc::new(values),
    ];
    Ok(Arc::new(StructArray::try_new(
        fields,
        columns,
        vectors.nulls().cloned(),
    )?))
}

/// A vector's values as the doubles Spark would hold: hearth keeps `f32`s, and each is sent as the double
/// its shortest decimal form reads as (`0.1f32` as `0.1`, not `0.10000000149011612`).
fn as_spark_doubles(values: &ArrayRef) -> Result<ArrayRef> {
    let Some(floats) = values.as_primitive_opt::<Float32Type>() else {
        return Ok(cast(values, &DataType::Float64)?);
    };
    let doubles: Float64Array = floats
        .iter()
        .map(|v| v.map(|v| v.to_string().parse::<f64>().unwrap_or(f64::from(v))))
        .collect();
    Ok(Arc::new(doubles))
}

/// `batch` as Arrow IPC streams of at most about [`CHUNK_BYTES`] each, with their row counts; an empty batch
/// gives one stream holding the schema, which an empty result needs.
pub(crate) fn ipc_chunks(batch: &RecordBatch) -> Result<Vec<(i64, Bytes)>> {
    let rows = batch.num_rows();
    let bytes = batch.get_array_memory_size().max(1);
    let pieces = bytes.div_ceil(CHUNK_BYTES).clamp(1, rows.max(1));
    let per_piece = rows.div_ceil(pieces).max(1);
    let mut chunks = Vec::with_capacity(pieces);
    let mut offset = 0;
    loop {
        let len = per_piece.min(rows - offset);
        let slice = batch.slice(offset, len);
        chunks.push((i64::try_from(len).unwrap_or(i64::MAX), ipc(&slice)?));
        offset += len;
        if offset >= rows {
            return Ok(chunks);
        }
    }
}

/// One batch as a complete Arrow IPC stream (schema, batch, end).
fn ipc(batch: &RecordBatch) -> Result<Bytes> {
    let mut writer = StreamWriter::try_new(Vec::new(), batch.schema_ref())?;
    writer.write(batch)?;
    writer.finish()?;
    Ok(Bytes::from(writer.into_inner()?))
}
