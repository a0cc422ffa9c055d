//! `hearth cluster token`: a token of the fleet's secret for a tool that calls the fleet's REST routes itself
//! (`curl -H "Authorization: Bearer $(hearth cluster token)" …`). The secret never crosses the wire; the token
//! proves it, and is admitted only on connections from this machine's address towards the server.

use clap::Args;
use hearth_engine::ballista::ClusterSecret;

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
    println!("{}", secret.token_for(&server));
    Ok(())
}
