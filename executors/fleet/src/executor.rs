//! `hearth executor`: a Ballista executor with hearth's functions and codec, which offers its barrier tasks
//! the GPUs it was given and reports its resources (slots, memory, GPUs) to the scheduler every 5 seconds.

use std::net::{IpAddr, SocketAddr, TcpListener};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use ballista_core::ConfigProducer;
use ballista_core::extension::SessionConfigExt;
use ballista_core::registry::BallistaFunctionRegistry;
use ballista_executor::executor_process::{ExecutorProcessConfig, start_executor_process};
use ballista_executor::executor_server::TERMINATING;
use datafusion::prelude::SessionConfig;
use hearth_engine::ballista::{EXECUTORS_ROUTE, ExecutorResources, FleetAccess, FleetTls, SchedulerRest, now_ms};
use hearth_engine::barrier::{libtorch_sees_gpus, offer_gpus};
use hearth_engine::codec::{FLEET_MESSAGE_BYTES, HearthLogicalCodec, HearthPhysicalCodec};
use hearth_engine::host::host_name;
use hearth_engine::session::hearth_state;

use super::flight::guarded_flight_server;
use super::resources::{GpuRequest, choose_gpus, detect_gpus, host_memory, usable_gpus};
use super::stopped;
use super::tls::{behind_relays, relay};
use crate::error::{FleetError, Result};

/// How often an executor tells the scheduler it is alive, and what it offers.
const HEARTBEAT: Duration = Duration::from_secs(5);

/// How many times an executor picks free ports when the ones it picked were taken before it listened.
const BIND_ATTEMPTS: usize = 3;

/// What `hearth executor` is told.
#[derive(Clone, Debug)]
pub struct ExecutorOptions {
    /// The scheduler's `host:port`.
    pub scheduler: String,
    /// Tasks it runs at once.
    pub slots: usize,
    /// The GPUs it offers.
    pub gpus: GpuRequest,
    /// The address its data (Flight) and task (gRPC) services listen on.
    pub bind: IpAddr,
    /// The Flight port (0: a free one).
    pub port: u16,
    /// The gRPC port (0: a free one).
    pub grpc_port: u16,
    /// Where shuffle files go (default: a temporary directory).
    pub work_dir: Option<String>,
    /// The fleet's secret, presented to the scheduler, and its TLS.
    pub access: FleetAccess,
}

/// A free port on `host`, for Ballista services that must know their port before they listen.
fn free_port(host: IpAddr) -> std::io::Result<u16> {
    Ok(TcpListener::bind((host, 0))?.local_addr()?.port())
}

