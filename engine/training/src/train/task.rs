//! What a [`Network`](super::Network) estimator learns: classes ([`Classification`]) or a number
//! ([`Regression`]) — the loss, how many outputs the network has, and the fitted model's columns.

use std::fmt;
use std::future::Future;

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::Float64Type;
use datafusion::functions_aggregate::expr_fn::{count, max, min};
use datafusion::logical_expr::{ident, lit};
use datafusion::prelude::DataFrame;
use hearth_exec::error::{HearthError, Result};
use hearth_torch::train::Loss;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::architecture::Architecture;
use super::network_model::{ClassificationOutputs, ModelColumns, Outputs, RegressionOutputs};

/// What a network estimator learns.
pub trait Task:
    Clone + Default + fmt::Debug + PartialEq + Serialize + DeserializeOwned + Send + Sync + 'static
{
    /// The fitted model's columns.
    type Outputs: Outputs;

    /// The loss minimised.
    const LOSS: Loss;

    /// Whether the label is standardized for training and its scale folded back into the network (see
    /// [`label_scale`](super::label_scale)).
    const STANDARDIZES_LABEL: bool;

    /// The estimator's class name for architecture `A`.
    fn class<A: Architecture>() -> &'static str;

    /// The network's outputs for `training`'s labels in `label` (the classes, or 1), after checking them;
    /// errors name `stage`.
    fn outputs(&self, stage: &str, label: &str, training: &DataFrame) -> impl Future<Output = Result<usize>> + Send;

    /// The fitted model's columns, given the ones every network has.
    fn columns(&self, columns: ModelColumns) -> Self::Outputs;
}

/// The lowest and highest label, after checking there is a row with one.
async fn label_range(stage: &str, label: &str, training: &DataFrame) -> Result<(f64, f64)> {
    let batches = training
        .clone()
        .aggregate(
            vec![],
            vec![
                min(ident(label)).alias("lowest"),
                max(ident(label)).alias("highest"),
                count(lit(1)).alias("rows"),
            ],
        )?
        .collect()
        .await?;
    let batch = batches
        .iter()
        .find(|b| b.num_rows() > 0)
        .ok_or_else(|| HearthError::schema(stage, label, "the data frame has no rows"))?;
    let lowest = batch.column(0).as_primitive::<Float64Type>();
    let highest = batch.column(1).as_primitive::<Float64Type>();
    if lowest.is_null(0) {
        return Err(HearthError::schema(stage, label, "no rows with a label to train on"));
    }
    Ok((lowest.value(0), highest.value(0)))
}

/// Classes: labels are class indices 0, 1, …; the model adds `rawPrediction`, `probability` and
/// `prediction`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Classification {
    pub(super) probability_col: String,
    pub(super) raw_prediction_col: String,
}

impl Default for Classification {
    fn default() -> Self {
        Self {
            probability_col: "probability".to_string(),
            raw_prediction_col: "rawPrediction".to_string(),
        }
    }
}

impl Task for Classification {
    type Outputs = ClassificationOutputs;

    const LOSS: Loss = Loss::SoftmaxCrossEntropy;

    const STANDARDIZES_LABEL: bool = false;

    fn class<A: Architecture>() -> &'static str {
        A::CLASSIFIER
    }

    /// Classes = largest label + 1 (at least 2), after checking the labels are class indices (one class
    /// alone is warned about, as Spark does).
    async fn outputs(&self, stage: &str, label: &str, training: &DataFrame) -> Result<usize> {
        let (lowest, highest) = label_range(stage, label, training).await?;
        if lowest < 0.0 || highest.fract() != 0.0 || !highest.is_finite() {
            return Err(HearthError::schema(
                stage,
                label,
                format!("labels must be class indices 0, 1, …; found values from {lowest} to {highest}"),
            ));
        }
        if lowest == highest {
            // Spark's classifiers warn and train; SQL's CREATE MODEL refuses (BigQuery ML does).
            log::warn!("{stage}: every training row's {label} is {lowest}: the model learns one class");
        }
        Ok((highest as usize + 1).max(2))
    }

    fn columns(&self, columns: ModelColumns) -> ClassificationOutputs {
        ClassificationOutputs {
            columns,
            probability_col: self.probability_col.clone(),
            raw_prediction_col: self.raw_prediction_col.clone(),
        }
    }
}

/// A number: labels are targets, the loss mean squared error, and the model adds `prediction`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Regression {}

impl Task for Regression {
    type Outputs = RegressionOutputs;

    const LOSS: Loss = Loss::MeanSquaredError;

    const STANDARDIZES_LABEL: bool = true;

    fn class<A: Architecture>() -> &'static str {
        A::REGRESSOR
    }

    /// One output, after checking the targets are finite.
    async fn outputs(&self, stage: &str, label: &str, training: &DataFrame) -> Result<usize> {
        let (lowest, highest) = label_range(stage, label, training).await?;
        if !lowest.is_finite() || !highest.is_finite() {
            return Err(HearthError::schema(
                stage,
                label,
                format!("targets must be finite numbers; found values from {lowest} to {highest}"),
            ));
        }
        Ok(1)
    }

    fn columns(&self, columns: ModelColumns) -> RegressionOutputs {
        RegressionOutputs { columns }
    }
}
