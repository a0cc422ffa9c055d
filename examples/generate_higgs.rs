//! Writes generated events in the ATLAS Higgs challenge schema to a CSV file.
//!
//! ```text
//! ./dev cargo run --release --example generate_higgs -- ROWS PATH [SEED]
//! ```

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(rows), Some(path)) = (args.first().and_then(|r| r.parse::<usize>().ok()), args.get(1)) else {
        eprintln!("usage: generate_higgs ROWS PATH [SEED]");
        return ExitCode::from(2);
    };
    let seed = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(42);
    let path = PathBuf::from(path);
    match hearth::datasets::higgs::write_csv(&path, rows, seed) {
        Ok(()) => {
            println!("wrote {rows} events to {}", path.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("cannot write {}: {e}", path.display());
            ExitCode::FAILURE
        }
    }
}
