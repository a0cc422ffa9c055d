//! Ballista deployments beyond this process: a remote scheduler, and physical plans submitted to a scheduler (the
//! standalone cluster in this process is [`standalone`](super::standalone)'s).

use std::sync::Arc;
use std::time::Duration;

use ballista_core::extension::{SessionConfigExt, SessionStateExt};
use ballista_core::serde::protobuf::scheduler_grpc_client::SchedulerGrpcClient;
use datafusion::arrow::array::RecordBatch;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::SessionState;
use datafusion::logical_expr::{AggregateUDF, ScalarUDF};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion_proto::protobuf::PhysicalPlanNode;
use futures::TryStreamExt;

/// The port a `df://host` master without a port means, as Ballista's.
pub const DEFAULT_SCHEDULER_PORT: u16 = 50050;

fn configuration(message: impl ToString) -> DataFusionError {
    DataFusionError::Configuration(message.to_string())
}

/// The client context of `state` on the scheduler at `url`. Ballista's upgrade resets the SQL functions to
/// its own list, so the state's own are registered again.
pub(super) fn client_context(state: SessionState, url: &str) -> Result<SessionContext> {
    let scalars: Vec<_> = state.scalar_functions().values().cloned().collect();
    let aggregates: Vec<_> = state.aggregate_functions().values().cloned().collect();
    let ctx = SessionContext::new_with_state(state.upgrade_for_ballista(url.to_string())?);
    for udf in scalars {
        ctx.register_udf(ScalarUDF::clone(&udf));
    }
    for udaf in aggregates {
        ctx.register_udaf(AggregateUDF::clone(&udaf));
    }
    Ok(ctx)
}

/// A client with `state` of the scheduler at `host:port`, which must answer within 10 seconds; returns the
/// client context and the scheduler's URL.
pub(crate) async fn connect_remote(host: &str, port: u16, state: SessionState) -> Result<(SessionContext, String)> {
    let url = format!("http://{host}:{port}");
    tokio::time::timeout(Duration::from_secs(10), SchedulerGrpcClient::connect(url.clone()))
        .await
        .map_err(|_| configuration(format!("no scheduler answered at {host}:{port} within 10 s")))?
        .map_err(|e| configuration(format!("cannot reach the scheduler at {host}:{port}: {e}")))?;
    Ok((client_context(state, &url)?, url))
}

/// Runs a physical plan on the cluster whose scheduler is at `scheduler` and collects its rows. `config` is
/// the job's configuration; its physical codec (hearth's, in hearth's sessions) carries the plan's nodes.
pub async fn submit_physical(
    scheduler: &str,
    plan: Arc<dyn ExecutionPlan>,
    session_id: String,
    config: SessionConfig,
) -> Result<Vec<RecordBatch>> {
    let ballista = config.ballista_config();
    let stream = ballista_core::execution_plans::execute_physical_plan::<PhysicalPlanNode>(
        scheduler.to_string(),
        &ballista,
        plan,
        config.ballista_physical_extension_codec().as_ref(),
        session_id,
        config,
    )
    .await?;
    stream.try_collect().await
}
