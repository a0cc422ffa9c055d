//! The communicator: a ring of authenticated TCP links over which ranks run allreduce, broadcast, allgather
//! and barrier.
//!
//! Rank `r` sends to rank `r + 1` and receives from rank `r − 1` (mod N). Allreduce is a reduce-scatter
//! followed by an allgather (2(N − 1) steps, each moving 1/N of the buffer), and every step is pipelined in
//! sub-chunks: a sender thread writes while the calling thread receives and reduces, so the links stay busy
//! in both directions. Each operation starts with a header (operation, sequence number, length) that both
//! neighbours check, so ranks that disagree about what they are doing fail instead of mixing data. Every
//! operation has a deadline; on any failure the links are shut down, so the neighbours fail at once and the
//! failure travels around the ring.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::ops::Range;
use std::sync::mpsc::{Receiver, Sender, channel, sync_channel};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::auth::{JobSecret, prove_as_client, prove_as_server};
use super::error::{CollectiveError, Result, describe_io};
use super::rendezvous::{Peer, Registration, register};
use super::wire::{read_exact_by, read_message, remaining, write_all_by, write_message};

/// Values per pipelined piece (512 KiB of `f32`).
const PIECE: usize = 128 * 1024;

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
}

impl Default for JoinOptions {
    fn default() -> Self {
        Self {
            bind: IpAddr::V4(Ipv4Addr::LOCALHOST),
            host: "localhost".to_string(),
            devices: vec!["cpu".to_string()],
            position: 0,
            timeout: Duration::from_secs(60),
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

/// How received values combine with local ones.
#[derive(Clone, Copy)]
enum Combine {
    Add,
    Replace,
}

/// One received span of the buffer: where it lands, how, and whether it is passed on to the right.
struct Receive {
    range: Range<usize>,
    combine: Combine,
    forward: bool,
}

/// A rank's handle on the job: its rank, the peer table, and the two ring links.
///
/// ```
/// use std::time::Duration;
/// use hearth_ml::collective::{Communicator, Coordinator, JobSecret, JoinOptions};
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
    left: Option<TcpStream>,
    right: Option<TcpStream>,
    timeout: Duration,
    sequence: u64,
    failure: Option<String>,
    /// Writes to the right neighbour for every operation (none alone).
    sender: Option<SenderThread>,
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
        };
        let (rank, peers) = register(coordinator, secret, &registration, options.timeout)?;
        let mut comm = Self {
            rank,
            peers,
            left: None,
            right: None,
            timeout: options.timeout,
            sequence: 0,
            failure: None,
            sender: None,
        };
        if comm.world_size() > 1 {
            let deadline = Instant::now() + options.timeout;
            let (left, right) = std::thread::scope(|s| {
                let accepting = s.spawn(|| comm.accept_left(&listener, secret, deadline));
                let right = comm.connect_right(secret, deadline);
                let left = accepting.join().unwrap_or_else(|_| {
                    Err(CollectiveError::Local {
                        what: "accepting the left link".to_string(),
                        source: io::Error::other("the accepting thread panicked"),
                    })
                });
                (left, right)
            });
            let (left, right) = (left?, right?);
            let clones = right.try_clone().and_then(|r| Ok((r, left.try_clone()?)));
            let (right_clone, left_clone) = clones.map_err(|source| CollectiveError::Local {
                what: "sharing the ring links with the sender thread".to_string(),
                source,
            })?;
            let sender = SenderThread::start(right_clone, left_clone, comm.right_rank());
            comm.sender = Some(sender.map_err(|source| CollectiveError::Local {
                what: "starting the ring's sender thread".to_string(),
                source,
            })?);
            comm.left = Some(left);
            comm.right = Some(right);
        }
        Ok(comm)
    }

