//! Writing a data frame out as Spark's `DataFrameWriter` does: a directory of part files — Parquet, CSV or
//! JSON — with a `_SUCCESS` marker, under Spark's save modes (`error`, `overwrite`, `append`, `ignore`).
//!
//! The files are written into a hidden sibling of the destination, synced, and renamed into place, so a
//! reader never sees half a job and a failed job leaves nothing behind: the destination appears whole (a new
//! directory, or an old one replaced in one step: `hearth_common::files`), or, when appending, the new part
//! files appear all at once (`hearth_common::appending`). Vector columns are Parquet lists of floats and JSON arrays; CSV has no list type, so a vector
//! column `v` of `n` slots is written as `n` number columns `v_0` … `v_{n-1}`.
//!
//! On a `local[N]` session Parquet is written as Spark writes it, one part file per partition, each by its
//! partition's own task (`parquet_parts`); CSV and JSON there are DataFusion's writers. On a fleet each task
//! writes its partition's file into the write's staging directory, which must be one every executor and the
//! driver see, and the driver keeps the files of the tasks that succeeded (`to_shared_dir`); a fleet whose
//! executors wrote where the driver does not see is an error, not an empty output. Every part file is named
//! as Spark names it (`part-00000-<write id>.snappy.parquet`, `part_names`).
//!
//! A destination in an object store (`s3://bucket/out`, `gs://…`, `az://…`) is written on every master by
//! the tasks themselves, each partition straight to the store, and committed by the driver (`to_store`).
//!
//! ```
//! # tokio::runtime::Builder::new_multi_thread().build().unwrap().block_on(async {
//! use hearth_exec::session::Session;
//! use hearth_exec::write::{FrameWriter, OutputFormat, SaveMode};
//!
//! let session = Session::builder().local(2);
//! let df = session.context().sql("SELECT 1 AS id, 2.5 AS x").await.unwrap();
//! let out = std::env::temp_dir().join(format!("hearth-write-example-{}", std::process::id()));
//! let written = FrameWriter::new(OutputFormat::Parquet).save(df.clone(), &out).await.unwrap();
//! assert_eq!(written.rows, 1);
//! assert!(out.join("_SUCCESS").exists());
//! // A second write to the same place must say what it should do there.
//! assert!(FrameWriter::new(OutputFormat::Parquet).save(df.clone(), &out).await.is_err());
//! let appended = FrameWriter::new(OutputFormat::Parquet).mode(SaveMode::Append).save(df, &out).await.unwrap();
//! assert_eq!(appended.files.len(), 1);
//! # std::fs::remove_dir_all(&out).unwrap();
//! # });
//! ```

use std::fmt;
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::str::FromStr;

use datafusion::arrow::array::{Array, UInt64Array};
use datafusion::common::config::TableParquetOptions;
use datafusion::dataframe::DataFrameWriteOptions;
use datafusion::functions_nested::expr_fn::array_element;
use datafusion::prelude::{DataFrame, Expr, col, lit};
use hearth_common::appending::{append_whole, take_turn};
use hearth_common::files::{StagingDir, move_into_place, parent_of, sibling, sweep_leftovers, sync};

use crate::error::{HearthError, Result};
use crate::master::{Master, SessionInfo};
use crate::object_stores;
use crate::vector::vector_dim;

mod parquet_parts;
mod part_file;
mod part_names;
mod task_files;
mod to_shared_dir;
mod to_store;
mod vector_chunk;
mod writeback;

pub use task_files::{PartWriterExec, PartWriterSpec};

/// The files a write produces, as Spark names them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OutputFormat {
    /// Apache Parquet, compressed with snappy unless [`FrameWriter::compression`] says otherwise.
    #[default]
    Parquet,
    /// CSV with a header; vector columns become one number column a slot.
    Csv,
    /// Newline-delimited JSON, one object a row; vectors are arrays.
    Json,
}

impl OutputFormat {
    /// The extension of its part files.
    pub fn extension(self) -> &'static str {
        match self {
            Self::Parquet => "parquet",
            Self::Csv => "csv",
            Self::Json => "json",
        }
    }
}

