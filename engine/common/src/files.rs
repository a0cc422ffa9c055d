//! Writing a directory so that a reader never sees it half-written: its files go into a hidden sibling,
//! are synced, and the sibling is renamed into place — replacing what was there in that rename. A failure (of
//! the writer, a full disk, a kill) leaves the destination as it was and nothing beside it.
//!
//! ```
//! use hearth_common::files::{WholeDirError, write_dir_whole};
//!
//! let root = std::env::temp_dir().join(format!("hearth-doc-files-{}", std::process::id()));
//! let dest = root.join("model");
//! let written: Result<(), WholeDirError> = write_dir_whole(&dest, |dir| Ok(std::fs::write(dir.join("a.json"), "{}")?));
//! written.unwrap();
//! let failed: Result<(), WholeDirError> = write_dir_whole(&dest, |dir| {
//!     std::fs::write(dir.join("a.json"), "half")?;
//!     Err(std::io::Error::other("no space left on device").into())
//! });
//! assert!(failed.is_err());
//! assert_eq!(std::fs::read_to_string(dest.join("a.json")).unwrap(), "{}");
//! assert_eq!(std::fs::read_dir(&root).unwrap().count(), 1, "nothing left beside it");
//! # std::fs::remove_dir_all(&root).unwrap();
//! ```

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// Why a directory could not be written whole: the destination and what went wrong.
#[derive(Debug, thiserror::Error)]
#[error("{}: {message}", path.display())]
pub struct WholeDirError {
    /// The destination (or the file that failed, when a writer says so).
    pub path: PathBuf,
    /// What went wrong.
    pub message: String,
}

impl From<io::Error> for WholeDirError {
    fn from(error: io::Error) -> Self {
        Self {
            path: PathBuf::new(),
            message: error.to_string(),
        }
    }
}

/// Writes the directory `dest` whole: `fill` writes its files into a hidden sibling, which is synced and
/// renamed to `dest`, what `dest` held (if anything) replaced in that rename.
pub fn write_dir_whole<E: From<WholeDirError>>(
    dest: &Path,
    fill: impl FnOnce(&Path) -> Result<(), E>,
) -> Result<(), E> {
    let parent = parent_of(dest);
    let failed = |message: String| {
        E::from(WholeDirError {
            path: dest.to_path_buf(),
            message,
        })
    };
    fs::create_dir_all(&parent).map_err(|e| failed(format!("creating its directory: {e}")))?;
    let staging = StagingDir::new(&parent, dest)
        .map_err(|e| failed(format!("creating the directory it is written in first, beside it: {e}")))?;
    fill(staging.path())?;
    sync_tree(staging.path()).map_err(|e| failed(format!("syncing what was written: {e}")))?;
    let aside = sibling(&parent, dest, "replaced");
    move_into_place(staging.path(), dest, Some(&aside))
        .map_err(|e| failed(format!("moving what was written into place: {e}")))?;
    sync(&parent).map_err(|e| failed(format!("syncing {}: {e}", parent.display())))
}

/// An error unless `dir` is free to save into — missing, or an empty directory — as Spark's `MLWriter.save`
/// refuses a path that exists unless told to overwrite it; `how_to_replace` says how to.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("hearth-doc-occupied-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// assert!(hearth_common::files::refuse_occupied(&dir, "").is_ok()); // empty
/// std::fs::write(dir.join("model.json"), "{}").unwrap();
/// let refused = hearth_common::files::refuse_occupied(&dir, "use overwrite(dir)").unwrap_err();
/// assert!(refused.to_string().ends_with("already exists: save somewhere new, or use overwrite(dir)"));
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub fn refuse_occupied(dir: &Path, how_to_replace: &str) -> Result<(), WholeDirError> {
    let occupied = match fs::read_dir(dir) {
        Ok(mut entries) => entries.next().is_some(),
        Err(e) => e.kind() != io::ErrorKind::NotFound,
    };
    if occupied {
        return Err(WholeDirError {
            path: dir.to_path_buf(),
            message: format!("already exists: save somewhere new, or {how_to_replace}"),
        });
    }
    Ok(())
}

