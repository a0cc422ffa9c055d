//! `hearth cluster token`: a token of the fleet's secret for a tool that calls the fleet's REST routes itself
//! (`hearth cluster token --write auth` then `curl -H @auth …`: the header in a file only its owner reads, off
//! every command line). The secret never crosses the wire; the token proves it, and is admitted only on
//! connections from this machine's address towards the server.

use std::path::{Path, PathBuf};

use clap::Args;
use hearth_engine::ballista::ClusterSecret;
use hearth_engine::files::write_private_file_whole;

use super::CommandResult;
use super::failed::Failed;
use super::fleet_record::{SECRET_FILE, StateDir, read_record};

/// `hearth cluster token`'s arguments.
#[derive(Debug, Args)]
pub struct TokenArgs {
    #[command(flatten)]
    state: StateDir,
    /// The server the token is for, HOST:PORT (default: the fleet's scheduler).
    #[arg(long = "for", value_name = "HOST:PORT")]
    server: Option<String>,
    /// A token of cluster-mode job ID's key, as its driver holds, instead of the fleet's secret: admitted
    /// only for that job's own business.
    #[arg(long, value_name = "ID")]
    job: Option<String>,
    /// Write `Authorization: Bearer TOKEN` into FILE, made readable by its owner alone (for `curl -H @FILE`),
    /// instead of printing the token.
    #[arg(long, value_name = "FILE")]
    write: Option<PathBuf>,
}

/// Prints a token of the recorded fleet's secret for its scheduler (or `--for` server).
pub fn run(args: TokenArgs) -> CommandResult {
    let dir = args.state.path()?;
    let secret = ClusterSecret::read(&dir.join(SECRET_FILE))?;
    let secret = match &args.job {
        Some(job) => secret.for_job(job),
        None => secret,
    };
    let server = match args.server {
        Some(server) => server,
        None => {
            let record = read_record(&dir)?
                .ok_or_else(|| Failed::new(format!("no fleet recorded in {}: pass --for HOST:PORT", dir.display())))?;
            record.master.trim_start_matches("df://").to_string()
        }
    };
    let token = secret.token_for(&server);
    match &args.write {
        Some(file) => write_header(file, &token),
        None => {
            println!("{token}");
            Ok(())
        }
    }
}

/// Writes `Authorization: Bearer TOKEN` into `file`, readable by its owner alone, whole or not at all.
fn write_header(file: &Path, token: &str) -> CommandResult {
    write_private_file_whole(file, format!("Authorization: Bearer {token}\n").as_bytes())
        .map_err(|e| Failed::new(format!("cannot write the token into {}: {e}", file.display())))?;
    Ok(())
}
