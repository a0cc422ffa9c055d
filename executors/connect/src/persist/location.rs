//! Where a client's `path` points: a local folder (`/models/lr`, `file:///models/lr`) or a folder of an object
//! store (`s3://bucket/models/lr`, `gs://…`, `az://…`), opened from the session's runtime as its reads are (the
//! endpoint and keys of the server's environment and the session's store settings).
//!
//! A save fills a local folder first, then puts it in place whole: renamed there on the local file system; on
//! a store, what the folder held removed (its metadata and markers first, so that no reader trusts a mix) and
//! the new files uploaded with each `metadata/` file and `_SUCCESS` marker last, so that a reader finds a
//! model's metadata only once its data is there. An upload that fails removes what it had put. A load reads a
//! store's folder through a local copy, removed once read.
//!
//! ```text
//! s3://bucket/models/lr/
//!   data/part-00000-<uuid>-c000.snappy.parquet      uploaded first
//!   metadata/part-00000-<uuid>-c000.txt             then the metadata
//!   metadata/_SUCCESS                               and the markers, last
//! ```

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::execution::runtime_env::RuntimeEnv;
use futures::TryStreamExt;
use hearth_common::files::{relative_files, write_dir_whole};
use hearth_exec::object_stores::is_remote;
use object_store::path::Path as StorePath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use tempfile::TempDir;
use url::Url;

use crate::errors::{ConnectError, Result};

/// A folder a client saves to or loads from.
pub(crate) enum Location {
    /// A folder of this server's file system.
    Local(PathBuf),
    /// A folder of an object store.
    Store(StoreFolder),
}

/// The objects under a prefix of a store, as a folder.
pub(crate) struct StoreFolder {
    /// The folder's URL, without a trailing `/`.
    url: Url,
    store: Arc<dyn ObjectStore>,
    /// The folder's path in its store.
    prefix: StorePath,
}

/// A local folder (or file) holding a location's files: the location itself, or a copy removed when this is
/// dropped.
pub(crate) struct LocalFiles {
    dir: PathBuf,
    _copy: Option<TempDir>,
}

impl LocalFiles {
    /// The folder, or the file.
    pub(crate) fn path(&self) -> &Path {
        &self.dir
    }
}

impl Location {
    /// The location `path` names, a store's opened from `runtime`.
    pub(crate) fn of(path: &str, runtime: &RuntimeEnv) -> Result<Self> {
        if path.is_empty() {
            return Err(ConnectError::IllegalArgument("the path is empty".into()));
        }
        if let Some(local) = path.strip_prefix("file://") {
            return Ok(Self::Local(PathBuf::from(local)));
        }
        if !is_remote(path) {
            return Ok(Self::Local(PathBuf::from(path)));
        }
        let url = Url::parse(path.trim_end_matches('/'))
            .map_err(|e| ConnectError::IllegalArgument(format!("{path} is not a URL hearth can read or write: {e}")))?;
        let store_url = ObjectStoreUrl::parse(&url[..url::Position::BeforePath])?;
        let store = runtime.object_store(store_url)?;
        let prefix = StorePath::from_url_path(url.path())
            .map_err(|e| ConnectError::IllegalArgument(format!("{path} is not a path of its store: {e}")))?;
        if prefix.as_ref().is_empty() {
            return Err(ConnectError::IllegalArgument(format!(
                "{path} names a whole bucket or container: save into a folder of it ({path}/model)"
            )));
        }
        Ok(Self::Store(StoreFolder { url, store, prefix }))
    }

    /// Whether anything is there.
    pub(crate) async fn exists(&self) -> Result<bool> {
        match self {
            Self::Local(dir) => Ok(std::fs::symlink_metadata(dir).is_ok()),
            Self::Store(folder) => Ok(!folder.objects().await?.is_empty()),
        }
    }

    /// Removes what is there, if anything.
    pub(crate) async fn remove(&self) -> Result<()> {
        match self {
            Self::Local(dir) if dir.is_dir() => std::fs::remove_dir_all(dir),
            Self::Local(dir) if dir.exists() => std::fs::remove_file(dir),
            Self::Local(_) => Ok(()),
            Self::Store(folder) => return folder.remove().await,
        }
        .map_err(|e| ConnectError::Execution(format!("removing {self}: {e}")))
    }

    /// Writes the folder whole with `fill` (see the [module](self) docs), replacing what it held.
    pub(crate) async fn write_whole(&self, fill: impl FnOnce(&Path) -> Result<()>) -> Result<()> {
        match self {
            Self::Local(dir) => write_dir_whole(dir, fill),
            Self::Store(folder) => {
                let staging = tempfile::tempdir()
                    .map_err(|e| ConnectError::Execution(format!("creating a folder to write {self} in: {e}")))?;
                fill(staging.path())?;
                folder.publish(staging.path()).await
            }
        }
    }

    /// Adds the file `name` holding `bytes` to the folder.
    pub(crate) async fn add_file(&self, name: &str, bytes: &[u8]) -> Result<()> {
        match self {
            Self::Local(dir) => hearth_common::files::write_file_whole(&dir.join(name), bytes)
                .map_err(|e| ConnectError::Execution(format!("writing {}: {e}", dir.join(name).display()))),
            Self::Store(folder) => folder.put(name, bytes.to_vec()).await.map(|_| ()),
        }
    }

