//! A parameter server inside the barrier stage: rank 0 holds the center variable, and every rank (rank 0's
//! own trainer too) exchanges with it over a TCP link that proves the job secret, as the ring's links do.
//!
//! Each exchange is one request and one reply, applied atomically under the center's lock:
//!
//! ```text
//! add(change)        center += change            → the new center   (DOWNPOUR, ADAG)
//! elastic(x, α)      E = α(x − center); center += E → E            (asynchronous EASGD, EAMSGD)
//! pull               nothing                      → the center
//! ```
//!
//! Every reply carries the center's version (the updates applied so far); a rank's *staleness* at an update
//! is how many other ranks' updates the center took since this rank last saw it. Every read has the job's
//! deadline. A rank that leaves without saying goodbye (it died, or stalled past the deadline) fails the
//! center: every later request of every rank is answered with an error naming that rank.

use std::io;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::acceptor::{Acceptor, Refused};
use super::auth::{JobSecret, prove_as_client, prove_as_server};
use super::error::{CollectiveError, Result, describe_io};
use super::link::Link;
use super::ring::Communicator;
use super::update::{add_into, elastic_exchange};

const ADD: u8 = 1;
const ELASTIC: u8 = 2;
const PULL: u8 = 3;
const DONE: u8 = 4;
/// kind, the version the rank last saw, α.
const REQUEST_HEAD: usize = 1 + 8 + 4;
/// status, version, staleness.
const REPLY_HEAD: usize = 1 + 8 + 8;

/// How stale a rank's updates were: over its `updates`, the mean and largest number of other ranks'
/// updates the center took between this rank's previous exchange and this one.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Staleness {
    /// Updates this rank sent.
    pub updates: u64,
    /// Mean staleness.
    pub mean: f64,
    /// Largest staleness.
    pub max: u64,
}

impl Staleness {
    /// Several ranks' staleness as one: their updates, the mean over all of them, the largest; none without
    /// any rank's.
    ///
    /// ```
    /// use hearth_collective::Staleness;
    /// let ranks = [Staleness { updates: 1, mean: 0.0, max: 0 }, Staleness { updates: 3, mean: 2.0, max: 4 }];
    /// assert_eq!(Staleness::combine(ranks), Some(Staleness { updates: 4, mean: 1.5, max: 4 }));
    /// ```
    pub fn combine(ranks: impl IntoIterator<Item = Staleness>) -> Option<Staleness> {
        ranks.into_iter().reduce(|a, b| {
            let updates = a.updates + b.updates;
            Staleness {
                updates,
                mean: (a.mean * a.updates as f64 + b.mean * b.updates as f64) / updates.max(1) as f64,
                max: a.max.max(b.max),
            }
        })
    }
}

/// The center variable and what has happened to it.
struct Center {
    values: Vec<f32>,
    version: u64,
    /// The first rank to fail, once one has.
    failure: Option<String>,
}

/// Rank 0's parameter server: a thread accepting one link per rank, and one thread per link. Dropping it
/// closes every link and joins the threads.
pub struct CenterServer {
    links: Arc<Mutex<Vec<TcpStream>>>,
    closing: Arc<AtomicBool>,
    acceptor: Option<JoinHandle<()>>,
    port: u16,
}

/// A rank's link to the parameter server.
///
/// ```
/// use hearth_collective::LocalWorld;
///
/// // Two ranks each add their rank + 1 to a center of zeros; the second to arrive was one update stale.
/// let outcomes = LocalWorld::new(2)
///     .run(|mut comm| {
///         let (_server, mut client) = comm.start_center(&[0.0; 3])?;
///         let center = client.add(&[comm.rank() as f32 + 1.0; 3])?;
///         comm.barrier()?;
///         let pulled = client.pull()?;
///         let staleness = client.staleness();
///         client.finish();
///         comm.barrier()?; // rank 0's server closes when `_server` drops
///         Ok::<_, hearth_collective::CollectiveError>((center, pulled, staleness))
///     })
///     .unwrap();
/// let (_, final_center, _) = outcomes[0].as_ref().unwrap();
/// assert_eq!(final_center, &vec![3.0; 3]);
/// let stale: u64 = outcomes.iter().map(|o| o.as_ref().unwrap().2.max).sum();
/// assert_eq!(stale, 1);
/// ```
pub struct CenterClient {
    link: Link,
    rank: usize,
    server_host: String,
    /// Values in the center.
    len: usize,
    timeout: Duration,
    /// The version of the center this rank saw last.
    seen: u64,
    exchanges: u64,
    staleness: Staleness,
}

