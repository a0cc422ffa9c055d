//! Starting and stopping the server: the listening socket, the sessions' master, the token, and the task that
//! ends idle sessions.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hearth_exec::session::Session;
use hearth_training::functions::DefaultFeatures;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tonic::transport::server::TcpIncoming;
use tonic::transport::{Identity, Server, ServerTlsConfig};

use crate::auth::Token;
use crate::errors::{ConnectError, Result};
use crate::routes::SparkConnectService;
use crate::rpcs::Rpcs;
use crate::sessions::Sessions;

/// Spark Connect's usual port.
pub const DEFAULT_PORT: u16 = 15002;

/// How a server is started.
///
/// ```
/// let options = hearth_connect::ConnectOptions::new("127.0.0.1:0".parse().unwrap(), "local[2]");
/// assert_eq!(options.idle_timeout, std::time::Duration::from_secs(3600));
/// ```
#[derive(Debug, Clone)]
pub struct ConnectOptions {
    /// Where it listens (port 0: any free port).
    pub bind: SocketAddr,
    /// Where client sessions' plans run: `local[N]`, `standalone[N]` or `df://HOST:PORT`.
    pub master: String,
    /// The token every call must carry, or none (allowed on a loopback address only).
    pub token: Option<String>,
    /// A session with no request for this long is released (Spark's default: one hour).
    pub idle_timeout: Duration,
    /// The certificate and key it speaks TLS with (clients connect with `;use_ssl=true`), or none: plain
    /// gRPC.
    pub tls: Option<Identity>,
    /// Listen on a non-loopback address without TLS (the token then crosses the network in clear).
    pub insecure: bool,
}

impl ConnectOptions {
    /// Options for a server on `bind` running plans on `master`, without a token, sessions idle for an hour
    /// released.
    pub fn new(bind: SocketAddr, master: &str) -> Self {
        Self {
            bind,
            master: master.to_owned(),
            token: None,
            idle_timeout: Duration::from_secs(3600),
            tls: None,
            insecure: false,
        }
    }
}

/// Refuses a non-loopback address without a token, or without TLS unless `insecure`: whoever reaches the
/// port could otherwise run plans as this user, or read a client's token and data on the network.
fn refuse_open_door(options: &ConnectOptions) -> Result<()> {
    if options.bind.ip().is_loopback() {
        return Ok(());
    }
    if options.token.is_none() {
        return Err(ConnectError::IllegalArgument(format!(
            "{} is not a loopback address: give the clients' --token-file (they connect with \
             sc://HOST:PORT/;token=…)",
            options.bind
        )));
    }
    if options.tls.is_none() && !options.insecure {
        return Err(ConnectError::IllegalArgument(format!(
            "{} is not a loopback address: without --tls-dir a client's token and data would cross the network \
             in clear; give --tls-dir (`hearth cluster certs` makes one), bind 127.0.0.1, or pass --insecure on \
             a network whose every user you trust",
            options.bind
        )));
    }
    Ok(())
}

/// A running Spark Connect server.
pub struct ConnectServer {
    address: SocketAddr,
    shutdown: oneshot::Sender<()>,
    serving: JoinHandle<Result<()>>,
    reaper: JoinHandle<()>,
}

impl ConnectServer {
    /// Starts a server: checks the options, connects to the master, binds, and serves in the background.
    pub async fn start(options: ConnectOptions) -> Result<Self> {
        refuse_open_door(&options)?;
        let base = Session::builder()
            .with_default_features()
            .connect(&options.master)
            .await?;
        let listener = TcpListener::bind(options.bind)
            .await
            .map_err(|e| ConnectError::Execution(format!("binding the Spark Connect port {}: {e}", options.bind)))?;
        let address = listener
            .local_addr()
            .map_err(|e| ConnectError::Execution(e.to_string()))?;
        let rpcs = Arc::new(Rpcs::new(Sessions::new(base, options.idle_timeout)));
        let service = SparkConnectService::new(Arc::clone(&rpcs), Arc::new(Token::new(options.token)));
        let (shutdown, stopped) = oneshot::channel::<()>();
        let mut builder = Server::builder();
        if let Some(identity) = options.tls.clone() {
            // rustls cannot pick the process's provider when more than one is linked; an error here only says
            // one was installed already.
            let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
            builder = builder
                .tls_config(ServerTlsConfig::new().identity(identity))
                .map_err(|e| {
                    ConnectError::IllegalArgument(format!("the Spark Connect server's TLS certificate: {e}"))
                })?;
        }
        let serving = tokio::spawn(async move {
            builder
                .http2_keepalive_interval(Some(Duration::from_secs(30)))
                .http2_keepalive_timeout(Some(Duration::from_secs(20)))
                .add_service(service)
                .serve_with_incoming_shutdown(TcpIncoming::from(listener).with_nodelay(Some(true)), async {
                    let _ = stopped.await;
                })
                .await
                .map_err(|e| ConnectError::Execution(format!("the Spark Connect server on {address} failed: {e}")))
        });
        let reaper = tokio::spawn(async move {
            let period = (options.idle_timeout / 4).clamp(Duration::from_millis(100), Duration::from_secs(60));
            let mut ticks = tokio::time::interval(period);
            loop {
                ticks.tick().await;
                rpcs.sessions().release_idle();
            }
        });
        Ok(Self {
            address,
            shutdown,
            serving,
            reaper,
        })
    }

    /// The address it listens on.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Serves until the task serving fails (it does not end on its own).
    pub async fn wait(self) -> Result<()> {
        // The shutdown sender stays alive while serving: dropping it would stop the server.
        let Self {
            shutdown: _serving_until_dropped,
            serving,
            reaper,
            ..
        } = self;
        let outcome = serving.await;
        reaper.abort();
        outcome.map_err(|e| ConnectError::Execution(e.to_string()))?
    }

    /// Stops accepting calls, lets the running ones finish, and returns when it has stopped.
    pub async fn shutdown(self) -> Result<()> {
        let Self {
            shutdown,
            serving,
            reaper,
            ..
        } = self;
        let _ = shutdown.send(());
        let outcome = serving.await;
        reaper.abort();
        outcome.map_err(|e| ConnectError::Execution(e.to_string()))?
    }
}
