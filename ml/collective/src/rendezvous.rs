//! The rendezvous: ranks find each other through a coordinator that the driver hosts.
//!
//! Each task connects, proves the job secret, and registers its collective listener, host and devices. When
//! all `world_size` have registered the coordinator assigns ranks — sorted by host, so ring neighbours share
//! a host, and by the tasks' positions within a host — and sends everyone the peer table. If the deadline
//! passes first, every registered task is told which ranks are missing.
//!
//! Once the ranks are assigned the coordinator stays up for the rest of the job: ranks send it checkpoints
//! ([`upload`]), which the driver reads with [`Coordinator::latest_upload`] to restart a failed stage. A late
//! registration — a task retried alone — is refused, so it can never join the ring of an earlier attempt.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::auth::{JobSecret, prove_as_client, prove_as_server};
use super::error::{CollectiveError, Result, describe_io};
use super::link::Link;

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
    /// Its place among the tasks of its host; ranks on a host are assigned in this order (ties: arrival).
    #[serde(default)]
    pub position: usize,
    /// The process it runs in (random per process), when it offers to exchange values through memory with
    /// ranks of the same process; `None` keeps its links on TCP.
    #[serde(default)]
    pub process: Option<String>,
}

/// One rank of the peer table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Peer {
    /// Its rank.
    pub rank: usize,
    /// What it registered.
    pub registration: Registration,
}

/// What a connecting task asks of the coordinator.
#[derive(Debug, Serialize, Deserialize)]
enum Request {
    /// Join the job; the answer is an [`Assignment`].
    Register(Registration),
    /// Keep the bytes of the next message as the job's latest upload (a checkpoint).
    Upload { rank: usize, epoch: usize },
}

/// Bytes a rank sent the driver during the job, e.g. rank 0's checkpoint after an epoch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Upload {
    /// The rank that sent it.
    pub rank: usize,
    /// The epoch it belongs to.
    pub epoch: usize,
    /// The bytes.
    pub bytes: Vec<u8>,
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
/// use hearth_collective::{Coordinator, JobSecret, register, Registration};
///
/// let secret = JobSecret::generate();
/// let coordinator = Coordinator::start("127.0.0.1:0".parse().unwrap(), 1, secret.clone(), Duration::from_secs(10)).unwrap();
/// let me = Registration { listen: "127.0.0.1:9".parse().unwrap(), host: "a".into(), devices: vec!["cpu".into()], position: 0, process: None };
/// let (rank, peers) = register(coordinator.address(), &secret, &me, Duration::from_secs(10)).unwrap();
/// assert_eq!((rank, peers.len()), (0, 1));
/// assert_eq!(coordinator.wait().unwrap().len(), 1);
/// ```
#[derive(Debug)]
pub struct Coordinator {
    address: SocketAddr,
    outcome: Mutex<mpsc::Receiver<Result<Vec<Peer>>>>,
    stop: Arc<AtomicBool>,
    latest: Arc<Mutex<Option<Upload>>>,
    worker: Option<JoinHandle<()>>,
}

impl Coordinator {
    /// Listens on `bind` and accepts registrations on a background thread until `world_size` tasks have
    /// registered or `timeout` has passed; then keeps taking uploads until the coordinator is dropped.
    pub fn start(bind: SocketAddr, world_size: usize, secret: JobSecret, timeout: Duration) -> Result<Self> {
        let listener = TcpListener::bind(bind).map_err(|source| CollectiveError::Local {
            what: format!("binding the rendezvous coordinator to {bind}"),
            source,
        })?;
        let address = listener.local_addr().map_err(|source| CollectiveError::Local {
            what: "reading the coordinator's address".to_string(),
            source,
        })?;
        let (sender, outcome) = mpsc::channel();
        let stop = Arc::new(AtomicBool::new(false));
        let latest = Arc::new(Mutex::new(None));
        let service = Service {
            listener,
            address,
            secret,
            stop: Arc::clone(&stop),
            latest: Arc::clone(&latest),
        };
        let worker = std::thread::Builder::new()
            .name("hearth-rendezvous".to_string())
            .spawn(move || {
                let peers = service.gather(world_size, Instant::now() + timeout);
                let assigned = peers.is_ok();
                let _ = sender.send(peers);
                if assigned {
                    service.take_uploads();
                }
            })
            .map_err(|source| CollectiveError::Local {
                what: "starting the coordinator thread".to_string(),
                source,
            })?;
        Ok(Self {
            address,
            outcome: Mutex::new(outcome),
            stop,
            latest,
            worker: Some(worker),
        })
    }

    /// Where tasks register.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Waits for the rendezvous to end: the peer table, or why it failed. Asked again, it answers that the
    /// rendezvous already ended.
    pub fn wait(&self) -> Result<Vec<Peer>> {
        let ended = || CollectiveError::rendezvous(self.address, "the rendezvous already ended");
        let outcome = self.outcome.lock().map_err(|_| ended())?;
        outcome.recv().unwrap_or_else(|_| Err(ended()))
    }

