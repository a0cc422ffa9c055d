//! Training summaries as `pyspark.ml` reads them over Spark Connect — `model.summary.accuracy`,
//! `.areaUnderROC`, `.roc`, `.objectiveHistory`, `.rootMeanSquaredError`, `.clusterSizes`, … Spark keeps a
//! model's summary with the data it was fitted on; here the session's cache keeps that data's plan beside the
//! model (PySpark's `CreateSummary` gives it back to a model that has none), and each figure is computed from
//! the model's predictions on it, with Spark's settings (a binary summary's curves on every distinct
//! probability of class 1).

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Float64Array, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::prelude::{DataFrame, col};
use hearth_exec::session::Session;
use hearth_preprocessing::clustering::KMeansModel;
use hearth_preprocessing::evaluation::{BinaryClassificationEvaluator, MulticlassClassificationEvaluator};
use hearth_preprocessing::stage::Transformer;
use hearth_training::linear::{LinearRegressionModel, LogisticRegressionModel};
use hearth_training::perceptron::MultilayerPerceptronClassificationModel;
use serde_json::Value;
use spark_connect_proto::data_type::{self, Kind};
use spark_connect_proto::expression::Literal;
use spark_connect_proto::expression::literal::LiteralType;

use crate::errors::{ConnectError, Result};
use crate::models::literals::{array, double, doubles, integer, literal};
use crate::models::regression_summary::regression;
pub(crate) use crate::models::summary_value::{Columns, SummaryValue};

/// A binary summary's curves and area take every distinct score, as Spark's summaries do (no down-sampling).
const SUMMARY_BINS: usize = 0;

/// The error that makes PySpark send `CreateSummary` with the data and ask again.
pub(crate) fn summary_lost(id: &str) -> ConnectError {
    ConnectError::Execution(format!(
        "[CONNECT_ML.MODEL_SUMMARY_LOST] The model {id} has no training data to summarize."
    ))
}

/// What a model's summaries are made of.
enum Family {
    /// Spark's `ClassificationSummary` (and, with two classes, `BinaryClassificationSummary`).
    Classifier {
        binary: bool,
    },
    Regression,
    Clustering,
}

/// `model.summary.<method>` for `model` fitted on `training`.
pub(crate) async fn attribute(
    session: &Session,
    model: &dyn Transformer,
    training: &DataFrame,
    method: &str,
    args: &[Value],
) -> Result<SummaryValue> {
    let family = family(model)?;
    let params = model.params()?;
    let column = |name: &str, default: &str| params.get(name).and_then(Value::as_str).unwrap_or(default).to_owned();
    let (label, prediction) = (column("labelCol", "label"), column("predictionCol", "prediction"));
    if let Some(name) = method.strip_suffix("Col") {
        let default = if name == "probability" { "probability" } else { name };
        return Ok(SummaryValue::Value(text(column(method, default))));
    }
    if let Some(value) = solver_record(model, method) {
        return Ok(SummaryValue::Value(value));
    }
    // PySpark sends a k-means summary's data already transformed, a classifier's or regression's as fitted.
    let predictions = if training.schema().has_column_with_unqualified_name(&prediction) {
        training.clone()
    } else {
        model.transform(training)?
    };
    if method == "predictions" {
        return Ok(SummaryValue::Frame(predictions));
    }
    let columns = Columns {
        label,
        prediction,
        probability: column("probabilityCol", "probability"),
    };
    let value = match family {
        Family::Classifier { binary } => {
            let beta = args.first().and_then(Value::as_f64).unwrap_or(1.0);
            classification(session, &predictions, &columns, method, binary, beta).await?
        }
        Family::Regression => match model.downcast_ref::<LinearRegressionModel>() {
            Some(linear) => regression(linear, &predictions, &columns, method).await?,
            None => None,
        },
        Family::Clustering if method == "cluster" => {
            Some(SummaryValue::Frame(predictions.select(vec![col(&columns.prediction)])?))
        }
        Family::Clustering => None,
    };
    value.ok_or_else(|| {
        ConnectError::Unsupported(format!(
            "the summary attribute {method} of {} over Spark Connect",
            model.class()
        ))
    })
}

