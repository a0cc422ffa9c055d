//! One Parquet part file, written a row group at a time: vector columns by [`VectorChunk`] where their rows
//! allow it, every other column (and a vector column with nulls) by arrow's column writers, into the same
//! file — with arrow's schema in its footer, as arrow's `ArrowWriter` writes it, so readers get the vector
//! type back.
//!
//! A row group holds up to the properties' row limit (arrow's default, 1,048,576); their byte limit and
//! content-defined chunking are not applied, nor encryption (the part files' properties set none of them). A
//! vector column is written by one encoder for the whole row group, so a batch whose vectors hold a null,
//! arriving while the row group writes that column with [`VectorChunk`], ends the row group; the next one
//! gives the column to arrow's writer.

use std::io::Write;

use datafusion::arrow::array::{Array, FixedSizeListArray, RecordBatch};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::arrow::arrow_writer::{ArrowColumnWriter, ArrowRowGroupWriterFactory, compute_leaves};
use datafusion::parquet::errors::{ParquetError, Result};
use datafusion::parquet::file::properties::{WriterProperties, WriterPropertiesPtr};
use datafusion::parquet::file::writer::SerializedFileWriter;

use super::vector_chunk::{VectorChunk, vectors_without_nulls};

/// A Parquet file being written from record batches of one schema (see the [module](self) docs).
pub(super) struct PartFile<W: Write + Send> {
    file: SerializedFileWriter<W>,
    column_writers: ArrowRowGroupWriterFactory,
    schema: SchemaRef,
    properties: WriterPropertiesPtr,
    /// The index of each field's first Parquet leaf, and after the last field the count of leaves.
    first_leaves: Vec<usize>,
    /// Whether each field is a vector column [`VectorChunk`] can write.
    vector_fields: Vec<bool>,
    max_rows: usize,
    row_group: Option<RowGroup>,
}

/// The row group being filled: each field's encoder and the rows it holds.
struct RowGroup {
    fields: Vec<FieldChunk>,
    rows: usize,
}

/// The encoder of one field's column chunks in a row group.
enum FieldChunk {
    /// A vector column without nulls (boxed: the snappy encoder's table makes it large).
    Vectors(Box<VectorChunk>),
    /// Arrow's writers of the field's leaves.
    Arrow(Vec<ArrowColumnWriter>),
}

impl<W: Write + Send> PartFile<W> {
    /// Starts a file of `schema`'s rows in `sink`.
    pub(super) fn try_new(sink: W, schema: SchemaRef, properties: WriterProperties) -> Result<Self> {
        let (file, column_writers) =
            ArrowWriter::try_new(sink, schema.clone(), Some(properties))?.into_serialized_writer()?;
        let properties = file.properties().clone();
        let parquet = file.schema_descr();
        let mut first_leaves = vec![0; schema.fields().len() + 1];
        for leaf in 0..parquet.num_columns() {
            first_leaves[parquet.get_column_root_idx(leaf) + 1] += 1;
        }
        for field in 0..schema.fields().len() {
            first_leaves[field + 1] += first_leaves[field];
        }
        let vector_fields = schema
            .fields()
            .iter()
            .enumerate()
            .map(|(index, field)| {
                first_leaves[index + 1] - first_leaves[index] == 1
                    && VectorChunk::writes(field, &parquet.column(first_leaves[index]), &properties)
            })
            .collect();
        Ok(Self {
            max_rows: properties.max_row_group_row_count().unwrap_or(usize::MAX).max(1),
            file,
            column_writers,
            schema,
            properties,
            first_leaves,
            vector_fields,
            row_group: None,
        })
    }

