//! Accepting connections that must prove the job secret, without letting those that never do hold up those that
//! do: each connection is authenticated on a thread of its own, within its own deadline, at most
//! [`MAX_HANDSHAKES`] at once (further connections wait in the listener's queue until a handshake ends), and the
//! connections admitted are handed over in the order their handshakes end. The rendezvous coordinator, the ring's listeners and the parameter server
//! accept through it.

use std::fmt;
use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use super::error::{CollectiveError, describe_io};

/// The most connections authenticated at once on one listener.
pub(crate) const MAX_HANDSHAKES: usize = 64;

/// How long a connection has to prove the secret and say what it wants (never past the caller's deadline).
pub(crate) const HANDSHAKE_TIME: Duration = Duration::from_secs(5);

/// The most connections taken off the listener's queue in one call of [`Acceptor::next`], so that a flood of
/// connections cannot keep its caller from its own deadline.
const ACCEPTS_PER_CALL: usize = 16;

/// Why a connection was refused, as the log says it after `refused ADDRESS: `.
#[derive(Debug)]
pub(crate) struct Refused(String);

impl Refused {
    /// The connection said something that is not what the listener takes.
    pub(crate) fn said(what: impl Into<String>) -> Self {
        Self(what.into())
    }

    /// Reading `what` from the connection failed: it went quiet past its deadline, closed, or broke.
    pub(crate) fn reading(what: &str, error: &io::Error) -> Self {
        Self(format!("reading {what}: it {}", describe_io(error)))
    }
}

impl From<CollectiveError> for Refused {
    fn from(error: CollectiveError) -> Self {
        Self(error.to_string())
    }
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A handshake: what a connection from an address becomes once it proved the secret before the deadline, or
/// why it was refused.
type Handshake<T> = dyn Fn(TcpStream, SocketAddr, Instant) -> Result<T, Refused> + Send + Sync;

/// A listener whose connections are authenticated concurrently (see the module's documentation).
pub(crate) struct Acceptor<T> {
    listener: TcpListener,
    /// What the listener is, for the log: `rendezvous at 127.0.0.1:4000`, `rank 2`, `parameter server`.
    what: String,
    handshake: Arc<Handshake<T>>,
    running: Arc<AtomicUsize>,
    admit: mpsc::Sender<T>,
    admitted: mpsc::Receiver<T>,
}

impl<T: Send + 'static> Acceptor<T> {
    /// Accepts on `listener` (made non-blocking), authenticating each connection with `handshake`.
    pub(crate) fn new(
        listener: TcpListener,
        what: impl Into<String>,
        handshake: impl Fn(TcpStream, SocketAddr, Instant) -> Result<T, Refused> + Send + Sync + 'static,
    ) -> io::Result<Self> {
        listener.set_nonblocking(true)?;
        let (admit, admitted) = mpsc::channel();
        Ok(Self {
            listener,
            what: what.into(),
            handshake: Arc::new(handshake),
            running: Arc::new(AtomicUsize::new(0)),
            admit,
            admitted,
        })
    }

    /// Starts a handshake for the connections waiting while a handshake slot is free (each to end by
    /// `deadline` and within [`HANDSHAKE_TIME`]), then returns the next connection admitted, waiting for one up to
    /// `wait`.
    pub(crate) fn next(&self, deadline: Instant, wait: Duration) -> io::Result<Option<T>> {
        for _ in 0..ACCEPTS_PER_CALL {
            // Without a free slot, connections stay in the listener's queue until a handshake ends.
            let Some(slot) = Slot::take(&self.running) else {
                break;
            };
            match self.listener.accept() {
                Ok((stream, from)) => self.start(slot, stream, from, deadline.min(Instant::now() + HANDSHAKE_TIME)),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(e),
            }
        }
        Ok(self.admitted.recv_timeout(wait).ok())
    }

