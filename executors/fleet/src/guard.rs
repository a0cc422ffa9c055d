//! The check in front of every server of the fleet — the scheduler's gRPC and REST port, each executor's
//! Flight and task ports: a request that does not present the cluster secret is refused before it reaches
//! the server behind, gRPC calls with the status UNAUTHENTICATED and REST calls with 401, and each refusal is
//! logged with the peer's address. The health probes (`/healthz`, `/readyz`) stay open. A token must be made
//! for the service of the route asked — `api` for the REST routes (`/hearth/…`, `/api/…`), `grpc` for every
//! other — and an expiring one is admitted on one connection only (a copy on another is refused as
//! replayed). A cluster-mode job's driver proves only its job's key: each server says what a job may ask of
//! it, and whether the job has ended ([`JobRule`]); anything else is refused as PERMISSION_DENIED (gRPC) or
//! 403 (REST). An admitted request carries its [`Principal`] in its
//! extensions for the server behind.
//!
//! ```no_run
//! # fn guard(secret: hearth_exec::ballista::ClusterSecret) -> axum::Router {
//! let service = axum::Router::new().route("/", axum::routing::get(|| async { "hello" }));
//! hearth_fleet::guard::guarded(service, Some(secret), "an example server", hearth_fleet::guard::NoJob)
//! # }
//! ```

use std::sync::Arc;

use axum::Router;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use hearth_common::peers::other_local_user;
use hearth_exec::ballista::{
    ClusterSecret, Presented, Principal, ReplayMemory, SECRET_FILE_ENV, Service, TokenRefusal,
};

use super::tls::Peer;
use crate::grpc::{PERMISSION_DENIED, UNAUTHENTICATED, grpc_error};

/// Paths anyone may ask for: liveness and readiness probes, which say nothing about the fleet's work.
const PROBES: [&str; 2] = ["/healthz", "/readyz"];

/// The routes of the REST service (`api` tokens); every other route is a gRPC call (`grpc` tokens).
const REST_ROUTES: [&str; 2] = ["/hearth/", "/api/"];

/// What a refused client is told.
const REFUSAL: &str = "this fleet needs its cluster secret: set HEARTH_SECRET_FILE (or HEARTH_SECRET)";

/// What a cluster-mode job's driver may ask of a server, and whether its job still runs.
pub trait JobRule: Send + Sync + 'static {
    /// Whether job `job` may send `method` to `path`.
    fn may_ask(&self, job: &str, method: &Method, path: &str) -> bool;

    /// Whether job `job` has ended, so that its key is refused; a server that cannot know says no.
    fn has_ended(&self, _job: &str) -> bool {
        false
    }
}

/// The rule of a server whose every request a job may make (an executor's Flight port: results of queries).
pub struct AnyJob;

impl JobRule for AnyJob {
    fn may_ask(&self, _job: &str, _method: &Method, _path: &str) -> bool {
        true
    }
}

/// The rule of a server no job may reach (an executor's task port: only the scheduler launches tasks).
pub struct NoJob;

impl JobRule for NoJob {
    fn may_ask(&self, _job: &str, _method: &Method, _path: &str) -> bool {
        false
    }
}

/// The secret a server's requests must prove, what jobs may ask of it, the expiring tokens it admitted, and
/// the server's name for its log.
struct Guard {
    secret: ClusterSecret,
    server: &'static str,
    jobs: Box<dyn JobRule>,
    replays: ReplayMemory,
}

/// `service` behind the check of `secret` (none: a fleet without a secret, whose servers let anyone in —
/// logged once as a warning naming `server`), jobs admitted as `jobs` says. Serve the result with connect
/// info ([`Peer`]).
pub fn guarded(service: Router, secret: Option<ClusterSecret>, server: &'static str, jobs: impl JobRule) -> Router {
    match secret {
        Some(secret) => service.layer(middleware::from_fn_with_state(
            Arc::new(Guard {
                secret,
                server,
                jobs: Box::new(jobs),
                replays: ReplayMemory::default(),
            }),
            require_secret,
        )),
        None => {
            log::warn!(
                "no cluster secret: {server} lets in anyone who reaches it (give the fleet one with --secret-file or {SECRET_FILE_ENV})"
            );
            service.layer(middleware::from_fn(admit_every_request))
        }
    }
}

/// Lets every request through on a fleet without a secret, its connection admitted: only silence is bounded.
async fn admit_every_request(ConnectInfo(connection): ConnectInfo<Peer>, request: Request, next: Next) -> Response {
    connection.admission.admit();
    next.run(request).await
}

