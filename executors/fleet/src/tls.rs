//! TLS on the fleet's ports. The scheduler's one port and an executor's two ports (see
//! [`front`](crate::front)) are served through a [`FleetListener`]: TLS when the fleet has TLS — the client's
//! certificate checked before a byte reaches a server — and plain TCP otherwise; either way under the
//! port's [`admission`](crate::admission) bounds.
//!
//! ```no_run
//! # async fn serve() -> std::io::Result<()> {
//! use hearth_fleet::tls::FleetListener;
//!
//! let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let listener = FleetListener::new(tcp, None)?; // plain TCP: no TLS configured
//! axum::serve(listener, axum::Router::new()).await
//! # }
//! ```

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::connect_info::Connected;
use axum::serve::IncomingStream;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;

use crate::admission::{Admission, Admitted, Waiting};

/// How long a client has to finish its TLS handshake.
const HANDSHAKE_DEADLINE: Duration = Duration::from_secs(10);

/// Connections accepted but not yet taken by the server.
const BACKLOG: usize = 64;

/// A connection a [`FleetListener`] accepted: TLS over TCP, or TCP, under its [`Admission`] (which the guard
/// marks).
pub trait Connection: AsyncRead + AsyncWrite + Unpin + Send {
    /// The connection's standing.
    fn admission(&self) -> &Admission;

    /// The address the connection was accepted on (this end's).
    fn local_address(&self) -> Option<SocketAddr>;
}

impl Connection for Admitted<TcpStream> {
    fn admission(&self) -> &Admission {
        Admitted::admission(self)
    }

    fn local_address(&self) -> Option<SocketAddr> {
        self.get_ref().local_addr().ok()
    }
}

impl Connection for tokio_rustls::server::TlsStream<Admitted<TcpStream>> {
    fn admission(&self) -> &Admission {
        self.get_ref().0.admission()
    }

    fn local_address(&self) -> Option<SocketAddr> {
        self.get_ref().0.local_address()
    }
}

/// A listener that hands the server connections whose TLS handshake (when the fleet has TLS) succeeded.
/// Handshakes run apart from accepting, so a slow or hostile client holds up no one; each refusal is
/// logged with the peer. Every connection is [`Admitted`]: closed unless a request on it proves the secret
/// in time, or when too many wait.
pub struct FleetListener {
    incoming: mpsc::Receiver<(Box<dyn Connection>, SocketAddr)>,
    local: SocketAddr,
}

impl FleetListener {
    /// Accepts on `tcp`, with TLS under `tls` when given.
    pub fn new(tcp: TcpListener, tls: Option<Arc<rustls::ServerConfig>>) -> io::Result<Self> {
        let local = tcp.local_addr()?;
        let (send, incoming) = mpsc::channel::<(Box<dyn Connection>, SocketAddr)>(BACKLOG);
        let acceptor = tls.map(TlsAcceptor::from);
        let waiting = Waiting::default();
        // Accepts until the listener is dropped (its receiver closes), and then lets go of the port.
        tokio::spawn(async move {
            loop {
                let accepted = tokio::select! {
                    () = send.closed() => break,
                    accepted = tcp.accept() => accepted,
                };
                let (stream, peer) = match accepted {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        log::warn!("accepting a connection on {local}: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let _ = stream.set_nodelay(true);
                let stream = Admitted::new(stream, waiting.enter(peer.ip()));
                let send = send.clone();
                match &acceptor {
                    None => {
                        let _ = send.send((Box::new(stream), peer)).await;
                    }
                    Some(acceptor) => {
                        let acceptor = acceptor.clone();
                        tokio::spawn(async move {
                            if let Some(tls) = handshake(&acceptor, stream, peer).await {
                                let _ = send.send((Box::new(tls), peer)).await;
                            }
                        });
                    }
                }
            }
        });
        Ok(Self { incoming, local })
    }
}

/// The server side of a TLS handshake with `peer`, or none (logged) when it fails or takes too long.
async fn handshake<S: AsyncRead + AsyncWrite + Unpin>(
    acceptor: &TlsAcceptor,
    stream: S,
    peer: SocketAddr,
) -> Option<tokio_rustls::server::TlsStream<S>> {
    match tokio::time::timeout(HANDSHAKE_DEADLINE, acceptor.accept(stream)).await {
        Ok(Ok(tls)) => Some(tls),
        Ok(Err(e)) if plain_text(&e) => {
            log::warn!(
                "refused a plain-text connection from {peer}: this fleet speaks TLS (one such refusal per executor is expected as it registers: Ballista's scheduler checks its task port in plain text)"
            );
            None
        }
        Ok(Err(e)) => {
            log::warn!("refused a connection from {peer}: TLS handshake failed: {e}");
            None
        }
        Err(_) => {
            log::warn!("refused a connection from {peer}: no TLS handshake within {HANDSHAKE_DEADLINE:?}");
            None
        }
    }
}

/// Whether a handshake failed because the client spoke something other than TLS.
fn plain_text(error: &io::Error) -> bool {
    error
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        .is_some_and(|e| {
            matches!(
                e,
                rustls::Error::InvalidMessage(rustls::InvalidMessage::InvalidContentType)
            )
        })
}

impl axum::serve::Listener for FleetListener {
    type Io = Box<dyn Connection>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.incoming.recv().await {
            Some(accepted) => accepted,
            // The accepting task ends only with the runtime.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        Ok(self.local)
    }
}

/// The peer of a connection a [`FleetListener`] accepted, for handlers and middleware: its address, the
/// address it connected to, and the connection's [`Admission`], which the guard marks when a request proves the
/// secret.
#[derive(Clone, Debug)]
pub struct Peer {
    /// The peer's address.
    pub address: SocketAddr,
    /// The address the peer connected to (this end's).
    pub local: Option<SocketAddr>,
    /// The connection's standing.
    pub admission: Admission,
}

impl Connected<IncomingStream<'_, FleetListener>> for Peer {
    fn connect_info(stream: IncomingStream<'_, FleetListener>) -> Self {
        Peer {
            address: *stream.remote_addr(),
            local: stream.io().local_address(),
            admission: stream.io().admission().clone(),
        }
    }
}