    /// Authenticates the connection from `from` on a thread of its own, holding `slot` while it runs.
    fn start(&self, slot: Slot, stream: TcpStream, from: SocketAddr, deadline: Instant) {
        let (handshake, admit, what) = (Arc::clone(&self.handshake), self.admit.clone(), self.what.clone());
        let spawned = std::thread::Builder::new()
            .name("hearth-handshake".to_string())
            .spawn(move || {
                let _slot = slot;
                let _ = stream.set_nonblocking(false);
                let _ = stream.set_nodelay(true);
                let _ = stream.set_read_timeout(Some(
                    deadline
                        .saturating_duration_since(Instant::now())
                        .max(Duration::from_millis(1)),
                ));
                match handshake(stream, from, deadline) {
                    Ok(admitted) => {
                        let _ = admit.send(admitted);
                    }
                    Err(reason) => log::warn!("{what}: refused {from}: {reason}"),
                }
            });
        if let Err(e) = spawned {
            log::warn!("{}: refused {from}: no thread for its handshake: {e}", self.what);
        }
    }
}

/// One of the [`MAX_HANDSHAKES`] handshakes that may run at once, given back when dropped.
struct Slot(Arc<AtomicUsize>);

impl Slot {
    /// A slot, unless all are taken.
    fn take(running: &Arc<AtomicUsize>) -> Option<Self> {
        running
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < MAX_HANDSHAKES).then_some(n + 1)
            })
            .ok()?;
        Some(Self(Arc::clone(running)))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};

    use super::*;

    /// An acceptor on a free port whose "handshake" reads one byte: a connection that sends nothing waits out
    /// its deadline.
    fn byte_acceptor() -> (Acceptor<u8>, SocketAddr) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let acceptor = Acceptor::new(listener, "test", |mut stream: TcpStream, _, _| {
            let mut byte = [0u8; 1];
            stream
                .read_exact(&mut byte)
                .map_err(|e| Refused::reading("its byte", &e))?;
            Ok(byte[0])
        })
        .unwrap();
        (acceptor, address)
    }

    #[test]
    fn a_silent_connection_does_not_hold_up_the_next_one() {
        let (acceptor, address) = byte_acceptor();
        let silent: Vec<TcpStream> = (0..3).map(|_| TcpStream::connect(address).unwrap()).collect();
        let mut talking = TcpStream::connect(address).unwrap();
        talking.write_all(&[7]).unwrap();
        let started = Instant::now();
        let deadline = started + Duration::from_secs(10);
        let mut got = None;
        while got.is_none() && started.elapsed() < Duration::from_secs(2) {
            got = acceptor.next(deadline, Duration::from_millis(5)).unwrap();
        }
        assert_eq!(got, Some(7), "admitted in {:?}", started.elapsed());
        drop(silent);
    }

    #[test]
    fn connections_past_the_handshakes_running_wait_in_the_queue() {
        let (acceptor, address) = byte_acceptor();
        let deadline = Instant::now() + Duration::from_secs(10);
        let silent: Vec<TcpStream> = (0..MAX_HANDSHAKES)
            .map(|_| TcpStream::connect(address).unwrap())
            .collect();
        let started = Instant::now();
        while acceptor.running.load(Ordering::SeqCst) < MAX_HANDSHAKES && started.elapsed() < Duration::from_secs(2) {
            assert!(acceptor.next(deadline, Duration::from_millis(5)).unwrap().is_none());
        }
        // Every slot is taken: the next connection is left queued, not closed, and admitted once one is free.
        let mut late = TcpStream::connect(address).unwrap();
        late.write_all(&[9]).unwrap();
        assert!(acceptor.next(deadline, Duration::from_millis(50)).unwrap().is_none());
        drop(silent);
        let started = Instant::now();
        let mut got = None;
        while got.is_none() && started.elapsed() < Duration::from_secs(2) {
            got = acceptor.next(deadline, Duration::from_millis(5)).unwrap();
        }
        assert_eq!(got, Some(9));
    }
}
