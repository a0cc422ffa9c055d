//! Results as a PySpark client reads them: Arrow IPC streams of at most [`CHUNK_BYTES`] each, in the types
//! PySpark's Arrow conversion knows (no view or dictionary types).

use std::sync::Arc;

use bytes::Bytes;
use datafusion::arrow::array::{ArrayRef, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::ipc::writer::StreamWriter;

use crate::errors::Result;

/// The most bytes of Arrow data one response carries (Spark's server keeps batches near 4 MiB; gRPC's client
/// refuses messages over 128 MiB).
pub(crate) const CHUNK_BYTES: usize = 4 << 20;

/// The type a column is sent in: view and dictionary types become their plain forms.
fn wire_type(data_type: &DataType) -> DataType {
    match data_type {
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
            } else {
                cast(column, field.data_type())
            }
        })
        .collect::<Result<Vec<ArrayRef>, _>>()?;
    Ok(RecordBatch::try_new(Arc::clone(schema), columns)?)
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
