//! A data frame read more than once, parsed once: Spark's `persist(MEMORY_AND_DISK)`. [`cache`] runs the
//! frame once and holds its batches in memory while they fit a budget; past it, each partition still
//! running writes its batches to an Arrow IPC file in a temporary directory instead. The frame it returns
//! reads every partition from where it was kept — so a pipeline fitting several estimators on a file larger
//! than memory parses the file once, holding at most the budget and a batch per partition. The files are
//! removed when the last plan reading them is dropped.
//!
//! ```
//! # tokio::runtime::Builder::new_multi_thread().build().unwrap().block_on(async {
//! use hearth_exec::cache::cache;
//! use hearth_exec::session::Session;
//!
//! let session = Session::builder().local(2);
//! let df = session.context().sql("SELECT * FROM generate_series(1, 100000) AS t(x)").await.unwrap();
//! // A budget of 0 bytes: every partition goes to disk, and reads back the same.
//! let kept = cache(df, 0).await.unwrap();
//! assert_eq!(kept.clone().count().await.unwrap(), 100_000);
//! assert_eq!(kept.count().await.unwrap(), 100_000);
//! # });
//! ```

use std::fmt;
use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::ipc::reader::FileReader;
use datafusion::arrow::ipc::writer::FileWriter;
use datafusion::catalog::Session as CatalogSession;
use datafusion::common::runtime::SpawnedTask;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::datasource::{TableProvider, TableType};
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::Expr;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::{RecordBatchReceiverStreamBuilder, RecordBatchStreamAdapter};
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties};
use datafusion::prelude::{DataFrame, SessionContext};
use futures::StreamExt;
use hearth_common::scratch::scratch_dir;

use crate::error::Result;
use crate::master::{Master, SessionInfo};

/// How much of a cached frame is held in memory by default before the rest goes to disk: 1 GiB.
pub const DEFAULT_MEMORY_BUDGET: usize = 1 << 30;

/// `df` made ready to be read more than once, by where it runs: on a `local[N]` session kept by [`cache`] (in
/// memory up to `memory_budget` bytes, the rest on local disk); on Ballista's standalone cluster, which runs
/// in this process, collected into an in-memory table its plans carry; on a fleet (`df://`) as it is, so that
/// each read runs on the executors again and none of the fleet's data is collected into the driver (Ballista
/// 55 keeps no partitions on its executors from one job to the next).
///
/// ```
/// # tokio::runtime::Builder::new_multi_thread().build().unwrap().block_on(async {
/// use hearth_exec::cache::{DEFAULT_MEMORY_BUDGET, for_rereading};
/// use hearth_exec::session::Session;
///
/// let session = Session::builder().local(2);
/// let df = session.context().sql("SELECT * FROM generate_series(1, 1000) AS t(x)").await.unwrap();
/// let kept = for_rereading(df, DEFAULT_MEMORY_BUDGET).await.unwrap();
/// assert_eq!(kept.clone().count().await.unwrap(), 1000);
/// assert_eq!(kept.count().await.unwrap(), 1000);
/// # });
/// ```
pub async fn for_rereading(df: DataFrame, memory_budget: usize) -> Result<DataFrame> {
    Ok(match SessionInfo::of(&df).master() {
        Master::Local { .. } => cache(df, memory_budget).await?,
        Master::Standalone { .. } => df.cache().await?,
        Master::Remote { .. } => df,
    })
}

/// Runs `df` once and returns a frame of the same rows and partitions, kept in memory up to `memory_budget`
/// bytes and on local disk past it. See the [module](self) documentation.
pub async fn cache(df: DataFrame, memory_budget: usize) -> Result<DataFrame> {
    let task_ctx = Arc::new(df.task_ctx());
    let context = SessionContext::new_with_state(df.clone().into_parts().0);
    let plan = df.create_physical_plan().await?;
    let schema = plan.schema();
    let shared = Arc::new(Budget {
        limit: memory_budget,
        held: AtomicUsize::new(0),
        spilling: AtomicBool::new(false),
        dir: OnceLock::new(),
    });
    let partitions = plan.properties().partitioning.partition_count();
    let mut tasks = Vec::with_capacity(partitions);
    for partition in 0..partitions {
        let stream = plan.execute(partition, Arc::clone(&task_ctx))?;
        tasks.push(SpawnedTask::spawn(keep_partition(
            partition,
            stream,
            Arc::clone(&shared),
        )));
    }
    let mut kept = Vec::with_capacity(partitions);
    for task in tasks {
        kept.push(
            task.join()
                .await
                .map_err(|e| DataFusionError::Execution(format!("caching a partition panicked: {e}")))??,
        );
    }
    let table = CachedTable {
        schema,
        partitions: Arc::new(kept),
    };
    Ok(context.read_table(Arc::new(table))?)
}