    /// Adds `batch`'s rows, writing out each row group it fills.
    pub(super) fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        let types = |schema: &SchemaRef| {
            schema
                .fields()
                .iter()
                .map(|f| f.data_type().clone())
                .collect::<Vec<_>>()
        };
        let batch_schema = batch.schema();
        let same_types = (batch_schema.fields().iter().map(|f| f.data_type())).eq(self
            .schema
            .fields()
            .iter()
            .map(|f| f.data_type()));
        if !same_types {
            return Err(ParquetError::General(format!(
                "a batch of columns {:?} in a file of columns {:?}",
                types(&batch_schema),
                types(&self.schema)
            )));
        }
        let mut row = 0;
        while row < batch.num_rows() {
            let held = self.row_group.as_ref().map_or(0, |group| group.rows);
            let rows = batch.slice(row, (self.max_rows - held).min(batch.num_rows() - row));
            match &mut self.row_group {
                Some(group) if !group.takes(&rows) => {
                    self.flush()?;
                    continue;
                }
                Some(group) => group.write(&rows, &self.schema)?,
                None => {
                    let mut group = self.start_row_group(&rows)?;
                    group.write(&rows, &self.schema)?;
                    self.row_group = Some(group);
                }
            }
            row += rows.num_rows();
            if self.row_group.as_ref().is_some_and(|group| group.rows >= self.max_rows) {
                self.flush()?;
            }
        }
        Ok(())
    }

    /// Writes the last row group and the footer; returns the sink.
    pub(super) fn into_inner(mut self) -> Result<W> {
        self.flush()?;
        self.file.into_inner()
    }

    /// A row group whose vector columns are given to [`VectorChunk`] where `rows` hold no null vector or slot.
    fn start_row_group(&self, rows: &RecordBatch) -> Result<RowGroup> {
        let mut writers = self
            .column_writers
            .create_column_writers(self.file.flushed_row_groups().len())?;
        let parquet = self.file.schema_descr();
        let mut fields = Vec::with_capacity(self.schema.fields().len());
        for (index, field) in self.schema.fields().iter().enumerate().rev() {
            let leaves = writers.split_off(self.first_leaves[index]);
            fields.push(
                if self.vector_fields[index] && vectors_without_nulls(rows.column(index)) {
                    let descr = parquet.column(self.first_leaves[index]);
                    FieldChunk::Vectors(Box::new(VectorChunk::new(field, descr, &self.properties)?))
                } else {
                    FieldChunk::Arrow(leaves)
                },
            );
        }
        fields.reverse();
        Ok(RowGroup { fields, rows: 0 })
    }

    /// Writes the row group being filled, if any, to the file.
    fn flush(&mut self) -> Result<()> {
        let Some(group) = self.row_group.take() else {
            return Ok(());
        };
        let mut row_group = self.file.next_row_group()?;
        for field in group.fields {
            match field {
                FieldChunk::Vectors(chunk) => {
                    let (data, close) = chunk.close()?;
                    row_group.append_column(&data, close)?;
                }
                FieldChunk::Arrow(writers) => {
                    for writer in writers {
                        writer.close()?.append_to_row_group(&mut row_group)?;
                    }
                }
            }
        }
        row_group.close()?;
        Ok(())
    }
}

impl RowGroup {
    /// Whether `rows` can join this row group: no vector column written by [`VectorChunk`] has a null in them.
    fn takes(&self, rows: &RecordBatch) -> bool {
        self.fields
            .iter()
            .zip(rows.columns())
            .all(|(field, column)| match field {
                FieldChunk::Vectors(_) => vectors_without_nulls(column),
                FieldChunk::Arrow(_) => true,
            })
    }

