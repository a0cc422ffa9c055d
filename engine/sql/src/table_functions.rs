//! The plans of hearth's `ML.` table functions, each a DataFusion plan over the model's fitted pipeline, so
//! they run wherever the session runs and can sit inside larger queries.
//!
//! | function | rows |
//! |---|---|
//! | `ML.PREDICT(MODEL m, (query))` | the query's rows and columns, plus `predicted_<label>` (and for a classifier `predicted_<label>_probs`: `[{label, prob}, …]`) |
//! | `ML.EVALUATE(MODEL m [, (query)])` | one row of Spark's metrics over the query's rows, or over the rows held out in training (a regressor's also under BigQuery ML's names: `mean_absolute_error`, `mean_squared_error`, `r2_score`) |
//! | `ML.TRANSFORM(MODEL m, (query))` | the preprocessing's output columns (and the label, when the rows have it) |
//! | `ML.TRAINING_INFO(MODEL m)` | one row per epoch: attempt, loss, accuracy, validation figures, learning rate, time (a linear model: one per solver iteration, its objective) |
//! | `ML.FEATURE_INFO(MODEL m)` | one row per fitted preprocessing stage: its class, uid, state and parameters |
//! | `ML.TRIAL_INFO(MODEL m)` | one row per trial of a model tuned with `num_trials` (see [`trials`](super::trials)) |

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::ScalarValue;
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::listing::{ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl};
use datafusion::datasource::provider_as_source;
use datafusion::functions::core::expr_fn::named_struct;
use datafusion::functions_nested::expr_fn::{array_element, make_array};
use datafusion::logical_expr::{Expr, LogicalPlan, LogicalPlanBuilder, cast, ident, lit, when};
use datafusion::prelude::DataFrame;
use hearth_exec::error::{HearthError, Result};
use hearth_preprocessing::evaluation::{Evaluation, evaluation_state, metric};
use hearth_preprocessing::stage::{ClassifierColumns, Transformer, closest_column, quoted_columns};
use hearth_training::linear::Solved;

use super::catalog::CatalogModel;
use super::rows::literal_rows;
use super::trained::Trained;

/// The trained network or linear model ending a model's pipeline.
pub(super) fn trained(model: &CatalogModel) -> Result<Trained<'_>> {
    Trained::of(&model.pipeline).ok_or_else(|| {
        HearthError::invalid_data(
            &model.entry.name,
            &model.entry.label,
            "the model's last stage is not a network (ClassificationModel, RegressionModel) or a linear model \
             (LogisticRegressionModel, LinearRegressionModel)",
        )
    })
}

/// Checks that `input` has every column the preprocessing reads from the training rows.
pub(super) fn check_columns(function: &str, model: &CatalogModel, input: &DataFrame, label: bool) -> Result<()> {
    let mut needed: Vec<&String> = model.entry.inputs.iter().collect();
    if label {
        needed.push(&model.entry.label);
    }
    for column in needed {
        if input.schema().field_with_unqualified_name(column).is_err() {
            return Err(HearthError::invalid_param(
                format!("ML.{function}(MODEL {})", model.entry.name),
                "rows",
                format!(
                    "the rows have no column {column:?}{}, which the model reads (they have {})",
                    closest_column(input, column),
                    quoted_columns(input)
                ),
            ));
        }
    }
    Ok(())
}

/// `ML.PREDICT`: the input's columns and the predictions.
pub(crate) fn predict(model: &CatalogModel, input: DataFrame) -> Result<LogicalPlan> {
    check_columns("PREDICT", model, &input, false)?;
    let mut projection: Vec<Expr> = input.schema().columns().into_iter().map(Expr::Column).collect();
    let scored = model.pipeline.transform(&input)?;
    projection.extend(prediction_columns(model)?);
    Ok(scored.select(projection)?.into_parts().1)
}

/// The columns `ML.PREDICT` adds to scored rows: `predicted_<label>` (the label's value), and for a
/// classifier `predicted_<label>_probs`.
pub(super) fn prediction_columns(model: &CatalogModel) -> Result<Vec<Expr>> {
    let label = &model.entry.label;
    let network = trained(model)?;
    let prediction = ident(network.prediction_col());
    let mut projection = Vec::new();
    let predicted = match &model.entry.labels {
        Some(labels) => {
            let mut case = when(prediction.clone().eq(lit(0.0)), lit(labels[0].clone()));
            for (index, value) in labels.iter().enumerate().skip(1) {
                case = case.when(prediction.clone().eq(lit(index as f64)), lit(value.clone()));
            }
            case.end()?
        }
        None => prediction,
    };
    projection.push(predicted.alias(format!("predicted_{label}")));
    let Some(scores) = network.classifier() else {
        return Ok(projection);
    };
    let probability = ident(scores.probability_col());
    let probs = class_names(model, scores)
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let prob = cast(array_element(probability.clone(), lit(i as i64 + 1)), DataType::Float64);
            named_struct(vec![lit("label"), lit(name.clone()), lit("prob"), prob])
        })
        .collect();
    projection.push(make_array(probs).alias(format!("predicted_{label}_probs")));
    Ok(projection)
}

