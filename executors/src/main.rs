//! The `hearth` command-line program.
//!
//! ```text
//! hearth fit PIPELINE.json DATA.csv MODEL_DIR     fit a pipeline defined in JSON on a CSV file, save the model
//! hearth transform MODEL_DIR DATA.csv [ROWS]      print the first ROWS (default 10) transformed rows
//! hearth scheduler [--bind HOST:PORT]             run a scheduler of the fleet (default 127.0.0.1:50050)
//! hearth executor --scheduler HOST:PORT [--slots N] [--bind HOST] [--port P] [--grpc-port P] [--work-dir DIR]
//! ```
//!
//! `--master MASTER` (or the `HEARTH_MASTER` variable) picks where `fit` and `transform` run: `local[N]`,
//! `standalone[N]` or `df://host:port`; the default is `local`.

mod commands;
mod fleet;
mod gang;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::ExitCode;

use commands::CommandResult;

const USAGE: &str = "usage:
  hearth fit PIPELINE.json DATA.csv MODEL_DIR   fit a pipeline defined in JSON on a CSV file and save the model
  hearth transform MODEL_DIR DATA.csv [ROWS]    print the first ROWS (default 10) rows the model produces
  hearth scheduler [--bind HOST:PORT]           run the fleet's scheduler (default 127.0.0.1:50050; port 0: any)
  hearth executor --scheduler HOST:PORT [--slots N] [--bind HOST] [--port P] [--grpc-port P] [--work-dir DIR]
                                                run an executor with N task slots (default: the cores)
options:
  --master MASTER   where fit and transform run: local[N], standalone[N], df://HOST:PORT
                    (default: $HEARTH_MASTER, else local)";

/// Removes `--name VALUE` from `args` and returns the value.
fn take_flag(args: &mut Vec<String>, name: &str) -> Result<Option<String>, String> {
    let Some(i) = args.iter().position(|a| a == name) else {
        return Ok(None);
    };
    if i + 1 >= args.len() {
        return Err(format!("{name} needs a value"));
    }
    let value = args.remove(i + 1);
    args.remove(i);
    Ok(Some(value))
}

fn parse<T: std::str::FromStr>(name: &str, value: Option<String>, default: T) -> Result<T, String> {
    match value {
        None => Ok(default),
        Some(v) => v.parse().map_err(|_| format!("{name}: cannot read {v:?}")),
    }
}

async fn run(mut args: Vec<String>) -> Result<CommandResult, String> {
    let master = take_flag(&mut args, "--master")?
        .or_else(|| std::env::var("HEARTH_MASTER").ok())
        .unwrap_or_else(|| "local".to_string());
    let command: Vec<&str> = args.iter().map(String::as_str).collect();
    Ok(match command.as_slice() {
        ["fit", pipeline, data, model] => commands::fit(&master, pipeline, data, model).await,
        ["transform", model, data] => commands::transform(&master, model, data, 10).await,
        ["transform", model, data, rows] => match rows.parse() {
            Ok(rows) => commands::transform(&master, model, data, rows).await,
            Err(_) => Err(format!("ROWS must be a whole number, got {rows:?}").into()),
        },
        ["scheduler", ..] => {
            init_logging();
            let default = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 50050);
            let bind = parse("--bind", take_flag(&mut args, "--bind")?, default)?;
            expect_no_more(&args, 1)?;
            fleet::scheduler(bind).await
        }
        ["executor", ..] => {
            init_logging();
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            let options = fleet::ExecutorOptions {
                scheduler: take_flag(&mut args, "--scheduler")?.ok_or("executor needs --scheduler HOST:PORT")?,
                slots: parse("--slots", take_flag(&mut args, "--slots")?, cores)?,
                bind: parse(
                    "--bind",
                    take_flag(&mut args, "--bind")?,
                    IpAddr::V4(Ipv4Addr::LOCALHOST),
                )?,
                port: parse("--port", take_flag(&mut args, "--port")?, 0)?,
                grpc_port: parse("--grpc-port", take_flag(&mut args, "--grpc-port")?, 0)?,
                work_dir: take_flag(&mut args, "--work-dir")?,
            };
            expect_no_more(&args, 1)?;
            fleet::executor(options).await
        }
        _ => return Err(String::new()),
    })
}

/// The fleet's processes log at `info` (or as `RUST_LOG` says) on standard error.
fn init_logging() {
    let env = env_logger::Env::default().default_filter_or("info");
    let _ = env_logger::Builder::from_env(env).try_init();
}

fn expect_no_more(args: &[String], expected: usize) -> Result<(), String> {
    match args.get(expected) {
        Some(extra) => Err(format!("unexpected argument {extra:?}")),
        None => Ok(()),
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(args).await {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(e)) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
        Err(usage) => {
            if !usage.is_empty() {
                eprintln!("error: {usage}");
            }
            eprintln!("{USAGE}");
            ExitCode::from(2)
        }
    }
}
