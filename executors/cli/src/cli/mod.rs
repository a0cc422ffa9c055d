//! The `hearth` command line: its arguments (clap) and what each subcommand runs.

mod certs;
mod cluster;
mod cluster_connect;
mod connect;
mod failed;
mod fleet_record;
mod jobs;
mod output;
mod pipelines;
mod processes;
mod sql;
mod status;
mod submit;
mod tables;
mod token;

use std::error::Error;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use hearth_exec::ballista::{ClusterSecret, FleetAccess, FleetTls, Role};
use hearth_fleet::{ExecutorOptions, GpuRequest, SchedulerOptions};
use hearth_training::functions::default_extensions;

/// A subcommand's outcome: its error is printed for the user.
pub type CommandResult = Result<(), Box<dyn Error>>;

/// hearth: Spark-style dataframe ML pipelines — SQL with models, pipelines from JSON, and the fleet that runs them.
#[derive(Debug, Parser)]
#[command(name = "hearth", version, propagate_version = true)]
pub struct Cli {
    /// Where statements and pipelines run: local[N], standalone[N] or df://HOST:PORT (default: local). The
    /// fleet's commands default to the fleet `hearth cluster start` started.
    #[arg(long, global = true, env = "HEARTH_MASTER")]
    master: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run SQL — CREATE MODEL, ML.PREDICT, ML.EVALUATE and any DataFusion statement — from a file, from -e,
    /// or at an interactive prompt.
    Sql(sql::SqlArgs),
    /// Fit a pipeline defined in a JSON file on a CSV or Parquet file and save the fitted model.
    Fit {
        /// The pipeline's JSON file.
        pipeline: PathBuf,
        /// The CSV file (with a header) or Parquet file or directory to fit on.
        data: PathBuf,
        /// Where the fitted model is saved.
        model: PathBuf,
        /// Replace MODEL if it already holds something (Spark's `write().overwrite()`).
        #[arg(long)]
        overwrite: bool,
    },
    /// Apply a saved model to a CSV or Parquet file: print the first rows, or write them all with --output.
    Transform {
        /// A saved pipeline model's directory.
        model: PathBuf,
        /// The CSV file (with a header) or Parquet file or directory to transform.
        data: PathBuf,
        /// How many rows to print (without --output).
        #[arg(default_value_t = 10)]
        rows: usize,
        #[command(flatten)]
        output: pipelines::OutputArgs,
    },
    /// Fit a pipeline defined in a JSON file, save the model, and write the rows it makes of the same input
    /// (read once) with --output.
    FitTransform {
        /// The pipeline's JSON file.
        pipeline: PathBuf,
        /// The CSV file (with a header) or Parquet file or directory to fit on and transform.
        data: PathBuf,
        /// Where the fitted model is saved.
        model: PathBuf,
        /// Replace MODEL if it already holds something (Spark's `write().overwrite()`).
        #[arg(long)]
        overwrite: bool,
        #[command(flatten)]
        output: pipelines::OutputArgs,
    },
    /// Serve Spark Connect: PySpark code with `SparkSession.builder.remote("sc://localhost:15002")` runs on
    /// hearth, on --master.
    Connect(connect::ConnectArgs),
    /// Start, stop or inspect a whole fleet — a scheduler and executors — with one command.
    #[command(subcommand)]
    Cluster(cluster::ClusterCommand),
    /// Show a fleet's executors (slots, memory, GPUs, last heartbeat) and jobs.
    Status(status::StatusArgs),
    /// Run a job on a fleet: a SQL file or a driver program, here (client mode) or on the fleet (cluster mode).
    Submit(submit::SubmitArgs),
    /// List the jobs submitted to a fleet in cluster mode.
    Jobs(jobs::JobsArgs),
    /// Show, follow or kill a job submitted in cluster mode.
    #[command(subcommand)]
    Job(jobs::JobCommand),
    /// Run the fleet's scheduler.
    Scheduler {
        /// The address to listen on (port 0: any free port).
        #[arg(long, default_value_t = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 50050))]
        bind: SocketAddr,
        /// The host name or address executors and clients reach it at (default: the bind address; when
        /// that is every interface, this machine's host name).
        #[arg(long)]
        advertise: Option<String>,
        /// Where cluster-mode jobs keep their records and output (default: a new temporary directory).
        #[arg(long = "work-dir")]
        work_dir: Option<PathBuf>,
        /// Directories and URL prefixes cluster-mode jobs' statements may read and write, besides their job's
        /// folder (none: only that folder).
        #[arg(long = "data-roots", num_args = 1.., value_name = "DIR|URL")]
        data_roots: Vec<String>,
        #[command(flatten)]
        access: AccessArgs,
    },
    /// Run an executor of the fleet.
    Executor(ExecutorArgs),
}

