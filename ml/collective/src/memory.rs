//! Links between ranks that share a process: a mailbox per direction instead of a TCP connection.
//!
//! When every rank of a job runs in one process (a `local[N]` session, [`LocalWorld`](super::LocalWorld), one
//! executor holding the whole stage), the ring's operations move values through memory: a rank pushes a copy
//! of a span into the mailbox its right neighbour reads and takes what its left neighbour sent from the one it
//! reads, with no socket, system call or frame tag in the way. The ranks still meet at the rendezvous and prove the job secret on a
//! TCP link; that link carries the key of the mailbox, which only this process can turn into the mailbox, and
//! is then closed.
//!
//! Operations keep the ring's rules: the same plan (header first, then the spans in order), the header checked
//! against the neighbour's, every wait bounded by the deadline, and a rank that fails or goes away closes its
//! mailboxes so its neighbours fail at once.

use std::collections::{HashMap, VecDeque};
use std::io;
use std::iter;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::Instant;

use super::auth::fill_random;
use super::transfer::{Combine, HEADER_GRACE, HEADER_LEN, Plan, Side};

/// One message between neighbours.
enum Message {
    /// An operation's header.
    Header([u8; HEADER_LEN]),
    /// A span of a buffer.
    Values(Vec<f32>),
    /// One rank's part of an allgather.
    Bytes(Vec<u8>),
}

/// Buffers a mailbox keeps for the next copies sent through it, at most.
const SPARES: usize = 4;

#[derive(Default)]
struct Queue {
    messages: VecDeque<Message>,
    /// Set when either end fails or goes away; what was sent before is still delivered.
    closed: bool,
    /// Buffers of values already taken, kept for the next copies (a fresh large buffer costs its page faults
    /// on every operation).
    spares: Vec<Vec<f32>>,
}

/// The messages one rank sends its right neighbour, in order.
#[derive(Default)]
struct Mailbox {
    queue: Mutex<Queue>,
    arrived: Condvar,
}

impl Mailbox {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        // A rank that panicked while holding the lock left a queue that is still whole (pushes and pops are
        // single calls), so the poison is ignored.
        self.queue.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A copy of `values` to send through this mailbox, in a spare buffer where one is kept.
    fn copy_of(&self, values: &[f32]) -> Message {
        let mut copy = self.lock().spares.pop().unwrap_or_default();
        copy.clear();
        copy.extend_from_slice(values);
        Message::Values(copy)
    }

    /// Keeps a taken buffer for a later copy.
    fn recycle(&self, buffer: Vec<f32>) {
        let mut queue = self.lock();
        if queue.spares.len() < SPARES {
            queue.spares.push(buffer);
        }
    }

    fn send(&self, message: Message) -> io::Result<()> {
        let mut queue = self.lock();
        if queue.closed {
            return Err(io::Error::new(io::ErrorKind::BrokenPipe, "its link is closed"));
        }
        queue.messages.push_back(message);
        self.arrived.notify_all();
        Ok(())
    }

    fn receive(&self, deadline: Instant) -> io::Result<Message> {
        let mut queue = self.lock();
        loop {
            if let Some(message) = queue.messages.pop_front() {
                return Ok(message);
            }
            if queue.closed {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(io::Error::new(io::ErrorKind::TimedOut, "deadline passed"));
            }
            queue = self
                .arrived
                .wait_timeout(queue, left)
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .0;
        }
    }

    /// Fails both ends from now on: the sender at once, the receiver once it has taken what was sent.
    fn close(&self) {
        self.lock().closed = true;
        self.arrived.notify_all();
    }
}

/// One end of a mailbox; dropping it closes the mailbox, as dropping a connection closes it.
pub(crate) struct MemoryLink(Arc<Mailbox>);

impl Drop for MemoryLink {
    fn drop(&mut self) {
        self.0.close();
    }
}

impl std::fmt::Debug for MemoryLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MemoryLink")
    }
}

/// The name a mailbox is offered under: random, so that no connection can guess another job's.
pub(crate) type Key = [u8; 16];

/// Mailboxes offered by the rank that connects and not yet taken by the rank that accepts, by key.
fn offered() -> MutexGuard<'static, HashMap<Key, Arc<Mailbox>>> {
    static OFFERED: OnceLock<Mutex<HashMap<Key, Arc<Mailbox>>>> = OnceLock::new();
    OFFERED
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A new mailbox towards the right neighbour and the key it is offered under.
pub(crate) fn offer() -> (MemoryLink, Key) {
    let mut key = Key::default();
    fill_random(&mut key);
    let mailbox = Arc::new(Mailbox::default());
    offered().insert(key, mailbox.clone());
    (MemoryLink(mailbox), key)
}

/// Takes the mailbox the left neighbour offered under `key`; `None` if this process holds none (the
/// neighbour is not in this process).
pub(crate) fn take(key: &[u8]) -> Option<MemoryLink> {
    offered().remove(key).map(MemoryLink)
}

/// Withdraws an offer the neighbour never took.
pub(crate) fn withdraw(key: &Key) {
    offered().remove(key);
}

