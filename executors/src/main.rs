//! The `hearth` command-line program.
//!
//! ```text
//! hearth fit PIPELINE.json DATA.csv MODEL_DIR     fit a pipeline defined in JSON on a CSV file, save the model
//! hearth transform MODEL_DIR DATA.csv [ROWS]      print the first ROWS (default 10) transformed rows
//! ```
//!
//! `--master local[N]` (or the `HEARTH_MASTER` variable) picks where it runs; the default is `local`.

mod commands;

use std::process::ExitCode;

const USAGE: &str = "usage:
  hearth fit PIPELINE.json DATA.csv MODEL_DIR   fit a pipeline defined in JSON on a CSV file and save the model
  hearth transform MODEL_DIR DATA.csv [ROWS]    print the first ROWS (default 10) rows the model produces
options:
  --master MASTER   where to run: local, local[N] (default: $HEARTH_MASTER, else local)";

#[tokio::main]
async fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut master = std::env::var("HEARTH_MASTER").unwrap_or_else(|_| "local".to_string());
    if let Some(i) = args.iter().position(|a| a == "--master") {
        if i + 1 >= args.len() {
            eprintln!("--master needs a value\n{USAGE}");
            return ExitCode::from(2);
        }
        master = args.remove(i + 1);
        args.remove(i);
    }
    let result = match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["fit", pipeline, data, model] => commands::fit(&master, pipeline, data, model).await,
        ["transform", model, data] => commands::transform(&master, model, data, 10).await,
        ["transform", model, data, rows] => match rows.parse() {
            Ok(rows) => commands::transform(&master, model, data, rows).await,
            Err(_) => Err(format!("ROWS must be a whole number, got {rows:?}").into()),
        },
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
