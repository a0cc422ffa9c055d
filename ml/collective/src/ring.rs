//! The communicator: a ring of authenticated TCP links over which ranks run allreduce, broadcast, allgather
//! and barrier — or, when every rank shares one process, a ring of mailboxes (see `memory`).
//!
//! Rank `r` sends to rank `r + 1` and receives from rank `r − 1` (mod N). Allreduce is a reduce-scatter
//! followed by an allgather (2(N − 1) steps, each moving 1/N of the buffer), and every step is pipelined in
//! pieces: the calling thread writes to the right and reads, reduces and passes on pieces from the left as
//! each link allows (see `transfer`), so the links stay busy in both directions. Each operation starts with a header (operation, sequence number, length) that both
//! neighbours check, so ranks that disagree about what they are doing fail instead of mixing data. Every
//! operation has a deadline; on any failure the links are shut down, so the neighbours fail at once and the
//! failure travels around the ring.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::ops::Range;
use std::sync::mpsc::sync_channel;
use std::time::{Duration, Instant};

use super::auth::{JobSecret, prove_as_client, prove_as_server};
use super::error::{CollectiveError, Result, describe_io};
use super::link::Link;
use super::memory::{self, MemoryLink, MemoryLinks};
use super::rendezvous::{Peer, Registration, register};
use super::transfer::{self, Combine, HEADER_LEN, Plan, Receive, Side};

/// How long a rank that could not send its header still waits for its left neighbour's, to name garbage there.
const HEADER_GRACE: Duration = Duration::from_millis(200);

/// How a rank joins the job.
#[derive(Clone, Debug)]
pub struct JoinOptions {
    /// The address this rank's collective listener binds to (default `127.0.0.1`).
    pub bind: IpAddr,
    /// The host name reported to the coordinator (ranks are sorted by it).
    pub host: String,
    /// The devices reported to the coordinator.
    pub devices: Vec<String>,
    /// This task's place among the tasks of its host (e.g. its partition); ranks on a host follow it, so a
    /// job's ranks do not depend on which task registered first.
    pub position: usize,
    /// The deadline of the rendezvous and of every operation (default 60 s).
    pub timeout: Duration,
    /// Whether ranks that all run in this process exchange values through memory rather than over their TCP
    /// links (default `true`; the TCP ring's own tests turn it off).
    pub share_memory: bool,
}

impl Default for JoinOptions {
    fn default() -> Self {
        Self {
            bind: IpAddr::V4(Ipv4Addr::LOCALHOST),
            host: "localhost".to_string(),
            devices: vec!["cpu".to_string()],
            position: 0,
            timeout: Duration::from_secs(60),
            share_memory: true,
        }
    }
}

/// What an operation is, as written in its header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Allreduce = 1,
    Broadcast = 2,
    Allgather = 3,
}

impl Op {
    fn name(code: u64) -> &'static str {
        match code {
            1 => "allreduce",
            2 => "broadcast",
            3 => "allgather",
            _ => "an unknown operation",
        }
    }
}

/// A rank's handle on the job: its rank, the peer table, and the two ring links.
///
/// ```
/// use std::time::Duration;
/// use hearth_collective::{Communicator, Coordinator, JobSecret, JoinOptions};
///
/// let secret = JobSecret::generate();
/// let coordinator = Coordinator::start("127.0.0.1:0".parse().unwrap(), 2, secret.clone(), Duration::from_secs(30)).unwrap();
/// let address = coordinator.address();
/// let ranks: Vec<_> = (0..2)
///     .map(|_| {
///         let secret = secret.clone();
///         std::thread::spawn(move || {
///             let mut comm = Communicator::join(address, &secret, &JoinOptions::default()).unwrap();
///             let mut grads = vec![comm.rank() as f32 + 1.0; 5];
///             comm.allreduce_sum(&mut grads).unwrap();
///             grads
///         })
///     })
///     .collect();
/// for rank in ranks {
///     assert_eq!(rank.join().unwrap(), vec![3.0; 5]);
/// }
/// ```
#[derive(Debug)]
pub struct Communicator {
    rank: usize,
    peers: Vec<Peer>,
    links: Links,
    timeout: Duration,
    sequence: u64,
    failure: Option<String>,
    /// The job's secret, which other links of the job (the parameter server's) prove too.
    secret: JobSecret,
}

