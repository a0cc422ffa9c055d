//! A model catalog in an object store (`--models s3://bucket/models`): each model's files under a prefix of
//! their own version, `NAME/v-<id>/…`, beside `NAME/manifest.json` — the model's entry, its version and its
//! files — which is written last, in one request. Readers trust the manifest alone, so they see the old model
//! or the new one whole, never a part of one; a save that fails before its manifest leaves the model as it was.
//!
//! This process loads a model's pipeline from a local copy of its version (in this user's cache, `$HEARTH_CACHE`
//! or `~/.cache/hearth`, one folder per version, fetched once); a fleet's executors read its held-out rows from
//! the store itself. A new version's manifest replaces the old one's, and the version before it is kept until
//! the next save, so that a reader that read the old manifest a moment ago still finds its files. The
//! store is opened as the session's inputs are (see `hearth_exec::object_stores`: the endpoint from
//! `AWS_ENDPOINT_URL`, the keys from this process's environment).
//!
//! ```text
//! s3://bucket/models/
//!   credit_risk/
//!     manifest.json                 {"version": "…", "files": [...], "entry": {…catalog.json…}}
//!     v-18ec1b22bdc42a7b00ece0/     pipeline.json, stages/…, evaluation.parquet, catalog.json
//! ```

use std::future::Future;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::TryStreamExt;
use hearth_exec::error::{HearthError, Result};
use hearth_exec::object_stores::{StoreSettings, open};
use object_store::path::Path as StorePath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use serde::{Deserialize, Serialize};
use url::Url;

use super::entry::ModelEntry;

/// The file of a model that names its current version.
const MANIFEST: &str = "manifest.json";

/// What a model's manifest holds.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(super) struct Manifest {
    /// The version its files are under (`v-<id>`).
    pub version: String,
    /// Its files, relative to the version's prefix.
    pub files: Vec<String>,
    /// Its catalog entry.
    pub entry: ModelEntry,
}

/// A catalog at an object store's URL.
#[derive(Clone, Debug)]
pub(super) struct RemoteCatalog {
    /// The catalog's URL, without a trailing `/`.
    url: Url,
    /// Where this process keeps its copies of models' versions.
    copies: PathBuf,
}

impl RemoteCatalog {
    /// The catalog at `location` (a URL of a store `hearth_exec::object_stores` opens).
    pub fn new(location: &str) -> Result<Self> {
        let url = Url::parse(location.trim_end_matches('/'))
            .map_err(|e| HearthError::persistence(location, "not a URL of a model catalog").caused_by(e))?;
        let tag: String = (url.as_str().chars())
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        let copies = user_cache().join("models").join(tag);
        Ok(Self { url, copies })
    }

    /// The URL of `relative` under the catalog.
    pub fn url_of(&self, relative: &str) -> String {
        format!("{}/{relative}", self.url)
    }