/// What every partition of one [`cache`] shares: the memory budget and, once one spills, the directory.
struct Budget {
    limit: usize,
    held: AtomicUsize,
    spilling: AtomicBool,
    dir: OnceLock<std::io::Result<Arc<tempfile::TempDir>>>,
}

impl Budget {
    /// Counts `bytes` more held; true when the budget is spent (and from then on for every partition).
    fn over_after(&self, bytes: usize) -> bool {
        let held = self.held.fetch_add(bytes, Ordering::Relaxed) + bytes;
        if held > self.limit {
            self.spilling.store(true, Ordering::Relaxed);
        }
        self.spilling.load(Ordering::Relaxed)
    }

    fn spill_dir(&self) -> DfResult<Arc<tempfile::TempDir>> {
        let dir = self.dir.get_or_init(|| scratch_dir("cache").map(Arc::new));
        dir.as_ref().map(Arc::clone).map_err(|e| {
            DataFusionError::Execution(format!(
                "caching rows past the memory budget: cannot create a directory in {}: {e}",
                std::env::temp_dir().display()
            ))
        })
    }
}

/// Where a partition's rows were kept.
#[derive(Debug)]
enum Kept {
    Memory(Vec<RecordBatch>),
    /// An Arrow IPC file in a directory that lives as long as its readers.
    Disk {
        file: PathBuf,
        _dir: Arc<tempfile::TempDir>,
    },
}

/// Runs one partition, holding its batches while the budget lasts and writing them to a file after.
async fn keep_partition(
    partition: usize,
    mut stream: SendableRecordBatchStream,
    budget: Arc<Budget>,
) -> DfResult<Kept> {
    let mut held: Vec<RecordBatch> = Vec::new();
    let mut spill: Option<(FileWriter<BufWriter<File>>, PathBuf, Arc<tempfile::TempDir>)> = None;
    while let Some(batch) = stream.next().await {
        let batch = batch?;
        if spill.is_none() && budget.over_after(batch.get_array_memory_size()) {
            let dir = budget.spill_dir()?;
            let path = dir.path().join(format!("part-{partition:05}.arrow"));
            let file = File::create(&path).map_err(|e| spill_error(&path, e))?;
            let mut writer = FileWriter::try_new_buffered(file, &batch.schema())?;
            for earlier in held.drain(..) {
                writer.write(&earlier)?;
            }
            spill = Some((writer, path, dir));
        }
        match &mut spill {
            Some((writer, ..)) => writer.write(&batch)?,
            None => held.push(batch),
        }
    }
    Ok(match spill {
        None => Kept::Memory(held),
        Some((mut writer, file, dir)) => {
            writer.finish()?;
            Kept::Disk { file, _dir: dir }
        }
    })
}

fn spill_error(path: &std::path::Path, error: std::io::Error) -> DataFusionError {
    DataFusionError::Execution(format!("caching rows in {}: {error}", path.display()))
}

/// The rows [`cache`] kept, partition by partition.
#[derive(Debug)]
pub struct CachedTable {
    schema: SchemaRef,
    partitions: Arc<Vec<Kept>>,
}

#[async_trait]
impl TableProvider for CachedTable {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> TableType {
        TableType::Temporary
    }

    async fn scan(
        &self,
        _state: &dyn CatalogSession,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let schema = match projection {
            Some(columns) => Arc::new(self.schema.project(columns)?),
            None => Arc::clone(&self.schema),
        };
        let properties = PlanProperties::new(
            EquivalenceProperties::new(Arc::clone(&schema)),
            Partitioning::UnknownPartitioning(self.partitions.len()),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        Ok(Arc::new(CachedExec {
            partitions: Arc::clone(&self.partitions),
            projection: projection.cloned(),
            schema,
            properties: Arc::new(properties),
        }))
    }
}

/// Reads a [`CachedTable`]'s partitions: batches held in memory as they are, spilled ones from their file.
#[derive(Debug)]
struct CachedExec {
    partitions: Arc<Vec<Kept>>,
    projection: Option<Vec<usize>>,
    schema: SchemaRef,
    properties: Arc<PlanProperties>,
}

impl DisplayAs for CachedExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let on_disk = self
            .partitions
            .iter()
            .filter(|p| matches!(p, Kept::Disk { .. }))
            .count();
        write!(f, "CachedExec: partitions={}, on_disk={on_disk}", self.partitions.len())
    }
}