impl Communicator {
    /// Registers with the coordinator at `coordinator`, learns this rank and the peers, and opens the ring
    /// links (each authenticated with `secret`).
    pub fn join(coordinator: SocketAddr, secret: &JobSecret, options: &JoinOptions) -> Result<Self> {
        let listener = TcpListener::bind((options.bind, 0)).map_err(|source| CollectiveError::Local {
            what: format!("binding the collective listener to {}", options.bind),
            source,
        })?;
        let listen = listener.local_addr().map_err(|source| CollectiveError::Local {
            what: "reading the collective listener's address".to_string(),
            source,
        })?;
        let registration = Registration {
            listen,
            host: options.host.clone(),
            devices: options.devices.clone(),
            position: options.position,
            process: options.share_memory.then(|| memory::process_id().to_string()),
        };
        let (rank, peers) = register(coordinator, secret, &registration, options.timeout)?;
        let mut comm = Self::unlinked(rank, peers, secret, options.timeout);
        comm.link_ring(&listener)?;
        Ok(comm)
    }

    /// A rank that knows its place but has no links yet.
    fn unlinked(rank: usize, peers: Vec<Peer>, secret: &JobSecret, timeout: Duration) -> Self {
        Self {
            rank,
            peers,
            links: Links::Solo,
            timeout,
            sequence: 0,
            failure: None,
            secret: secret.clone(),
        }
    }

    /// Opens the ring's links: accepts the left neighbour's on `listener` while connecting to the right one.
    /// When every rank registered from this process, each link then hands over a mailbox and closes.
    fn link_ring(&mut self, listener: &TcpListener) -> Result<()> {
        if self.world_size() == 1 {
            return Ok(());
        }
        let in_memory = self.shares_process();
        let deadline = Instant::now() + self.timeout;
        let (left, right) = std::thread::scope(|s| {
            let accepting = s.spawn(|| self.accept_left(listener, &self.secret, in_memory, deadline));
            let right = self.connect_right(&self.secret, in_memory, deadline);
            let left = accepting.join().unwrap_or_else(|_| {
                Err(CollectiveError::Local {
                    what: "accepting the left link".to_string(),
                    source: io::Error::other("the accepting thread panicked"),
                })
            });
            (left, right)
        });
        // The connecting side's error says more (e.g. why a handshake failed) than "never connected".
        self.links = match (left, right?) {
            (Ok(Linked::Tcp(left)), Linked::Tcp(right)) => Links::Tcp { left, right },
            (Ok(Linked::Memory(left)), Linked::Memory(right)) => Links::Memory(MemoryLinks { left, right }),
            (Err(e), _) => return Err(e),
            _ => unreachable!("both links are set up the same way, from the same peer table"),
        };
        Ok(())
    }

    /// Whether every rank registered from this very process (and agreed to share memory).
    fn shares_process(&self) -> bool {
        let this = memory::process_id();
        self.peers
            .iter()
            .all(|peer| peer.registration.process.as_deref() == Some(this))
    }

    /// This rank, `0..world_size`.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of ranks.
    pub fn world_size(&self) -> usize {
        self.peers.len()
    }

    /// Whether this rank's links are mailboxes in memory (every rank runs in this process) rather than TCP
    /// connections.
    ///
    /// ```
    /// use hearth_collective::LocalWorld;
    ///
    /// // Two threads of this process: their values travel through memory.
    /// assert_eq!(LocalWorld::new(2).run(|comm| comm.in_memory()).unwrap(), [true, true]);
    /// ```
    pub fn in_memory(&self) -> bool {
        matches!(self.links, Links::Memory(_))
    }

    /// The peer table, indexed by rank.
    pub fn peers(&self) -> &[Peer] {
        &self.peers
    }

    fn left_rank(&self) -> usize {
        (self.rank + self.world_size() - 1) % self.world_size()
    }