    /// A new folder to write a version in before it is published: beside this process's copies, so that
    /// publishing moves it into place on the same file system.
    pub fn staging(&self) -> Result<tempfile::TempDir> {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.copies)
            .and_then(|()| tempfile::tempdir_in(&self.copies))
            .map_err(|e| HearthError::persistence(&self.copies, "creating a folder to write a model in").caused_by(e))
    }

    /// The manifest of the model `name`, if there is one.
    pub fn manifest(&self, name: &str) -> Result<Option<Manifest>> {
        let file = self.path(&format!("{name}/{MANIFEST}"))?;
        self.blocking(async {
            let store = self.store()?;
            match store.get(&file).await {
                Ok(got) => {
                    let bytes = got.bytes().await.map_err(|e| self.failed(&file, "reading it", e))?;
                    let manifest = serde_json::from_slice(&bytes).map_err(|e| {
                        HearthError::persistence(self.url_of(&format!("{name}/{MANIFEST}")), "unreadable").caused_by(e)
                    })?;
                    Ok(Some(manifest))
                }
                Err(object_store::Error::NotFound { .. }) => Ok(None),
                Err(e) => Err(self.failed(&file, "reading it", e)),
            }
        })?
    }

    /// Every model's manifest.
    pub fn manifests(&self) -> Result<Vec<Manifest>> {
        let root = self.path("")?;
        let names: Vec<String> = self.blocking(async {
            let listed = self.store()?.list_with_delimiter(Some(&root)).await;
            let listed = listed.map_err(|e| self.failed(&root, "listing its models", e))?;
            Ok::<_, HearthError>(
                (listed.common_prefixes.iter())
                    .filter_map(|prefix| prefix.filename().map(str::to_string))
                    .filter(|name| !name.starts_with('.'))
                    .collect(),
            )
        })??;
        let mut manifests = Vec::new();
        for name in names {
            manifests.extend(self.manifest(&name)?);
        }
        Ok(manifests)
    }

    /// A local folder holding the files of `manifest`'s version of the model `name`, fetched the first time.
    pub fn local_copy(&self, name: &str, manifest: &Manifest) -> Result<PathBuf> {
        let copy = self.copies.join(name).join(&manifest.version);
        if copy.is_dir() {
            return Ok(copy);
        }
        let parent = self.copies.join(name);
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&parent)
            .map_err(|e| HearthError::persistence(&parent, "creating a local copy's folder").caused_by(e))?;
        let fetching = tempfile::tempdir_in(&parent)
            .map_err(|e| HearthError::persistence(&parent, "creating a local copy's folder").caused_by(e))?;
        self.blocking(async {
            let store = self.store()?;
            for file in &manifest.files {
                let from = self.path(&format!("{name}/{}/{file}", manifest.version))?;
                let bytes = store
                    .get(&from)
                    .await
                    .map_err(|e| self.failed(&from, "fetching it", e))?
                    .bytes()
                    .await
                    .map_err(|e| self.failed(&from, "fetching it", e))?;
                let to = fetching.path().join(file);
                let written = to
                    .parent()
                    .map_or(Ok(()), std::fs::create_dir_all)
                    .and_then(|()| std::fs::write(&to, &bytes));
                written.map_err(|e| HearthError::persistence(&to, "writing a local copy").caused_by(e))?;
            }
            Ok::<_, HearthError>(())
        })??;
        let fetched = fetching.keep();
        // Another process may have fetched the same version meanwhile: its copy is as good.
        if std::fs::rename(&fetched, &copy).is_err() {
            let _ = std::fs::remove_dir_all(&fetched);
        }
        Ok(copy)
    }

    /// Publishes the files of folder `staged` as a new version of the model `name`: each file under the
    /// version's prefix, then the manifest, then the versions before the one it replaces removed; the folder
    /// becomes this process's copy of the version. Returns the manifest and the copy (none when the folder
    /// could not be moved: the copy is fetched when the model is next read).
    pub fn publish(&self, name: &str, staged: &Path, entry: &ModelEntry) -> Result<(Manifest, Option<PathBuf>)> {
        let previous = self.manifest(name)?.map(|manifest| manifest.version);
        let version = format!("v-{}", hearth_common::ids::unique_id());
        let files = hearth_common::files::relative_files(staged)
            .map_err(|e| HearthError::persistence(staged, "cannot list it").caused_by(e))?;
        let manifest = Manifest {
            version: version.clone(),
            files: files.clone(),
            entry: entry.clone(),
        };
        let text = serde_json::to_vec_pretty(&manifest)
            .map_err(|e| HearthError::persistence(self.url_of(name), "cannot write its manifest").caused_by(e))?;
        self.blocking(async {
            let store = self.store()?;
            for file in &files {
                let local = staged.join(file);
                let bytes = std::fs::read(&local)
                    .map_err(|e| HearthError::persistence(&local, "cannot read it").caused_by(e))?;
                let to = self.path(&format!("{name}/{version}/{file}"))?;
                store
                    .put(&to, PutPayload::from(bytes))
                    .await
                    .map_err(|e| self.failed(&to, "uploading it", e))?;
            }
            let file = self.path(&format!("{name}/{MANIFEST}"))?;
            store
                .put(&file, PutPayload::from(text))
                .await
                .map_err(|e| self.failed(&file, "writing it", e))?;
            let kept: Vec<&str> = std::iter::once(version.as_str()).chain(previous.as_deref()).collect();
            self.remove_versions(store.as_ref(), name, &kept).await;
            Ok::<_, HearthError>(())
        })??;
        let copy = self.copies.join(name).join(&version);
        let folder = std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(self.copies.join(name));
        let moved = folder.and_then(|()| std::fs::rename(staged, &copy));
        Ok((manifest, moved.ok().map(|()| copy)))
    }

    /// Removes the model `name`: its manifest first (it is gone for every reader), then its files; `false`
    /// when there was none.
    pub fn remove(&self, name: &str) -> Result<bool> {
        if self.manifest(name)?.is_none() {
            return Ok(false);
        }
        let file = self.path(&format!("{name}/{MANIFEST}"))?;
        self.blocking(async {
            let store = self.store()?;
            store
                .delete(&file)
                .await
                .map_err(|e| self.failed(&file, "removing it", e))?;
            self.remove_versions(store.as_ref(), name, &[]).await;
            Ok::<_, HearthError>(())
        })??;
        let _ = std::fs::remove_dir_all(self.copies.join(name));
        Ok(true)
    }

    /// Removes every file of the model `name` but its manifest and the versions `keep`; a file that cannot
    /// be removed is logged (no reader follows it).
    async fn remove_versions(&self, store: &dyn ObjectStore, name: &str, keep: &[&str]) {
        let Ok(folder) = self.path(name) else { return };
        let listed: std::result::Result<Vec<_>, _> = store.list(Some(&folder)).try_collect().await;
        let listed = listed.unwrap_or_else(|e| {
            log::warn!("cannot list the older versions of model {name} to remove them: {e}");
            Vec::new()
        });
        for meta in listed {
            let relative = meta.location.as_ref().strip_prefix(folder.as_ref()).unwrap_or_default();
            let relative = relative.trim_start_matches('/');
            let version = relative.split('/').next().unwrap_or_default();
            let kept = relative == MANIFEST || keep.contains(&version);
            if !kept && let Err(e) = store.delete(&meta.location).await {
                log::warn!(
                    "cannot remove {} of an older version of model {name}: {e}",
                    meta.location
                );
            }
        }
    }

    /// The catalog's store, opened for one call.
    fn store(&self) -> Result<Arc<dyn ObjectStore>> {
        open(&self.url, &StoreSettings::from_env())
    }

    /// The store's path of `relative` under the catalog.
    fn path(&self, relative: &str) -> Result<StorePath> {
        let joined = format!("{}/{relative}", self.url.path().trim_end_matches('/'));
        StorePath::from_url_path(joined.trim_end_matches('/'))
            .map_err(|e| HearthError::persistence(self.url_of(relative), "not a path of the store").caused_by(e))
    }

    /// An error of the store at `path`: `what` failed.
    fn failed(&self, path: &StorePath, what: &str, error: object_store::Error) -> HearthError {
        let root = self.url.path().trim_start_matches('/');
        let relative = path
            .as_ref()
            .strip_prefix(root)
            .unwrap_or(path.as_ref())
            .trim_start_matches('/');
        HearthError::persistence(self.url_of(relative), what.to_string()).caused_by(error)
    }
}

/// This user's cache of hearth: `$HEARTH_CACHE`, else `hearth` in `$XDG_CACHE_HOME` or `~/.cache`.
fn user_cache() -> PathBuf {
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|value| !value.is_empty())
            .map(PathBuf::from)
    };
    var("HEARTH_CACHE").unwrap_or_else(|| {
        (var("XDG_CACHE_HOME"))
            .or_else(|| var("HOME").map(|home| home.join(".cache")))
            .unwrap_or_else(std::env::temp_dir)
            .join("hearth")
    })
}

impl RemoteCatalog {
    /// Runs `work` to its end on a thread of its own with a runtime of its own: the catalog's calls are
    /// synchronous (SQL planning asks for models), and may come from inside another runtime.
    fn blocking<T: Send>(&self, work: impl Future<Output = T> + Send) -> Result<T> {
        std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build();
                    runtime.map(|runtime| runtime.block_on(work))
                })
                .join()
        })
        .map_err(|_| HearthError::persistence(self.url.as_str(), "a call to its store panicked"))?
        .map_err(|e| HearthError::persistence(self.url.as_str(), "cannot start a runtime for its store").caused_by(e))
    }
}
