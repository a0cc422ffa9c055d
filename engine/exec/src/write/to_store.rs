//! Writing a frame to an object store (`s3://bucket/out`, `gs://…`, `az://…`) on every master: the tasks write
//! their partitions straight to the store, each into a file of the write's staging prefix — a hidden sibling of
//! the destination, `.out.hearth-staging-<write id>/`, which no reader of `out/` lists ([`PartWriterExec`]) —
//! and the driver commits the files its successful tasks reported, as Spark's committer does: each copied to
//! its part name in the destination (`part-00000-<write id>.snappy.parquet`), the old files removed where the
//! write replaces them, `_SUCCESS` written last, the staging prefix removed. A job that fails before its
//! commit leaves nothing in the destination; one that fails during it removes what it copied. A store has no
//! rename, so a reader listing the destination during the commit may see some of the new files: as with
//! Spark, readers trust a directory with its `_SUCCESS`.

use std::path::PathBuf;
use std::sync::Arc;

use datafusion::arrow::datatypes::Schema;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::error::DataFusionError;
use datafusion::prelude::DataFrame;
use futures::TryStreamExt;
use object_store::path::Path as StorePath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use url::Url;

use super::part_names::{part_name, write_id};
use super::task_files::{
    FileWriter, PartWriterExec, PartWriterSpec, Staged, staged_files, staged_url, store_path, store_url,
};
use super::{FrameWriter, OutputFormat, SUCCESS_FILE, SaveMode, Written, csv_columns};
use crate::error::{HearthError, Result};
use crate::physical_stage::run_over;

/// Writes `df` to the object store's `dest` as `writer` says (see the [module](self) docs).
pub(super) async fn save(writer: &FrameWriter, df: DataFrame, dest: &str) -> Result<Written> {
    let failed = |what: &str| {
        let what = what.to_string();
        move |e: DataFusionError| HearthError::persistence(dest, what).caused_by(e)
    };
    let url = Url::parse(dest.trim_end_matches('/'))
        .map_err(|e| HearthError::persistence(dest, "not a URL hearth can write").caused_by(e))?;
    let store = df
        .task_ctx()
        .runtime_env()
        .object_store(store_url(&url).map_err(failed("naming its store"))?)
        .map_err(failed("opening its store"))?;
    let prefix = store_path(&url).map_err(failed("reading its path"))?;
    if prefix.as_ref().is_empty() {
        return Err(HearthError::persistence(
            dest,
            "names a whole bucket or container: write into a folder of it (s3://bucket/out)",
        ));
    }
    let existing: Vec<StorePath> = store
        .list(Some(&prefix))
        .map_ok(|meta| meta.location)
        .try_collect()
        .await
        .map_err(|e| HearthError::persistence(dest, "listing what is there").caused_by(e))?;
    let exists = !existing.is_empty();
    if let Some(decided) = writer.where_it_exists(exists, dest) {
        return decided;
    }
    let id = write_id();
    let spec = PartWriterSpec {
        staging: staging_location(&url, &id),
        format: writer.format.extension().to_string(),
        compression: writer.compression.clone(),
    };
    let df = match writer.format {
        OutputFormat::Csv => csv_columns(df)?,
        _ => df,
    };
    let schema = df.schema().as_arrow().clone();
    let staging = Staging {
        store: Arc::clone(&store),
        prefix: Url::parse(&spec.staging)
            .map_err(|e| DataFusionError::Plan(e.to_string()))
            .and_then(|staging| store_path(&staging))
            .map_err(failed("naming its staging prefix"))?,
    };
    let committed = async {
        let reports = run_over(df, |input| Ok(Arc::new(PartWriterExec::try_new(input, spec.clone())?)))
            .await
            .map_err(|e| HearthError::persistence(dest, "writing the rows").caused_by(e))?;
        let staged = staged_files(&reports)
            .map_err(|e| HearthError::persistence(dest, "reading what the tasks wrote").caused_by(e))?;
        let commit = Commit {
            store: store.as_ref(),
            spec: &spec,
            dest: &url,
            write_id: &id,
        };
        let replaced = (writer.mode == SaveMode::Overwrite).then_some(existing.as_slice());
        commit.run(&staged, replaced, &schema).await
    }
    .await;
    // Whatever happened, the staged files go: the committed ones were copied, the rest are never read.
    staging.remove().await;
    committed
}

/// The staging location of write `id` to `dest`: a hidden sibling of the destination, ending in `/`.
fn staging_location(dest: &Url, id: &str) -> String {
    let mut staging = dest.clone();
    let name = dest
        .path_segments()
        .and_then(|mut s| s.next_back())
        .unwrap_or("output")
        .to_string();
    if let Ok(mut segments) = staging.path_segments_mut() {
        segments.pop().push(&format!(".{name}.hearth-staging-{id}")).push("");
    }
    staging.to_string()
}

/// A write's staging prefix, removed once the write ends, committed or not.
struct Staging {
    store: Arc<dyn ObjectStore>,
    prefix: StorePath,
}

impl Staging {
    /// Removes every file under the prefix: the committed ones' copies and any a failed attempt left.
    async fn remove(self) {
        let listed: std::result::Result<Vec<_>, _> = self.store.list(Some(&self.prefix)).try_collect().await;
        for meta in listed.unwrap_or_default() {
            if let Err(e) = self.store.delete(&meta.location).await {
                log::warn!("cannot remove the staged file {}: {e}", meta.location);
            }
        }
    }
}

