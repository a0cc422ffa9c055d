//! The check in front of every server of the fleet — the scheduler's gRPC and REST port, each executor's
//! Flight and task ports: a request that does not present the cluster secret is refused before it reaches
//! the server behind, gRPC calls with the status UNAUTHENTICATED and REST calls with 401, and each refusal is
//! logged with the peer's address. The health probes (`/healthz`, `/readyz`) stay open.
//!
//! ```no_run
//! # fn guard(secret: hearth_engine::ballista::ClusterSecret) -> axum::Router {
//! let service = axum::Router::new().route("/", axum::routing::get(|| async { "hello" }));
//! hearth_fleet::guard::guarded(service, Some(secret), "an example server")
//! # }
//! ```

use std::sync::Arc;

use axum::Router;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use hearth_engine::ballista::{ClusterSecret, SECRET_FILE_ENV};

use super::tls::Peer;

/// Paths anyone may ask for: liveness and readiness probes, which say nothing about the fleet's work.
const PROBES: [&str; 2] = ["/healthz", "/readyz"];

/// What a refused client is told.
const REFUSAL: &str = "this fleet needs its cluster secret: set HEARTH_SECRET_FILE (or HEARTH_SECRET)";

/// The secret a server's requests must present, and the server's name for its log.
struct Guard {
    secret: ClusterSecret,
    server: &'static str,
}

/// `service` behind the check of `secret` (none: a fleet without a secret, whose servers let anyone in —
/// logged once as a warning naming `server`). Serve the result with connect info ([`Peer`]).
pub fn guarded(service: Router, secret: Option<ClusterSecret>, server: &'static str) -> Router {
    match secret {
        Some(secret) => service.layer(middleware::from_fn_with_state(
            Arc::new(Guard { secret, server }),
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
        Ok(()) => return next.run(request).await,
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

/// A gRPC error with `status` (tonic's `Code` as a number) and `message`: trailers-only headers on an empty
/// 200 response, as gRPC carries an error that comes before any answer.
pub(crate) fn grpc_error(status: u8, message: &str) -> Response {
    let message = header::HeaderValue::from_str(message)
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
