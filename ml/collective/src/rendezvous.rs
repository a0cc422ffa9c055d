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
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::acceptor::{Acceptor, Refused};
use super::auth::{JobSecret, prove_as_client, prove_as_server};
use super::error::{CollectiveError, Result, describe_io};
use super::link::Link;
use super::shipping::{self, OfferedProgram};

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
    /// Send the driver program with this SHA-256 (see [`shipping`](super::shipping)).
    Program { sha256: String },
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

/// Which uploads a coordinator keeps ([`Coordinator::keep_uploads`]): those of one rank, up to an epoch — a
/// training job's checkpoints come from rank 0, one per epoch of its plan. Anything else holding the job secret
/// (a task of another rank, a sniffed secret) cannot make the driver resume from an epoch that never ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UploadRule {
    /// The only rank whose uploads are kept.
    pub rank: usize,
    /// The last epoch an upload may be of.
    pub last_epoch: usize,
}

impl UploadRule {
    /// Why `upload` is not kept under this rule, if it is not.
    fn refuses(&self, rank: usize, epoch: usize) -> Option<String> {
        if rank != self.rank {
            return Some(format!(
                "an upload as rank {rank}; this job's uploads come from rank {}",
                self.rank
            ));
        }
        (epoch > self.last_epoch).then(|| {
            format!(
                "an upload of epoch {epoch}, past the job's last epoch, {}",
                self.last_epoch
            )
        })
    }
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
    rule: Arc<Mutex<Option<UploadRule>>>,
    offered: Arc<Mutex<Option<OfferedProgram>>>,
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
        let rule = Arc::new(Mutex::new(None));
        let kept = Arc::clone(&rule);
        let acceptor = Acceptor::new(
            listener,
            format!("rendezvous at {address}"),
            move |stream, _, deadline| admit_connection(stream, deadline, &secret, &kept),
        )
        .map_err(|e| CollectiveError::rendezvous_caused(address, "cannot poll the listener", e))?;
        let offered = Arc::new(Mutex::new(None));
        let service = Service {
            acceptor,
            address,
            stop: Arc::clone(&stop),
            latest: Arc::clone(&latest),
            offered: Arc::clone(&offered),
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
            rule,
            offered,
            worker: Some(worker),
        })
    }

    /// Offers the driver program at `path`, whose SHA-256 is `sha256` (hex), to the stage's tasks whose hosts
    /// lack it ([`fetch_program`](super::fetch_program)), until the coordinator is dropped.
    pub fn offer_program(&self, path: PathBuf, sha256: String) {
        if let Ok(mut offered) = self.offered.lock() {
            *offered = Some(OfferedProgram { path, sha256 });
        }
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

    /// Keeps only the uploads `rule` allows from now on (by default every rank's, of any epoch); the others are
    /// logged and left unconfirmed.
    pub fn keep_uploads(&self, rule: UploadRule) {
        if let Ok(mut kept) = self.rule.lock() {
            *kept = Some(rule);
        }
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
    acceptor: Acceptor<Admitted>,
    address: SocketAddr,
    stop: Arc<AtomicBool>,
    latest: Arc<Mutex<Option<Upload>>>,
    offered: Arc<Mutex<Option<OfferedProgram>>>,
}

/// A connection that proved the job secret, with its request (an upload with its bytes).
enum Admitted {
    Register(Link, Registration),
    Upload(Link, Upload),
    Program(Link, String),
}

impl Service {
    /// Sends the program a task asked for on a thread of its own, so that the rendezvous goes on meanwhile.
    fn ship(&self, link: Link, sha256: String) {
        let offered = self.offered.lock().ok().and_then(|offered| offered.clone());
        let address = self.address;
        let spawned = std::thread::Builder::new()
            .name("hearth-ship-program".to_string())
            .spawn(move || shipping::serve(link, offered, &sha256, address));
        if let Err(e) = spawned {
            log::warn!("rendezvous at {address}: no thread to send the driver program: {e}");
        }
    }

    /// The next connection admitted, or `None` when none is within a few milliseconds; connections that have
    /// not proven the secret do not hold it up ([`Acceptor`]).
    fn next_admitted(&self, deadline: Instant) -> Result<Option<Admitted>> {
        self.acceptor
            .next(deadline, Duration::from_millis(5))
            .map_err(|e| CollectiveError::rendezvous_caused(self.address, "accept failed", e))
    }

    fn gather(&self, world_size: usize, deadline: Instant) -> Result<Vec<Peer>> {
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
            match self.next_admitted(deadline)? {
                Some(Admitted::Register(link, registration)) => waiting.push((link, registration)),
                Some(Admitted::Upload(_, Upload { rank, .. })) => {
                    log::warn!(
                        "rendezvous at {}: rank {rank} uploaded before the ring formed",
                        self.address
                    );
                }
                Some(Admitted::Program(link, sha256)) => self.ship(link, sha256),
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

    /// After the rendezvous: keeps the latest upload, refuses late registrations, until stopped.
    fn take_uploads(&self) {
        while !self.stop.load(Ordering::Relaxed) {
            match self.next_admitted(deadline_in(60)) {
                Ok(Some(Admitted::Upload(mut link, upload))) => {
                    if let Ok(mut latest) = self.latest.lock()
                        && latest.as_ref().is_none_or(|l| l.epoch <= upload.epoch)
                    {
                        *latest = Some(upload);
                    }
                    let _ = link.write_message(b"ok", deadline_in(5));
                }
                Ok(Some(Admitted::Register(mut link, registration))) => {
                    let answer = Assignment::Failed {
                        message: format!(
                            "the ring of this job formed without {}; a late task cannot join it",
                            registration.host
                        ),
                    };
                    let _ = link.write_message(&serde_json::to_vec(&answer).unwrap_or_default(), deadline_in(1));
                }
                Ok(Some(Admitted::Program(link, sha256))) => self.ship(link, sha256),
                Ok(None) => {}
                // A full table of open files, a connection aborted before it was taken: the next may succeed.
                Err(e) => {
                    log::warn!("{e}");
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
        }
    }
}

/// Authenticates a task's connection and reads its request before `deadline` — an upload's bytes too, when
/// `rule` allows the upload (one it refuses is not read, and left unconfirmed); the error says why it was refused.
fn admit_connection(
    stream: TcpStream,
    deadline: Instant,
    secret: &JobSecret,
    rule: &Mutex<Option<UploadRule>>,
) -> std::result::Result<Admitted, Refused> {
    let mut link = prove_as_server(stream, secret)?;
    let bytes = link
        .read_message(deadline)
        .map_err(|e| Refused::reading("its request", &e))?;
    let request =
        serde_json::from_slice(&bytes).map_err(|e| Refused::said(format!("it sent an unreadable request: {e}")))?;
    match request {
        Request::Register(registration) => Ok(Admitted::Register(link, registration)),
        Request::Upload { rank, epoch } => {
            let rule = rule.lock().ok().and_then(|rule| *rule);
            if let Some(why) = rule.and_then(|rule| rule.refuses(rank, epoch)) {
                return Err(Refused::said(why));
            }
            let bytes = link
                .read_message(deadline_in(60))
                .map_err(|e| Refused::reading(&format!("rank {rank}'s upload of epoch {epoch}"), &e))?;
            Ok(Admitted::Upload(link, Upload { rank, epoch, bytes }))
        }
        Request::Program { sha256 } => Ok(Admitted::Program(link, sha256)),
    }
}

/// The moment `seconds` from now.
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

/// The task side of a shipped program: fetches the driver program whose SHA-256 is `sha256` and size `size`
/// from the coordinator into `into`, within `timeout` (another size is refused before a byte is written);
/// returns its size. The caller checks the bytes' hash.
pub fn fetch_program(
    coordinator: SocketAddr,
    secret: &JobSecret,
    sha256: &str,
    size: u64,
    into: &mut impl std::io::Write,
    timeout: Duration,
) -> Result<u64> {
    let deadline = Instant::now() + timeout;
    let stream = TcpStream::connect_timeout(&coordinator, timeout).map_err(|e| {
        CollectiveError::rendezvous_caused(coordinator, "cannot connect to fetch the driver program", e)
    })?;
    stream
        .set_read_timeout(Some(timeout))
        .map_err(|e| CollectiveError::rendezvous_caused(coordinator, "setting the connection's deadline", e))?;
    let mut link = prove_as_client(stream, secret)?;
    let request = serde_json::to_vec(&Request::Program {
        sha256: sha256.to_string(),
    })
    .map_err(|e| CollectiveError::rendezvous_caused(coordinator, "encoding the request", e))?;
    link.write_message(&request, deadline)
        .map_err(|e| CollectiveError::rendezvous(coordinator, describe_io(&e)))?;
    shipping::receive(&mut link, coordinator, size, into, deadline)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registration(host: &str) -> Registration {
        Registration {
            listen: "127.0.0.1:1".parse().unwrap(),
            host: host.to_string(),
            devices: vec!["cpu".to_string()],
            position: 0,
            process: None,
        }
    }

    /// A coordinator of `ranks` on loopback with a new secret and `timeout`, and its address.
    fn coordinator(ranks: usize, timeout: Duration) -> (JobSecret, Coordinator, SocketAddr) {
        let secret = JobSecret::generate();
        let coordinator = Coordinator::start("127.0.0.1:0".parse().unwrap(), ranks, secret.clone(), timeout).unwrap();
        let address = coordinator.address();
        (secret, coordinator, address)
    }

    #[test]
    fn idle_connections_hold_up_neither_the_ranks_nor_an_upload() {
        let (secret, coordinator, address) = coordinator(2, Duration::from_secs(20));
        // Five connections that never say a word, each allowed 5 s to prove the secret: taken one at a time
        // they would keep the ranks waiting 25 s.
        let idle: Vec<TcpStream> = (0..5).map(|_| TcpStream::connect(address).unwrap()).collect();
        std::thread::sleep(Duration::from_millis(100));
        let started = Instant::now();
        let ranks: Vec<_> = ["a", "b"]
            .map(|host| {
                let secret = secret.clone();
                std::thread::spawn(move || register(address, &secret, &registration(host), Duration::from_secs(3)))
            })
            .into_iter()
            .collect();
        for rank in ranks {
            rank.join().unwrap().unwrap();
        }
        assert_eq!(coordinator.wait().unwrap().len(), 2);
        let more_idle: Vec<TcpStream> = (0..5).map(|_| TcpStream::connect(address).unwrap()).collect();
        std::thread::sleep(Duration::from_millis(100));
        upload(address, &secret, 0, 1, b"checkpoint", Duration::from_secs(2)).unwrap();
        assert!(started.elapsed() < Duration::from_secs(4), "{:?}", started.elapsed());
        assert_eq!(coordinator.latest_upload().unwrap().bytes, b"checkpoint");
        drop((idle, more_idle));
    }

    #[test]
    fn an_upload_the_rule_does_not_allow_is_ignored() {
        let (secret, coordinator, address) = coordinator(1, Duration::from_secs(10));
        coordinator.keep_uploads(UploadRule { rank: 0, last_epoch: 3 });
        register(address, &secret, &registration("a"), Duration::from_secs(5)).unwrap();
        upload(address, &secret, 0, 2, b"epoch 2", Duration::from_secs(5)).unwrap();
        // Holders of the job secret claiming another rank, or an epoch the job never reaches, are not confirmed
        // and change nothing: a retry resumes from the true epoch.
        assert!(upload(address, &secret, 7, usize::MAX, b"forged", Duration::from_millis(500)).is_err());
        assert!(upload(address, &secret, 0, usize::MAX, b"forged", Duration::from_millis(500)).is_err());
        let kept = coordinator.latest_upload().unwrap();
        assert_eq!((kept.rank, kept.epoch, kept.bytes.as_slice()), (0, 2, &b"epoch 2"[..]));
    }
}
