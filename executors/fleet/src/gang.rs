//! Gang scheduling: the scheduler binds a barrier stage only when all of its tasks fit at once, with the
//! GPUs they ask for.
//!
//! Ballista binds a stage's partitions to free slots as they come, so a barrier stage could start some ranks
//! and leave the rest waiting for slots that other work holds — ranks that block in their rendezvous while
//! holding slots, two barrier jobs each holding half of the fleet. [`GangPolicy`] is Ballista's default
//! (bias) binding for every other stage; a stage whose plan holds a `BarrierExec` is skipped in a round
//! where its pending tasks outnumber the tasks the executors can take — free slots, and for a stage whose
//! tasks need GPUs, free GPUs of the [`FleetBook`] — and bound all together, one partition per slot, when
//! they fit.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use ballista_core::JobId;
use ballista_core::config::BallistaConfig;
use ballista_core::execution_plans::{RangeShuffleReaderExec, ShuffleReaderExec};
use ballista_core::serde::protobuf::{AvailableVcores, job_status};
use ballista_core::serde::scheduler::TaskKey;
use ballista_scheduler::cluster::{BoundTask, DistributionPolicy};
use ballista_scheduler::state::execution_graph::{TaskDescription, create_task_info};
use ballista_scheduler::state::execution_stage::RunningStage;
use ballista_scheduler::state::task_manager::JobInfoCache;
use datafusion::physical_plan::ExecutionPlan;
use hearth_exec::barrier::BarrierExec;

use super::book::{FleetBook, gpus_per_task, held};

/// Bias binding, with barrier stages bound whole (slots and GPUs) or not at all.
#[derive(Debug, Default)]
pub struct GangPolicy {
    book: Arc<FleetBook>,
}

impl GangPolicy {
    /// A policy that learns executors' GPUs from `book`.
    pub fn new(book: Arc<FleetBook>) -> Self {
        Self { book }
    }

    /// How many tasks needing `gpus` GPUs each the executor of `budget` can take now.
    fn room(&self, budget: &AvailableVcores, gpus: usize, gpus_held: &HashMap<String, usize>) -> usize {
        let slots = budget.vcores as usize;
        if gpus == 0 {
            return slots;
        }
        let held = gpus_held.get(&budget.executor_id).copied().unwrap_or(0);
        slots.min(self.book.gpus(&budget.executor_id).saturating_sub(held) / gpus)
    }
}

#[async_trait]
impl DistributionPolicy for GangPolicy {
    async fn bind_tasks(
        &self,
        mut budgets: Vec<&mut AvailableVcores>,
        running_jobs: Arc<HashMap<JobId, JobInfoCache>>,
    ) -> datafusion::error::Result<Vec<BoundTask>> {
        let mut bound = Vec::new();
        // Bias: the executor with the most free slots first.
        budgets.sort_by_key(|b| std::cmp::Reverse(b.vcores));
        let mut gpus_held: HashMap<String, usize> = held(&running_jobs)
            .await
            .into_iter()
            .map(|(executor, held)| (executor, held.gpus))
            .collect();
        for (job_id, job) in running_jobs.iter() {
            if !matches!(job.status, Some(job_status::Status::Running(_))) {
                continue;
            }
            let mut graph = job.execution_graph.write().await;
            let session_id = graph.session_id().to_string();
            let mut seen = Vec::new();
            while let Some(stage) = graph.fetch_running_stage(&seen) {
                seen.push(stage.stage_id);
                let barrier = holds_barrier(&stage.plan);
                let gpus = gpus_per_task(&stage.plan);
                let rooms: Vec<usize> = budgets.iter().map(|b| self.room(b, gpus, &gpus_held)).collect();
                let fits: usize = rooms.iter().sum();
                if barrier && stage.pending.remaining() > fits {
                    log::info!(
                        "job {job_id} stage {}: a barrier stage of {} tasks ({gpus} GPUs each) waits until that many fit ({fits} now)",
                        stage.stage_id,
                        stage.pending.remaining()
                    );
                    continue;
                }
                for (budget, room) in budgets.iter_mut().zip(rooms) {
                    let mut taken = 0;
                    while budget.vcores > 0 && (!barrier || taken < room) {
                        match bind_one(stage, &session_id, job_id, budget, barrier) {
                            Some(task) => bound.push(task),
                            None => break,
                        }
                        taken += 1;
                    }
                    if gpus > 0 {
                        *gpus_held.entry(budget.executor_id.clone()).or_default() += taken * gpus;
                    }
                }
            }
        }
        Ok(bound)
    }

    fn name(&self) -> &str {
        "hearth-gang"
    }
}

/// Whether a stage's plan holds a barrier operator.
fn holds_barrier(plan: &Arc<dyn ExecutionPlan>) -> bool {
    plan.is::<BarrierExec>() || plan.children().into_iter().any(holds_barrier)
}

