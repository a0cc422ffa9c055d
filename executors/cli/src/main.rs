//! The `hearth` program (see `hearth --help`).
//!
//! ```text
//! hearth sql [FILE.sql | -e 'STATEMENTS'] [--models DIR] [--format table|csv|json]
//! hearth fit PIPELINE.json DATA.csv MODEL_DIR
//! hearth transform MODEL_DIR DATA.csv [ROWS]
//! hearth cluster start [--executors N] [--slots S] [--gpus auto|N|none] [--hosts FILE] | stop | status
//! hearth status [--json]
//! hearth submit [--name NAME] [--deploy-mode client|cluster] JOB.sql | DRIVER [ARGS…]
//! hearth jobs | hearth job status|logs [--follow]|kill ID
//! hearth scheduler [--bind HOST:PORT] [--work-dir DIR]
//! hearth executor --scheduler HOST:PORT [--slots N] [--gpus auto|N|none] [--bind HOST] [--work-dir DIR]
//! ```
//!
//! `--master MASTER` (or `HEARTH_MASTER`) picks where statements and pipelines run: `local[N]`,
//! `standalone[N]` or `df://host:port`; the default is `local`, and the fleet's commands default to the
//! fleet `hearth cluster start` started.

// No function over 80 lines in the library (clippy.toml); tests, examples and benchmarks are exempt.
#![warn(clippy::too_many_lines)]

mod cli;

use std::process::ExitCode;

use clap::Parser;

/// The stack of the runtime's threads: the main thread's 8 MiB rather than tokio's 2 MiB, since Ballista's
/// scheduler and DataFusion's planner recurse through a plan's depth (a long pipeline's plans, decoded by a
/// standalone master, overflowed 2 MiB in an unoptimized build).
const THREAD_STACK_BYTES: usize = 8 << 20;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .thread_stack_size(THREAD_STACK_BYTES)
        .enable_all()
        .build();
    let outcome = match runtime {
        Ok(runtime) => runtime.block_on(cli.run()),
        Err(e) => Err(format!("cannot start the async runtime: {e}").into()),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