    /// The folder's files in a local folder (a file's in a local file).
    pub(crate) async fn read(&self) -> Result<LocalFiles> {
        match self {
            Self::Local(dir) => Ok(LocalFiles {
                dir: dir.clone(),
                _copy: None,
            }),
            Self::Store(folder) => folder.fetch().await,
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Local(dir) => write!(f, "{}", dir.display()),
            Self::Store(folder) => write!(f, "{}", folder.url),
        }
    }
}

impl StoreFolder {
    /// The paths of the objects under the folder.
    async fn objects(&self) -> Result<Vec<StorePath>> {
        let listed = self.store.list(Some(&self.prefix)).map_ok(|meta| meta.location);
        (listed.try_collect().await).map_err(|e| self.failed("listing what it holds", &e))
    }

    /// Removes every object of the folder, its markers and metadata first.
    async fn remove(&self) -> Result<()> {
        let mut objects = self.objects().await?;
        objects.sort_by_key(|path| std::cmp::Reverse(self.rank(path)));
        for path in &objects {
            (self.store.delete(path).await).map_err(|e| self.failed(&format!("removing {path}"), &e))?;
        }
        Ok(())
    }

    /// Replaces the folder's objects with the files of `staged`, uploaded in [`Self::rank`] order; a failed
    /// upload removes what it had put.
    async fn publish(&self, staged: &Path) -> Result<()> {
        let mut files = relative_files(staged)
            .map_err(|e| ConnectError::Execution(format!("listing {}: {e}", staged.display())))?;
        files.sort_by_key(|name| (self.rank(&StorePath::from(name.as_str())), name.clone()));
        self.remove().await?;
        let mut placed = Vec::new();
        for name in &files {
            let local = staged.join(name);
            let bytes = std::fs::read(&local)
                .map_err(|e| ConnectError::Execution(format!("reading {}: {e}", local.display())))?;
            match self.put(name, bytes).await {
                Ok(path) => placed.push(path),
                Err(e) => {
                    for path in &placed {
                        let _ = self.store.delete(path).await;
                    }
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// Puts `bytes` at `name` under the folder; its path.
    async fn put(&self, name: &str, bytes: Vec<u8>) -> Result<StorePath> {
        let path = self.path_of(name);
        (self.store.put(&path, PutPayload::from(bytes)).await)
            .map_err(|e| self.failed(&format!("uploading {name}"), &e))?;
        Ok(path)
    }

    /// A local copy of the folder's objects; of the object itself where the path names one object (a file).
    async fn fetch(&self) -> Result<LocalFiles> {
        let copy = tempfile::tempdir()
            .map_err(|e| ConnectError::Execution(format!("creating a copy of {}: {e}", self.url)))?;
        let objects = self.objects().await?;
        if objects.is_empty() {
            let name = self.prefix.filename().unwrap_or("file").to_owned();
            let file = copy.path().join(&name);
            match self.store.get(&self.prefix).await {
                Ok(got) => {
                    let bytes = got.bytes().await.map_err(|e| self.failed("reading it", &e))?;
                    std::fs::write(&file, &bytes)
                        .map_err(|e| ConnectError::Execution(format!("copying {}: {e}", self.url)))?;
                }
                Err(object_store::Error::NotFound { .. }) => {
                    return Err(ConnectError::IllegalArgument(format!(
                        "[PATH_NOT_FOUND] Path does not exist: {}",
                        self.url
                    )));
                }
                Err(e) => return Err(self.failed("reading it", &e)),
            }
            return Ok(LocalFiles {
                dir: file,
                _copy: Some(copy),
            });
        }
        for path in objects {
            let relative = self.relative(&path);
            let bytes = async { self.store.get(&path).await?.bytes().await };
            let bytes = bytes
                .await
                .map_err(|e| self.failed(&format!("reading {relative}"), &e))?;
            let local = copy.path().join(&relative);
            let written =
                (local.parent().map_or(Ok(()), std::fs::create_dir_all)).and_then(|()| std::fs::write(&local, &bytes));
            written.map_err(|e| ConnectError::Execution(format!("copying {}/{relative}: {e}", self.url)))?;
        }
        Ok(LocalFiles {
            dir: copy.path().to_path_buf(),
            _copy: Some(copy),
        })
    }

    /// The order of upload: data first (0), then metadata (1), then markers (2); removal runs it backwards.
    fn rank(&self, path: &StorePath) -> u8 {
        if path.filename() == Some("_SUCCESS") {
            2
        } else if self.relative(path).split('/').any(|part| part == "metadata") {
            1
        } else {
            0
        }
    }

    /// `path` relative to the folder (a relative path is itself).
    fn relative(&self, path: &StorePath) -> String {
        let prefix = format!("{}/", self.prefix.as_ref());
        path.as_ref().strip_prefix(&prefix).unwrap_or(path.as_ref()).to_owned()
    }

    /// The store's path of `name` under the folder.
    fn path_of(&self, name: &str) -> StorePath {
        name.split('/').fold(self.prefix.clone(), StorePath::join)
    }

    fn failed(&self, what: &str, error: &dyn fmt::Display) -> ConnectError {
        ConnectError::Execution(format!("{}: {what}: {error}", self.url))
    }
}
