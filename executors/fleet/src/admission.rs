//! Bounds on what a caller that has not proven the secret can hold on a fleet's port. A connection must carry
//! a request that the [`guard`](crate::guard) admits within [`FIRST_REQUEST_DEADLINE`] of being accepted (a
//! TLS handshake included), or it is closed; and a port keeps at most [`MAX_WAITING`] connections not yet
//! admitted, [`MAX_WAITING_PER_PEER`] of them from one address — beyond, the oldest waiting one is closed. A
//! flood of silent connections so holds a bounded number of descriptors for a bounded time, and the fleet's
//! own executors and clients, whose first request follows their connection at once, are admitted through it.
//!
//! ```
//! use std::net::{IpAddr, Ipv4Addr};
//! use hearth_fleet::admission::Waiting;
//!
//! let waiting = Waiting::default();
//! let admission = waiting.enter(IpAddr::V4(Ipv4Addr::LOCALHOST));
//! assert!(admission.is_waiting());
//! admission.admit();
//! assert!(!admission.is_waiting());
//! ```

use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

/// How long a connection may go without an admitted request before it is closed.
pub const FIRST_REQUEST_DEADLINE: Duration = Duration::from_secs(10);

/// The most connections a port keeps waiting for their first admitted request.
pub const MAX_WAITING: usize = 512;

/// The most of those from one address.
pub const MAX_WAITING_PER_PEER: usize = 128;

/// How many connections this process's ports have accepted: the next one's number.
static CONNECTIONS: AtomicU64 = AtomicU64::new(0);

/// How often a port says in its log that it closes waiting connections.
const LOG_EVERY: Duration = Duration::from_secs(10);

/// One connection's standing: admitted once a request on it proved the secret; closed when it waited too
/// long or made room for a newer one.
#[derive(Clone, Debug)]
pub struct Admission(Arc<Standing>);

#[derive(Debug)]
struct Standing {
    /// The connection's number, unique in this process.
    connection: u64,
    peer: IpAddr,
    admitted: AtomicBool,
    closed: AtomicBool,
    /// The connection's reader, woken when it is closed.
    reader: Mutex<Option<Waker>>,
}

impl Admission {
    /// Marks the connection admitted: no deadline or room-making closes it from now on.
    pub fn admit(&self) {
        self.0.admitted.store(true, Ordering::Relaxed);
    }

    /// The connection's number, unique in this process: what a token admitted on it is remembered with
    /// ([`ReplayMemory`](hearth_exec::ballista::ReplayMemory)).
    pub fn connection(&self) -> u64 {
        self.0.connection
    }

    /// Whether the connection still waits for its first admitted request.
    pub fn is_waiting(&self) -> bool {
        !self.0.admitted.load(Ordering::Relaxed) && !self.0.closed.load(Ordering::Relaxed)
    }

    /// Closes the connection: its next read fails.
    fn close(&self) {
        self.0.closed.store(true, Ordering::Relaxed);
        let reader = self.0.reader.lock().map(|mut reader| reader.take());
        if let Ok(Some(reader)) = reader {
            reader.wake();
        }
    }

    /// Whether a connection (beside the list of waiting ones) still holds this standing.
    fn is_open(&self) -> bool {
        Arc::strong_count(&self.0) > 1
    }
}

/// The connections of one port that wait for their first admitted request, oldest first.
#[derive(Debug, Default)]
pub struct Waiting {
    queue: Mutex<VecDeque<Admission>>,
    logged: Mutex<Option<Instant>>,
}

impl Waiting {
    /// The standing of a new connection from `peer`; makes room by closing the oldest waiting connection
    /// from `peer` past [`MAX_WAITING_PER_PEER`], and the oldest of all past [`MAX_WAITING`].
    pub fn enter(&self, peer: IpAddr) -> Admission {
        let admission = Admission(Arc::new(Standing {
            connection: CONNECTIONS.fetch_add(1, Ordering::Relaxed),
            peer,
            admitted: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            reader: Mutex::new(None),
        }));
        let Ok(mut queue) = self.queue.lock() else {
            return admission;
        };
        queue.retain(|waiting| waiting.is_waiting() && waiting.is_open());
        queue.push_back(admission.clone());
        let mut closed = 0;
        if queue.iter().filter(|waiting| waiting.0.peer == peer).count() > MAX_WAITING_PER_PEER
            && let Some(at) = queue.iter().position(|waiting| waiting.0.peer == peer)
            && let Some(oldest) = queue.remove(at)
        {
            oldest.close();
            closed += 1;
        }
        while queue.len() > MAX_WAITING {
            if let Some(oldest) = queue.pop_front() {
                oldest.close();
                closed += 1;
            }
        }
        drop(queue);
        if closed > 0 {
            self.log_room_made(peer);
        }
        admission
    }

