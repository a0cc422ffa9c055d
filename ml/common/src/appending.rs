//! Adding files to a directory readers may be reading, in one step, as Spark's append mode promises and its
//! file-by-file renames do not quite keep: the new files are written into a hidden sibling
//! ([`StagingDir`]), which then receives a hard link to each file the destination holds (a copy where the file
//! system has no links) and takes the destination's place as a replacing save does
//! ([`move_into_place`]). A reader lists the old files or all of them, never some of the new; a writer
//! killed at any point leaves the destination as it was (what it left beside it is swept by the next write).
//! Appends to one destination, and saves that replace it, take turns — an exclusive lock on the destination
//! directory itself, checked to still be the destination once held — so none drops the files of another.
//! Where the exchange is two renames (systems without `RENAME_EXCHANGE`), the destination is missing for a
//! moment between them, and where it is a mount point it cannot be exchanged at all: its new files are moved
//! in one at a time, with a warning.
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
/// whose staged file is kept. A destination that is a mount point cannot be exchanged: its new files are
/// moved in one at a time, with a warning.
pub fn append_whole(staged: &StagingDir, dest: &Path, staged_replaces: &[&str]) -> Result<(), WholeDirError> {
    let _turn = take_turn(dest)?;
    let clash = |e: io::Error| match e.kind() {
        io::ErrorKind::AlreadyExists => WholeDirError::new(dest, e.to_string()),
        _ => WholeDirError::new(dest, "putting its files beside the new ones").caused_by(e),
    };
    if mount_point(dest) {
        log::warn!(
            "{}: a mount point, which cannot be replaced in one step: the appended files appear one at a time",
            dest.display()
        );
        return move_tree(staged.path(), dest, staged_replaces).map_err(clash);
    }
    let copied = link_tree(dest, staged.path(), staged_replaces).map_err(clash)?;
    if copied > 0 {
        log::warn!(
            "{}: its file system makes no hard links, so its {copied} files were copied beside the new ones",
            dest.display()
        );
    }
    // The directory keeps its permissions.
    if let Ok(metadata) = fs::metadata(dest) {
        let _ = fs::set_permissions(staged.path(), metadata.permissions());
    }
    sync_tree(staged.path()).map_err(|e| WholeDirError::new(dest, "syncing the new files").caused_by(e))?;
    let aside = sibling(&parent_of(dest), dest, "replaced");
    move_into_place(staged.path(), dest, Some(&aside))
        .map_err(|e| WholeDirError::new(dest, "moving the files into place").caused_by(e))
}

/// Links each file under `from` to the same place under `to`, making directories `to` lacks; a name `to`
/// already has is an `AlreadyExists` error naming it, unless it is a file named in `to_keeps`. Returns how
/// many files had to be copied (a file system without hard links).
fn link_tree(from: &Path, to: &Path, to_keeps: &[&str]) -> io::Result<usize> {
    let mut copied = 0;
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        let (source, target) = (entry.path(), to.join(entry.file_name()));
        let taken = fs::symlink_metadata(&target).ok();
        if entry.file_type()?.is_dir() {
            match taken {
                Some(taken) if !taken.is_dir() => return Err(already_holds(&target)),
                Some(_) => {}
                None => fs::create_dir(&target)?,
            }
            copied += link_tree(&source, &target, to_keeps)?;
            continue;
        }
        if taken.is_some() {
            if to_keeps.iter().any(|name| entry.file_name() == *name) {
                continue;
            }
            return Err(already_holds(&target));
        }
        if fs::hard_link(&source, &target).is_err() {
            fs::copy(&source, &target)?;
            copied += 1;
        }
    }
    Ok(copied)
}

/// Moves each file under `from` to the same place under `to`, one at a time (the staged ones into a mount
/// point); a name `to` already has is an error, as in [`link_tree`], and a file named in `from_replaces`
/// replaces its namesake.
fn move_tree(from: &Path, to: &Path, from_replaces: &[&str]) -> io::Result<()> {
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        let (source, target) = (entry.path(), to.join(entry.file_name()));
        if entry.file_type()?.is_dir() {
            fs::create_dir_all(&target)?;
            move_tree(&source, &target, from_replaces)?;
        } else if fs::symlink_metadata(&target).is_ok() && !from_replaces.iter().any(|n| entry.file_name() == *n) {
            return Err(already_holds(&target));
        } else {
            fs::rename(&source, &target)?;
        }
    }
    crate::files::sync(to)
}

/// The error for a name the destination already holds.
fn already_holds(target: &Path) -> io::Error {
    let name = target.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
    io::Error::new(
        io::ErrorKind::AlreadyExists,
        format!("already holds a file named {name}"),
    )
}

/// Whether `dir` is the root of a mounted file system (its device differs from its parent's).
#[cfg(unix)]
fn mount_point(dir: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let device = |path: &Path| fs::metadata(path).map(|m| m.dev()).ok();
    let parent = dir
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    matches!((device(dir), device(parent)), (Some(a), Some(b)) if a != b)
}

#[cfg(not(unix))]
fn mount_point(_dir: &Path) -> bool {
    false
}

/// Waits for an exclusive turn at replacing `dest` (an append, or a save that overwrites it), released when
/// the turn is dropped; see the [module](self) docs. Where the file system has no locks on directories (NFS
/// gives `flock` on a directory opened to read no lock), the turn is not taken, with a warning: one writer at
/// a time is then the caller's to keep.
pub fn take_turn(dest: &Path) -> Result<Turn, WholeDirError> {
    Turn::take(dest)
}

/// An exclusive turn at replacing one destination: a lock on the directory itself, released when dropped.
pub struct Turn {
    #[cfg(unix)]
    _locked: Option<nix::fcntl::Flock<File>>,
}

impl Turn {
    /// Waits for the turn at `dest`. A lock taken on a directory that another append has meanwhile replaced
    /// is let go and taken again on the new one.
    #[cfg(unix)]
    fn take(dest: &Path) -> Result<Self, WholeDirError> {
        use std::os::unix::fs::MetadataExt;

        use nix::errno::Errno;
        use nix::fcntl::{Flock, FlockArg};
        let failed = |message: &str| {
            let message = message.to_string();
            move |e: io::Error| WholeDirError::new(dest, message).caused_by(e)
        };
        for _ in 0..TURN_ATTEMPTS {
            let directory = File::open(dest).map_err(failed("opening it to append"))?;
            let locked = match Flock::lock(directory, FlockArg::LockExclusive) {
                Ok(locked) => locked,
                Err((_, Errno::EBADF | Errno::ENOLCK | Errno::EOPNOTSUPP | Errno::EINVAL)) => {
                    log::warn!(
                        "{}: its file system cannot lock a directory, so writers to it do not take turns",
                        dest.display()
                    );
                    return Ok(Self { _locked: None });
                }
                Err((_, errno)) => return Err(failed("waiting for another writer to it")(errno.into())),
            };
            let held = locked.metadata().map_err(failed("reading it"))?;
            let now = fs::metadata(dest).map_err(failed("reading it"))?;
            if (held.dev(), held.ino()) == (now.dev(), now.ino()) {
                return Ok(Self { _locked: Some(locked) });
            }
        }
        Err(WholeDirError::new(
            dest,
            format!("replaced by other writers {TURN_ATTEMPTS} times while this one waited for its turn"),
        ))
    }

    /// Writers take no turns here (no `flock`): one writer at a time is the caller's to keep.
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
