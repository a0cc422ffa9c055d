//! A barrier stage's checkpoints kept in storage ([`BarrierOptions::checkpoint_dir`](super::BarrierOptions)):
//! the driver writes each upload it keeps (rank 0's checkpoint after an epoch) to a local directory or an
//! object store, and a later run of the same job — its driver restarted by `hearth job resume`, or a program
//! run again under its job's id ([`Session::resume_job`](crate::session::Session::resume_job)) — starts
//! each stage from that stage's last checkpoint, as Ray Train's `Trainer.restore` does from its storage path.
//!
//! ```text
//! CHECKPOINT_DIR/
//!   driver-20261128101500-0000/            the job
//!     hearth.train-3f9a0c12d4e5-1/          a stage: its function, the SHA-256 of its function, arguments and
//!                                           input plan, and its place among the job's stages of that
//!                                           SHA-256 (1 for the first)
//!       epoch-000003.ckpt                   the bytes rank 0 sent after epoch 3 (the one before the last)
//!       epoch-000004.ckpt                   … and after epoch 4
//!       latest.json                         both, newest first, with their sizes and SHA-256; written last
//! ```
//!
//! A reader trusts `latest.json` alone, which names files written before it, and checks each file's size
//! and SHA-256: a damaged latest checkpoint (a host that crashed before its disk had it) gives way to the one
//! before, which is kept for that and for a reader that read the previous `latest.json` a moment ago. A
//! stage is known by what it computes — its function, its arguments and the plan of its input rows — so a
//! resumed job's stages find their own checkpoints whatever order they start in, and a stage over other
//! rows never resumes from another's. A stage that ended keeps its last checkpoint, so a resumed job passes
//! over the stages it had finished.

use std::sync::Arc;

use futures::TryStreamExt;
use hearth_collective::Upload;
use object_store::local::LocalFileSystem;
use object_store::path::Path as StorePath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::ResumePoint;
use crate::driver_job::DriverJob;
use crate::error::{HearthError, Result};
use crate::object_stores::{StoreSettings, is_remote, open};

/// The file of a stage's checkpoints that names its latest.
const LATEST: &str = "latest.json";

/// What `latest.json` holds.
#[derive(Debug, Serialize, Deserialize)]
struct Latest {
    /// The stage's function.
    function: String,
    /// The SHA-256 of the stage's function, arguments and input plan, in hex.
    stage_sha256: String,
    /// The checkpoints kept, newest first (two at most).
    checkpoints: Vec<Kept>,
}

/// A checkpoint's file, as `latest.json` names it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Kept {
    /// The epoch it was sent after.
    epoch: usize,
    /// Its file, beside `latest.json`.
    file: String,
    /// Its size in bytes.
    bytes: u64,
    /// Its SHA-256, in hex.
    sha256: String,
}

/// What a stage computes, which names its checkpoints: its function, its arguments, and its input rows'
/// plan.
#[derive(Clone, Copy, Debug)]
pub(crate) struct StageIdentity<'a> {
    /// The function its tasks run.
    pub function: &'a str,
    /// The function's arguments.
    pub arguments: &'a str,
    /// Its input rows' plan, as text.
    pub input: &'a str,
}

impl StageIdentity<'_> {
    fn sha256(&self) -> String {
        let mut digest = Sha256::new();
        for part in [self.function, self.arguments, self.input] {
            digest.update((part.len() as u64).to_le_bytes());
            digest.update(part.as_bytes());
        }
        hex(&digest.finalize())
    }
}

/// The checkpoints of one stage of one job, where [`BarrierOptions::checkpoint_dir`](super::BarrierOptions)
/// says.
#[derive(Debug)]
pub(crate) struct StageCheckpoints {
    store: Arc<dyn ObjectStore>,
    /// The stage's prefix in `store`.
    prefix: StorePath,
    /// The stage's location, for messages (a local one absolute).
    location: String,
    function: String,
    stage_sha256: String,
    /// The checkpoint before the latest one written or read, which the next `latest.json` names too.
    previous: Option<Kept>,
}

