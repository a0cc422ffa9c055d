//! `hearth cluster start|stop|status`: a whole fleet with one command, as Spark's standalone scripts. `start`
//! runs a scheduler and executors — on this machine, or one per line of a hosts file through ssh — records
//! their pids, addresses and logs in a state directory, waits until every executor has registered, and
//! prints the master URL; `stop` ends exactly the processes it recorded.
//!
//! ```text
//! STATE_DIR/cluster.json        the master URL and every process: role, host, pid, program, log
//! STATE_DIR/logs/*.log          each process's output
//! STATE_DIR/executor-N/         each executor's shuffle files
//! STATE_DIR/scheduler/jobs/     cluster-mode jobs (hearth submit --deploy-mode cluster)
//! ```
//!
//! The state directory is made readable by its user alone (mode 700).

use std::error::Error;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clap::{Args, Subcommand};
use hearth_common::host::address_towards;
use hearth_exec::ballista::{
    CA_FILE, CERT_FILE, ClusterSecret, EXECUTORS_ROUTE, ExecutorResources, FleetTls, KEY_FILE, Role, SECRET_FILE_ENV,
    SchedulerRest, TLS_DIR_ENV, now_ms,
};
use hearth_fleet::{GpuRequest, gpu_shares};

use super::certs::CertsArgs;
use super::cluster_connect::{CONNECT_TOKEN_FILE, ConnectLaunch, await_connect_url, connect_url};
use super::failed::Failed;
use super::fleet_record::{
    ClusterRecord, SECRET_FILE, StateDir, TLS_DIR, fleet_access, read_record, record_file, write_record,
};
use super::processes::{Started, spawn_local, spawn_remote};
use super::status::print_executors;
use super::tables::{add_row, table};
use super::token::TokenArgs;
use super::{CommandResult, cores};

/// How long processes have to stop before they are killed.
const STOP_GRACE: Duration = Duration::from_secs(15);

/// `hearth cluster`'s subcommands.
#[derive(Debug, Subcommand)]
pub enum ClusterCommand {
    /// Start a scheduler and executors, wait until every executor has registered, print the master URL.
    Start(StartArgs),
    /// Stop the scheduler and executors `hearth cluster start` started (and the drivers of running jobs).
    Stop(StateDir),
    /// Show the processes `hearth cluster start` started, and what the fleet has.
    Status(StateDir),
    /// Make TLS certificates for a fleet: a new authority and a certificate per role — scheduler, executor, client (for --tls-dir).
    Certs(CertsArgs),
    /// Print a token of the fleet's secret for one call of its REST routes with another tool, or write it as
    /// a header into a file only you can read (--write auth; then curl -H @auth); it is admitted once, only
    /// from this machine, for 5 minutes unless --valid-for says otherwise.
    Token(TokenArgs),
}

