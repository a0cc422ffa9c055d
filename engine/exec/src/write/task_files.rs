//! `PartWriterExec`: every task writes its partition's rows into one file of the job's staging location — an
//! object store's prefix, or a directory every executor and the driver see — and reports the file's name, its
//! rows and bytes. The file is named after the task's attempt, not its partition, and the driver commits only
//! the files of the tasks that succeeded (Spark's output-commit protocol): an attempt that failed or was
//! retried leaves a file no commit takes, never a duplicate row.
//!
//! A task writes its file on its own disk first (Parquet by [`PartFile`], CSV and JSON by arrow's writers),
//! then sends it to the store in parts of [`UPLOAD_PART_BYTES`]: a store receives a whole file or none.

use std::fmt;
use std::io::{BufWriter, Read, Write};
use std::sync::Arc;

use bytes::Bytes;
use datafusion::arrow::array::{Array, RecordBatch, StringArray, UInt64Array};
use datafusion::arrow::csv::{Writer as CsvWriter, WriterBuilder as CsvWriterBuilder};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::json::LineDelimitedWriter;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties, Partitioning, PlanProperties,
};
use futures::StreamExt;
use object_store::ObjectStore;
use object_store::buffered::BufWriter as StoreWriter;
use object_store::path::Path as StorePath;
use serde::{Deserialize, Serialize};
use url::Url;

use super::OutputFormat;
use super::parquet_parts::properties;
use super::part_file::PartFile;
use super::part_names::{parquet_suffix, write_id};

/// The bytes a task sends to the store at a time.
pub(super) const UPLOAD_PART_BYTES: usize = 8 << 20;

/// What the tasks of a write do: the staging location and the files' format.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartWriterSpec {
    /// Where the files go: a URL ending in `/` (`s3://bucket/.out.hearth-staging-…/`, `file:///shared/…/`).
    pub staging: String,
    /// `parquet`, `csv` or `json`.
    pub format: String,
    /// The Parquet codec (Spark's names: `snappy`, `zstd(3)`, …).
    pub compression: String,
}

impl PartWriterSpec {
    /// What follows the name of a file of this format (`.snappy.parquet`, `.csv`).
    pub(super) fn suffix(&self) -> Result<String> {
        Ok(match self.output_format()? {
            OutputFormat::Parquet => parquet_suffix(&self.compression),
            other => format!(".{}", other.extension()),
        })
    }

    fn output_format(&self) -> Result<OutputFormat> {
        self.format.parse().map_err(DataFusionError::Plan)
    }
}

/// The columns of a task's report: the file it wrote in the staging location (empty: its partition had no
/// rows), its rows and its bytes.
pub(super) fn report_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("file", DataType::Utf8, false),
        Field::new("rows", DataType::UInt64, false),
        Field::new("bytes", DataType::UInt64, false),
    ]))
}

/// Writes each partition of its input to a file in the staging location (see the [module](self) docs).
#[derive(Debug)]
pub struct PartWriterExec {
    input: Arc<dyn ExecutionPlan>,
    spec: PartWriterSpec,
    properties: Arc<PlanProperties>,
}

impl PartWriterExec {
    /// The writer of `input`'s partitions as `spec` says.
    pub fn try_new(input: Arc<dyn ExecutionPlan>, spec: PartWriterSpec) -> Result<Self> {
        spec.output_format()?;
        Url::parse(&spec.staging)
            .map_err(|e| DataFusionError::Plan(format!("staging location {:?}: {e}", spec.staging)))?;
        let partitions = input.output_partitioning().partition_count();
        let properties = PlanProperties::new(
            EquivalenceProperties::new(report_schema()),
            Partitioning::UnknownPartitioning(partitions),
            EmissionType::Final,
            Boundedness::Bounded,
        );
        Ok(Self {
            input,
            spec,
            properties: Arc::new(properties),
        })
    }

    /// What the tasks do.
    pub fn spec(&self) -> &PartWriterSpec {
        &self.spec
    }
}

impl DisplayAs for PartWriterExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "PartWriterExec: format={}, staging={}",
            self.spec.format, self.spec.staging
        )
    }
}

impl ExecutionPlan for PartWriterExec {
    fn name(&self) -> &str {
        "PartWriterExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn benefits_from_input_partitioning(&self) -> Vec<bool> {
        vec![false]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(self: Arc<Self>, mut children: Vec<Arc<dyn ExecutionPlan>>) -> Result<Arc<dyn ExecutionPlan>> {
        let input = children
            .pop()
            .ok_or_else(|| DataFusionError::Internal("PartWriterExec needs one child".to_string()))?;
        Ok(Arc::new(Self::try_new(input, self.spec.clone())?))
    }

    fn execute(&self, partition: usize, context: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        let input = self.input.execute(partition, Arc::clone(&context))?;
        let spec = self.spec.clone();
        let task = async move {
            let (file, rows, bytes) = write_partition(input, &spec, &context).await?.unwrap_or_default();
            Ok(RecordBatch::try_new(
                report_schema(),
                vec![
                    Arc::new(StringArray::from(vec![file])),
                    Arc::new(UInt64Array::from(vec![rows])),
                    Arc::new(UInt64Array::from(vec![bytes])),
                ],
            )?)
        };
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            report_schema(),
            futures::stream::once(task),
        )))
    }
}

