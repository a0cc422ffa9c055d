//! `write().save(path)` and `load(path)` of `pyspark.ml`'s objects in Spark's directory layout, so a model
//! saved here loads in Spark and one Spark saved loads here:
//!
//! ```text
//! path/
//!   metadata/part-00000-<uuid>-c000.txt           {"class":…,"uid":…,"paramMap":{…},"defaultParamMap":{…}}
//!   data/part-00000-<uuid>-c000.snappy.parquet    the fitted state (models only), Spark's schema in its footer
//! ```
//!
//! A `PipelineModel` is saved by the client itself: its metadata through `df.write.text`, then each stage
//! here, in `stages/<index>_<uid>`. Paths are local folders or object stores' URLs (`s3://bucket/models/lr`,
//! see [`Location`]). A save is whole or nothing; an existing destination is replaced only when the client
//! asked to overwrite.

mod columns;
mod data;
mod location;
mod metadata;
pub(crate) mod part_files;

use std::path::Path;
use std::sync::Arc;

use hearth_preprocessing::pipeline::{PipelineStage, rebuild_stage};
use hearth_preprocessing::stage::Transformer;
use serde_json::{Map, Value};
use spark_connect_proto::{MlOperator, MlParams, ml_operator};

use crate::errors::{ConnectError, Result};
use crate::models::literals::json_literal;
use crate::models::{
    SERVED, WORKERS, json_params, literal_json, param_json, served_class, served_evaluator, spark_class, stage,
    stage_json,
};
use data::{TRAINING_RECORD, state_fields};
pub(crate) use location::{LocalFiles, Location};
use metadata::Metadata;

/// The hearth params of its estimators that Spark's classes do not have: left out of the metadata.
const HEARTH_ONLY: &[&str] = &[WORKERS];

/// PySpark's `handleOverwrite(path, overwrite)` before a pipeline saves its stages: removes what `path` holds.
pub(crate) async fn handle_overwrite(path: &Location, overwrite: bool) -> Result<()> {
    if overwrite {
        path.remove().await?;
    }
    Ok(())
}

/// Writes the folder `path` whole with `fill`; an existing one only when `overwrite`.
async fn save_whole(path: &Location, overwrite: bool, fill: impl FnOnce(&Path) -> Result<()>) -> Result<()> {
    if !overwrite && path.exists().await? {
        return Err(ConnectError::IllegalArgument(format!(
            "Path {path} already exists. To overwrite it, please use write().overwrite().save(path) for Python."
        )));
    }
    path.write_whole(fill).await
}

/// The client's params as JSON, by the names it sent.
fn client_params(params: Option<&MlParams>) -> Result<Map<String, Value>> {
    (params.map(|p| &p.params).into_iter().flatten())
        .map(|(key, literal)| Ok((key.clone(), param_json(literal)?)))
        .collect()
}

/// `model.write().save(path)`: Spark's metadata (the client's `params` as the ones set) and data.
pub(crate) async fn save_model(
    model: &dyn Transformer,
    params: Option<&MlParams>,
    path: &Location,
    overwrite: bool,
) -> Result<()> {
    let class = model.class();
    let Value::Object(mut json) = model.params()? else {
        return Err(ConnectError::Execution(format!(
            "hearth's {class} has no params to save"
        )));
    };
    let mut meta = Metadata::new(spark_class(class), model.uid().to_owned(), client_params(params)?);
    let state: Map<String, Value> = (state_fields(class).iter())
        .filter_map(|key| json.remove(*key).map(|v| ((*key).to_owned(), v)))
        .collect();
    let record: Map<String, Value> = (TRAINING_RECORD.iter())
        .filter_map(|key| json.remove(*key).map(|v| ((*key).to_owned(), v)))
        .collect();
    meta.default_param_map = in_effect(json, &meta.param_map);
    meta.hearth = (!record.is_empty()).then_some(record);
    save_whole(path, overwrite, |dir| {
        meta.write(dir)?;
        if data::has_data(class) {
            data::write(dir, class, &state)?;
        }
        Ok(())
    })
    .await
}

/// `estimator.write().save(path)` (or a transformer's, or an evaluator's): Spark's metadata only.
pub(crate) async fn save_operator(
    operator: &MlOperator,
    params: Option<&MlParams>,
    path: &Location,
    overwrite: bool,
) -> Result<()> {
    if is_evaluator(operator) {
        served_evaluator(&operator.name)?;
        let meta = Metadata::new(operator.name.clone(), operator.uid.clone(), client_params(params)?);
        return save_whole(path, overwrite, |dir| meta.write(dir)).await;
    }
    let built = stage(operator, params)?;
    let json = stage_json(&built)?;
    let mut meta = Metadata::new(
        operator.name.clone(),
        built.as_stage().uid().to_owned(),
        client_params(params)?,
    );
    meta.default_param_map = in_effect(json, &meta.param_map);
    save_whole(path, overwrite, |dir| meta.write(dir)).await
}