/// `hearth cluster start`'s arguments.
#[derive(Debug, Args)]
pub struct StartArgs {
    #[command(flatten)]
    state: StateDir,
    /// Executors to start on this machine.
    #[arg(long, default_value_t = 2, conflicts_with = "hosts")]
    executors: usize,
    /// Task slots per executor (default: this machine's cores shared among its executors; on hosts, each
    /// host's cores).
    #[arg(long)]
    slots: Option<usize>,
    /// GPUs per executor: auto (this machine's GPUs shared among its executors; on hosts, each host's), a
    /// number, or none.
    #[arg(long, default_value_t = GpuRequest::Auto)]
    gpus: GpuRequest,
    /// A file of hosts, one per line (`#` comments), as Spark's conf/workers: one executor on each, started
    /// through ssh; hearth must be at the same path there.
    #[arg(long)]
    hosts: Option<PathBuf>,
    /// The scheduler's address (default: 127.0.0.1 on a free port; with --hosts, every interface).
    #[arg(long)]
    bind: Option<SocketAddr>,
    /// How long to wait for every executor to register, in seconds.
    #[arg(long, default_value_t = 60)]
    timeout: u64,
    /// The fleet's TLS certificates: the directory `hearth cluster certs` wrote (scheduler/, executor/ and
    /// client/, each with ca.pem, cert.pem and key.pem), or one with ca.pem, cert.pem and key.pem for every
    /// role. The scheduler, the executors and every client then speak TLS and prove themselves with their
    /// role's certificate; a copy is kept in the state directory. With --hosts, each host needs the
    /// executor's (or the one certificate) at the same path.
    #[arg(long = "tls-dir")]
    tls_dir: Option<PathBuf>,
    /// Directories and URL prefixes (`s3://bucket/data/`) cluster-mode jobs' statements may read and write,
    /// besides their job's folder (default: the directory this command runs in).
    #[arg(long = "data-roots", num_args = 1.., value_name = "DIR|URL")]
    data_roots: Vec<String>,
    /// Directories whose driver programs the executors' barrier tasks may run (`hearth executor
    /// --allow-programs`); without any, no driver program runs on the fleet. With --hosts, the same paths on
    /// every host.
    #[arg(long = "allow-programs", num_args = 1.., value_name = "DIR")]
    allow_programs: Vec<PathBuf>,
    /// Let the executors run the driver programs the fleet's drivers ship (`hearth executor
    /// --run-shipped-programs`): no path need be the same on every host.
    #[arg(long = "run-shipped-programs")]
    run_shipped_programs: bool,
    /// With --hosts, start without --tls-dir anyway, on a network whose every user you trust: the secret's
    /// proof, plans and training data then cross it in clear.
    #[arg(long, requires = "hosts")]
    insecure: bool,
    /// Serve Spark Connect beside the scheduler, on this address (default 127.0.0.1:15002), so PySpark's
    /// `SparkSession.builder.remote("sc://…")` runs on the fleet. Clients give the token in the state
    /// directory's `connect-token`; with --tls-dir the server speaks TLS with the scheduler's certificate.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "127.0.0.1:15002")]
    connect: Option<SocketAddr>,
}

/// `hearth cluster …`.
pub async fn run(command: ClusterCommand) -> CommandResult {
    match command {
        ClusterCommand::Start(args) => start(args).await,
        ClusterCommand::Stop(state) => stop(&state.path()?),
        ClusterCommand::Status(state) => status(&state.path()?).await,
        ClusterCommand::Certs(args) => super::certs::run(args),
        ClusterCommand::Token(args) => super::token::run(args),
    }
}

/// The hosts of a hosts file.
fn read_hosts(file: &Path) -> Result<Vec<String>, Failed> {
    let text = std::fs::read_to_string(file).map_err(|e| Failed::file(file, e))?;
    let hosts: Vec<String> = text
        .lines()
        .map(|line| line.split('#').next().unwrap_or("").trim())
        .filter(|line| !line.is_empty())
        .map(str::to_string)
        .collect();
    if hosts.is_empty() {
        return Err(Failed::new(format!(
            "{}: no hosts (one host name per line)",
            file.display()
        )));
    }
    Ok(hosts)
}

/// A host's address, as this machine resolves it.
fn resolve(host: &str) -> Result<IpAddr, Failed> {
    (host, 0)
        .to_socket_addrs()
        .map_err(|e| Failed::because(format!("host {host}"), e))?
        .map(|address| address.ip())
        .min_by_key(IpAddr::is_ipv6)
        .ok_or_else(|| Failed::new(format!("host {host}: no address")))
}