impl Communicator {
    /// Starts the parameter server on rank 0 with `initial` as the center, and links every rank to it;
    /// returns rank 0's server (none elsewhere) and this rank's client. Every rank must call it.
    pub fn start_center(&mut self, initial: &[f32]) -> Result<(Option<CenterServer>, CenterClient)> {
        let server_ip = self.peers()[0].registration.listen.ip();
        let server = if self.rank() == 0 {
            Some(CenterServer::start(
                SocketAddr::new(server_ip, 0),
                initial.to_vec(),
                self.world_size(),
                self.secret().clone(),
                self.timeout(),
            )?)
        } else {
            None
        };
        let port = server.as_ref().map_or(0u16, CenterServer::port);
        let ports = self.allgather_bytes(&port.to_le_bytes())?;
        let port = ports[0].as_slice().try_into().map_or(0, u16::from_le_bytes);
        let address = SocketAddr::new(server_ip, port);
        let client = CenterClient::connect(self, address, initial.len())?;
        Ok((server, client))
    }
}

impl CenterServer {
    fn start(bind: SocketAddr, initial: Vec<f32>, ranks: usize, secret: JobSecret, timeout: Duration) -> Result<Self> {
        let local = |what: &str, source| CollectiveError::Local {
            what: format!("{what} the parameter server's listener on {bind}"),
            source,
        };
        let listener = TcpListener::bind(bind).map_err(|e| local("binding", e))?;
        listener.set_nonblocking(true).map_err(|e| local("polling", e))?;
        let port = listener
            .local_addr()
            .map_err(|e| local("reading the address of", e))?
            .port();
        let center = Mutex::new(Center {
            values: initial,
            version: 0,
            failure: None,
        });
        let links = Arc::new(Mutex::new(Vec::new()));
        let closing = Arc::new(AtomicBool::new(false));
        let acceptor = {
            let (links, closing) = (Arc::clone(&links), Arc::clone(&closing));
            std::thread::Builder::new()
                .name("hearth-center".to_string())
                .spawn(move || serve(listener, ranks, &secret, timeout, &center, &links, &closing))
                .map_err(|e| local("starting the thread of", e))?
        };
        Ok(Self {
            links,
            closing,
            acceptor: Some(acceptor),
            port,
        })
    }

    fn port(&self) -> u16 {
        self.port
    }
}

impl Drop for CenterServer {
    /// Closes every link (the ranks are past their last exchange) and joins the server's threads.
    fn drop(&mut self) {
        let links = self.links.lock().unwrap_or_else(PoisonError::into_inner);
        self.closing.store(true, Ordering::Relaxed);
        for link in links.iter() {
            let _ = link.shutdown(Shutdown::Both);
        }
        drop(links);
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
    }
}