impl FromStr for OutputFormat {
    type Err = String;

    fn from_str(name: &str) -> std::result::Result<Self, String> {
        match name.to_ascii_lowercase().as_str() {
            "parquet" => Ok(Self::Parquet),
            "csv" => Ok(Self::Csv),
            "json" | "ndjson" => Ok(Self::Json),
            _ => Err(format!("unknown output format {name:?}: use parquet, csv or json")),
        }
    }
}

impl fmt::Display for OutputFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.extension())
    }
}

/// What a write does where its destination exists already: Spark's `DataFrameWriter.mode`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SaveMode {
    /// Fail, saying so (Spark's default, `error` / `errorifexists`).
    #[default]
    ErrorIfExists,
    /// Replace it, in one rename once the new files are complete.
    Overwrite,
    /// Add the new part files to it.
    Append,
    /// Leave it as it is and write nothing.
    Ignore,
}

impl FromStr for SaveMode {
    type Err = String;

    fn from_str(name: &str) -> std::result::Result<Self, String> {
        match name.to_ascii_lowercase().as_str() {
            "error" | "errorifexists" => Ok(Self::ErrorIfExists),
            "overwrite" => Ok(Self::Overwrite),
            "append" => Ok(Self::Append),
            "ignore" => Ok(Self::Ignore),
            _ => Err(format!(
                "unknown save mode {name:?}: use error, overwrite, append or ignore"
            )),
        }
    }
}

/// Writes data frames to a directory (see the [module](self) example).
#[derive(Clone, Debug)]
pub struct FrameWriter {
    format: OutputFormat,
    mode: SaveMode,
    compression: String,
}

/// What a write left.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Written {
    /// The rows written (0 when [`SaveMode::Ignore`] found the destination).
    pub rows: u64,
    /// The part files this write added, in the destination.
    pub files: Vec<PathBuf>,
    /// Their bytes.
    pub bytes: u64,
    /// Whether the destination existed and [`SaveMode::Ignore`] left it alone.
    pub ignored: bool,
}

/// The marker a complete output directory holds, as Spark's jobs leave it.
pub const SUCCESS_FILE: &str = "_SUCCESS";

impl FrameWriter {
    /// A writer of `format` files that refuses to touch an existing destination.
    pub fn new(format: OutputFormat) -> Self {
        Self {
            format,
            mode: SaveMode::default(),
            compression: "snappy".to_string(),
        }
    }

    /// What to do where the destination exists.
    pub fn mode(mut self, mode: SaveMode) -> Self {
        self.mode = mode;
        self
    }

    /// The Parquet codec: `snappy` (Spark's default, and this writer's), `zstd(LEVEL)`, `lz4_raw`, `gzip(LEVEL)`
    /// or `uncompressed`. Other formats are written uncompressed.
    pub fn compression(mut self, codec: impl Into<String>) -> Self {
        self.compression = codec.into();
        self
    }

