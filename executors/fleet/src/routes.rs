//! hearth's REST routes on the scheduler, beside Ballista's `/api/…`:
//!
//! ```text
//! GET  /hearth/executors           live executors: slots (free/total), memory, GPUs, last heartbeat
//! POST /hearth/executors           an executor reports what it offers (every 5 s)
//! GET  /hearth/jobs                cluster-mode jobs
//! POST /hearth/jobs                submit one (a SubmitRequest); answers its JobRecord
//! GET  /hearth/jobs/{id}           one job's record
//! GET  /hearth/jobs/{id}/logs      its driver's output from ?offset=N (a LogChunk)
//! POST /hearth/jobs/{id}/kill      stop its driver and cancel its Ballista jobs
//! POST /hearth/jobs/{id}/resume    start its driver again, resuming from its checkpoints
//! ```

use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use ballista_scheduler::scheduler_server::SchedulerServer;
use datafusion_proto::protobuf::{LogicalPlanNode, PhysicalPlanNode};
use hearth_exec::ballista::{EXECUTORS_ROUTE, ExecutorResources, alive};
use serde::Deserialize;

use super::book::{FleetBook, held};
use super::error::FleetError;
use super::jobs::{JobBoard, KILL_GRACE, SubmitRequest};

/// The scheduler as hearth builds it.
pub type Scheduler = SchedulerServer<LogicalPlanNode, PhysicalPlanNode>;

/// What the routes answer from.
#[derive(Clone)]
pub struct FleetState {
    /// Ballista's scheduler.
    pub scheduler: Arc<Scheduler>,
    /// What executors reported.
    pub book: Arc<FleetBook>,
    /// Cluster-mode jobs.
    pub jobs: Arc<JobBoard>,
}

/// hearth's routes, answering from `fleet`.
pub fn routes(fleet: FleetState) -> Router {
    Router::new()
        .route(EXECUTORS_ROUTE, get(list_executors).post(report_executor))
        .route("/hearth/jobs", get(list_jobs).post(submit_job))
        .route("/hearth/jobs/{id}", get(job))
        .route("/hearth/jobs/{id}/logs", get(job_logs))
        .route("/hearth/jobs/{id}/kill", post(kill_job))
        .route("/hearth/jobs/{id}/resume", post(resume_job))
        .with_state(fleet)
}

fn not_found(id: &str) -> Response {
    (StatusCode::NOT_FOUND, format!("no job {id}")).into_response()
}

