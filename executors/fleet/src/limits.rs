//! The process limits a server of the fleet raises at start: open descriptors. Many systems give a process a
//! soft limit of 1,024 descriptors; a scheduler serving executors, clients and training ranks, with some
//! connections held open by peers that never authenticate, would run out long before its hard limit.

use nix::sys::resource::{Resource, getrlimit, setrlimit};

/// Raises the soft limit of open descriptors to the hard limit, and returns the limit in effect (the soft
/// one, unchanged, when it cannot be raised).
///
/// ```
/// let limit = hearth_fleet::raise_open_files_limit();
/// assert!(limit >= 64);
/// ```
pub fn raise_open_files_limit() -> u64 {
    let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) else {
        return 0;
    };
    if soft >= hard || setrlimit(Resource::RLIMIT_NOFILE, hard, hard).is_err() {
        return soft;
    }
    log::info!("open descriptors: the soft limit raised from {soft} to {hard}");
    hard
}
