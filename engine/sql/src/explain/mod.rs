//! BigQuery ML's explanations of a network's predictions, by integrated gradients (see
//! [`hearth_torch::explain`]) against the training rows' mean features vector (the baseline, kept in the
//! catalog when the model is created), 20 steps. Attributions are summed from the features vector's slots
//! back to the training query's columns they come from (a one-hot encoded column's slots make one feature).
//!
//! | function | rows |
//! |---|---|
//! | `ML.EXPLAIN_PREDICT(MODEL m, rows [, STRUCT(k AS top_k_features)])` | `ML.PREDICT`'s, plus `top_feature_attributions` (`[{feature, attribution}, …]`, the `k` largest by magnitude; 5 by default), `baseline_prediction_value`, `prediction_value`, `approximation_error` |
//! | `ML.GLOBAL_EXPLAIN(MODEL m [, rows])` | one per feature: `feature`, `attribution` — the mean magnitude of its attributions over the rows (the held-out rows by default); `ORDER BY attribution DESC` for the largest first |
//!
//! For a classifier the explained value is the probability of the class predicted for the row; for a
//! regressor, the prediction. Spark MLlib has nothing of the kind for an MLP.

mod lineage;

use std::sync::Arc;

use datafusion::functions::core::expr_fn::get_field;
use datafusion::functions::math::expr_fn::abs;
use datafusion::functions_aggregate::expr_fn::avg;
use datafusion::logical_expr::{Expr, LogicalPlan, ScalarUDF, ident};
use datafusion::prelude::DataFrame;
use datafusion::sql::sqlparser::ast::Expr as SqlExpr;
use hearth_exec::error::{HearthError, Result};
use hearth_preprocessing::stage::Transformer;
use hearth_training::train::{ExplainSettings, explain_function};
use lineage::slot_sources;

use super::catalog::CatalogModel;
use super::literals;
use super::settings::one_setting;
use super::table_functions::{check_columns, prediction_columns, trained};

/// Integration steps of every explanation.
pub const STEPS: usize = 20;

/// BigQuery's `top_k_features` default.
const TOP_K_FEATURES: usize = 5;

/// `ml_explain` bound to `model`, for rows like `input`, keeping `top_k` features per row.
fn explainer(function: &str, model: &CatalogModel, input: &DataFrame, top_k: Option<usize>) -> Result<Arc<ScalarUDF>> {
    let call = format!("ML.{function}(MODEL {})", model.entry.name);
    let network = trained(model)?;
    let baseline = model.entry.feature_means.as_ref().ok_or_else(|| {
        HearthError::invalid_param(
            &call,
            "MODEL",
            format!(
                "{} keeps no training mean to explain against (it was registered from Rust, or created by an \
                 older hearth); create it with CREATE OR REPLACE MODEL",
                model.entry.name
            ),
        )
    })?;
    let sources = slot_sources(&model.pipeline, input, network.features_col())?;
    let mut features: Vec<String> = Vec::new();
    let slot_features = sources
        .into_iter()
        .map(|source| match features.iter().position(|f| *f == source) {
            Some(index) => index,
            None => {
                features.push(source);
                features.len() - 1
            }
        })
        .collect();
    let bytes = network
        .artifact()
        .to_bytes()
        .map_err(|e| HearthError::invalid_param(&call, "MODEL", "cannot serialise the network").caused_by(e))?;
    let settings = ExplainSettings {
        baseline: baseline.iter().map(|&m| m as f32).collect(),
        steps: STEPS,
        features,
        slot_features,
        top_k,
    };
    Ok(explain_function(bytes, settings)?)
}

/// The `top_k_features` of a `STRUCT(k AS top_k_features)` setting (BigQuery's default 5).
fn top_k_setting(settings: Option<&SqlExpr>) -> Result<usize> {
    let top_k = one_setting(
        "ML.EXPLAIN_PREDICT",
        "top_k_features",
        "a whole number ≥ 1",
        settings,
        |value| literals::whole(value).filter(|k| *k >= 1),
    )?;
    Ok(top_k.map_or(TOP_K_FEATURES, |k| k as usize))
}

/// `ML.EXPLAIN_PREDICT`: `ML.PREDICT`'s columns and each row's explanation.
pub(crate) fn explain_predict(
    model: &CatalogModel,
    input: DataFrame,
    settings: Option<&SqlExpr>,
) -> Result<LogicalPlan> {
    let top_k = top_k_setting(settings)?;
    check_columns("EXPLAIN_PREDICT", model, &input, false)?;
    let explain = explainer("EXPLAIN_PREDICT", model, &input, Some(top_k))?;
    let features = trained(model)?.features_col().to_string();
    let mut columns: Vec<Expr> = input.schema().columns().into_iter().map(Expr::Column).collect();
    columns.extend(prediction_columns(model)?);
    columns.push(explain.call(vec![ident(&features)]).alias("__explained"));
    let explained = model.pipeline.transform(&input)?.select(columns)?;
    let field = |name: &str| get_field(ident("__explained"), name);
    let mut last: Vec<Expr> = explained
        .schema()
        .columns()
        .into_iter()
        .filter(|c| c.name != "__explained")
        .map(Expr::Column)
        .collect();
    last.extend([
        field("attributions").alias("top_feature_attributions"),
        field("baseline_prediction_value").alias("baseline_prediction_value"),
        field("prediction_value").alias("prediction_value"),
        field("approximation_error").alias("approximation_error"),
    ]);
    Ok(explained.select(last)?.into_parts().1)
}

/// `ML.GLOBAL_EXPLAIN`: each feature's mean attribution magnitude over `input`'s rows.
pub(crate) fn global_explain(model: &CatalogModel, input: DataFrame) -> Result<LogicalPlan> {
    check_columns("GLOBAL_EXPLAIN", model, &input, false)?;
    let explain = explainer("GLOBAL_EXPLAIN", model, &input, None)?;
    let features = trained(model)?.features_col().to_string();
    let each = model
        .pipeline
        .transform(&input)?
        .select(vec![
            get_field(explain.call(vec![ident(&features)]), "attributions").alias("a"),
        ])?
        .unnest_columns(&["a"])?;
    let table = each.aggregate(
        vec![get_field(ident("a"), "feature").alias("feature")],
        vec![avg(abs(get_field(ident("a"), "attribution"))).alias("attribution")],
    )?;
    Ok(table.into_parts().1)
}
