//! Spark's `MLWriter`: a pipeline or a fitted model (a pipeline's, a network's) saved whole, a directory that
//! already holds something replaced only when asked.

use std::path::Path;

use hearth_common::files::write_dir_whole;
use hearth_exec::error::Result;

use super::persist::refuse_existing;

/// Saves a [`Pipeline`](super::Pipeline), a [`PipelineModel`](super::PipelineModel) or a trained network's model: `model.write().overwrite().save(dir)`,
/// as in Spark.
///
/// The files are written into a hidden sibling of `dir`, synced and renamed into place, so a crash, a full
/// disk or a kill mid-save leaves what was there before and nothing half-written. Without
/// [`overwrite`](Self::overwrite) a `dir` that holds anything is refused (an empty directory is used).
///
/// ```
/// use hearth_preprocessing::pipeline::Pipeline;
///
/// let dir = tempfile::tempdir().unwrap();
/// let pipeline = Pipeline::from_stages(vec![]);
/// pipeline.save(dir.path()).unwrap();
/// assert!(pipeline.save(dir.path()).is_err()); // already there
/// pipeline.write().overwrite().save(dir.path()).unwrap();
/// ```
#[must_use = "a writer saves nothing until .save(dir)"]
pub struct MlWriter<'a> {
    write: WriteFiles<'a>,
    overwrite: bool,
}

/// Writes a saved thing's files into the directory it is given.
type WriteFiles<'a> = Box<dyn Fn(&Path) -> Result<()> + 'a>;

impl<'a> MlWriter<'a> {
    /// A writer of the files `write` puts into the directory it is given.
    pub fn files(write: impl Fn(&Path) -> Result<()> + 'a) -> Self {
        Self {
            write: Box::new(write),
            overwrite: false,
        }
    }

    /// Replaces what the directory holds (Spark's `overwrite()`), in one rename once the new one is written.
    pub fn overwrite(mut self) -> Self {
        self.overwrite = true;
        self
    }

    /// Writes `dir/pipeline.json`, with the data of stages that have any under `dir/stages/`.
    pub fn save(&self, dir: impl AsRef<Path>) -> Result<()> {
        let dir = dir.as_ref();
        if !self.overwrite {
            refuse_existing(dir)?;
        }
        write_dir_whole(dir, |staging| self.write_into(staging))
    }

    /// Writes the files into `dir`, an empty directory that a caller moves into place itself (the model
    /// catalog, whose entries hold more files beside them).
    pub fn write_into(&self, dir: &Path) -> Result<()> {
        (self.write)(dir)
    }
}
