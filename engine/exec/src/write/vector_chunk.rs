//! One row group's column chunk of a vector column, encoded straight from the vectors' values.
//!
//! A vector column (`FixedSizeList<Float32>`) is a Parquet list: every slot carries a repetition level (0 where
//! a vector starts, 1 after) and a definition level, and arrow's general writer builds both level arrays value
//! by value, gathers the values through a list of their indices and run-length encodes the levels again value
//! by value — half the cost of writing such a column. A column without null vectors or null slots needs none
//! of that: its definition levels are one run of the maximum, its repetition levels one bit pattern repeated
//! every eight vectors, and its values the list's buffer as it is. [`VectorChunk`] writes those pages (Parquet
//! 1.0 data pages, PLAIN values, RLE/bit-packed levels, as arrow's writer does), snappy-compressed or plain,
//! with the offset index readers use to find the pages. Columns with nulls, other codecs or settings that ask
//! for statistics or dictionaries are left to arrow's writer ([`VectorChunk::writes`] says which).

use bytes::Bytes;
use datafusion::arrow::array::{Array, FixedSizeListArray, Float32Array};
use datafusion::arrow::buffer::ScalarBuffer;
use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::parquet::basic::{Compression, Encoding, EncodingMask, PageType};
use datafusion::parquet::column::page::{CompressedPage, Page, PageWriter};
use datafusion::parquet::column::writer::ColumnCloseResult;
use datafusion::parquet::errors::{ParquetError, Result};
use datafusion::parquet::file::metadata::{ColumnChunkMetaData, OffsetIndexBuilder, PageEncodingStats};
use datafusion::parquet::file::properties::{EnabledStatistics, WriterProperties, WriterVersion};
use datafusion::parquet::file::writer::{SerializedPageWriter, TrackedWrite};
use datafusion::parquet::schema::types::ColumnDescPtr;

/// The most groups of eight levels one bit-packed run holds when its header is to fit one byte.
const GROUPS_PER_RUN: usize = 63;

/// The column chunk of one vector column in the row group being written.
pub(super) struct VectorChunk {
    descr: ColumnDescPtr,
    dim: usize,
    compression: Compression,
    snappy: snap::raw::Encoder,
    /// Vectors a page holds: as many as fit the page size asked for.
    page_rows: usize,
    /// The values of the vectors of the page being filled, as they came.
    pending: Vec<Float32Array>,
    pending_rows: usize,
    /// The repetition levels of eight vectors, bit-packed: the pattern every page's levels repeat.
    rep_pattern: Vec<u8>,
    body: Vec<u8>,
    pages: TrackedWrite<Vec<u8>>,
    page_count: i32,
    offsets: Option<OffsetIndexBuilder>,
    rows: u64,
    uncompressed_bytes: i64,
    compressed_bytes: i64,
}

impl VectorChunk {
    /// Whether a column `field`, stored as the Parquet leaf `descr` with `properties`, is one this encoder
    /// writes when its vectors hold no null (see [`vectors_without_nulls`]).
    pub(super) fn writes(field: &Field, descr: &ColumnDescPtr, properties: &WriterProperties) -> bool {
        let path = descr.path();
        f32_vector_dim(field.data_type()).is_some()
            && descr.max_rep_level() == 1
            && matches!(properties.encoding(path), None | Some(Encoding::PLAIN))
            && matches!(
                properties.compression(path),
                Compression::SNAPPY | Compression::UNCOMPRESSED
            )
            && properties.writer_version() == WriterVersion::PARQUET_1_0
            && properties.statistics_enabled(path) == EnabledStatistics::None
            && !properties.dictionary_enabled(path)
            && properties.bloom_filter_properties(path).is_none()
    }

    /// An empty chunk of the vector column `field` (one [`writes`](Self::writes) accepts) stored as `descr`.
    pub(super) fn new(field: &Field, descr: ColumnDescPtr, properties: &WriterProperties) -> Result<Self> {
        let dim = f32_vector_dim(field.data_type())
            .ok_or_else(|| ParquetError::General(format!("column {:?} is not a vector of floats", field.name())))?;
        let page_rows = (properties.column_data_page_size_limit(descr.path()) / (dim * size_of::<f32>()))
            .clamp(1, properties.data_page_row_count_limit().max(1));
        Ok(Self {
            compression: properties.compression(descr.path()),
            offsets: (!properties.offset_index_disabled()).then(OffsetIndexBuilder::new),
            descr,
            dim,
            snappy: snap::raw::Encoder::new(),
            page_rows,
            pending: Vec::new(),
            pending_rows: 0,
            rep_pattern: repetition_pattern(dim),
            body: Vec::new(),
            pages: TrackedWrite::new(Vec::new()),
            page_count: 0,
            rows: 0,
            uncompressed_bytes: 0,
            compressed_bytes: 0,
        })
    }