/// This process's identity at the rendezvous: random, so two processes (on any hosts) never share it.
pub(crate) fn process_id() -> &'static str {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| {
        let mut bytes = [0u8; 16];
        fill_random(&mut bytes);
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    })
}

fn garbage(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("sent garbage: {what}"))
}

/// A rank's two in-process links: from the left neighbour, to the right one.
#[derive(Debug)]
pub(crate) struct MemoryLinks {
    pub left: MemoryLink,
    pub right: MemoryLink,
}

impl MemoryLinks {
    /// Closes both links, so both neighbours fail now.
    pub(crate) fn close(&self) {
        self.left.0.close();
        self.right.0.close();
    }

    fn send(&self, message: Message) -> Result<(), (Side, io::Error)> {
        self.right.0.send(message).map_err(|e| (Side::Right, e))
    }

    fn receive(&self, deadline: Instant) -> Result<Message, (Side, io::Error)> {
        self.left.0.receive(deadline).map_err(|e| (Side::Left, e))
    }

    /// Sends an operation's opening messages (its header first) to the right. A right neighbour that closed has
    /// often only failed first on the garbage this rank is about to take from the left: the left's header is
    /// then looked at for a moment, and garbage in it is the cause named.
    fn send_opening(
        &self,
        opening: impl IntoIterator<Item = Message>,
        check_header: &dyn Fn(&[u8; HEADER_LEN]) -> io::Result<()>,
        deadline: Instant,
    ) -> Result<(), (Side, io::Error)> {
        let Err(sent) = opening.into_iter().try_for_each(|message| self.send(message)) else {
            return Ok(());
        };
        match self.receive_header(check_header, deadline.min(Instant::now() + HEADER_GRACE)) {
            Err(garbage) if garbage.1.kind() == io::ErrorKind::InvalidData => Err(garbage),
            _ => Err(sent),
        }
    }

    /// Takes the left neighbour's header and checks it.
    fn receive_header(
        &self,
        check_header: &dyn Fn(&[u8; HEADER_LEN]) -> io::Result<()>,
        deadline: Instant,
    ) -> Result<(), (Side, io::Error)> {
        match self.receive(deadline)? {
            Message::Header(theirs) => check_header(&theirs).map_err(|e| (Side::Left, e)),
            _ => Err((Side::Left, garbage("data where a header was due"))),
        }
    }

    /// Runs `plan` on `values`, by `deadline`: the header and `plan.first` go right, the left neighbour's
    /// header is checked, and its spans are combined in order (each passed on where asked). On failure, says
    /// which neighbour's link failed and how.
    pub(crate) fn run(&self, values: &mut [f32], plan: &Plan, deadline: Instant) -> Result<(), (Side, io::Error)> {
        let first = plan
            .first
            .iter()
            .map(|first| self.right.0.copy_of(&values[first.clone()]));
        self.send_opening(
            iter::once(Message::Header(plan.header)).chain(first),
            plan.check_header,
            deadline,
        )?;
        self.receive_header(plan.check_header, deadline)?;
        for expected in plan.receives {
            let Message::Values(mut incoming) = self.receive(deadline)? else {
                return Err((Side::Left, garbage("something other than values")));
            };
            let span = &mut values[expected.range.clone()];
            if incoming.len() != span.len() {
                let what = format!("sent garbage: {} values where {} were due", incoming.len(), span.len());
                return Err((Side::Left, io::Error::new(io::ErrorKind::InvalidData, what)));
            }
            match expected.combine {
                Combine::Add => {
                    span.iter_mut().zip(&incoming).for_each(|(x, y)| *x += *y);
                    if expected.forward {
                        // The received buffer carries the sum onward.
                        incoming.copy_from_slice(span);
                    }
                }
                Combine::Replace => span.copy_from_slice(&incoming),
            }
            if expected.forward {
                self.send(Message::Values(incoming))?;
            } else {
                self.left.0.recycle(incoming);
            }
        }
        Ok(())
    }

    /// Gathers one byte string from each of `world` ranks around the ring, after `header` is exchanged and
    /// checked with `check_header`; indexed by rank.
    pub(crate) fn allgather(
        &self,
        (rank, world): (usize, usize),
        mine: &[u8],
        header: [u8; HEADER_LEN],
        check_header: &dyn Fn(&[u8; HEADER_LEN]) -> io::Result<()>,
        deadline: Instant,
    ) -> Result<Vec<Vec<u8>>, (Side, io::Error)> {
        let opening = [Message::Header(header), Message::Bytes(mine.to_vec())];
        self.send_opening(opening, check_header, deadline)?;
        self.receive_header(check_header, deadline)?;
        let mut gathered = vec![Vec::new(); world];
        gathered[rank] = mine.to_vec();
        for t in 0..world - 1 {
            let Message::Bytes(message) = self.receive(deadline)? else {
                return Err((Side::Left, garbage("something other than an allgather part")));
            };
            if t + 1 < world - 1 {
                self.send(Message::Bytes(message.clone()))?;
            }
            gathered[(rank + 2 * world - t - 1) % world] = message;
        }
        Ok(gathered)
    }
}
