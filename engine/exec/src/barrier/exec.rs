//! `BarrierExec`: the operator that runs a barrier function on every input partition at once.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties, Partitioning, PlanProperties,
};

use super::allocator::give_back_free_pages;
use super::context::Joining;
use super::gpus::{lease, offered_gpus};
use super::input::BarrierInput;
use super::program::run_in_program;
use super::spec::ProgramRef;
use super::spec::{BarrierSpec, reason, task_error};
use super::task_thread::run_on_own_thread;
use super::{BarrierFunction, BarrierTaskContext, function};

/// Runs a [`BarrierFunction`] on each of its input's `world_size` partitions, all at once: each task drains
/// its partition, joins the stage's ring at the driver's coordinator (ranks follow the partitions' contents,
/// not the order tasks start in), and runs the function on a thread of its own (never on an async worker,
/// where it could starve the peers it waits for), which ends with the task. Each task returns the
/// function's rows; its errors leave as execution errors naming the job, function and rank — never IO errors,
/// which a cluster would retry by re-running one task alone.
#[derive(Debug)]
pub struct BarrierExec {
    input: Arc<dyn ExecutionPlan>,
    spec: BarrierSpec,
    runner: Runner,
    properties: Arc<PlanProperties>,
}

/// Where a task's function runs.
#[derive(Clone, Debug)]
enum Runner {
    /// In this process, which registered it.
    Here(Arc<dyn BarrierFunction>),
    /// In a copy of the driver program that registered it.
    Program(ProgramRef),
}

impl BarrierExec {
    /// The stage over `input`, which must have exactly `spec.world_size` partitions.
    pub fn try_new(input: Arc<dyn ExecutionPlan>, spec: BarrierSpec) -> Result<Self> {
        let partitions = input.output_partitioning().partition_count();
        if partitions != spec.world_size {
            return Err(DataFusionError::Plan(format!(
                "barrier stage {}: its input has {partitions} partitions, but {} tasks must run",
                spec.job, spec.world_size
            )));
        }
        Self::over_slice(input, spec)
    }

    /// The stage's operator over some of its partitions: a cluster hands each task a slice of the stage's
    /// partitions (numbered from 0 within the slice); the tasks of all slices together are the world.
    pub fn over_slice(input: Arc<dyn ExecutionPlan>, spec: BarrierSpec) -> Result<Self> {
        let partitions = input.output_partitioning().partition_count();
        let (runner, schema) = match (function(&spec.function), &spec.program) {
            (Ok(function), _) => {
                let schema = function.schema(&spec.args)?;
                (Runner::Here(function), schema)
            }
            (Err(_), Some(program)) => (Runner::Program(program.clone()), program.schema()?),
            (Err(e), None) => return Err(e),
        };
        let properties = PlanProperties::new(
            EquivalenceProperties::new(schema),
            Partitioning::UnknownPartitioning(partitions),
            EmissionType::Final,
            Boundedness::Bounded,
        );
        Ok(Self {
            input,
            spec,
            runner,
            properties: Arc::new(properties),
        })
    }

    /// What the tasks run.
    pub fn spec(&self) -> &BarrierSpec {
        &self.spec
    }

    /// The input plan.
    pub fn input(&self) -> &Arc<dyn ExecutionPlan> {
        &self.input
    }
}

impl DisplayAs for BarrierExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "BarrierExec: function={}, world_size={}, job={}",
            self.spec.function, self.spec.world_size, self.spec.job
        )
    }
}

impl ExecutionPlan for BarrierExec {
    fn name(&self) -> &str {
        "BarrierExec"
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
            .ok_or_else(|| DataFusionError::Internal("BarrierExec needs one child".to_string()))?;
        Ok(Arc::new(Self::over_slice(input, self.spec.clone())?))
    }

