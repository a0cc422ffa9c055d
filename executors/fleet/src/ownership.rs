//! Whose Ballista jobs a cluster-mode job's driver may follow. Ballista's scheduler answers status, metrics,
//! cancellation and clean-up for any job id it is given; behind hearth's front, a driver that proves only its
//! job's key ([`Principal::Job`]) gets them for the Ballista jobs of its own queries alone.
//!
//! The front writes the owner into every query's session settings (`hearth_job.job_owner`, [`JobOwner`]),
//! replacing any owner the caller wrote; a member's queries (the operator's, client-mode drivers') are owned by
//! no job. The scheduler keeps the owner in the job's session configuration, and a job's call that names a
//! Ballista job goes through only when the caller owns that job. A Ballista job with no plan yet (queued, or
//! failed before it was planned) answers its status to any holder of a credential — its state, name and error
//! (a planning error may quote a statement's tables or paths) — and no other call.
//!
//! Executors learn each Ballista job's owner from the launches of its tasks, which carry the job's session
//! settings ([`JobOwners`]); an executor's Flight port serves a job's driver the partitions of its own jobs
//! alone ([`fetches_of_own_jobs`]).
//!
//! What this does not cover: a job's key may send the scheduler a physical plan (hearth's drivers do, for
//! barrier stages), and a plan that reads another job's shuffle files (a shuffle reader naming them, or a scan
//! of an executor's work directory) runs on executors, which fetch with the fleet's secret. The data roots
//! bind a job's statements in its driver, not every plan its key can send.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use ballista_core::JobId;
use ballista_core::extension::SessionConfigExt;
use ballista_core::serde::protobuf::{
    Action, CreateUpdateSessionParams, ExecuteQueryParams, GetJobStatusParams, KeyValuePair, action,
};
use bytes::Bytes;
use datafusion::common::extensions_options;
use datafusion::config::ConfigExtension;
use datafusion::prelude::SessionConfig;
use hearth_exec::ballista::Principal;
use hearth_exec::codec::FLEET_MESSAGE_BYTES;
use hearth_exec::object_stores::StoreSettings;
use prost::Message;

use super::routes::Scheduler;
use crate::grpc::{INVALID_ARGUMENT, PERMISSION_DENIED, framed, grpc_error, message, read_whole, with_body};

/// The path prefix of Ballista's scheduler calls.
const SCHEDULER_CALLS: &str = "/ballista.protobuf.SchedulerGrpc/";
/// The Flight call that streams a partition (its ticket names it).
const DO_GET: &str = "/arrow.flight.protocol.FlightService/DoGet";
/// The Flight call that sends a partition's file as it is (its action names it).
const DO_ACTION: &str = "/arrow.flight.protocol.FlightService/DoAction";
/// How many Ballista jobs' owners an executor remembers (the oldest are forgotten first).
const REMEMBERED_JOBS: usize = 10_000;

extensions_options! {
    /// The session option naming the cluster-mode job a query was submitted for (`hearth_job.job_owner`):
    /// empty for the queries of the fleet's members.
    pub struct JobOwner {
        /// The cluster-mode job's id.
        pub job_owner: String, default = String::new()
    }
}

impl ConfigExtension for JobOwner {
    const PREFIX: &'static str = "hearth_job";
}

/// The name of the option that holds the owner, within [`JobOwner::PREFIX`].
const OWNER: &str = "job_owner";

/// The full name of the option that holds the owner.
fn owner_key() -> String {
    format!("{}.{OWNER}", JobOwner::PREFIX)
}

/// The configuration the scheduler's sessions start from: Ballista's, with room for a query's owner and its
/// job's store settings, and the fleet's message size for the scheduler's calls to executors.
pub(crate) fn session_config() -> SessionConfig {
    SessionConfig::new_with_ballista()
        .with_ballista_grpc_client_max_message_size(FLEET_MESSAGE_BYTES)
        .with_option_extension(JobOwner::default())
        .with_option_extension(StoreSettings::default())
}

/// `settings` with `owner` as their only owner (`None`: no owner).
fn owned_by(settings: &mut Vec<KeyValuePair>, owner: Option<&str>) {
    let key = owner_key();
    settings.retain(|setting| setting.key != key);
    if let Some(owner) = owner {
        settings.push(KeyValuePair {
            key,
            value: Some(owner.to_string()),
        });
    }
}

/// The scheduler's check of calls on Ballista jobs (see the module's documentation), behind the front that
/// put the caller's [`Principal`] in the request (none: a fleet without a secret, where nobody is told apart).
pub(crate) async fn own_jobs_only(State(scheduler): State<Arc<Scheduler>>, request: Request, next: Next) -> Response {
    let Some(call) = request.uri().path().strip_prefix(SCHEDULER_CALLS).map(str::to_string) else {
        return next.run(request).await;
    };
    let job = match request.extensions().get::<Principal>() {
        Some(Principal::Job(job)) => Some(job.clone()),
        _ => None,
    };
    let checked = match (call.as_str(), &job) {
        ("ExecuteQuery" | "ExecuteQueryPush" | "CreateUpdateSession", _) => {
            stamp_owner(request, &call, job.as_deref()).await
        }
        ("GetJobStatus" | "GetJobMetrics" | "CancelJob" | "CleanJobData", Some(job)) => {
            its_own(&scheduler, request, &call, job).await
        }
        _ => Ok(request),
    };
    match checked {
        Ok(request) => next.run(request).await,
        Err(refusal) => refusal,
    }
}

