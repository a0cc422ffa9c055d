//! A fleet's write into a local directory: the directory must be one every executor and the driver see (an
//! NFS mount). Each task writes its partition's file into the write's staging directory itself
//! ([`PartWriterExec`], through the executor's local file system), and the driver names the files its
//! successful tasks reported as Spark names them and removes any other (a failed attempt's) before the
//! staging directory is committed as on every master. A task file the driver cannot find — an executor that
//! wrote to a disk of its own — fails the write, naming the rule.

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::error::{DataFusionError, Result};
use datafusion::prelude::DataFrame;
use url::Url;

use super::FrameWriter;
use super::part_names::{part_name, write_id};
use super::task_files::{FileWriter, PartWriterExec, PartWriterSpec, staged_files};
use crate::physical_stage::run_over;

/// Writes `df`'s partitions into `dir`, the staging directory of a write to a shared directory, as Spark's
/// part files; returns the rows written.
pub(super) async fn write(writer: &FrameWriter, df: DataFrame, dir: &Path) -> Result<u64> {
    let failed =
        |what: &str, e: &dyn std::fmt::Display| DataFusionError::Execution(format!("{what} {}: {e}", dir.display()));
    let absolute = std::path::absolute(dir).map_err(|e| failed("locating", &e))?;
    let staging = Url::from_directory_path(&absolute).map_err(|()| failed("naming as a URL", &"not absolute"))?;
    let spec = PartWriterSpec {
        staging: staging.to_string(),
        format: writer.format.extension().to_string(),
        compression: writer.compression.clone(),
    };
    let schema = Arc::new(df.schema().as_arrow().clone());
    let reports = run_over(df, |input| Ok(Arc::new(PartWriterExec::try_new(input, spec.clone())?)))
        .await
        .map_err(DataFusionError::from)?;
    let staged = staged_files(&reports)?;
    let (id, suffix) = (write_id(), spec.suffix()?);
    let files: Vec<_> = staged.iter().filter(|file| !file.name.is_empty()).collect();
    let rows = staged.iter().map(|file| file.rows).sum();
    for file in &files {
        if !dir.join(&file.name).is_file() {
            return Err(DataFusionError::Execution(format!(
                "{rows} rows were written to {} where this process does not see them: on a fleet, write to a \
                 directory every executor and the driver share, or to an object store",
                dir.display()
            )));
        }
    }
    // What no successful task reported (a failed attempt's file, a store's half-written one) goes.
    for entry in fs::read_dir(dir).map_err(|e| failed("listing", &e))?.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !files.iter().any(|file| file.name == name) {
            fs::remove_file(entry.path()).map_err(|e| failed(&format!("removing {name} from"), &e))?;
        }
    }
    for (part, file) in files.iter().enumerate() {
        fs::rename(dir.join(&file.name), dir.join(part_name(part, &id, &suffix)))
            .map_err(|e| failed(&format!("naming {} in", file.name), &e))?;
    }
    if files.is_empty() {
        // No partition had a row: one empty file keeps the columns.
        let path = dir.join(part_name(0, &id, &suffix));
        let sink = BufWriter::new(File::create(&path).map_err(|e| failed("writing an empty part file in", &e))?);
        let mut file = FileWriter::try_new(&spec, sink, Arc::clone(&schema))?;
        file.write(&RecordBatch::new_empty(schema))?;
        file.finish()?.flush()?;
    }
    Ok(rows)
}
