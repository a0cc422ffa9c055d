//! `hearth executor`: a Ballista executor with hearth's functions and codec, which offers its barrier tasks
//! the GPUs it was given and reports its resources (slots, memory, GPUs) to the scheduler every 5 seconds.

use std::net::{IpAddr, SocketAddr};
use std::os::unix::fs::DirBuilderExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use ballista_core::ConfigProducer;
use ballista_core::error::Result as BallistaResult;
use ballista_core::extension::SessionConfigExt;
use ballista_core::registry::BallistaFunctionRegistry;
use ballista_executor::executor_process::{ExecutorProcessConfig, start_executor_process};
use ballista_executor::executor_server::TERMINATING;
use datafusion::prelude::SessionConfig;
use hearth_common::host::host_name;
use hearth_common::scratch::scratch_dir;
use hearth_exec::ballista::GpuInfo;
use hearth_exec::ballista::{
    ClusterSecret, EXECUTORS_ROUTE, ExecutorResources, FleetAccess, FleetPort, FleetTls, SchedulerRest, now_ms,
};
use hearth_exec::barrier::program::allow_programs;
use hearth_exec::barrier::shipped::run_shipped_programs;
use hearth_exec::barrier::{detect_gpus, offer_gpus};
use hearth_exec::codec::{FLEET_MESSAGE_BYTES, HearthLogicalCodec, HearthPhysicalCodec};
use hearth_exec::error::Cause;
use hearth_exec::extension::Extensions;
use hearth_exec::session::hearth_state;

use super::flight::flight_front;
use super::front::{Fronts, inner_host, task_front};
use super::launch::LaunchToken;
use super::limits::raise_open_files_limit;
use super::ownership::JobOwners;
use super::private_dir::own_private_dir;
use super::resources::{GpuRequest, choose_gpus, host_memory, usable_gpus};
use super::stopped;
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
    /// Whether the trainer its tasks run can use CUDA devices `0..n`, or why not (the `hearth` program passes
    /// libtorch's answer): an executor never offers a GPU its trainers would not train on.
    pub trainer_sees_gpus: fn(usize) -> std::result::Result<(), Cause>,
    /// The address its data (Flight) and task (gRPC) services listen on.
    pub bind: IpAddr,
    /// The Flight port (0: a free one).
    pub port: u16,
    /// The gRPC port (0: a free one).
    pub grpc_port: u16,
    /// Where shuffle files go (default: a temporary directory).
    pub work_dir: Option<String>,
    /// The directories whose driver programs its barrier tasks may run (none: no driver program runs).
    pub allow_programs: Vec<PathBuf>,
    /// Whether its barrier tasks run the driver programs their drivers ship (fetched, kept by hash in the
    /// work directory).
    pub run_shipped_programs: bool,
    /// The fleet's secret, presented to the scheduler, and its TLS.
    pub access: FleetAccess,
    /// What its tasks' contexts have: the functions, barrier functions and codecs plans may name (the
    /// `hearth` program gives preprocessing's and training's).
    pub extensions: Extensions,
}

/// `hearth executor --scheduler HOST:PORT --slots N --gpus auto|N|none`.
pub async fn executor(options: ExecutorOptions) -> Result<()> {
    raise_open_files_limit();
    let scheduler = scheduler_address(&options.scheduler)?;
    if options.slots == 0 {
        return Err(FleetError::option("--slots", "must be at least 1"));
    }
    let chosen = choose_gpus(options.gpus, detect_gpus())?;
    let gpus = usable_gpus(options.gpus, chosen, options.trainer_sees_gpus)?;
    offer_gpus(gpus.iter().map(|gpu| gpu.index).collect());
    allow_programs(options.allow_programs.clone())?;
    // Its tasks derive their stages' job secrets from the secret it was started with.
    if let Some(secret) = &options.access.secret {
        ClusterSecret::use_in_process(secret.clone());
    }
    let start = Start {
        reached_at: match options.bind.is_unspecified() {
            true => host_name(),
            false => options.bind.to_string(),
        },
        tls: options.access.tls.as_ref().map(FrontTls::of).transpose()?,
        inner: inner_host(options.bind)?,
        registry: Arc::new(BallistaFunctionRegistry::from(&hearth_state(
            SessionConfig::new_with_ballista(),
            &options.extensions,
        ))),
        work_dir: WorkDir::of(options.work_dir.as_deref())?,
        token: LaunchToken::generate(),
        scheduler,
        options,
    };
    if start.options.run_shipped_programs {
        run_shipped_programs(start.work_dir.programs()?)?;
    }
    // Ballista's executor stops by itself, and returns as if asked to, when a server of its fails to listen.
    let asked_to_stop = Arc::new(AtomicBool::new(false));
    let watch = Arc::clone(&asked_to_stop);
    tokio::spawn(async move {
        stopped().await;
        watch.store(true, Ordering::Release);
    });
    let picked = start.options.port == 0 || start.options.grpc_port == 0;
    let mut executor_id = None;
    for attempt in 1..=BIND_ATTEMPTS {
        let served = start.run(&mut executor_id, &gpus).await?;
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
            }
            Ok(()) if stopped_itself => {
                return Err(FleetError::Stopped(
                    "the executor's services stopped by themselves: its log says why".into(),
                ));
            }
            served => {
                return served.map_err(|source| FleetError::Ballista {
                    part: "executor",
                    source,
                });
            }
        }
    }
    Err(FleetError::Stopped(format!(
        "no free ports to listen on: the ports picked were taken {BIND_ATTEMPTS} times"
    )))
}

