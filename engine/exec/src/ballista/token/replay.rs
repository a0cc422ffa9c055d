//! A server's memory of the expiring tokens it admitted, so that each admits one connection: a copy of a
//! token — out of a file, a command line, a proxy's log — presented on any other connection is refused, for
//! as long as the token would otherwise be admitted. Entries are forgotten once their token has expired, so
//! the memory holds at most the tokens made in the last [`MAX_VALID_FOR`](super::MAX_VALID_FOR) that proved
//! the secret.
//!
//! ```
//! use hearth_exec::ballista::{ReplayMemory, SingleUse, TokenRefusal};
//!
//! let memory = ReplayMemory::default();
//! let once = SingleUse { nonce: "5f1c…".to_string(), until: u64::MAX };
//! assert!(memory.admit(&once, 1).is_ok());
//! assert!(memory.admit(&once, 1).is_ok(), "its own connection's next request");
//! assert_eq!(memory.admit(&once, 2), Err(TokenRefusal::Replayed));
//! ```

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::SystemTime;

use super::{SingleUse, TokenRefusal, unix_seconds};

/// The fewest entries before the memory looks for expired ones to forget.
const FIRST_SWEEP: usize = 1024;

/// The nonces of admitted tokens, each with the connection it admitted and until when.
#[derive(Debug, Default)]
pub struct ReplayMemory {
    admitted: Mutex<Admitted>,
}

#[derive(Debug, Default)]
struct Admitted {
    /// Nonce → (the connection it admitted, until when it would be admitted, in seconds since 1970).
    by_nonce: HashMap<String, (u64, u64)>,
    /// How many entries make the next sweep.
    sweep_at: usize,
}

impl ReplayMemory {
    /// Admits `once` (a token's nonce and until when it is admitted, [`Admitted::once`](super::Admitted)) on
    /// connection `connection` (a number the server gives each of its connections): the first connection to
    /// present it keeps it; any other is refused.
    pub fn admit(&self, once: &SingleUse, connection: u64) -> Result<(), TokenRefusal> {
        let SingleUse { nonce, until } = once;
        let mut admitted = self.admitted.lock().unwrap_or_else(PoisonError::into_inner);
        if admitted.by_nonce.len() >= admitted.sweep_at {
            admitted.forget_expired(unix_seconds(SystemTime::now()));
        }
        match admitted.by_nonce.entry(nonce.clone()).or_insert((connection, *until)) {
            (first, _) if *first == connection => Ok(()),
            _ => Err(TokenRefusal::Replayed),
        }
    }
}

impl Admitted {
    /// Forgets the tokens no longer admitted at `now`; the next sweep comes when the memory has doubled.
    fn forget_expired(&mut self, now: u64) {
        self.by_nonce.retain(|_, (_, until)| *until >= now);
        self.sweep_at = (2 * self.by_nonce.len()).max(FIRST_SWEEP);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expired_tokens_are_forgotten_as_the_memory_grows() {
        let memory = ReplayMemory::default();
        let now = unix_seconds(SystemTime::now());
        for n in 0..FIRST_SWEEP as u64 {
            let old = SingleUse {
                nonce: format!("old{n}"),
                until: now - 1,
            };
            memory.admit(&old, n).unwrap();
        }
        let live = SingleUse {
            nonce: "live".to_string(),
            until: now + 60,
        };
        memory.admit(&live, 0).unwrap();
        let admitted = memory.admitted.lock().unwrap();
        assert_eq!(admitted.by_nonce.len(), 1, "the expired went at the sweep");
        assert_eq!(admitted.sweep_at, FIRST_SWEEP);
    }
}