/// The values in effect of the params the user did not set, by Spark's names: hearth's JSON without its uid,
/// its own extras, and unset lists and columns.
fn in_effect(mut json: Map<String, Value>, set: &Map<String, Value>) -> Map<String, Value> {
    json.remove("uid");
    json.retain(|key, value| {
        let unset =
            matches!(value, Value::Null) || value.as_array().is_some_and(Vec::is_empty) || value.as_str() == Some("");
        !set.contains_key(key) && !HEARTH_ONLY.contains(&key.as_str()) && !unset
    });
    json
}

/// What `load` made: the uid and the params the client sets, and for a model the model itself.
pub(crate) struct Loaded {
    pub uid: String,
    pub params: MlParams,
    pub model: Option<Arc<dyn Transformer>>,
}

/// `Class.load(path)` for the class `operator` names (Spark's or hearth's save of it).
pub(crate) async fn load(operator: &MlOperator, path: &Location) -> Result<Loaded> {
    let files = path.read().await?;
    let dir = files.path();
    let meta = Metadata::read(dir)?;
    let saved = simple_name(&meta.class);
    if saved != simple_name(&operator.name) {
        return Err(ConnectError::IllegalArgument(format!(
            "{path} holds a {}, not a {}",
            meta.class, operator.name
        )));
    }
    let params = json_params(&meta.param_map);
    if is_evaluator(operator) {
        served_evaluator(&operator.name)?;
        return Ok(Loaded {
            uid: meta.uid,
            params,
            model: None,
        });
    }
    if operator.r#type != ml_operator::OperatorType::Model as i32 {
        let op = MlOperator {
            uid: meta.uid.clone(),
            ..operator.clone()
        };
        stage(&op, Some(&params))?;
        return Ok(Loaded {
            uid: meta.uid,
            params,
            model: None,
        });
    }
    let model = load_model(saved, dir, &meta, path)?;
    Ok(Loaded {
        uid: meta.uid,
        params,
        model: Some(model),
    })
}

fn is_evaluator(operator: &MlOperator) -> bool {
    operator.r#type == ml_operator::OperatorType::Evaluator as i32
}

fn simple_name(class: &str) -> &str {
    class.rsplit('.').next().unwrap_or(class)
}

/// The estimator class whose model is `model_class`.
fn estimator_of(model_class: &str) -> Option<&'static str> {
    SERVED.iter().copied().find(|estimator| {
        model_class == format!("{estimator}Model")
            || (*estimator == "MultilayerPerceptronClassifier"
                && model_class == "MultilayerPerceptronClassificationModel")
    })
}

/// A model of `class` from its metadata and `dir/data/`, the files of `path`.
fn load_model(class: &str, dir: &Path, meta: &Metadata, path: &Location) -> Result<Arc<dyn Transformer>> {
    let estimator = estimator_of(class).ok_or_else(|| {
        ConnectError::Unsupported(format!(
            "the pyspark.ml model {} (hearth serves {}' models)",
            meta.class,
            SERVED.join(", ")
        ))
    })?;
    let known = stage_json(&served_stage(estimator)?)?;
    let mut json = Map::new();
    for params in [&meta.default_param_map, &meta.param_map] {
        for (key, value) in params {
            let value = &stage_value(value);
            let plural = format!("{key}s");
            if !known.contains_key(key) && known.contains_key(&plural) {
                json.insert(plural, Value::Array(vec![value.clone()]));
            } else {
                json.insert(key.clone(), value.clone());
            }
        }
    }
    json.extend(meta.hearth.clone().unwrap_or_default());
    if data::has_data(class) {
        json.extend(data::read(dir, class)?);
    }
    json.insert("uid".into(), Value::String(meta.uid.clone()));
    match rebuild_stage(class, Value::Object(json), dir) {
        Ok(PipelineStage::Transformer(model)) => Ok(model),
        Ok(PipelineStage::Estimator(_)) => Err(ConnectError::IllegalArgument(format!("{} is not a model", meta.class))),
        Err(e) => Err(ConnectError::IllegalArgument(format!(
            "{path} does not hold a {} hearth can read: {e}",
            meta.class
        ))),
    }
}

/// A param of the metadata as a stage reads it: vectors as their values (a client's literal would give the
/// same), the rest as it is.
fn stage_value(value: &Value) -> Value {
    (json_literal(value).and_then(|literal| literal_json(&literal).ok())).unwrap_or_else(|| value.clone())
}

fn served_stage(estimator: &str) -> Result<PipelineStage> {
    served_class(estimator)?;
    rebuild_stage(estimator, Value::Object(Map::new()), Path::new(""))
        .map_err(|e| ConnectError::IllegalArgument(format!("{estimator}: {e}")))
}