/// The scheduler's host and port from `--scheduler HOST:PORT`.
fn scheduler_address(scheduler: &str) -> Result<(String, u16)> {
    scheduler
        .rsplit_once(':')
        .and_then(|(host, port)| Some((host.to_string(), port.parse::<u16>().ok()?)))
        .ok_or_else(|| FleetError::option("--scheduler", format!("must be HOST:PORT, got {scheduler:?}")))
}

/// What every start of the executor's services shares.
struct Start {
    options: ExecutorOptions,
    /// The scheduler's host and port.
    scheduler: (String, u16),
    /// The host the executor is reached at.
    reached_at: String,
    /// The TLS its fronts speak.
    tls: Option<FrontTls>,
    /// Where Ballista's task server listens, behind the task port's front.
    inner: IpAddr,
    /// hearth's SQL functions, for its tasks' plans.
    registry: Arc<BallistaFunctionRegistry>,
    /// Where shuffle files and spills go.
    work_dir: WorkDir,
    /// What the task port stamps the launches it lets through with.
    token: LaunchToken,
}

/// What an executor's two ports speak TLS with: the task port admits the scheduler's certificate, the Flight
/// port executors' and clients'.
#[derive(Clone)]
struct FrontTls {
    tasks: Arc<rustls::ServerConfig>,
    flight: Arc<rustls::ServerConfig>,
}

impl FrontTls {
    fn of(tls: &FleetTls) -> Result<Self> {
        let config = |port| tls.server_config(port).map_err(FleetError::tls);
        Ok(Self {
            tasks: config(FleetPort::ExecutorTasks)?,
            flight: config(FleetPort::ExecutorFlight)?,
        })
    }
}

/// The executor's work directory: the one it was given, or `work` in a new temporary one removed when it stops.
/// Shipped programs are kept beside it, not in it: Ballista removes any folder of its work directory a
/// `RemoveJobData` names, and the task server behind the front answers that call to anyone on the host.
enum WorkDir {
    Given(PathBuf),
    Temporary(tempfile::TempDir),
}

/// The work folder's name in a temporary one.
const TEMPORARY_WORK: &str = "work";

impl WorkDir {
    /// The directory `given` (made mode 700 when missing; refused when another user can write it or it is not
    /// this user's), else a new temporary one (mode 700): shuffle files, spilled rows and shipped programs
    /// live there.
    fn of(given: Option<&str>) -> Result<Self> {
        match given {
            Some(dir) => {
                let dir = PathBuf::from(dir);
                own_private_dir(&dir, "the work directory")?;
                Ok(Self::Given(dir))
            }
            None => {
                let unmade = |e: std::io::Error| {
                    FleetError::Stopped(format!("cannot make a work directory for the executor: {e}"))
                };
                let dir = scratch_dir("executor").map_err(unmade)?;
                let work = dir.path().join(TEMPORARY_WORK);
                std::fs::DirBuilder::new().mode(0o700).create(work).map_err(unmade)?;
                Ok(Self::Temporary(dir))
            }
        }
    }

    /// Ballista's work directory.
    fn path(&self) -> PathBuf {
        match self {
            Self::Given(dir) => dir.clone(),
            Self::Temporary(dir) => dir.path().join(TEMPORARY_WORK),
        }
    }

    /// Where shipped programs are kept, beside the work directory: `DIR.programs` beside a given `DIR`,
    /// `programs` in a temporary one.
    fn programs(&self) -> Result<PathBuf> {
        match self {
            Self::Given(dir) => match dir.file_name() {
                Some(name) => Ok(dir.with_file_name(format!("{}.programs", name.to_string_lossy()))),
                None => Err(FleetError::Stopped(format!(
                    "the work directory {} has no name to keep shipped programs beside",
                    dir.display()
                ))),
            },
            Self::Temporary(dir) => Ok(dir.path().join("programs")),
        }
    }
}

