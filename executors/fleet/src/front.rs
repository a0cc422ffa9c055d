//! An executor's two advertised ports, served by hearth rather than by Ballista: each speaks TLS when the
//! fleet has it and checks the cluster secret on every request ([`guarded`]) before anything reaches a
//! server. The Flight port serves Ballista's Flight service in this process directly (see
//! [`flight_front`](super::flight::flight_front)); the task port is a gRPC proxy to Ballista's task server,
//! which Ballista 55 binds to a TCP address of its own choosing — hearth puts it on a loopback address
//! ([`inner_host`]), never on the advertised one.
//!
//! ```no_run
//! # async fn start() -> Result<(), hearth_fleet::FleetError> {
//! use std::net::{IpAddr, Ipv4Addr, SocketAddr};
//!
//! let advertised = IpAddr::V4(Ipv4Addr::LOCALHOST);
//! let fronts = hearth_fleet::front::Fronts::bind(advertised, 0, 0).await?;
//! let inner = SocketAddr::new(hearth_fleet::front::inner_host(advertised)?, fronts.task_port());
//! let (_flight, tasks) = fronts.into_listeners();
//! let token = hearth_fleet::launch::LaunchToken::generate();
//! let owners = hearth_fleet::JobOwners::default();
//! let serving = hearth_fleet::front::task_front(tasks, None, None, inner, (token, owners));
//! # serving.abort();
//! # Ok(())
//! # }
//! ```

use std::future::Future;
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use hearth_exec::ballista::ClusterSecret;
use tokio::net::TcpListener;
use tonic::codegen::Service;
use tonic::transport::{Channel, Endpoint};

use super::guard::{NoJob, guarded};
use super::launch::LaunchToken;
use super::ownership::JobOwners;
use super::tls::{FleetListener, Peer};
use crate::error::{FleetError, Result};
use crate::grpc::{INVALID_ARGUMENT, UNAVAILABLE, grpc_error, read_whole, with_body};

/// How long the task proxy waits to connect to Ballista's task server.
const INNER_CONNECT: Duration = Duration::from_secs(5);

/// The two advertised ports of an executor, bound before Ballista starts so that their numbers are known
/// (Ballista advertises them) and no other process can take them in between.
#[derive(Debug)]
pub struct Fronts {
    flight: TcpListener,
    tasks: TcpListener,
}

impl Fronts {
    /// Binds the Flight and the task port on `host` (port 0: a free one).
    pub async fn bind(host: IpAddr, flight_port: u16, task_port: u16) -> Result<Self> {
        let bind = |port: u16| async move {
            (TcpListener::bind((host, port)).await).map_err(|e| FleetError::listen(SocketAddr::new(host, port), e))
        };
        Ok(Self {
            flight: bind(flight_port).await?,
            tasks: bind(task_port).await?,
        })
    }

    /// The Flight port's number.
    pub fn flight_port(&self) -> u16 {
        self.flight.local_addr().map_or(0, |a| a.port())
    }

    /// The task port's number.
    pub fn task_port(&self) -> u16 {
        self.tasks.local_addr().map_or(0, |a| a.port())
    }

    /// The listeners: Flight's, then the task port's.
    pub fn into_listeners(self) -> (TcpListener, TcpListener) {
        (self.flight, self.tasks)
    }
}

/// Where Ballista's task server listens for an executor advertised on `advertised`: a loopback address other
/// than it, so that both can use the task port's number (Ballista binds and advertises one number).
pub fn inner_host(advertised: IpAddr) -> Result<IpAddr> {
    match advertised {
        IpAddr::V4(v4) if v4.is_unspecified() => Err(FleetError::option(
            "--bind",
            "an executor must be bound to one address, not every interface: its task port is a front for a server on a loopback address with the same port number",
        )),
        // All of 127.0.0.0/8 is this machine's loopback.
        IpAddr::V4(v4) if v4.is_loopback() => Ok(IpAddr::V4(match v4 == Ipv4Addr::new(127, 0, 0, 2) {
            true => Ipv4Addr::new(127, 0, 0, 3),
            false => Ipv4Addr::new(127, 0, 0, 2),
        })),
        IpAddr::V4(_) => Ok(IpAddr::V4(Ipv4Addr::LOCALHOST)),
        IpAddr::V6(_) => Err(FleetError::option(
            "--bind",
            "an executor must be bound to an IPv4 address",
        )),
    }
}