    /// Writes `df`'s rows as part files of a directory at `path` (see the [module](self) docs).
    pub async fn save(&self, df: DataFrame, path: impl AsRef<Path>) -> Result<Written> {
        let dest = path.as_ref();
        if let Some(url) = dest.to_str().filter(|location| object_stores::is_remote(location)) {
            return to_store::save(self, df, url).await;
        }
        // A `file://` URL names a local directory.
        let named;
        let dest = match dest.to_str().filter(|location| location.starts_with("file://")) {
            Some(location) => {
                named = url::Url::parse(location)
                    .ok()
                    .and_then(|url| url.to_file_path().ok())
                    .ok_or_else(|| HearthError::persistence(dest, "not a file URL of a local directory"))?;
                named.as_path()
            }
            None => dest,
        };
        let exists = fs::symlink_metadata(dest).is_ok();
        if let Some(decided) = self.where_it_exists(exists, dest) {
            return decided;
        }
        match (exists, self.mode) {
            (true, SaveMode::Append) if !dest.is_dir() => {
                return Err(HearthError::persistence(
                    dest,
                    "is not a directory, so rows cannot be appended to it",
                ));
            }
            _ => {}
        }
        // Rows appended through a link go into the directory it names, which keeps its place.
        let resolved;
        let dest = match (exists, self.mode) {
            (true, SaveMode::Append) => {
                resolved = fs::canonicalize(dest)
                    .map_err(|e| HearthError::persistence(dest, "finding the directory it names").caused_by(e))?;
                resolved.as_path()
            }
            _ => dest,
        };
        let parent = parent_of(dest);
        fs::create_dir_all(&parent)
            .map_err(|e| HearthError::persistence(dest, "creating its directory").caused_by(e))?;
        let staging = Staging::new(&parent, dest)?;
        let rows = self
            .write_files(df, staging.dir.path())
            .await
            .map_err(|e| HearthError::persistence(dest, "writing the rows").caused_by(e))?;
        let staged = part_files(staging.dir.path())
            .map_err(|e| HearthError::persistence(dest, "listing the written files").caused_by(e))?;
        for file in &staged {
            sync(file)
                .map_err(|e| HearthError::persistence(dest, format!("syncing {}", file.display())).caused_by(e))?;
        }
        let bytes = staged
            .iter()
            .map(|file| fs::metadata(file).map_or(0, |m| m.len()))
            .sum();
        let files = if exists && self.mode == SaveMode::Append {
            staging.append_into(dest, &staged)?
        } else {
            staging.commit(dest, &staged, exists)?
        };
        sync(&parent).map_err(|e| HearthError::persistence(dest, "syncing its directory").caused_by(e))?;
        Ok(Written {
            rows,
            files,
            bytes,
            ignored: false,
        })
    }

    /// What the save mode makes of a destination that `exists`: an error (`error`), nothing written
    /// (`ignore`), or `None` — go on and write.
    fn where_it_exists(&self, exists: bool, dest: impl AsRef<Path>) -> Option<Result<Written>> {
        match (exists, self.mode) {
            (true, SaveMode::ErrorIfExists) => Some(Err(HearthError::persistence(
                dest.as_ref(),
                "already exists: mode overwrite replaces it, append adds to it, ignore leaves it",
            ))),
            (true, SaveMode::Ignore) => Some(Ok(Written {
                ignored: true,
                ..Written::default()
            })),
            _ => None,
        }
    }

    /// Runs the write into `dir`, returning the rows written.
    async fn write_files(&self, df: DataFrame, dir: &Path) -> datafusion::error::Result<u64> {
        let local = matches!(SessionInfo::of(&df).master(), Master::Local { .. });
        if self.format == OutputFormat::Parquet && local {
            let rows = parquet_parts::write(df, dir, &self.compression).await?;
            return mark_success(dir, rows);
        }
        if !local {
            let df = match self.format {
                OutputFormat::Csv => csv_columns(df)?,
                _ => df,
            };
            let rows = to_shared_dir::write(self, df, dir).await?;
            return mark_success(dir, rows);
        }
        let location = format!("{}/", dir.display());
        let options = DataFrameWriteOptions::new().with_single_file_output(false);
        let (counts, suffix) = match self.format {
            OutputFormat::Parquet => {
                let mut parquet = TableParquetOptions::default();
                parquet.global.compression = Some(self.compression.clone());
                let suffix = part_names::parquet_suffix(&self.compression);
                (df.write_parquet(&location, options, Some(parquet)).await?, suffix)
            }
            OutputFormat::Csv => (
                csv_columns(df)?.write_csv(&location, options, None).await?,
                ".csv".into(),
            ),
            OutputFormat::Json => (df.write_json(&location, options, None).await?, ".json".into()),
        };
        let files = part_names::rename_parts(dir, &suffix).map_err(|e| {
            datafusion::error::DataFusionError::Execution(format!("naming the part files in {}: {e}", dir.display()))
        })?;
        let mut rows = 0;
        for batch in &counts {
            if let Some(count) = batch.column(0).as_any().downcast_ref::<UInt64Array>() {
                rows += (0..count.len()).map(|i| count.value(i)).sum::<u64>();
            }
        }
        log::debug!("wrote {rows} rows in {files} files to {}", dir.display());
        mark_success(dir, rows)
    }
}

