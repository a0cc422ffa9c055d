//! `hearth status`: what a fleet has and runs, from its scheduler's REST API — executors (host, slots
//! free/total, memory, GPUs, last heartbeat) and Ballista's jobs (id, name, state, stages, elapsed).

use std::collections::BTreeMap;

use ballista_api_types::dto::JobResponse;
use clap::Args;
use hearth_exec::ballista::{
    CertificateFacts, EXECUTORS_ROUTE, ExecutorResources, FleetTls, GpuInfo, SchedulerRest, days_left, now_ms,
};
use serde::Serialize;

use super::CommandResult;
use super::fleet_record::fleet_master;
use super::tables::{add_row, ago, bytes, count, duration, table};

/// `hearth status`'s arguments.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Print JSON (`{"master", "executors", "jobs"}`) for scripts instead of tables.
    #[arg(long)]
    json: bool,
    /// How many of the most recent jobs to list.
    #[arg(long, default_value_t = 20)]
    jobs: usize,
}

#[derive(Serialize)]
struct Status<'a> {
    master: &'a str,
    executors: &'a [ExecutorResources],
    jobs: &'a [JobResponse],
    certificates: &'a Certificates,
}

/// The TLS certificates of this client and of the scheduler it reached (none without TLS); executors report
/// theirs with their resources.
#[derive(Serialize)]
struct Certificates {
    client: Option<CertificateFacts>,
    scheduler: Option<CertificateFacts>,
}

/// How many days before a certificate expires `hearth status` warns.
const RENEW_WITHIN_DAYS: i64 = 30;

/// `hearth status`.
pub async fn run(master: Option<&str>, args: StatusArgs) -> CommandResult {
    let master = fleet_master(master)?;
    let rest = SchedulerRest::new(&master)?;
    let executors: Vec<ExecutorResources> = rest.get(EXECUTORS_ROUTE).await?;
    let mut jobs: Vec<JobResponse> = rest.get("/api/jobs").await?;
    jobs.sort_by_key(|job| std::cmp::Reverse(job.start_time));
    jobs.truncate(args.jobs);
    let scheduler = rest.server_certificate().await?;
    let certificates = Certificates {
        client: FleetTls::find()?.map(|tls| tls.certificate().clone()),
        scheduler: scheduler.map(|der| CertificateFacts::of(&der)).transpose()?,
    };
    if args.json {
        let status = Status {
            master: &master,
            executors: &executors,
            jobs: &jobs,
            certificates: &certificates,
        };
        println!("{}", serde_json::to_string_pretty(&status)?);
        return Ok(());
    }
    print_executors(&master, &executors);
    println!();
    print_jobs(&jobs);
    print_certificates(&certificates, &executors);
    Ok(())
}

/// The fleet's TLS certificates — this client's, the scheduler's, each executor's — and when each expires,
/// with a word when one expires within [`RENEW_WITHIN_DAYS`].
fn print_certificates(certificates: &Certificates, executors: &[ExecutorResources]) {
    let holders = [
        ("this client", certificates.client.as_ref().map(|c| c.expires_at)),
        ("the scheduler", certificates.scheduler.as_ref().map(|c| c.expires_at)),
    ];
    let mut expiries: Vec<(String, i64)> = holders
        .into_iter()
        .filter_map(|(holder, at)| Some((holder.to_string(), at?)))
        .collect();
    expiries.extend(
        executors
            .iter()
            .filter_map(|e| Some((format!("executor {}", e.executor_id), e.certificate_expires_at?))),
    );
    if expiries.is_empty() {
        return;
    }
    let now = i64::try_from(now_ms() / 1000).unwrap_or(i64::MAX);
    println!("\nTLS certificates");
    let mut rows = table(&["held by", "expires (UTC)", "days left"]);
    for (holder, at) in &expiries {
        let expires = chrono::DateTime::from_timestamp(*at, 0).map_or_else(|| at.to_string(), |t| t.to_string());
        add_row(&mut rows, &[holder.clone(), expires, days_left(*at, now).to_string()]);
    }
    rows.printstd();
    if let Some((holder, _)) = expiries.iter().find(|(_, at)| days_left(*at, now) < RENEW_WITHIN_DAYS) {
        println!(
            "{holder}'s certificate expires within {RENEW_WITHIN_DAYS} days: make a new set with `hearth cluster certs` and restart the fleet with it"
        );
    }
}

/// The fleet's summary line and its executors' table.
pub(super) fn print_executors(master: &str, executors: &[ExecutorResources]) {
    let slots: usize = executors.iter().map(|e| e.slots).sum();
    let free: usize = executors.iter().map(|e| e.free_slots.unwrap_or(e.slots)).sum();
    let gpus: usize = executors.iter().map(|e| e.gpus.len()).sum();
    // Executors on one host share its memory: count each host once.
    let hosts: BTreeMap<&str, u64> = executors.iter().map(|e| (e.host.as_str(), e.memory_bytes)).collect();
    println!(
        "Fleet {master}: {}, {slots} slots ({free} free), {gpus} GPUs, {} memory on {}",
        count(executors.len(), "executor"),
        bytes(hosts.values().sum()),
        count(hosts.len(), "host")
    );
    if executors.is_empty() {
        return;
    }
    let now = now_ms();
    let mut rows = table(&[
        "executor",
        "host",
        "slots free/total",
        "host memory",
        "GPUs",
        "last heartbeat",
    ]);
    for e in executors {
        let free = e.free_slots.map_or("?".to_string(), |f| f.to_string());
        add_row(
            &mut rows,
            &[
                e.executor_id.clone(),
                e.host.clone(),
                format!("{free}/{}", e.slots),
                bytes(e.memory_bytes),
                gpus_cell(&e.gpus, e.busy_gpus),
                ago(e.last_seen_ms, now),
            ],
        );
    }
    rows.printstd();
}

/// An executor's GPUs in one cell: `none`, or how many of each model, their memory and how many are busy.
fn gpus_cell(gpus: &[GpuInfo], busy: usize) -> String {
    let Some(first) = gpus.first() else {
        return "none".to_string();
    };
    let same = gpus.iter().all(|g| g.name == first.name);
    let kinds = if same {
        format!("{} × {} ({})", gpus.len(), first.name, bytes(first.memory_bytes))
    } else {
        gpus.iter()
            .map(|g| format!("{}: {} ({})", g.index, g.name, bytes(g.memory_bytes)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    format!("{kinds}, {busy} busy")
}

fn print_jobs(jobs: &[JobResponse]) {
    if jobs.is_empty() {
        println!("No jobs yet");
        return;
    }
    println!("Jobs (most recent first)");
    let now = now_ms();
    let mut rows = table(&["job", "name", "state", "stages done/total", "elapsed"]);
    for job in jobs {
        let end = if job.end_time == 0 { now } else { job.end_time };
        add_row(
            &mut rows,
            &[
                job.job_id.clone(),
                job.job_name.clone(),
                job.status.to_lowercase(),
                format!("{}/{}", job.completed_stages, job.num_stages),
                duration(end.saturating_sub(job.start_time)),
            ],
        );
    }
    rows.printstd();
}