impl StageCheckpoints {
    /// The checkpoints, under `dir`, of the stage of `job` that computes `stage` — the `n`-th such stage the
    /// job's driver started; a local directory is made if missing.
    pub async fn open(dir: &str, job: &DriverJob, stage: StageIdentity<'_>, settings: &StoreSettings) -> Result<Self> {
        let stage_sha256 = stage.sha256();
        let kind = format!("{}-{}", folder_name(stage.function), &stage_sha256[..12]);
        let folder = format!("{}/{kind}-{}", job.id, job.number_stage(&kind));
        let (store, prefix, location) = match is_remote(dir) {
            true => {
                let location = format!("{}/{folder}", dir.trim_end_matches('/'));
                let url = url::Url::parse(&location)
                    .map_err(|e| HearthError::persistence(dir, "not a URL of a checkpoint directory").caused_by(e))?;
                let prefix = StorePath::from_url_path(url.path())
                    .map_err(|e| HearthError::persistence(&location, "not a checkpoint location").caused_by(e))?;
                (open(&url, settings)?, prefix, location)
            }
            false => local_stage(dir, &folder)?,
        };
        Ok(Self {
            store,
            prefix,
            location,
            function: stage.function.to_string(),
            stage_sha256,
            previous: None,
        })
    }

    /// Where the stage's checkpoints are.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// The stage's last whole checkpoint, if a run of its job kept one: the latest, or the one before when
    /// the latest is missing or damaged.
    pub async fn latest(&mut self) -> Result<Option<ResumePoint>> {
        let Some(bytes) = self.read(LATEST).await? else {
            return Ok(None);
        };
        let latest: Latest = serde_json::from_slice(&bytes)
            .map_err(|e| HearthError::persistence(self.url_of(LATEST), "unreadable").caused_by(e))?;
        if latest.function != self.function || latest.stage_sha256 != self.stage_sha256 {
            return Err(HearthError::persistence(
                self.url_of(LATEST),
                format!(
                    "holds the checkpoints of another stage (function {}, SHA-256 {}), not of {} over these \
                     arguments and rows (SHA-256 {})",
                    latest.function, latest.stage_sha256, self.function, self.stage_sha256
                ),
            ));
        }
        let mut damaged = Vec::new();
        for (i, kept) in latest.checkpoints.iter().enumerate() {
            match self.read(&kept.file).await? {
                Some(bytes) if bytes.len() as u64 == kept.bytes && hex(&Sha256::digest(&bytes)) == kept.sha256 => {
                    if !damaged.is_empty() {
                        log::warn!(
                            "{}: {}; resuming from epoch {}",
                            self.location,
                            damaged.join("; "),
                            kept.epoch
                        );
                    }
                    self.previous = latest.checkpoints.get(i + 1).cloned();
                    return Ok(Some(ResumePoint {
                        epoch: kept.epoch,
                        bytes,
                    }));
                }
                Some(bytes) => damaged.push(format!(
                    "{} is damaged ({} bytes, {} named)",
                    kept.file,
                    bytes.len(),
                    kept.bytes
                )),
                None => damaged.push(format!("{} is missing", kept.file)),
            }
        }
        Err(HearthError::persistence(
            self.url_of(LATEST),
            format!("names no whole checkpoint: {}", damaged.join("; ")),
        ))
    }

    /// Writes `upload` as the stage's latest checkpoint: its file, then `latest.json` naming it and the one
    /// before; then removes every other checkpoint file.
    pub async fn keep(&mut self, upload: &Upload) -> Result<()> {
        let kept = Kept {
            epoch: upload.epoch,
            file: checkpoint_file(upload.epoch),
            bytes: upload.bytes.len() as u64,
            sha256: hex(&Sha256::digest(&upload.bytes)),
        };
        self.write(&kept.file, upload.bytes.clone()).await?;
        let previous = self.previous.take().filter(|previous| previous.epoch != kept.epoch);
        let latest = Latest {
            function: self.function.clone(),
            stage_sha256: self.stage_sha256.clone(),
            checkpoints: std::iter::once(kept.clone()).chain(previous).collect(),
        };
        let json = serde_json::to_vec_pretty(&latest)
            .map_err(|e| HearthError::persistence(self.url_of(LATEST), "writing it").caused_by(e))?;
        self.write(LATEST, json).await?;
        self.remove_all_but(&latest.checkpoints).await;
        self.previous = Some(kept);
        Ok(())
    }