impl Start {
    /// One start of Ballista's executor behind new fronts, under `executor_id` (a new one when none), until
    /// it stops; what Ballista answered.
    async fn run(&self, executor_id: &mut Option<String>, gpus: &[GpuInfo]) -> Result<BallistaResult<()>> {
        let options = &self.options;
        let fronts = Fronts::bind(options.bind, options.port, options.grpc_port).await?;
        let config = self.ballista_config(&fronts, executor_id);
        println!(
            "hearth executor {} with {} slots and {} GPUs on {}:{} (tasks on {}), scheduler {}",
            config.executor_id,
            options.slots,
            gpus.len(),
            options.bind,
            config.port,
            config.grpc_port,
            options.scheduler
        );
        let reporting = tokio::spawn(report(self.rest()?, self.resources(&config.executor_id, gpus)));
        let (flight, tasks) = fronts.into_listeners();
        let secret = &options.access.secret;
        let inner = SocketAddr::new(self.inner, config.grpc_port);
        let (tasks_tls, flight_tls) = self.tls.clone().map(|tls| (tls.tasks, tls.flight)).unzip();
        let owners = JobOwners::default();
        let task_front = task_front(
            tasks,
            tasks_tls,
            secret.clone(),
            inner,
            (self.token.clone(), owners.clone()),
        );
        let flight = flight_front(flight, (flight_tls, secret.clone()), owners, FLEET_MESSAGE_BYTES);
        let config = ExecutorProcessConfig {
            override_arrow_flight_service: Some(flight),
            ..config
        };
        let served = start_executor_process(Arc::new(config)).await;
        // A signal reaches Ballista's own watcher and this process's at once: give this one a moment.
        tokio::time::sleep(Duration::from_millis(100)).await;
        reporting.abort();
        task_front.abort();
        Ok(served)
    }

    /// Ballista's executor for the advertised ports of `fronts`, under `executor_id` (a new one when none).
    fn ballista_config(&self, fronts: &Fronts, executor_id: &mut Option<String>) -> ExecutorProcessConfig {
        let options = &self.options;
        let mut config = ExecutorProcessConfig {
            bind_host: self.inner.to_string(),
            external_host: Some(self.reached_at.clone()),
            port: fronts.flight_port(),
            grpc_port: fronts.task_port(),
            scheduler_host: self.scheduler.0.clone(),
            scheduler_port: self.scheduler.1,
            vcores: options.slots,
            work_dir: Some(self.work_dir.path().display().to_string()),
            override_function_registry: Some(Arc::clone(&self.registry)),
            override_physical_codec: Some(Arc::new(HearthPhysicalCodec::new(&options.extensions))),
            override_logical_codec: Some(Arc::new(HearthLogicalCodec::new(&options.extensions))),
            executor_heartbeat_interval_seconds: HEARTBEAT.as_secs(),
            grpc_max_decoding_message_size: FLEET_MESSAGE_BYTES as u32,
            grpc_max_encoding_message_size: FLEET_MESSAGE_BYTES as u32,
            // The secret goes with its calls to the scheduler and, through its tasks' sessions, to its peers'
            // Flight servers (shuffle reads), over TLS when the fleet has it.
            override_create_grpc_client_endpoint: options.access.endpoint_override(),
            override_config_producer: Some(task_sessions(&options.access)),
            // Tasks launched other than through the task port are refused (see `launch`).
            override_runtime_producer: Some(self.token.runtime_producer(self.work_dir.path())),
            ..ExecutorProcessConfig::default()
        };
        config.executor_id = executor_id.get_or_insert_with(|| config.executor_id.clone()).clone();
        config
    }

    /// What the executor offers, as it reports it to the scheduler.
    fn resources(&self, executor_id: &str, gpus: &[GpuInfo]) -> ExecutorResources {
        ExecutorResources {
            executor_id: executor_id.to_string(),
            host: self.reached_at.clone(),
            slots: self.options.slots,
            free_slots: None,
            memory_bytes: host_memory(),
            gpus: gpus.to_vec(),
            busy_gpus: 0,
            last_seen_ms: now_ms(),
            certificate_expires_at: self.options.access.tls.as_ref().map(|tls| tls.certificate().expires_at),
        }
    }

    /// The scheduler's REST routes, reached with the fleet's access.
    fn rest(&self) -> Result<SchedulerRest> {
        Ok(SchedulerRest::with_access(
            &self.options.scheduler,
            &self.options.access,
        )?)
    }
}

/// The sessions of this executor's tasks: reaching the fleet with `access`, with room for the task port's stamp.
fn task_sessions(access: &FleetAccess) -> ConfigProducer {
    let access = access.clone();
    Arc::new(move || LaunchToken::task_config(access.present_in(SessionConfig::new_with_ballista())))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_programs_are_kept_beside_ballistas_work_directory_not_in_it() {
        let parent = tempfile::tempdir().unwrap();
        let given = WorkDir::of(Some(parent.path().join("executor-0").to_str().unwrap())).unwrap();
        assert_eq!(given.programs().unwrap(), parent.path().join("executor-0.programs"));
        let temporary = WorkDir::of(None).unwrap();
        let (work, programs) = (temporary.path(), temporary.programs().unwrap());
        assert!(work.is_dir() && !programs.starts_with(&work), "{work:?} {programs:?}");
    }
}
