//! A connection whose handshake has succeeded, and the length-prefixed messages of the control plane on it,
//! each one a protected frame.

use std::io;
use std::net::TcpStream;
use std::time::Instant;

use super::frames::{FrameKeys, Opener, Sealer, TAG_LEN};
use super::wire::{MAX_MESSAGE, read_exact_by, write_all_by};

/// Bytes of the length ahead of a message.
const LENGTH: usize = 8;

/// The most a message's buffer grows by before the bytes to fill it have arrived.
const READ_CHUNK: usize = 1 << 20;

/// An authenticated connection: the stream and the keys that protect the frames on it.
pub(crate) struct Link {
    stream: TcpStream,
    /// Boxed: a cipher's key schedule is large, and links sit in enums and structs that move.
    keys: Box<FrameKeys>,
}

impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Link")
            .field("stream", &self.stream)
            .finish_non_exhaustive()
    }
}

impl Link {
    pub(crate) fn new(stream: TcpStream, keys: FrameKeys) -> Self {
        Self {
            stream,
            keys: Box::new(keys),
        }
    }

    /// The connection.
    pub(crate) fn stream(&self) -> &TcpStream {
        &self.stream
    }

    /// The connection with the sealing and opening halves of its keys, for a transfer that drives it directly.
    pub(crate) fn parts(&mut self) -> (&TcpStream, &mut Sealer, &mut Opener) {
        (&self.stream, &mut self.keys.seal, &mut self.keys.open)
    }

    /// Sends `payload` as one frame: its length (authenticated, in clear), the payload, the tag.
    pub(crate) fn write_message(&mut self, payload: &[u8], deadline: Instant) -> io::Result<()> {
        let mut frame = Vec::with_capacity(LENGTH + payload.len() + TAG_LEN);
        frame.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        frame.extend_from_slice(payload);
        let tag = self.keys.seal.seal(&mut frame, LENGTH)?;
        frame.extend_from_slice(&tag);
        write_all_by(&mut self.stream, &frame, deadline)
    }

    /// Reads the next message; an error if it is longer than any message sent, or fails to open. Memory follows
    /// the bytes that arrive, not the length a frame claims.
    pub(crate) fn read_message(&mut self, deadline: Instant) -> io::Result<Vec<u8>> {
        let mut frame = vec![0u8; LENGTH];
        read_exact_by(&mut self.stream, &mut frame, deadline)?;
        let len = u64::from_le_bytes(frame[..LENGTH].try_into().map_err(|_| io::ErrorKind::InvalidData)?);
        if len > MAX_MESSAGE as u64 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("sent garbage (a message of {len} bytes)"),
            ));
        }
        let end = LENGTH + len as usize;
        while frame.len() < end {
            let start = frame.len();
            frame.resize((start + READ_CHUNK).min(end), 0);
            read_exact_by(&mut self.stream, &mut frame[start..], deadline)?;
        }
        let mut tag = [0u8; TAG_LEN];
        read_exact_by(&mut self.stream, &mut tag, deadline)?;
        self.keys.open.open(&mut frame, LENGTH, &tag)?;
        frame.drain(..LENGTH);
        Ok(frame)
    }
}