/// Accepts one authenticated link per rank (until the deadline), then serves them, one thread each, until
/// every rank has said goodbye or failed.
fn serve(
    listener: TcpListener,
    ranks: usize,
    secret: &JobSecret,
    timeout: Duration,
    center: &Mutex<Center>,
    links: &Mutex<Vec<TcpStream>>,
    closing: &AtomicBool,
) {
    let deadline = Instant::now() + timeout;
    let secret = secret.clone();
    let acceptor = match Acceptor::new(listener, "parameter server", move |stream, from, handshake| {
        admit(stream, &secret, ranks, handshake).map(|(rank, link)| (rank, link, from))
    }) {
        Ok(acceptor) => acceptor,
        Err(e) => return fail(center, format!("cannot poll its listener: {e}")),
    };
    let mut accepted: Vec<(usize, Link)> = Vec::new();
    while accepted.len() < ranks && Instant::now() < deadline && !closing.load(Ordering::Relaxed) {
        match acceptor.next(deadline, Duration::from_millis(2)) {
            Ok(Some((rank, _, from))) if accepted.iter().any(|(r, _)| *r == rank) => {
                log::warn!("parameter server: refused {from}: it says it is rank {rank}, which is already linked");
            }
            Ok(Some((rank, link, _))) => accepted.push((rank, link)),
            Ok(None) => {}
            Err(e) => {
                log::warn!("parameter server: accepting a link: {e}");
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
    if accepted.len() < ranks {
        let missing: Vec<usize> = (0..ranks).filter(|r| !accepted.iter().any(|(a, _)| a == r)).collect();
        fail(
            center,
            format!("ranks {missing:?} did not link to the parameter server in time"),
        );
    }
    {
        // Under the lock `Drop` takes to close the links: either it has not begun and will close these, or
        // it has and nothing is served.
        let mut open = links.lock().unwrap_or_else(PoisonError::into_inner);
        if closing.load(Ordering::Relaxed) {
            return;
        }
        open.extend(accepted.iter().filter_map(|(_, link)| link.stream().try_clone().ok()));
    }
    std::thread::scope(|s| {
        for (rank, link) in accepted {
            s.spawn(move || serve_rank(rank, link, timeout, center, closing));
        }
    });
}

/// Checks a new link's proof of the secret and reads which rank (of `ranks`) it is, before `handshake`.
fn admit(
    stream: TcpStream,
    secret: &JobSecret,
    ranks: usize,
    handshake: Instant,
) -> std::result::Result<(usize, Link), Refused> {
    let mut link = prove_as_server(stream, secret)?;
    let hello = link
        .read_message(handshake)
        .map_err(|e| Refused::reading("which rank it is", &e))?;
    let rank = hello.as_slice().try_into().map_or(u64::MAX, u64::from_le_bytes);
    match usize::try_from(rank) {
        Ok(rank) if rank < ranks => Ok((rank, link)),
        _ => Err(Refused::said(format!(
            "it says it is rank {rank}, not one of 0..{ranks}"
        ))),
    }
}

/// A rank that sent no request for this long.
#[derive(Debug)]
struct Idle(Duration);

impl std::fmt::Display for Idle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "sent no request for {} s", self.0.as_secs())
    }
}

impl std::error::Error for Idle {}

/// How often a link waiting for its next request looks whether the server is closing.
const IDLE_POLL: Duration = Duration::from_millis(500);

/// How long a rank may send no request before the server gives up on it: ten times the stage's deadline for
/// one collective, and at least ten minutes, since between requests a rank trains a whole window.
fn idle_limit(timeout: Duration) -> Duration {
    (timeout * 10).max(Duration::from_secs(600))
}

