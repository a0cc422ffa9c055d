//! Mutual authentication of every connection with the job's secret: each side sends a fresh nonce and proves
//! the secret with an HMAC-SHA256 over both nonces; proofs are compared in constant time. No data flows on
//! a connection until both sides have proved the secret.

use std::fmt;
use std::io::{Read, Write};
use std::net::TcpStream;

use hmac::{Hmac, Mac};
use sha2::Sha256;

use super::error::{CollectiveError, Result};

const NONCE: usize = 32;
const TAG: usize = 32;
const DOMAIN: &[u8] = b"hearth collective v1";

/// The per-job secret every rank and the coordinator share.
///
/// ```
/// use hearth_ml::collective::JobSecret;
/// let secret = JobSecret::generate();
/// assert_eq!(JobSecret::from_hex(&secret.to_hex()).unwrap(), secret);
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct JobSecret([u8; 32]);

impl fmt::Debug for JobSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("JobSecret(…)")
    }
}

impl JobSecret {
    /// A fresh random secret from the operating system's generator.
    pub fn generate() -> Self {
        let mut bytes = [0u8; 32];
        fill_random(&mut bytes);
        Self(bytes)
    }

    /// The secret as 64 hexadecimal digits, to hand to a task.
    pub fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Parses [`JobSecret::to_hex`]'s output.
    pub fn from_hex(hex: &str) -> Option<Self> {
        if hex.len() != 64 {
            return None;
        }
        let mut bytes = [0u8; 32];
        for (i, byte) in bytes.iter_mut().enumerate() {
            *byte = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
        }
        Some(Self(bytes))
    }

    fn mac(&self, role: &[u8], first: &[u8], second: &[u8]) -> Hmac<Sha256> {
        // An HMAC key of any length is valid.
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.0).unwrap_or_else(|_| unreachable!());
        mac.update(DOMAIN);
        mac.update(role);
        mac.update(first);
        mac.update(second);
        mac
    }
}

fn fill_random(bytes: &mut [u8]) {
    // The OS generator is always available on the platforms hearth runs on; fail loudly otherwise rather
    // than authenticate with predictable nonces.
    getrandom::fill(bytes).unwrap_or_else(|e| panic!("the operating system's random generator failed: {e}"));
}

fn refused(stream: &TcpStream, message: impl Into<String>) -> CollectiveError {
    CollectiveError::Auth {
        addr: stream
            .peer_addr()
            .map_or_else(|_| "an unknown peer".to_string(), |a| a.to_string()),
        message: message.into(),
    }
}

fn io_refused(stream: &TcpStream, error: std::io::Error) -> CollectiveError {
    refused(stream, format!("handshake I/O: {}", super::error::describe_io(&error)))
}

/// The connecting side: answers the listener's nonce, then checks the listener's proof.
pub(crate) fn prove_as_client(stream: &mut TcpStream, secret: &JobSecret) -> Result<()> {
    let mut server_nonce = [0u8; NONCE];
    stream
        .read_exact(&mut server_nonce)
        .map_err(|e| io_refused(stream, e))?;
    let mut client_nonce = [0u8; NONCE];
    fill_random(&mut client_nonce);
    let tag = secret
        .mac(b"client", &server_nonce, &client_nonce)
        .finalize()
        .into_bytes();
    let mut message = [0u8; NONCE + TAG];
    message[..NONCE].copy_from_slice(&client_nonce);
    message[NONCE..].copy_from_slice(&tag);
    stream.write_all(&message).map_err(|e| io_refused(stream, e))?;
    let mut server_tag = [0u8; TAG];
    stream.read_exact(&mut server_tag).map_err(|_| {
        refused(
            stream,
            "the listener closed the connection: it refused this side's proof of the job secret",
        )
    })?;
    secret
        .mac(b"server", &client_nonce, &server_nonce)
        .verify_slice(&server_tag)
        .map_err(|_| refused(stream, "the listener could not prove the job secret"))
}

/// The listening side: sends a fresh nonce, checks the client's proof, then proves the secret in turn.
pub(crate) fn prove_as_server(stream: &mut TcpStream, secret: &JobSecret) -> Result<()> {
    let mut server_nonce = [0u8; NONCE];
    fill_random(&mut server_nonce);
    stream.write_all(&server_nonce).map_err(|e| io_refused(stream, e))?;
    let mut message = [0u8; NONCE + TAG];
    stream.read_exact(&mut message).map_err(|e| io_refused(stream, e))?;
    let (client_nonce, tag) = message.split_at(NONCE);
    secret
        .mac(b"client", &server_nonce, client_nonce)
        .verify_slice(tag)
        .map_err(|_| refused(stream, "the peer could not prove the job secret"))?;
    let proof = secret
        .mac(b"server", client_nonce, &server_nonce)
        .finalize()
        .into_bytes();
    stream.write_all(&proof).map_err(|e| io_refused(stream, e))
}
