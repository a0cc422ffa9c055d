//! A shard on disk: rows written as Arrow IPC a chunk at a time and read back a chunk at a time, where a rank
//! keeps the rows that do not fit its memory budget between epochs.
//!
//! Each chunk is one IPC record batch of `features` (a fixed-size list of `f32`), `label` (`f32`) and, when the
//! rows have them, `weight` (`f32`): reading a chunk back is one copy, with no cast.

use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Float32Type;
use arrow_array::{ArrayRef, FixedSizeListArray, Float32Array, RecordBatch};
use arrow_ipc::reader::FileReader;
use arrow_ipc::writer::FileWriter;
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::{DataError, LabelSummary, Shard};

/// Writes a shard file: rows are appended a shard at a time and written in chunks of `chunk_rows`.
///
/// ```
/// use hearth_torch::data::{Shard, ShardFileWriter};
///
/// let dir = tempfile::tempdir().unwrap();
/// let mut writer = ShardFileWriter::new(dir.path().join("rows.arrow"), 2);
/// writer.push(&Shard::new(vec![1.0, 2.0, 3.0], vec![0.0, 1.0, 0.0], 1).unwrap()).unwrap();
/// let file = writer.finish().unwrap();
/// assert_eq!((file.rows(), file.chunks()), (3, 2));
/// assert_eq!(file.open().unwrap().read(1).unwrap().labels(), [0.0]);
/// ```
pub struct ShardFile {
    path: PathBuf,
    chunk_rows: Vec<usize>,
    dim: usize,
    weighted: bool,
    labels: LabelSummary,
}

/// A shard file being written.
pub struct ShardFileWriter {
    path: PathBuf,
    chunk_rows: usize,
    pending: Shard,
    writer: Option<FileWriter<BufWriter<File>>>,
    written: Vec<usize>,
    dim: Option<(usize, bool)>,
    pushed: usize,
    labels: LabelSummary,
}

impl ShardFileWriter {
    /// A writer of `path` (created on the first rows, or when finished without any), `chunk_rows` rows a chunk.
    pub fn new(path: impl Into<PathBuf>, chunk_rows: usize) -> Self {
        Self {
            path: path.into(),
            chunk_rows: chunk_rows.max(1),
            pending: Shard::default(),
            writer: None,
            written: Vec::new(),
            dim: None,
            pushed: 0,
            labels: LabelSummary::default(),
        }
    }

    /// Appends `rows`, writing every chunk they complete and summing up their labels; they must have the width
    /// and weighting of the rows before them.
    pub fn push(&mut self, rows: &Shard) -> Result<(), DataError> {
        if rows.rows() == 0 {
            return Ok(());
        }
        let shape = (rows.dim(), rows.weights().is_some());
        match self.dim {
            None => self.dim = Some(shape),
            Some(known) if known != shape => {
                return Err(DataError::column(
                    "features",
                    format!(
                        "rows of {} values{} follow rows of {}{}",
                        shape.0,
                        if shape.1 { " with weights" } else { "" },
                        known.0,
                        if known.1 { " with weights" } else { "" }
                    ),
                ));
            }
            Some(_) => {}
        }
        self.labels = self.labels.then(LabelSummary::of(rows.labels(), self.pushed));
        self.pushed += rows.rows();
        self.pending.append(rows);
        while self.pending.rows() >= self.chunk_rows {
            let chunk = self.pending.take_front(self.chunk_rows);
            self.write(&chunk)?;
        }
        Ok(())
    }

    /// Writes the last chunk and closes the file.
    pub fn finish(mut self) -> Result<ShardFile, DataError> {
        let rest = std::mem::take(&mut self.pending);
        if rest.rows() > 0 {
            self.write(&rest)?;
        }
        let (dim, weighted) = self.dim.unwrap_or((0, false));
        let mut writer = match self.writer.take() {
            Some(writer) => writer,
            None => self.open(&schema(dim, weighted))?,
        };
        writer.finish().map_err(|e| DataError::spill(&self.path, e))?;
        Ok(ShardFile {
            path: self.path,
            chunk_rows: self.written,
            dim,
            weighted,
            labels: self.labels,
        })
    }

    fn open(&self, schema: &Schema) -> Result<FileWriter<BufWriter<File>>, DataError> {
        let file = File::create(&self.path).map_err(|e| DataError::spill(&self.path, e))?;
        FileWriter::try_new(BufWriter::new(file), schema).map_err(|e| DataError::spill(&self.path, e))
    }