impl ExecutionPlan for CachedExec {
    fn name(&self) -> &str {
        "CachedExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DfResult<TreeNodeRecursion>,
    ) -> DfResult<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(self: Arc<Self>, _children: Vec<Arc<dyn ExecutionPlan>>) -> DfResult<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    fn execute(&self, partition: usize, _context: Arc<TaskContext>) -> DfResult<SendableRecordBatchStream> {
        let schema = Arc::clone(&self.schema);
        let projection = self.projection.clone();
        match self.partitions.get(partition) {
            None => Err(DataFusionError::Internal(format!(
                "CachedExec has {} partitions, not {partition}",
                self.partitions.len()
            ))),
            Some(Kept::Memory(batches)) => {
                let batches: Vec<DfResult<RecordBatch>> = batches
                    .iter()
                    .map(|batch| match &projection {
                        Some(columns) => Ok(batch.project(columns)?),
                        None => Ok(batch.clone()),
                    })
                    .collect();
                Ok(Box::pin(RecordBatchStreamAdapter::new(
                    schema,
                    futures::stream::iter(batches),
                )))
            }
            Some(Kept::Disk { file, .. }) => {
                let (file, partitions) = (file.clone(), Arc::clone(&self.partitions));
                let mut builder = RecordBatchReceiverStreamBuilder::new(schema, 2);
                let sender = builder.tx();
                builder.spawn_blocking(move || {
                    // The directory stays while this partition is read.
                    let _files = partitions;
                    let opened = File::open(&file).map_err(|e| spill_error(&file, e))?;
                    for batch in FileReader::try_new_buffered(opened, projection)? {
                        if sender.blocking_send(batch.map_err(DataFusionError::from)).is_err() {
                            break; // the reader went away
                        }
                    }
                    Ok(())
                });
                Ok(builder.build())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use datafusion::datasource::source_as_provider;
    use datafusion::logical_expr::LogicalPlan;

    use super::*;
    use crate::session::Session;

    /// The files a cached frame's partitions were spilled to.
    fn spilled_files(df: &DataFrame) -> Vec<PathBuf> {
        let LogicalPlan::TableScan(scan) = df.logical_plan() else {
            panic!("not a scan: {}", df.logical_plan())
        };
        let provider = source_as_provider(&scan.source).unwrap();
        let table = (provider.as_ref() as &dyn std::any::Any)
            .downcast_ref::<CachedTable>()
            .expect("a cached table");
        table
            .partitions
            .iter()
            .filter_map(|kept| match kept {
                Kept::Disk { file, .. } => Some(file.clone()),
                Kept::Memory(_) => None,
            })
            .collect()
    }

    /// The sum of column `x` and the number of rows.
    async fn sums(df: DataFrame) -> (i64, usize) {
        use datafusion::arrow::array::AsArray;
        use datafusion::arrow::datatypes::Int64Type;
        let batches = df.collect().await.unwrap();
        let sum = batches
            .iter()
            .flat_map(|b| b.column(0).as_primitive::<Int64Type>().values().to_vec())
            .sum();
        (sum, batches.iter().map(RecordBatch::num_rows).sum())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn rows_past_the_budget_go_to_disk_and_the_files_go_when_the_frame_does() {
        let session = Session::builder().local(2);
        let df = session
            .context()
            .sql("SELECT x, x * 2 AS y FROM generate_series(1, 200000) AS t(x)")
            .await
            .unwrap()
            .repartition(datafusion::logical_expr::Partitioning::RoundRobinBatch(2))
            .unwrap();
        let expected = sums(df.clone()).await;

        let in_memory = cache(df.clone(), DEFAULT_MEMORY_BUDGET).await.unwrap();
        assert!(spilled_files(&in_memory).is_empty());
        assert_eq!(sums(in_memory.clone()).await, expected);

        let on_disk = cache(df, 0).await.unwrap();
        let files = spilled_files(&on_disk);
        assert_eq!(files.len(), 2, "both partitions spilled");
        assert!(files.iter().all(|f| f.is_file()));
        // Read twice, and through a projection of one column.
        assert_eq!(sums(on_disk.clone()).await, expected);
        assert_eq!(sums(on_disk.clone().select_columns(&["x"]).unwrap()).await, expected);
        drop(on_disk);
        assert!(files.iter().all(|f| !f.exists()), "the files outlived their frame");
        assert!(!files[0].parent().unwrap().exists());
    }
}
