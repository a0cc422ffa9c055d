//! Scratch directories that outlive no process. Each is named with the kind of rows it holds and the id of the
//! process that made it (`hearth-scratch-cache-4242-Ab3xYz` in the temporary directory), is made mode 700 (its
//! rows are its user's alone) and is removed when its owner drops it; a process that was killed drops nothing,
//! so the first scratch directory a hearth process makes in a folder sweeps that folder of the ones whose
//! process has ended — its user's only, whatever their kind. An input cache or a spilled partition of a killed
//! job so stays on the disk until the next job starts, not for good.
//!
//! ```
//! let parent = tempfile::tempdir().unwrap();
//! let dir = hearth_common::scratch::scratch_dir_in("cache", parent.path()).unwrap();
//! let name = dir.path().file_name().unwrap().to_string_lossy().into_owned();
//! assert!(name.starts_with(&format!("hearth-scratch-cache-{}-", std::process::id())));
//! ```

use std::collections::HashSet;
use std::fs::Permissions;
use std::io;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use nix::errno::Errno;
use nix::sys::signal::kill;
use nix::unistd::{Pid, geteuid};
use tempfile::TempDir;

/// What every scratch directory's name starts with.
const PREFIX: &str = "hearth-scratch-";

/// How many random letters and digits end a scratch directory's name.
const RANDOM_CHARS: usize = 6;

/// A scratch directory's mode: its rows are its user's alone.
const OWNER_ONLY: u32 = 0o700;

/// The folders this process has swept.
static SWEPT: Mutex<Option<HashSet<PathBuf>>> = Mutex::new(None);

/// A new scratch directory for rows of `kind` (a word: `cache`, `barrier`) in the temporary directory, removed
/// when dropped; the first in this process sweeps what ended processes left there.
pub fn scratch_dir(kind: &str) -> io::Result<TempDir> {
    scratch_dir_in(kind, &std::env::temp_dir())
}

/// A new scratch directory for rows of `kind` in `parent` (see [`scratch_dir`]).
pub fn scratch_dir_in(kind: &str, parent: &Path) -> io::Result<TempDir> {
    let first = SWEPT
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get_or_insert_with(HashSet::new)
        .insert(parent.to_path_buf());
    if first {
        sweep_abandoned(parent);
    }
    tempfile::Builder::new()
        .prefix(&format!("{PREFIX}{kind}-{}-", std::process::id()))
        .rand_bytes(RANDOM_CHARS)
        .permissions(Permissions::from_mode(OWNER_ONLY))
        .tempdir_in(parent)
}

/// Removes the scratch directories in `parent` that this user's ended processes left; returns how many.
pub fn sweep_abandoned(parent: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return 0;
    };
    let me = geteuid().as_raw();
    let mut removed = 0;
    for entry in entries.flatten() {
        let path = entry.path();
        let abandoned = maker(&entry.file_name().to_string_lossy()).is_some_and(|pid| !is_running(pid))
            && std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir() && m.uid() == me);
        if abandoned {
            match std::fs::remove_dir_all(&path) {
                Ok(()) => removed += 1,
                Err(e) => log::warn!("cannot remove {}, left by a process that ended: {e}", path.display()),
            }
        }
    }
    if removed > 0 {
        log::info!(
            "removed {removed} scratch directories in {} left by processes that ended",
            parent.display()
        );
    }
    removed
}

/// The id of the process a scratch directory's `name` says made it (`hearth-scratch-KIND-PID-RANDOM`, RANDOM
/// being tempfile's six letters and digits).
fn maker(name: &str) -> Option<i32> {
    let mut parts = name.strip_prefix(PREFIX)?.splitn(3, '-');
    let (kind, pid, random) = (parts.next()?, parts.next()?, parts.next()?);
    let word = |text: &str| !text.is_empty() && text.bytes().all(|b| b.is_ascii_alphanumeric());
    (word(kind) && word(random) && random.len() == RANDOM_CHARS)
        .then(|| pid.parse().ok())
        .flatten()
}

/// Whether process `pid` runs (as any user: a process of another user that signals refuse is running).
fn is_running(pid: i32) -> bool {
    pid == std::process::id() as i32 || !matches!(kill(Pid::from_raw(pid), None), Err(Errno::ESRCH))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The id of a process that has ended.
    fn ended_pid() -> i32 {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        child.wait().unwrap();
        child.id() as i32
    }

    #[test]
    fn only_the_scratch_directories_of_ended_processes_are_swept() {
        let parent = tempfile::tempdir().unwrap();
        let make = |name: &str| {
            std::fs::create_dir(parent.path().join(name)).unwrap();
            std::fs::write(parent.path().join(name).join("rows.arrow"), b"rows").unwrap();
        };
        let ended = ended_pid();
        make(&format!("hearth-scratch-cache-{ended}-Ab3xYz"));
        make(&format!("hearth-scratch-barrier-{ended}-Qw9rT2"));
        make(&format!("hearth-scratch-cache-{}-Mine00", std::process::id()));
        make(&format!("hearth-scratch-cache-{ended}-backup-2024"));
        make("hearth-scratch-cache-notapid-Ab3xYz");
        make(&format!("hearth-cache-{ended}-Ab3xYz"));
        make("someone-else");
        assert_eq!(sweep_abandoned(parent.path()), 2);
        let mut left: Vec<String> = std::fs::read_dir(parent.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        let mut kept = vec![
            format!("hearth-cache-{ended}-Ab3xYz"),
            format!("hearth-scratch-cache-{}-Mine00", std::process::id()),
            format!("hearth-scratch-cache-{ended}-backup-2024"),
            "hearth-scratch-cache-notapid-Ab3xYz".to_string(),
            "someone-else".to_string(),
        ];
        kept.sort();
        assert_eq!(left, kept);
    }

    #[test]
    fn a_scratch_directory_is_named_by_its_kind_and_process_private_and_goes_when_dropped() {
        let parent = tempfile::tempdir().unwrap();
        let dir = scratch_dir_in("barrier", parent.path()).unwrap();
        let name = dir.path().file_name().unwrap().to_string_lossy().into_owned();
        assert_eq!(maker(&name), Some(std::process::id() as i32));
        let mode = std::fs::metadata(dir.path()).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, OWNER_ONLY, "other users read none of its rows");
        let path = dir.path().to_path_buf();
        drop(dir);
        assert!(!path.exists());
    }
}
