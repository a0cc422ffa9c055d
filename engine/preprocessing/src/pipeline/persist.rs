//! Saving and loading pipelines: a versioned, readable `pipeline.json` holding each stage as
//! `{"class": …, …params}`, and the data of stages that have any (a trained network) in `stages/<index>_<uid>/`.
//!
//! ```text
//! model/
//!   pipeline.json                      {"format": "PipelineModel", "version": 1, "uid": …, "stages": [{"class": …}, …]}
//!   stages/5_MlpClassifier_0a1b2c3d4e5f/
//!     model.safetensors  model.json  training.json
//! ```

use std::fs;
use std::path::{Path, PathBuf};

use hearth_exec::error::{HearthError, Result};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::classes::{loader, unknown_class};
use super::stage::PipelineStage;
use crate::stage::Stage;

/// The version of the JSON layout this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;

/// The file a saved pipeline or pipeline model keeps in its directory.
pub const PIPELINE_FILE: &str = "pipeline.json";

/// The folder of a saved pipeline that holds its stages' data.
const STAGES_DIR: &str = "stages";

/// Where the data of stage `index` of a pipeline saved in `dir` lives.
fn data_dir(dir: &Path, index: usize, uid: &str) -> PathBuf {
    let name: String = uid
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    dir.join(STAGES_DIR).join(format!("{index}_{name}"))
}

/// The `pipeline.json` entries of `stages`: each stage's class, then its parameters.
pub(crate) fn stage_entries<'a>(stages: impl Iterator<Item = &'a dyn Stage>) -> Result<Vec<Value>> {
    stages
        .map(|stage| {
            let mut entry = Map::new();
            entry.insert("class".to_string(), stage.class().into());
            match stage.params()? {
                Value::Object(params) => entry.extend(params),
                other => {
                    return Err(HearthError::invalid_param(
                        stage.uid(),
                        "params",
                        format!("must be a JSON object, got {other}"),
                    ));
                }
            }
            Ok(Value::Object(entry))
        })
        .collect()
}

/// Writes the data of the `stages` that have any under `dir/stages/`.
pub(crate) fn save_stage_data<'a>(dir: &Path, stages: impl Iterator<Item = &'a dyn Stage>) -> Result<()> {
    for (index, stage) in stages.enumerate() {
        if stage.has_data() {
            let data = data_dir(dir, index, stage.uid());
            if data.exists() {
                fs::remove_dir_all(&data)
                    .map_err(|e| HearthError::persistence(&data, "cannot replace it").caused_by(e))?;
            }
            fs::create_dir_all(&data).map_err(|e| HearthError::persistence(&data, "cannot create it").caused_by(e))?;
            stage.save_data(&data)?;
        }
    }
    Ok(())
}

/// Rebuilds stages from their `pipeline.json` entries; `dir` holds their data.
pub(crate) fn load_entries(entries: Vec<Value>, dir: &Path, file: &Path) -> Result<Vec<PipelineStage>> {
    entries
        .into_iter()
        .enumerate()
        .map(|(index, entry)| {
            let Value::Object(mut params) = entry else {
                return Err(HearthError::persistence(
                    file,
                    format!("stage {index}: expected an object, got {entry}"),
                ));
            };
            let Some(Value::String(class)) = params.remove("class") else {
                return Err(HearthError::persistence(
                    file,
                    format!("stage {index}: no \"class\" naming its type"),
                ));
            };
            let uid = params
                .get("uid")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let load = loader(&class)
                .ok_or_else(|| HearthError::persistence(file, format!("stage {index}: {}", unknown_class(&class))))?;
            load(Value::Object(params), &data_dir(dir, index, &uid))
                .map_err(|e| HearthError::persistence(file, format!("stage {index}: {class}")).caused_by(e))
        })
        .collect()
}

/// The JSON document of a saved pipeline or pipeline model.
#[derive(Deserialize)]
pub(crate) struct Document {
    pub uid: String,
    #[serde(default)]
    pub cache_input: Option<bool>,
    pub stages: Vec<Value>,
}

/// Refuses to save into `dir` when it holds anything — a file, or a directory that is not empty — as Spark's
/// `MLWriter.save` does without `overwrite()`.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// assert!(hearth_preprocessing::pipeline::refuse_existing(dir.path()).is_ok()); // empty
/// std::fs::write(dir.path().join("pipeline.json"), "{}").unwrap();
/// assert!(hearth_preprocessing::pipeline::refuse_existing(dir.path()).is_err());
/// ```
pub fn refuse_existing(dir: &Path) -> Result<()> {
    Ok(hearth_common::files::refuse_occupied(
        dir,
        "replace it with .write().overwrite().save(dir)",
    )?)
}

/// Writes `dir/pipeline.json` (and the stages' data) for a document of `format` into the empty directory
/// `dir` (a staging directory: [`MlWriter`](super::MlWriter) moves it into place).
pub(crate) fn write_document<'a>(
    dir: &Path,
    format: &str,
    uid: &str,
    cache_input: Option<bool>,
    stages: impl Iterator<Item = &'a dyn Stage> + Clone,
) -> Result<()> {
    let mut document = Map::new();
    document.insert("format".to_string(), format.into());
    document.insert("version".to_string(), FORMAT_VERSION.into());
    document.insert("uid".to_string(), uid.into());
    if let Some(cache) = cache_input {
        document.insert("cache_input".to_string(), cache.into());
    }
    document.insert("stages".to_string(), Value::Array(stage_entries(stages.clone())?));
    let json = serde_json::to_string_pretty(&Value::Object(document))
        .map_err(|e| HearthError::persistence(dir, "cannot write the pipeline as JSON").caused_by(e))?;
    save_stage_data(dir, stages)?;
    let file = dir.join(PIPELINE_FILE);
    fs::write(&file, json + "\n").map_err(|e| HearthError::persistence(&file, "cannot write it").caused_by(e))
}

/// Reads the document of `format` at `path` (a directory or the JSON file itself); returns it with the
/// directory holding the stages' data.
pub(crate) fn read_document(path: &Path, format: &str) -> Result<(Document, PathBuf, PathBuf)> {
    let file = if path.is_dir() {
        path.join(PIPELINE_FILE)
    } else {
        path.to_path_buf()
    };
    let dir = file.parent().map(Path::to_path_buf).unwrap_or_default();
    let text = fs::read_to_string(&file).map_err(|e| HearthError::persistence(&file, "cannot read it").caused_by(e))?;
    let header: Value =
        serde_json::from_str(&text).map_err(|e| HearthError::persistence(&file, "not JSON").caused_by(e))?;
    let found = header.get("format").and_then(Value::as_str).unwrap_or("");
    if found != format {
        return Err(HearthError::persistence(
            &file,
            format!("holds a {found:?}, expected a {format:?}"),
        ));
    }
    let version = header.get("version").and_then(Value::as_u64).unwrap_or(0);
    if version != u64::from(FORMAT_VERSION) {
        return Err(HearthError::persistence(
            &file,
            format!("format version {version}; this build reads version {FORMAT_VERSION}"),
        ));
    }
    let document =
        serde_json::from_value(header).map_err(|e| HearthError::persistence(&file, "unreadable").caused_by(e))?;
    Ok((document, dir, file))
}
