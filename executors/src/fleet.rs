//! The fleet's processes: a Ballista scheduler and executors that carry hearth's codec and SQL functions.

use std::net::{IpAddr, SocketAddr, TcpListener};
use std::sync::Arc;

use ballista_core::extension::SessionConfigExt;
use ballista_core::registry::BallistaFunctionRegistry;
use ballista_executor::executor_process::{ExecutorProcessConfig, start_executor_process};
use ballista_scheduler::cluster::BallistaCluster;
use ballista_scheduler::config::{SchedulerConfig, TaskDistributionPolicy};
use ballista_scheduler::scheduler_process::{create_scheduler, start_grpc_service_with_listener};
use datafusion::prelude::SessionConfig;
use datafusion_proto::protobuf::{LogicalPlanNode, PhysicalPlanNode};
use hearth_engine::codec::{HearthLogicalCodec, HearthPhysicalCodec};
use hearth_engine::session::hearth_state;

use crate::cli::CommandResult;
use crate::gang::GangPolicy;

/// How often an executor tells the scheduler it is alive.
const HEARTBEAT_SECONDS: u64 = 5;
/// How long the scheduler waits for a heartbeat before it counts an executor as lost and stops placing
/// tasks on it.
const EXECUTOR_TIMEOUT_SECONDS: u64 = 20;

/// `hearth scheduler --bind HOST:PORT`: a Ballista scheduler with hearth's planner, functions and codec, and
/// the gang policy for barrier stages.
/// Port 0 picks a free port; the line `hearth scheduler listening on HOST:PORT` says which.
pub async fn scheduler(bind: SocketAddr) -> CommandResult {
    let listener = tokio::net::TcpListener::bind(bind)
        .await
        .map_err(|e| format!("cannot listen on {bind}: {e}"))?;
    let address = listener.local_addr()?;
    let config = SchedulerConfig {
        bind_host: address.ip().to_string(),
        bind_port: address.port(),
        external_host: address.ip().to_string(),
        override_session_builder: Some(Arc::new(|config: SessionConfig| Ok(hearth_state(config)))),
        override_physical_codec: Some(Arc::new(HearthPhysicalCodec::default())),
        override_logical_codec: Some(Arc::new(HearthLogicalCodec::default())),
        task_distribution: TaskDistributionPolicy::Custom(Arc::new(GangPolicy)),
        executor_timeout_seconds: EXECUTOR_TIMEOUT_SECONDS,
        no_executors_grace_period_seconds: EXECUTOR_TIMEOUT_SECONDS,
        ..SchedulerConfig::default()
    };
    let cluster = BallistaCluster::new_from_config(&config).await?;
    let scheduler = create_scheduler::<LogicalPlanNode, PhysicalPlanNode>(cluster, Arc::new(config)).await?;
    println!("hearth scheduler listening on {address}");
    start_grpc_service_with_listener(listener, scheduler).await?;
    Ok(())
}

/// What `hearth executor` is told.
#[derive(Clone, Debug)]
pub struct ExecutorOptions {
    /// The scheduler's `host:port`.
    pub scheduler: String,
    /// Tasks it runs at once.
    pub slots: usize,
    /// The address its data (Flight) and task (gRPC) services listen on.
    pub bind: IpAddr,
    /// The Flight port (0: a free one).
    pub port: u16,
    /// The gRPC port (0: a free one).
    pub grpc_port: u16,
    /// Where shuffle files go (default: a temporary directory).
    pub work_dir: Option<String>,
}

/// A free port on `host`, for Ballista services that must know their port before they listen.
fn free_port(host: IpAddr) -> std::io::Result<u16> {
    Ok(TcpListener::bind((host, 0))?.local_addr()?.port())
}

/// `hearth executor --scheduler HOST:PORT --slots N`: a Ballista executor with hearth's functions and codec.
pub async fn executor(options: ExecutorOptions) -> CommandResult {
    let (scheduler_host, scheduler_port) = options
        .scheduler
        .rsplit_once(':')
        .and_then(|(host, port)| Some((host.to_string(), port.parse::<u16>().ok()?)))
        .ok_or_else(|| format!("--scheduler must be HOST:PORT, got {:?}", options.scheduler))?;
    if options.slots == 0 {
        return Err("--slots must be at least 1".into());
    }
    let port = match options.port {
        0 => free_port(options.bind)?,
        port => port,
    };
    let grpc_port = match options.grpc_port {
        0 => free_port(options.bind)?,
        port => port,
    };
    let state = hearth_state(SessionConfig::new_with_ballista());
    let config = ExecutorProcessConfig {
        bind_host: options.bind.to_string(),
        external_host: Some(options.bind.to_string()),
        port,
        grpc_port,
        scheduler_host,
        scheduler_port,
        vcores: options.slots,
        work_dir: options.work_dir.clone(),
        override_function_registry: Some(Arc::new(BallistaFunctionRegistry::from(&state))),
        override_physical_codec: Some(Arc::new(HearthPhysicalCodec::default())),
        override_logical_codec: Some(Arc::new(HearthLogicalCodec::default())),
        executor_heartbeat_interval_seconds: HEARTBEAT_SECONDS,
        ..ExecutorProcessConfig::default()
    };
    println!(
        "hearth executor with {} slots on {}:{port} (tasks on {grpc_port}), scheduler {}",
        options.slots, options.bind, options.scheduler
    );
    start_executor_process(Arc::new(config)).await?;
    Ok(())
}