    /// Adds `vectors`, which hold no null (see [`vectors_without_nulls`]), writing every page they fill.
    pub(super) fn write(&mut self, vectors: &FixedSizeListArray) -> Result<()> {
        let values = vectors
            .values()
            .as_any()
            .downcast_ref::<Float32Array>()
            .ok_or_else(|| ParquetError::General("a vector column whose slots are not 32-bit floats".into()))?;
        let mut row = 0;
        while row < vectors.len() {
            let take = (self.page_rows - self.pending_rows).min(vectors.len() - row);
            self.pending.push(values.slice(row * self.dim, take * self.dim));
            self.pending_rows += take;
            row += take;
            if self.pending_rows == self.page_rows {
                self.write_page()?;
            }
        }
        Ok(())
    }

    /// The chunk's bytes and what the row group writer needs to place them (its offsets count from 0).
    pub(super) fn close(mut self) -> Result<(Bytes, ColumnCloseResult)> {
        self.write_page()?;
        let metadata = ColumnChunkMetaData::builder(self.descr.clone())
            .set_compression(self.compression)
            .set_encodings_mask(EncodingMask::new_from_encodings(
                [Encoding::PLAIN, Encoding::RLE].iter(),
            ))
            .set_page_encoding_stats(vec![PageEncodingStats {
                page_type: PageType::DATA_PAGE,
                encoding: Encoding::PLAIN,
                count: self.page_count,
            }])
            .set_total_compressed_size(self.compressed_bytes)
            .set_total_uncompressed_size(self.uncompressed_bytes)
            .set_num_values((self.rows * self.dim as u64) as i64)
            .set_data_page_offset(0)
            .build()?;
        let data = Bytes::from(self.pages.into_inner()?);
        let close = ColumnCloseResult {
            bytes_written: data.len() as u64,
            rows_written: self.rows,
            metadata,
            bloom_filter: None,
            column_index: None,
            offset_index: self.offsets.map(OffsetIndexBuilder::build),
        };
        Ok((data, close))
    }

    /// Encodes the pending vectors as one data page: repetition levels, definition levels, values.
    fn write_page(&mut self) -> Result<()> {
        let rows = std::mem::take(&mut self.pending_rows);
        if rows == 0 {
            return Ok(());
        }
        let values = rows * self.dim;
        // A page header holds its count of values as an i32.
        let num_values = i32::try_from(values)
            .map_err(|_| ParquetError::General(format!("a page of {values} vector slots is too large")))?
            as u32;
        self.body.clear();
        put_repetition_levels(&mut self.body, &self.rep_pattern, values);
        put_definition_levels(&mut self.body, self.descr.max_def_level(), values);
        for slice in self.pending.drain(..) {
            put_plain(&mut self.body, slice.values());
        }
        let buf = match self.compression {
            Compression::SNAPPY => {
                let mut compressed = vec![0; snap::raw::max_compress_len(self.body.len())];
                let length = self
                    .snappy
                    .compress(&self.body, &mut compressed)
                    .map_err(|e| ParquetError::External(Box::new(e)))?;
                compressed.truncate(length);
                Bytes::from(compressed)
            }
            _ => Bytes::copy_from_slice(&self.body),
        };
        let page = Page::DataPage {
            buf,
            num_values,
            encoding: Encoding::PLAIN,
            def_level_encoding: Encoding::RLE,
            rep_level_encoding: Encoding::RLE,
            statistics: None,
        };
        let spec = SerializedPageWriter::new(&mut self.pages).write_page(CompressedPage::new(page, self.body.len()))?;
        if let Some(offsets) = &mut self.offsets {
            offsets.append_offset_and_size(spec.offset as i64, spec.compressed_size as i32);
            offsets.append_row_count(rows as i64);
        }
        self.page_count += 1;
        self.rows += rows as u64;
        self.uncompressed_bytes += spec.uncompressed_size as i64;
        self.compressed_bytes += spec.compressed_size as i64;
        Ok(())
    }
}

/// The dimension of a vector of 32-bit floats; `None` for other types.
fn f32_vector_dim(data_type: &DataType) -> Option<usize> {
    match data_type {
        DataType::FixedSizeList(item, dim) if *item.data_type() == DataType::Float32 && *dim > 0 => Some(*dim as usize),
        _ => None,
    }
}