async fn start(args: StartArgs) -> CommandResult {
    refuse_open_doors(&args)?;
    let dir = args.state.path()?;
    refuse_running_fleet(&dir)?;
    let logs = dir.join("logs");
    std::fs::create_dir_all(&logs).map_err(|e| Failed::file(&logs, e))?;
    // The state holds the secret, the logs (executors' ids among them), job records and shuffle files: its
    // user's alone.
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).map_err(|e| Failed::file(&dir, e))?;
    let hosts = args.hosts.as_deref().map(read_hosts).transpose()?;
    let program = std::env::current_exe()?;
    let (bind, advertised) = scheduler_address(args.bind, hosts.as_deref())?;
    let mut scheduler_args = vec![
        "--bind".to_string(),
        bind.to_string(),
        "--advertise".to_string(),
        advertised.to_string(),
        "--work-dir".to_string(),
        dir.join("scheduler").display().to_string(),
        "--data-roots".to_string(),
    ];
    scheduler_args.extend(data_roots(&args.data_roots)?);
    // A new secret for every fleet, readable by this user alone; its processes find it through their
    // environment, never their command lines.
    let secret_file = dir.join(SECRET_FILE);
    let secret = ClusterSecret::create(&secret_file)?;
    let tls = keep_tls(args.tls_dir.as_deref(), &dir.join(TLS_DIR))?;
    let mut fleet_env = vec![(SECRET_FILE_ENV, secret_file.display().to_string())];
    fleet_env.extend(tls.iter().map(|tls| (TLS_DIR_ENV, tls.display().to_string())));
    let scheduler = spawn_local(
        &program,
        "scheduler",
        &scheduler_args,
        &fleet_env,
        &logs.join("scheduler.log"),
    )?;
    let mut launch = Launch {
        secret,
        dir: dir.clone(),
        record: ClusterRecord {
            master: String::new(),
            started_ms: now_ms(),
            scheduler,
            executors: Vec::new(),
            connect: None,
        },
    };
    if let Err(e) = launch.run(&args, hosts.as_deref(), advertised, &program).await {
        launch.abandon();
        return Err(e);
    }
    let connect_url = match args.connect {
        Some(bind) => Some(
            launch
                .connect(bind, &program, &fleet_env, tls.as_deref(), &args)
                .await
                .inspect_err(|_| launch.abandon())?,
        ),
        None => None,
    };
    let master = &launch.record.master;
    let rest = SchedulerRest::with_access(master, &fleet_access(&dir)?)?;
    let executors: Vec<ExecutorResources> = rest.get(EXECUTORS_ROUTE).await?;
    print_executors(master, &executors);
    println!("\nState and logs in {}", dir.display());
    println!("master: {master}");
    if let Some(url) = connect_url {
        print_connect(&url, &dir);
    }
    Ok(())
}

/// How PySpark reaches the fleet's Spark Connect server at `url`, its token in the state directory `dir`.
fn print_connect(url: &str, dir: &Path) {
    println!(
        "Spark Connect: {url} (the token is in {})",
        dir.join(CONNECT_TOKEN_FILE).display()
    );
}

/// Refuses what would carry the fleet's secrets or a client's token and data in clear over a network: hosts
/// without TLS, and a Spark Connect server on another interface than loopback without it, unless `--insecure`.
fn refuse_open_doors(args: &StartArgs) -> Result<(), Failed> {
    if args.hosts.is_some() && args.tls_dir.is_none() && !args.insecure {
        return Err(Failed::new(
            "--hosts without --tls-dir: the proofs of the cluster secret, the fleet's plans \
             and its data would cross the network in clear, for anyone on it to read and replay; give --tls-dir DIR (`hearth cluster certs --host HOST …` makes one), or --insecure on a network \
             whose every user you trust",
        ));
    }
    if let Some(bind) = args.connect
        && !bind.ip().is_loopback()
        && args.tls_dir.is_none()
        && !args.insecure
    {
        return Err(Failed::new(format!(
            "--connect {bind} is not a loopback address: without --tls-dir the clients' token and data would cross \
             the network in clear; give --tls-dir, or --connect 127.0.0.1:PORT"
        )));
    }
    Ok(())
}