/// `hearth executor`'s arguments.
#[derive(Debug, Args)]
struct ExecutorArgs {
    /// The scheduler, HOST:PORT.
    #[arg(long)]
    scheduler: String,
    /// Task slots (default: the cores).
    #[arg(long)]
    slots: Option<usize>,
    /// The GPUs it offers training tasks: auto (every GPU the CUDA driver lists), a number, or none.
    #[arg(long, default_value_t = GpuRequest::Auto)]
    gpus: GpuRequest,
    /// The address its ports listen on: one IPv4 address (Ballista's task server sits behind the task port on
    /// a loopback address with the same port number).
    #[arg(long, default_value_t = IpAddr::V4(Ipv4Addr::LOCALHOST))]
    bind: IpAddr,
    /// The Arrow Flight port (0: any free port).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// The gRPC port (0: any free port).
    #[arg(long = "grpc-port", default_value_t = 0)]
    grpc_port: u16,
    /// The directory for shuffle files (default: a temporary one).
    #[arg(long = "work-dir")]
    work_dir: Option<String>,
    /// Directories whose driver programs barrier tasks may run (a program's functions run in copies of it,
    /// started by the executor); without any, it runs no driver program.
    #[arg(long = "allow-programs", num_args = 1.., value_name = "DIR")]
    allow_programs: Vec<PathBuf>,
    /// Run the driver programs the fleet's drivers ship to run their barrier functions (fetched from the
    /// driver by SHA-256 over the job's authenticated link, kept beside the work directory in DIR.programs,
    /// this user's alone): any driver holding
    /// the fleet's secret or a job's key then runs its code here, as on a Spark or Ray cluster.
    #[arg(long = "run-shipped-programs")]
    run_shipped_programs: bool,
    #[command(flatten)]
    access: AccessArgs,
}

impl ExecutorArgs {
    /// The executor's options: these arguments, and libtorch's answer to which GPUs its trainers can use.
    fn options(self) -> Result<ExecutorOptions, Box<dyn Error>> {
        Ok(ExecutorOptions {
            scheduler: self.scheduler,
            slots: self.slots.unwrap_or_else(cores),
            gpus: self.gpus,
            trainer_sees_gpus: |n| Ok(hearth_torch::train::libtorch_sees_gpus(n)?),
            bind: self.bind,
            port: self.port,
            grpc_port: self.grpc_port,
            work_dir: self.work_dir,
            allow_programs: self.allow_programs,
            extensions: default_extensions(),
            run_shipped_programs: self.run_shipped_programs,
            access: self.access.access(Role::Executor)?,
        })
    }
}

/// The fleet's secret and TLS, for its scheduler and executors.
#[derive(Debug, Args)]
struct AccessArgs {
    /// A file holding the fleet's secret, readable by its owner alone (else HEARTH_SECRET_FILE or
    /// HEARTH_SECRET; without one the process refuses to start unless --insecure).
    #[arg(long = "secret-file")]
    secret_file: Option<PathBuf>,
    /// A directory holding the fleet's TLS certificates: the one `hearth cluster certs` wrote (this process
    /// reads its role's subdirectory), or one with ca.pem, cert.pem and key.pem (else HEARTH_TLS_DIR; none:
    /// plain TCP).
    #[arg(long = "tls-dir")]
    tls_dir: Option<PathBuf>,
    /// Run without a secret: anyone who can open its ports may then use the fleet (run plans as this user,
    /// read what it holds). Only where every user of the machine and network is trusted.
    #[arg(long)]
    insecure: bool,
}

