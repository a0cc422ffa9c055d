//! Writing a directory so that a reader never sees it half-written: its files go into a hidden sibling,
//! are synced, and the sibling takes the destination's place in one step — on Linux the two are exchanged by
//! `renameat2(RENAME_EXCHANGE)`, so there is no moment without a destination; elsewhere (or on a file system
//! without it) the old one is renamed aside first and put back if the move fails, which leaves a crash between
//! the two renames with the old one only in its hidden sibling (the next write puts it back). A failure (of the
//! writer, a full disk) leaves the destination as it was and nothing beside it; what a killed writer left beside
//! it (its `.writing-` or `.replaced-` sibling, named with its host and process id) is swept by the next write to
//! that destination on that host.
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
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// Why a directory could not be written whole: the destination and what went wrong.
#[derive(Debug, thiserror::Error)]
#[error("{}: {message}{}", path.display(), cause.as_ref().map(|e| format!(": {e}")).unwrap_or_default())]
pub struct WholeDirError {
    /// The destination (or the file that failed, when a writer says so).
    pub path: PathBuf,
    /// What went wrong.
    pub message: String,
    /// The file system's error, when there is one.
    #[source]
    pub cause: Option<io::Error>,
}

impl WholeDirError {
    /// `path` could not be written: `message` says what failed.
    pub fn new(path: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            message: message.into(),
            cause: None,
        }
    }

    /// This error, keeping the file system's `cause` as its source.
    #[must_use]
    pub fn caused_by(mut self, cause: io::Error) -> Self {
        self.cause = Some(cause);
        self
    }
}

impl From<io::Error> for WholeDirError {
    fn from(error: io::Error) -> Self {
        Self::new(PathBuf::new(), "writing its files").caused_by(error)
    }
}

/// Writes the directory `dest` whole: `fill` writes its files into a hidden sibling, which is synced and
/// renamed to `dest`, what `dest` held (if anything) replaced in that rename.
pub fn write_dir_whole<E: From<WholeDirError>>(
    dest: &Path,
    fill: impl FnOnce(&Path) -> Result<(), E>,
) -> Result<(), E> {
    let parent = parent_of(dest);
    sweep_leftovers(&parent, dest);
    let failed = |message: String| move |cause: io::Error| E::from(WholeDirError::new(dest, message).caused_by(cause));
    fs::create_dir_all(&parent).map_err(failed("creating its directory".into()))?;
    let staging = StagingDir::new(&parent, dest).map_err(failed(
        "creating the directory it is written in first, beside it".into(),
    ))?;
    fill(staging.path())?;
    sync_tree(staging.path()).map_err(failed("syncing what was written".into()))?;
    let aside = sibling(&parent, dest, "replaced");
    move_into_place(staging.path(), dest, Some(&aside)).map_err(failed("moving what was written into place".into()))?;
    sync(&parent).map_err(failed(format!("syncing {}", parent.display())))
}

/// Writes the file `path` whole: `bytes` go into a hidden sibling, which is synced and renamed over `path`, and
/// the directory is synced — a reader (or a machine that crashed) finds the old file or the new one, never a
/// part of either. For small records: a job's, a fleet's.
///
/// ```
/// let path = std::env::temp_dir().join(format!("hearth-doc-record-{}.json", std::process::id()));
/// hearth_common::files::write_file_whole(&path, b"{\"state\": \"running\"}").unwrap();
/// assert_eq!(std::fs::read(&path).unwrap(), b"{\"state\": \"running\"}");
/// # std::fs::remove_file(&path).unwrap();
/// ```
pub fn write_file_whole(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_whole(
        path,
        bytes,
        fs::OpenOptions::new().write(true).create(true).truncate(true),
    )
}

/// [`write_file_whole`] for a credential: the file readable and writable by its owner alone (mode 0600),
/// whatever the umask, and whatever mode a file already at `path` had.
///
/// ```
/// use std::os::unix::fs::PermissionsExt;
/// let path = std::env::temp_dir().join(format!("hearth-doc-private-{}", std::process::id()));
/// hearth_common::files::write_private_file_whole(&path, b"secret").unwrap();
/// assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
/// # std::fs::remove_file(&path).unwrap();
/// ```
pub fn write_private_file_whole(path: &Path, bytes: &[u8]) -> io::Result<()> {
    // The staging file is made anew (its name is unique), so it has this mode from its first byte.
    write_whole(
        path,
        bytes,
        fs::OpenOptions::new().write(true).create_new(true).mode(0o600),
    )
}