    fn write(&mut self, chunk: &Shard) -> Result<(), DataError> {
        let batch = chunk_batch(chunk).map_err(|e| DataError::spill(&self.path, e))?;
        if self.writer.is_none() {
            self.writer = Some(self.open(&batch.schema())?);
        }
        if let Some(writer) = &mut self.writer {
            writer.write(&batch).map_err(|e| DataError::spill(&self.path, e))?;
        }
        self.written.push(chunk.rows());
        Ok(())
    }
}

fn schema(dim: usize, weighted: bool) -> Schema {
    let item = Arc::new(Field::new_list_field(DataType::Float32, false));
    let mut fields = vec![
        Field::new("features", DataType::FixedSizeList(item, dim as i32), false),
        Field::new("label", DataType::Float32, false),
    ];
    if weighted {
        fields.push(Field::new("weight", DataType::Float32, false));
    }
    Schema::new(fields)
}

fn chunk_batch(chunk: &Shard) -> Result<RecordBatch, arrow_schema::ArrowError> {
    let schema: SchemaRef = Arc::new(schema(chunk.dim(), chunk.weights().is_some()));
    let item = Arc::new(Field::new_list_field(DataType::Float32, false));
    let values = Arc::new(Float32Array::from(chunk.features().to_vec()));
    let features = FixedSizeListArray::try_new(item, chunk.dim() as i32, values, None)?;
    let mut columns: Vec<ArrayRef> = vec![
        Arc::new(features),
        Arc::new(Float32Array::from(chunk.labels().to_vec())),
    ];
    if let Some(weights) = chunk.weights() {
        columns.push(Arc::new(Float32Array::from(weights.to_vec())));
    }
    RecordBatch::try_new(schema, columns)
}

impl ShardFile {
    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Rows in the file.
    pub fn rows(&self) -> usize {
        self.chunk_rows.iter().sum()
    }

    /// Chunks in the file.
    pub fn chunks(&self) -> usize {
        self.chunk_rows.len()
    }

    /// Rows in chunk `index`.
    pub fn chunk_rows(&self, index: usize) -> usize {
        self.chunk_rows.get(index).copied().unwrap_or(0)
    }

    /// Features per row (0 without rows).
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Whether the rows have sample weights.
    pub fn weighted(&self) -> bool {
        self.weighted
    }

    /// What the file's labels hold, summed up as they were written.
    pub fn labels(&self) -> &LabelSummary {
        &self.labels
    }

    /// A reader of the file's chunks.
    pub fn open(&self) -> Result<ShardFileReader, DataError> {
        let file = File::open(&self.path).map_err(|e| DataError::spill(&self.path, e))?;
        let reader = FileReader::try_new(BufReader::new(file), None).map_err(|e| DataError::spill(&self.path, e))?;
        Ok(ShardFileReader {
            path: self.path.clone(),
            reader,
        })
    }
}

/// Reads a shard file's chunks, in any order.
pub struct ShardFileReader {
    path: PathBuf,
    reader: FileReader<BufReader<File>>,
}

impl ShardFileReader {
    /// Chunk `index`'s rows.
    pub fn read(&mut self, index: usize) -> Result<Shard, DataError> {
        let failed = |message: String| DataError::spill(&self.path, message);
        self.reader.set_index(index).map_err(|e| failed(e.to_string()))?;
        let batch = self
            .reader
            .next()
            .ok_or_else(|| failed(format!("it has no chunk {index}")))?
            .map_err(|e| failed(e.to_string()))?;
        let floats = |column: usize| {
            batch
                .column(column)
                .as_primitive_opt::<Float32Type>()
                .map(arrow_array::PrimitiveArray::values)
        };
        let (Some(list), Some(labels)) = (batch.column(0).as_fixed_size_list_opt(), floats(1)) else {
            return Err(failed(format!("chunk {index} is not a shard's chunk")));
        };
        let features = list
            .values()
            .as_primitive_opt::<Float32Type>()
            .ok_or_else(|| failed(format!("chunk {index}'s features are not f32")))?;
        let dim = list.value_length() as usize;
        let shard = Shard::new(features.values().to_vec(), labels.to_vec(), dim).map_err(|e| failed(e.to_string()))?;
        match (batch.num_columns() > 2).then(|| floats(2)).flatten() {
            Some(weights) => shard.with_weights(weights.to_vec()),
            None => Ok(shard),
        }
    }
}
