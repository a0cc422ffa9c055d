//! Mutual authentication of every connection with the job's secret: each side sends a fresh nonce and how it
//! protects frames, and proves the secret with an HMAC-SHA256 over both; proofs are compared in constant
//! time. No data flows on a connection until both sides have proved the secret, and then every frame is
//! protected under keys derived from the secret and both nonces (see `frames`).

use std::fmt;
use std::io::{Read, Write};
use std::net::TcpStream;

use hmac::{Hmac, Mac};
use sha2::Sha256;

use super::error::{CollectiveError, Result};
use super::frames::{FrameKeys, FrameProtection};
use super::link::Link;

const NONCE: usize = 32;
const TAG: usize = 32;
const DOMAIN: &[u8] = b"hearth collective v2";

/// The per-job secret every rank and the coordinator share, and how the links it keys protect their frames.
///
/// ```
/// use hearth_collective::JobSecret;
/// let secret = JobSecret::generate();
/// assert_eq!(JobSecret::from_hex(&secret.to_hex()).unwrap(), secret);
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct JobSecret {
    key: [u8; 32],
    protection: FrameProtection,
}

impl fmt::Debug for JobSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("JobSecret(…)")
    }
}

impl JobSecret {
    /// A fresh random secret from the operating system's generator.
    pub fn generate() -> Self {
        let mut key = [0u8; 32];
        fill_random(&mut key);
        Self {
            key,
            protection: FrameProtection::default(),
        }
    }

    /// The same secret with frames protected as `protection` says.
    pub fn with_protection(self, protection: FrameProtection) -> Self {
        Self { protection, ..self }
    }

    /// How the links keyed by this secret protect their frames.
    pub fn protection(&self) -> FrameProtection {
        self.protection
    }

    /// The secret as 64 hexadecimal digits, to hand to a task (its protection travels separately).
    pub fn to_hex(&self) -> String {
        self.key.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Parses [`JobSecret::to_hex`]'s output; frames are protected by [`FrameProtection::Encryption`] unless
    /// [`JobSecret::with_protection`] says otherwise.
    pub fn from_hex(hex: &str) -> Option<Self> {
        if hex.len() != 64 {
            return None;
        }
        let mut bytes = [0u8; 32];
        for (i, byte) in bytes.iter_mut().enumerate() {
            *byte = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
        }
        Some(Self {
            key: bytes,
            protection: FrameProtection::default(),
        })
    }

    fn mac(&self, role: &[u8], first: &[u8], second: &[u8]) -> Hmac<Sha256> {
        // An HMAC key of any length is valid.
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.key).unwrap_or_else(|_| unreachable!());
        mac.update(DOMAIN);
        mac.update(role);
        mac.update(&[self.protection.code()]);
        mac.update(first);
        mac.update(second);
        mac
    }
}

pub(super) fn fill_random(bytes: &mut [u8]) {
    // The OS generator is always available on the platforms hearth runs on; fail loudly otherwise rather
    // than authenticate with predictable nonces.
    getrandom::fill(bytes).unwrap_or_else(|e| panic!("the operating system's random generator failed: {e}"));
}

/// The other end of `stream`, named while the connection is up (a reset connection no longer says).
fn peer_name(stream: &TcpStream) -> String {
    stream
        .peer_addr()
        .map_or_else(|_| "an unknown peer".to_string(), |a| a.to_string())
}

fn refused(peer: &str, message: impl Into<String>) -> CollectiveError {
    CollectiveError::Auth {
        addr: peer.to_string(),
        message: message.into(),
    }
}

fn io_refused(peer: &str, error: std::io::Error) -> CollectiveError {
    refused(
        peer,
        format!(
            "the connection broke during the handshake: {}",
            super::error::describe_io(&error)
        ),
    )
}

/// Each side's nonce and how it protects frames, as sent in the handshake.
fn hello(nonce: &[u8; NONCE], protection: FrameProtection) -> [u8; NONCE + 1] {
    let mut hello = [0u8; NONCE + 1];
    hello[..NONCE].copy_from_slice(nonce);
    hello[NONCE] = protection.code();
    hello
}

