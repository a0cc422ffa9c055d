//! The driver's side of a barrier stage: the gang check, the exact repartition, the rendezvous, the run.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use ballista_core::extension::SessionConfigExt;
use datafusion::arrow::array::RecordBatch;
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::physical_plan::collect;
use datafusion::prelude::DataFrame;
use hearth_ml::collective::{Coordinator, JobSecret, Upload};

use super::{BarrierExec, BarrierSpec};
use crate::ballista::submit_physical;
use crate::error::{HearthError, Result};
use crate::exchange::{HearthQueryPlanner, into_shuffles};
use crate::frame::exact_repartition;
use crate::session::SessionInfo;

/// A barrier stage to run from the driver: `workers` tasks of a registered function over a data frame's
/// rows, redistributed into exactly `workers` partitions (see the [module](super) example).
#[derive(Clone, Debug)]
pub struct BarrierStage {
    function: String,
    args: String,
    workers: usize,
    timeout: Duration,
    rendezvous_timeout: Duration,
}

/// One run of a stage: its rows or its error, and the last bytes a task sent the driver (a checkpoint) —
/// what a retry resumes from.
#[derive(Debug)]
pub struct StageAttempt {
    /// Every task's rows (one batch per task, in partition order), or why the stage failed.
    pub result: Result<Vec<RecordBatch>>,
    /// The latest upload from a task, if any arrived.
    pub latest_upload: Option<Upload>,
}

/// Fails fast, naming both numbers, when the session has fewer task slots than a stage of `workers` tasks.
pub(crate) async fn check_slots(info: &SessionInfo, workers: usize) -> Result<()> {
    let slots = info.task_slots().await?;
    if workers > slots {
        return Err(HearthError::Gang {
            workers,
            slots,
            master: info.master().to_string(),
        });
    }
    Ok(())
}

impl BarrierStage {
    /// A stage running the function registered as `function` with argument string `args`, on one worker,
    /// with a 2-minute collective timeout and a 5-minute rendezvous.
    pub fn new(function: impl Into<String>, args: impl Into<String>) -> Self {
        Self {
            function: function.into(),
            args: args.into(),
            workers: 1,
            timeout: Duration::from_secs(120),
            rendezvous_timeout: Duration::from_secs(300),
        }
    }

    /// How many tasks run at once (one per partition).
    pub fn workers(mut self, workers: usize) -> Self {
        self.workers = workers;
        self
    }

    /// The longest any one collective may take before every task fails.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// How long the driver waits for all tasks to register before failing the stage, naming who is missing.
    pub fn rendezvous_timeout(mut self, timeout: Duration) -> Self {
        self.rendezvous_timeout = timeout;
        self
    }

    /// Runs the stage over `df` and returns every task's rows.
    pub async fn run(&self, df: &DataFrame) -> Result<Vec<RecordBatch>> {
        self.attempt(df).await.result
    }

    /// Runs the stage once, keeping what the tasks sent the driver even when it fails.
    pub async fn attempt(&self, df: &DataFrame) -> StageAttempt {
        let mut coordinator = None;
        let result = self.execute(df, &mut coordinator).await;
        StageAttempt {
            result,
            latest_upload: coordinator.as_ref().and_then(Coordinator::latest_upload),
        }
    }

    async fn execute(&self, df: &DataFrame, coordinator: &mut Option<Coordinator>) -> Result<Vec<RecordBatch>> {
        let info = SessionInfo::of(df);
        if self.workers == 0 {
            return Err(HearthError::InvalidParam {
                stage: format!("barrier stage {}", self.function),
                param: "workers",
                message: "must be at least 1".to_string(),
            });
        }
        check_slots(&info, self.workers).await?;
        let secret = JobSecret::generate();
        let job = format!("job-{}", &JobSecret::generate().to_hex()[..12]);
        let started = coordinator.insert(
            Coordinator::start(
                SocketAddr::new(info.driver_host(), 0),
                self.workers,
                secret.clone(),
                self.rendezvous_timeout,
            )
            .map_err(|e| HearthError::Barrier {
                job: job.clone(),
                message: e.to_string(),
            })?,
        );
        let spec = BarrierSpec {
            function: self.function.clone(),
            args: self.args.clone(),
            world_size: self.workers,
            coordinator: started.address(),
            secret: secret.to_hex(),
            timeout_secs: self.timeout.as_secs_f64(),
            job,
        };
        let partitioned = exact_repartition(df, self.workers);
        match info.scheduler() {
            None => {
                let input = partitioned.create_physical_plan().await?;
                let stage = Arc::new(BarrierExec::try_new(input, spec)?);
                Ok(collect(stage, Arc::new(df.task_ctx())).await?)
            }
            Some(scheduler) => {
                // Planned here, as a physical plan: the exact repartition becomes Ballista's shuffle stage.
                let (state, logical) = partitioned.into_parts();
                let session_id = state.session_id().to_string();
                let config = state.config().clone().with_ballista_adaptive_query_planner(false);
                let planner = SessionStateBuilder::new_from_existing(state)
                    .with_query_planner(Arc::new(HearthQueryPlanner))
                    .build();
                let input = into_shuffles(planner.create_physical_plan(&logical).await?)?;
                let stage = Arc::new(BarrierExec::try_new(input, spec)?);
                Ok(submit_physical(scheduler, stage, session_id, config).await?)
            }
        }
    }
}
