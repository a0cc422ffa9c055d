//! Reading and writing on a connection within a deadline.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
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

/// Waits until `readable` has data (or news of its end) or `writable` takes more, whichever of them is given;
/// fails at `deadline`.
pub(crate) fn wait_ready(
    readable: Option<&TcpStream>,
    writable: Option<&TcpStream>,
    deadline: Instant,
) -> io::Result<()> {
    let watch = |stream: &TcpStream, events| libc::pollfd {
        fd: stream.as_raw_fd(),
        events,
        revents: 0,
    };
    let mut watched: Vec<libc::pollfd> = (readable.map(|s| watch(s, libc::POLLIN)).into_iter())
        .chain(writable.map(|s| watch(s, libc::POLLOUT)))
        .collect();
    loop {
        let wait = remaining(deadline)?;
        let millis = wait.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32;
        // SAFETY: `watched` is an array of `watched.len()` initialised `pollfd`s that lives through the call.
        let ready = unsafe { libc::poll(watched.as_mut_ptr(), watched.len() as libc::nfds_t, millis) };
        match ready {
            0 => continue, // `remaining` fails once the deadline has passed
            n if n > 0 => return Ok(()),
            _ => {
                let error = io::Error::last_os_error();
                if error.kind() != io::ErrorKind::Interrupted {
                    return Err(error);
                }
            }
        }
    }
}
