//! The `hearth` command line: its arguments (clap) and what each subcommand runs.

mod output;
mod pipelines;
mod sql;

use std::error::Error;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

pub use output::Format;

use crate::fleet::{self, ExecutorOptions};

/// A subcommand's outcome: its error is printed for the user.
pub type CommandResult = Result<(), Box<dyn Error>>;

/// hearth: Spark-style dataframe ML pipelines — SQL with models, pipelines from JSON, and the fleet that runs them.
#[derive(Debug, Parser)]
#[command(name = "hearth", version, propagate_version = true)]
pub struct Cli {
    /// Where statements and pipelines run: local[N], standalone[N] or df://HOST:PORT.
    #[arg(long, global = true, env = "HEARTH_MASTER", default_value = "local")]
    master: String,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run SQL — CREATE MODEL, ML.PREDICT, ML.EVALUATE and any DataFusion statement — from a file, from -e,
    /// or at an interactive prompt.
    Sql(SqlArgs),
    /// Fit a pipeline defined in a JSON file on a CSV file and save the fitted model.
    Fit {
        /// The pipeline's JSON file.
        pipeline: PathBuf,
        /// The CSV file (with a header) to fit on.
        data: PathBuf,
        /// Where the fitted model is saved.
        model: PathBuf,
    },
    /// Print the first rows a saved model produces from a CSV file.
    Transform {
        /// A saved pipeline model's directory.
        model: PathBuf,
        /// The CSV file (with a header) to transform.
        data: PathBuf,
        /// How many rows to print.
        #[arg(default_value_t = 10)]
        rows: usize,
    },
    /// Run the fleet's scheduler.
    Scheduler {
        /// The address to listen on (port 0: any free port).
        #[arg(long, default_value_t = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 50050))]
        bind: SocketAddr,
    },
    /// Run an executor of the fleet.
    Executor(ExecutorArgs),
}

/// `hearth sql`'s arguments.
#[derive(Debug, Args)]
pub struct SqlArgs {
    /// A file of statements separated by `;` (`-` reads standard input). Without a file or -e, a prompt on a
    /// terminal, standard input otherwise.
    file: Option<PathBuf>,
    /// Statements to run instead of a file.
    #[arg(short = 'e', long = "execute", conflicts_with = "file")]
    execute: Option<String>,
    /// The model catalog's directory.
    #[arg(long, env = "HEARTH_MODELS", default_value = "models")]
    models: PathBuf,
    /// How results print.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
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
    /// The address its servers listen on.
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
}

/// The fleet's processes log at `info` (or as `RUST_LOG` says) on standard error.
fn init_logging() {
    let env = env_logger::Env::default().default_filter_or("info");
    let _ = env_logger::Builder::from_env(env).try_init();
}

impl Cli {
    /// Runs the subcommand.
    pub async fn run(self) -> CommandResult {
        match self.command {
            Command::Sql(args) => sql::run(&self.master, args).await,
            Command::Fit { pipeline, data, model } => pipelines::fit(&self.master, &pipeline, &data, &model).await,
            Command::Transform { model, data, rows } => pipelines::transform(&self.master, &model, &data, rows).await,
            Command::Scheduler { bind } => {
                init_logging();
                fleet::scheduler(bind).await
            }
            Command::Executor(args) => {
                init_logging();
                let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
                fleet::executor(ExecutorOptions {
                    scheduler: args.scheduler,
                    slots: args.slots.unwrap_or(cores),
                    bind: args.bind,
                    port: args.port,
                    grpc_port: args.grpc_port,
                    work_dir: args.work_dir,
                })
                .await
            }
        }
    }
}
