//! `hearth jobs` and `hearth job status|logs|kill|resume`: the jobs submitted to a fleet in cluster mode, read from
//! its scheduler, so they work from any machine that reaches it (as `yarn application -list/-status/-kill`).

use std::io::Write;
use std::time::{Duration, Instant};

use clap::{Args, Subcommand};
use hearth_exec::ballista::{SchedulerRest, now_ms};
use hearth_fleet::{JobRecord, JobState, LogChunk};

use super::CommandResult;
use super::fleet_record::fleet_master;
use super::tables::{add_row, duration, table};

/// `hearth jobs`' arguments.
#[derive(Debug, Args)]
pub struct JobsArgs {
    /// Print JSON for scripts instead of a table.
    #[arg(long)]
    json: bool,
}

/// `hearth job`'s subcommands.
#[derive(Debug, Subcommand)]
pub enum JobCommand {
    /// Show a job: its state, how long it ran, its exit code, why it failed.
    Status {
        /// The job's id (`hearth jobs` lists them).
        id: String,
        /// Print JSON for scripts.
        #[arg(long)]
        json: bool,
    },
    /// Print a job's driver output: its result tables, metrics and where its models went.
    Logs {
        /// The job's id.
        id: String,
        /// Keep printing as the driver writes, until it ends.
        #[arg(short, long)]
        follow: bool,
    },
    /// Stop a job: its driver, and its tasks on the fleet (training ranks included).
    Kill {
        /// The job's id.
        id: String,
    },
    /// Start a failed or killed job's driver again, as the same job: each training stage resumes from the
    /// last checkpoint the job kept in its checkpoint directory (`checkpoint_dir`), losing at most an epoch.
    Resume {
        /// The job's id.
        id: String,
    },
}

/// `hearth jobs`.
pub async fn list(master: Option<&str>, args: JobsArgs) -> CommandResult {
    let rest = SchedulerRest::new(&fleet_master(master)?)?;
    let jobs: Vec<JobRecord> = rest.get("/hearth/jobs").await?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&jobs)?);
        return Ok(());
    }
    if jobs.is_empty() {
        println!("No jobs submitted in cluster mode");
        return Ok(());
    }
    let mut rows = table(&["job", "name", "state", "submitted", "elapsed", "file"]);
    for job in &jobs {
        add_row(
            &mut rows,
            &[
                job.id.clone(),
                job.name.clone(),
                job.state.as_str().to_string(),
                time(job.submitted_ms),
                elapsed(job),
                job.file.clone(),
            ],
        );
    }
    rows.printstd();
    Ok(())
}

/// `hearth job …`.
pub async fn run(master: Option<&str>, command: JobCommand) -> CommandResult {
    let rest = SchedulerRest::new(&fleet_master(master)?)?;
    match command {
        JobCommand::Status { id, json } => {
            let job: JobRecord = rest.get(&format!("/hearth/jobs/{id}")).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&job)?);
            } else {
                print_job(&job);
            }
            Ok(())
        }
        JobCommand::Logs { id, follow } => logs(&rest, &id, follow).await,
        JobCommand::Kill { id } => kill(&rest, &id).await,
        JobCommand::Resume { id } => {
            let job: JobRecord = rest.post(&format!("/hearth/jobs/{id}/resume"), &()).await?;
            let pid = job.pid.map_or_else(|| "unknown".to_string(), |pid| pid.to_string());
            println!(
                "Resumed job {} ({}): its driver runs again (pid {pid})",
                job.id, job.name
            );
            println!("Follow it with: hearth job logs {} --follow", job.id);
            Ok(())
        }
    }
}

/// A time as `2026-11-23 10:45:01 UTC`.
fn time(ms: u64) -> String {
    chrono::DateTime::from_timestamp_millis(ms as i64)
        .map_or_else(|| ms.to_string(), |t| t.format("%Y-%m-%d %H:%M:%S UTC").to_string())
}

/// How long a job ran (or has run).
fn elapsed(job: &JobRecord) -> String {
    duration(job.ended_ms.unwrap_or_else(now_ms).saturating_sub(job.submitted_ms))
}

fn print_job(job: &JobRecord) {
    let exit = job
        .exit_code
        .map(|code| format!(", exit code {code}"))
        .unwrap_or_default();
    println!(
        "Job {} ({}): {} after {}{exit}",
        job.id,
        job.name,
        job.state.as_str(),
        elapsed(job)
    );
    if let Some(message) = &job.message {
        println!("  {message}");
    }
    println!("  file:        {}", job.file);
    println!("  submitted:   {}", time(job.submitted_ms));
    println!("  working dir: {}", job.working_dir);
    println!("  models:      {}", job.models);
    if job.resumes > 0 {
        println!("  resumed:     {} time(s)", job.resumes);
    }
}

async fn logs(rest: &SchedulerRest, id: &str, follow: bool) -> CommandResult {
    let mut offset = 0;
    loop {
        let chunk: LogChunk = rest.get(&format!("/hearth/jobs/{id}/logs?offset={offset}")).await?;
        print!("{}", chunk.text);
        std::io::stdout().flush()?;
        offset = chunk.next_offset;
        if !chunk.text.is_empty() {
            continue;
        }
        if !follow || chunk.ended {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Asks the scheduler to kill the job, then waits (up to 15 s) until its record says it ended.
async fn kill(rest: &SchedulerRest, id: &str) -> CommandResult {
    let _: JobRecord = rest.post(&format!("/hearth/jobs/{id}/kill"), &()).await?;
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let job: JobRecord = rest.get(&format!("/hearth/jobs/{id}")).await?;
        if job.state != JobState::Running {
            print_job(&job);
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(format!("job {id}: its driver (pid {:?}) has not stopped after 15 s", job.pid).into());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
