//! A faster decoder for DataFusion's scans of local CSV files. Most CSV that machine learning reads is plain —
//! numbers and words, no quotes — and arrow's reader spends most of its time on what plain lines do not
//! need: a byte-at-a-time state machine that copies every field, then a second pass that parses each
//! field on its own. [`PlainCsvSource`] wraps DataFusion's `CsvSource` and decodes such lines in one pass,
//! parsing each number as its field is split ([`decode`]), reading the file in large blocks ([`reader`]).
//! Everything else is DataFusion's: the files, their split among cores, projection, limits — and any line
//! that is not plain, which goes to arrow's decoder with the rest of its range, so results and errors are
//! arrow's to the bit.
//!
//! It is used where it applies: a local, uncompressed file, columns of `Float64`, `Int64` and `Utf8` only,
//! DataFusion's default line ends, no comment or escape character, rows of the full width.
//!
//! ```
//! # tokio::runtime::Builder::new_multi_thread().build().unwrap().block_on(async {
//! use hearth_exec::read::CsvOptions;
//! use hearth_exec::session::Session;
//!
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("plain.csv");
//! std::fs::write(&path, "x,y,name\n1,0.5,a\n2,-1.25,\"b, quoted\"\n").unwrap();
//! let df = Session::builder().local(2).read_csv(&path, &CsvOptions::new()).await.unwrap();
//! // The first line is decoded here; the quoted one goes to arrow's decoder.
//! assert_eq!(df.count().await.unwrap(), 2);
//! # });
//! ```

mod decode;
mod reader;

use std::fmt;
use std::sync::Arc;

use datafusion::arrow::csv::ReaderBuilder;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::{
    CsvOpener, CsvSource, FileOpenFuture, FileOpener, FileScanConfig, FileScanConfigBuilder, FileSource,
};
use datafusion::datasource::projection::{ProjectionOpener, SplitProjection};
use datafusion::datasource::source::DataSourceExec;
use datafusion::datasource::table_schema::TableSchema;
use datafusion::error::Result as DfResult;
use datafusion::object_store::{GetOptions, GetResultPayload, ObjectStore};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::projection::ProjectionExprs;
use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;
use datafusion::physical_plan::{DisplayFormatType, ExecutionPlan};
use futures::{FutureExt, StreamExt};

use decode::LineDecoder;
use reader::{ArrowDecoderFactory, RangeReader};

/// `plan` with each scan of CSV files by DataFusion's `CsvSource` decoding plain lines itself.
pub(crate) fn accelerate(plan: Arc<dyn ExecutionPlan>) -> DfResult<Arc<dyn ExecutionPlan>> {
    let accelerated = plan.transform_down(|node| {
        let Some(exec) = node.downcast_ref::<DataSourceExec>() else {
            return Ok(Transformed::no(node));
        };
        let Some((config, csv)) = exec.downcast_to_file_source::<CsvSource>() else {
            return Ok(Transformed::no(node));
        };
        let source = PlainCsvSource {
            csv: csv.clone(),
            batch_size: config.batch_size,
        };
        let config = FileScanConfigBuilder::from(config.clone())
            .with_source(Arc::new(source))
            .build();
        let exec = exec.clone().with_data_source(Arc::new(config));
        Ok(Transformed::new(Arc::new(exec), true, TreeNodeRecursion::Jump))
    })?;
    Ok(accelerated.data)
}

/// DataFusion's CSV source, with plain lines of local files decoded by [`RangeReader`].
#[derive(Clone)]
struct PlainCsvSource {
    csv: CsvSource,
    batch_size: Option<usize>,
}

impl PlainCsvSource {
    /// `source` — a `CsvSource` DataFusion derived from this one's (a projection pushed into it) — wrapped as
    /// this one is; any other source as it is.
    fn wrapping(&self, source: Arc<dyn FileSource>) -> Arc<dyn FileSource> {
        match source.downcast_ref::<CsvSource>() {
            Some(csv) => Arc::new(Self {
                csv: csv.clone(),
                batch_size: self.batch_size,
            }),
            None => source,
        }
    }

    /// How the scan's projection splits into the columns read from each file and the rest, when every column
    /// read is of a type decoded here.
    fn decoded_columns(&self, config: &FileScanConfig) -> Option<SplitProjection> {
        let csv = &self.csv;
        let local = config.object_store_url.as_str().starts_with("file://");
        let plain_format = !config.file_compression_type.is_compressed()
            && csv.comment().is_none()
            && csv.escape().is_none()
            && csv.terminator().is_none()
            && !csv.newlines_in_values()
            && !csv.truncate_rows()
            && csv.delimiter().is_ascii()
            && csv.quote().is_ascii()
            // A delimiter a number can hold would be read as part of one.
            && !matches!(csv.delimiter(), b'\n' | b'\r' | b'0'..=b'9' | b'-' | b'.');
        let file_schema = self.csv.table_schema().file_schema();
        if !local || !plain_format || file_schema.fields().is_empty() {
            return None;
        }
        let split = SplitProjection::new(file_schema, self.csv.projection()?);
        split
            .file_indices
            .iter()
            .all(|c| decode::decodes(file_schema.field(*c).data_type()))
            .then_some(split)
    }
}