    /// Encodes `rows` (of `schema`) into each field's chunks.
    fn write(&mut self, rows: &RecordBatch, schema: &SchemaRef) -> Result<()> {
        for ((chunk, column), field) in self.fields.iter_mut().zip(rows.columns()).zip(schema.fields()) {
            match chunk {
                FieldChunk::Vectors(encoder) => {
                    let vectors = column
                        .as_any()
                        .downcast_ref::<FixedSizeListArray>()
                        .ok_or_else(|| ParquetError::General(format!("column {:?} is not a vector", field.name())))?;
                    encoder.write(vectors)?;
                }
                FieldChunk::Arrow(writers) => {
                    for (writer, leaf) in writers.iter_mut().zip(compute_leaves(field, column)?) {
                        writer.write(&leaf)?;
                    }
                }
            }
        }
        self.rows += rows.num_rows();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use bytes::Bytes;
    use datafusion::arrow::array::{ArrayRef, Float32Array, Float64Array, StringArray, StructArray};
    use datafusion::arrow::buffer::NullBuffer;
    use datafusion::arrow::compute::concat_batches;
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::parquet::arrow::arrow_reader::{
        ArrowReaderOptions, ParquetRecordBatchReaderBuilder, RowSelection, RowSelector,
    };
    use datafusion::parquet::basic::Compression;
    use datafusion::parquet::file::metadata::PageIndexPolicy;

    use super::*;

    /// A batch of `rows` rows from `first`: a vector of `dim` slots (a null vector and a null slot when
    /// `nulls`), a number, a text and a struct of two numbers.
    fn batch(first: usize, rows: usize, dim: usize, nulls: bool) -> RecordBatch {
        let value = |i: usize| match i % 7 {
            0 => f32::NAN,
            1 => -0.0,
            2 => f32::INFINITY,
            _ => (i as f32).sqrt() * if i.is_multiple_of(2) { 1.0 } else { -1.0 },
        };
        let mut slots: Vec<Option<f32>> = (first * dim..(first + rows) * dim).map(|i| Some(value(i))).collect();
        if nulls {
            slots[dim / 2] = None;
        }
        let item = Arc::new(Field::new_list_field(DataType::Float32, true));
        let vector_nulls = nulls.then(|| NullBuffer::from_iter((0..rows).map(|row| row != rows - 1)));
        let vectors = FixedSizeListArray::new(item, dim as i32, Arc::new(Float32Array::from(slots)), vector_nulls);
        let numbers = Float64Array::from_iter_values((first..first + rows).map(|i| i as f64 / 3.0));
        let texts = StringArray::from_iter_values((first..first + rows).map(|i| format!("row {i}")));
        let pair = StructArray::from(vec![
            (
                Arc::new(Field::new("a", DataType::Float64, false)),
                Arc::new(numbers.clone()) as ArrayRef,
            ),
            (
                Arc::new(Field::new("b", DataType::Float64, false)),
                Arc::new(numbers.clone()) as ArrayRef,
            ),
        ]);
        let schema = Schema::new(vec![
            Field::new("v", vectors.data_type().clone(), true),
            Field::new("x", DataType::Float64, false),
            Field::new("t", DataType::Utf8, false),
            Field::new("pair", pair.data_type().clone(), false),
        ]);
        let columns: Vec<ArrayRef> = vec![Arc::new(vectors), Arc::new(numbers), Arc::new(texts), Arc::new(pair)];
        RecordBatch::try_new(Arc::new(schema), columns).unwrap()
    }

    /// Settings that make small pages and row groups, vectors without statistics or a dictionary.
    fn properties(compression: Compression) -> WriterProperties {
        WriterProperties::builder()
            .set_compression(compression)
            .set_data_page_size_limit(300)
            .set_max_row_group_row_count(Some(50))
            .set_dictionary_enabled(false)
            .set_statistics_enabled(datafusion::parquet::file::properties::EnabledStatistics::None)
            .build()
    }

    /// Writes `batches` as one file and reads it back: the rows and the file's row group sizes.
    fn round_trip(batches: &[RecordBatch], properties: WriterProperties) -> (RecordBatch, Vec<i64>) {
        let mut file = PartFile::try_new(Vec::new(), batches[0].schema(), properties).unwrap();
        for batch in batches {
            file.write(batch).unwrap();
        }
        let bytes = Bytes::from(file.into_inner().unwrap());
        let reader = ParquetRecordBatchReaderBuilder::try_new(bytes).unwrap();
        let groups = reader
            .metadata()
            .row_groups()
            .iter()
            .map(datafusion::parquet::file::metadata::RowGroupMetaData::num_rows)
            .collect();
        let read: Vec<RecordBatch> = reader.build().unwrap().map(|b| b.unwrap()).collect();
        (concat_batches(&batches[0].schema(), &read).unwrap(), groups)
    }

    /// The bits of every slot of the vector column, `None` where a vector or a slot is null.
    fn slots(batch: &RecordBatch) -> Vec<Option<Vec<Option<u32>>>> {
        let vectors = batch.column(0).as_any().downcast_ref::<FixedSizeListArray>().unwrap();
        (0..vectors.len())
            .map(|row| {
                vectors.is_valid(row).then(|| {
                    let slots = vectors.value(row);
                    let slots = slots.as_any().downcast_ref::<Float32Array>().unwrap();
                    slots.iter().map(|slot| slot.map(f32::to_bits)).collect()
                })
            })
            .collect()
    }

    #[test]
    fn vectors_of_every_width_read_back_bit_for_bit_over_pages_and_row_groups() {
        for compression in [Compression::SNAPPY, Compression::UNCOMPRESSED] {
            for dim in [1, 3, 8, 32, 33] {
                let batches: Vec<RecordBatch> = (0..7).map(|i| batch(i * 37, 37, dim, false)).collect();
                let written = concat_batches(&batches[0].schema(), &batches).unwrap();
                let (read, groups) = round_trip(&batches, properties(compression));
                assert_eq!(slots(&read), slots(&written), "dim {dim}, {compression:?}");
                assert_eq!(
                    read.columns()[1..],
                    written.columns()[1..],
                    "dim {dim}, {compression:?}"
                );
                assert_eq!(read.schema(), written.schema());
                assert_eq!(groups, [50, 50, 50, 50, 50, 9]);
            }
        }
    }

    #[test]
    fn a_null_vector_or_slot_ends_the_row_group_and_is_read_back() {
        let batches = [batch(0, 30, 5, false), batch(30, 30, 5, true), batch(60, 30, 5, false)];
        let written = concat_batches(&batches[0].schema(), &batches).unwrap();
        let (read, groups) = round_trip(&batches, properties(Compression::SNAPPY));
        assert_eq!(slots(&read), slots(&written));
        assert_eq!(read.columns()[1..], written.columns()[1..]);
        // The nulls came 30 rows into a row group of vectors without any: it ends there, and arrow's writer
        // takes the column for the next, which the third batch fills up to the limit.
        assert_eq!(groups, [30, 50, 10]);
        assert_eq!(slots(&read)[59], None);
        assert_eq!(slots(&read)[30].as_ref().unwrap()[2], None);
    }

    #[test]
    fn every_nullability_of_vector_and_slot_reads_back() {
        // Definition levels of 1, 2 and 3: a required or optional vector of required or optional slots.
        for (vector_nullable, slot_nullable) in [(false, false), (true, false), (false, true), (true, true)] {
            let item = Arc::new(Field::new_list_field(DataType::Float32, slot_nullable));
            let values = Float32Array::from_iter_values((0..40 * 3).map(|i| i as f32 / 8.0));
            let vectors = FixedSizeListArray::new(item, 3, Arc::new(values), None);
            let field = Field::new("v", vectors.data_type().clone(), vector_nullable);
            let batch = RecordBatch::try_new(Arc::new(Schema::new(vec![field])), vec![Arc::new(vectors)]).unwrap();
            let (read, groups) = round_trip(std::slice::from_ref(&batch), properties(Compression::SNAPPY));
            assert_eq!(
                read, batch,
                "vector nullable {vector_nullable}, slot nullable {slot_nullable}"
            );
            assert_eq!(groups, [40]);
        }
    }

    #[test]
    fn the_offset_index_lets_a_reader_skip_pages() {
        let batches: Vec<RecordBatch> = (0..4).map(|i| batch(i * 40, 40, 3, false)).collect();
        let written = concat_batches(&batches[0].schema(), &batches).unwrap();
        let mut file = PartFile::try_new(Vec::new(), batches[0].schema(), properties(Compression::SNAPPY)).unwrap();
        for batch in &batches {
            file.write(batch).unwrap();
        }
        let bytes = Bytes::from(file.into_inner().unwrap());
        let options = ArrowReaderOptions::new().with_page_index_policy(PageIndexPolicy::Required);
        let builder = ParquetRecordBatchReaderBuilder::try_new_with_options(bytes, options).unwrap();
        // 300-byte pages hold 25 vectors of 3 slots: two pages a row group of 50 rows.
        let pages = builder.metadata().offset_index().unwrap()[0][0].page_locations();
        assert_eq!(pages.iter().map(|p| p.first_row_index).collect::<Vec<_>>(), [0, 25]);
        let selection = RowSelection::from(vec![
            RowSelector::skip(30),
            RowSelector::select(12),
            RowSelector::skip(70),
            RowSelector::select(5),
        ]);
        let reader = builder.with_row_selection(selection).build().unwrap();
        let read: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
        let read = concat_batches(&written.schema(), &read).unwrap();
        let expected = concat_batches(&written.schema(), &[written.slice(30, 12), written.slice(112, 5)]).unwrap();
        assert_eq!(slots(&read), slots(&expected));
        assert_eq!(read.columns()[1..], expected.columns()[1..]);
    }

    #[test]
    fn columns_that_ask_for_statistics_or_another_codec_go_to_arrows_writer() {
        let field = Field::new("v", crate::vector::vector_type(4), true);
        let schema = Arc::new(Schema::new(vec![field.clone()]));
        let writes = |properties: WriterProperties| {
            let file = PartFile::try_new(Vec::new(), schema.clone(), properties).unwrap();
            file.vector_fields[0]
        };
        assert!(writes(properties(Compression::SNAPPY)));
        assert!(!writes(
            WriterProperties::builder().set_dictionary_enabled(false).build()
        ));
        let zstd = WriterProperties::builder()
            .set_compression(Compression::ZSTD(Default::default()))
            .set_dictionary_enabled(false)
            .set_statistics_enabled(datafusion::parquet::file::properties::EnabledStatistics::None)
            .build();
        assert!(!writes(zstd));
        let split = WriterProperties::builder()
            .set_encoding(datafusion::parquet::basic::Encoding::BYTE_STREAM_SPLIT)
            .set_dictionary_enabled(false)
            .set_statistics_enabled(datafusion::parquet::file::properties::EnabledStatistics::None)
            .build();
        assert!(!writes(split));
    }
}