/// The refusal of a call whose request cannot be read: `what` says why.
fn unreadable(call: &str, what: impl std::fmt::Display) -> Response {
    grpc_error(INVALID_ARGUMENT, &format!("{call}'s request: {what}"))
}

/// What a call's body holds when it is not one uncompressed gRPC message.
const NOT_ONE_MESSAGE: &str = "not one uncompressed gRPC message";

/// A query (or a session's settings) with its owner written by the front: `owner` for a query, none for a
/// session's own settings (each query names its owner).
async fn stamp_owner(request: Request, call: &str, owner: Option<&str>) -> Result<Request, Response> {
    let (head, body) = read_whole(request, call).await?;
    let message = message(&body).ok_or_else(|| unreadable(call, NOT_ONE_MESSAGE))?;
    let undecodable = |e| unreadable(call, e);
    let body = match call {
        "CreateUpdateSession" => {
            let mut params = CreateUpdateSessionParams::decode(message).map_err(undecodable)?;
            owned_by(&mut params.settings, None);
            framed(&params)
        }
        _ => {
            let mut params = ExecuteQueryParams::decode(message).map_err(undecodable)?;
            owned_by(&mut params.settings, owner);
            framed(&params)
        }
    };
    Ok(with_body(head, body))
}

/// The owner Ballista job `asked` was submitted with (empty: a member's), or `None` while Ballista has no plan
/// of it.
async fn owner_of(scheduler: &Scheduler, asked: &str) -> Option<String> {
    let manager = &scheduler.state.task_manager;
    let id = JobId::from(asked);
    let config = match manager.get_running_job_cache().get(&id) {
        // A running job's configuration, read without copying its graph (drivers ask its status often).
        Some(running) => running.execution_graph.read().await.session_config(),
        None => manager.get_job_config(&id).await.ok()?,
    };
    let owned = config.options().extensions.get::<JobOwner>();
    Some(owned.map(|owned| owned.job_owner.clone()).unwrap_or_default())
}

/// `request`, a call by `job`'s driver naming a Ballista job, if that Ballista job is one of its queries.
async fn its_own(scheduler: &Scheduler, request: Request, call: &str, job: &str) -> Result<Request, Response> {
    let (head, body) = read_whole(request, call).await?;
    // Each of these calls names its Ballista job in its first field, which is all that is read here.
    let message = message(&body).ok_or_else(|| unreadable(call, NOT_ONE_MESSAGE))?;
    let asked = GetJobStatusParams::decode(message)
        .map_err(|e| unreadable(call, e))?
        .job_id;
    let why = match owner_of(scheduler, &asked).await {
        Some(owner) if owner == job => return Ok(with_body(head, body)),
        Some(_) => "it is not one of that job's queries",
        None if call == "GetJobStatus" => return Ok(with_body(head, body)),
        None => "it has no plan yet to say whose it is",
    };
    log::warn!("the scheduler refused {call} of Ballista job {asked} to job {job}: {why}");
    Err(grpc_error(
        PERMISSION_DENIED,
        &format!("job {job}'s credential may not ask {call} of Ballista job {asked}: {why}"),
    ))
}

/// The owners of the Ballista jobs whose tasks an executor was launched with (the owner of a member's job is
/// empty), learnt from the launches that came through its task port.
#[derive(Clone, Debug, Default)]
pub struct JobOwners(Arc<Mutex<Owners>>);

#[derive(Debug, Default)]
struct Owners {
    by_job: HashMap<String, String>,
    /// Jobs in the order they were learnt, to forget the oldest.
    learnt: VecDeque<String>,
}

impl JobOwners {
    /// Learns the owner of Ballista job `job` from the settings `props` a task of it was launched with.
    pub(crate) fn learn(&self, job: &str, props: &[KeyValuePair]) {
        // A task's settings are its job's session options as DataFusion lists them: an extension's under their
        // bare names.
        let owner = props
            .iter()
            .find(|prop| prop.key == OWNER)
            .and_then(|prop| prop.value.clone());
        let mut owners = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if owners
            .by_job
            .insert(job.to_string(), owner.unwrap_or_default())
            .is_none()
        {
            owners.learnt.push_back(job.to_string());
        }
        while owners.learnt.len() > REMEMBERED_JOBS {
            let forgotten = owners.learnt.pop_front().unwrap_or_default();
            owners.by_job.remove(&forgotten);
        }
    }

    /// The owner of Ballista job `job`, if this executor ran a task of it.
    fn owner(&self, job: &str) -> Option<String> {
        let owners = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        owners.by_job.get(job).cloned()
    }
}

