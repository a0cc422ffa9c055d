//! Spark's `ParamGridBuilder`: the grid of parameter values a tuner tries, and setting them on any estimator.
//!
//! A parameter is named by its path in the estimator's saved form (its `params()` JSON, Spark's camelCase):
//! `k`, `maxIter`, `hiddenLayers`, or `training.epochs` and `training.optimizer` for a network's training
//! settings. Setting one rebuilds the estimator from its saved form, so every registered estimator class can
//! be tuned, a user's own included.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use hearth_exec::error::{HearthError, Result};
use serde::Serialize;
use serde_json::Value;

use crate::pipeline::{EstimatorStage, PipelineStage, rebuild_stage};

/// One point of a grid: parameter path → value.
pub type ParamMap = BTreeMap<String, Value>;

/// Builds the cartesian product of parameter values (Spark's `ParamGridBuilder`).
///
/// ```
/// use hearth_preprocessing::tuning::ParamGridBuilder;
/// let grid = ParamGridBuilder::new()
///     .add_grid("k", [2, 3, 4])
///     .add_grid("distanceMeasure", ["euclidean", "cosine"])
///     .build()
///     .unwrap();
/// assert_eq!(grid.len(), 6);
/// assert_eq!(grid[0]["k"], 2);
/// ```
#[derive(Clone, Debug, Default)]
pub struct ParamGridBuilder {
    grid: Vec<(String, Vec<Value>)>,
    /// A parameter given a value that cannot be written as JSON, and why.
    unwritable: Option<(String, Arc<serde_json::Error>)>,
}

impl ParamGridBuilder {
    /// An empty grid: one point that sets nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// Tries each of `values` for `param` (a path such as `training.epochs`).
    pub fn add_grid<V: Serialize>(mut self, param: &str, values: impl IntoIterator<Item = V>) -> Self {
        let mut json = Vec::new();
        for value in values {
            match serde_json::to_value(value) {
                Ok(value) => json.push(value),
                Err(e) => self.unwritable = Some((param.to_string(), Arc::new(e))),
            }
        }
        self.grid.retain(|(name, _)| name != param);
        self.grid.push((param.to_string(), json));
        self
    }

    /// Every combination, the last parameter added varying fastest. A parameter with no values is an error.
    pub fn build(&self) -> Result<Vec<ParamMap>> {
        if let Some((param, error)) = &self.unwritable {
            return Err(HearthError::invalid_param(
                "ParamGridBuilder",
                "grid",
                format!("{param}: a value cannot be written as JSON"),
            )
            .caused_by(Arc::clone(error)));
        }
        let mut points = vec![ParamMap::new()];
        for (param, values) in &self.grid {
            if values.is_empty() {
                return Err(HearthError::invalid_param(
                    "ParamGridBuilder",
                    "grid",
                    format!("{param}: no values to try"),
                ));
            }
            points = points
                .into_iter()
                .flat_map(|point| {
                    values.iter().map(move |value| {
                        let mut next = point.clone();
                        next.insert(param.clone(), value.clone());
                        next
                    })
                })
                .collect();
        }
        Ok(points)
    }
}

/// `estimator` with each parameter of `params` set: its saved form with each path replaced, rebuilt by its
/// class. A path the saved form does not have is an error naming the keys it does have.
///
/// ```
/// use std::sync::Arc;
/// use hearth_preprocessing::clustering::KMeans;
/// use hearth_preprocessing::pipeline::EstimatorStage;
/// use hearth_preprocessing::tuning::{ParamMap, with_params};
///
/// let kmeans: Arc<dyn EstimatorStage> = Arc::new(KMeans::new());
/// let params = ParamMap::from([("k".to_string(), serde_json::json!(5))]);
/// let tuned = with_params(kmeans.as_ref(), &params).unwrap();
/// assert_eq!(tuned.params().unwrap()["k"], 5);
/// let typo = ParamMap::from([("kk".to_string(), serde_json::json!(5))]);
/// assert!(with_params(kmeans.as_ref(), &typo).unwrap_err().to_string().contains("\"kk\""));
/// ```
pub fn with_params(estimator: &dyn EstimatorStage, params: &ParamMap) -> Result<Arc<dyn EstimatorStage>> {
    let mut saved = estimator.params()?;
    for (path, value) in params {
        set_path(estimator.uid(), &mut saved, path, value.clone())?;
    }
    match rebuild_stage(estimator.class(), saved, Path::new(""))? {
        PipelineStage::Estimator(rebuilt) => Ok(rebuilt),
        PipelineStage::Transformer(_) => Err(HearthError::invalid_param(
            estimator.uid(),
            "params",
            format!(
                "class {} rebuilds as a transformer, not an estimator",
                estimator.class()
            ),
        )),
    }
}

/// Replaces the value at a dotted `path` of `document`, the saved form of the stage `uid`.
fn set_path(uid: &str, document: &mut Value, path: &str, value: Value) -> Result<()> {
    let mut current = document;
    let parts: Vec<&str> = path.split('.').collect();
    for (depth, part) in parts.iter().enumerate() {
        let Value::Object(object) = current else {
            let message = format!("{:?}: {:?} is not an object", path, parts[..depth].join("."));
            return Err(HearthError::invalid_param(uid, "params", message));
        };
        if !object.contains_key(*part) {
            let mut known: Vec<&str> = object.keys().map(String::as_str).collect();
            known.sort_unstable();
            let message = format!("no parameter {path:?} (at this level: {})", known.join(", "));
            return Err(HearthError::invalid_param(uid, "params", message));
        }
        let Some(next) = object.get_mut(*part) else {
            return Err(HearthError::invalid_param(
                uid,
                "params",
                format!("no parameter {path:?}"),
            ));
        };
        current = next;
    }
    *current = value;
    Ok(())
}
