//! Adding files to a directory readers may be reading, in one step, as Spark's append mode promises and its
//! file-by-file renames do not quite keep: the new files are written into a hidden sibling
//! ([`StagingDir`]), which then receives a hard link to each file the destination holds (a copy where the file
//! system has no links) and takes the destination's place as a replacing save does
//! ([`move_into_place`]). A reader lists the old files or all of them, never some of the new; a writer
//! killed at any point leaves the destination as it was (what it left beside it is swept by the next write).
//! Appends to one destination take turns — an exclusive lock on the destination directory itself, checked to
//! still be the destination once held — so none drops the files of another.
//!
//! ```
//! use hearth_common::appending::append_whole;
//! use hearth_common::files::{StagingDir, parent_of};
//!
//! let dest = std::env::temp_dir().join(format!("hearth-doc-append-{}", std::process::id()));
//! std::fs::create_dir_all(&dest).unwrap();
//! std::fs::write(dest.join("part-0.csv"), "a\n1\n").unwrap();
//! let staged = StagingDir::new(&parent_of(&dest), &dest).unwrap();
//! std::fs::write(staged.path().join("part-1.csv"), "a\n2\n").unwrap();
//! append_whole(&staged, &dest, &[]).unwrap();
//! let mut names: Vec<String> =
//!     std::fs::read_dir(&dest).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
//! names.sort();
//! assert_eq!(names, ["part-0.csv", "part-1.csv"]);
//! # std::fs::remove_dir_all(&dest).unwrap();
//! ```

use std::fs::{self, File};
use std::io;
use std::path::Path;

use crate::files::{StagingDir, WholeDirError, move_into_place, parent_of, sibling, sync_tree};

/// How many times an appender looks again for the destination when another append replaced it while it
/// waited for its turn.
const TURN_ATTEMPTS: usize = 64;

/// Adds the files in `staged` to the existing directory `dest` in one step (see the [module](self) docs).
/// A name both hold is an error naming it, except the names in `staged_replaces` (a `_SUCCESS` marker),
/// whose staged file is kept.
pub fn append_whole(staged: &StagingDir, dest: &Path, staged_replaces: &[&str]) -> Result<(), WholeDirError> {
    let _turn = Turn::take(dest)?;
    link_tree(dest, staged.path(), staged_replaces).map_err(|e| match e.kind() {
        io::ErrorKind::AlreadyExists => WholeDirError::new(dest, e.to_string()),
        _ => WholeDirError::new(dest, "linking its files beside the new ones").caused_by(e),
    })?;
    sync_tree(staged.path()).map_err(|e| WholeDirError::new(dest, "syncing the new files").caused_by(e))?;
    let aside = sibling(&parent_of(dest), dest, "replaced");
    move_into_place(staged.path(), dest, Some(&aside))
        .map_err(|e| WholeDirError::new(dest, "moving the files into place").caused_by(e))
}

/// Links each file under `from` to the same place under `to`, making directories `to` lacks; a file `to`
/// already has is an `AlreadyExists` error naming it, unless its name is in `to_keeps`.
fn link_tree(from: &Path, to: &Path, to_keeps: &[&str]) -> io::Result<()> {
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        let (source, target) = (entry.path(), to.join(entry.file_name()));
        if entry.file_type()?.is_dir() {
            if !target.is_dir() {
                fs::create_dir(&target)?;
            }
            link_tree(&source, &target, to_keeps)?;
            continue;
        }
        if fs::symlink_metadata(&target).is_ok() {
            if to_keeps.iter().any(|name| entry.file_name() == *name) {
                continue;
            }
            let message = format!("already holds a file named {}", entry.file_name().to_string_lossy());
            return Err(io::Error::new(io::ErrorKind::AlreadyExists, message));
        }
        if fs::hard_link(&source, &target).is_err() {
            fs::copy(&source, &target)?;
        }
    }
    Ok(())
}

/// An append's exclusive turn at one destination: a lock on the directory itself, released when dropped.
struct Turn {
    #[cfg(unix)]
    _locked: nix::fcntl::Flock<File>,
}

