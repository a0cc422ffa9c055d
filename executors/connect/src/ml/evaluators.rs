//! `pyspark.ml.evaluation`'s evaluators as hearth's, with the params the user set and Spark's defaults.

use datafusion::prelude::DataFrame;
use hearth_preprocessing::evaluation::{
    BinaryClassificationEvaluator, MulticlassClassificationEvaluator, RegressionEvaluator,
};
use serde_json::Value;
use spark_connect_proto::{MlOperator, MlParams};

use crate::errors::{ConnectError, Result};
use crate::models::{literal_json, served_evaluator};

/// The metric `evaluator` (with the client's params) gives on `df`.
pub(crate) async fn evaluate(evaluator: &MlOperator, params: Option<&MlParams>, df: &DataFrame) -> Result<f64> {
    let class = served_evaluator(&evaluator.name)?;
    let params: Vec<(String, Value)> = (params.map(|p| &p.params).into_iter().flatten())
        .map(|(key, literal)| Ok((key.clone(), literal_json(literal)?)))
        .collect::<Result<_>>()?;
    let unknown = |key: &str| ConnectError::IllegalArgument(format!("hearth's {class} has no param {key:?}"));
    let text = |key: &str, value: &Value| {
        value
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| ConnectError::IllegalArgument(format!("{class}: {key} must be a string")))
    };
    let number = |key: &str, value: &Value| {
        value
            .as_f64()
            .ok_or_else(|| ConnectError::IllegalArgument(format!("{class}: {key} must be a number")))
    };
    Ok(match class {
        "MulticlassClassificationEvaluator" => {
            let mut e = MulticlassClassificationEvaluator::new();
            for (key, value) in &params {
                e = match key.as_str() {
                    "metricName" => e.metric_name(text(key, value)?),
                    "labelCol" => e.label_col(text(key, value)?),
                    "predictionCol" => e.prediction_col(text(key, value)?),
                    "probabilityCol" => e.probability_col(text(key, value)?),
                    "weightCol" => e.weight_col(text(key, value)?),
                    "metricLabel" => e.metric_label(number(key, value)?),
                    "beta" => e.beta(number(key, value)?),
                    _ => return Err(unknown(key)),
                };
            }
            e.evaluate(df).await?
        }
        "BinaryClassificationEvaluator" => {
            let mut e = BinaryClassificationEvaluator::new();
            for (key, value) in &params {
                e = match key.as_str() {
                    "metricName" => e.metric_name(text(key, value)?),
                    "labelCol" => e.label_col(text(key, value)?),
                    "rawPredictionCol" => e.raw_prediction_col(text(key, value)?),
                    "weightCol" => e.weight_col(text(key, value)?),
                    "numBins" => e.num_bins(number(key, value)? as usize),
                    _ => return Err(unknown(key)),
                };
            }
            e.evaluate(df).await?
        }
        "RegressionEvaluator" => {
            let mut e = RegressionEvaluator::new();
            for (key, value) in &params {
                e = match key.as_str() {
                    "metricName" => e.metric_name(text(key, value)?),
                    "labelCol" => e.label_col(text(key, value)?),
                    "predictionCol" => e.prediction_col(text(key, value)?),
                    "weightCol" => e.weight_col(text(key, value)?),
                    _ => return Err(unknown(key)),
                };
            }
            e.evaluate(df).await?
        }
        other => return Err(ConnectError::Unsupported(format!("the evaluator {other}"))),
    })
}
