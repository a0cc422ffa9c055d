//! The check in front of every server of the fleet — the scheduler's gRPC and REST port, each executor's
//! Flight and task ports: a request that does not present the cluster secret is refused before it reaches
//! the server behind, gRPC calls with the status UNAUTHENTICATED and REST calls with 401, and each refusal is
//! logged with the peer's address. The health probes (`/healthz`, `/readyz`) stay open. A cluster-mode job's
//! driver proves only its job's key: each server says what a job may ask of it ([`JobRule`]); anything else
//! is refused as PERMISSION_DENIED (gRPC) or 403 (REST).
//!
//! ```no_run
//! # fn guard(secret: hearth_engine::ballista::ClusterSecret) -> axum::Router {
//! let service = axum::Router::new().route("/", axum::routing::get(|| async { "hello" }));
//! hearth_fleet::guard::guarded(service, Some(secret), "an example server", hearth_fleet::guard::no_job)
//! # }
//! ```

use std::sync::Arc;

use axum::Router;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use hearth_engine::ballista::{ClusterSecret, Principal, SECRET_FILE_ENV};

use super::tls::Peer;

/// Paths anyone may ask for: liveness and readiness probes, which say nothing about the fleet's work.
const PROBES: [&str; 2] = ["/healthz", "/readyz"];

/// What a refused client is told.
const REFUSAL: &str = "this fleet needs its cluster secret: set HEARTH_SECRET_FILE (or HEARTH_SECRET)";

/// What a cluster-mode job's driver may ask of a server: whether job `job` may send `method` to `path`.
pub type JobRule = fn(job: &str, method: &Method, path: &str) -> bool;

/// The rule of a server whose every request a job may make (an executor's Flight port: results of queries).
pub fn any_job(_job: &str, _method: &Method, _path: &str) -> bool {
    true
}

/// The rule of a server no job may reach (an executor's task port: only the scheduler launches tasks).
pub fn no_job(_job: &str, _method: &Method, _path: &str) -> bool {
    false
}

/// The secret a server's requests must prove, what jobs may ask of it, and the server's name for its log.
struct Guard {
    secret: ClusterSecret,
    server: &'static str,
    jobs: JobRule,
}

/// `service` behind the check of `secret` (none: a fleet without a secret, whose servers let anyone in —
/// logged once as a warning naming `server`), jobs admitted as `jobs` says. Serve the result with connect
/// info ([`Peer`]).
pub fn guarded(service: Router, secret: Option<ClusterSecret>, server: &'static str, jobs: JobRule) -> Router {
    match secret {
        Some(secret) => service.layer(middleware::from_fn_with_state(
            Arc::new(Guard { secret, server, jobs }),
            require_secret,
        )),
        None => {
            log::warn!(
                "no cluster secret: {server} lets in anyone who reaches it (give the fleet one with --secret-file or {SECRET_FILE_ENV})"
            );
            service
        }
    }
}

/// Lets through requests that carry the secret, and the health probes; refuses the rest.
async fn require_secret(
    State(guard): State<Arc<Guard>>,
    ConnectInfo(Peer(peer)): ConnectInfo<Peer>,
    request: Request,
    next: Next,
) -> Response {
    let (admitted, grpc) = {
        let header = |name: header::HeaderName| request.headers().get(name).and_then(|v| v.to_str().ok());
        (
            (guard.secret).check(header(header::AUTHORIZATION), header(header::USER_AGENT), peer.ip()),
            header(header::CONTENT_TYPE).is_some_and(|t| t.starts_with("application/grpc")),
        )
    };
    let refusal = match admitted {
        Ok(Principal::Member) => return next.run(request).await,
        Ok(Principal::Job(job)) if (guard.jobs)(&job, request.method(), request.uri().path()) => {
            return next.run(request).await;
        }
        Ok(Principal::Job(job)) => return beyond_its_job(&guard, &job, &request, peer, grpc),
        Err(_) if PROBES.contains(&request.uri().path()) => return next.run(request).await,
        Err(refusal) => refusal,
    };
    log::warn!(
        "{} refused {} {} from {peer}: {refusal}",
        guard.server,
        request.method(),
        request.uri().path()
    );
    match grpc {
        true => grpc_error(16, REFUSAL),
        false => (StatusCode::UNAUTHORIZED, format!("{REFUSAL}\n")).into_response(),
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

/// gRPC's status PERMISSION_DENIED.
const PERMISSION_DENIED: u8 = 7;

/// A gRPC error with `status` (tonic's `Code` as a number) and `message`: trailers-only headers on an empty
/// 200 response, as gRPC carries an error that comes before any answer.
pub(crate) fn grpc_error(status: u8, message: &str) -> Response {
    // gRPC percent-encodes its message (anything outside printable ASCII, and `%` itself).
    let encoded: String = (message.bytes())
        .map(|b| match b {
            b' '..=b'~' if b != b'%' => char::from(b).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    let message = header::HeaderValue::from_str(&encoded)
        .unwrap_or_else(|_| header::HeaderValue::from_static("refused (the reason is not printable)"));
    let mut response = axum::body::Body::empty().into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/grpc"),
    );
    headers.insert("grpc-status", header::HeaderValue::from(u16::from(status)));
    headers.insert("grpc-message", message);
    response
}
