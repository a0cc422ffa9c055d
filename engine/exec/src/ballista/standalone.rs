//! The standalone cluster: Ballista's scheduler and one executor in this process, on loopback ports that admit
//! only this process. The session makes a secret that is never written anywhere; its client, scheduler and
//! executor present tokens of it (see [`token`](super::token)), and both servers refuse a call without one
//! as `UNAUTHENTICATED`, so another user of the machine can neither submit a plan to run as this process's
//! user nor read its results.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow_flight::flight_service_server::FlightServiceServer;
use ballista_core::config::TaskSchedulingPolicy;
use ballista_core::extension::SessionConfigExt;
use ballista_core::ids::new_instance_id;
use ballista_core::serde::BallistaCodec;
use ballista_core::serde::protobuf::ExecutorRegistration;
use ballista_core::serde::protobuf::scheduler_grpc_client::SchedulerGrpcClient;
use ballista_core::serde::protobuf::scheduler_grpc_server::SchedulerGrpcServer;
use ballista_core::serde::scheduler::{ExecutorOperatingSystemSpecification, ExecutorSpecification};
use ballista_core::utils::{GrpcServerConfig, create_grpc_server};
use ballista_core::{BALLISTA_PROTOCOL_VERSION, ConfigProducer, RuntimeProducer};
use ballista_executor::execution_loop::poll_loop;
use ballista_executor::executor::Executor;
use ballista_executor::flight_service::BallistaFlightService;
use ballista_executor::health::ExecutorHealth;
use ballista_executor::metrics::LoggingMetricsCollector;
use ballista_scheduler::cluster::BallistaCluster;
use ballista_scheduler::config::SchedulerConfig;
use ballista_scheduler::metrics::default_metrics_collector;
use ballista_scheduler::scheduler_server::SchedulerServer;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::SessionState;
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion_proto::protobuf::{LogicalPlanNode, PhysicalPlanNode};
use hearth_common::scratch::scratch_dir;
use tokio::net::TcpListener;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::server::TcpIncoming;
use tonic::transport::{Channel, Endpoint};
use tonic::{Request, Status};

use super::access::FleetAccess;
use super::cluster::client_context;
use super::secret::ClusterSecret;
use super::token::{Admitted, Presented, Principal, Service};
use crate::codec::FLEET_MESSAGE_BYTES;

fn configuration(message: impl ToString) -> DataFusionError {
    DataFusionError::Configuration(message.to_string())
}

/// Starts a Ballista scheduler and one executor with `state`'s standalone parallelism in this process, both
/// admitting only callers that prove `secret` (which `state`'s configuration presents); both plan and run
/// with `state` (its functions and codecs). Returns the client context and the scheduler's URL.
pub(crate) async fn start_standalone(state: SessionState, secret: ClusterSecret) -> Result<(SessionContext, String)> {
    let access = FleetAccess {
        secret: Some(secret),
        tls: None,
    };
    let address = serve_scheduler(&state, &access).await?;
    let url = format!("http://{address}");
    let scheduler = scheduler_client(&url, &access).await?;
    serve_executor(scheduler, &state, &access).await?;
    Ok((client_context(state, &url)?, url))
}

/// A loopback listener on a free port.
async fn loopback_listener(server: &str) -> Result<(TcpListener, SocketAddr)> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .await
        .map_err(|e| configuration(format!("the standalone {server} cannot listen on 127.0.0.1: {e}")))?;
    let address = listener
        .local_addr()
        .map_err(|e| configuration(format!("the standalone {server}'s address: {e}")))?;
    Ok((listener, address))
}

/// The check in front of both servers: a call must carry a token of the session's secret (Ballista's
/// clients carry it in their user agent), made for this machine's loopback address.
fn admit_own_process(
    server: &'static str,
    access: &FleetAccess,
) -> impl Fn(Request<()>) -> std::result::Result<Request<()>, Status> + Clone + use<> {
    let secret = access.secret.clone();
    move |request: Request<()>| {
        let Some(secret) = &secret else {
            return Ok(request);
        };
        let Some(peer) = request.remote_addr().map(|address| address.ip()) else {
            return Err(Status::unauthenticated(format!(
                "the standalone {server} admits only its own process, and this call has no peer address"
            )));
        };
        let header = |name: &str| request.metadata().get(name).and_then(|value| value.to_str().ok());
        let presented = Presented {
            authorization: header("authorization"),
            user_agent: header("user-agent"),
        };
        match secret.check(presented, peer, Service::Grpc) {
            // Its own process presents its channels' tokens, never one made for a call.
            Ok(Admitted {
                principal: Principal::Member,
                once: None,
            }) => Ok(request),
            Ok(Admitted {
                principal: Principal::Job(job),
                ..
            }) => Err(Status::permission_denied(format!(
                "the standalone {server} has no cluster-mode jobs (a token of job {job})"
            ))),
            Ok(Admitted { once: Some(_), .. }) => Err(Status::unauthenticated(format!(
                "the standalone {server} admits only its own process's channels, not a token made for a call"
            ))),
            Err(refusal) => {
                log::warn!("the standalone {server} refused a call from {peer}: {refusal}");
                Err(Status::unauthenticated(format!(
                    "the standalone {server} admits only the process that started it: {refusal}"
                )))
            }
        }
    }
}

