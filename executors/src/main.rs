//! The `hearth` command-line program (see `hearth --help`).
//!
//! ```text
//! hearth sql [FILE.sql | -e 'STATEMENTS'] [--models DIR] [--format table|csv|json]
//! hearth fit PIPELINE.json DATA.csv MODEL_DIR
//! hearth transform MODEL_DIR DATA.csv [ROWS]
//! hearth scheduler [--bind HOST:PORT]
//! hearth executor --scheduler HOST:PORT [--slots N] [--bind HOST] [--port P] [--grpc-port P] [--work-dir DIR]
//! ```
//!
//! `--master MASTER` (or `HEARTH_MASTER`) picks where statements and pipelines run: `local[N]`,
//! `standalone[N]` or `df://host:port`; the default is `local`.

mod cli;
mod fleet;
mod gang;

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