/// The Ballista job a Flight call's request names a partition of, if it names one.
fn fetched_job(path: &str, body: &Bytes) -> Option<String> {
    let message = message(body)?;
    let action = match path {
        DO_GET => arrow_flight::Ticket::decode(message).ok()?.ticket,
        DO_ACTION => arrow_flight::Action::decode(message).ok()?.body,
        _ => return None,
    };
    match Action::decode(action).ok()?.action_type? {
        action::ActionType::FetchPartition(fetch) => Some(fetch.job_id),
    }
}

/// Whether `job` has the shape of the ids Ballista's scheduler gives jobs (letters and digits; `-` and `_`
/// allowed): Ballista builds a shuffle file's path from the id, so one like `../..` would reach outside the
/// executor's work directory.
fn is_job_id(job: &str) -> bool {
    (1..=64).contains(&job.len()) && job.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// An executor's Flight port's check, behind the front that put the caller's [`Principal`] in the request: a
/// fetch whose job id is not [a job id](is_job_id) is refused to every caller; a job's driver may fetch
/// partitions of its own Ballista jobs (as [`JobOwners`] knows them) and make no other call.
pub(crate) async fn fetches_of_own_jobs(State(owners): State<JobOwners>, request: Request, next: Next) -> Response {
    let job = match request.extensions().get::<Principal>() {
        Some(Principal::Job(job)) => Some(job.clone()),
        _ => None,
    };
    let path = request.uri().path().to_string();
    if job.is_none() && path != DO_GET && path != DO_ACTION {
        return next.run(request).await;
    }
    let (head, body) = match read_whole(request, &path).await {
        Ok(read) => read,
        Err(refusal) => return refusal,
    };
    let asked = fetched_job(&path, &body);
    let why = match (&asked, &job) {
        (Some(asked), _) if !is_job_id(asked) => {
            format!("{asked:?} is not a Ballista job id (letters and digits), so it names no partition here")
        }
        (_, None) => return next.run(with_body(head, body)).await,
        (Some(asked), Some(job)) => match owners.owner(asked) {
            Some(owner) if owner == *job => return next.run(with_body(head, body)).await,
            Some(_) => format!("Ballista job {asked} is not one of that job's queries"),
            None => format!("this executor ran no task of Ballista job {asked}"),
        },
        (None, Some(_)) => "a job's driver only fetches partitions of its queries".to_string(),
    };
    let caller = job.map_or_else(|| "a member".to_string(), |job| format!("job {job}"));
    log::warn!("the executor's Flight server refused {path} to {caller}: {why}");
    grpc_error(
        PERMISSION_DENIED,
        &format!("{caller}'s credential may not ask {path} of this executor: {why}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setting(key: &str, value: &str) -> KeyValuePair {
        KeyValuePair {
            key: key.into(),
            value: Some(value.into()),
        }
    }

    #[test]
    fn job_ids_are_letters_and_digits_never_a_path() {
        for id in ["0gkj6x1fbrkg0", "q1", "a-b_c"] {
            assert!(is_job_id(id), "{id}");
        }
        for id in ["", "..", "../secret", "/etc", "a/b", "a b", &"x".repeat(65)] {
            assert!(!is_job_id(id), "{id}");
        }
    }

    #[test]
    fn the_front_writes_the_only_owner_and_sessions_keep_it() {
        let mut settings = vec![
            setting("hearth_job.job_owner", "forged"),
            setting("ballista.job.name", "q"),
        ];
        owned_by(&mut settings, Some("j-1"));
        assert_eq!(
            settings,
            vec![
                setting("ballista.job.name", "q"),
                setting("hearth_job.job_owner", "j-1")
            ]
        );
        let config =
            ballista_core::extension::SessionConfigHelperExt::update_from_key_value_pair(session_config(), &settings);
        assert_eq!(config.options().extensions.get::<JobOwner>().unwrap().job_owner, "j-1");
        let listed = ballista_core::extension::SessionConfigHelperExt::to_key_value_pairs(&config);
        assert!(listed.contains(&setting(OWNER, "j-1")), "what a task's launch carries");
        owned_by(&mut settings, None);
        assert_eq!(settings, vec![setting("ballista.job.name", "q")]);
    }

    #[test]
    fn executors_learn_owners_from_launches_and_fetches_name_their_job() {
        use ballista_core::serde::protobuf::FetchPartition;

        let owners = JobOwners::default();
        owners.learn("q1", &[setting(OWNER, "j-1")]);
        owners.learn("q2", &[]);
        assert_eq!(owners.owner("q1").as_deref(), Some("j-1"));
        assert_eq!(owners.owner("q2").as_deref(), Some(""), "a member's job");
        assert_eq!(owners.owner("q3"), None);

        let fetch = Action {
            action_type: Some(action::ActionType::FetchPartition(FetchPartition {
                job_id: "q1".into(),
                ..FetchPartition::default()
            })),
            settings: Vec::new(),
        };
        let ticket = arrow_flight::Ticket {
            ticket: fetch.encode_to_vec().into(),
        };
        assert_eq!(fetched_job(DO_GET, &framed(&ticket)).as_deref(), Some("q1"));
        assert_eq!(fetched_job(DO_ACTION, &framed(&ticket)), None, "not an action");
    }
}