/// Serves `app` on `listener` — TLS under `tls` when given — until `until` resolves.
pub async fn serve(
    listener: TcpListener,
    tls: Option<Arc<rustls::ServerConfig>>,
    app: Router,
    until: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    let listener = FleetListener::new(listener, tls)?;
    axum::serve(listener, app.into_make_service_with_connect_info::<Peer>())
        .with_graceful_shutdown(until)
        .await
}

/// The task port: calls that present `secret` are passed to Ballista's task server at `inner`, launches
/// stamped with `token` (see [`launch`](super::launch)) and their jobs' owners told to `owners`; the rest
/// are refused. Runs until the returned task is aborted.
pub fn task_front(
    listener: TcpListener,
    tls: Option<Arc<rustls::ServerConfig>>,
    secret: Option<ClusterSecret>,
    inner: SocketAddr,
    (token, owners): (LaunchToken, JobOwners),
) -> tokio::task::JoinHandle<()> {
    let channel = Endpoint::from_shared(format!("http://{inner}"))
        .map(|endpoint| endpoint.connect_timeout(INNER_CONNECT).connect_lazy());
    tokio::spawn(async move {
        let channel = match channel {
            Ok(channel) => channel,
            Err(e) => {
                log::error!("the executor's task port cannot pass calls to {inner}: {e}");
                return;
            }
        };
        let proxy = Router::new().fallback(forward).with_state(Arc::new(Inner {
            channel,
            address: inner,
            token,
            owners,
        }));
        let app = guarded(proxy, secret, "the executor's task port", NoJob);
        if let Err(e) = serve(listener, tls, app, std::future::pending()).await {
            log::error!("the executor's task port stopped: {e}");
        }
    })
}

/// Ballista's task server, as the proxy reaches it, the token it stamps launches with, and the owners of
/// the jobs launched.
struct Inner {
    channel: Channel,
    address: SocketAddr,
    token: LaunchToken,
    owners: JobOwners,
}

/// Passes one call to Ballista's task server — a task launch stamped with the token, the caller's token
/// taken off — and its answer back, trailers included.
async fn forward(State(inner): State<Arc<Inner>>, mut request: Request) -> Response {
    request.headers_mut().remove(header::USER_AGENT);
    request.headers_mut().remove(header::AUTHORIZATION);
    let request = match LaunchToken::is_launch(request.uri().path()) {
        true => match stamped(&inner, request).await {
            Ok(request) => request,
            Err(refusal) => return refusal,
        },
        false => request,
    };
    let mut channel = inner.channel.clone();
    let answered = async {
        std::future::poll_fn(|cx| channel.poll_ready(cx)).await?;
        channel.call(request.map(tonic::body::Body::new)).await
    };
    match answered.await {
        Ok(response) => response.map(axum::body::Body::new).into_response(),
        Err(e) => {
            log::warn!("the executor's task server at {} cannot be reached: {e}", inner.address);
            grpc_error(UNAVAILABLE, "the executor's task server cannot be reached")
        }
    }
}

/// A launch `request` with the token on each of its tasks (their jobs' owners learnt on the way), or the
/// refusal of a launch that is not one message of at most the fleet's message size.
async fn stamped(inner: &Inner, request: Request) -> std::result::Result<Request, Response> {
    let (head, body) = read_whole(request, "a task launch").await?;
    let learn = |job: &str, props: &[_]| inner.owners.learn(job, props);
    let body =
        (inner.token.stamp(head.uri.path(), body, learn)).map_err(|e| grpc_error(INVALID_ARGUMENT, &e.to_string()))?;
    Ok(with_body(head, body))
}
