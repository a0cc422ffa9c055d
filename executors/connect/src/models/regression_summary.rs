//! Spark's `LinearRegressionSummary` as `pyspark.ml` reads it over Spark Connect: the regression figures of the
//! training predictions (weighted by the model's `weightCol`, `r2` through the origin when it has no
//! intercept, as Spark's `RegressionMetrics` computes them), `residuals`, `numInstances`, `degreesOfFreedom`,
//! `r2adj`, `devianceResiduals`, and — for a fit solved by the normal equation — the coefficients'
//! `coefficientStandardErrors`, `tValues` and `pValues`, the intercept's last.

use datafusion::arrow::array::AsArray;
use datafusion::arrow::datatypes::{DataType, Float64Type};
use datafusion::functions::math::expr_fn::sqrt;
use datafusion::functions_aggregate::expr_fn::{count, max, min, sum};
use datafusion::logical_expr::{Expr, cast, lit};
use datafusion::prelude::{DataFrame, col};
use hearth_preprocessing::evaluation::RegressionEvaluator;
use hearth_training::linear::{CoefficientStatistics, LinearRegressionModel};
use spark_connect_proto::expression::literal::LiteralType;

use super::summary_value::{Columns, SummaryValue};
use crate::errors::{ConnectError, Result};
use crate::models::literals::{double, doubles, literal};

/// `model.summary.<method>` of a linear regression over its training `predictions`; `None` for a method
/// Spark's summary does not have.
pub(crate) async fn regression(
    model: &LinearRegressionModel,
    predictions: &DataFrame,
    columns: &Columns,
    method: &str,
) -> Result<Option<SummaryValue>> {
    let value = match method {
        "rootMeanSquaredError" | "meanSquaredError" | "meanAbsoluteError" | "explainedVariance" | "r2" => {
            double(metric(model, predictions, columns, method).await?)
        }
        "residuals" => {
            let residual = (col(&columns.label) - col(&columns.prediction)).alias("residuals");
            return Ok(Some(SummaryValue::Frame(predictions.clone().select(vec![residual])?)));
        }
        "numInstances" => literal(LiteralType::Long(rows(predictions).await?)),
        "degreesOfFreedom" => literal(LiteralType::Long(
            model.degrees_of_freedom(rows(predictions).await?.unsigned_abs()),
        )),
        "r2adj" => {
            let r2 = metric(model, predictions, columns, "r2").await?;
            let n = rows(predictions).await? as f64;
            let intercept = f64::from(u8::from(model.get_fit_intercept()));
            let coefficients = model.coefficients().len() as f64;
            double(1.0 - (1.0 - r2) * (n - intercept) / (n - coefficients - intercept))
        }
        "devianceResiduals" => {
            let residual = (col(&columns.label) - col(&columns.prediction)) * root_weight(model);
            let [low, high] = aggregates(predictions, [min(residual.clone()), max(residual)]).await?;
            doubles(&[low, high])
        }
        "coefficientStandardErrors" => doubles(&statistics(model, predictions, columns).await?.standard_errors),
        "tValues" => doubles(&statistics(model, predictions, columns).await?.t_values),
        "pValues" => doubles(&statistics(model, predictions, columns).await?.p_values),
        _ => return Ok(None),
    };
    Ok(Some(SummaryValue::Value(value)))
}

/// One of Spark's regression metrics by its summary name, weighted as the model's rows were.
async fn metric(
    model: &LinearRegressionModel,
    predictions: &DataFrame,
    columns: &Columns,
    method: &str,
) -> Result<f64> {
    let name = match method {
        "rootMeanSquaredError" => "rmse",
        "meanSquaredError" => "mse",
        "meanAbsoluteError" => "mae",
        "explainedVariance" => "var",
        _ => "r2",
    };
    let mut evaluator = RegressionEvaluator::new()
        .metric_name(name)
        .label_col(&columns.label)
        .prediction_col(&columns.prediction)
        .through_origin(!model.get_fit_intercept());
    if let Some(weight) = model.get_weight_col() {
        evaluator = evaluator.weight_col(weight);
    }
    Ok(evaluator.evaluate(predictions).await?)
}

/// The standard errors, t statistics and p-values from the training rows' weighted residual sum of squares.
async fn statistics(
    model: &LinearRegressionModel,
    predictions: &DataFrame,
    columns: &Columns,
) -> Result<CoefficientStatistics> {
    let residual = col(&columns.label) - col(&columns.prediction);
    let squares = residual.clone() * residual * weight(model);
    let [rss, rows] = aggregates(predictions, [sum(squares), cast(count(lit(1)), DataType::Float64)]).await?;
    model.coefficient_statistics(rss, rows as u64).ok_or_else(|| {
        ConnectError::Unsupported(
            "coefficient standard errors of a LinearRegressionModel not solved by the normal equation \
                 (Spark: \"No Std. Error of coefficients available for this LinearRegressionModel\"); fit it \
                 with solver=\"normal\""
                .to_string(),
        )
    })
}

/// Each row's weight: the model's weight column, or 1.
fn weight(model: &LinearRegressionModel) -> Expr {
    match model.get_weight_col() {
        Some(column) => cast(col(column), DataType::Float64),
        None => lit(1.0),
    }
}

/// The square root of each row's weight, which Spark's deviance residuals are scaled by.
fn root_weight(model: &LinearRegressionModel) -> Expr {
    match model.get_weight_col() {
        Some(_) => sqrt(weight(model)),
        None => lit(1.0),
    }
}

/// The rows of `predictions`.
async fn rows(predictions: &DataFrame) -> Result<i64> {
    Ok(i64::try_from(predictions.clone().count().await?).unwrap_or(i64::MAX))
}

/// `N` aggregates of `predictions`, each as one `f64`.
async fn aggregates<const N: usize>(predictions: &DataFrame, expressions: [Expr; N]) -> Result<[f64; N]> {
    let named = (expressions.into_iter().enumerate())
        .map(|(i, e)| cast(e, DataType::Float64).alias(format!("a{i}")))
        .collect();
    let batches = predictions.clone().aggregate(vec![], named)?.collect().await?;
    let mut values = [f64::NAN; N];
    if let Some(batch) = batches.iter().find(|b| b.num_rows() > 0) {
        for (i, value) in values.iter_mut().enumerate() {
            let column = batch.column(i).as_primitive::<Float64Type>();
            *value = column.value(0);
        }
    }
    Ok(values)
}