/// Whether `column` holds vectors none of which, nor any of their slots, is null — what a [`VectorChunk`]
/// writes (otherwise arrow's writer writes the column).
pub(super) fn vectors_without_nulls(column: &dyn Array) -> bool {
    column
        .as_any()
        .downcast_ref::<FixedSizeListArray>()
        .is_some_and(|vectors| vectors.null_count() == 0 && vectors.values().null_count() == 0)
}

/// The repetition levels of eight vectors of `dim` slots, packed a bit each, least significant bit first:
/// `dim` bytes, after which the pattern repeats.
fn repetition_pattern(dim: usize) -> Vec<u8> {
    (0..dim)
        .map(|byte| {
            (0..8).fold(0u8, |packed, bit| {
                packed | (u8::from((byte * 8 + bit) % dim != 0) << bit)
            })
        })
        .collect()
}

/// Appends the repetition levels of `values` slots of whole vectors as a data page holds them: their byte
/// length, then bit-packed runs of bit width 1 whose pattern is `pattern`; the bits after the last level are 0.
fn put_repetition_levels(body: &mut Vec<u8>, pattern: &[u8], values: usize) {
    let bytes = values.div_ceil(8);
    let length = bytes + bytes.div_ceil(GROUPS_PER_RUN);
    body.extend_from_slice(&(length as u32).to_le_bytes());
    let mut packed = pattern.iter().copied().cycle();
    let mut left = bytes;
    while left > 0 {
        let groups = left.min(GROUPS_PER_RUN);
        body.push(((groups as u8) << 1) | 1);
        body.extend(packed.by_ref().take(groups));
        left -= groups;
    }
    if !values.is_multiple_of(8)
        && let Some(last) = body.last_mut()
    {
        *last &= (1u8 << (values % 8)) - 1;
    }
}

/// Appends the definition levels of `values` slots that are all present — one run of `max_level` — as a data
/// page holds them: their byte length, then the run.
fn put_definition_levels(body: &mut Vec<u8>, max_level: i16, values: usize) {
    let mut run = Vec::with_capacity(12);
    let mut header = (values as u64) << 1;
    while header >= 0x80 {
        run.push((header as u8) | 0x80);
        header >>= 7;
    }
    run.push(header as u8);
    let width_bytes = (16 - max_level.leading_zeros() as usize).div_ceil(8);
    run.extend_from_slice(&max_level.to_le_bytes()[..width_bytes]);
    body.extend_from_slice(&(run.len() as u32).to_le_bytes());
    body.extend_from_slice(&run);
}

/// Appends `values` as Parquet's PLAIN encoding stores them: little-endian, one after another.
fn put_plain(body: &mut Vec<u8>, values: &ScalarBuffer<f32>) {
    if cfg!(target_endian = "little") {
        body.extend_from_slice(values.inner().as_slice());
    } else {
        body.extend(values.iter().flat_map(|value| value.to_le_bytes()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repetition_levels_start_each_vector_at_zero() {
        // Three slots a vector: levels 0 1 1 0 1 1 0 1 | 1 0 1 1 0 1 1 0 | ..., least significant bit first.
        assert_eq!(repetition_pattern(3), [0b1011_0110, 0b0110_1101, 0b1101_1011]);
        assert_eq!(repetition_pattern(8), [0b1111_1110; 8]);
        let mut body = Vec::new();
        // 100 vectors of 3: 300 levels, 38 bytes in one run; the last byte keeps its first four bits.
        put_repetition_levels(&mut body, &repetition_pattern(3), 300);
        assert_eq!(body[..4], 39u32.to_le_bytes());
        assert_eq!(body[4], (38 << 1) | 1);
        assert_eq!(body.len(), 4 + 39);
        assert_eq!(body[42], repetition_pattern(3)[37 % 3] & 0b1111);
        // 1,000 bytes of levels take 16 runs: 15 of 63 groups, one of 55.
        body.clear();
        put_repetition_levels(&mut body, &repetition_pattern(8), 8000);
        assert_eq!(body.len(), 4 + 1000 + 16);
        assert_eq!(body[4 + 64], (63 << 1) | 1);
        assert_eq!(body[4 + 15 * 64], (55 << 1) | 1);
    }

    #[test]
    fn definition_levels_are_one_run_of_the_maximum() {
        let mut body = Vec::new();
        put_definition_levels(&mut body, 3, 300);
        // 300 << 1 = 600 as a ULEB128 varint, then the level in one byte.
        assert_eq!(body, [3, 0, 0, 0, 0xd8, 0x04, 3]);
    }
}
