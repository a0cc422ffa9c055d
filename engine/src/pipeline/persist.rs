//! Saving and loading pipelines: a versioned, readable `pipeline.json` holding each stage as
//! `{"class": …, …params}`, the data of stages that have any (a trained network) in `stages/<index>_<uid>/`,
//! and the registry of stage classes that loading looks classes up in.
//!
//! ```text
//! model/
//!   pipeline.json                      {"format": "PipelineModel", "version": 1, "uid": …, "stages": [{"class": …}, …]}
//!   stages/5_MlpClassifier_0a1b2c3d4e5f/
//!     model.safetensors  model.json  training.json
//! ```

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{LazyLock, RwLock};

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::stage::PipelineStage;
use super::{Pipeline, PipelineModel};
use crate::clustering::{KMeans, KMeansModel};
use crate::error::{HearthError, Result};
use crate::feature::{
    OneHotEncoder, OneHotEncoderModel, SqlColumns, StandardScaler, StandardScalerModel, StringIndexer,
    StringIndexerModel, VectorAssembler,
};
use crate::stage::{Estimator, Stage, Transformer};
use crate::train::{
    ClassificationModel, LinearClassifier, LinearRegressor, MlpClassifier, MlpRegressor, RegressionModel,
    SequentialClassifier, SequentialRegressor,
};

/// The version of the JSON layout this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;

/// The file a saved pipeline or pipeline model keeps in its directory.
pub const PIPELINE_FILE: &str = "pipeline.json";

/// The folder of a saved pipeline that holds its stages' data.
const STAGES_DIR: &str = "stages";

/// Rebuilds a stage from its entry in `pipeline.json` (without `"class"`) and its data directory (which
/// exists only for a stage that saved data).
pub type StageLoader = fn(Value, &Path) -> Result<PipelineStage>;

/// Loads an estimator whose serde form is its parameters.
pub fn load_serde_estimator<E: Estimator + DeserializeOwned>(params: Value, dir: &Path) -> Result<PipelineStage> {
    Ok(PipelineStage::estimator(from_params::<E>(params, dir)?))
}

/// Loads a transformer whose serde form is its parameters.
pub fn load_serde_transformer<T: Transformer + DeserializeOwned>(params: Value, dir: &Path) -> Result<PipelineStage> {
    Ok(PipelineStage::transformer(from_params::<T>(params, dir)?))
}

fn from_params<T: DeserializeOwned>(params: Value, dir: &Path) -> Result<T> {
    serde_json::from_value(params).map_err(|e| failed(dir, e))
}

fn failed(path: &Path, message: impl ToString) -> HearthError {
    HearthError::Persistence {
        path: path.to_path_buf(),
        message: message.to_string(),
    }
}

static CLASSES: LazyLock<RwLock<HashMap<String, StageLoader>>> = LazyLock::new(|| {
    let builtin: [(&str, StageLoader); 20] = [
        ("StringIndexer", load_serde_estimator::<StringIndexer>),
        ("StringIndexerModel", load_serde_transformer::<StringIndexerModel>),
        ("OneHotEncoder", load_serde_estimator::<OneHotEncoder>),
        ("OneHotEncoderModel", load_serde_transformer::<OneHotEncoderModel>),
        ("StandardScaler", load_serde_estimator::<StandardScaler>),
        ("StandardScalerModel", load_serde_transformer::<StandardScalerModel>),
        ("VectorAssembler", load_serde_transformer::<VectorAssembler>),
        ("KMeans", load_serde_estimator::<KMeans>),
        ("KMeansModel", |params, dir| {
            let model = from_params::<KMeansModel>(params, dir)?;
            Ok(PipelineStage::transformer(model.checked().map_err(|e| failed(dir, e))?))
        }),
        ("SqlColumns", load_serde_transformer::<SqlColumns>),
        ("MlpClassifier", load_serde_estimator::<MlpClassifier>),
        ("LinearClassifier", load_serde_estimator::<LinearClassifier>),
        ("SequentialClassifier", load_serde_estimator::<SequentialClassifier>),
        ("MlpRegressor", load_serde_estimator::<MlpRegressor>),
        ("LinearRegressor", load_serde_estimator::<LinearRegressor>),
        ("SequentialRegressor", load_serde_estimator::<SequentialRegressor>),
        ("ClassificationModel", |params, dir| {
            Ok(PipelineStage::transformer(ClassificationModel::load_stage(
                params, dir,
            )?))
        }),
        ("RegressionModel", |params, dir| {
            Ok(PipelineStage::transformer(RegressionModel::load_stage(params, dir)?))
        }),
        ("Pipeline", |params, dir| Ok(Pipeline::from_entry(params, dir)?.into())),
        ("PipelineModel", |params, dir| {
            Ok(PipelineModel::from_entry(params, dir)?.into())
        }),
    ];
    RwLock::new(
        builtin
            .into_iter()
            .map(|(class, load)| (class.to_string(), load))
            .collect(),
    )
});

