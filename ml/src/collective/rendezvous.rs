//! The rendezvous: ranks find each other through a coordinator that the driver hosts.
//!
//! Each task connects, proves the job secret, and registers its collective listener, host and devices. When
//! all `world_size` have registered the coordinator assigns ranks — sorted by host, so ring neighbours share
//! a host — and sends everyone the peer table. If the deadline passes first, every registered task is told
//! which ranks are missing.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::auth::{JobSecret, prove_as_client, prove_as_server};
use super::error::{CollectiveError, Result, describe_io};
use super::wire::{read_message, write_message};

/// How long past its own deadline a task waits for the coordinator's verdict.
const VERDICT_GRACE: Duration = Duration::from_secs(5);

/// What a task tells the coordinator about itself.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Registration {
    /// Where its collective links are accepted.
    pub listen: SocketAddr,
    /// The host it runs on.
    pub host: String,
    /// Its devices, e.g. `["cpu"]` or `["cuda:0"]`.
    pub devices: Vec<String>,
}

/// One rank of the peer table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Peer {
    /// Its rank.
    pub rank: usize,
    /// What it registered.
    pub registration: Registration,
}

/// The coordinator's answer.
#[derive(Debug, Serialize, Deserialize)]
enum Assignment {
    Ranked { rank: usize, peers: Vec<Peer> },
    Failed { message: String },
}

/// The driver side of the rendezvous: a listener that assigns ranks once `world_size` tasks registered.
///
/// ```
/// use std::time::Duration;
/// use hearth_ml::collective::{Coordinator, JobSecret, register, Registration};
///
/// let secret = JobSecret::generate();
/// let coordinator = Coordinator::start("127.0.0.1:0".parse().unwrap(), 1, secret.clone(), Duration::from_secs(10)).unwrap();
/// let me = Registration { listen: "127.0.0.1:9".parse().unwrap(), host: "a".into(), devices: vec!["cpu".into()] };
/// let (rank, peers) = register(coordinator.address(), &secret, &me, Duration::from_secs(10)).unwrap();
/// assert_eq!((rank, peers.len()), (0, 1));
/// assert_eq!(coordinator.wait().unwrap().len(), 1);
/// ```
#[derive(Debug)]
pub struct Coordinator {
    address: SocketAddr,
    worker: JoinHandle<Result<Vec<Peer>>>,
}

impl Coordinator {
    /// Listens on `bind` and accepts registrations on a background thread until `world_size` tasks have
    /// registered or `timeout` has passed.
    pub fn start(bind: SocketAddr, world_size: usize, secret: JobSecret, timeout: Duration) -> Result<Self> {
        let listener = TcpListener::bind(bind).map_err(|source| CollectiveError::Local {
            what: format!("binding the rendezvous coordinator to {bind}"),
            source,
        })?;
        let address = listener.local_addr().map_err(|source| CollectiveError::Local {
            what: "reading the coordinator's address".to_string(),
            source,
        })?;
        let worker = std::thread::Builder::new()
            .name("hearth-rendezvous".to_string())
            .spawn(move || gather(listener, address, world_size, &secret, Instant::now() + timeout))
            .map_err(|source| CollectiveError::Local {
                what: "starting the coordinator thread".to_string(),
                source,
            })?;
        Ok(Self { address, worker })
    }

    /// Where tasks register.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Waits for the rendezvous to end: the peer table, or why it failed.
    pub fn wait(self) -> Result<Vec<Peer>> {
        self.worker.join().unwrap_or_else(|_| {
            Err(CollectiveError::Rendezvous {
                coordinator: self.address,
                message: "the coordinator thread panicked".to_string(),
            })
        })
    }
}

