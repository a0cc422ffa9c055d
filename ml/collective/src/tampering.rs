//! A ring of two ranks with a meddling relay on one link: what the ranks do when a frame is altered or an
//! extra frame is slipped in after the handshake, and what the relay sees of the data.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use super::frames::FrameProtection;
use super::rendezvous::{Peer, Registration};
use super::{CollectiveError, Communicator, JobSecret};

/// What the relay does to the bytes going from rank 0 to rank 1, counted from the start of the connection.
#[derive(Clone, Copy)]
enum Meddling {
    None,
    FlipBitAt(usize),
    InsertAt(usize, &'static [u8]),
}

/// Relays one connection to `target`, meddling with the forward direction, and keeps what went forward.
struct Relay {
    address: SocketAddr,
    seen: Arc<Mutex<Vec<u8>>>,
    worker: Option<JoinHandle<()>>,
}

impl Relay {
    fn start(target: SocketAddr, meddling: Meddling) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let kept = seen.clone();
        let worker = std::thread::spawn(move || {
            let (from_rank0, _) = listener.accept().unwrap();
            let to_rank1 = TcpStream::connect(target).unwrap();
            let (back_from, back_to) = (to_rank1.try_clone().unwrap(), from_rank0.try_clone().unwrap());
            let backward = std::thread::spawn(move || pump(back_from, back_to, Meddling::None, None));
            pump(from_rank0, to_rank1, meddling, Some(&kept));
            let _ = backward.join();
        });
        Self {
            address,
            seen,
            worker: Some(worker),
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        if let Some(worker) = self.worker.take() {
            let _ = worker.join();
        }
    }
}

/// Copies `from` to `to` until either closes, applying `meddling` and keeping the bytes in `seen`.
fn pump(mut from: TcpStream, mut to: TcpStream, meddling: Meddling, seen: Option<&Mutex<Vec<u8>>>) {
    let (mut offset, mut buf) = (0usize, vec![0u8; 64 * 1024]);
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let chunk = &mut buf[..n];
        let mut out = Vec::with_capacity(n);
        match meddling {
            Meddling::FlipBitAt(at) if (offset..offset + n).contains(&at) => chunk[at - offset] ^= 0x04,
            _ => {}
        }
        match meddling {
            Meddling::InsertAt(at, extra) if (offset..offset + n).contains(&at) => {
                out.extend_from_slice(&chunk[..at - offset]);
                out.extend_from_slice(extra);
                out.extend_from_slice(&chunk[at - offset..]);
            }
            _ => out.extend_from_slice(chunk),
        }
        if let Some(seen) = seen {
            seen.lock().unwrap().extend_from_slice(&out);
        }
        offset += n;
        if to.write_all(&out).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Both);
    let _ = from.shutdown(Shutdown::Both);
}

fn peer(rank: usize, listen: SocketAddr) -> Peer {
    Peer {
        rank,
        registration: Registration {
            listen,
            host: format!("host-{rank}"),
            devices: vec!["cpu".to_string()],
            position: rank,
            process: None,
        },
    }
}

/// Two ranks allreduce a buffer of `len` values (rank r holds r + 1.5) with the link from rank 0 to rank 1
/// through a relay doing `meddling`; each rank's outcome and what the relay saw.
fn allreduce_through(
    meddling: Meddling,
    protection: FrameProtection,
    len: usize,
) -> (Vec<Result<Vec<f32>, CollectiveError>>, Vec<u8>) {
    let secret = JobSecret::generate().with_protection(protection);
    let listeners = [
        TcpListener::bind("127.0.0.1:0").unwrap(),
        TcpListener::bind("127.0.0.1:0").unwrap(),
    ];
    let relay = Relay::start(listeners[1].local_addr().unwrap(), meddling);
    let peers = vec![peer(0, listeners[0].local_addr().unwrap()), peer(1, relay.address)];
    let outcomes = std::thread::scope(|s| {
        let ranks: Vec<_> = (0..2)
            .map(|rank| {
                let (peers, listener, secret) = (peers.clone(), &listeners[rank], &secret);
                s.spawn(move || {
                    let mut comm = Communicator::link_by_hand(rank, peers, listener, secret)?;
                    let mut values = vec![rank as f32 + 1.5; len];
                    comm.allreduce_sum(&mut values)?;
                    comm.allreduce_sum(&mut values)?;
                    Ok(values)
                })
            })
            .collect();
        ranks.into_iter().map(|r| r.join().unwrap()).collect()
    });
    let seen = relay.seen.lock().unwrap().clone();
    drop(relay);
    (outcomes, seen)
}

/// Bytes rank 0 sends before its first allreduce: its handshake answer (nonce, protection, proof) and its
/// hello (length, rank, tag).
const BEFORE_DATA: usize = 65 + 32;

#[test]
fn an_untouched_link_carries_the_sum() {
    for protection in [FrameProtection::Integrity, FrameProtection::Encryption] {
        let (outcomes, _) = allreduce_through(Meddling::None, protection, 300_000);
        for outcome in outcomes {
            assert_eq!(outcome.unwrap(), vec![8.0; 300_000], "{protection:?}");
        }
    }
}

