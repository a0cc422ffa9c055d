//! Names that this process never repeats and other processes do not meet: for a write's files, a model's
//! version, a job's run.

use std::sync::atomic::{AtomicU64, Ordering};

/// A name no other call of this process returns, and another process is all but sure not to: the time in
/// nanoseconds, this process's id and its count of calls (a clock coarser than a nanosecond may repeat a
/// time), in lowercase hex.
///
/// ```
/// let (a, b) = (hearth_common::ids::unique_id(), hearth_common::ids::unique_id());
/// assert_ne!(a, b);
/// assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
/// ```
pub fn unique_id() -> String {
    static CALLS: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let count = CALLS.fetch_add(1, Ordering::Relaxed);
    format!("{nanos:x}{:05x}{count:x}", std::process::id())
}
