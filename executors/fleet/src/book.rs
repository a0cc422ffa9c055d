//! The scheduler's book of its fleet: what each executor reported it offers (slots, memory, GPUs), and what
//! the running tasks hold of it. The gang policy reads it to place barrier stages that need GPUs; the REST
//! API reads it for `hearth status`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use ballista_core::JobId;
use ballista_scheduler::state::execution_stage::ExecutionStage;
use ballista_scheduler::state::task_manager::JobInfoCache;
use datafusion::physical_plan::ExecutionPlan;
use hearth_exec::ballista::{ExecutorResources, now_ms};
use hearth_exec::barrier::BarrierExec;

/// What executors reported, by executor id.
#[derive(Debug, Default)]
pub struct FleetBook {
    executors: Mutex<HashMap<String, ExecutorResources>>,
}

impl FleetBook {
    fn executors(&self) -> MutexGuard<'_, HashMap<String, ExecutorResources>> {
        self.executors.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Records an executor's report, seen now.
    pub fn record(&self, mut report: ExecutorResources) {
        report.last_seen_ms = now_ms();
        self.executors().insert(report.executor_id.clone(), report);
    }

    /// What `executor_id` last reported.
    pub fn get(&self, executor_id: &str) -> Option<ExecutorResources> {
        self.executors().get(executor_id).cloned()
    }

    /// The GPUs `executor_id` offers (none before it reported).
    pub fn gpus(&self, executor_id: &str) -> usize {
        self.executors().get(executor_id).map_or(0, |e| e.gpus.len())
    }
}

/// What the running tasks of one executor hold.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Held {
    /// Task slots (vcores).
    pub slots: usize,
    /// GPUs.
    pub gpus: usize,
}

/// The GPUs each task of a stage holds: its barrier's `gpus_per_task`, 0 for other stages.
pub fn gpus_per_task(plan: &Arc<dyn ExecutionPlan>) -> usize {
    match plan.downcast_ref::<BarrierExec>() {
        Some(barrier) => barrier.spec().gpus_per_task,
        None => plan.children().into_iter().map(gpus_per_task).max().unwrap_or(0),
    }
}

/// What the running tasks of `jobs` hold, by executor id.
pub async fn held(jobs: &HashMap<JobId, JobInfoCache>) -> HashMap<String, Held> {
    let mut held: HashMap<String, Held> = HashMap::new();
    for job in jobs.values() {
        let graph = job.execution_graph.read().await;
        for stage in graph.stages().values() {
            let ExecutionStage::Running(stage) = stage else {
                continue;
            };
            let gpus = gpus_per_task(&stage.plan);
            for (task_id, stage_id, executor) in stage.running_tasks() {
                let entry = held.entry(executor).or_default();
                entry.slots += graph.task_vcores(stage_id, task_id).unwrap_or(1) as usize;
                entry.gpus += gpus;
            }
        }
    }
    held
}