impl FileSource for PlainCsvSource {
    fn create_file_opener(
        &self,
        store: Arc<dyn ObjectStore>,
        config: &FileScanConfig,
        partition: usize,
    ) -> DfResult<Arc<dyn FileOpener>> {
        let Some(split) = self.decoded_columns(config) else {
            return self.csv.create_file_opener(store, config, partition);
        };
        let columns = split.file_indices.clone();
        let file_schema = Arc::clone(self.csv.table_schema().file_schema());
        let batch_size = self.batch_size.unwrap_or(8192);
        let arrow_csv = Arc::new(self.csv.clone());
        let opener = PlainCsvOpener {
            projected: Arc::new(file_schema.project(&columns)?),
            fallback: Arc::new(CsvOpener::new(
                Arc::clone(&arrow_csv),
                config.file_compression_type,
                Arc::clone(&store),
            )),
            store,
            file_schema: Arc::clone(&file_schema),
            columns,
            csv: arrow_csv,
            batch_size,
        };
        ProjectionOpener::try_new(split, Arc::new(opener), &file_schema)
    }

    fn table_schema(&self) -> &TableSchema {
        self.csv.table_schema()
    }

    fn with_batch_size(&self, batch_size: usize) -> Arc<dyn FileSource> {
        let sized = Self {
            batch_size: Some(batch_size),
            ..self.clone()
        };
        sized.wrapping(self.csv.with_batch_size(batch_size))
    }

    fn filter(&self) -> Option<Arc<dyn PhysicalExpr>> {
        self.csv.filter()
    }

    fn projection(&self) -> Option<&ProjectionExprs> {
        self.csv.projection()
    }

    fn try_pushdown_projection(&self, projection: &ProjectionExprs) -> DfResult<Option<Arc<dyn FileSource>>> {
        Ok(self
            .csv
            .try_pushdown_projection(projection)?
            .map(|source| self.wrapping(source)))
    }

    fn metrics(&self) -> &ExecutionPlanMetricsSet {
        self.csv.metrics()
    }

    fn file_type(&self) -> &str {
        self.csv.file_type()
    }

    fn fmt_extra(&self, t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        self.csv.fmt_extra(t, f)?;
        if matches!(t, DisplayFormatType::Default | DisplayFormatType::Verbose) {
            write!(f, ", plain lines decoded by hearth")?;
        }
        Ok(())
    }

    fn supports_repartitioning(&self) -> bool {
        self.csv.supports_repartitioning()
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DfResult<TreeNodeRecursion>,
    ) -> DfResult<TreeNodeRecursion> {
        self.csv.apply_expressions(f)
    }
}

/// Opens one file (or a byte range of one) of a [`PlainCsvSource`].
struct PlainCsvOpener {
    store: Arc<dyn ObjectStore>,
    file_schema: SchemaRef,
    /// The file's columns read, and the schema they make.
    columns: Vec<usize>,
    projected: SchemaRef,
    csv: Arc<CsvSource>,
    batch_size: usize,
    /// DataFusion's own opener, for a file the store does not hand over as a local file.
    fallback: Arc<dyn FileOpener>,
}

impl PlainCsvOpener {
    /// Arrow's CSV decoder as DataFusion builds it, for the rest of a range.
    fn arrow_decoder(&self) -> ArrowDecoderFactory {
        let schema = Arc::clone(&self.file_schema);
        let (delimiter, quote, batch_size) = (self.csv.delimiter(), self.csv.quote(), self.batch_size);
        let columns = self.columns.clone();
        Box::new(move |header| {
            ReaderBuilder::new(Arc::clone(&schema))
                .with_delimiter(delimiter)
                .with_quote(quote)
                .with_batch_size(batch_size)
                .with_projection(columns.clone())
                .with_header(header)
                .build_decoder()
        })
    }
}

impl FileOpener for PlainCsvOpener {
    fn open(&self, file: PartitionedFile) -> DfResult<FileOpenFuture> {
        let store = Arc::clone(&self.store);
        let fallback = Arc::clone(&self.fallback);
        let plain = LineDecoder::new(
            self.csv.delimiter(),
            self.file_schema.fields().len(),
            &self.columns,
            Arc::clone(&self.projected),
            self.batch_size,
        );
        let make_arrow = self.arrow_decoder();
        let (quote, has_header, batch_size) = (self.csv.quote(), self.csv.has_header(), self.batch_size);
        Ok(async move {
            let size = file.object_meta.size;
            let (start, end) = match &file.range {
                Some(range) => (range.start as u64, range.end as u64),
                None => (0, u64::MAX),
            };
            if start >= end || start >= size {
                return Ok(futures::stream::empty().boxed());
            }
            let got = store
                .get_opts(&file.object_meta.location, GetOptions::default())
                .await?;
            let GetResultPayload::File(handle, path) = got.payload else {
                return fallback.open(file)?.await;
            };
            let end = if end >= size { u64::MAX } else { end };
            let reader = RangeReader::new(
                (handle, path),
                (start, end),
                (quote, has_header && start == 0, batch_size),
                plain,
                make_arrow,
            );
            Ok(futures::stream::iter(reader).boxed())
        }
        .boxed())
    }
}