/// Refuses to start over a fleet recorded in `dir` whose processes still run (one that no longer runs is
/// replaced, with a word).
fn refuse_running_fleet(dir: &Path) -> Result<(), Failed> {
    let Some(record) = read_record(dir)? else {
        return Ok(());
    };
    let alive: Vec<&Started> = record.processes().filter(|p| p.alive()).collect();
    if !alive.is_empty() {
        let pids: Vec<String> = alive.iter().map(|p| format!("{} {}", p.role, p.pid)).collect();
        return Err(Failed::new(format!(
            "a fleet recorded in {} is already running (master {}; {}); stop it with `hearth cluster stop` first",
            dir.display(),
            record.master,
            pids.join(", ")
        )));
    }
    println!(
        "The fleet recorded in {} no longer runs; starting a new one.",
        dir.display()
    );
    Ok(())
}

/// Where the scheduler listens (`bind`, else loopback — every interface with hosts — on a free port) and
/// the address it gives the executors: the bound one, or this machine's address towards the first host.
fn scheduler_address(bind: Option<SocketAddr>, hosts: Option<&[String]>) -> Result<(SocketAddr, IpAddr), Failed> {
    let bind = bind.unwrap_or_else(|| match hosts {
        Some(_) => SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0)),
        None => SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
    });
    let advertised = match (bind.ip().is_unspecified(), hosts) {
        (false, _) => bind.ip(),
        (true, Some(hosts)) => {
            let first = SocketAddr::new(resolve(&hosts[0])?, 9);
            address_towards(first).ok_or_else(|| Failed::new(format!("no route from this machine to {}", hosts[0])))?
        }
        (true, None) => IpAddr::V4(Ipv4Addr::LOCALHOST),
    };
    Ok((bind, advertised))
}

/// Checks the operator's TLS directory and keeps a copy of it at `kept`, a directory per role (keys readable
/// by their owner alone), where the fleet's processes and clients each find their own; with none, removes
/// what an earlier fleet kept there, so this fleet's clients speak plain TCP.
fn keep_tls(given: Option<&Path>, kept: &Path) -> Result<Option<PathBuf>, Box<dyn Error>> {
    if kept.exists() {
        std::fs::remove_dir_all(kept).map_err(|e| Failed::file(kept, e))?;
    }
    let Some(given) = given else {
        return Ok(None);
    };
    std::fs::create_dir_all(kept).map_err(|e| Failed::file(kept, e))?;
    std::fs::set_permissions(kept, std::fs::Permissions::from_mode(0o700)).map_err(|e| Failed::file(kept, e))?;
    for role in Role::ALL {
        let tls = FleetTls::read_as(given, role)?;
        let to = kept.join(role.name());
        std::fs::create_dir_all(&to).map_err(|e| Failed::file(&to, e))?;
        for name in [CA_FILE, CERT_FILE, KEY_FILE] {
            let from = tls.dir().join(name);
            let copying = format!("copying {} to {}", from.display(), to.display());
            std::fs::copy(&from, to.join(name)).map_err(|e| Failed::because(copying, e))?;
        }
        FleetTls::read_as(kept, role)?;
    }
    Ok(Some(kept.to_path_buf()))
}

/// A fleet being started, recorded in its state directory after each process starts (so `hearth cluster
/// stop` finds whatever a start interrupted left running).
struct Launch {
    secret: ClusterSecret,
    dir: PathBuf,
    record: ClusterRecord,
}

impl Launch {
    /// Adds an executor to the record.
    fn started(&mut self, executor: Started) -> Result<(), Failed> {
        self.record.executors.push(executor);
        write_record(&self.dir, &self.record)
    }

    /// Starts the fleet's Spark Connect server on `bind`, records it, and returns its URL once it listens.
    async fn connect(
        &mut self,
        bind: SocketAddr,
        program: &Path,
        env: &[(&str, String)],
        tls: Option<&Path>,
        args: &StartArgs,
    ) -> Result<String, Failed> {
        let master = self.record.master.clone();
        let server = ConnectLaunch {
            program,
            dir: &self.dir,
            master: &master,
            bind,
            env,
            tls,
            insecure: args.insecure,
        };
        let started = server.spawn()?;
        self.record.connect = Some(started.clone());
        write_record(&self.dir, &self.record)?;
        await_connect_url(&started, Duration::from_secs(args.timeout)).await
    }