    /// The last upload of the highest epoch received so far.
    pub fn latest_upload(&self) -> Option<Upload> {
        self.latest.lock().ok().and_then(|latest| latest.clone())
    }
}

impl Drop for Coordinator {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(worker) = self.worker.take() {
            let _ = worker.join();
        }
    }
}

/// The coordinator's listener and what it keeps.
struct Service {
    listener: TcpListener,
    address: SocketAddr,
    secret: JobSecret,
    stop: Arc<AtomicBool>,
    latest: Arc<Mutex<Option<Upload>>>,
}

impl Service {
    /// The next authenticated connection and its request, or `None` when nothing is waiting.
    fn next_request(&self, deadline: Instant) -> Result<Option<(Link, Request)>> {
        match self.listener.accept() {
            Ok((stream, from)) => {
                let _ = stream.set_nonblocking(false);
                let _ = stream.set_nodelay(true);
                match self.admit(stream, from, deadline) {
                    Ok(admitted) => Ok(Some(admitted)),
                    Err(reason) => {
                        log::warn!("{reason}");
                        Ok(None)
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(5));
                Ok(None)
            }
            Err(e) => Err(CollectiveError::rendezvous_caused(self.address, "accept failed", e)),
        }
    }

    fn gather(&self, world_size: usize, deadline: Instant) -> Result<Vec<Peer>> {
        self.listener
            .set_nonblocking(true)
            .map_err(|e| CollectiveError::rendezvous_caused(self.address, "cannot poll the listener", e))?;
        let mut waiting: Vec<(Link, Registration)> = Vec::with_capacity(world_size);
        while waiting.len() < world_size {
            let stopped = self.stop.load(Ordering::Relaxed);
            if stopped || Instant::now() >= deadline {
                let message = if stopped {
                    format!(
                        "the job was stopped with {} of {world_size} ranks registered",
                        waiting.len()
                    )
                } else {
                    format!(
                        "timed out with {} of {world_size} ranks registered; missing {} (registered hosts: {})",
                        waiting.len(),
                        world_size - waiting.len(),
                        waiting
                            .iter()
                            .map(|(_, r)| r.host.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                };
                for (mut link, _) in waiting {
                    let answer = Assignment::Failed {
                        message: message.clone(),
                    };
                    let _ = link.write_message(&serde_json::to_vec(&answer).unwrap_or_default(), deadline_in(1));
                }
                return Err(CollectiveError::rendezvous(self.address, message));
            }
            match self.next_request(deadline)? {
                Some((stream, Request::Register(registration))) => waiting.push((stream, registration)),
                Some((_, Request::Upload { rank, .. })) => {
                    log::warn!(
                        "rendezvous at {}: rank {rank} uploaded before the ring formed",
                        self.address
                    );
                }
                None => {}
            }
        }
        // Sort by host, so ring neighbours share a host; within a host by position, then arrival.
        waiting.sort_by(|(_, a), (_, b)| (&a.host, a.position).cmp(&(&b.host, b.position)));
        let peers: Vec<Peer> = waiting
            .iter()
            .enumerate()
            .map(|(rank, (_, registration))| Peer {
                rank,
                registration: registration.clone(),
            })
            .collect();
        for (rank, (mut link, registration)) in waiting.into_iter().enumerate() {
            let answer = Assignment::Ranked {
                rank,
                peers: peers.clone(),
            };
            let bytes = serde_json::to_vec(&answer).map_err(|e| {
                CollectiveError::rendezvous_caused(self.address, format!("encoding rank {rank}'s assignment"), e)
            })?;
            link.write_message(&bytes, deadline_in(10)).map_err(|e| {
                let message = format!("rank {rank} ({}) {}", registration.host, describe_io(&e));
                CollectiveError::rendezvous(self.address, message)
            })?;
        }
        Ok(peers)
    }

    /// Authenticates the task connecting from `from` and reads its request; the error says why it was refused.
    fn admit(&self, stream: TcpStream, from: SocketAddr, deadline: Instant) -> Result<(Link, Request)> {
        let refused = format!("refused {from}");
        // A task that connects but says nothing is given a few seconds, never past the rendezvous deadline.
        let handshake = deadline.min(Instant::now() + Duration::from_secs(5));
        stream
            .set_read_timeout(Some(
                handshake
                    .saturating_duration_since(Instant::now())
                    .max(Duration::from_millis(1)),
            ))
            .map_err(|e| CollectiveError::rendezvous_caused(self.address, &refused, e))?;
        let mut link = prove_as_server(stream, &self.secret)
            .map_err(|e| CollectiveError::rendezvous_caused(self.address, &refused, e))?;
        let bytes = link
            .read_message(handshake)
            .map_err(|e| CollectiveError::rendezvous(self.address, format!("{refused}: {}", describe_io(&e))))?;
        let request = serde_json::from_slice(&bytes).map_err(|e| {
            CollectiveError::rendezvous_caused(self.address, format!("{refused}: sent an unreadable request"), e)
        })?;
        Ok((link, request))
    }

    /// After the rendezvous: keeps the latest upload, refuses late registrations, until stopped.
    fn take_uploads(&self) {
        while !self.stop.load(Ordering::Relaxed) {
            match self.next_request(deadline_in(60)) {
                Ok(Some((mut link, Request::Upload { rank, epoch }))) => match link.read_message(deadline_in(60)) {
                    Ok(bytes) => {
                        if let Ok(mut latest) = self.latest.lock()
                            && latest.as_ref().is_none_or(|l| l.epoch <= epoch)
                        {
                            *latest = Some(Upload { rank, epoch, bytes });
                        }
                        let _ = link.write_message(b"ok", deadline_in(5));
                    }
                    Err(e) => log::warn!(
                        "rendezvous at {}: rank {rank}'s upload of epoch {epoch} {}",
                        self.address,
                        describe_io(&e)
                    ),
                },
                Ok(Some((mut link, Request::Register(registration)))) => {
                    let answer = Assignment::Failed {
                        message: format!(
                            "the ring of this job formed without {}; a late task cannot join it",
                            registration.host
                        ),
                    };
                    let _ = link.write_message(&serde_json::to_vec(&answer).unwrap_or_default(), deadline_in(1));
                }
                Ok(None) => {}
                Err(e) => {
                    log::warn!("{e}");
                    return;
                }
            }
        }
    }
}

fn deadline_in(seconds: u64) -> Instant {
    Instant::now() + Duration::from_secs(seconds)
}

/// The task side: registers with the coordinator and waits (up to `timeout`) for its rank and the peer table.
pub fn register(
    coordinator: SocketAddr,
    secret: &JobSecret,
    registration: &Registration,
    timeout: Duration,
) -> Result<(usize, Vec<Peer>)> {
    let deadline = Instant::now() + timeout;
    let failed = |message: String| CollectiveError::rendezvous(coordinator, message);
    let stream = TcpStream::connect_timeout(&coordinator, timeout)
        .map_err(|e| CollectiveError::rendezvous_caused(coordinator, "cannot connect", e))?;
    let _ = stream.set_nodelay(true);
    stream
        .set_read_timeout(Some(timeout))
        .map_err(|e| CollectiveError::rendezvous_caused(coordinator, "setting the connection's deadline", e))?;
    let mut link = prove_as_client(stream, secret)?;
    let bytes = serde_json::to_vec(&Request::Register(registration.clone()))
        .map_err(|e| CollectiveError::rendezvous_caused(coordinator, "encoding the registration", e))?;
    link.write_message(&bytes, deadline)
        .map_err(|e| failed(describe_io(&e)))?;
    // The coordinator's deadline decides; its verdict may arrive just after ours would have passed.
    let answer = link.read_message(deadline + VERDICT_GRACE).map_err(|e| {
        failed(format!(
            "no answer before the deadline: the coordinator {}",
            describe_io(&e)
        ))
    })?;
    match serde_json::from_slice(&answer) {
        Ok(Assignment::Ranked { rank, peers }) => Ok((rank, peers)),
        Ok(Assignment::Failed { message }) => Err(failed(message)),
        Err(e) => Err(CollectiveError::rendezvous_caused(
            coordinator,
            "sent an unreadable answer",
            e,
        )),
    }
}

/// Sends `bytes` to the coordinator as `rank`'s upload for `epoch` (e.g. rank 0's checkpoint), waiting up to
/// `timeout` for the coordinator to confirm it has them.
pub fn upload(
    coordinator: SocketAddr,
    secret: &JobSecret,
    rank: usize,
    epoch: usize,
    bytes: &[u8],
    timeout: Duration,
) -> Result<()> {
    let deadline = Instant::now() + timeout;
    let failed = |message: String| CollectiveError::rendezvous(coordinator, message);
    let stream = TcpStream::connect_timeout(&coordinator, timeout).map_err(|e| {
        CollectiveError::rendezvous_caused(coordinator, format!("cannot connect to upload epoch {epoch}"), e)
    })?;
    let _ = stream.set_nodelay(true);
    stream
        .set_read_timeout(Some(timeout))
        .map_err(|e| CollectiveError::rendezvous_caused(coordinator, "setting the connection's deadline", e))?;
    let mut link = prove_as_client(stream, secret)?;
    let request = serde_json::to_vec(&Request::Upload { rank, epoch })
        .map_err(|e| CollectiveError::rendezvous_caused(coordinator, "encoding the upload's request", e))?;
    link.write_message(&request, deadline)
        .map_err(|e| failed(describe_io(&e)))?;
    link.write_message(bytes, deadline)
        .map_err(|e| failed(describe_io(&e)))?;
    link.read_message(deadline).map(|_| ()).map_err(|e| {
        failed(format!(
            "upload of epoch {epoch} not confirmed: the coordinator {}",
            describe_io(&e)
        ))
    })
}