    fn right_rank(&self) -> usize {
        (self.rank + 1) % self.world_size()
    }

    /// The job's secret.
    pub(crate) fn secret(&self) -> &JobSecret {
        &self.secret
    }

    /// The deadline of every operation.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    pub(crate) fn host(&self, rank: usize) -> String {
        self.peers
            .get(rank)
            .map_or_else(|| "unknown host".to_string(), |p| p.registration.host.clone())
    }

    pub(crate) fn peer_error(&self, op: &str, peer: usize, cause: String) -> CollectiveError {
        CollectiveError::Peer {
            op: op.to_string(),
            rank: self.rank,
            peer,
            host: self.host(peer),
            cause,
        }
    }

    fn connect_right(&self, secret: &JobSecret, in_memory: bool, deadline: Instant) -> Result<Linked> {
        let right = self.right_rank();
        let address = self.peers[right].registration.listen;
        let fail = |cause: String| self.peer_error("connecting the ring", right, cause);
        let stream = loop {
            match TcpStream::connect_timeout(&address, Duration::from_secs(1)) {
                Ok(stream) => break stream,
                Err(e) if Instant::now() < deadline => {
                    log::debug!("rank {}: connecting to {address}: {e}; retrying", self.rank);
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => return Err(fail(format!("cannot be reached at {address}: {e}"))),
            }
        };
        let _ = stream.set_nodelay(true);
        let _ = stream.set_read_timeout(Some(
            deadline
                .saturating_duration_since(Instant::now())
                .max(Duration::from_millis(1)),
        ));
        let mut link = prove_as_client(stream, secret)?;
        let mut hello = (self.rank as u64).to_le_bytes().to_vec();
        if !in_memory {
            link.write_message(&hello, deadline)
                .map_err(|e| fail(describe_io(&e)))?;
            return Ok(Linked::Tcp(link));
        }
        // The mailbox's key travels on the authenticated link; the neighbour says whether it took it.
        let (mailbox, key) = memory::offer();
        hello.extend_from_slice(&key);
        let answer = link
            .write_message(&hello, deadline)
            .and_then(|()| link.read_message(deadline));
        memory::withdraw(&key);
        match answer {
            Ok(taken) if taken == [1] => Ok(Linked::Memory(mailbox)),
            Ok(_) => Err(fail("registered from this process but is not in it".to_string())),
            Err(e) => Err(fail(describe_io(&e))),
        }
    }

    fn accept_left(
        &self,
        listener: &TcpListener,
        secret: &JobSecret,
        in_memory: bool,
        deadline: Instant,
    ) -> Result<Linked> {
        let left = self.left_rank();
        listener
            .set_nonblocking(true)
            .map_err(|source| CollectiveError::Local {
                what: "polling the collective listener".to_string(),
                source,
            })?;
        loop {
            if Instant::now() >= deadline {
                return Err(self.peer_error("connecting the ring", left, "never connected".to_string()));
            }
            let (stream, from) = match listener.accept() {
                Ok(accepted) => accepted,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_millis(5));
                    continue;
                }
                Err(source) => {
                    return Err(CollectiveError::Local {
                        what: "accepting a ring link".to_string(),
                        source,
                    });
                }
            };
            let _ = stream.set_nonblocking(false);
            let _ = stream.set_nodelay(true);
            let handshake = deadline.min(Instant::now() + Duration::from_secs(5));
            let _ = stream.set_read_timeout(Some(
                handshake
                    .saturating_duration_since(Instant::now())
                    .max(Duration::from_millis(1)),
            ));
            let mut link = match prove_as_server(stream, secret) {
                Ok(link) => link,
                Err(e) => {
                    log::warn!("rank {}: refused a ring connection from {from}: {e}", self.rank);
                    continue;
                }
            };
            let hello = match link.read_message(handshake) {
                Ok(hello) if hello.get(..8) == Some(&(left as u64).to_le_bytes()[..]) => hello,
                Ok(hello) => {
                    log::warn!(
                        "rank {}: refused {from}: it says it is rank {}, expected rank {left}",
                        self.rank,
                        hello
                            .get(..8)
                            .and_then(|b| b.try_into().ok())
                            .map_or(u64::MAX, u64::from_le_bytes)
                    );
                    continue;
                }
                Err(e) => {
                    log::warn!("rank {}: refused {from}: {}", self.rank, describe_io(&e));
                    continue;
                }
            };
            if !in_memory {
                return Ok(Linked::Tcp(link));
            }
            let mailbox = memory::take(&hello[8..]);
            let _ = link.write_message(&[u8::from(mailbox.is_some())], handshake);
            return mailbox.map(Linked::Memory).ok_or_else(|| {
                self.peer_error(
                    "connecting the ring",
                    left,
                    "registered from this process but is not in it".to_string(),
                )
            });
        }
    }

    /// Fails fast if an earlier operation failed; otherwise numbers the next operation.
    fn start(&mut self, op: Op) -> Result<(String, u64, Instant)> {
        if let Some(first) = &self.failure {
            return Err(CollectiveError::Closed {
                rank: self.rank,
                first: first.clone(),
            });
        }
        self.sequence += 1;
        Ok((
            format!("{} #{}", Op::name(op as u64), self.sequence),
            self.sequence,
            Instant::now() + self.timeout,
        ))
    }

    /// Records the first failure and shuts both links, so the neighbours fail now rather than at their deadline.
    fn fail(&mut self, error: CollectiveError) -> CollectiveError {
        self.failure.get_or_insert_with(|| error.to_string());
        match &self.links {
            Links::Solo => {}
            Links::Tcp { left, right } => {
                for link in [left, right] {
                    let _ = link.stream().shutdown(Shutdown::Both);
                }
            }
            Links::Memory(links) => links.close(),
        }
        error
    }

    /// Exchanges operation headers with both neighbours: a neighbour doing something else is garbage.
    fn exchange_headers(&mut self, header: &Header, name: &str, deadline: Instant) -> Result<()> {
        let (left, right) = (self.left_rank(), self.right_rank());
        let Links::Tcp {
            left: left_link,
            right: right_link,
        } = &mut self.links
        else {
            return Ok(());
        };
        let sent = right_link.write_message(&header.0, deadline);
        // The left's header is read even when sending failed, briefly: a left peer that sent garbage is the
        // cause worth naming, and a right one that dropped the connection is often only its consequence (it
        // failed on the same garbage first).
        let read_until = match sent {
            Ok(()) => deadline,
            Err(_) => deadline.min(Instant::now() + HEADER_GRACE),
        };
        let received = header.read_from(left_link, name, read_until);
        let (peer, e) = match (sent, received) {
            (_, Err(e)) if e.kind() == io::ErrorKind::InvalidData => (left, e),
            (Err(e), _) => (right, e),
            (Ok(()), Err(e)) => (left, e),
            (Ok(()), Ok(())) => return Ok(()),
        };
        let error = self.peer_error(name, peer, describe_io(&e));
        Err(self.fail(error))
    }

    /// Sums `values` element-wise across all ranks; every rank ends with the sum.
    pub fn allreduce_sum(&mut self, values: &mut [f32]) -> Result<()> {
        let n = self.world_size();
        if n == 1 {
            return Ok(());
        }
        let (name, sequence, deadline) = self.start(Op::Allreduce)?;
        let header = Header::new(Op::Allreduce, sequence, values.len());
        let chunk = |c: usize| (c * values.len() / n)..((c + 1) * values.len() / n);
        let r = self.rank;
        let steps = 2 * (n - 1);
        let receives: Vec<Receive> = (0..steps)
            .map(|t| {
                // Reduce-scatter receives chunk r−t−1; the allgather then receives chunk r−(t−(n−1)).
                let (c, combine) = if t < n - 1 {
                    ((r + 2 * n - t - 1) % n, Combine::Add)
                } else {
                    ((r + 2 * n - (t - (n - 1))) % n, Combine::Replace)
                };
                Receive {
                    range: chunk(c),
                    combine,
                    forward: t + 1 < steps,
                }
            })
            .collect();
        self.transfer(&name, &header, values, Some(chunk(r)), &receives, deadline)
    }

    /// Copies `values` from rank `root` to every rank.
    pub fn broadcast(&mut self, values: &mut [f32], root: usize) -> Result<()> {
        let n = self.world_size();
        if n == 1 {
            return Ok(());
        }
        let (name, sequence, deadline) = self.start(Op::Broadcast)?;
        let header = Header::new(Op::Broadcast, sequence, values.len());
        let position = (self.rank + n - root % n) % n;
        let all = 0..values.len();
        if position == 0 {
            self.transfer(&name, &header, values, Some(all), &[], deadline)
        } else {
            let receive = Receive {
                range: all,
                combine: Combine::Replace,
                forward: position < n - 1,
            };
            self.transfer(&name, &header, values, None, &[receive], deadline)
        }
    }

    /// Runs one pipelined ring transfer: sends `header` and optionally `first` from `values`, then checks the
    /// left neighbour's header and receives each span in order from it, combining it into `values` and
    /// forwarding it to the right where asked. The headers travel with the data: no round trip of their own.
    fn transfer(
        &mut self,
        name: &str,
        header: &Header,
        values: &mut [f32],
        first: Option<Range<usize>>,
        receives: &[Receive],
        deadline: Instant,
    ) -> Result<()> {
        let check_header = |theirs: &[u8; HEADER_LEN]| header.check(theirs, name);
        let plan = Plan {
            header: header.0,
            check_header: &check_header,
            first,
            receives,
        };
        let outcome = match &mut self.links {
            Links::Solo => Ok(()),
            Links::Tcp { left, right } => transfer::run(left, right, values, &plan, deadline),
            Links::Memory(links) => links.run(values, &plan, deadline),
        };
        outcome.map_err(|failure| self.failed_with(name, failure))
    }

    /// The error of an operation that failed with a neighbour, recorded (see `fail`).
    fn failed_with(&mut self, name: &str, (side, e): (Side, io::Error)) -> CollectiveError {
        let peer = match side {
            Side::Left => self.left_rank(),
            Side::Right => self.right_rank(),
        };
        let error = self.peer_error(name, peer, describe_io(&e));
        self.fail(error)
    }

    /// Gathers one byte string from every rank, indexed by rank.
    pub fn allgather_bytes(&mut self, mine: &[u8]) -> Result<Vec<Vec<u8>>> {
        let n = self.world_size();
        if n == 1 {
            return Ok(vec![mine.to_vec()]);
        }
        let (name, sequence, deadline) = self.start(Op::Allgather)?;
        let header = Header::new(Op::Allgather, sequence, n);
        if let Links::Memory(links) = &self.links {
            let check_header = |theirs: &[u8; HEADER_LEN]| header.check(theirs, &name);
            return links
                .allgather((self.rank, n), mine, header.0, &check_header, deadline)
                .map_err(|failure| self.failed_with(&name, failure));
        }
        self.exchange_headers(&header, &name, deadline)?;
        let (left_rank, right_rank, rank) = (self.left_rank(), self.right_rank(), self.rank);
        let Links::Tcp { left, right } = &mut self.links else {
            return Ok(vec![mine.to_vec()]);
        };
        let mut gathered: Vec<Vec<u8>> = vec![Vec::new(); n];
        gathered[rank] = mine.to_vec();
        let outcome: std::result::Result<(), (usize, String)> = std::thread::scope(|s| {
            let (to_sender, from_main) = sync_channel::<Vec<u8>>(n);
            let sender = s.spawn(move || -> std::result::Result<(), String> {
                for message in from_main {
                    right.write_message(&message, deadline).map_err(|e| describe_io(&e))?;
                }
                Ok(())
            });
            let mut received = Ok(());
            if to_sender.send(mine.to_vec()).is_ok() {
                for t in 0..n - 1 {
                    match left.read_message(deadline) {
                        Ok(message) => {
                            if t + 1 < n - 1 && to_sender.send(message.clone()).is_err() {
                                break;
                            }
                            gathered[(rank + 2 * n - t - 1) % n] = message;
                        }
                        Err(e) => {
                            received = Err((left_rank, describe_io(&e)));
                            break;
                        }
                    }
                }
            }
            drop(to_sender);
            let sent = sender
                .join()
                .unwrap_or_else(|_| Err("the sender thread panicked".to_string()));
            received.and(sent.map_err(|cause| (right_rank, cause)))
        });
        match outcome {
            Ok(()) => Ok(gathered),
            Err((peer, cause)) => {
                let error = self.peer_error(&name, peer, cause);
                Err(self.fail(error))
            }
        }
    }

    /// Waits until every rank has called `barrier`.
    pub fn barrier(&mut self) -> Result<()> {
        self.allgather_bytes(&[]).map(|_| ())
    }

    /// The smallest of every rank's `value`.
    pub fn min_u64(&mut self, value: u64) -> Result<u64> {
        Ok(self.all_u64(value)?.into_iter().min().unwrap_or(value))
    }

    /// The largest of every rank's `value` (how ranks agree on the number of steps in an epoch).
    pub fn max_u64(&mut self, value: u64) -> Result<u64> {
        Ok(self.all_u64(value)?.into_iter().max().unwrap_or(value))
    }

    /// Every rank's `value`, in rank order.
    fn all_u64(&mut self, value: u64) -> Result<Vec<u64>> {
        let all = self.allgather_bytes(&value.to_le_bytes())?;
        Ok(all
            .iter()
            .map(|b| b.as_slice().try_into().map_or(0, u64::from_le_bytes))
            .collect())
    }
}