/// Whether a stage narrows to one partition before its output (an aggregate without groups, a coalesce):
/// then all its input goes to one task, which occupies one slot — as Ballista binds such a stage.
fn collapses(plan: &Arc<dyn ExecutionPlan>) -> bool {
    fn walk(node: &Arc<dyn ExecutionPlan>) -> bool {
        if node.is::<ShuffleReaderExec>() || node.is::<RangeShuffleReaderExec>() {
            return false;
        }
        if node.properties().output_partitioning().partition_count() == 1 {
            return true;
        }
        match node.children().as_slice() {
            [child] => walk(child),
            _ => false,
        }
    }
    matches!(plan.children().as_slice(), [child] if walk(child))
}

/// Binds the next slice of `stage`'s pending partitions to `budget`'s executor, as Ballista does: a slice
/// as large as the free slots allow (one partition when `one_each`), capped by
/// `ballista.scheduler.max_partitions_per_task`.
fn bind_one(
    stage: &mut RunningStage,
    session_id: &str,
    job_id: &JobId,
    budget: &mut AvailableVcores,
    one_each: bool,
) -> Option<BoundTask> {
    let collapse = !one_each && collapses(&stage.plan);
    let cap = stage
        .session_config
        .options()
        .extensions
        .get::<BallistaConfig>()
        .map(BallistaConfig::max_partitions_per_task)
        .filter(|&n| n > 0)
        .unwrap_or(usize::MAX);
    let max = match (collapse, one_each) {
        (true, _) => usize::MAX,
        (false, true) => 1,
        (false, false) => (budget.vcores as usize).min(cap),
    };
    let partitions = stage.pending.next_slice(max);
    if partitions.is_empty() {
        return None;
    }
    let vcores = if collapse { 1 } else { partitions.len() as u32 };
    let task_id = stage.task_infos.len();
    let task_attempt = partitions
        .iter()
        .map(|&p| stage.task_failure_numbers[p])
        .max()
        .unwrap_or(0);
    let mut info = create_task_info(budget.executor_id.clone(), task_id);
    info.global_input_partition_ids = partitions.clone();
    info.vcores_consumed = vcores;
    stage.task_infos.push(info);
    let task = TaskDescription {
        session_id: session_id.to_string(),
        key: TaskKey {
            job_id: job_id.clone(),
            stage_id: stage.stage_id,
            task_id,
        },
        stage_attempt_num: stage.stage_attempt_num,
        task_attempt,
        global_input_partition_ids: partitions,
        vcores_consumed: vcores,
        plan: Arc::clone(&stage.plan),
        session_config: Arc::clone(&stage.session_config),
    };
    budget.vcores -= vcores;
    Some((budget.executor_id.clone(), task))
}

#[cfg(test)]
mod tests {
    use hearth_exec::ballista::{ExecutorResources, GpuInfo, now_ms};

    use super::*;

    fn executor(id: &str, gpus: usize) -> ExecutorResources {
        ExecutorResources {
            executor_id: id.to_string(),
            host: "127.0.0.1".to_string(),
            slots: 4,
            free_slots: None,
            memory_bytes: 1 << 30,
            gpus: (0..gpus)
                .map(|index| GpuInfo {
                    index,
                    name: "Test GPU".to_string(),
                    memory_bytes: 1 << 30,
                })
                .collect(),
            busy_gpus: 0,
            last_seen_ms: now_ms(),
            certificate_expires_at: None,
        }
    }

    fn budget(id: &str, vcores: u32) -> AvailableVcores {
        AvailableVcores {
            executor_id: id.to_string(),
            vcores,
        }
    }

    #[test]
    fn tasks_needing_gpus_fit_where_both_slots_and_gpus_are_free() {
        let book = Arc::new(FleetBook::default());
        book.record(executor("two-gpus", 2));
        book.record(executor("no-gpus", 0));
        let policy = GangPolicy::new(Arc::clone(&book));
        let none_held = HashMap::new();
        // Without GPUs a task needs a slot only.
        assert_eq!(policy.room(&budget("no-gpus", 3), 0, &none_held), 3);
        // With one GPU each: the fewer of free slots and free GPUs.
        assert_eq!(policy.room(&budget("two-gpus", 4), 1, &none_held), 2);
        assert_eq!(policy.room(&budget("two-gpus", 1), 1, &none_held), 1);
        assert_eq!(policy.room(&budget("no-gpus", 4), 1, &none_held), 0);
        // GPUs running tasks hold are not free; an executor that never reported has none.
        let held = HashMap::from([("two-gpus".to_string(), 1)]);
        assert_eq!(policy.room(&budget("two-gpus", 4), 1, &held), 1);
        assert_eq!(policy.room(&budget("unreported", 4), 1, &none_held), 0);
    }
}