/// An error unless the peer protects frames as this side does.
fn check_protection(address: &str, secret: &JobSecret, theirs: u8, peer: &str) -> Result<()> {
    let ours = secret.protection.code();
    if theirs == ours {
        return Ok(());
    }
    Err(refused(
        address,
        format!(
            "the {peer} {} and this side {}: both ends of a job must protect frames alike",
            FrameProtection::describe(theirs),
            FrameProtection::describe(ours)
        ),
    ))
}

/// The keys of a link from the secret and both nonces: one for each direction, neither ever sent.
fn frame_keys(secret: &JobSecret, client: bool, server_nonce: &[u8], client_nonce: &[u8]) -> Result<FrameKeys> {
    let key = |role: &[u8]| -> [u8; 32] {
        secret
            .mac(role, server_nonce, client_nonce)
            .finalize()
            .into_bytes()
            .into()
    };
    let (to_server, to_client) = (key(b"frames to the listener"), key(b"frames to the connecting side"));
    let (sending, receiving) = if client {
        (to_server, to_client)
    } else {
        (to_client, to_server)
    };
    FrameKeys::new(secret.protection, sending, receiving).map_err(|e| CollectiveError::Local {
        what: "deriving a link's keys".to_string(),
        source: e,
    })
}

/// The connecting side: answers the listener's nonce, then checks the listener's proof.
pub(crate) fn prove_as_client(mut stream: TcpStream, secret: &JobSecret) -> Result<Link> {
    let peer = peer_name(&stream);
    let mut server_hello = [0u8; NONCE + 1];
    stream.read_exact(&mut server_hello).map_err(|e| io_refused(&peer, e))?;
    check_protection(&peer, secret, server_hello[NONCE], "listener")?;
    let server_nonce = &server_hello[..NONCE];
    let mut client_nonce = [0u8; NONCE];
    fill_random(&mut client_nonce);
    let tag = secret
        .mac(b"client", server_nonce, &client_nonce)
        .finalize()
        .into_bytes();
    let mut message = [0u8; NONCE + 1 + TAG];
    message[..=NONCE].copy_from_slice(&hello(&client_nonce, secret.protection));
    message[NONCE + 1..].copy_from_slice(&tag);
    stream.write_all(&message).map_err(|e| io_refused(&peer, e))?;
    let mut server_tag = [0u8; TAG];
    stream.read_exact(&mut server_tag).map_err(|_| {
        refused(
            &peer,
            "the listener closed the connection: it refused this side's proof of the job secret",
        )
    })?;
    secret
        .mac(b"server", &client_nonce, server_nonce)
        .verify_slice(&server_tag)
        .map_err(|_| refused(&peer, "the listener could not prove the job secret"))?;
    let keys = frame_keys(secret, true, server_nonce, &client_nonce)?;
    Ok(Link::new(stream, keys))
}

/// The listening side: sends a fresh nonce, checks the client's proof, then proves the secret in turn.
pub(crate) fn prove_as_server(mut stream: TcpStream, secret: &JobSecret) -> Result<Link> {
    let peer = peer_name(&stream);
    let mut server_nonce = [0u8; NONCE];
    fill_random(&mut server_nonce);
    stream
        .write_all(&hello(&server_nonce, secret.protection))
        .map_err(|e| io_refused(&peer, e))?;
    let mut message = [0u8; NONCE + 1 + TAG];
    stream.read_exact(&mut message).map_err(|e| io_refused(&peer, e))?;
    check_protection(&peer, secret, message[NONCE], "peer")?;
    let (client_nonce, tag) = (&message[..NONCE], &message[NONCE + 1..]);
    secret
        .mac(b"client", &server_nonce, client_nonce)
        .verify_slice(tag)
        .map_err(|_| refused(&peer, "the peer could not prove the job secret"))?;
    let proof = secret
        .mac(b"server", client_nonce, &server_nonce)
        .finalize()
        .into_bytes();
    stream.write_all(&proof).map_err(|e| io_refused(&peer, e))?;
    let keys = frame_keys(secret, false, &server_nonce, client_nonce)?;
    Ok(Link::new(stream, keys))
}