/// Lets through requests that carry the secret, and the health probes; refuses the rest.
async fn require_secret(
    State(guard): State<Arc<Guard>>,
    ConnectInfo(connection): ConnectInfo<Peer>,
    mut request: Request,
    next: Next,
) -> Response {
    let peer = connection.address;
    let grpc = (request.headers().get(header::CONTENT_TYPE))
        .and_then(|t| t.to_str().ok())
        .is_some_and(|t| t.starts_with("application/grpc"));
    if !PROBES.contains(&request.uri().path())
        && let Some(user) = another_local_user(&connection)
    {
        return another_users_connection(&guard, &request, peer, user, grpc);
    }
    let refusal = match admit(&guard, &request, &connection) {
        Ok(Principal::Job(job)) if !guard.jobs.may_ask(&job, request.method(), request.uri().path()) => {
            return beyond_its_job(&guard, &job, &request, peer, grpc);
        }
        Ok(principal) => {
            connection.admission.admit();
            // The servers behind learn whom the request speaks for (the scheduler: whose Ballista jobs).
            request.extensions_mut().insert(principal);
            return next.run(request).await;
        }
        Err(_) if PROBES.contains(&request.uri().path()) => return next.run(request).await,
        Err(refusal) => refusal,
    };
    log::warn!(
        "{} refused {} {} from {peer}: {refusal}",
        guard.server,
        request.method(),
        request.uri().path()
    );
    let said = match refusal {
        TokenRefusal::Missing | TokenRefusal::Forged | TokenRefusal::OtherVersion => REFUSAL.to_string(),
        // The caller holds (or held) a token of the secret: it may learn what was wrong with it.
        refusal => format!("{} refused this call: {refusal}", guard.server),
    };
    match grpc {
        true => grpc_error(UNAUTHENTICATED, &said),
        false => (StatusCode::UNAUTHORIZED, format!("{said}\n")).into_response(),
    }
}

/// Whom `request`'s token speaks for, on `connection`: a token of the secret for the service its route
/// belongs to, not admitted before on another connection, not of a job that has ended.
fn admit(guard: &Guard, request: &Request, connection: &Peer) -> Result<Principal, TokenRefusal> {
    let header = |name: header::HeaderName| request.headers().get(name).and_then(|v| v.to_str().ok());
    let presented = Presented {
        authorization: header(header::AUTHORIZATION),
        user_agent: header(header::USER_AGENT),
    };
    let service = service_of(request.uri().path());
    let admitted = (guard.secret).check(presented, connection.address.ip(), service)?;
    if let Some(once) = &admitted.once {
        guard.replays.admit(once, connection.admission.connection())?;
    }
    match admitted.principal {
        Principal::Job(job) if guard.jobs.has_ended(&job) => Err(TokenRefusal::JobEnded(job)),
        principal => Ok(principal),
    }
}

/// The service a request's route belongs to: the scheduler's REST routes (hearth's and Ballista's), or gRPC
/// (every other route of every port). Told by the route, not by what the caller says its body is.
fn service_of(path: &str) -> Service {
    match REST_ROUTES.iter().any(|prefix| path.starts_with(prefix)) {
        true => Service::Api,
        false => Service::Grpc,
    }
}

/// The user of a process on this machine, other than the fleet's own user (or root), at the other end of a
/// connection not yet admitted: whatever its token, it is refused — a token can be read from another user's
/// file, the kernel's socket table cannot be argued with. Looked up once, at the connection's first request.
fn another_local_user(connection: &Peer) -> Option<u32> {
    let local = connection.local.filter(|_| connection.admission.is_waiting())?;
    other_local_user(connection.address, local)
}

/// The refusal of a request from a process of `user`, another user of this machine.
fn another_users_connection(
    guard: &Guard,
    request: &Request,
    peer: std::net::SocketAddr,
    user: u32,
    grpc: bool,
) -> Response {
    log::warn!(
        "{} refused {} {} from {peer}: a process of user {user} on this machine, not the fleet's user",
        guard.server,
        request.method(),
        request.uri().path()
    );
    let refusal = format!(
        "{} admits from this machine only the processes of the user it runs as; this connection is user {user}'s",
        guard.server
    );
    match grpc {
        true => grpc_error(UNAUTHENTICATED, &refusal),
        false => (StatusCode::UNAUTHORIZED, format!("{refusal}\n")).into_response(),
    }
}

/// The refusal of a request job `job` may not make.
fn beyond_its_job(guard: &Guard, job: &str, request: &Request, peer: std::net::SocketAddr, grpc: bool) -> Response {
    let (method, path) = (request.method(), request.uri().path());
    log::warn!(
        "{} refused {method} {path} from {peer}: job {job} may not ask it",
        guard.server
    );
    let refusal = format!(
        "job {job}'s credential may not ask {method} {path} of {}: a cluster-mode job reaches its own record, \
         its queries and their results",
        guard.server
    );
    match grpc {
        true => grpc_error(PERMISSION_DENIED, &refusal),
        false => (StatusCode::FORBIDDEN, format!("{refusal}\n")).into_response(),
    }
}