    /// Removes the checkpoint files but those `latest.json` names — an earlier run's past its last
    /// `latest.json` too; what cannot be listed or removed is said, not fatal (it costs storage, not
    /// correctness: readers follow `latest.json`).
    async fn remove_all_but(&self, named: &[Kept]) {
        let listed: std::result::Result<Vec<_>, _> = self.store.list(Some(&self.prefix)).try_collect().await;
        let listed = match listed {
            Ok(listed) => listed,
            Err(e) => return log::warn!("{}: cannot list the old checkpoints: {e}", self.location),
        };
        let old = (listed.iter())
            .filter_map(|object| object.location.filename().map(str::to_string))
            .filter(|file| epoch_of(file).is_some() && !named.iter().any(|kept| kept.file == *file));
        for file in old {
            match self.store.delete(&self.path(&file)).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => log::warn!("{}: cannot remove an old checkpoint: {e}", self.url_of(&file)),
            }
        }
    }

    fn path(&self, file: &str) -> StorePath {
        self.prefix.clone().join(file)
    }

    fn url_of(&self, file: &str) -> String {
        format!("{}/{file}", self.location)
    }

    async fn read(&self, file: &str) -> Result<Option<Vec<u8>>> {
        let reading = |e| HearthError::persistence(self.url_of(file), "reading it").caused_by(e);
        match self.store.get(&self.path(file)).await {
            Ok(got) => Ok(Some(got.bytes().await.map_err(reading)?.to_vec())),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(reading(e)),
        }
    }

    /// Writes `file` whole: an object store's PUT, a local file written beside and renamed.
    async fn write(&self, file: &str, bytes: Vec<u8>) -> Result<()> {
        self.store
            .put(&self.path(file), PutPayload::from(bytes))
            .await
            .map_err(|e| HearthError::persistence(self.url_of(file), "writing it").caused_by(e))?;
        Ok(())
    }
}

/// A local stage's store, prefix and absolute location: `folder` under `dir` (a path, relative to this
/// process's directory, or a `file://` URL), made if missing.
fn local_stage(dir: &str, folder: &str) -> Result<(Arc<dyn ObjectStore>, StorePath, String)> {
    let not_a_dir = |e: String| HearthError::persistence(dir, format!("not a checkpoint directory: {e}"));
    let dir = match dir.get(..5).is_some_and(|scheme| scheme.eq_ignore_ascii_case("file:")) {
        true => url::Url::parse(dir)
            .map_err(|e| not_a_dir(e.to_string()))?
            .to_file_path()
            .map_err(|()| not_a_dir("a file:// URL of another host".to_string()))?,
        false => std::path::absolute(dir).map_err(|e| not_a_dir(e.to_string()))?,
    };
    let stage = dir.join(folder);
    std::fs::create_dir_all(&stage)
        .map_err(|e| HearthError::persistence(&stage, "creating the checkpoint directory").caused_by(e))?;
    let prefix = StorePath::from_filesystem_path(&stage)
        .map_err(|e| HearthError::persistence(&stage, "not a checkpoint directory").caused_by(e))?;
    Ok((Arc::new(LocalFileSystem::new()), prefix, stage.display().to_string()))
}

/// `function` as a folder's name: characters other than letters, digits, `.`, `-` and `_` become `_`, so that
/// it neither nests nor leaves its job's folder (`latest.json` keeps the name as it is).
fn folder_name(function: &str) -> String {
    let name: String = (function.chars())
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect();
    match name.chars().all(|c| c == '.') {
        true => name.replace('.', "_"),
        false => name,
    }
}

/// The file of the checkpoint of `epoch`.
fn checkpoint_file(epoch: usize) -> String {
    format!("epoch-{epoch:06}.ckpt")
}