fn gather(
    listener: TcpListener,
    address: SocketAddr,
    world_size: usize,
    secret: &JobSecret,
    deadline: Instant,
) -> Result<Vec<Peer>> {
    let failed = |message: String| CollectiveError::Rendezvous {
        coordinator: address,
        message,
    };
    listener
        .set_nonblocking(true)
        .map_err(|e| failed(format!("cannot poll the listener: {e}")))?;
    let mut waiting: Vec<(TcpStream, Registration)> = Vec::with_capacity(world_size);
    while waiting.len() < world_size {
        if Instant::now() >= deadline {
            let message = format!(
                "timed out with {} of {world_size} ranks registered; missing {} (registered hosts: {})",
                waiting.len(),
                world_size - waiting.len(),
                waiting
                    .iter()
                    .map(|(_, r)| r.host.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            for (mut stream, _) in waiting {
                let answer = Assignment::Failed {
                    message: message.clone(),
                };
                let _ = write_message(
                    &mut stream,
                    &serde_json::to_vec(&answer).unwrap_or_default(),
                    deadline_in(1),
                );
            }
            return Err(failed(message));
        }
        match listener.accept() {
            Ok((mut stream, from)) => {
                let _ = stream.set_nonblocking(false);
                let _ = stream.set_nodelay(true);
                match admit(&mut stream, secret, deadline) {
                    Ok(registration) => waiting.push((stream, registration)),
                    Err(reason) => log::warn!("rendezvous at {address}: refused {from}: {reason}"),
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return Err(failed(format!("accept failed: {e}"))),
        }
    }
    // Sort by host, arrival order within a host, so ring neighbours share a host.
    waiting.sort_by(|(_, a), (_, b)| a.host.cmp(&b.host));
    let peers: Vec<Peer> = waiting
        .iter()
        .enumerate()
        .map(|(rank, (_, registration))| Peer {
            rank,
            registration: registration.clone(),
        })
        .collect();
    for (rank, (mut stream, registration)) in waiting.into_iter().enumerate() {
        let answer = Assignment::Ranked {
            rank,
            peers: peers.clone(),
        };
        let bytes = serde_json::to_vec(&answer).map_err(|e| failed(e.to_string()))?;
        write_message(&mut stream, &bytes, deadline_in(10))
            .map_err(|e| failed(format!("rank {rank} ({}) {}", registration.host, describe_io(&e))))?;
    }
    Ok(peers)
}

fn deadline_in(seconds: u64) -> Instant {
    Instant::now() + Duration::from_secs(seconds)
}

/// Authenticates a connecting task and reads its registration.
fn admit(stream: &mut TcpStream, secret: &JobSecret, deadline: Instant) -> Result<Registration, String> {
    // A task that connects but says nothing is given a few seconds, never past the rendezvous deadline.
    let handshake = deadline.min(Instant::now() + Duration::from_secs(5));
    stream
        .set_read_timeout(Some(
            handshake
                .saturating_duration_since(Instant::now())
                .max(Duration::from_millis(1)),
        ))
        .map_err(|e| e.to_string())?;
    prove_as_server(stream, secret).map_err(|e| e.to_string())?;
    let bytes = read_message(stream, handshake).map_err(|e| describe_io(&e))?;
    serde_json::from_slice(&bytes).map_err(|e| format!("sent an unreadable registration: {e}"))
}

/// The task side: registers with the coordinator and waits (up to `timeout`) for its rank and the peer table.
pub fn register(
    coordinator: SocketAddr,
    secret: &JobSecret,
    registration: &Registration,
    timeout: Duration,
) -> Result<(usize, Vec<Peer>)> {
    let deadline = Instant::now() + timeout;
    let failed = |message: String| CollectiveError::Rendezvous { coordinator, message };
    let mut stream =
        TcpStream::connect_timeout(&coordinator, timeout).map_err(|e| failed(format!("cannot connect: {e}")))?;
    let _ = stream.set_nodelay(true);
    stream
        .set_read_timeout(Some(timeout))
        .map_err(|e| failed(e.to_string()))?;
    prove_as_client(&mut stream, secret)?;
    let bytes = serde_json::to_vec(registration).map_err(|e| failed(e.to_string()))?;
    write_message(&mut stream, &bytes, deadline).map_err(|e| failed(describe_io(&e)))?;
    // The coordinator's deadline decides; its verdict may arrive just after ours would have passed.
    let answer = read_message(&mut stream, deadline + VERDICT_GRACE).map_err(|e| {
        failed(format!(
            "no answer before the deadline: the coordinator {}",
            describe_io(&e)
        ))
    })?;
    match serde_json::from_slice(&answer) {
        Ok(Assignment::Ranked { rank, peers }) => Ok((rank, peers)),
        Ok(Assignment::Failed { message }) => Err(failed(message)),
        Err(e) => Err(failed(format!("sent an unreadable answer: {e}"))),
    }
}