/// A rank's links to its neighbours.
#[derive(Debug)]
enum Links {
    /// A world of one rank has none.
    Solo,
    /// Authenticated TCP connections, each frame protected.
    Tcp { left: Link, right: Link },
    /// Mailboxes, when every rank shares this process.
    Memory(MemoryLinks),
}

/// One ring link once set up: the connection, or the mailbox it handed over.
enum Linked {
    Tcp(Link),
    Memory(MemoryLink),
}

/// An operation's header: its kind, sequence number and length. Each rank sends its own to the right and
/// reads the left neighbour's; a neighbour doing something else is garbage.
struct Header([u8; HEADER_LEN]);

impl Header {
    fn new(op: Op, sequence: u64, len: usize) -> Self {
        let mut header = [0u8; HEADER_LEN];
        header[..8].copy_from_slice(&(op as u64).to_le_bytes());
        header[8..16].copy_from_slice(&sequence.to_le_bytes());
        header[16..].copy_from_slice(&(len as u64).to_le_bytes());
        Self(header)
    }

    /// Reads the neighbour's header from `link`: an error unless it is this one.
    fn read_from(&self, link: &mut Link, name: &str, deadline: Instant) -> io::Result<()> {
        let message = link.read_message(deadline)?;
        let theirs: [u8; HEADER_LEN] = message.as_slice().try_into().map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("sent garbage: a header of {} bytes", message.len()),
            )
        })?;
        self.check(&theirs, name)
    }

    /// An error unless `theirs` is this header.
    fn check(&self, theirs: &[u8; HEADER_LEN], name: &str) -> io::Result<()> {
        if *theirs == self.0 {
            return Ok(());
        }
        let word = |bytes: &[u8; HEADER_LEN], i: usize| {
            u64::from_le_bytes(bytes[i * 8..i * 8 + 8].try_into().unwrap_or_default())
        };
        Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "sent garbage: expected {name} of {} values, got {} #{} of {} values",
                word(&self.0, 2),
                Op::name(word(theirs, 0)),
                word(theirs, 1),
                word(theirs, 2)
            ),
        ))
    }
}

#[cfg(test)]
impl Communicator {
    /// A rank of a ring formed without a coordinator: `peers[r]` is where rank `r` is reached, which need not
    /// be where it listens (a test may put something between two ranks).
    pub(super) fn link_by_hand(
        rank: usize,
        peers: Vec<Peer>,
        listener: &TcpListener,
        secret: &JobSecret,
    ) -> Result<Self> {
        let mut comm = Self::unlinked(rank, peers, secret, Duration::from_secs(5));
        comm.link_ring(listener)?;
        Ok(comm)
    }
}