/// The names of a classifier model's classes, by index: its label's values, or the indices themselves.
pub(super) fn class_names(model: &CatalogModel, scores: &dyn ClassifierColumns) -> Vec<String> {
    match &model.entry.labels {
        Some(labels) => labels.clone(),
        None => (0..scores.num_classes()).map(|i| i.to_string()).collect(),
    }
}

/// `ML.TRANSFORM`: the preprocessing's output columns, and the label when the rows have it.
pub(crate) fn transform(model: &CatalogModel, input: DataFrame) -> Result<LogicalPlan> {
    check_columns("TRANSFORM", model, &input, false)?;
    let has_label = input.schema().field_with_unqualified_name(&model.entry.label).is_ok();
    let preprocessed = model.pipeline.stages()[..model.entry.preprocessing_stages]
        .iter()
        .try_fold(input, |df, stage| stage.transform(&df))?;
    let mut columns: Vec<Expr> = model.entry.features.iter().map(ident).collect();
    if has_label && !model.entry.features.contains(&model.entry.label) {
        columns.push(ident(&model.entry.label));
    }
    Ok(preprocessed.select(columns)?.into_parts().1)
}

/// `ML.EVALUATE`: Spark's metrics over `input`'s rows, which must have the label.
pub(crate) fn evaluate(model: &CatalogModel, input: DataFrame) -> Result<LogicalPlan> {
    check_columns("EVALUATE", model, &input, true)?;
    let scored = model.pipeline.transform(&input)?;
    let label = ident(&model.entry.label_index);
    let one = lit(1.0);
    let network = trained(model)?;
    let Some(scores) = network.classifier() else {
        let state = evaluation_state(
            Evaluation::Regression,
            vec![label, ident(network.prediction_col()), one],
        )
        .alias("regression");
        // Spark's names, then BigQuery ML's for the same figures.
        let names = ["rmse", "mse", "mae", "r2", "var"].map(|name| (name, name));
        let aliases = [
            ("mean_absolute_error", "mae"),
            ("mean_squared_error", "mse"),
            ("r2_score", "r2"),
        ];
        let metrics: Vec<Expr> = names
            .into_iter()
            .chain(aliases)
            .map(|(alias, name)| metric("regression", ident("regression"), name).alias(alias))
            .collect();
        return Ok(scored.aggregate(vec![], vec![state])?.select(metrics)?.into_parts().1);
    };
    let mut states = vec![
        evaluation_state(
            Evaluation::Multiclass,
            vec![
                label.clone(),
                ident(scores.prediction_col()),
                one.clone(),
                ident(scores.probability_col()),
            ],
        )
        .alias("multiclass"),
    ];
    let mut metrics: Vec<Expr> = ["f1", "accuracy", "weightedPrecision", "weightedRecall", "logLoss"]
        .into_iter()
        .map(|name| metric("multiclass", ident("multiclass"), name).alias(name))
        .collect();
    if scores.num_classes() == 2 {
        states.push(
            evaluation_state(Evaluation::Binary, vec![ident(scores.raw_prediction_col()), label, one]).alias("binary"),
        );
        metrics.extend(
            ["areaUnderROC", "areaUnderPR"]
                .into_iter()
                .map(|name| metric("binary", ident("binary"), name).alias(name)),
        );
    }
    Ok(scored.aggregate(vec![], states)?.select(metrics)?.into_parts().1)
}

/// The rows a model held out for evaluation when it was trained, as a scan of its parquet file.
pub fn held_out_rows(model: &CatalogModel) -> Result<LogicalPlan> {
    let stage = format!("ML.EVALUATE(MODEL {})", model.entry.name);
    let Some(file) = model.evaluation_file() else {
        return Err(HearthError::invalid_param(
            stage,
            "rows",
            "the model held no rows out for evaluation (data_split_method 'no_split', or too few rows); \
             give the rows: ML.EVALUATE(MODEL m, (SELECT …))",
        ));
    };
    // Read from where the fleet reads it (the object store, for a catalog there); its schema from this copy.
    let url = ListingTableUrl::parse(model.evaluation_location())
        .map_err(|e| HearthError::invalid_param(&stage, "rows", "cannot locate the held-out rows").caused_by(e))?;
    let schema = parquet_schema(&file)
        .map_err(|e| HearthError::invalid_param(&stage, "rows", "cannot read the held-out rows").caused_by(e))?;
    let options = ListingOptions::new(Arc::new(ParquetFormat::default())).with_file_extension(".parquet");
    let config = ListingTableConfig::new(url)
        .with_listing_options(options)
        .with_schema(schema);
    let table = ListingTable::try_new(config)?;
    Ok(LogicalPlanBuilder::scan("evaluation", provider_as_source(Arc::new(table)), None)?.build()?)
}

