//! Reading and writing on a link within a deadline, and the small framed messages of the control plane.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// The largest control message accepted; anything longer is treated as garbage.
pub(crate) const MAX_MESSAGE: usize = 1 << 30;

/// Time left until `deadline`, at least a millisecond (a zero socket timeout would mean "none").
pub(crate) fn remaining(deadline: Instant) -> io::Result<Duration> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(io::Error::new(io::ErrorKind::TimedOut, "deadline passed"));
    }
    Ok(left.max(Duration::from_millis(1)))
}

/// Fills `buf` from `stream`, failing if it is not full by `deadline`.
pub(crate) fn read_exact_by(stream: &mut TcpStream, buf: &mut [u8], deadline: Instant) -> io::Result<()> {
    let mut filled = 0;
    while filled < buf.len() {
        stream.set_read_timeout(Some(remaining(deadline)?))?;
        match stream.read(&mut buf[filled..]) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Writes all of `buf`, failing if the peer has not taken it by `deadline`.
pub(crate) fn write_all_by(stream: &mut TcpStream, buf: &[u8], deadline: Instant) -> io::Result<()> {
    let mut sent = 0;
    while sent < buf.len() {
        stream.set_write_timeout(Some(remaining(deadline)?))?;
        match stream.write(&buf[sent..]) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => sent += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Writes a length-prefixed message.
pub(crate) fn write_message(stream: &mut TcpStream, payload: &[u8], deadline: Instant) -> io::Result<()> {
    write_all_by(stream, &(payload.len() as u64).to_le_bytes(), deadline)?;
    write_all_by(stream, payload, deadline)
}

/// Reads a length-prefixed message.
pub(crate) fn read_message(stream: &mut TcpStream, deadline: Instant) -> io::Result<Vec<u8>> {
    let mut len = [0u8; 8];
    read_exact_by(stream, &mut len, deadline)?;
    let len = u64::from_le_bytes(len);
    if len > MAX_MESSAGE as u64 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("sent garbage (a message of {len} bytes)"),
        ));
    }
    let mut payload = vec![0u8; len as usize];
    read_exact_by(stream, &mut payload, deadline)?;
    Ok(payload)
}