/// Leaves the `_SUCCESS` marker in `dir`; returns `rows`.
fn mark_success(dir: &Path, rows: u64) -> datafusion::error::Result<u64> {
    let marker = dir.join(SUCCESS_FILE);
    File::create(&marker)
        .map_err(|e| datafusion::error::DataFusionError::Execution(format!("writing {}: {e}", marker.display())))?;
    Ok(rows)
}

/// `df` with each vector column `v` of `n` slots replaced by the number columns `v_0` … `v_{n-1}`.
fn csv_columns(df: DataFrame) -> datafusion::error::Result<DataFrame> {
    let mut columns: Vec<Expr> = Vec::new();
    let mut widened = false;
    for field in df.schema().fields() {
        let name = field.name();
        match vector_dim(field.data_type()) {
            Some(dim) => {
                widened = true;
                for slot in 0..dim {
                    let element = array_element(col(format!("\"{name}\"")), lit(slot as i64 + 1));
                    columns.push(element.alias(format!("{name}_{slot}")));
                }
            }
            None => columns.push(col(format!("\"{name}\""))),
        }
    }
    if widened { df.select(columns) } else { Ok(df) }
}

/// The files of a written directory, the `_SUCCESS` marker last.
fn part_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)?
        .map(|entry| entry.map(|e| e.path()))
        .collect::<std::io::Result<_>>()?;
    files.sort_by_key(|file| (file.file_name() == Some(SUCCESS_FILE.as_ref()), file.clone()));
    Ok(files)
}

/// Where the part files of `staged` are once moved into `dest`.
fn placed(dest: &Path, staged: &[PathBuf]) -> Vec<PathBuf> {
    staged
        .iter()
        .filter_map(|file| file.file_name())
        .filter(|name| *name != SUCCESS_FILE)
        .map(|name| dest.join(name))
        .collect()
}

/// A hidden sibling of the destination that the files are written into; removed unless committed.
struct Staging {
    dir: StagingDir,
    dest: PathBuf,
}

impl Staging {
    fn new(parent: &Path, dest: &Path) -> Result<Self> {
        sweep_leftovers(parent, dest);
        let dir = StagingDir::new(parent, dest).map_err(|e| {
            HearthError::persistence(dest, "creating the directory the output is written in first").caused_by(e)
        })?;
        Ok(Self {
            dir,
            dest: dest.to_path_buf(),
        })
    }

    /// Renames the staged directory to the destination, replacing what was there when `replace`; returns
    /// the part files of `staged` at their new place.
    fn commit(self, dest: &Path, staged: &[PathBuf], replace: bool) -> Result<Vec<PathBuf>> {
        let parent = self.dir.path().parent().unwrap_or(Path::new("."));
        let aside = replace.then(|| sibling(parent, dest, "replaced"));
        // Not while an append builds on what is there.
        let _turn = (aside.is_some().then(|| take_turn(dest)).transpose())
            .map_err(|e| HearthError::persistence(&self.dest, "replacing it").caused_by(e))?;
        move_into_place(self.dir.path(), dest, aside.as_deref())
            .map_err(|e| HearthError::persistence(&self.dest, "moving the written files into place").caused_by(e))?;
        Ok(placed(dest, staged))
    }

    /// Adds the staged part files to the existing directory `dest` in one step
    /// ([`append_whole`]: the staged directory, given links to `dest`'s files, takes its place); returns the
    /// new part files at their place.
    fn append_into(self, dest: &Path, staged: &[PathBuf]) -> Result<Vec<PathBuf>> {
        append_whole(&self.dir, dest, &[SUCCESS_FILE])
            .map_err(|e| HearthError::persistence(&self.dest, "appending the rows").caused_by(e))?;
        Ok(placed(dest, staged))
    }
}
