//! `hearth scheduler`: Ballista's scheduler with hearth's planner, functions and codec, the gang policy for
//! barrier stages, and hearth's REST routes (executors' resources, cluster-mode jobs) on the same port as
//! Ballista's gRPC service and REST API.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::http::{Method, StatusCode, Uri};
use axum::middleware;
use axum::routing::get;
use ballista_core::serde::protobuf::scheduler_grpc_server::SchedulerGrpcServer;
use ballista_scheduler::cluster::BallistaCluster;
use ballista_scheduler::config::{SchedulerConfig, TaskDistributionPolicy};
use ballista_scheduler::scheduler_process::create_scheduler;
use datafusion::prelude::SessionConfig;
use datafusion_proto::protobuf::{LogicalPlanNode, PhysicalPlanNode};
use hearth_common::host::host_name;
use hearth_exec::ballista::{EXECUTORS_ROUTE, FleetAccess, FleetPort, TLS_DIR_ENV};
use hearth_exec::codec::{FLEET_MESSAGE_BYTES, HearthLogicalCodec, HearthPhysicalCodec};
use hearth_exec::extension::Extensions;
use hearth_exec::session::hearth_state;
use tonic::service::RoutesBuilder;

use super::book::FleetBook;
use super::gang::GangPolicy;
use super::guard::{JobRule, guarded};
use super::jobs::JobBoard;
use super::ownership::{self, own_jobs_only};
use super::private_dir::own_private_dir;
use super::routes::{FleetState, Scheduler, routes};
use super::stopped;
use super::tls::{FleetListener, Peer};
use crate::error::{FleetError, Result};
use crate::limits::raise_open_files_limit;

/// How long the scheduler waits for an executor's heartbeat before it counts it as lost and stops placing
/// tasks on it (executors beat every 5 s).
pub const EXECUTOR_TIMEOUT_SECONDS: u64 = 20;

/// How long the scheduler waits, once asked to stop, for open connections to close.
const SHUTDOWN_DEADLINE: Duration = Duration::from_secs(10);

/// What `hearth scheduler` is told.
#[derive(Clone, Debug)]
pub struct SchedulerOptions {
    /// The address to listen on (port 0: a free one).
    pub bind: SocketAddr,
    /// The host executors and clients reach it at (default: the bind address, or this machine's host name
    /// when that is every interface).
    pub advertise: Option<String>,
    /// Where cluster-mode jobs keep their records and output (default: a new temporary directory, removed when
    /// the scheduler stops).
    pub work_dir: Option<PathBuf>,
    /// The fleet's secret, which every executor and client must present (none lets anyone in), and its TLS
    /// (none: plain TCP).
    pub access: FleetAccess,
    /// The directories and URL prefixes cluster-mode jobs' statements may name besides their job's folder.
    pub data_roots: Vec<String>,
    /// What the contexts it plans in have: the functions and codecs plans may name (the `hearth` program
    /// gives preprocessing's and training's).
    pub extensions: Extensions,
}