/// Spark's `ClassificationSummary` figures, and with two classes its `BinaryClassificationSummary`'s.
async fn classification(
    session: &Session,
    predictions: &DataFrame,
    columns: &Columns,
    method: &str,
    binary: bool,
    beta: f64,
) -> Result<Option<SummaryValue>> {
    let evaluator = || {
        MulticlassClassificationEvaluator::new()
            .metric_name(method)
            .label_col(&columns.label)
            .prediction_col(&columns.prediction)
            .beta(beta)
    };
    let value = match method {
        "accuracy"
        | "weightedPrecision"
        | "weightedRecall"
        | "weightedTruePositiveRate"
        | "weightedFalsePositiveRate"
        | "weightedFMeasure" => double(evaluator().evaluate(predictions).await?),
        "truePositiveRateByLabel"
        | "falsePositiveRateByLabel"
        | "precisionByLabel"
        | "recallByLabel"
        | "fMeasureByLabel" => {
            let state = evaluator().state(predictions).await?;
            let labels = distinct_doubles(predictions, &columns.label).await?;
            let by_label = (labels.iter())
                .map(|label| evaluator().metric_label(*label).metric(&state))
                .collect::<hearth_exec::error::Result<Vec<f64>>>()?;
            doubles(&by_label)
        }
        "labels" => doubles(&distinct_doubles(predictions, &columns.label).await?),
        "areaUnderROC" | "roc" | "pr" if binary => {
            let state = BinaryClassificationEvaluator::new()
                .label_col(&columns.label)
                .raw_prediction_col(&columns.probability)
                .num_bins(SUMMARY_BINS)
                .state(predictions)
                .await?;
            return Ok(Some(match method {
                "areaUnderROC" => SummaryValue::Value(double(state.area_under_roc(SUMMARY_BINS))),
                "roc" => SummaryValue::Frame(curve(session, ["FPR", "TPR"], state.roc(SUMMARY_BINS))?),
                _ => SummaryValue::Frame(curve(session, ["recall", "precision"], state.pr(SUMMARY_BINS))?),
            }));
        }
        _ => return Ok(None),
    };
    Ok(Some(SummaryValue::Value(value)))
}

/// Spark's `model.hasSummary` (which a 4.0 client asks before reading `model.summary`): whether `model` is of
/// a class with a training summary and still has the rows it was fitted on.
pub(crate) fn has_summary(model: &dyn Transformer, training: Option<&DataFrame>) -> bool {
    training.is_some() && family(model).is_ok()
}

fn family(model: &dyn Transformer) -> Result<Family> {
    if let Some(m) = model.downcast_ref::<LogisticRegressionModel>() {
        Ok(Family::Classifier {
            binary: m.num_classes() <= 2,
        })
    } else if model
        .downcast_ref::<MultilayerPerceptronClassificationModel>()
        .is_some()
    {
        Ok(Family::Classifier { binary: false })
    } else if model.downcast_ref::<LinearRegressionModel>().is_some() {
        Ok(Family::Regression)
    } else if model.downcast_ref::<KMeansModel>().is_some() {
        Ok(Family::Clustering)
    } else {
        Err(ConnectError::Unsupported(format!("a summary of {}", model.class())))
    }
}

/// What the solver or the clustering recorded: `objectiveHistory`, `totalIterations`, and k-means' `k`,
/// `numIter`, `clusterSizes`, `trainingCost`.
fn solver_record(model: &dyn Transformer, method: &str) -> Option<Literal> {
    if let Some(kmeans) = model.downcast_ref::<KMeansModel>() {
        let summary = kmeans.summary()?;
        return match method {
            "k" => Some(integer(kmeans.cluster_centers().len())),
            "numIter" => Some(integer(summary.num_iter)),
            "trainingCost" => Some(double(summary.training_cost)),
            "clusterSizes" => Some(array(
                (summary.cluster_sizes.iter())
                    .map(|n| literal(LiteralType::Long(i64::try_from(*n).unwrap_or(i64::MAX))))
                    .collect(),
                Kind::Long(data_type::Long::default()),
            )),
            _ => None,
        };
    }
    let solved = if let Some(m) = model.downcast_ref::<LogisticRegressionModel>() {
        m.summary()?
    } else if let Some(m) = model.downcast_ref::<LinearRegressionModel>() {
        m.summary()
    } else {
        model
            .downcast_ref::<MultilayerPerceptronClassificationModel>()?
            .summary()
    };
    match method {
        "objectiveHistory" => Some(doubles(&solved.objective_history)),
        "totalIterations" => Some(integer(solved.total_iterations)),
        _ => None,
    }
}

fn text(value: String) -> Literal {
    literal(LiteralType::String(value))
}

/// The distinct values of `column`, in order.
async fn distinct_doubles(df: &DataFrame, column: &str) -> Result<Vec<f64>> {
    let values = df
        .clone()
        .select(vec![
            datafusion::logical_expr::cast(col(column), DataType::Float64).alias("v"),
        ])?
        .distinct()?
        .sort(vec![col("v").sort(true, true)])?
        .collect()
        .await?;
    Ok(values
        .iter()
        .flat_map(|batch| {
            let column = batch.column(0).as_any().downcast_ref::<Float64Array>().cloned();
            column.into_iter().flat_map(|c| c.iter().flatten().collect::<Vec<_>>())
        })
        .collect())
}

/// A curve's points as a two-column frame named as Spark names them.
fn curve(session: &Session, names: [&str; 2], points: Vec<(f64, f64)>) -> Result<DataFrame> {
    let schema = Arc::new(Schema::new(
        names.map(|name| Field::new(name, DataType::Float64, false)).to_vec(),
    ));
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Float64Array::from_iter_values(points.iter().map(|p| p.0))),
        Arc::new(Float64Array::from_iter_values(points.iter().map(|p| p.1))),
    ];
    let batch = RecordBatch::try_new(Arc::clone(&schema), columns)?;
    Ok(session.read_batches(schema, vec![batch])?)
}
