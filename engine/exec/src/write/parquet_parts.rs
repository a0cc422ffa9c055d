//! Parquet written as Spark writes it: one part file per partition of the frame, each encoded by the task
//! that computes its partition, all partitions at once — so every core encodes, and a partition's rows go
//! from the transform to the file without crossing threads. (DataFusion's own writer funnels the partitions
//! into one stream and hands it out again; for a frame of vectors that left one core encoding.)
//!
//! Floating-point columns, vectors included, are written without dictionary encoding: their values seldom
//! repeat, so a dictionary is built only to be abandoned. The float elements of vectors (of any list) carry
//! no minimum and maximum: one over every slot of every row prunes nothing, and computing it cost 7 % of a
//! whole preprocessing job. Every other column keeps Parquet's defaults. Each file is written by a
//! [`PartFile`] — vector columns without nulls by its own encoder — in row groups of [`ROW_GROUP_ROWS`], its
//! bytes sent to the disk as they are written ([`WritebackFile`]); the files are synced afterwards with every
//! writer's, by [`FrameWriter::save`](super::FrameWriter::save).

use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::runtime::SpawnedTask;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::SendableRecordBatchStream;
use datafusion::parquet::arrow::ArrowSchemaConverter;
use datafusion::parquet::basic::{Compression, Type as PhysicalType};
use datafusion::parquet::file::properties::{EnabledStatistics, WriterProperties};
use datafusion::prelude::DataFrame;
use futures::StreamExt;

use super::part_file::PartFile;
use super::part_names::{parquet_suffix, part_name, write_id};
use super::writeback::WritebackFile;

/// The rows of a row group: an eighth of arrow's default (DuckDB writes 122,880). A row group is held in
/// memory, encoded, until it is complete, so smaller ones start writing to the disk while the rest is still
/// being encoded, and keep less in memory; at 1M rows of 32-slot vectors the whole job took 0.13 s to transform
/// and write instead of 0.15 s with arrow's 1,048,576.
const ROW_GROUP_ROWS: usize = 128 * 1024;

/// The writer settings for `schema`'s columns with `codec` (Spark's names: `snappy`, `zstd(3)`, …).
pub(super) fn properties(schema: &SchemaRef, codec: &str) -> DfResult<WriterProperties> {
    let compression = Compression::from_str(&codec.to_ascii_lowercase())
        .map_err(|e| DataFusionError::Configuration(format!("Parquet compression {codec:?}: {e}")))?;
    let mut builder = WriterProperties::builder()
        .set_compression(compression)
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS));
    let columns = ArrowSchemaConverter::new().convert(schema)?;
    for column in columns.columns() {
        if matches!(column.physical_type(), PhysicalType::FLOAT | PhysicalType::DOUBLE) {
            builder = builder.set_column_dictionary_enabled(column.path().clone(), false);
            if column.max_rep_level() > 0 {
                builder = builder.set_column_statistics_enabled(column.path().clone(), EnabledStatistics::None);
            }
        }
    }
    Ok(builder.build())
}

/// Writes `df` into `dir` as `part-NNNNN-<write id>.<codec>.parquet` files, one per partition that has rows
/// (one with none when no partition has, so that the schema is kept); returns the rows written.
pub(super) async fn write(df: DataFrame, dir: &Path, codec: &str) -> DfResult<u64> {
    let df_schema = df.schema().as_arrow().clone();
    let streams = df.execute_stream_partitioned().await?;
    let schema: SchemaRef = match streams.first() {
        Some(stream) => stream.schema(),
        None => Arc::new(df_schema),
    };
    let properties = properties(&schema, codec)?;
    let write_id = write_id();
    let suffix = parquet_suffix(codec);
    let name = |part: usize| dir.join(part_name(part, &write_id, &suffix));
    let tasks: Vec<_> = streams
        .into_iter()
        .enumerate()
        .map(|(part, stream)| SpawnedTask::spawn(write_part(stream, name(part), properties.clone())))
        .collect();
    let mut rows = 0;
    let mut files = 0;
    for task in tasks {
        let (part_rows, wrote) = task
            .join()
            .await
            .map_err(|e| DataFusionError::Execution(format!("writing a part file panicked: {e}")))??;
        rows += part_rows;
        files += usize::from(wrote);
    }
    if files == 0 {
        let path = name(0);
        finish(PartFile::try_new(create(&path)?, schema, properties)?, &path)?;
    }
    Ok(rows)
}

/// Writes one partition's rows to `path`, creating it at its first row; returns the rows and whether it did.
async fn write_part(
    mut stream: SendableRecordBatchStream,
    path: PathBuf,
    properties: WriterProperties,
) -> DfResult<(u64, bool)> {
    let mut writer: Option<PartFile<BufWriter<WritebackFile>>> = None;
    let mut rows = 0;
    while let Some(batch) = stream.next().await {
        let batch = batch?;
        if batch.num_rows() == 0 {
            continue;
        }
        let part = match &mut writer {
            Some(part) => part,
            None => writer.insert(PartFile::try_new(create(&path)?, batch.schema(), properties.clone())?),
        };
        part.write(&batch)?;
        rows += batch.num_rows() as u64;
    }
    let wrote = writer.is_some();
    if let Some(part) = writer {
        finish(part, &path)?;
    }
    Ok((rows, wrote))
}

/// Writes the footer of the part file at `path` and sends its last bytes on their way to the disk.
fn finish(part: PartFile<BufWriter<WritebackFile>>, path: &Path) -> DfResult<()> {
    part.into_inner()?
        .into_inner()
        .map_err(|e| io_error(path, e.into_error()))?
        .finish();
    Ok(())
}

fn create(path: &Path) -> DfResult<BufWriter<WritebackFile>> {
    let file = WritebackFile::create(path).map_err(|e| io_error(path, e))?;
    Ok(BufWriter::with_capacity(1 << 20, file))
}

fn io_error(path: &Path, error: std::io::Error) -> DataFusionError {
    DataFusionError::Execution(format!("writing {}: {error}", path.display()))
}