/// `hearth scheduler --bind HOST:PORT`. The line `hearth scheduler listening on HOST:PORT` says where it
/// listens; it runs until it is stopped (SIGTERM or Ctrl-C), and then stops the drivers it started.
pub async fn scheduler(options: SchedulerOptions) -> Result<()> {
    raise_open_files_limit();
    let listener = tokio::net::TcpListener::bind(options.bind)
        .await
        .map_err(|e| FleetError::listen(options.bind, e))?;
    let address = listener.local_addr().map_err(|e| FleetError::listen(options.bind, e))?;
    let temporary = options.work_dir.is_none();
    // This user's alone: made mode 700 under a name no other user can guess and create first.
    let work_dir = match options.work_dir.clone() {
        Some(dir) => {
            own_private_dir(&dir, "the jobs' work directory")?;
            dir
        }
        None => tempfile::Builder::new()
            .prefix(&format!("hearth-scheduler-{}-", address.port()))
            .tempdir()
            .map_err(|e| FleetError::Stopped(format!("cannot make a work directory for the jobs: {e}")))?
            .keep(),
    };
    // Drivers of cluster-mode jobs run on this machine.
    let local = match address.ip().is_unspecified() {
        true => SocketAddr::from(([127, 0, 0, 1], address.port())),
        false => address,
    };
    let advertised = (options.advertise.clone()).unwrap_or_else(|| match address.ip().is_unspecified() {
        true => host_name(),
        false => address.ip().to_string(),
    });
    let jobs = Arc::new(JobBoard::open(
        &work_dir,
        format!("df://{local}"),
        options.access.clone(),
        options.data_roots.clone(),
    )?);
    let tls = (options.access.tls.as_ref())
        .map(|tls| tls.server_config(FleetPort::Scheduler))
        .transpose()
        .map_err(FleetError::tls)?;
    let book = Arc::new(FleetBook::default());
    let config = ballista_config(address, &advertised, &options, Arc::clone(&book));
    config.validate().map_err(FleetError::scheduler)?;
    let cluster = BallistaCluster::new_from_config(&config)
        .await
        .map_err(FleetError::scheduler)?;
    let scheduler = create_scheduler::<LogicalPlanNode, PhysicalPlanNode>(cluster, Arc::new(config))
        .await
        .map_err(FleetError::scheduler)?;
    let fleet = FleetState {
        scheduler: Arc::new(scheduler),
        book,
        jobs: Arc::clone(&jobs),
    };
    let app = guarded(
        service(fleet),
        options.access.secret.clone(),
        "the scheduler",
        JobsOnTheBoard(Arc::clone(&jobs)),
    );
    log_access(&options.access);
    println!("hearth scheduler listening on {address}");
    log::info!("executors and clients reach it at {advertised}:{}", address.port());
    log::info!("cluster-mode jobs are kept in {}", work_dir.display());
    let listener = FleetListener::new(listener, tls).map_err(|e| FleetError::listen(address, e))?;
    serve_until_stopped(listener, app, jobs).await?;
    if temporary && let Err(e) = std::fs::remove_dir_all(&work_dir) {
        log::warn!(
            "cannot remove the jobs' temporary directory {}: {e}",
            work_dir.display()
        );
    }
    Ok(())
}

/// Ballista's scheduler listening on `address`, reached at `advertised`, with hearth's planner, codec and
/// gang policy (which learns executors' GPUs from `book`), the extensions of `options` and its calls to
/// executors made with their access.
fn ballista_config(
    address: SocketAddr,
    advertised: &str,
    options: &SchedulerOptions,
    book: Arc<FleetBook>,
) -> SchedulerConfig {
    let extensions = options.extensions.clone();
    SchedulerConfig {
        bind_host: address.ip().to_string(),
        bind_port: address.port(),
        external_host: advertised.to_string(),
        override_session_builder: Some(Arc::new(move |config: SessionConfig| {
            Ok(hearth_state(config, &extensions))
        })),
        // Every query's session records which cluster-mode job (if any) submitted it.
        override_config_producer: Some(Arc::new(ownership::session_config)),
        override_physical_codec: Some(Arc::new(HearthPhysicalCodec::new(&options.extensions))),
        override_logical_codec: Some(Arc::new(HearthLogicalCodec::new(&options.extensions))),
        task_distribution: TaskDistributionPolicy::Custom(Arc::new(GangPolicy::new(book))),
        executor_timeout_seconds: EXECUTOR_TIMEOUT_SECONDS,
        no_executors_grace_period_seconds: EXECUTOR_TIMEOUT_SECONDS,
        grpc_server_max_decoding_message_size: FLEET_MESSAGE_BYTES as u32,
        grpc_server_max_encoding_message_size: FLEET_MESSAGE_BYTES as u32,
        grpc_client_max_message_size: FLEET_MESSAGE_BYTES as u32,
        // Its calls to executors (task launches) present the secret, over TLS when the fleet has it.
        override_create_grpc_client_endpoint: options.access.endpoint_override(),
        ..SchedulerConfig::default()
    }
}

/// The scheduler's rule for cluster-mode jobs' drivers: what they may ask, while their job runs.
struct JobsOnTheBoard(Arc<JobBoard>);