/// The commit of one write's staged files into its destination.
struct Commit<'a> {
    store: &'a dyn ObjectStore,
    spec: &'a PartWriterSpec,
    dest: &'a Url,
    write_id: &'a str,
}

impl Commit<'_> {
    /// Copies the staged files to their part names, removes the files `replaced` that were there before (an
    /// overwrite: `_SUCCESS` first, so that no reader trusts a mix), and writes `_SUCCESS`. A failed copy
    /// undoes the copies and leaves the destination as it was; a failure once old files are being removed
    /// leaves the new files without `_SUCCESS`, and says so. A write with no rows commits one empty file of
    /// `schema`.
    async fn run(&self, staged: &[Staged], replaced: Option<&[StorePath]>, schema: &Schema) -> Result<Written> {
        let dest = self.dest.as_str();
        let suffix = self
            .spec
            .suffix()
            .map_err(|e| HearthError::persistence(dest, "naming its files").caused_by(e))?;
        let files: Vec<&Staged> = staged.iter().filter(|file| !file.name.is_empty()).collect();
        let mut placed: Vec<StorePath> = Vec::new();
        if let Err(e) = self.place(&files, &suffix, schema, &mut placed).await {
            for path in &placed {
                let _ = self.store.delete(path).await;
            }
            return Err(e);
        }
        let unmarked = |e: HearthError| {
            HearthError::persistence(
                dest,
                "the new files are in place without _SUCCESS, and some of the replaced ones may remain",
            )
            .caused_by(e)
        };
        if let Some(replaced) = replaced {
            self.remove_old(replaced, &placed).await.map_err(unmarked)?;
        }
        self.mark_success().await.map_err(unmarked)?;
        Ok(Written {
            rows: staged.iter().map(|file| file.rows).sum(),
            files: placed
                .iter()
                .map(|path| PathBuf::from(self.at(path.filename().unwrap_or_default()).to_string()))
                .collect(),
            bytes: staged.iter().map(|file| file.bytes).sum(),
            ignored: false,
        })
    }

    /// Copies each staged file to its part name (or writes an empty one when there is none), noting each in
    /// `placed`.
    async fn place(&self, files: &[&Staged], suffix: &str, schema: &Schema, placed: &mut Vec<StorePath>) -> Result<()> {
        let dest = self.dest.as_str();
        let path_of =
            |url: &Url| store_path(url).map_err(|e| HearthError::persistence(dest, "a file's path").caused_by(e));
        if files.is_empty() {
            let target = path_of(&self.at(&part_name(0, self.write_id, suffix)))?;
            let empty = self.empty_file(schema)?;
            self.store
                .put(&target, PutPayload::from(empty))
                .await
                .map_err(|e| HearthError::persistence(dest, "writing its empty part file").caused_by(e))?;
            placed.push(target);
            return Ok(());
        }
        for (part, file) in files.iter().enumerate() {
            let from = path_of(&staged_url(&self.spec.staging, &file.name)?)?;
            let to = path_of(&self.at(&part_name(part, self.write_id, suffix)))?;
            self.store
                .copy(&from, &to)
                .await
                .map_err(|e| HearthError::persistence(dest, format!("committing {}", file.name)).caused_by(e))?;
            placed.push(to);
        }
        Ok(())
    }

    /// Removes the files that were in the destination before — its `_SUCCESS` first — but for the ones just
    /// placed.
    async fn remove_old(&self, replaced: &[StorePath], placed: &[StorePath]) -> Result<()> {
        let marker = |path: &&StorePath| path.filename() == Some(SUCCESS_FILE);
        let (markers, files): (Vec<&StorePath>, Vec<&StorePath>) = replaced.iter().partition(marker);
        let old = markers.into_iter().chain(files);
        for old in old.filter(|old| !placed.contains(old)) {
            self.store.delete(old).await.map_err(|e| {
                HearthError::persistence(self.dest.as_str(), format!("removing the replaced {old}")).caused_by(e)
            })?;
        }
        Ok(())
    }

    /// Writes the `_SUCCESS` marker, last.
    async fn mark_success(&self) -> Result<()> {
        let marker = store_path(&self.at(SUCCESS_FILE))
            .map_err(|e| HearthError::persistence(self.dest.as_str(), "naming _SUCCESS").caused_by(e))?;
        self.store
            .put(&marker, PutPayload::new())
            .await
            .map_err(|e| HearthError::persistence(self.dest.as_str(), "writing _SUCCESS").caused_by(e))?;
        Ok(())
    }

    /// The file `name` in the destination.
    fn at(&self, name: &str) -> Url {
        let mut url = self.dest.clone();
        if let Ok(mut segments) = url.path_segments_mut() {
            segments.pop_if_empty().push(name);
        }
        url
    }

    /// A file of the write's format holding no rows, with `schema`'s columns where the format keeps them.
    fn empty_file(&self, schema: &Schema) -> Result<Vec<u8>> {
        let schema = Arc::new(schema.clone());
        let empty = RecordBatch::new_empty(Arc::clone(&schema));
        let mut file = FileWriter::try_new(self.spec, Vec::new(), schema)?;
        file.write(&empty)?;
        Ok(file.finish()?)
    }
}