/// Makes saved stages of `class` loadable (a stage type of your own); replaces a loader of the same class.
///
/// ```
/// use hearth_engine::feature::VectorAssembler;
/// use hearth_engine::pipeline::{load_serde_transformer, register_stage_class};
/// register_stage_class("MyAssembler", load_serde_transformer::<VectorAssembler>);
/// ```
pub fn register_stage_class(class: &str, loader: StageLoader) {
    let mut classes = CLASSES.write().unwrap_or_else(|poisoned| poisoned.into_inner());
    classes.insert(class.to_string(), loader);
}

fn loader(class: &str) -> std::result::Result<StageLoader, String> {
    let classes = CLASSES.read().unwrap_or_else(|poisoned| poisoned.into_inner());
    classes.get(class).copied().ok_or_else(|| {
        let mut known: Vec<&str> = classes.keys().map(String::as_str).collect();
        known.sort_unstable();
        format!("unknown class {class:?} (known: {})", known.join(", "))
    })
}

/// A stage of `class` rebuilt from its saved parameters (and its data directory `dir`, for a stage with data).
pub(crate) fn rebuild_stage(class: &str, params: Value, dir: &Path) -> Result<PipelineStage> {
    let load = loader(class).map_err(|message| HearthError::InvalidParam {
        stage: class.to_string(),
        param: "class",
        message,
    })?;
    load(params, dir)
}

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
                    return Err(HearthError::InvalidParam {
                        stage: stage.uid().to_string(),
                        param: "params",
                        message: format!("must be a JSON object, got {other}"),
                    });
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
                fs::remove_dir_all(&data).map_err(|e| failed(&data, format!("cannot replace it: {e}")))?;
            }
            fs::create_dir_all(&data).map_err(|e| failed(&data, format!("cannot create it: {e}")))?;
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
            let at = |message: String| failed(file, format!("stage {index}: {message}"));
            let Value::Object(mut params) = entry else {
                return Err(at(format!("expected an object, got {entry}")));
            };
            let Some(Value::String(class)) = params.remove("class") else {
                return Err(at("no \"class\" naming its type".to_string()));
            };
            let uid = params
                .get("uid")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let load = loader(&class).map_err(at)?;
            load(Value::Object(params), &data_dir(dir, index, &uid)).map_err(|e| at(format!("{class}: {e}")))
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
/// assert!(hearth_engine::pipeline::refuse_existing(dir.path()).is_ok()); // empty
/// std::fs::write(dir.path().join("pipeline.json"), "{}").unwrap();
/// assert!(hearth_engine::pipeline::refuse_existing(dir.path()).is_err());
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
    let json = serde_json::to_string_pretty(&Value::Object(document)).map_err(|e| failed(dir, e))?;
    save_stage_data(dir, stages)?;
    let file = dir.join(PIPELINE_FILE);
    fs::write(&file, json + "\n").map_err(|e| failed(&file, e))
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
    let text = fs::read_to_string(&file).map_err(|e| failed(&file, e))?;
    let header: Value = serde_json::from_str(&text).map_err(|e| failed(&file, format!("not JSON: {e}")))?;
    let found = header.get("format").and_then(Value::as_str).unwrap_or("");
    if found != format {
        return Err(failed(&file, format!("holds a {found:?}, expected a {format:?}")));
    }
    let version = header.get("version").and_then(Value::as_u64).unwrap_or(0);
    if version != u64::from(FORMAT_VERSION) {
        return Err(failed(
            &file,
            format!("format version {version}; this build reads version {FORMAT_VERSION}"),
        ));
    }
    let document = serde_json::from_value(header).map_err(|e| failed(&file, e))?;
    Ok((document, dir, file))
}
