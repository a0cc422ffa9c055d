//! `hearth connect`: a Spark Connect server, so PySpark code written for `SparkSession.builder.remote(…)` runs
//! on hearth; it serves until interrupted (Ctrl-C or SIGTERM).

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use hearth_common::host::host_name;
use hearth_connect::{ConnectOptions, ConnectServer, DEFAULT_PORT};
use hearth_exec::ballista::{FleetTls, Role};

use super::CommandResult;

/// `hearth connect`'s arguments.
#[derive(Debug, Args)]
pub struct ConnectArgs {
    /// The address to listen on; a non-loopback one needs a token, and --tls-dir or --insecure.
    #[arg(long, default_value_t = SocketAddr::from((Ipv4Addr::LOCALHOST, DEFAULT_PORT)))]
    bind: SocketAddr,
    /// Speak TLS with the scheduler's certificate from this directory (as `hearth cluster certs` writes it),
    /// or its one cert.pem and key.pem. Clients connect with `sc://HOST:PORT/;use_ssl=true;token=…` and trust
    /// its ca.pem (PySpark's gRPC reads GRPC_DEFAULT_SSL_ROOTS_FILE_PATH).
    #[arg(long = "tls-dir", value_name = "DIR")]
    tls_dir: Option<PathBuf>,
    /// A file holding the token clients must give (`sc://HOST:PORT/;token=…`); the token can also come from
    /// SPARK_CONNECT_AUTHENTICATE_TOKEN, the variable PySpark's client reads.
    #[arg(long)]
    token_file: Option<PathBuf>,
    /// Release a client's session after this many seconds without a request.
    #[arg(long, default_value_t = 3600)]
    idle_timeout: u64,
    /// Listen on a non-loopback address without TLS.
    #[arg(long)]
    insecure: bool,
}

/// Serves Spark Connect on `args.bind`, running client plans on `master`, until interrupted.
pub async fn run(master: &str, args: ConnectArgs) -> CommandResult {
    let token = match &args.token_file {
        Some(path) => {
            let token = std::fs::read_to_string(path)
                .map_err(|e| format!("reading the token file {}: {e}", path.display()))?
                .trim()
                .to_owned();
            if token.is_empty() {
                return Err(format!("the token file {} is empty", path.display()).into());
            }
            Some(token)
        }
        None => std::env::var("SPARK_CONNECT_AUTHENTICATE_TOKEN")
            .ok()
            .filter(|t| !t.is_empty()),
    };
    let with_token = token.is_some();
    let mut options = ConnectOptions::new(args.bind, master);
    options.token = token;
    options.idle_timeout = Duration::from_secs(args.idle_timeout);
    options.insecure = args.insecure;
    options.tls = match &args.tls_dir {
        Some(dir) => Some(FleetTls::read_as(dir, Role::Scheduler)?.identity()),
        None => None,
    };
    let with_tls = options.tls.is_some();
    let server = ConnectServer::start(options).await?;
    let address = server.address();
    // The name clients reach it by (and its certificate names): this machine's for every interface.
    let host = if address.ip().is_loopback() {
        "localhost".to_owned()
    } else if address.ip().is_unspecified() {
        host_name()
    } else {
        address.ip().to_string()
    };
    let params = [(with_tls, ";use_ssl=true"), (with_token, ";token=…")];
    let params: String = params.iter().filter(|(on, _)| *on).map(|(_, text)| *text).collect();
    let params = if params.is_empty() {
        params
    } else {
        format!("/{params}")
    };
    println!(
        "hearth Spark Connect server on sc://{host}:{}{params} (master {master})",
        address.port()
    );
    tokio::select! {
        outcome = server.wait() => outcome?,
        _ = interrupted() => {}
    }
    Ok(())
}

/// Resolves on Ctrl-C or SIGTERM.
async fn interrupted() {
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = async { if let Some(t) = terminate.as_mut() { t.recv().await; } else { std::future::pending::<()>().await } } => {}
    }
}
