//! A physical operator of hearth's run over a frame's partitions where the frame's session runs: collected in
//! this process on an embedded session, or submitted as the last stage of a job to the session's fleet —
//! where each task runs the operator over its partitions and only the operator's own rows (a barrier stage's
//! results, a writer's list of files) come back to the driver.

use std::sync::Arc;

use ballista_core::extension::SessionConfigExt;
use datafusion::arrow::array::RecordBatch;
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::physical_plan::{ExecutionPlan, collect};
use datafusion::prelude::DataFrame;

use crate::ballista::submit_physical;
use crate::error::Result;
use crate::exchange::{HearthQueryPlanner, into_shuffles};
use crate::master::SessionInfo;

/// Runs `top` (built over the physical plan of `df`) and collects its rows. On a fleet the plan is made with
/// hearth's planner (its exact repartitions become Ballista's shuffle stages) and submitted as one job.
pub(crate) async fn run_over(
    df: DataFrame,
    top: impl FnOnce(Arc<dyn ExecutionPlan>) -> Result<Arc<dyn ExecutionPlan>>,
) -> Result<Vec<RecordBatch>> {
    let info = SessionInfo::of(&df);
    match info.scheduler() {
        None => {
            let task = Arc::new(df.task_ctx());
            let plan = top(df.create_physical_plan().await?)?;
            Ok(collect(plan, task).await?)
        }
        Some(scheduler) => {
            let (state, logical) = df.into_parts();
            let session_id = state.session_id().to_string();
            let config = state.config().clone().with_ballista_adaptive_query_planner(false);
            let planner = SessionStateBuilder::new_from_existing(state)
                .with_query_planner(Arc::new(HearthQueryPlanner))
                .build();
            let plan = top(into_shuffles(planner.create_physical_plan(&logical).await?)?)?;
            Ok(submit_physical(scheduler, plan, session_id, config).await?)
        }
    }
}