    /// This rank, `0..world_size`.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of ranks.
    pub fn world_size(&self) -> usize {
        self.peers.len()
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

    fn host(&self, rank: usize) -> String {
        self.peers
            .get(rank)
            .map_or_else(|| "unknown host".to_string(), |p| p.registration.host.clone())
    }

    fn peer_error(&self, op: &str, peer: usize, cause: String) -> CollectiveError {
        CollectiveError::Peer {
            op: op.to_string(),
            rank: self.rank,
            peer,
            host: self.host(peer),
            cause,
        }
    }

    fn connect_right(&self, secret: &JobSecret, deadline: Instant) -> Result<TcpStream> {
        let right = self.right_rank();
        let address = self.peers[right].registration.listen;
        let fail = |cause: String| self.peer_error("connecting the ring", right, cause);
        let mut stream = loop {
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
        prove_as_client(&mut stream, secret)?;
        write_all_by(&mut stream, &(self.rank as u64).to_le_bytes(), deadline).map_err(|e| fail(describe_io(&e)))?;
        Ok(stream)
    }

    fn accept_left(&self, listener: &TcpListener, secret: &JobSecret, deadline: Instant) -> Result<TcpStream> {
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
            let (mut stream, from) = match listener.accept() {
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
            if let Err(e) = prove_as_server(&mut stream, secret) {
                log::warn!("rank {}: refused a ring connection from {from}: {e}", self.rank);
                continue;
            }
            let mut hello = [0u8; 8];
            match read_exact_by(&mut stream, &mut hello, handshake) {
                Ok(()) if u64::from_le_bytes(hello) == left as u64 => return Ok(stream),
                Ok(()) => log::warn!(
                    "rank {}: refused {from}: it says it is rank {}, expected rank {left}",
                    self.rank,
                    u64::from_le_bytes(hello)
                ),
                Err(e) => log::warn!("rank {}: refused {from}: {}", self.rank, describe_io(&e)),
            }
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
        for link in [&self.left, &self.right].into_iter().flatten() {
            let _ = link.shutdown(Shutdown::Both);
        }
        error
    }

    /// Exchanges operation headers with both neighbours: a neighbour doing something else is garbage.
    fn exchange_headers(&mut self, header: &Header, name: &str, deadline: Instant) -> Result<()> {
        let (left, right) = (self.left_rank(), self.right_rank());
        let (Some(left_link), Some(right_link)) = (self.left.as_mut(), self.right.as_mut()) else {
            return Ok(());
        };
        if let Err(e) = write_all_by(right_link, &header.0, deadline) {
            let error = self.peer_error(name, right, describe_io(&e));
            return Err(self.fail(error));
        }
        if let Err(e) = header.read_from(left_link, name, deadline) {
            let error = self.peer_error(name, left, describe_io(&e));
            return Err(self.fail(error));
        }
        Ok(())
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

    /// Averages `values` across ranks (sum, then divide by the world size): gradient averaging.
    pub fn allreduce_mean(&mut self, values: &mut [f32]) -> Result<()> {
        self.allreduce_sum(values)?;
        let n = self.world_size() as f32;
        values.iter_mut().for_each(|v| *v /= n);
        Ok(())
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
        let left_rank = self.left_rank();
        let (Some(left), Some(sender)) = (self.left.as_mut(), &self.sender) else {
            return Ok(());
        };
        let shared = SharedValues::new(values);
        let progress = Arc::new(SendProgress::default());
        let (queue, spans) = channel::<Range<usize>>();
        let job = SendJob {
            header: header.0,
            values: shared,
            spans,
            progress: Arc::clone(&progress),
            deadline,
        };
        if sender.jobs.send(job).is_err() {
            progress.fail(
                self.right_rank(),
                "cannot be sent to: the sender thread has stopped".to_string(),
            );
        } else {
            // The buffer must outlive the sender's reads of it: wait for the job to end, even when unwinding.
            let _sent = WaitForSender(&progress);
            let link = LeftSide {
                header,
                name,
                queue: &queue,
                progress: &progress,
                deadline,
            };
            let received = receive_all(left, &link, &shared, first, receives);
            drop(queue);
            if let Err(e) = received {
                progress.fail(left_rank, describe_io(&e));
                // Unblocks a sender waiting on a neighbour that will not read any more.
                for link in [&self.left, &self.right].into_iter().flatten() {
                    let _ = link.shutdown(Shutdown::Both);
                }
            }
        }
        match progress.take_failure() {
            None => Ok(()),
            Some((peer, cause)) => {
                let error = self.peer_error(name, peer, cause);
                Err(self.fail(error))
            }
        }
    }

    /// Gathers one byte string from every rank, indexed by rank.
    pub fn allgather_bytes(&mut self, mine: &[u8]) -> Result<Vec<Vec<u8>>> {
        let n = self.world_size();
        if n == 1 {
            return Ok(vec![mine.to_vec()]);
        }
        let (name, sequence, deadline) = self.start(Op::Allgather)?;
        self.exchange_headers(&Header::new(Op::Allgather, sequence, n), &name, deadline)?;
        let (left_rank, right_rank, rank) = (self.left_rank(), self.right_rank(), self.rank);
        let (Some(left), Some(right)) = (self.left.as_mut(), self.right.as_mut()) else {
            return Ok(vec![mine.to_vec()]);
        };
        let mut gathered: Vec<Vec<u8>> = vec![Vec::new(); n];
        gathered[rank] = mine.to_vec();
        let outcome: std::result::Result<(), (usize, String)> = std::thread::scope(|s| {
            let (to_sender, from_main) = sync_channel::<Vec<u8>>(n);
            let sender = s.spawn(move || -> std::result::Result<(), String> {
                for message in from_main {
                    write_message(right, &message, deadline).map_err(|e| describe_io(&e))?;
                }
                Ok(())
            });
            let mut received = Ok(());
            if to_sender.send(mine.to_vec()).is_ok() {
                for t in 0..n - 1 {
                    match read_message(left, deadline) {
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

    /// The smallest of every rank's `value` (how ranks agree on a number of steps).
    pub fn min_u64(&mut self, value: u64) -> Result<u64> {
        let all = self.allgather_bytes(&value.to_le_bytes())?;
        Ok(all
            .iter()
            .map(|b| b.as_slice().try_into().map_or(0, u64::from_le_bytes))
            .min()
            .unwrap_or(value))
    }
}

/// What the receiving side of a transfer works with: the header it expects from the left, the operation's
/// name, the sender's queue and progress, and the deadline.
#[derive(Clone, Copy)]
struct LeftSide<'a> {
    header: &'a Header,
    name: &'a str,
    queue: &'a Sender<Range<usize>>,
    progress: &'a SendProgress,
    deadline: Instant,
}

/// An operation's header: its kind, sequence number and length. Each rank sends its own to the right and
/// reads the left neighbour's; a neighbour doing something else is garbage.
struct Header([u8; 24]);

impl Header {
    fn new(op: Op, sequence: u64, len: usize) -> Self {
        let mut header = [0u8; 24];
        header[..8].copy_from_slice(&(op as u64).to_le_bytes());
        header[8..16].copy_from_slice(&sequence.to_le_bytes());
        header[16..].copy_from_slice(&(len as u64).to_le_bytes());
        Self(header)
    }

    /// Reads the neighbour's header from `link`: an error unless it is this one.
    fn read_from(&self, link: &mut TcpStream, name: &str, deadline: Instant) -> io::Result<()> {
        let mut theirs = [0u8; 24];
        read_exact_by(link, &mut theirs, deadline)?;
        if theirs == self.0 {
            return Ok(());
        }
        let word =
            |bytes: &[u8; 24], i: usize| u64::from_le_bytes(bytes[i * 8..i * 8 + 8].try_into().unwrap_or_default());
        Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "sent garbage: expected {name} of {} values, got {} #{} of {} values",
                word(&self.0, 2),
                Op::name(word(&theirs, 0)),
                word(&theirs, 1),
                word(&theirs, 2)
            ),
        ))
    }
}

/// The buffer an operation works on, shared by its receiving thread (which reads, combines and writes spans)
/// and the sender thread (which writes spans out to the right, straight from the buffer).
///
/// The two touch the same span only in turn: the receiving side queues a span for sending after its last
/// write to it, and writes to a queued span again only once [`SendProgress`] reports it sent. The operation
/// that made it waits for the sender's job to end before it returns (or unwinds), so the buffer outlives
/// every read of it.
#[derive(Clone, Copy)]
struct SharedValues {
    start: *mut f32,
    len: usize,
}

// SAFETY: the pointer comes from a `&mut [f32]` that the operation holds until the sender's job has ended;
// spans are handed between the two threads as described on the type, the queue and `SendProgress` ordering
// every access.
unsafe impl Send for SharedValues {}
unsafe impl Sync for SharedValues {}

impl SharedValues {
    fn new(values: &mut [f32]) -> Self {
        Self {
            start: values.as_mut_ptr(),
            len: values.len(),
        }
    }

    /// The span `range` to read.
    ///
    /// # Safety
    /// The buffer is alive, and no other thread writes to `range` while the returned slice lives.
    unsafe fn range(&self, range: Range<usize>) -> &[f32] {
        assert!(
            range.start <= range.end && range.end <= self.len,
            "span {range:?} of {}",
            self.len
        );
        // SAFETY: in bounds (checked above); liveness and exclusive writes are the caller's.
        unsafe { std::slice::from_raw_parts(self.start.add(range.start), range.len()) }
    }

    /// The span `range` to write.
    ///
    /// # Safety
    /// The buffer is alive, and no other thread reads or writes `range` while the returned slice lives.
    #[allow(clippy::mut_from_ref)]
    unsafe fn range_mut(&self, range: Range<usize>) -> &mut [f32] {
        assert!(
            range.start <= range.end && range.end <= self.len,
            "span {range:?} of {}",
            self.len
        );
        // SAFETY: in bounds (checked above); liveness and other access are the caller's.
        unsafe { std::slice::from_raw_parts_mut(self.start.add(range.start), range.len()) }
    }
}

/// The thread that writes to the right neighbour, started with the ring and kept for the communicator's
/// life: an operation hands it a job rather than starting a thread of its own (which costs more than a
/// small allreduce).
#[derive(Debug)]
struct SenderThread {
    jobs: Sender<SendJob>,
}

impl SenderThread {
    /// Starts the thread on its own handles of the ring's links (the left one only to shut it on failure).
    /// It ends once the communicator is dropped and its last job is done.
    fn start(mut right: TcpStream, left: TcpStream, right_rank: usize) -> io::Result<Self> {
        let (jobs, queue) = channel::<SendJob>();
        std::thread::Builder::new()
            .name("hearth-ring-sender".to_string())
            .spawn(move || {
                for job in queue {
                    job.run(&mut right, &left, right_rank);
                }
            })?;
        Ok(Self { jobs })
    }
}

/// One operation's sending: its header, then each span queued, straight from the buffer.
struct SendJob {
    header: [u8; 24],
    values: SharedValues,
    spans: Receiver<Range<usize>>,
    progress: Arc<SendProgress>,
    deadline: Instant,
}

impl SendJob {
    fn run(self, right: &mut TcpStream, left: &TcpStream, right_rank: usize) {
        let sent = write_all_by(right, &self.header, self.deadline).and_then(|()| {
            for range in &self.spans {
                // SAFETY: the operation waits for this job to end before its buffer goes; the receiving side
                // queued this span after its last write to it and writes to it again only once `progress`
                // reports it sent (see `receive_all`).
                let piece = unsafe { self.values.range(range) };
                write_all_by(right, bytemuck::cast_slice(piece), self.deadline)?;
                self.progress.advance();
            }
            Ok(())
        });
        if let Err(e) = sent {
            self.progress.fail(right_rank, describe_io(&e));
            // Both links, so the receiving side stops now rather than at its deadline.
            let _ = right.shutdown(Shutdown::Both);
            let _ = left.shutdown(Shutdown::Both);
        }
    }
}

impl Drop for SendJob {
    /// The job ends when it is dropped, after its last read of the buffer: at the end of `run`, or while
    /// unwinding from a panic in it (so the operation waiting on it never hangs).
    fn drop(&mut self) {
        self.progress.stop();
    }
}

/// Waits, when dropped, until the sender thread has ended the operation's job.
struct WaitForSender<'a>(&'a SendProgress);

impl Drop for WaitForSender<'_> {
    fn drop(&mut self) {
        self.0.wait_stopped();
    }
}

/// How many queued spans the sender thread has written out, whether it has ended the job (done or failed),
/// and the operation's first failure (the peer's rank and what happened), from either side.
#[derive(Default)]
struct SendProgress {
    state: Mutex<ProgressState>,
    changed: Condvar,
}

#[derive(Default)]
struct ProgressState {
    sent: usize,
    stopped: bool,
    failure: Option<(usize, String)>,
}

impl SendProgress {
    fn update(&self, change: impl FnOnce(&mut ProgressState)) {
        if let Ok(mut state) = self.state.lock() {
            change(&mut state);
        }
        self.changed.notify_all();
    }

    fn advance(&self) {
        self.update(|state| state.sent += 1);
    }

    fn stop(&self) {
        self.update(|state| state.stopped = true);
    }

    /// Records a failure with `peer`, unless one came first.
    fn fail(&self, peer: usize, cause: String) {
        self.update(|state| {
            state.failure.get_or_insert((peer, cause));
        });
    }

    fn take_failure(&self) -> Option<(usize, String)> {
        self.state.lock().ok().and_then(|mut state| state.failure.take())
    }

    /// Waits until the first `spans` queued spans are sent; fails if the sender stops first or at `deadline`.
    fn wait_for(&self, spans: usize, deadline: Instant) -> io::Result<()> {
        let stopped = || io::Error::new(io::ErrorKind::BrokenPipe, "the sending side stopped");
        let mut state = self.state.lock().map_err(|_| stopped())?;
        while state.sent < spans {
            if state.stopped {
                return Err(stopped());
            }
            let (next, _) = self
                .changed
                .wait_timeout(state, remaining(deadline)?)
                .map_err(|_| stopped())?;
            state = next;
        }
        Ok(())
    }

    /// Waits until the sender has ended the job. Its writes end by the operation's deadline (or at once when
    /// the links are shut), so this ends too.
    fn wait_stopped(&self) {
        let Ok(mut state) = self.state.lock() else { return };
        while !state.stopped {
            match self.changed.wait(state) {
                Ok(next) => state = next,
                Err(_) => return,
            }
        }
    }
}

/// The receiving thread's side of a transfer: queues `first` for sending, then receives each span from the
/// left, combining it into the buffer and queueing it to be forwarded where asked.
///
/// The queue is unbounded on purpose: the receiving thread never waits for the sender except before writing
/// over a span it queued earlier, which the right neighbour consumes in an earlier step of its own.
fn receive_all(
    left: &mut TcpStream,
    link: &LeftSide,
    values: &SharedValues,
    first: Option<Range<usize>>,
    receives: &[Receive],
) -> io::Result<()> {
    let LeftSide {
        header,
        name,
        queue,
        progress,
        deadline,
    } = *link;
    // Every span queued so far, in queue order.
    let mut queued: Vec<Range<usize>> = Vec::new();
    let send = |queued: &mut Vec<Range<usize>>, range: Range<usize>| {
        queued.push(range.clone());
        queue
            .send(range)
            .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "the sending side stopped"))
    };
    if let Some(range) = first {
        for start in range.clone().step_by(PIECE) {
            send(&mut queued, start..(start + PIECE).min(range.end))?;
        }
    }
    header.read_from(left, name, deadline)?;
    let mut scratch = vec![0.0f32; PIECE];
    for receive in receives {
        let overlapping = |q: &Range<usize>| q.start < receive.range.end && receive.range.start < q.end;
        if let Some(last) = queued.iter().rposition(overlapping) {
            progress.wait_for(last + 1, deadline)?;
        }
        let mut offset = receive.range.start;
        while offset < receive.range.end {
            let piece = offset..(offset + PIECE).min(receive.range.end);
            // SAFETY: every span queued over this one is sent (waited for above), and the sender only reads
            // spans queued so far; this span is queued below only after this last write to it.
            let target = unsafe { values.range_mut(piece.clone()) };
            match receive.combine {
                Combine::Add => {
                    let incoming = &mut scratch[..piece.len()];
                    read_exact_by(left, bytemuck::cast_slice_mut(incoming), deadline)?;
                    target.iter_mut().zip(incoming.iter()).for_each(|(x, y)| *x += *y);
                }
                Combine::Replace => read_exact_by(left, bytemuck::cast_slice_mut(target), deadline)?,
            }
            if receive.forward {
                send(&mut queued, piece.clone())?;
            }
            offset = piece.end;
        }
    }
    Ok(())
}