/// `hearth executor --scheduler HOST:PORT --slots N --gpus auto|N|none`.
// Over 80 lines: the fleet's start-up, to be cut into steps with authentication on every port.
#[allow(clippy::too_many_lines)]
pub async fn executor(options: ExecutorOptions) -> Result<()> {
    let (scheduler_host, scheduler_port) = options
        .scheduler
        .rsplit_once(':')
        .and_then(|(host, port)| Some((host.to_string(), port.parse::<u16>().ok()?)))
        .ok_or_else(|| FleetError::option("--scheduler", format!("must be HOST:PORT, got {:?}", options.scheduler)))?;
    if options.slots == 0 {
        return Err(FleetError::option("--slots", "must be at least 1"));
    }
    let chosen = choose_gpus(options.gpus, detect_gpus())?;
    let gpus = usable_gpus(options.gpus, chosen, libtorch_sees_gpus)?;
    offer_gpus(gpus.iter().map(|gpu| gpu.index).collect());
    let reached_at = match options.bind.is_unspecified() {
        true => host_name(),
        false => options.bind.to_string(),
    };
    // With TLS, Ballista's servers listen on a loopback address, behind TLS relays on the one advertised.
    let tls = (options.access.tls.as_ref().map(FleetTls::server_config).transpose()).map_err(FleetError::tls)?;
    let ballista_bind = match tls {
        Some(_) => behind_relays(options.bind)?,
        None => options.bind,
    };
    let state = hearth_state(SessionConfig::new_with_ballista());
    let mut reporting = None;
    let mut relays: Vec<tokio::task::JoinHandle<()>> = Vec::new();
    let mut executor_id = None;
    // Ballista's executor stops by itself, and returns as if asked to, when a server of its fails to listen.
    let asked_to_stop = Arc::new(AtomicBool::new(false));
    let watch = Arc::clone(&asked_to_stop);
    tokio::spawn(async move {
        stopped().await;
        watch.store(true, Ordering::Release);
    });
    for attempt in 1..=BIND_ATTEMPTS {
        // A free port is found by binding and letting go: another process may take it before Ballista binds
        // it again, so a port taken in between is picked afresh.
        let port = match options.port {
            0 => free_port(options.bind).map_err(|e| FleetError::listen(options.bind, e))?,
            port => port,
        };
        let grpc_port = match options.grpc_port {
            0 => free_port(options.bind).map_err(|e| FleetError::listen(options.bind, e))?,
            port => port,
        };
        relays.drain(..).for_each(|relay| relay.abort());
        if let Some(tls) = &tls {
            match start_relays(options.bind, ballista_bind, [port, grpc_port], tls).await {
                Ok(started) => relays = started,
                Err(e) if options.port == 0 || options.grpc_port == 0 => {
                    log::warn!("a port picked for this executor was taken before it listened ({e}); picking others");
                    continue;
                }
                Err(e) => return Err(e),
            }
        }
        let mut config = ExecutorProcessConfig {
            bind_host: ballista_bind.to_string(),
            external_host: Some(reached_at.clone()),
            port,
            grpc_port,
            scheduler_host: scheduler_host.clone(),
            scheduler_port,
            vcores: options.slots,
            work_dir: options.work_dir.clone(),
            override_function_registry: Some(Arc::new(BallistaFunctionRegistry::from(&state))),
            override_physical_codec: Some(Arc::new(HearthPhysicalCodec::default())),
            override_logical_codec: Some(Arc::new(HearthLogicalCodec::default())),
            executor_heartbeat_interval_seconds: HEARTBEAT.as_secs(),
            grpc_max_decoding_message_size: FLEET_MESSAGE_BYTES as u32,
            grpc_max_encoding_message_size: FLEET_MESSAGE_BYTES as u32,
            // The secret goes with its calls to the scheduler and, through its tasks' sessions, to its peers'
            // Flight servers (shuffle reads), over TLS when the fleet has it; its own Flight server asks for it.
            override_create_grpc_client_endpoint: options.access.endpoint_override(),
            override_config_producer: task_sessions(&options.access),
            override_arrow_flight_service: (options.access.secret.clone())
                .map(|secret| guarded_flight_server(secret, FLEET_MESSAGE_BYTES)),
            ..ExecutorProcessConfig::default()
        };
        let id = executor_id.get_or_insert_with(|| config.executor_id.clone()).clone();
        config.executor_id = id.clone();
        println!(
            "hearth executor {id} with {} slots and {} GPUs on {}:{port} (tasks on {grpc_port}), scheduler {}",
            options.slots,
            gpus.len(),
            options.bind,
            options.scheduler
        );
        if reporting.is_none() {
            let resources = ExecutorResources {
                executor_id: id,
                host: reached_at.clone(),
                slots: options.slots,
                free_slots: None,
                memory_bytes: host_memory(),
                gpus: gpus.clone(),
                busy_gpus: 0,
                last_seen_ms: now_ms(),
            };
            let rest = SchedulerRest::with_access(&options.scheduler, &options.access)?;
            reporting = Some(tokio::spawn(report(rest, resources)));
        }
        let served = start_executor_process(Arc::new(config)).await;
        let picked = options.port == 0 || options.grpc_port == 0;
        // A signal reaches Ballista's own watcher and this process's at once: give this one a moment.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let stopped_itself = served.is_ok() && !asked_to_stop.load(Ordering::Acquire);
        match served {
            Err(e) if picked && attempt < BIND_ATTEMPTS && e.to_string().to_ascii_lowercase().contains("in use") => {
                log::warn!("a port picked for this executor was taken before it listened ({e}); picking others");
            }
            Ok(()) if stopped_itself && picked && attempt < BIND_ATTEMPTS => {
                // The scheduler was told this executor stopped: it starts again under a new id.
                log::warn!(
                    "the executor's services stopped (a port picked for it taken before it listened?); starting \
                     it again on other ports"
                );
                TERMINATING.store(false, Ordering::Release);
                executor_id = None;
                if let Some(reporting) = reporting.take() {
                    reporting.abort();
                }
            }
            Ok(()) if stopped_itself => {
                return Err(FleetError::Stopped(
                    "the executor's services stopped by themselves: its log says why".into(),
                ));
            }
            served => {
                if let Some(reporting) = reporting {
                    reporting.abort();
                }
                relays.drain(..).for_each(|relay| relay.abort());
                served.map_err(|source| FleetError::Ballista {
                    part: "executor",
                    source,
                })?;
                return Ok(());
            }
        }
    }
    Err(FleetError::Stopped(format!(
        "no free ports to listen on: the ports picked were taken {BIND_ATTEMPTS} times"
    )))
}

/// How the sessions of this executor's tasks reach the fleet (none: Ballista's default).
fn task_sessions(access: &FleetAccess) -> Option<ConfigProducer> {
    if access.secret.is_none() && access.tls.is_none() {
        return None;
    }
    let access = access.clone();
    Some(Arc::new(move || access.present_in(SessionConfig::new_with_ballista())))
}

/// TLS relays on `advertised` for Ballista's servers at `ballista` on the same `ports`.
async fn start_relays(
    advertised: IpAddr,
    ballista: IpAddr,
    ports: [u16; 2],
    tls: &Arc<rustls::ServerConfig>,
) -> Result<Vec<tokio::task::JoinHandle<()>>> {
    let mut relays = Vec::new();
    for port in ports {
        let listener = match tokio::net::TcpListener::bind((advertised, port)).await {
            Ok(listener) => listener,
            Err(e) => {
                relays.iter().for_each(tokio::task::JoinHandle::abort);
                return Err(FleetError::listen(SocketAddr::new(advertised, port), e));
            }
        };
        let inner = SocketAddr::new(ballista, port);
        let tls = Arc::clone(tls);
        relays.push(tokio::spawn(async move {
            if let Err(e) = relay(listener, inner, tls).await {
                log::error!("the TLS relay for {inner} stopped: {e}");
            }
        }));
    }
    Ok(relays)
}

/// Tells the scheduler what this executor offers, now and every [`HEARTBEAT`], for as long as it runs.
async fn report(scheduler: SchedulerRest, resources: ExecutorResources) {
    let mut unreported = false;
    loop {
        match scheduler.post::<_, ()>(EXECUTORS_ROUTE, &resources).await {
            Ok(()) if unreported => {
                log::info!("resources reported to the scheduler again");
                unreported = false;
            }
            Ok(()) => {}
            Err(e) if !unreported => {
                log::warn!("cannot report resources to the scheduler (retrying every {HEARTBEAT:?}): {e}");
                unreported = true;
            }
            Err(_) => {}
        }
        tokio::time::sleep(HEARTBEAT).await;
    }
}