/// The Arrow schema a parquet file was written with.
fn parquet_schema(file: &std::path::Path) -> Result<SchemaRef> {
    let reader =
        std::fs::File::open(file).map_err(|e| HearthError::persistence(file, "cannot open it").caused_by(e))?;
    let builder = datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(reader)
        .map_err(|e| HearthError::persistence(file, "cannot read its parquet metadata").caused_by(e))?;
    Ok(Arc::clone(builder.schema()))
}

/// `ML.TRAINING_INFO`: one row per epoch of a network's training that succeeded; for a linear model, one per
/// solver iteration, from 0 (the objective before the first step; a normal-equation solve has only that row,
/// without a loss, as Spark reports none).
pub(crate) fn training_info(model: &CatalogModel) -> Result<LogicalPlan> {
    let network = trained(model)?;
    let schema = Schema::new(vec![
        Field::new("attempt", DataType::Int64, false),
        Field::new("epoch", DataType::Int64, false),
        Field::new("loss", DataType::Float64, true),
        Field::new("accuracy", DataType::Float64, true),
        Field::new("validation_loss", DataType::Float64, true),
        Field::new("validation_accuracy", DataType::Float64, true),
        Field::new("learning_rate", DataType::Float64, true),
        Field::new("duration_ms", DataType::Float64, true),
    ]);
    let rows = match network.solved() {
        Some(solved) => solver_rows(solved),
        None => epoch_rows(network),
    };
    literal_rows(schema, rows)
}

/// A network's `ML.TRAINING_INFO` rows, one per epoch.
fn epoch_rows(network: Trained<'_>) -> Vec<Vec<ScalarValue>> {
    let attempts = network.summary().map_or(&[][..], |s| &s.attempts);
    network
        .history()
        .iter()
        .map(|stats| {
            // The attempt that ran this epoch: the last one that started before it.
            let attempt = attempts
                .iter()
                .filter(|a| a.resumed_from_epoch < stats.epoch)
                .map(|a| a.attempt)
                .max()
                .unwrap_or(1);
            vec![
                ScalarValue::Int64(Some(attempt as i64)),
                ScalarValue::Int64(Some(stats.epoch as i64)),
                ScalarValue::Float64(Some(stats.loss)),
                ScalarValue::Float64(stats.accuracy),
                ScalarValue::Float64(stats.validation_loss),
                ScalarValue::Float64(stats.validation_accuracy),
                ScalarValue::Float64(Some(stats.learning_rate)),
                ScalarValue::Float64(Some(stats.seconds * 1e3)),
            ]
        })
        .collect()
}

/// A linear model's `ML.TRAINING_INFO` rows, one per solver iteration from 0.
fn solver_rows(solved: &Solved) -> Vec<Vec<ScalarValue>> {
    let direct = solved.total_iterations == 0;
    solved
        .objective_history
        .iter()
        .enumerate()
        .map(|(iteration, objective)| {
            let mut row = vec![
                ScalarValue::Int64(Some(1)),
                ScalarValue::Int64(Some(iteration as i64)),
                ScalarValue::Float64((!direct).then_some(*objective)),
            ];
            row.extend(std::iter::repeat_n(ScalarValue::Float64(None), 5));
            row
        })
        .collect()
}

/// `ML.FEATURE_INFO`: one row per fitted preprocessing stage.
pub(crate) fn feature_info(model: &CatalogModel) -> Result<LogicalPlan> {
    let schema = Schema::new(vec![
        Field::new("stage", DataType::Int64, false),
        Field::new("class", DataType::Utf8, false),
        Field::new("uid", DataType::Utf8, false),
        Field::new("state", DataType::Utf8, false),
        Field::new("params", DataType::Utf8, false),
    ]);
    let mut rows = Vec::new();
    for (index, stage) in model.pipeline.stages()[..model.entry.preprocessing_stages]
        .iter()
        .enumerate()
    {
        rows.push(vec![
            ScalarValue::Int64(Some(index as i64)),
            ScalarValue::from(stage.class()),
            ScalarValue::from(stage.uid()),
            ScalarValue::from(stage.describe()),
            ScalarValue::from(stage.params()?.to_string()),
        ]);
    }
    literal_rows(schema, rows)
}
