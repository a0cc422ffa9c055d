//! A driver program shipped to the executors that run its barrier functions: the coordinator of a stage whose
//! function lives in the driver program offers the program's file by its SHA-256
//! ([`Coordinator::offer_program`](super::Coordinator::offer_program)), and a task whose host lacks the
//! driver's build fetches it over a link that proved the job's secret
//! ([`fetch_program`](super::fetch_program)) — with the job's
//! frames' protection, so encrypted where they are — in messages of [`CHUNK`] bytes.

use std::fs::File;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::error::{CollectiveError, Result, describe_io};
use super::link::Link;

/// The bytes of the program sent in one message.
const CHUNK: usize = 4 << 20;

/// How long a coordinator gives one task to take the whole program.
const SERVING_TIME: Duration = Duration::from_secs(600);

/// The program a coordinator offers: its file and the file's SHA-256 (hex).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct OfferedProgram {
    /// The file.
    pub path: PathBuf,
    /// Its SHA-256, hex.
    pub sha256: String,
}

/// The coordinator's first answer to a request for a program.
#[derive(Debug, Serialize, Deserialize)]
enum Answer {
    /// The program's bytes follow, `size` of them.
    Sending { size: u64 },
    /// No such program here.
    Refused { message: String },
}

/// Sends the program `offered` to the task at the end of `link`, which asked for `wanted`; a failure is
/// logged (the task reports its own).
pub(crate) fn serve(mut link: Link, offered: Option<OfferedProgram>, wanted: &str, coordinator: SocketAddr) {
    let deadline = Instant::now() + SERVING_TIME;
    let sent = match offered.filter(|offered| offered.sha256 == wanted) {
        Some(offered) => send_file(&mut link, &offered, deadline),
        None => {
            let message = format!("the driver offers no program with SHA-256 {wanted}");
            let answer = serde_json::to_vec(&Answer::Refused { message }).unwrap_or_default();
            link.write_message(&answer, deadline).map_err(|e| describe_io(&e))
        }
    };
    if let Err(why) = sent {
        log::warn!("rendezvous at {coordinator}: sending the driver program: {why}");
    }
}

/// Sends the file of `offered`: its size, then its bytes.
fn send_file(link: &mut Link, offered: &OfferedProgram, deadline: Instant) -> std::result::Result<(), String> {
    let reading = |e: std::io::Error| format!("reading {}: {e}", offered.path.display());
    let mut file = File::open(&offered.path).map_err(reading)?;
    let size = file.metadata().map_err(reading)?.len();
    let answer = serde_json::to_vec(&Answer::Sending { size }).map_err(|e| e.to_string())?;
    link.write_message(&answer, deadline).map_err(|e| describe_io(&e))?;
    let mut chunk = vec![0; CHUNK];
    let mut left = size;
    while left > 0 {
        let read = file.read(&mut chunk).map_err(reading)?;
        if read == 0 {
            return Err(format!("{} ended {left} bytes early", offered.path.display()));
        }
        let read = read.min(left as usize);
        link.write_message(&chunk[..read], deadline)
            .map_err(|e| describe_io(&e))?;
        left -= read as u64;
    }
    Ok(())
}

/// The task side, once it asked for a program on `link`: the coordinator's answer, then the program's bytes
/// into `into` by `deadline` — refused unless it is `expected` bytes long; returns its size. The caller checks the bytes' hash.
pub(crate) fn receive(
    link: &mut Link,
    coordinator: SocketAddr,
    expected: u64,
    into: &mut impl Write,
    deadline: Instant,
) -> Result<u64> {
    let failed = |message: String| CollectiveError::rendezvous(coordinator, message);
    let answer = link
        .read_message(deadline)
        .map_err(|e| failed(format!("no answer to the request for the program: {}", describe_io(&e))))?;
    let size = match serde_json::from_slice(&answer) {
        Ok(Answer::Sending { size }) if size == expected => size,
        Ok(Answer::Sending { size }) => {
            return Err(failed(format!(
                "offered a program of {size} bytes, not the plan's {expected}"
            )));
        }
        Ok(Answer::Refused { message }) => return Err(failed(message)),
        Err(e) => {
            return Err(CollectiveError::rendezvous_caused(
                coordinator,
                "sent an unreadable answer",
                e,
            ));
        }
    };
    let mut received = 0;
    while received < size {
        let chunk = link.read_message(deadline).map_err(|e| {
            failed(format!(
                "the program stopped after {received} of {size} bytes: {}",
                describe_io(&e)
            ))
        })?;
        if chunk.is_empty() || received + chunk.len() as u64 > size {
            return Err(failed(format!(
                "sent {} bytes of a {size}-byte program",
                received + chunk.len() as u64
            )));
        }
        into.write_all(&chunk).map_err(|source| CollectiveError::Local {
            what: "writing the driver program fetched".to_string(),
            source,
        })?;
        received += chunk.len() as u64;
    }
    Ok(size)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::{Coordinator, JobSecret, fetch_program};

    #[test]
    fn a_task_fetches_the_offered_program_whole_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let program = dir.path().join("driver");
        // Larger than one message, and not a multiple of it.
        let bytes: Vec<u8> = (0..(9 << 20) + 17).map(|i| (i % 251) as u8).collect();
        let len = bytes.len() as u64;
        std::fs::write(&program, &bytes).unwrap();
        let secret = JobSecret::generate();
        let timeout = Duration::from_secs(30);
        let coordinator = Coordinator::start("127.0.0.1:0".parse().unwrap(), 2, secret.clone(), timeout).unwrap();
        coordinator.offer_program(program, "abc123".into());

        let mut fetched = Vec::new();
        let size = fetch_program(coordinator.address(), &secret, "abc123", len, &mut fetched, timeout).unwrap();
        assert_eq!((size, fetched == bytes), (bytes.len() as u64, true));

        let other = fetch_program(coordinator.address(), &secret, "def456", len, &mut Vec::new(), timeout);
        let message = other.unwrap_err().to_string();
        assert!(message.contains("offers no program with SHA-256 def456"), "{message}");
        let stranger = JobSecret::generate();
        assert!(
            fetch_program(
                coordinator.address(),
                &stranger,
                "abc123",
                len,
                &mut Vec::new(),
                timeout
            )
            .is_err()
        );
        let wrong_size = fetch_program(coordinator.address(), &secret, "abc123", 5, &mut Vec::new(), timeout);
        assert!(wrong_size.unwrap_err().to_string().contains("not the plan's 5"));
    }
}