/// The epoch of a checkpoint's file name, if it is one.
fn epoch_of(file: &str) -> Option<usize> {
    file.strip_prefix("epoch-")?.strip_suffix(".ckpt")?.parse().ok()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn upload(epoch: usize) -> Upload {
        Upload {
            rank: 0,
            epoch,
            bytes: vec![epoch as u8; 5],
        }
    }

    fn stage<'a>(arguments: &'a str, input: &'a str) -> StageIdentity<'a> {
        StageIdentity {
            function: "f",
            arguments,
            input,
        }
    }

    async fn open(root: &str, job: &DriverJob, identity: StageIdentity<'_>) -> StageCheckpoints {
        StageCheckpoints::open(root, job, identity, &StoreSettings::default())
            .await
            .unwrap()
    }

    fn files_in(dir: &str) -> Vec<String> {
        let mut files: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        files.sort();
        files
    }

    #[tokio::test]
    async fn a_stage_resumes_from_its_latest_checkpoint_and_keeps_two() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_str().unwrap();
        let job = DriverJob::new("job-a".into());
        let mut first = open(root, &job, stage("args", "rows")).await;
        assert_eq!(first.latest().await.unwrap(), None, "nothing kept yet");
        for epoch in [1, 2, 4, 5] {
            first.keep(&upload(epoch)).await.unwrap();
        }
        // A run resumed from epoch 3 (as if epoch 4's and 5's were written but never named by latest.json).
        first.previous = None;
        first.keep(&upload(3)).await.unwrap();
        first.keep(&upload(4)).await.unwrap();
        assert_eq!(
            files_in(first.location()),
            ["epoch-000003.ckpt", "epoch-000004.ckpt", "latest.json"]
        );

        // The job's second stage of the same identity is another stage; other arguments or other rows are
        // other stages; a run of the job again numbers its stages from 1, and finds the first one's.
        let mut second = open(root, &job, stage("args", "rows")).await;
        assert_ne!(second.location(), first.location());
        assert_eq!(second.latest().await.unwrap(), None);
        for other in [stage("other", "rows"), stage("args", "other rows")] {
            assert_eq!(open(root, &job, other).await.latest().await.unwrap(), None);
        }
        let again = DriverJob::new("job-a".into());
        let mut resumed = open(root, &again, stage("args", "rows")).await;
        assert_eq!(resumed.location(), first.location());
        let point = resumed.latest().await.unwrap().unwrap();
        assert_eq!((point.epoch, point.bytes), (4, vec![4; 5]));
    }

    #[tokio::test]
    async fn a_damaged_latest_checkpoint_gives_way_to_the_one_before() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_str().unwrap();
        let job = DriverJob::new("job".into());
        let mut kept = open(root, &job, stage("args", "rows")).await;
        kept.keep(&upload(1)).await.unwrap();
        kept.keep(&upload(2)).await.unwrap();
        let latest = std::path::Path::new(kept.location()).join("epoch-000002.ckpt");
        std::fs::write(&latest, b"torn").unwrap();
        let mut again = open(root, &DriverJob::new("job".into()), stage("args", "rows")).await;
        let point = again.latest().await.unwrap().unwrap();
        assert_eq!((point.epoch, point.bytes), (1, vec![1; 5]));
        std::fs::remove_file(std::path::Path::new(kept.location()).join("epoch-000001.ckpt")).unwrap();
        let mut none = open(root, &DriverJob::new("job".into()), stage("args", "rows")).await;
        let refused = none.latest().await.unwrap_err().to_string();
        assert!(
            refused.contains("latest.json") && refused.contains("epoch-000002.ckpt is damaged"),
            "{refused}"
        );
    }

    #[tokio::test]
    async fn a_checkpoint_of_another_stage_is_refused_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_str().unwrap();
        let job = DriverJob::new("job".into());
        let mut kept = open(root, &job, stage("args", "rows")).await;
        kept.keep(&upload(2)).await.unwrap();
        kept.stage_sha256 = "0".repeat(64);
        let refused = kept.latest().await.unwrap_err().to_string();
        assert!(
            refused.contains("latest.json") && refused.contains("another stage"),
            "{refused}"
        );
    }

    #[tokio::test]
    async fn function_names_stay_in_their_folder_and_file_urls_are_local() {
        assert_eq!(folder_name("my/../fn?x"), "my_.._fn_x");
        assert_eq!(folder_name(".."), "__");
        let dir = tempfile::tempdir().unwrap();
        let url = url::Url::from_directory_path(dir.path()).unwrap();
        let job = DriverJob::new("job".into());
        let kept = open(url.as_str(), &job, stage("args", "rows")).await;
        assert!(
            kept.location().starts_with(dir.path().to_str().unwrap()),
            "{}",
            kept.location()
        );
    }
}
