//! `hearth submit`: runs a job on a fleet, as `spark-submit` does. The job is a SQL file (run by the SQL
//! front end) or a driver program (an executable built against hearth, which reads its master and name from
//! `HEARTH_MASTER` and `HEARTH_APP_NAME`). In client mode the driver runs here, its output streams to the
//! terminal and its exit code is `submit`'s; in cluster mode the scheduler starts the driver and `submit`
//! answers the job's id at once.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use clap::{Args, ValueEnum};
use hearth_exec::ballista::{FleetAccess, SchedulerRest};
use hearth_exec::session::APP_NAME_ENV;
use hearth_fleet::{JobRecord, SubmitRequest};
use hearth_sql::parse_statements;

use super::CommandResult;
use super::failed::Failed;
use super::fleet_record::fleet_master;

/// Where the driver runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum DeployMode {
    /// Here: its output streams to this terminal, and `submit` ends with its exit code.
    Client,
    /// On the fleet: `submit` returns the job's id at once; `hearth job` follows it (SQL jobs).
    Cluster,
}

/// `hearth submit`'s arguments.
#[derive(Debug, Args)]
pub struct SubmitArgs {
    /// The job's name, which its Ballista jobs carry (default: the job file's name).
    #[arg(long)]
    name: Option<String>,
    /// Where the driver runs.
    #[arg(long = "deploy-mode", value_enum, default_value_t = DeployMode::Client)]
    deploy_mode: DeployMode,
    /// The model catalog's directory, as the driver sees it (SQL jobs).
    #[arg(long, env = "HEARTH_MODELS", default_value = "models")]
    models: PathBuf,
    /// The job: a SQL file (`.sql`) or a driver program (an executable built against hearth).
    job: PathBuf,
    /// Arguments for a driver program.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<String>,
}

/// What kind of job a file is.
enum Job {
    Sql,
    Program,
}

fn job_kind(path: &Path) -> Result<Job, Failed> {
    let metadata = std::fs::metadata(path).map_err(|e| Failed::file(path, e))?;
    if path.extension().is_some_and(|ext| ext.eq_ignore_ascii_case("sql")) {
        return Ok(Job::Sql);
    }
    if metadata.is_file() && metadata.permissions().mode() & 0o111 != 0 {
        return Ok(Job::Program);
    }
    Err(Failed::new(format!(
        "{}: a job is a SQL file (.sql) or an executable driver program, and this is neither",
        path.display()
    )))
}

/// `hearth submit`.
pub async fn run(master: Option<&str>, args: SubmitArgs) -> CommandResult {
    let master = fleet_master(master)?;
    let kind = job_kind(&args.job)?;
    if !args.args.is_empty() && matches!(kind, Job::Sql) {
        return Err(format!(
            "{}: a SQL job takes no arguments, got {:?}",
            args.job.display(),
            args.args
        )
        .into());
    }
    // Fail in seconds when the scheduler is down, before anything starts.
    let rest = SchedulerRest::new(&master)?;
    rest.get::<serde_json::Value>("/api/version")
        .await
        .map_err(|e| Failed::because(format!("cannot submit to {master}"), e))?;
    let name = args.name.clone().unwrap_or_else(|| {
        args.job
            .file_stem()
            .map_or_else(|| "hearth".to_string(), |stem| stem.to_string_lossy().into_owned())
    });
    match (args.deploy_mode, kind) {
        (DeployMode::Client, kind) => client(&master, &name, kind, &args),
        (DeployMode::Cluster, Job::Sql) => cluster(&rest, &master, name, &args).await,
        (DeployMode::Cluster, Job::Program) => Err(format!(
            "{}: cluster mode runs SQL jobs on the fleet; run a driver program with --deploy-mode client",
            args.job.display()
        )
        .into()),
    }
}

/// Runs the driver here in place of this command (exec), as `spark-submit` runs a client-mode driver in its
/// own process: its output on this terminal, its exit code the job's, and a signal to this process (a
/// Ctrl-C, a `kill`) reaches the driver itself, so no driver outlives its `hearth submit`.
fn client(master: &str, name: &str, kind: Job, args: &SubmitArgs) -> CommandResult {
    use std::os::unix::process::CommandExt;

    let mut driver = match kind {
        Job::Sql => {
            let mut command = Command::new(std::env::current_exe()?);
            command.arg("sql").arg("--models").arg(&args.models).arg(&args.job);
            command
        }
        Job::Program => {
            let program = std::path::absolute(&args.job)?;
            let mut command = Command::new(program);
            command.args(&args.args);
            command
        }
    };
    let error = driver
        .env("HEARTH_MASTER", master)
        .env(APP_NAME_ENV, name)
        // The driver presents the fleet's secret and speaks its TLS as this command found them (its
        // environment's, or the recorded fleet's).
        .envs(FleetAccess::find()?.environment())
        .exec();
    Err(Failed::because(format!("cannot start the driver {}", args.job.display()), error).into())
}

/// Hands the job to the fleet and prints its id.
async fn cluster(rest: &SchedulerRest, master: &str, name: String, args: &SubmitArgs) -> CommandResult {
    let sql = std::fs::read_to_string(&args.job).map_err(|e| Failed::file(&args.job, e))?;
    parse_statements(&sql).map_err(|e| Failed::file(&args.job, e))?;
    let request = SubmitRequest {
        name,
        file: args.job.display().to_string(),
        sql,
        models: args.models.display().to_string(),
        working_dir: std::env::current_dir().ok().map(|dir| dir.display().to_string()),
    };
    let record: JobRecord = rest.post("/hearth/jobs", &request).await?;
    println!("Submitted job {} ({}) to {master}", record.id, record.name);
    println!("Follow it with: hearth job logs {} --follow", record.id);
    Ok(())
}
