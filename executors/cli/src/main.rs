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

#[tokio::main]
async fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match cli.run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