    /// Waits for the scheduler's address, starts the executors, waits until all have registered; the
    /// record then holds the master URL.
    async fn run(
        &mut self,
        args: &StartArgs,
        hosts: Option<&[String]>,
        advertised: IpAddr,
        program: &Path,
    ) -> Result<(), Box<dyn Error>> {
        write_record(&self.dir, &self.record)?;
        let logs = self.dir.join("logs");
        let listening = self.scheduler_address(Duration::from_secs(30))?;
        let scheduler = SocketAddr::new(advertised, listening.port()).to_string();
        self.record.master = format!("df://{scheduler}");
        write_record(&self.dir, &self.record)?;
        let dir = self.dir.clone();
        match hosts {
            Some(hosts) => {
                for (i, host) in hosts.iter().enumerate() {
                    let work_dir = dir.join(format!("executor-{i}"));
                    let mut executor_args = executor_args(&scheduler, args, args.slots, args.gpus, &work_dir);
                    executor_args.extend(["--bind".to_string(), resolve(host)?.to_string()]);
                    if let Some(tls) = &args.tls_dir {
                        let tls = std::fs::canonicalize(tls).map_err(|e| Failed::file(tls, e))?;
                        executor_args.extend(["--tls-dir".to_string(), tls.display().to_string()]);
                    }
                    let log = logs.join(format!("executor-{i}.log"));
                    let started = spawn_remote(host, program, "executor", &executor_args, &log, &self.secret)?;
                    self.started(started)?;
                }
            }
            None => {
                if args.executors == 0 {
                    return Err("--executors must be at least 1".into());
                }
                let slots = args.slots.unwrap_or_else(|| (cores() / args.executors).max(1));
                let shares = gpu_shares(args.gpus, args.executors)?;
                for (i, share) in shares.into_iter().enumerate() {
                    let work_dir = dir.join(format!("executor-{i}"));
                    let executor_args = executor_args(&scheduler, args, Some(slots), share.request, &work_dir);
                    let log = logs.join(format!("executor-{i}.log"));
                    let mut env = share.env;
                    env.push((SECRET_FILE_ENV, dir.join(SECRET_FILE).display().to_string()));
                    if args.tls_dir.is_some() {
                        env.push((TLS_DIR_ENV, dir.join(TLS_DIR).display().to_string()));
                    }
                    self.started(spawn_local(program, "executor", &executor_args, &env, &log)?)?;
                }
            }
        }
        self.await_executors(Duration::from_secs(args.timeout)).await
    }