    /// Says in the log, at most every [`LOG_EVERY`], that waiting connections are being closed.
    fn log_room_made(&self, peer: IpAddr) {
        let Ok(mut logged) = self.logged.lock() else {
            return;
        };
        if logged.is_none_or(|at| at.elapsed() >= LOG_EVERY) {
            *logged = Some(Instant::now());
            log::warn!(
                "more connections than this port keeps waiting for the cluster secret ({MAX_WAITING}, \
                 {MAX_WAITING_PER_PEER} from one address; the last from {peer}): closing the oldest"
            );
        }
    }
}

/// A connection under its [`Admission`]: reads fail once it is closed, or once [`FIRST_REQUEST_DEADLINE`]
/// passed with no admitted request on it.
pub struct Admitted<S> {
    inner: S,
    admission: Admission,
    deadline: Pin<Box<Sleep>>,
}

impl<S> Admitted<S> {
    /// `inner` under `admission`, its [`FIRST_REQUEST_DEADLINE`] starting now.
    pub fn new(inner: S, admission: Admission) -> Self {
        Self::with_deadline(inner, admission, FIRST_REQUEST_DEADLINE)
    }

    /// `inner` under `admission`, with `deadline` from now for its first admitted request.
    fn with_deadline(inner: S, admission: Admission, deadline: Duration) -> Self {
        Self {
            inner,
            admission,
            deadline: Box::pin(tokio::time::sleep(deadline)),
        }
    }

    /// The connection's standing.
    pub fn admission(&self) -> &Admission {
        &self.admission
    }

    /// The connection beneath.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// Why the connection must end, if it must: closed to make room, or past its deadline unadmitted.
    fn refusal(&mut self, cx: &mut Context<'_>) -> Option<io::Error> {
        let standing = &self.admission.0;
        if standing.admitted.load(Ordering::Relaxed) {
            return None;
        }
        if let Ok(mut reader) = standing.reader.lock() {
            *reader = Some(cx.waker().clone());
        }
        if standing.closed.load(Ordering::Relaxed) {
            return Some(io::Error::new(
                io::ErrorKind::ConnectionAborted,
                "closed to make room: too many connections wait for the cluster secret",
            ));
        }
        if self.deadline.as_mut().poll(cx).is_ready() {
            self.admission.close();
            log::debug!(
                "closed a connection from {}: no request with the cluster secret in time",
                standing.peer
            );
            return Some(io::Error::new(
                io::ErrorKind::TimedOut,
                "no request with the cluster secret in time",
            ));
        }
        None
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Admitted<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        if let Some(refusal) = self.refusal(cx) {
            return Poll::Ready(Err(refusal));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Admitted<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use super::*;

    #[test]
    fn the_oldest_waiting_connection_of_a_crowded_address_makes_room() {
        let waiting = Waiting::default();
        let crowd = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1));
        let other = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 2));
        let theirs = waiting.enter(other);
        let first = waiting.enter(crowd);
        let admitted = waiting.enter(crowd);
        admitted.admit();
        let mut held: Vec<Admission> = (0..MAX_WAITING_PER_PEER - 1).map(|_| waiting.enter(crowd)).collect();
        assert!(first.is_waiting(), "an admitted connection does not count");
        held.push(waiting.enter(crowd));
        assert!(!first.is_waiting(), "the crowd's oldest is closed");
        assert!(theirs.is_waiting() && held.iter().all(Admission::is_waiting));
    }

    #[test]
    fn a_port_keeps_a_bounded_number_waiting() {
        let waiting = Waiting::default();
        let held: Vec<Admission> = (0..=MAX_WAITING)
            .map(|i| waiting.enter(IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + i as u32))))
            .collect();
        assert!(!held[0].is_waiting());
        assert!(held[1..].iter().all(Admission::is_waiting));
    }

    #[tokio::test]
    async fn a_silent_connection_is_closed_at_its_deadline_and_an_admitted_one_is_not() {
        use tokio::io::AsyncReadExt;

        let deadline = Duration::from_millis(50);
        let waiting = Waiting::default();
        let (_client, server) = tokio::io::duplex(64);
        let mut silent = Admitted::with_deadline(server, waiting.enter(IpAddr::V4(Ipv4Addr::LOCALHOST)), deadline);
        let error = silent.read(&mut [0u8; 8]).await.unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::TimedOut);

        let (mut client, server) = tokio::io::duplex(64);
        let admission = waiting.enter(IpAddr::V4(Ipv4Addr::LOCALHOST));
        admission.admit();
        let mut admitted = Admitted::with_deadline(server, admission, deadline);
        tokio::time::sleep(deadline * 4).await;
        tokio::io::AsyncWriteExt::write_all(&mut client, b"hi").await.unwrap();
        assert_eq!(admitted.read(&mut [0u8; 8]).await.unwrap(), 2);
    }
}
