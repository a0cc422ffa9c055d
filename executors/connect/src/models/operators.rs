//! `pyspark.ml`'s classes as hearth's stages: Spark's class name (`org.apache.spark.ml.feature.StringIndexer`)
//! and the params the user set make the hearth stage of the same name, with Spark's defaults for the rest.

use std::path::Path;
use std::sync::Arc;

use hearth_preprocessing::pipeline::{PipelineStage, rebuild_stage};
use hearth_preprocessing::stage::Transformer;
use serde_json::{Map, Value};
use spark_connect_proto::{MlOperator, MlParams};

use crate::errors::{ConnectError, Result};
use crate::models::params::stage_params;

/// The `pyspark.ml` estimators and transformers hearth serves.
pub(crate) const SERVED: &[&str] = &[
    "StringIndexer",
    "OneHotEncoder",
    "VectorAssembler",
    "StandardScaler",
    "LogisticRegression",
    "LinearRegression",
    "MultilayerPerceptronClassifier",
    "KMeans",
];

/// The evaluators hearth serves.
pub(crate) const SERVED_EVALUATORS: &[&str] = &[
    "MulticlassClassificationEvaluator",
    "BinaryClassificationEvaluator",
    "RegressionEvaluator",
];

/// The simple class name of a Spark evaluator class name, when hearth serves it.
pub(crate) fn served_evaluator(name: &str) -> Result<&'static str> {
    served(name, SERVED_EVALUATORS, "evaluator")
}

/// The simple class name of a Spark class name, when hearth serves it.
pub(crate) fn served_class(name: &str) -> Result<&'static str> {
    served(name, SERVED, "pyspark.ml class")
}

/// The simple name of the Spark class `name` when it is one of `list`; what hearth serves when not.
fn served(name: &str, list: &[&'static str], what: &str) -> Result<&'static str> {
    let simple = name.rsplit('.').next().unwrap_or(name);
    list.iter()
        .find(|served| **served == simple)
        .copied()
        .ok_or_else(|| ConnectError::Unsupported(format!("the {what} {name} (hearth serves {})", list.join(", "))))
}

/// The Spark class name of hearth's stage class `class` (`StringIndexerModel` →
/// `org.apache.spark.ml.feature.StringIndexerModel`).
pub(crate) fn spark_class(class: &str) -> String {
    let package = if class.starts_with("LogisticRegression") || class.starts_with("MultilayerPerceptron") {
        "classification"
    } else if class.starts_with("LinearRegression") {
        "regression"
    } else if class.starts_with("KMeans") {
        "clustering"
    } else {
        "feature"
    };
    format!("org.apache.spark.ml.{package}.{class}")
}

/// hearth's param for the ranks an estimator fits on, which Spark's classes do not have.
pub(crate) const WORKERS: &str = "workers";

/// The stage `operator` names with the params the client set (and the client's uid, so the model has it).
pub(crate) fn stage(operator: &MlOperator, params: Option<&MlParams>) -> Result<PipelineStage> {
    stage_with_ranks(operator, params, None)
}

/// The estimator `operator` names, to fit on `ranks` ranks unless the client set hearth's `workers`: Spark's
/// fits use every partition of a session, so a PySpark user's `LogisticRegression` uses every core of
/// `local[N]` here too.
pub(crate) fn estimator_stage(operator: &MlOperator, params: Option<&MlParams>, ranks: usize) -> Result<PipelineStage> {
    stage_with_ranks(operator, params, Some(ranks))
}

fn stage_with_ranks(operator: &MlOperator, params: Option<&MlParams>, ranks: Option<usize>) -> Result<PipelineStage> {
    let class = served_class(&operator.name)?;
    let known = stage_json(&rebuild(class, Map::new())?)?;
    let mut json = stage_params(params, &known)?;
    if let Some(ranks) = ranks
        && known.contains_key(WORKERS)
    {
        json.entry(WORKERS).or_insert(Value::from(ranks));
    }
    if !operator.uid.is_empty() {
        json.insert("uid".into(), Value::String(operator.uid.clone()));
    }
    let stage = rebuild(class, json.clone())?;
    let got = stage_json(&stage)?;
    if let Some(ignored) = json.keys().find(|key| !got.contains_key(*key)) {
        return Err(ConnectError::IllegalArgument(format!(
            "hearth's {class} has no param {ignored:?}"
        )));
    }
    Ok(stage)
}

/// A fitted `model` with the params the client set on it since (`model.setThreshold(0.3).transform(df)`); the
/// estimator's params the client sends along, which the model does not hold, are left aside.
pub(crate) fn with_params(model: Arc<dyn Transformer>, params: Option<&MlParams>) -> Result<Arc<dyn Transformer>> {
    let Value::Object(mut json) = model.params()? else {
        return Ok(model);
    };
    let set = stage_params(params, &json)?;
    let mut changed = false;
    for (key, value) in set {
        if json.get(&key).is_some_and(|held| *held != value) {
            json.insert(key, value);
            changed = true;
        }
    }
    if !changed {
        return Ok(model);
    }
    match rebuild(model.class(), json)? {
        PipelineStage::Transformer(rebuilt) => Ok(rebuilt),
        PipelineStage::Estimator(_) => Err(ConnectError::IllegalArgument(format!(
            "{} is not a model",
            model.class()
        ))),
    }
}

fn rebuild(class: &str, params: Map<String, Value>) -> Result<PipelineStage> {
    rebuild_stage(class, Value::Object(params), Path::new(""))
        .map_err(|e| ConnectError::IllegalArgument(format!("{class}: {e}")))
}

/// A stage's params as a JSON object.
pub(crate) fn stage_json(stage: &PipelineStage) -> Result<Map<String, Value>> {
    match stage.as_stage().params()? {
        Value::Object(map) => Ok(map),
        _ => Ok(Map::new()),
    }
}