async fn list_executors(State(fleet): State<FleetState>) -> Response {
    let state = &fleet.scheduler.state;
    let registered = match state.executor_manager.get_executors_state().await {
        Ok(registered) => registered,
        Err(e) => return (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    };
    let held = held(&state.task_manager.get_running_job_cache()).await;
    let executors: Vec<ExecutorResources> = registered
        .into_iter()
        .filter_map(|(metadata, heartbeat, _)| {
            let last_seen_ms = heartbeat?.as_millis() as u64;
            alive(last_seen_ms).then_some(())?;
            let slots = metadata.specification.vcores as usize;
            let mut resources = fleet.book.get(&metadata.id).unwrap_or(ExecutorResources {
                executor_id: metadata.id.clone(),
                host: metadata.host.clone(),
                slots,
                free_slots: None,
                memory_bytes: 0,
                gpus: Vec::new(),
                busy_gpus: 0,
                last_seen_ms,
                certificate_expires_at: None,
            });
            let holds = held.get(&metadata.id).copied().unwrap_or_default();
            resources.slots = slots;
            resources.free_slots = Some(slots.saturating_sub(holds.slots));
            resources.busy_gpus = holds.gpus;
            resources.last_seen_ms = last_seen_ms;
            Some(resources)
        })
        .collect();
    Json(executors).into_response()
}

async fn report_executor(State(fleet): State<FleetState>, Json(report): Json<ExecutorResources>) -> Json<()> {
    fleet.book.record(report);
    Json(())
}

async fn list_jobs(State(fleet): State<FleetState>) -> Response {
    Json(fleet.jobs.list()).into_response()
}

async fn submit_job(State(fleet): State<FleetState>, Json(request): Json<SubmitRequest>) -> Response {
    match fleet.jobs.submit(request) {
        Ok(record) => (StatusCode::CREATED, Json(record)).into_response(),
        Err(e) => refusal(e, StatusCode::BAD_REQUEST),
    }
}

async fn job(State(fleet): State<FleetState>, Path(id): Path<String>) -> Response {
    match fleet.jobs.get(&id) {
        Some(record) => Json(record).into_response(),
        None => not_found(&id),
    }
}

#[derive(Debug, Deserialize)]
struct LogsQuery {
    #[serde(default)]
    offset: u64,
}

async fn job_logs(State(fleet): State<FleetState>, Path(id): Path<String>, Query(query): Query<LogsQuery>) -> Response {
    match fleet.jobs.logs(&id, query.offset) {
        Some(Ok(chunk)) => Json(chunk).into_response(),
        Some(Err(e)) => refusal(e, StatusCode::CONFLICT),
        None => not_found(&id),
    }
}

/// Stops the job's driver, then cancels the Ballista jobs its session still runs (a training stage's ranks
/// see their tasks cancelled and stop; their slots free) — now, and again once the driver ended, in case it
/// submitted one more on its way down.
async fn kill_job(State(fleet): State<FleetState>, Path(id): Path<String>) -> Response {
    let record = match fleet.jobs.kill(&id) {
        Some(Ok(record)) => record,
        Some(Err(e)) => return refusal(e, StatusCode::CONFLICT),
        None => return not_found(&id),
    };
    cancel_ballista_jobs(&fleet, &id).await;
    let killed_run = record.resumes;
    tokio::spawn(async move {
        let deadline = tokio::time::Instant::now() + KILL_GRACE + Duration::from_secs(2);
        while fleet.jobs.is_running(&id) && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        // Not once a resume started the job again: its new driver's queries are not the killed one's.
        let resumed = fleet.jobs.get(&id).is_some_and(|job| job.resumes != killed_run);
        if !fleet.jobs.is_running(&id) && !resumed {
            cancel_ballista_jobs(&fleet, &id).await;
        }
    });
    Json(record).into_response()
}

/// Starts the driver of a job that failed or was killed again, as the same job: the job claimed first (no
/// other resume of it starts), then the Ballista jobs its dead driver left cancelled (their tasks would hold
/// the slots its resumed stages need), then the driver started.
async fn resume_job(State(fleet): State<FleetState>, Path(id): Path<String>) -> Response {
    let record = match fleet.jobs.claim_resume(&id) {
        Some(Ok(record)) => record,
        Some(Err(e)) => return refusal(e, StatusCode::CONFLICT),
        None => return not_found(&id),
    };
    cancel_ballista_jobs(&fleet, &id).await;
    match fleet.jobs.start_resumed(record) {
        Ok(record) => Json(record).into_response(),
        Err(e) => refusal(e, StatusCode::CONFLICT),
    }
}

/// A job's request refused (`refused`: 400 for a request that cannot be, 409 for one the job's state
/// refuses) or failed (500).
fn refusal(e: FleetError, refused: StatusCode) -> Response {
    let status = match e {
        FleetError::Refused(_) => refused,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    (status, e.to_string()).into_response()
}

/// Cancels the running Ballista jobs of the session of cluster-mode job `id`.
async fn cancel_ballista_jobs(fleet: &FleetState, id: &str) {
    let running = fleet.scheduler.state.task_manager.get_running_job_cache();
    for (job_id, job) in running.iter() {
        if job.execution_graph.read().await.session_id() != id {
            continue;
        }
        log::info!("job {id}: cancelling its Ballista job {job_id}");
        if let Err(e) = fleet.scheduler.cancel_job(job_id.clone()).await {
            log::warn!("job {id}: cannot cancel its Ballista job {job_id}: {e}");
        }
    }
}
