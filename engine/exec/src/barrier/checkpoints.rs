//! A barrier stage's checkpoints kept in storage ([`BarrierOptions::checkpoint_dir`](super::BarrierOptions)):
//! the driver writes each upload it keeps (rank 0's checkpoint after an epoch) to a local directory or an
//! object store, and a later run of the same job — its driver restarted by `hearth job resume`, or a program
//! run again under its job's id ([`Session::resume_job`](crate::session::Session::resume_job)) — starts
//! each stage from that stage's last checkpoint, as Ray Train's `Trainer.restore` does from its storage path.
//!
//! ```text
//! CHECKPOINT_DIR/
//!   driver-20261128101500-0000/            the job
//!     hearth.train-3f9a0c12d4e5-1/          a stage: its function, its arguments' SHA-256, and its place among
//!                                           the job's stages of those arguments (1 for the first)
//!       epoch-000003.ckpt                   the bytes rank 0 sent after epoch 3 (the one before the last)
//!       epoch-000004.ckpt                   … and after epoch 4
//!       latest.json                         {"epoch": 4, "file": "epoch-000004.ckpt", …}, written last
//! ```
//!
//! A reader trusts `latest.json` alone, which names a file written whole before it; the checkpoint before
//! the latest is kept too, so a reader that read the old `latest.json` a moment ago still finds its file.
//! A stage that ended keeps its last checkpoint, so a resumed job passes over the stages it had finished.

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
    /// The epoch of the checkpoint.
    epoch: usize,
    /// Its file, beside `latest.json`.
    file: String,
    /// The stage's function.
    function: String,
    /// The SHA-256 of the stage's arguments (its recipe), in hex.
    arguments_sha256: String,
}

/// The checkpoints of one stage of one job, where [`BarrierOptions::checkpoint_dir`](super::BarrierOptions)
/// says.
#[derive(Debug)]
pub(crate) struct StageCheckpoints {
    store: Arc<dyn ObjectStore>,
    /// The stage's prefix in `store`.
    prefix: StorePath,
    /// The stage's location as the user would write it, for messages.
    location: String,
    function: String,
    arguments_sha256: String,
}

impl StageCheckpoints {
    /// The checkpoints, under `dir`, of the stage of `job` that runs `function` with `args` — the `n`-th such
    /// stage the job's driver started; a local directory is made if missing.
    pub async fn open(
        dir: &str,
        job: &DriverJob,
        function: &str,
        args: &str,
        settings: &StoreSettings,
    ) -> Result<Self> {
        let arguments_sha256 = hex(&Sha256::digest(args.as_bytes()));
        let kind = format!("{function}-{}", &arguments_sha256[..12]);
        let stage = format!("{kind}-{}", job.number_stage(&kind));
        let location = format!("{}/{}/{stage}", dir.trim_end_matches('/'), job.id);
        let (store, prefix) = match is_remote(dir) {
            true => {
                let url = url::Url::parse(&location)
                    .map_err(|e| HearthError::persistence(dir, "not a URL of a checkpoint directory").caused_by(e))?;
                let prefix = StorePath::from_url_path(url.path())
                    .map_err(|e| HearthError::persistence(&location, "not a checkpoint location").caused_by(e))?;
                (open(&url, settings)?, prefix)
            }
            false => local_stage(&location)?,
        };
        Ok(Self {
            store,
            prefix,
            location,
            function: function.to_string(),
            arguments_sha256,
        })
    }

    /// Where the stage's checkpoints are.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// The stage's last checkpoint, if a run of its job kept one.
    pub async fn latest(&mut self) -> Result<Option<ResumePoint>> {
        let Some(bytes) = self.read(LATEST).await? else {
            return Ok(None);
        };
        let latest: Latest = serde_json::from_slice(&bytes)
            .map_err(|e| HearthError::persistence(self.url_of(LATEST), "unreadable").caused_by(e))?;
        if latest.function != self.function || latest.arguments_sha256 != self.arguments_sha256 {
            return Err(HearthError::persistence(
                self.url_of(LATEST),
                format!(
                    "holds the checkpoints of another stage (function {}, arguments with SHA-256 {}), not of \
                     {} with these arguments (SHA-256 {})",
                    latest.function, latest.arguments_sha256, self.function, self.arguments_sha256
                ),
            ));
        }
        let bytes = self.read(&latest.file).await?.ok_or_else(|| {
            HearthError::persistence(
                self.url_of(&latest.file),
                format!(
                    "missing, though {LATEST} names it as the checkpoint of epoch {}",
                    latest.epoch
                ),
            )
        })?;
        Ok(Some(ResumePoint {
            epoch: latest.epoch,
            bytes,
        }))
    }