/// Writes one partition's rows to a file of the staging location; its name, rows and bytes, or `None` when
/// the partition has no rows.
async fn write_partition(
    mut input: SendableRecordBatchStream,
    spec: &PartWriterSpec,
    context: &TaskContext,
) -> Result<Option<(String, u64, u64)>> {
    let local = tempfile::NamedTempFile::new()
        .map_err(|e| DataFusionError::Execution(format!("a temporary file for a part file: {e}")))?;
    let mut writer: Option<FileWriter<BufWriter<std::fs::File>>> = None;
    let mut rows = 0;
    while let Some(batch) = input.next().await {
        let batch = batch?;
        if batch.num_rows() == 0 {
            continue;
        }
        let file = match &mut writer {
            Some(file) => file,
            None => {
                let sink = BufWriter::with_capacity(1 << 20, local.reopen()?);
                writer.insert(FileWriter::try_new(spec, sink, batch.schema())?)
            }
        };
        file.write(&batch)?;
        rows += batch.num_rows() as u64;
    }
    let Some(writer) = writer else {
        return Ok(None);
    };
    writer.finish()?.flush()?;
    // Unique to this attempt: the time, process and count of this write, and the task's attempt on a fleet.
    let attempt: String = (context.task_id().unwrap_or_default().chars())
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let name = format!("{}{attempt}{}", write_id(), spec.suffix()?);
    let target = staged_url(&spec.staging, &name)?;
    let store = context.runtime_env().object_store(store_url(&target)?)?;
    let bytes = upload(local.reopen()?, store, &target).await?;
    Ok(Some((name, rows, bytes)))
}

/// `name` in the staging location `staging`.
pub(super) fn staged_url(staging: &str, name: &str) -> Result<Url> {
    Url::parse(staging)
        .and_then(|url| url.join(name))
        .map_err(|e| DataFusionError::Execution(format!("{name} in {staging}: {e}")))
}

/// The store `url` is in (`s3://bucket`, `file://`).
pub(super) fn store_url(url: &Url) -> Result<ObjectStoreUrl> {
    ObjectStoreUrl::parse(&url[..url::Position::BeforePath])
}

/// The path of `url` within its store.
pub(super) fn store_path(url: &Url) -> Result<StorePath> {
    StorePath::from_url_path(url.path()).map_err(|e| DataFusionError::Execution(format!("the path of {url}: {e}")))
}

/// Sends the file `local` to `target` in parts; its bytes.
async fn upload(mut local: std::fs::File, store: Arc<dyn ObjectStore>, target: &Url) -> Result<u64> {
    let failed = |e: &dyn fmt::Display| DataFusionError::Execution(format!("uploading {target}: {e}"));
    let mut sending = StoreWriter::new(store, store_path(target)?);
    let mut sent = 0;
    loop {
        let mut part = vec![0; UPLOAD_PART_BYTES];
        let read = local.read(&mut part).map_err(|e| failed(&e))?;
        if read == 0 {
            break;
        }
        part.truncate(read);
        sent += read as u64;
        if let Err(e) = sending.put(Bytes::from(part)).await {
            let _ = sending.abort().await;
            return Err(failed(&e));
        }
    }
    if let Err(e) = tokio::io::AsyncWriteExt::shutdown(&mut sending).await {
        let _ = sending.abort().await;
        return Err(failed(&e));
    }
    Ok(sent)
}

/// A file of one format being written from record batches.
pub(super) enum FileWriter<W: Write + Send> {
    /// Parquet, by hearth's encoder.
    Parquet(Box<PartFile<W>>),
    /// CSV with a header.
    Csv(Box<CsvWriter<W>>),
    /// Newline-delimited JSON.
    Json(LineDelimitedWriter<W>),
}

impl<W: Write + Send> FileWriter<W> {
    /// A file of `spec`'s format for rows of `schema`, into `sink`.
    pub(super) fn try_new(spec: &PartWriterSpec, sink: W, schema: SchemaRef) -> Result<Self> {
        Ok(match spec.output_format()? {
            OutputFormat::Parquet => {
                let properties = properties(&schema, &spec.compression)?;
                Self::Parquet(Box::new(PartFile::try_new(sink, schema, properties)?))
            }
            OutputFormat::Csv => Self::Csv(Box::new(CsvWriterBuilder::new().with_header(true).build(sink))),
            OutputFormat::Json => Self::Json(LineDelimitedWriter::new(sink)),
        })
    }

    /// Adds `batch`'s rows.
    pub(super) fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        match self {
            Self::Parquet(file) => file.write(batch)?,
            Self::Csv(file) => file.write(batch)?,
            Self::Json(file) => file.write(batch)?,
        }
        Ok(())
    }

    /// Ends the file (a Parquet file's footer); its sink.
    pub(super) fn finish(self) -> Result<W> {
        Ok(match self {
            Self::Parquet(file) => file.into_inner()?,
            Self::Csv(file) => (*file).into_inner(),
            Self::Json(mut file) => {
                file.finish()?;
                file.into_inner()
            }
        })
    }
}

/// A file the tasks wrote in the staging location, with its rows and bytes (an empty name: a partition
/// without rows, which wrote none).
pub(super) struct Staged {
    pub name: String,
    pub rows: u64,
    pub bytes: u64,
}

/// The files the tasks reported ([`report_schema`]), in the order the job returned them.
pub(super) fn staged_files(reports: &[RecordBatch]) -> Result<Vec<Staged>> {
    let mut staged = Vec::new();
    for batch in reports {
        let column = |i: usize| batch.column(i).as_any();
        let (Some(files), Some(rows), Some(bytes)) = (
            column(0).downcast_ref::<StringArray>(),
            column(1).downcast_ref::<UInt64Array>(),
            column(2).downcast_ref::<UInt64Array>(),
        ) else {
            return Err(DataFusionError::Internal(
                "the writer's tasks reported columns of other types".to_string(),
            ));
        };
        for i in 0..batch.num_rows() {
            staged.push(Staged {
                name: files.value(i).to_string(),
                rows: rows.value(i),
                bytes: bytes.value(i),
            });
        }
    }
    Ok(staged)
}