/// Waits for a request to begin — until the server closes (none) or [`idle_limit`] passes — then reads it
/// whole within `timeout`.
fn next_request(link: &mut Link, timeout: Duration, closing: &AtomicBool) -> io::Result<Option<Vec<u8>>> {
    let idle = idle_limit(timeout);
    let waited = Instant::now();
    link.stream().set_read_timeout(Some(IDLE_POLL))?;
    let mut first = [0u8; 1];
    loop {
        match link.stream().peek(&mut first) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(_) => break,
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
                if closing.load(Ordering::Relaxed) {
                    return Ok(None);
                }
                if waited.elapsed() > idle {
                    return Err(io::Error::new(io::ErrorKind::TimedOut, Idle(idle)));
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    link.read_message(Instant::now() + timeout).map(Some)
}

/// Little-endian `f32`s from bytes (a whole number of them, checked by the caller).
fn floats(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

fn remaining(deadline: Instant) -> Duration {
    deadline
        .saturating_duration_since(Instant::now())
        .max(Duration::from_millis(1))
}

fn fail(center: &Mutex<Center>, message: String) {
    let mut center = center.lock().unwrap_or_else(PoisonError::into_inner);
    if center.failure.is_none() {
        log::warn!("parameter server: {message}");
        center.failure = Some(message);
    }
}

/// Answers one rank's requests until it says goodbye or the server closes; a link that breaks, a rank that
/// sends nothing for [`idle_limit`], or a request that does not arrive whole within the deadline once it has
/// begun, fails the center, naming the rank.
fn serve_rank(rank: usize, mut link: Link, timeout: Duration, center: &Mutex<Center>, closing: &AtomicBool) {
    loop {
        let request = match next_request(&mut link, timeout, closing) {
            Ok(Some(request)) => request,
            Ok(None) => return,
            Err(e) if matches!(e.get_ref(), Some(inner) if inner.is::<Idle>()) => {
                fail(
                    center,
                    format!("rank {rank} {e}: it stalled, or a window of training outlasts the stage's deadline"),
                );
                return;
            }
            Err(e) => {
                if !closing.load(Ordering::Relaxed) {
                    fail(
                        center,
                        format!("rank {rank} left the parameter server: it {}", describe_io(&e)),
                    );
                }
                return;
            }
        };
        if request.first() == Some(&DONE) {
            return;
        }
        let reply = answer(rank, &request, center);
        if let Err(e) = link.write_message(&reply, Instant::now() + timeout) {
            fail(
                center,
                format!("rank {rank} did not take its reply: it {}", describe_io(&e)),
            );
            return;
        }
    }
}

/// Applies one request to the center and encodes the reply.
fn answer(rank: usize, request: &[u8], center: &Mutex<Center>) -> Vec<u8> {
    let error = |message: String| {
        let mut reply = vec![1u8];
        reply.extend_from_slice(message.as_bytes());
        reply
    };
    if request.len() < REQUEST_HEAD || !(request.len() - REQUEST_HEAD).is_multiple_of(4) {
        return error(format!(
            "rank {rank} sent a malformed request of {} bytes",
            request.len()
        ));
    }
    let (kind, seen, alpha) = (
        request[0],
        u64::from_le_bytes(request[1..9].try_into().unwrap_or_default()),
        f32::from_le_bytes(request[9..13].try_into().unwrap_or_default()),
    );
    let mut sent: Vec<f32> = floats(&request[REQUEST_HEAD..]);
    let mut center = center.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(failure) = &center.failure {
        return error(failure.clone());
    }
    if kind != PULL && sent.len() != center.values.len() {
        return error(format!(
            "rank {rank} sent {} values; the center has {}",
            sent.len(),
            center.values.len()
        ));
    }
    let staleness = if kind == PULL {
        0
    } else {
        center.version.saturating_sub(seen)
    };
    let body = match kind {
        ADD => {
            add_into(&mut center.values, &sent);
            center.version += 1;
            center.values.clone()
        }
        ELASTIC => {
            let moved = elastic_exchange(&mut sent, &center.values, alpha);
            add_into(&mut center.values, &moved);
            center.version += 1;
            moved
        }
        PULL => center.values.clone(),
        other => return error(format!("rank {rank} sent an unknown request kind {other}")),
    };
    let mut reply = Vec::with_capacity(REPLY_HEAD + 4 * body.len());
    reply.push(0);
    reply.extend_from_slice(&center.version.to_le_bytes());
    reply.extend_from_slice(&staleness.to_le_bytes());
    reply.extend_from_slice(bytemuck::cast_slice(&body));
    reply
}

impl CenterClient {
    fn connect(comm: &Communicator, address: SocketAddr, len: usize) -> Result<Self> {
        let (rank, timeout) = (comm.rank(), comm.timeout());
        let deadline = Instant::now() + timeout;
        let fail = |cause: String| comm.peer_error("linking to the parameter server", 0, cause);
        let stream = loop {
            match TcpStream::connect_timeout(&address, Duration::from_secs(1)) {
                Ok(stream) => break stream,
                Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
                Err(e) => return Err(fail(format!("cannot be reached at {address}: {e}"))),
            }
        };
        let _ = stream.set_nodelay(true);
        let _ = stream.set_read_timeout(Some(remaining(deadline)));
        let mut link = prove_as_client(stream, comm.secret()).map_err(|e| fail(e.to_string()))?;
        link.write_message(&(rank as u64).to_le_bytes(), deadline)
            .map_err(|e| fail(describe_io(&e)))?;
        Ok(Self {
            link,
            rank,
            server_host: comm.host(0),
            len,
            timeout,
            seen: 0,
            exchanges: 0,
            staleness: Staleness::default(),
        })
    }

    /// `center += change`; returns the new center.
    pub fn add(&mut self, change: &[f32]) -> Result<Vec<f32>> {
        self.exchange(ADD, change, 0.0)
    }

    /// The elastic exchange of parameters `x` with moving rate `alpha`: the center moves by
    /// `E = α(x − center)`, which is returned (the rank subtracts it from `x`).
    pub fn elastic(&mut self, x: &[f32], alpha: f32) -> Result<Vec<f32>> {
        self.exchange(ELASTIC, x, alpha)
    }

    /// The center as it is now.
    pub fn pull(&mut self) -> Result<Vec<f32>> {
        self.exchange(PULL, &[], 0.0)
    }

    /// How stale this rank's updates were so far.
    pub fn staleness(&self) -> Staleness {
        self.staleness
    }

    fn exchange(&mut self, kind: u8, values: &[f32], alpha: f32) -> Result<Vec<f32>> {
        self.exchanges += 1;
        let op = format!("parameter server exchange #{}", self.exchanges);
        let mut request = Vec::with_capacity(REQUEST_HEAD + 4 * values.len());
        request.push(kind);
        request.extend_from_slice(&self.seen.to_le_bytes());
        request.extend_from_slice(&alpha.to_le_bytes());
        request.extend_from_slice(bytemuck::cast_slice(values));
        let deadline = Instant::now() + self.timeout;
        let reply = (self.link.write_message(&request, deadline))
            .and_then(|()| self.link.read_message(deadline))
            .map_err(|e| self.peer_error(&op, describe_io(&e)))?;
        match reply.first() {
            Some(0) if reply.len() == REPLY_HEAD + 4 * self.len => {
                let version = u64::from_le_bytes(reply[1..9].try_into().unwrap_or_default());
                let staleness = u64::from_le_bytes(reply[9..17].try_into().unwrap_or_default());
                if kind != PULL {
                    let s = &mut self.staleness;
                    s.mean = (s.mean * s.updates as f64 + staleness as f64) / (s.updates + 1) as f64;
                    s.updates += 1;
                    s.max = s.max.max(staleness);
                }
                self.seen = version;
                Ok(floats(&reply[REPLY_HEAD..]))
            }
            Some(1) => Err(CollectiveError::Peer {
                op,
                rank: self.rank,
                peer: 0,
                host: self.server_host.clone(),
                cause: format!(
                    "(the parameter server) refused: {}",
                    String::from_utf8_lossy(&reply[1..])
                ),
            }),
            _ => Err(self.peer_error(
                &op,
                format!(
                    "sent garbage (a reply of {} bytes for a center of {} values)",
                    reply.len(),
                    self.len
                ),
            )),
        }
    }

    fn peer_error(&mut self, op: &str, cause: String) -> CollectiveError {
        let _ = self.link.stream().shutdown(Shutdown::Both);
        CollectiveError::Peer {
            op: op.to_string(),
            rank: self.rank,
            peer: 0,
            host: self.server_host.clone(),
            cause: format!("(the parameter server) {cause}"),
        }
    }
}

impl CenterClient {
    /// Says goodbye after this rank's last exchange. A link dropped without it (a rank that failed or died)
    /// fails the center, naming the rank, so the others stop at their next exchange.
    pub fn finish(mut self) {
        let goodbye = [DONE; REQUEST_HEAD];
        let _ = self
            .link
            .write_message(&goodbye, Instant::now() + Duration::from_secs(1));
    }
}
