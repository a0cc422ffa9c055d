//! Forming the ring: each rank accepts its left neighbour's link while connecting to its right one, both
//! authenticated with the job's secret; when every rank registered from this process, each link then hands
//! over a mailbox and closes.

use std::io;
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use crate::acceptor::{Acceptor, HANDSHAKE_TIME, Refused};
use crate::auth::{JobSecret, prove_as_client, prove_as_server};
use crate::error::{CollectiveError, Result, describe_io};
use crate::link::Link;
use crate::memory::{self, MemoryLink, MemoryLinks};
use crate::rendezvous::Peer;

/// A rank's links to its neighbours.
#[derive(Debug)]
pub(super) enum Links {
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

/// A rank's place in the ring: its rank and the peer table, which say who its neighbours are and name them.
#[derive(Clone, Copy)]
pub(super) struct Place<'a> {
    /// This rank.
    pub(super) rank: usize,
    /// Every rank's registration, by rank.
    pub(super) peers: &'a [Peer],
}

impl Place<'_> {
    /// The number of ranks.
    pub(super) fn world_size(self) -> usize {
        self.peers.len()
    }

    /// The rank this one receives from.
    pub(super) fn left_rank(self) -> usize {
        (self.rank + self.world_size() - 1) % self.world_size()
    }

    /// The rank this one sends to.
    pub(super) fn right_rank(self) -> usize {
        (self.rank + 1) % self.world_size()
    }

    /// The host `rank` registered from.
    pub(super) fn host(self, rank: usize) -> String {
        self.peers
            .get(rank)
            .map_or_else(|| "unknown host".to_string(), |p| p.registration.host.clone())
    }

    /// `op` failed with `peer`, for `cause`: an error naming both ranks and the peer's host.
    pub(super) fn peer_error(self, op: &str, peer: usize, cause: String) -> CollectiveError {
        CollectiveError::Peer {
            op: op.to_string(),
            rank: self.rank,
            peer,
            host: self.host(peer),
            cause,
        }
    }

    /// Whether every rank registered from this very process (and agreed to share memory).
    fn shares_process(self) -> bool {
        let this = memory::process_id();
        self.peers
            .iter()
            .all(|peer| peer.registration.process.as_deref() == Some(this))
    }
}

/// Opens the ring's links of the rank at `place`: accepts the left neighbour's on `listener` while connecting
/// to the right one, within `timeout`. When every rank registered from this process, each link then hands over
/// a mailbox and closes.
pub(super) fn link_ring(
    place: Place<'_>,
    listener: &TcpListener,
    secret: &JobSecret,
    timeout: Duration,
) -> Result<Links> {
    if place.world_size() == 1 {
        return Ok(Links::Solo);
    }
    let in_memory = place.shares_process();
    let deadline = Instant::now() + timeout;
    let (left, right) = std::thread::scope(|s| {
        let accepting = s.spawn(|| accept_left(place, listener, secret, in_memory, deadline));
        let right = connect_right(place, secret, in_memory, deadline);
        let left = accepting.join().unwrap_or_else(|_| {
            Err(CollectiveError::Local {
                what: "accepting the left link".to_string(),
                source: io::Error::other("the accepting thread panicked"),
            })
        });
        (left, right)
    });
    // The connecting side's error says more (e.g. why a handshake failed) than "never connected".
    match (left, right?) {
        (Ok(Linked::Tcp(left)), Linked::Tcp(right)) => Ok(Links::Tcp { left, right }),
        (Ok(Linked::Memory(left)), Linked::Memory(right)) => Ok(Links::Memory(MemoryLinks { left, right })),
        (Err(e), _) => Err(e),
        _ => unreachable!("both links are set up the same way, from the same peer table"),
    }
}

/// Connects to the right neighbour and proves the secret; hands over a mailbox when `in_memory`.
fn connect_right(place: Place<'_>, secret: &JobSecret, in_memory: bool, deadline: Instant) -> Result<Linked> {
    let right = place.right_rank();
    let address = place.peers[right].registration.listen;
    let fail = |cause: String| place.peer_error("connecting the ring", right, cause);
    let stream = loop {
        match TcpStream::connect_timeout(&address, Duration::from_secs(1)) {
            Ok(stream) => break stream,
            Err(e) if Instant::now() < deadline => {
                log::debug!("rank {}: connecting to {address}: {e}; retrying", place.rank);
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
    let mut hello = (place.rank as u64).to_le_bytes().to_vec();
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

/// Accepts the left neighbour's link on `listener`, refusing whatever cannot prove the secret or says it is
/// another rank (connections that never prove it do not hold the neighbour up: [`Acceptor`]); takes over its
/// mailbox when `in_memory`.
fn accept_left(
    place: Place<'_>,
    listener: &TcpListener,
    secret: &JobSecret,
    in_memory: bool,
    deadline: Instant,
) -> Result<Linked> {
    let left = place.left_rank();
    let polling = |source| CollectiveError::Local {
        what: "polling the collective listener".to_string(),
        source,
    };
    let secret = secret.clone();
    let acceptor = Acceptor::new(
        listener.try_clone().map_err(polling)?,
        format!("rank {}", place.rank),
        move |stream, _, handshake| {
            let mut link = prove_as_server(stream, &secret)?;
            let hello = link
                .read_message(handshake)
                .map_err(|e| Refused::reading("which rank it is", &e))?;
            let said = hello
                .get(..8)
                .and_then(|b| b.try_into().ok())
                .map_or(u64::MAX, u64::from_le_bytes);
            if said != left as u64 {
                return Err(Refused::said(format!(
                    "it says it is rank {said}, expected rank {left}"
                )));
            }
            Ok((link, hello))
        },
    )
    .map_err(polling)?;
    loop {
        if Instant::now() >= deadline {
            return Err(place.peer_error("connecting the ring", left, "never connected".to_string()));
        }
        let admitted = acceptor
            .next(deadline, Duration::from_millis(5))
            .map_err(|source| CollectiveError::Local {
                what: "accepting a ring link".to_string(),
                source,
            })?;
        let Some((mut link, hello)) = admitted else {
            continue;
        };
        let handshake = deadline.min(Instant::now() + HANDSHAKE_TIME);
        if !in_memory {
            return Ok(Linked::Tcp(link));
        }
        let mailbox = memory::take(&hello[8..]);
        let _ = link.write_message(&[u8::from(mailbox.is_some())], handshake);
        return mailbox.map(Linked::Memory).ok_or_else(|| {
            place.peer_error(
                "connecting the ring",
                left,
                "registered from this process but is not in it".to_string(),
            )
        });
    }
}
