//! A CSV table whose read errors name the file and line: DataFusion's CSV table, its scans wrapped so that
//! a failing batch's error goes through [`located`](super::locate::located). Everything else — partitioning
//! a file among cores, projection, limits, filters — is the wrapped table's and its scan's. SQL's
//! `CREATE EXTERNAL TABLE … STORED AS CSV` makes one through [`LocatedCsvFactory`].

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{ScanArgs, ScanResult, Session as CatalogSession, TableProviderFactory};
use datafusion::common::Constraints;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::config::ConfigOptions;
use datafusion::datasource::{TableProvider, TableType};
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::{CreateExternalTable, Expr, TableProviderFilterPushDown};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties};
use futures::StreamExt;

use super::locate::located;
use super::plain_csv::accelerate;
use super::{CsvOptions, csv_files};

/// Where a CSV table's files are and how they are read: what [`located`] needs to find a failing record.
/// The files under a directory are listed only when a read fails.
#[derive(Debug)]
pub(crate) struct CsvFiles {
    pub(crate) paths: Vec<PathBuf>,
    /// What a file under a directory ends with.
    pub(crate) extension: String,
    pub(crate) options: CsvOptions,
}

impl CsvFiles {
    /// `error` naming the file and line of the record that made it (see [`located`]).
    pub(crate) fn located(&self, error: DataFusionError) -> DataFusionError {
        let files: Vec<PathBuf> = self
            .paths
            .iter()
            .flat_map(|path| csv_files(path, &self.extension))
            .collect();
        located(error, &files, &self.options)
    }

    /// The local files of a `CREATE EXTERNAL TABLE … STORED AS CSV` and its format options (none for an
    /// object store's URL).
    fn of_statement(create: &CreateExternalTable) -> Self {
        let option = |name: &str| create.options.get(&format!("format.{name}"));
        let byte = |name: &str| option(name).and_then(|v| v.bytes().next());
        let mut options = CsvOptions::new().header(option("has_header").is_none_or(|v| v == "true"));
        if let Some(delimiter) = byte("delimiter") {
            options = options.delimiter(delimiter);
        }
        if let Some(quote) = byte("quote") {
            options = options.quote(quote);
        }
        if let Some(escape) = byte("escape") {
            options = options.escape(escape);
        }
        if let Some(comment) = byte("comment") {
            options = options.comment(comment);
        }
        let extension = match option("compression").map(|c| c.to_ascii_lowercase()).as_deref() {
            Some("gzip") => ".csv.gz",
            _ => ".csv",
        };
        let paths = create
            .locations
            .iter()
            .filter_map(|location| match location.split_once("://") {
                Some(("file", path)) => Some(PathBuf::from(path)),
                Some(_) => None,
                None => Some(PathBuf::from(location)),
            })
            .collect();
        Self {
            paths,
            extension: extension.to_string(),
            options,
        }
    }
}

/// Makes the tables of `CREATE EXTERNAL TABLE … STORED AS CSV` with DataFusion's factory, wrapped in a
/// [`LocatedCsvTable`]; a file with no header and no rows is refused as empty.
#[derive(Debug)]
pub(crate) struct LocatedCsvFactory {
    pub(crate) inner: Arc<dyn TableProviderFactory>,
}

#[async_trait]
impl TableProviderFactory for LocatedCsvFactory {
    async fn create(
        &self,
        state: &dyn CatalogSession,
        create: &CreateExternalTable,
    ) -> DfResult<Arc<dyn TableProvider>> {
        let files = Arc::new(CsvFiles::of_statement(create));
        let inner = self.inner.create(state, create).await.map_err(|e| files.located(e))?;
        if inner.schema().fields().is_empty() {
            return Err(DataFusionError::Plan(format!(
                "table {}: {} is empty: no header and no rows, so no columns to read",
                create.name,
                create.locations.join(", ")
            )));
        }
        Ok(Arc::new(LocatedCsvTable { inner, files }))
    }
}

/// A CSV table (DataFusion's) whose scans name the file and line of a record that fails to read.
#[derive(Debug)]
pub(crate) struct LocatedCsvTable {
    pub(crate) inner: Arc<dyn TableProvider>,
    pub(crate) files: Arc<CsvFiles>,
}

#[async_trait]
impl TableProvider for LocatedCsvTable {
    fn schema(&self) -> SchemaRef {
        self.inner.schema()
    }

    fn constraints(&self) -> Option<&Constraints> {
        self.inner.constraints()
    }

    fn table_type(&self) -> TableType {
        self.inner.table_type()
    }

    async fn scan(
        &self,
        state: &dyn CatalogSession,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let plan = self.inner.scan(state, projection, filters, limit).await?;
        Ok(LocatedCsvExec::wrap(accelerate(plan)?, Arc::clone(&self.files)))
    }

    async fn scan_with_args<'a>(&self, state: &dyn CatalogSession, args: ScanArgs<'a>) -> DfResult<ScanResult> {
        let plan = self.inner.scan_with_args(state, args).await?.into_inner();
        Ok(LocatedCsvExec::wrap(accelerate(plan)?, Arc::clone(&self.files)).into())
    }

    fn supports_filters_pushdown(&self, filters: &[&Expr]) -> DfResult<Vec<TableProviderFilterPushDown>> {
        self.inner.supports_filters_pushdown(filters)
    }
}

/// A CSV scan whose errors name the file and line.
#[derive(Debug)]
struct LocatedCsvExec {
    input: Arc<dyn ExecutionPlan>,
    files: Arc<CsvFiles>,
}

impl LocatedCsvExec {
    fn wrap(input: Arc<dyn ExecutionPlan>, files: Arc<CsvFiles>) -> Arc<dyn ExecutionPlan> {
        Arc::new(Self { input, files })
    }
}

impl DisplayAs for LocatedCsvExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "LocatedCsvExec: paths={}", self.files.paths.len())
    }
}

impl ExecutionPlan for LocatedCsvExec {
    fn name(&self) -> &str {
        "LocatedCsvExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        self.input.properties()
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DfResult<TreeNodeRecursion>,
    ) -> DfResult<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn maintains_input_order(&self) -> Vec<bool> {
        vec![true]
    }

    fn with_new_children(
        self: Arc<Self>,
        mut children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        match children.pop() {
            Some(input) if children.is_empty() => Ok(Self::wrap(input, Arc::clone(&self.files))),
            _ => Err(DataFusionError::Internal("LocatedCsvExec takes one child".to_string())),
        }
    }

    /// The wrapped scan's own repartitioning (a file split among cores), still wrapped.
    fn repartitioned(
        &self,
        target_partitions: usize,
        config: &ConfigOptions,
    ) -> DfResult<Option<Arc<dyn ExecutionPlan>>> {
        Ok(self
            .input
            .repartitioned(target_partitions, config)?
            .map(|input| Self::wrap(input, Arc::clone(&self.files))))
    }

    fn execute(&self, partition: usize, context: Arc<TaskContext>) -> DfResult<SendableRecordBatchStream> {
        let stream = self.input.execute(partition, context)?;
        let schema = stream.schema();
        let files = Arc::clone(&self.files);
        let mut failed = false;
        let located_errors = stream.map(move |batch| {
            batch.map_err(|error| {
                // One error is located; a stream that goes on failing is not searched again.
                if std::mem::replace(&mut failed, true) {
                    error
                } else {
                    files.located(error)
                }
            })
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, located_errors)))
    }
}