/// Writes `bytes` into `path`'s hidden sibling opened with `options`, synced and renamed over `path`.
fn write_whole(path: &Path, bytes: &[u8], options: &fs::OpenOptions) -> io::Result<()> {
    let parent = parent_of(path);
    let staged = sibling(&parent, path, "writing");
    let written = options
        .open(&staged)
        .and_then(|mut file| {
            io::Write::write_all(&mut file, bytes)?;
            file.sync_all()
        })
        .and_then(|()| fs::rename(&staged, path));
    if written.is_err() {
        let _ = fs::remove_file(&staged);
    }
    written?;
    sync(&parent)
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
        return Err(WholeDirError::new(
            dir,
            format!("already exists: save somewhere new, or {how_to_replace}"),
        ));
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

/// The files under `dir`, relative to it with `/` between folders, in name order: what a folder publishes to an
/// object store.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// std::fs::create_dir(dir.path().join("data")).unwrap();
/// std::fs::write(dir.path().join("data/part-0"), b"").unwrap();
/// std::fs::write(dir.path().join("metadata"), b"").unwrap();
/// assert_eq!(hearth_common::files::relative_files(dir.path()).unwrap(), ["data/part-0", "metadata"]);
/// ```
pub fn relative_files(dir: &Path) -> io::Result<Vec<String>> {
    let mut files = Vec::new();
    let mut folders = vec![dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in fs::read_dir(&folder)? {
            let path = entry?.path();
            if path.is_dir() {
                folders.push(path);
            } else if let Ok(relative) = path.strip_prefix(dir) {
                let parts: Vec<String> = relative.iter().map(|p| p.to_string_lossy().into_owned()).collect();
                files.push(parts.join("/"));
            }
        }
    }
    files.sort();
    Ok(files)
}

/// The directory `dest` is in (`.` for a bare name).
pub fn parent_of(dest: &Path) -> PathBuf {
    match dest.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Puts the complete directory `staged` at `dest`. With `aside`, what `dest` holds is replaced in one step
/// where the system can (the two exchanged, the old one then removed from `staged`'s name); elsewhere it is
/// renamed to `aside` first, put back if the move fails, and removed once the new one is in place. Readers of
/// `dest` see the old directory or the new one, never a mix.
pub fn move_into_place(staged: &Path, dest: &Path, aside: Option<&Path>) -> io::Result<()> {
    let aside = aside.filter(|_| fs::symlink_metadata(dest).is_ok());
    if let Some(aside) = aside {
        if exchange(staged, dest)? {
            remove_replaced(dest, staged);
            return Ok(());
        }
        fs::rename(dest, aside)?;
    }
    if let Err(e) = fs::rename(staged, dest) {
        if let Some(aside) = aside {
            let _ = fs::rename(aside, dest);
        }
        return Err(e);
    }
    if let Some(aside) = aside {
        remove_replaced(dest, aside);
    }
    Ok(())
}

/// Swaps `staged` and `dest` in one step (Linux's `renameat2` with `RENAME_EXCHANGE`): `true` when done, `false`
/// where this system or file system cannot.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn exchange(staged: &Path, dest: &Path) -> io::Result<bool> {
    use nix::errno::Errno;
    use nix::fcntl::{AT_FDCWD, RenameFlags, renameat2};
    match renameat2(AT_FDCWD, staged, AT_FDCWD, dest, RenameFlags::RENAME_EXCHANGE) {
        Ok(()) => Ok(true),
        Err(Errno::EINVAL | Errno::ENOSYS | Errno::EOPNOTSUPP) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Swaps `staged` and `dest` in one step: not on this system, so `false` (the caller renames in two).
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn exchange(_staged: &Path, _dest: &Path) -> io::Result<bool> {
    Ok(false)
}

/// Removes what `dest` held before, now at `old`; a failure is logged (the new one is in place).
fn remove_replaced(dest: &Path, old: &Path) {
    let removed = if old.is_dir() {
        fs::remove_dir_all(old)
    } else {
        fs::remove_file(old)
    };
    if let Err(e) = removed {
        log::warn!("{}: removing the replaced {}: {e}", dest.display(), old.display());
    }
}

/// Removes the hidden siblings of `dest` in `parent` that a writer of this host which no longer runs left behind
/// (a `.writing-` directory it was filling, a `.replaced-` one it was removing), as the host and process id in
/// their names tell; siblings of running processes, and of other hosts sharing the directory, stay. When `dest`
/// itself is missing — a writer killed between the two renames of the fallback in [`move_into_place`] — the
/// newest `.replaced-` sibling is what `dest` held, and is put back instead.
pub fn sweep_leftovers(parent: &Path, dest: &Path) {
    let Ok(entries) = fs::read_dir(parent) else {
        return;
    };
    let name = dest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let host = host_tag();
    let mut dead: Vec<(Leftover, PathBuf)> = entries
        .flatten()
        .filter_map(|entry| Some((Leftover::of(&entry.file_name().to_string_lossy(), &name)?, entry.path())))
        .filter(|(leftover, _)| leftover.host == host && !process_runs(leftover.pid))
        .collect();
    if fs::symlink_metadata(dest).is_err() {
        let newest = dead
            .iter()
            .enumerate()
            .filter(|(_, (leftover, _))| leftover.replaced)
            .max_by_key(|(_, (leftover, _))| leftover.nanos)
            .map(|(i, _)| i);
        if let Some(i) = newest {
            let (_, old) = dead.swap_remove(i);
            match fs::rename(&old, dest) {
                Ok(()) => log::warn!(
                    "{}: put back from {}, left by a killed save",
                    dest.display(),
                    old.display()
                ),
                Err(e) => log::warn!("{}: cannot put back {}: {e}", dest.display(), old.display()),
            }
        }
    }
    for (leftover, path) in dead {
        log::info!(
            "{}: removing {} left by process {}, which no longer runs",
            dest.display(),
            path.display(),
            leftover.pid
        );
        remove_replaced(dest, &path);
    }
}

/// What the name of a hidden sibling a write made ([`sibling`]) tells.
#[derive(Debug, PartialEq)]
struct Leftover {
    /// A replaced destination (`.replaced-`), rather than one being written (`.writing-`).
    replaced: bool,
    /// The host of the process that made it.
    host: String,
    /// That process.
    pid: u32,
    /// When it was made, in nanoseconds since 1970.
    nanos: u128,
}

impl Leftover {
    /// What the name `file_name` tells, if it is a hidden sibling of `dest_name` that a write made.
    fn of(file_name: &str, dest_name: &str) -> Option<Self> {
        let rest = file_name.strip_prefix('.')?.strip_prefix(dest_name)?;
        let (replaced, rest) = match (rest.strip_prefix(".writing-"), rest.strip_prefix(".replaced-")) {
            (Some(rest), _) => (false, rest),
            (None, Some(rest)) => (true, rest),
            (None, None) => return None,
        };
        let mut parts = rest.rsplitn(3, '-');
        let nanos = parts.next()?.parse().ok()?;
        let pid = parts.next()?.parse().ok()?;
        let host = parts.next()?.to_string();
        Some(Self {
            replaced,
            host,
            pid,
            nanos,
        })
    }
}

/// This host's name as sibling names carry it (no path separators).
fn host_tag() -> String {
    crate::host::host_name().replace(['/', '\\'], "_")
}

/// Whether the process `pid` runs (this one included).
#[cfg(unix)]
fn process_runs(pid: u32) -> bool {
    use nix::errno::Errno;
    let Ok(raw) = i32::try_from(pid) else {
        return true;
    };
    pid == std::process::id()
        || !matches!(
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(raw), None),
            Err(Errno::ESRCH)
        )
}

/// Whether the process `pid` runs: unknown here, so taken to run (nothing is swept).
#[cfg(not(unix))]
fn process_runs(_pid: u32) -> bool {
    true
}

/// A hidden name beside `dest` for what a write is `doing`, unique to this process and moment.
pub fn sibling(parent: &Path, dest: &Path, doing: &str) -> PathBuf {
    let name = dest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    parent.join(format!(".{name}.{doing}-{}-{}-{nanos}", host_tag(), std::process::id()))
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
        fs::write(dir.join(name), text).map_err(|e| WholeDirError::new(dir.join(name), "writing").caused_by(e))
    }

    #[test]
    fn a_directory_is_replaced_whole_or_not_at_all() {
        let root = tempfile::tempdir().unwrap();
        let dest = root.path().join("model");
        write_dir_whole(&dest, |dir| put(dir, "a.json", "old")).unwrap();

        // A save that fails part way (a full disk, a stage that cannot write) leaves the old one whole.
        let failed = write_dir_whole(&dest, |dir| {
            put(dir, "a.json", "new")?;
            Err(WholeDirError::new(dir.join("b.bin"), "no space left on device"))
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

    #[test]
    fn what_a_killed_writer_left_beside_a_destination_is_swept_by_the_next_write() {
        let root = tempfile::tempdir().unwrap();
        let dest = root.path().join("model");
        write_dir_whole(&dest, |dir| put(dir, "a.json", "old")).unwrap();
        // A writer of this host killed mid-save (its pid no longer runs; pids stop below 2^22 on Linux) left a
        // staging directory and a replaced one; a running process's (this one's) staging directory is its own,
        // and so is another host's (it may share this directory).
        let (host, dead) = (host_tag(), 4_194_304 + 17);
        let leftovers = [
            format!(".model.writing-{host}-{dead}-1"),
            format!(".model.replaced-{host}-{dead}-2"),
        ];
        let ours = format!(".model.writing-{host}-{}-3", std::process::id());
        let elsewhere = format!(".model.writing-other-host-{dead}-4");
        for name in leftovers.iter().chain([&ours, &elsewhere]) {
            fs::create_dir(root.path().join(name)).unwrap();
            put(&root.path().join(name), "a.json", "half").unwrap();
        }
        write_dir_whole(&dest, |dir| put(dir, "a.json", "new")).unwrap();
        let left: Vec<String> = contents(root.path()).into_iter().map(|(name, _)| name).collect();
        let mut kept = vec![elsewhere, ours, "model".to_string()];
        kept.sort();
        assert_eq!(left, kept);
        assert_eq!(contents(&dest), [("a.json".to_string(), "new".to_string())]);
    }

    #[test]
    fn a_destination_a_killed_save_left_only_beside_it_is_put_back() {
        // The fallback's two renames, killed between them: the old directory is only in `.replaced-`.
        let root = tempfile::tempdir().unwrap();
        let dest = root.path().join("model");
        let (host, dead) = (host_tag(), 4_194_304 + 17);
        for (nanos, text) in [(1, "older"), (2, "old")] {
            let aside = root.path().join(format!(".model.replaced-{host}-{dead}-{nanos}"));
            fs::create_dir(&aside).unwrap();
            put(&aside, "a.json", text).unwrap();
        }
        sweep_leftovers(root.path(), &dest);
        assert_eq!(contents(&dest), [("a.json".to_string(), "old".to_string())]);
        assert_eq!(contents(root.path()).len(), 1, "{:?}", contents(root.path()));
    }

    #[test]
    fn only_names_a_write_makes_are_leftovers() {
        let leftover = Leftover::of(".model.writing-node-1.example-41-123", "model").unwrap();
        assert_eq!(
            leftover,
            Leftover {
                replaced: false,
                host: "node-1.example".to_string(),
                pid: 41,
                nanos: 123
            }
        );
        assert!(Leftover::of(".model.replaced-h-41-123", "model").unwrap().replaced);
        assert_eq!(Leftover::of(".model2.writing-h-41-123", "model"), None);
        assert_eq!(Leftover::of(".model.writing-41-123", "model"), None);
        assert_eq!(Leftover::of("model", "model"), None);
        let made = sibling(Path::new("dir"), Path::new("dir/model"), "writing");
        let made = Leftover::of(&made.file_name().unwrap().to_string_lossy(), "model").unwrap();
        assert_eq!((made.host, made.pid), (host_tag(), std::process::id()));
    }
}