/// A hidden sibling of a destination that files are written into first; removed when dropped, so whatever
/// was not moved out of it (a failed write) disappears.
#[derive(Debug)]
pub struct StagingDir {
    path: PathBuf,
}

impl StagingDir {
    /// Creates a fresh hidden directory beside `dest`, in `parent`.
    pub fn new(parent: &Path, dest: &Path) -> io::Result<Self> {
        let path = sibling(parent, dest, "writing");
        fs::create_dir(&path)?;
        Ok(Self { path })
    }

    /// Where to write.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for StagingDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.path);
    }
}

/// Flushes a file or directory to the disk.
pub fn sync(path: &Path) -> io::Result<()> {
    File::open(path)?.sync_all()
}

/// Syncs every file under `dir`, and the directories holding them.
pub fn sync_tree(dir: &Path) -> io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            sync_tree(&path)?;
        } else {
            sync(&path)?;
        }
    }
    sync(dir)
}

/// The directory `dest` is in (`.` for a bare name).
pub fn parent_of(dest: &Path) -> PathBuf {
    match dest.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Renames the complete directory `staged` to `dest`. With `aside`, what `dest` holds is renamed there first,
/// put back if the move fails, and removed once the new one is in place: readers of `dest` see the old
/// directory or the new one, never a mix.
pub fn move_into_place(staged: &Path, dest: &Path, aside: Option<&Path>) -> io::Result<()> {
    let aside = aside.filter(|_| fs::symlink_metadata(dest).is_ok());
    if let Some(aside) = aside {
        fs::rename(dest, aside)?;
    }
    if let Err(e) = fs::rename(staged, dest) {
        if let Some(aside) = aside {
            let _ = fs::rename(aside, dest);
        }
        return Err(e);
    }
    if let Some(aside) = aside {
        let removed = if aside.is_dir() {
            fs::remove_dir_all(aside)
        } else {
            fs::remove_file(aside)
        };
        if let Err(e) = removed {
            log::warn!("{}: removing the replaced {}: {e}", dest.display(), aside.display());
        }
    }
    Ok(())
}

/// A hidden name beside `dest` for what a write is `doing`, unique to this process and moment.
pub fn sibling(parent: &Path, dest: &Path, doing: &str) -> PathBuf {
    let name = dest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    parent.join(format!(".{name}.{doing}-{}-{nanos}", std::process::id()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `dir` holds: its entries' names and the text of each file.
    fn contents(dir: &Path) -> Vec<(String, String)> {
        let mut found: Vec<(String, String)> = fs::read_dir(dir)
            .unwrap()
            .map(|entry| {
                let path = entry.unwrap().path();
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                (name, fs::read_to_string(&path).unwrap_or_default())
            })
            .collect();
        found.sort();
        found
    }

    fn put(dir: &Path, name: &str, text: &str) -> Result<(), WholeDirError> {
        fs::write(dir.join(name), text).map_err(|e| WholeDirError {
            path: dir.join(name),
            message: e.to_string(),
        })
    }

    #[test]
    fn a_directory_is_replaced_whole_or_not_at_all() {
        let root = tempfile::tempdir().unwrap();
        let dest = root.path().join("model");
        write_dir_whole(&dest, |dir| put(dir, "a.json", "old")).unwrap();

        // A save that fails part way (a full disk, a stage that cannot write) leaves the old one whole.
        let failed = write_dir_whole(&dest, |dir| {
            put(dir, "a.json", "new")?;
            Err(WholeDirError {
                path: dir.join("b.bin"),
                message: "no space left on device".to_string(),
            })
        });
        assert!(failed.unwrap_err().to_string().contains("no space left"));
        assert_eq!(contents(&dest), [("a.json".to_string(), "old".to_string())]);
        assert_eq!(
            contents(root.path()).len(),
            1,
            "nothing left beside it: {:?}",
            contents(root.path())
        );

        write_dir_whole(&dest, |dir| {
            put(dir, "a.json", "new")?;
            put(dir, "b.bin", "data")
        })
        .unwrap();
        assert_eq!(
            contents(&dest),
            [
                ("a.json".to_string(), "new".to_string()),
                ("b.bin".to_string(), "data".to_string())
            ]
        );
        assert_eq!(contents(root.path()).len(), 1);
    }
}