/// Ballista's scheduler (pull-based, in memory) on a loopback port behind [`admit_own_process`]; returns its
/// address.
async fn serve_scheduler(state: &SessionState, access: &FleetAccess) -> Result<SocketAddr> {
    let config = state.config().clone();
    let codec = BallistaCodec::new(
        config.ballista_logical_extension_codec(),
        config.ballista_physical_extension_codec(),
    );
    let (listener, address) = loopback_listener("scheduler").await?;
    let planning = state.clone();
    let messages = config.ballista_grpc_client_max_message_size();
    let producer = config.clone();
    let cluster = BallistaCluster::new_memory(
        address.to_string(),
        Arc::new(move |_: SessionConfig| Ok(planning.clone())),
        Arc::new(move || producer.clone()),
    );
    let scheduler_config = SchedulerConfig {
        // Its calls to the executor (a finished job's data to remove) present the secret too.
        override_create_grpc_client_endpoint: access.endpoint_override(),
        ..SchedulerConfig::default().with_scheduler_policy(TaskSchedulingPolicy::PullStaged)
    };
    let metrics = default_metrics_collector().map_err(configuration)?;
    let mut scheduler = SchedulerServer::<LogicalPlanNode, PhysicalPlanNode>::new(
        address.to_string(),
        cluster,
        codec,
        Arc::new(scheduler_config),
        metrics,
    );
    scheduler.init().await.map_err(configuration)?;
    let grpc = SchedulerGrpcServer::new(scheduler)
        .max_decoding_message_size(messages)
        .max_encoding_message_size(messages);
    let guarded = InterceptedService::new(grpc, admit_own_process("scheduler", access));
    tokio::spawn(
        create_grpc_server(&GrpcServerConfig::default())
            .add_service(guarded)
            .serve_with_incoming(TcpIncoming::from(listener)),
    );
    Ok(address)
}

/// A client of the scheduler at `url` presenting `access`, which must answer within 30 seconds.
async fn scheduler_client(url: &str, access: &FleetAccess) -> Result<SchedulerGrpcClient<Channel>> {
    let mut endpoint = Endpoint::from_shared(url.to_string()).map_err(configuration)?;
    if let Some(present) = access.endpoint_override() {
        endpoint = present(endpoint).map_err(configuration)?;
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    let channel = loop {
        match endpoint.connect().await {
            Ok(channel) => break channel,
            Err(e) if Instant::now() >= deadline => {
                return Err(configuration(format!(
                    "the standalone scheduler at {url} did not answer: {e}"
                )));
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    };
    // Tasks carry in-memory tables: the executor's polls take messages as large as the scheduler's.
    let messages = FLEET_MESSAGE_BYTES;
    Ok(SchedulerGrpcClient::new(channel)
        .max_decoding_message_size(messages)
        .max_encoding_message_size(messages))
}

/// One executor with `state`'s standalone parallelism polling `scheduler` for tasks, its Flight server (the
/// results and shuffle files it serves) on a loopback port behind [`admit_own_process`], its work in a new
/// private temporary directory removed when it stops.
async fn serve_executor(
    scheduler: SchedulerGrpcClient<Channel>,
    state: &SessionState,
    access: &FleetAccess,
) -> Result<()> {
    let config = state.config().clone();
    let vcores = config.ballista_standalone_parallelism();
    let codec: BallistaCodec = BallistaCodec::new(
        config.ballista_logical_extension_codec(),
        config.ballista_physical_extension_codec(),
    );
    let (listener, address) = loopback_listener("executor").await?;
    let work_dir = scratch_dir("standalone")
        .map_err(|e| configuration(format!("the standalone executor's work directory: {e}")))?;
    let work_path = work_dir.path().to_string_lossy().into_owned();
    let registration = ExecutorRegistration {
        id: new_instance_id(),
        host: Some(address.ip().to_string()),
        port: u32::from(address.port()),
        // Pulling its tasks, the executor serves no task port; the scheduler's calls about jobs' data go to
        // its own guarded Flight port rather than to whatever else listens on the machine.
        grpc_port: u32::from(address.port()),
        specification: Some(ExecutorSpecification::default().with_vcores(vcores as u32).into()),
        os_info: Some(ExecutorOperatingSystemSpecification::default().into()),
        ballista_protocol_version: BALLISTA_PROTOCOL_VERSION,
    };
    let messages = config.ballista_grpc_client_max_message_size();
    let task_config = config.clone().upgrade_for_ballista();
    let runtime = state.runtime_env().clone();
    let config_producer: ConfigProducer = Arc::new(move || task_config.clone());
    let runtime_producer: RuntimeProducer = Arc::new(move |_| Ok(Arc::clone(&runtime)));
    let executor = Arc::new(Executor::with_default_execution_engine(
        registration,
        &work_path,
        runtime_producer,
        config_producer,
        Arc::new(state.into()),
        Arc::new(LoggingMetricsCollector::default()),
        vcores,
    ));
    let flight = FlightServiceServer::new(BallistaFlightService::new(work_path))
        .max_decoding_message_size(messages)
        .max_encoding_message_size(messages);
    let guarded = InterceptedService::new(flight, admit_own_process("executor", access));
    tokio::spawn(
        create_grpc_server(&GrpcServerConfig::default())
            .add_service(guarded)
            .serve_with_incoming(TcpIncoming::from(listener)),
    );
    tokio::spawn(async move {
        let _work_dir = work_dir;
        if let Err(e) = poll_loop(scheduler, executor, codec, None, None, ExecutorHealth::new()).await {
            log::warn!("the standalone executor stopped polling its scheduler: {e}");
        }
    });
    Ok(())
}
