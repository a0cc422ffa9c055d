//! The header each operation starts with — its kind, sequence number and length — which both neighbours check,
//! so ranks that disagree about what they are doing fail instead of mixing data.

use std::io;
use std::time::Instant;

use crate::link::Link;
use crate::transfer::HEADER_LEN;

/// What an operation is, as written in its header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Op {
    Allreduce = 1,
    Broadcast = 2,
    Allgather = 3,
}

impl Op {
    pub(super) fn name(code: u64) -> &'static str {
        match code {
            1 => "allreduce",
            2 => "broadcast",
            3 => "allgather",
            _ => "an unknown operation",
        }
    }
}

/// An operation's header: its kind, sequence number and length. Each rank sends its own to the right and
/// reads the left neighbour's; a neighbour doing something else is garbage.
pub(super) struct Header(pub(super) [u8; HEADER_LEN]);

impl Header {
    pub(super) fn new(op: Op, sequence: u64, len: usize) -> Self {
        let mut header = [0u8; HEADER_LEN];
        header[..8].copy_from_slice(&(op as u64).to_le_bytes());
        header[8..16].copy_from_slice(&sequence.to_le_bytes());
        header[16..].copy_from_slice(&(len as u64).to_le_bytes());
        Self(header)
    }

    /// Reads the neighbour's header from `link`: an error unless it is this one.
    pub(super) fn read_from(&self, link: &mut Link, name: &str, deadline: Instant) -> io::Result<()> {
        let message = link.read_message(deadline)?;
        let theirs: [u8; HEADER_LEN] = message.as_slice().try_into().map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("sent garbage: a header of {} bytes", message.len()),
            )
        })?;
        self.check(&theirs, name)
    }

    /// An error unless `theirs` is this header.
    pub(super) fn check(&self, theirs: &[u8; HEADER_LEN], name: &str) -> io::Result<()> {
        if *theirs == self.0 {
            return Ok(());
        }
        let word = |bytes: &[u8; HEADER_LEN], i: usize| {
            u64::from_le_bytes(bytes[i * 8..i * 8 + 8].try_into().unwrap_or_default())
        };
        Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "sent garbage: expected {name} of {} values, got {} #{} of {} values",
                word(&self.0, 2),
                Op::name(word(theirs, 0)),
                word(theirs, 1),
                word(theirs, 2)
            ),
        ))
    }
}