    /// The address the scheduler prints once it listens.
    fn scheduler_address(&self, timeout: Duration) -> Result<SocketAddr, Failed> {
        const LISTENING: &str = "hearth scheduler listening on ";
        let deadline = Instant::now() + timeout;
        loop {
            let log = std::fs::read_to_string(&self.record.scheduler.log).unwrap_or_default();
            if let Some(address) = log.lines().find_map(|line| line.strip_prefix(LISTENING)) {
                let unreadable = format!("the scheduler printed an address hearth cannot read ({address})");
                return address.trim().parse().map_err(|e| Failed::because(unreadable, e));
            }
            if !self.record.scheduler.alive() {
                return Err(Failed::new(format!(
                    "the scheduler stopped before it listened; its log ({}) ends:\n{}",
                    self.record.scheduler.log.display(),
                    self.record.scheduler.log_tail(20)
                )));
            }
            if Instant::now() >= deadline {
                return Err(Failed::new(format!("the scheduler did not listen within {timeout:?}")));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits until every executor has registered and reported its resources.
    async fn await_executors(&self, timeout: Duration) -> Result<(), Box<dyn Error>> {
        let rest = SchedulerRest::with_access(&self.record.master, &fleet_access(&self.dir)?)?;
        let deadline = Instant::now() + timeout;
        loop {
            let reported = match rest.get::<Vec<ExecutorResources>>(EXECUTORS_ROUTE).await {
                Ok(executors) => executors.iter().filter(|e| e.memory_bytes > 0).count(),
                Err(_) => 0,
            };
            if reported >= self.record.executors.len() {
                return Ok(());
            }
            if let Some(dead) = self.record.processes().find(|p| p.ssh_host.is_none() && !p.alive()) {
                return Err(format!(
                    "the {} (pid {}) stopped; its log ({}) ends:\n{}",
                    dead.role,
                    dead.pid,
                    dead.log.display(),
                    dead.log_tail(20)
                )
                .into());
            }
            if Instant::now() >= deadline {
                let executors: Vec<String> = self
                    .record
                    .executors
                    .iter()
                    .map(|e| {
                        format!(
                            "the executor on {} (pid {}) {}; its log ({}) ends:\n{}",
                            e.ssh_host.as_deref().unwrap_or("this machine"),
                            e.pid,
                            if e.alive() { "runs" } else { "stopped" },
                            e.log.display(),
                            e.log_tail(10)
                        )
                    })
                    .collect();
                return Err(format!(
                    "{reported} of {} executors registered within {timeout:?}:\n{}",
                    self.record.executors.len(),
                    executors.join("\n")
                )
                .into());
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Stops everything started (a start that failed) and forgets the fleet, unless something would not
    /// stop: its record then stays for `hearth cluster stop`.
    fn abandon(&self) {
        let mut stopped = true;
        for process in self
            .record
            .connect
            .iter()
            .chain(&self.record.executors)
            .chain(std::iter::once(&self.record.scheduler))
        {
            if let Err(e) = process.stop(STOP_GRACE) {
                eprintln!("warning: {e}");
                stopped = false;
            }
        }
        if stopped {
            let _ = std::fs::remove_file(record_file(&self.dir));
            let _ = std::fs::remove_file(self.dir.join(CONNECT_TOKEN_FILE));
        }
    }
}

/// The fleet's data roots: `given` with directories made absolute, or this directory when none are given.
fn data_roots(given: &[String]) -> Result<Vec<String>, Failed> {
    if given.is_empty() {
        let here = std::env::current_dir().map_err(|e| Failed::because("this directory", e))?;
        return Ok(vec![here.display().to_string()]);
    }
    Ok(given
        .iter()
        .map(|root| match root.contains("://") {
            true => root.clone(),
            false => std::path::absolute(root).map_or_else(|_| root.clone(), |dir| dir.display().to_string()),
        })
        .collect())
}

/// `hearth executor`'s arguments for one executor of this fleet (`start` says which programs it may run).
fn executor_args(
    scheduler: &str,
    start: &StartArgs,
    slots: Option<usize>,
    gpus: GpuRequest,
    work_dir: &Path,
) -> Vec<String> {
    let mut args = vec![
        "--scheduler".to_string(),
        scheduler.to_string(),
        "--gpus".to_string(),
        gpus.to_string(),
        "--work-dir".to_string(),
        work_dir.display().to_string(),
    ];
    if let Some(slots) = slots {
        args.extend(["--slots".to_string(), slots.to_string()]);
    }
    if start.run_shipped_programs {
        args.push("--run-shipped-programs".to_string());
    }
    if !start.allow_programs.is_empty() {
        args.push("--allow-programs".to_string());
        args.extend(start.allow_programs.iter().map(|dir| {
            let absolute = std::path::absolute(dir).unwrap_or_else(|_| dir.clone());
            absolute.display().to_string()
        }));
    }
    args
}

fn stop(dir: &Path) -> CommandResult {
    let record = read_record(dir)?.ok_or_else(|| format!("no fleet recorded in {}", dir.display()))?;
    let mut killed = Vec::new();
    let mut failed = Vec::new();
    // The Spark Connect server first, so no client starts a job on a fleet going away.
    if let Some(connect) = &record.connect {
        match connect.stop(STOP_GRACE) {
            Ok(true) => killed.push(format!("Spark Connect server {}", connect.pid)),
            Ok(false) => {}
            Err(e) => failed.push(e.to_string()),
        }
    }
    // The scheduler next: it ends the drivers of running jobs, whose records then say the scheduler
    // stopped them, before their executors go.
    match record.scheduler.stop(STOP_GRACE) {
        Ok(true) => killed.push(format!("scheduler {}", record.scheduler.pid)),
        Ok(false) => {}
        Err(e) => failed.push(e.to_string()),
    }
    std::thread::scope(|scope| {
        let stopping: Vec<_> = record
            .executors
            .iter()
            .map(|executor| scope.spawn(move || (executor, executor.stop(STOP_GRACE))))
            .collect();
        for handle in stopping {
            if let Ok((executor, outcome)) = handle.join() {
                match outcome {
                    Ok(true) => killed.push(format!("executor {}", executor.pid)),
                    Ok(false) => {}
                    Err(e) => failed.push(e.to_string()),
                }
            }
        }
    });
    if !failed.is_empty() {
        return Err(format!(
            "some of the fleet could not be stopped; its record stays in {} for another `hearth cluster stop`:\n  {}",
            dir.display(),
            failed.join("\n  ")
        )
        .into());
    }
    std::fs::remove_file(record_file(dir)).map_err(|e| Failed::file(&record_file(dir), e))?;
    // The Spark Connect server's token admits nobody once it has stopped: it goes with the record.
    let _ = std::fs::remove_file(dir.join(CONNECT_TOKEN_FILE));
    let processes = match &record.connect {
        Some(server) => format!(
            "the scheduler (pid {}), {} executors and the Spark Connect server (pid {})",
            record.scheduler.pid,
            record.executors.len(),
            server.pid
        ),
        None => format!(
            "the scheduler (pid {}) and {} executors",
            record.scheduler.pid,
            record.executors.len()
        ),
    };
    println!("Stopped the fleet {}: {processes}", record.master);
    if !killed.is_empty() {
        println!("Killed after {STOP_GRACE:?} without stopping: {}", killed.join(", "));
    }
    Ok(())
}

async fn status(dir: &Path) -> CommandResult {
    let record = read_record(dir)?.ok_or_else(|| format!("no fleet recorded in {}", dir.display()))?;
    println!("Fleet {} started from {}", record.master, dir.display());
    let mut rows = table(&["process", "host", "pid", "state", "log"]);
    for process in record.processes() {
        add_row(
            &mut rows,
            &[
                process.role.clone(),
                process.ssh_host.clone().unwrap_or_else(|| "this machine".to_string()),
                process.pid.to_string(),
                if process.alive() { "running" } else { "stopped" }.to_string(),
                process.log.display().to_string(),
            ],
        );
    }
    rows.printstd();
    if let Some(url) = record
        .connect
        .as_ref()
        .filter(|c| c.alive())
        .and_then(|c| connect_url(&c.log))
    {
        print_connect(&url, dir);
    }
    if record.scheduler.alive() {
        println!();
        let executors: Vec<ExecutorResources> = SchedulerRest::with_access(&record.master, &fleet_access(dir)?)?
            .get(EXECUTORS_ROUTE)
            .await?;
        print_executors(&record.master, &executors);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hosts_file_skips_comments_and_blank_lines() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("workers");
        std::fs::write(&file, "# workers\nnode-1\n\n  node-2  # the big one\n").unwrap();
        assert_eq!(read_hosts(&file).unwrap(), ["node-1", "node-2"]);
        std::fs::write(&file, "# nobody\n").unwrap();
        assert!(
            read_hosts(&file)
                .unwrap_err()
                .to_string()
                .ends_with("no hosts (one host name per line)")
        );
    }
}
