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
use std::net::{IpAddr, Ipv4Addr, Shutdown, SocketAddr, TcpListener};
use std::ops::Range;
use std::sync::mpsc::sync_channel;
use std::time::{Duration, Instant};

use crate::auth::JobSecret;
use crate::error::{CollectiveError, Result, describe_io};
use crate::memory;
use crate::rendezvous::{Peer, Registration, register};
use crate::transfer::{self, Combine, HEADER_GRACE, HEADER_LEN, Plan, Receive, Side};
use header::{Header, Op};
use links::{Links, Place};

mod header;
mod links;

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
        comm.links = links::link_ring(comm.place(), &listener, secret, options.timeout)?;
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

    /// This rank's place in the ring.
    fn place(&self) -> Place<'_> {
        Place {
            rank: self.rank,
            peers: &self.peers,
        }
    }

    fn left_rank(&self) -> usize {
        self.place().left_rank()
    }

    fn right_rank(&self) -> usize {
        self.place().right_rank()
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
        self.place().host(rank)
    }

    pub(crate) fn peer_error(&self, op: &str, peer: usize, cause: String) -> CollectiveError {
        self.place().peer_error(op, peer, cause)
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
            let sender = s.spawn(move || -> io::Result<()> {
                for message in from_main {
                    right.write_message(&message, deadline)?;
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
            let sent = match sender.join() {
                Ok(sent) => sent.map_err(|e| describe_io(&e)),
                Err(_) => Err("the sender thread panicked".to_string()),
            };
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

#[cfg(test)]
impl Communicator {
    /// A rank of a ring formed without a coordinator: `peers[r]` is where rank `r` is reached, which need not
    /// be where it listens (a test may put something between two ranks).
    pub(crate) fn link_by_hand(
        rank: usize,
        peers: Vec<Peer>,
        listener: &TcpListener,
        secret: &JobSecret,
    ) -> Result<Self> {
        let mut comm = Self::unlinked(rank, peers, secret, Duration::from_secs(5));
        comm.links = links::link_ring(comm.place(), listener, secret, Duration::from_secs(5))?;
        Ok(comm)
    }
}