    /// Writes `upload` as the stage's latest checkpoint: its file, then `latest.json`; then removes the
    /// checkpoints but these two.
    pub async fn keep(&mut self, upload: &Upload) -> Result<()> {
        let file = checkpoint_file(upload.epoch);
        self.write(&file, upload.bytes.clone()).await?;
        let latest = Latest {
            epoch: upload.epoch,
            file,
            function: self.function.clone(),
            arguments_sha256: self.arguments_sha256.clone(),
        };
        let json = serde_json::to_vec_pretty(&latest)
            .map_err(|e| HearthError::persistence(self.url_of(LATEST), "writing it").caused_by(e))?;
        self.write(LATEST, json).await?;
        self.remove_older_than_previous(upload.epoch).await;
        Ok(())
    }

    /// Removes the checkpoint files but `epoch`'s and the last one before it — an earlier run's past its
    /// last `latest.json` too; what cannot be listed or removed is said, not fatal (it costs storage, not
    /// correctness: readers follow `latest.json`).
    async fn remove_older_than_previous(&self, epoch: usize) {
        let listed: std::result::Result<Vec<_>, _> = self.store.list(Some(&self.prefix)).try_collect().await;
        let listed = match listed {
            Ok(listed) => listed,
            Err(e) => return log::warn!("{}: cannot list the old checkpoints: {e}", self.location),
        };
        let epochs: Vec<usize> = (listed.iter())
            .filter_map(|object| epoch_of(object.location.filename()?))
            .collect();
        let previous = epochs.iter().copied().filter(|&kept| kept < epoch).max();
        for old in epochs
            .into_iter()
            .filter(|&kept| kept != epoch && Some(kept) != previous)
        {
            let file = checkpoint_file(old);
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

/// A local stage's store and prefix, its directory made (`location` may be relative, or a `file://` URL).
fn local_stage(location: &str) -> Result<(Arc<dyn ObjectStore>, StorePath)> {
    let dir = std::path::absolute(location.strip_prefix("file://").unwrap_or(location))
        .map_err(|e| HearthError::persistence(location, "not a checkpoint directory").caused_by(e))?;
    std::fs::create_dir_all(&dir)
        .map_err(|e| HearthError::persistence(&dir, "creating the checkpoint directory").caused_by(e))?;
    let prefix = StorePath::from_filesystem_path(&dir)
        .map_err(|e| HearthError::persistence(&dir, "not a checkpoint directory").caused_by(e))?;
    Ok((Arc::new(LocalFileSystem::new()), prefix))
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

    #[tokio::test]
    async fn a_stage_resumes_from_its_latest_checkpoint_and_keeps_two() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_str().unwrap();
        let settings = StoreSettings::default();
        let job = DriverJob::new("job-a".into());
        let mut first = StageCheckpoints::open(root, &job, "f", "args", &settings)
            .await
            .unwrap();
        assert_eq!(first.latest().await.unwrap(), None, "nothing kept yet");
        for epoch in [1, 2, 4, 5] {
            first.keep(&upload(epoch)).await.unwrap();
        }
        // A run resumed from epoch 3 (as if epoch 4's and 5's were written but never named by latest.json).
        first.keep(&upload(3)).await.unwrap();
        first.keep(&upload(4)).await.unwrap();
        let stage = std::path::Path::new(first.location());
        let mut files: Vec<String> = std::fs::read_dir(stage)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        files.sort();
        assert_eq!(files, ["epoch-000003.ckpt", "epoch-000004.ckpt", "latest.json"]);

        // The job's second stage of the same arguments is another stage; a run of the job again numbers its
        // stages from 1, and finds the first one's checkpoints.
        let mut second = StageCheckpoints::open(root, &job, "f", "args", &settings)
            .await
            .unwrap();
        assert_ne!(second.location(), first.location());
        assert_eq!(second.latest().await.unwrap(), None);
        let mut other_args = StageCheckpoints::open(root, &job, "f", "other", &settings)
            .await
            .unwrap();
        assert_eq!(
            other_args.latest().await.unwrap(),
            None,
            "another recipe is another stage"
        );

        let again = DriverJob::new("job-a".into());
        let mut resumed = StageCheckpoints::open(root, &again, "f", "args", &settings)
            .await
            .unwrap();
        assert_eq!(resumed.location(), first.location());
        let point = resumed.latest().await.unwrap().unwrap();
        assert_eq!((point.epoch, point.bytes), (4, vec![4; 5]));
    }

    #[tokio::test]
    async fn a_checkpoint_of_another_recipe_is_refused_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_str().unwrap();
        let job = DriverJob::new("job".into());
        let mut stage = StageCheckpoints::open(root, &job, "f", "args", &StoreSettings::default())
            .await
            .unwrap();
        stage.keep(&upload(2)).await.unwrap();
        stage.arguments_sha256 = "0".repeat(64);
        let refused = stage.latest().await.unwrap_err().to_string();
        assert!(
            refused.contains("latest.json") && refused.contains("another stage"),
            "{refused}"
        );
    }
}