    fn execute(&self, partition: usize, context: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        let input_schema = self.input.schema();
        let disk = Arc::clone(&context.runtime_env().disk_manager);
        let input = self.input.execute(partition, context)?;
        let spec = self.spec.clone();
        let runner = self.runner.clone();
        let cancelled = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&cancelled);
        let task = async move {
            // Dropping the stream (a cancelled query, a killed job) drops this guard and tells the task.
            let _cancel_on_drop = CancelOnDrop(flag);
            let budget = task_memory_budget(&spec);
            let batches = BarrierInput::collect(input, budget, &disk)
                .await
                .map_err(|e| task_error(&spec, &format!("partition {partition}"), "reading its rows", &e))?;
            let name = format!("hearth-task-{partition}");
            let running = run_on_own_thread(name, move || {
                let outcome = run_task(&spec, &runner, &input_schema, batches, Arc::clone(&cancelled));
                // Once the stage is cancelled nobody awaits this task's result: its log is where it says it stopped.
                if let (Err(e), true) = (&outcome, cancelled.load(Ordering::Relaxed)) {
                    log::info!("{} (the stage was cancelled)", reason(e));
                }
                outcome
            });
            let outcome = running.await;
            give_back_free_pages();
            outcome.map_err(|e| DataFusionError::Execution(format!("barrier task of partition {partition}: {e}")))?
        };
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.schema(),
            futures::stream::once(task),
        )))
    }
}

/// Sets its flag when dropped.
struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// The bytes of its partition a task holds in memory: the stage's budget, else half the memory this host has
/// free, shared by the stage's tasks it can run at once (no more than its cores).
fn task_memory_budget(spec: &BarrierSpec) -> Option<usize> {
    if let Some(bytes) = spec.memory_budget {
        return Some(usize::try_from(bytes).unwrap_or(usize::MAX));
    }
    let mut system = sysinfo::System::new();
    system.refresh_memory();
    let free = system.available_memory();
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let tasks = spec.world_size.clamp(1, cores) as u64;
    (free > 0).then(|| usize::try_from(free / 2 / tasks).unwrap_or(usize::MAX))
}

/// One task, on a blocking thread: lease its GPU if the stage asked for one, join the ring, run the function.
fn run_task(
    spec: &BarrierSpec,
    runner: &Runner,
    input_schema: &SchemaRef,
    batches: BarrierInput,
    cancelled: Arc<AtomicBool>,
) -> Result<RecordBatch> {
    // A fingerprint of the rows that does not depend on their order or on which task holds them, so a job's
    // rank of a given partition is the same on every master and every run.
    let position = usize::try_from(batches.lowest_hash()).unwrap_or(usize::MAX);
    let timeout = Duration::from_secs_f64(spec.timeout_secs.max(0.001));
    let gpu = match spec.gpus_per_task {
        0 => None,
        _ => Some(lease(timeout).ok_or_else(|| {
            let why = match offered_gpus() {
                offered if offered.is_empty() => "this host offers no GPUs".to_string(),
                offered => format!("every GPU this host offers ({offered:?}) stayed held for {timeout:?}"),
            };
            task_error(
                spec,
                "a task",
                "starting",
                &format!("the stage needs a GPU per task, and {why}"),
            )
        })?),
    };
    let joining = Joining {
        position,
        resume: spec.resume.clone(),
        gpu,
        cancelled,
    };
    let function = match runner {
        Runner::Here(function) => function,
        Runner::Program(program) => {
            return run_in_program(spec, program, joining, input_schema, batches.into_batches()?);
        }
    };
    let secret = spec
        .job_secret()
        .map_err(|why| DataFusionError::Execution(format!("barrier stage {}: {why}", spec.job)))?;
    let mut context = BarrierTaskContext::join(spec.coordinator, secret, timeout, joining)
        .map_err(|e| task_error(spec, "a task", "joining", &e))?;
    let rank = context.rank();
    function
        .run_input(&mut context, &spec.args, batches)
        .map_err(|e| task_error(spec, &format!("rank {rank}"), "running", &reason(&e)))
}
