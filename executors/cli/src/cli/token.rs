//! `hearth cluster token`: a token of the fleet's secret for a tool that calls the fleet's REST routes (or,
//! with `--service grpc`, its gRPC ports) itself: `hearth cluster token --write auth` then `curl -H @auth …`,
//! the header in a file only its owner reads, off every command line. The secret never crosses the wire; the
//! token proves it, and is admitted on one connection from this machine's address towards the server, for
//! its service, until it expires (5 minutes unless `--valid-for` says otherwise): make one per call.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use hearth_common::files::write_private_file_whole;
use hearth_exec::ballista::{ClusterSecret, DEFAULT_VALID_FOR, MAX_VALID_FOR, Service};

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
    /// The service the token is for: `api` (the scheduler's REST routes) or `grpc` (the fleet's gRPC ports).
    #[arg(long, value_name = "SERVICE", default_value = "api", value_parser = parse_service)]
    service: Service,
    /// How long the token is admitted, at most an hour (`90s`, `5m`, `1h`).
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = parse_valid_for)]
    valid_for: Duration,
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
        Some(job) if !is_job_id(job) => {
            return Err(Failed::new(format!(
                "`{job}` is not a job id (letters, digits, `-`, `_` and `.`, as `hearth jobs` shows them)"
            ))
            .into());
        }
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
    let token = secret.token(&server, args.service, args.valid_for);
    match &args.write {
        Some(file) => write_header(file, &token),
        None => {
            println!("{token}");
            Ok(())
        }
    }
}

/// Whether `job` has the shape of a cluster-mode job's id, which a token carries between its slashes.
fn is_job_id(job: &str) -> bool {
    !job.is_empty() && job.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
}

/// The service named `name` (`--service`).
fn parse_service(name: &str) -> Result<Service, String> {
    Service::parse(name).ok_or_else(|| format!("`{name}` is not a service: api or grpc"))
}

/// A token's validity (`--valid-for`): a duration of at most [`MAX_VALID_FOR`].
fn parse_valid_for(text: &str) -> Result<Duration, String> {
    let valid_for =
        humantime::parse_duration(text).map_err(|e| format!("`{text}` is not a duration ({e}): 90s, 5m, 1h"))?;
    match valid_for {
        valid_for if valid_for > MAX_VALID_FOR => Err(format!(
            "a token is valid for at most {} (the default is {})",
            humantime::format_duration(MAX_VALID_FOR),
            humantime::format_duration(DEFAULT_VALID_FOR)
        )),
        valid_for if valid_for.is_zero() => Err("a token valid for no time is never admitted".to_string()),
        valid_for => Ok(valid_for),
    }
}

/// Writes `Authorization: Bearer TOKEN` into `file`, readable by its owner alone, whole or not at all.
fn write_header(file: &Path, token: &str) -> CommandResult {
    write_private_file_whole(file, format!("Authorization: Bearer {token}\n").as_bytes())
        .map_err(|e| Failed::new(format!("cannot write the token into {}: {e}", file.display())))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validity_is_a_duration_of_at_most_an_hour() {
        assert_eq!(parse_valid_for("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_valid_for("1h"), Ok(MAX_VALID_FOR));
        assert!(parse_valid_for("2h").unwrap_err().contains("at most 1h"));
        assert!(parse_valid_for("0s").is_err());
        assert!(parse_valid_for("soon").unwrap_err().contains("not a duration"));
        assert_eq!(parse_service("grpc"), Ok(Service::Grpc));
        assert!(parse_service("rest").is_err());
        assert!(is_job_id("driver-20261130114005-0001"));
        assert!(!is_job_id("driver/1") && !is_job_id("a b") && !is_job_id(""));
    }
}