impl AccessArgs {
    /// The secret, and the TLS of `role`; refused without a secret unless `--insecure`.
    fn access(&self, role: Role) -> Result<FleetAccess, Box<dyn Error>> {
        let secret = match &self.secret_file {
            Some(file) => ClusterSecret::read(file).map(Some),
            None => ClusterSecret::from_env(),
        }?;
        if secret.is_none() && !self.insecure {
            return Err(format!(
                "hearth {role} without the fleet's secret would let anyone who can reach its ports run plans as \
                 you: give --secret-file FILE (32 or more random letters and digits, mode 0600; `hearth cluster \
                 start` makes one in its state directory), HEARTH_SECRET_FILE, or --insecure where every user of \
                 the machine and network is trusted"
            )
            .into());
        }
        let tls = match &self.tls_dir {
            Some(dir) => FleetTls::read_as(dir, role).map(Some),
            None => FleetTls::from_env(role),
        }?;
        Ok(FleetAccess { secret, tls })
    }
}

/// Logs on standard error at `level`, or as `RUST_LOG` says: the fleet's processes at `info`; commands and
/// drivers at `warn` (so a job's output shows a training stage retried after a lost executor).
fn init_logging(level: &str) {
    let env = env_logger::Env::default().default_filter_or(level);
    let _ = env_logger::Builder::from_env(env).try_init();
}

/// Lets a command that prints end quietly when its reader goes away (`hearth jobs | head`), as Unix tools
/// do, rather than fail on its next line.
fn end_on_closed_pipe() {
    use nix::sys::signal::{SigHandler, Signal, signal};
    // SAFETY: restores the default action of a signal Rust's runtime ignores; no handler of ours runs.
    let _ = unsafe { signal(Signal::SIGPIPE, SigHandler::SigDfl) };
}

/// hearth's cache directory: `$HEARTH_CACHE`, else `hearth` in `$XDG_CACHE_HOME` or `~/.cache`.
pub fn cache_dir() -> Option<PathBuf> {
    std::env::var_os("HEARTH_CACHE").map(PathBuf::from).or_else(|| {
        std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))
            .map(|cache| cache.join("hearth"))
    })
}

/// The cores of this machine.
fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
}

impl Cli {
    /// Runs the subcommand.
    pub async fn run(self) -> CommandResult {
        let master = self.master;
        let local = || master.clone().unwrap_or_else(|| "local".to_string());
        let daemon = matches!(
            self.command,
            Command::Scheduler { .. } | Command::Executor(_) | Command::Connect(_)
        );
        init_logging(if daemon { "info" } else { "warn" });
        if matches!(
            self.command,
            Command::Cluster(_) | Command::Status(_) | Command::Jobs(_) | Command::Job(_)
        ) {
            end_on_closed_pipe();
        }
        // Clients of the fleet `hearth cluster start` started find its secret and TLS by themselves.
        if !daemon && let Some(dir) = fleet_record::recorded_fleet_dir(master.as_deref()) {
            ClusterSecret::use_default_file(dir.join(fleet_record::SECRET_FILE));
            FleetTls::use_default_dir(dir.join(fleet_record::TLS_DIR));
        }
        match self.command {
            Command::Sql(args) => sql::run(&local(), args).await,
            Command::Fit {
                pipeline,
                data,
                model,
                overwrite,
            } => pipelines::fit(&local(), &pipeline, &data, &model, overwrite).await,
            Command::Transform {
                model,
                data,
                rows,
                output,
            } => pipelines::transform(&local(), &model, &data, rows, &output).await,
            Command::FitTransform {
                pipeline,
                data,
                model,
                overwrite,
                output,
            } => pipelines::fit_transform(&local(), &pipeline, &data, &model, overwrite, &output).await,
            Command::Connect(args) => connect::run(&local(), args).await,
            Command::Cluster(command) => cluster::run(command).await,
            Command::Status(args) => status::run(master.as_deref(), args).await,
            Command::Submit(args) => submit::run(master.as_deref(), args).await,
            Command::Jobs(args) => jobs::list(master.as_deref(), args).await,
            Command::Job(command) => jobs::run(master.as_deref(), command).await,
            Command::Scheduler {
                bind,
                advertise,
                work_dir,
                data_roots,
                access,
            } => {
                hearth_fleet::scheduler(SchedulerOptions {
                    bind,
                    advertise,
                    work_dir,
                    data_roots,
                    access: access.access(Role::Scheduler)?,
                    extensions: default_extensions(),
                })
                .await?;
                Ok(())
            }
            Command::Executor(args) => {
                hearth_fleet::executor(args.options()?).await?;
                Ok(())
            }
        }
    }
}