impl Turn {
    /// Waits for the turn at `dest`. A lock taken on a directory that another append has meanwhile replaced
    /// is let go and taken again on the new one.
    #[cfg(unix)]
    fn take(dest: &Path) -> Result<Self, WholeDirError> {
        use std::os::unix::fs::MetadataExt;

        use nix::fcntl::{Flock, FlockArg};
        let failed = |message: &str| {
            let message = message.to_string();
            move |e: io::Error| WholeDirError::new(dest, message).caused_by(e)
        };
        for _ in 0..TURN_ATTEMPTS {
            let directory = File::open(dest).map_err(failed("opening it to append"))?;
            let locked = Flock::lock(directory, FlockArg::LockExclusive)
                .map_err(|(_, errno)| failed("waiting for another append to it")(errno.into()))?;
            let held = locked.metadata().map_err(failed("reading it"))?;
            let now = fs::metadata(dest).map_err(failed("reading it"))?;
            if (held.dev(), held.ino()) == (now.dev(), now.ino()) {
                return Ok(Self { _locked: locked });
            }
        }
        Err(WholeDirError::new(
            dest,
            format!("replaced by other writers {TURN_ATTEMPTS} times while this append waited for its turn"),
        ))
    }

    /// Appends take no turns here (no `flock`): one writer at a time is the caller's to keep.
    #[cfg(not(unix))]
    fn take(_dest: &Path) -> Result<Self, WholeDirError> {
        Ok(Self {})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn the_old_files_stay_the_same_files_and_a_clash_changes_nothing() {
        use std::os::unix::fs::MetadataExt;
        let root = tempfile::tempdir().unwrap();
        let dest = root.path().join("out");
        fs::create_dir_all(dest.join("year=2026")).unwrap();
        fs::write(dest.join("year=2026/part-0"), "old").unwrap();
        fs::write(dest.join("_SUCCESS"), "").unwrap();
        let inode = fs::metadata(dest.join("year=2026/part-0")).unwrap().ino();

        let staged = StagingDir::new(root.path(), &dest).unwrap();
        fs::create_dir_all(staged.path().join("year=2026")).unwrap();
        fs::write(staged.path().join("year=2026/part-1"), "new").unwrap();
        fs::write(staged.path().join("_SUCCESS"), "").unwrap();
        append_whole(&staged, &dest, &["_SUCCESS"]).unwrap();
        drop(staged);
        assert_eq!(names(&dest.join("year=2026")), ["part-0", "part-1"]);
        assert_eq!(
            fs::metadata(dest.join("year=2026/part-0")).unwrap().ino(),
            inode,
            "linked, not copied"
        );
        assert_eq!(names(root.path()), ["out"], "nothing left beside it");

        let clash = StagingDir::new(root.path(), &dest).unwrap();
        fs::create_dir_all(clash.path().join("year=2026")).unwrap();
        fs::write(clash.path().join("year=2026/part-0"), "clash").unwrap();
        let error = append_whole(&clash, &dest, &["_SUCCESS"]).unwrap_err().to_string();
        assert!(error.contains("already holds a file named part-0"), "{error}");
        drop(clash);
        assert_eq!(fs::read_to_string(dest.join("year=2026/part-0")).unwrap(), "old");
        assert_eq!(names(root.path()), ["out"]);
    }

    #[test]
    fn appends_at_once_each_keep_their_files() {
        let root = tempfile::tempdir().unwrap();
        let dest = root.path().join("out");
        fs::create_dir_all(&dest).unwrap();
        let writers: Vec<_> = (0..8)
            .map(|i| {
                let (root, dest) = (root.path().to_path_buf(), dest.clone());
                std::thread::spawn(move || {
                    let staged = StagingDir::new(&root, &dest).unwrap();
                    fs::write(staged.path().join(format!("part-{i}")), "rows").unwrap();
                    append_whole(&staged, &dest, &[]).unwrap();
                })
            })
            .collect();
        for writer in writers {
            writer.join().unwrap();
        }
        assert_eq!(names(&dest).len(), 8, "{:?}", names(&dest));
    }
}