#[test]
fn a_flipped_bit_ends_both_ranks_naming_the_peer() {
    // Past the handshake, the hello and the operation header: inside the first piece of values.
    let (outcomes, _) = allreduce_through(
        Meddling::FlipBitAt(BEFORE_DATA + 40 + 1000),
        FrameProtection::Integrity,
        300_000,
    );
    let errors: Vec<String> = outcomes.into_iter().map(|o| o.unwrap_err().to_string()).collect();
    println!("rank 0: {}\nrank 1: {}", errors[0], errors[1]);
    assert!(
        errors[1].contains("rank 0") && errors[1].contains("host-0") && errors[1].contains("fails its integrity check"),
        "{}",
        errors[1]
    );
    assert!(
        errors[0].contains("rank 1") && errors[0].contains("host-1"),
        "{}",
        errors[0]
    );
}

#[test]
fn an_injected_frame_ends_both_ranks() {
    for protection in [FrameProtection::Integrity, FrameProtection::Encryption] {
        let injected: &[u8] = &[0u8; 56];
        let (outcomes, _) = allreduce_through(Meddling::InsertAt(BEFORE_DATA, injected), protection, 1000);
        let errors: Vec<String> = outcomes.into_iter().map(|o| o.unwrap_err().to_string()).collect();
        assert!(
            errors[1].contains("fails its integrity check"),
            "{protection:?}: {}",
            errors[1]
        );
        assert!(errors[0].contains("host-1"), "{protection:?}: {}", errors[0]);
    }
}

#[test]
fn encrypted_frames_carry_no_plaintext() {
    let needle = 1.5f32.to_le_bytes().repeat(4);
    let contains = |bytes: &[u8]| bytes.windows(needle.len()).any(|w| w == needle.as_slice());
    let (_, clear) = allreduce_through(Meddling::None, FrameProtection::Integrity, 10_000);
    assert!(
        contains(&clear),
        "the relay should see rank 0's values when frames are only integrity-checked"
    );
    let (outcomes, sealed) = allreduce_through(Meddling::None, FrameProtection::Encryption, 10_000);
    assert!(outcomes.into_iter().all(|o| o.is_ok()));
    assert!(!contains(&sealed), "rank 0's values crossed the relay in clear");
}

#[test]
fn ends_that_protect_frames_differently_are_refused_in_the_handshake() {
    let secret = JobSecret::generate();
    let listeners = [
        TcpListener::bind("127.0.0.1:0").unwrap(),
        TcpListener::bind("127.0.0.1:0").unwrap(),
    ];
    let peers = vec![
        peer(0, listeners[0].local_addr().unwrap()),
        peer(1, listeners[1].local_addr().unwrap()),
    ];
    let outcomes: Vec<Result<Communicator, CollectiveError>> = std::thread::scope(|s| {
        let ranks: Vec<_> = (0..2)
            .map(|rank| {
                let protection = [FrameProtection::Integrity, FrameProtection::Encryption][rank];
                let secret = secret.clone().with_protection(protection);
                let (peers, listener) = (peers.clone(), &listeners[rank]);
                s.spawn(move || Communicator::link_by_hand(rank, peers, listener, &secret))
            })
            .collect();
        ranks.into_iter().map(|r| r.join().unwrap()).collect()
    });
    let errors: Vec<String> = outcomes
        .into_iter()
        .filter_map(Result::err)
        .map(|e| e.to_string())
        .collect();
    assert!(
        errors
            .iter()
            .any(|e| e.contains("encrypts its frames and this side checks the integrity of its frames")),
        "{errors:?}"
    );
}

#[test]
fn garbage_after_the_handshake_is_refused_without_a_panic() {
    use super::auth::{prove_as_client, prove_as_server};
    use std::time::{Duration, Instant};
    let secret = JobSecret::generate();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    let mut tried = 0;
    for round in 0..300usize {
        let mut garbage = vec![0u8; round % 97];
        getrandom::fill(&mut garbage).unwrap();
        if round % 3 == 0 && garbage.len() >= 8 {
            // A length that claims more than is sent: memory must follow the bytes that arrive.
            garbage[..8].copy_from_slice(&(512u64 << 20).to_le_bytes());
        }
        let secret = &secret;
        let outcome = std::thread::scope(|s| {
            let client = s.spawn(move || {
                let stream = TcpStream::connect(address).unwrap();
                let link = prove_as_client(stream, secret).unwrap();
                let mut raw = link.stream().try_clone().unwrap();
                let _ = raw.write_all(&garbage);
                let _ = raw.shutdown(Shutdown::Write);
                link
            });
            let (stream, _) = listener.accept().unwrap();
            let mut link = prove_as_server(stream, secret).unwrap();
            let outcome = link.read_message(Instant::now() + Duration::from_secs(10));
            drop(client.join().unwrap());
            outcome
        });
        assert!(outcome.is_err(), "garbage of round {round} was read as a message");
        tried += 1;
    }
    println!("fuzz collective frames (garbage after the handshake): {tried} inputs tried, 0 panics");
}