impl JobRule for JobsOnTheBoard {
    /// To run and follow its queries (Ballista's client calls, not an executor's), the executors
    /// (Ballista's and hearth's routes), Ballista's version, and its own record, log and kill — not another
    /// job's, not Ballista's listing of jobs and their plans, not a new job, not an executor's registration.
    fn may_ask(&self, job: &str, method: &Method, path: &str) -> bool {
        if let Some(call) = path.strip_prefix("/ballista.protobuf.SchedulerGrpc/") {
            return CLIENT_CALLS.contains(&call);
        }
        let own = format!("/hearth/jobs/{job}");
        match *method {
            Method::GET => [
                EXECUTORS_ROUTE,
                "/api/version",
                "/api/executors",
                &own,
                &format!("{own}/logs"),
            ]
            .contains(&path),
            Method::POST => path == format!("{own}/kill"),
            _ => false,
        }
    }

    /// A job whose driver no longer runs (resumed, it runs again).
    fn has_ended(&self, job: &str) -> bool {
        !self.0.is_running(job)
    }
}

/// Ballista's scheduler calls a client makes (the rest are executors').
const CLIENT_CALLS: [&str; 8] = [
    "ExecuteQuery",
    "ExecuteQueryPush",
    "GetJobStatus",
    "GetJobMetrics",
    "CancelJob",
    "CleanJobData",
    "CreateUpdateSession",
    "RemoveSession",
];

/// Says in the log whether the control plane is encrypted.
fn log_access(access: &FleetAccess) {
    match &access.tls {
        Some(tls) => log::info!(
            "TLS on: certificates from {}, clients' certificates required",
            tls.dir().display()
        ),
        None => log::warn!(
            "the control plane is not encrypted (no TLS: give the fleet certificates with --tls-dir or {TLS_DIR_ENV}): keep the fleet on a network you trust"
        ),
    }
}

/// Serves `app` on `listener` until the process is asked to stop; then ends the drivers of `jobs` and
/// waits at most [`SHUTDOWN_DEADLINE`] for open connections to close.
async fn serve_until_stopped(listener: FleetListener, app: Router, jobs: Arc<JobBoard>) -> Result<()> {
    let asked_to_stop = Arc::new(tokio::sync::Notify::new());
    let stopping = {
        let asked_to_stop = Arc::clone(&asked_to_stop);
        async move {
            stopped().await;
            // Drivers hold connections to this scheduler: they end first.
            log::info!("stopping: ending the drivers of running jobs");
            jobs.stop_all().await;
            asked_to_stop.notify_one();
        }
    };
    let serving =
        axum::serve(listener, app.into_make_service_with_connect_info::<Peer>()).with_graceful_shutdown(stopping);
    tokio::select! {
        served = serving => served.map_err(|source| FleetError::Served { server: "the scheduler's REST and gRPC server", source })?,
        () = async {
            asked_to_stop.notified().await;
            tokio::time::sleep(SHUTDOWN_DEADLINE).await;
        } => log::warn!("connections still open {SHUTDOWN_DEADLINE:?} after stopping began; closing them"),
    }
    Ok(())
}

/// One service on one port: Ballista's gRPC service (cluster-mode jobs' calls checked by
/// [`own_jobs_only`]) and REST API, liveness and readiness probes, and hearth's routes.
fn service(fleet: FleetState) -> Router {
    let scheduler = Arc::clone(&fleet.scheduler);
    let config = &scheduler.state.config;
    let grpc = SchedulerGrpcServer::new(Scheduler::clone(&scheduler))
        .max_encoding_message_size(config.grpc_server_max_encoding_message_size as usize)
        .max_decoding_message_size(config.grpc_server_max_decoding_message_size as usize);
    let mut grpc_routes = RoutesBuilder::default();
    grpc_routes.add_service(grpc);
    let ready = Arc::clone(&scheduler);
    let probes = Router::new().route("/healthz", get(|| async { "ok" })).route(
        "/readyz",
        get(move || async move {
            match ready.is_ready() {
                true => (StatusCode::OK, "ready\n"),
                false => (
                    StatusCode::SERVICE_UNAVAILABLE,
                    "not ready: too few executors registered\n",
                ),
            }
        }),
    );
    let calls_on_jobs = middleware::from_fn_with_state(Arc::clone(&scheduler), own_jobs_only);
    ballista_scheduler::api::get_routes(scheduler)
        .merge(grpc_routes.routes().into_axum_router().layer(calls_on_jobs))
        .merge(probes)
        .merge(routes(fleet))
        .fallback(|uri: Uri| async move { (StatusCode::NOT_FOUND, format!("no route {uri}\n")) })
}
