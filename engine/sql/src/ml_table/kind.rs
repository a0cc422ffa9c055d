//! What kind of model an `ML.` call is over, which decides how predicting, evaluating and the training's
//! figures are planned: a supervised model (a network or a linear model, its labels compared and explained)
//! or k-means (clusters, no labels).

use datafusion::logical_expr::LogicalPlan;
use hearth_exec::error::{HearthError, Result};

use super::MlArgs;
use crate::catalog::CatalogModel;
use crate::{kmeans, table_functions};

/// How one kind of model answers the `ML.` functions that differ by kind.
pub(crate) trait ModelKind: Sync {
    /// `ML.PREDICT` of the rows given.
    fn predict(&self, args: &MlArgs<'_>) -> Result<LogicalPlan>;

    /// `ML.EVALUATE` of the rows given, or without them of the rows the model evaluates itself on.
    fn evaluate(&self, args: &MlArgs<'_>) -> Result<LogicalPlan>;

    /// `ML.TRAINING_INFO`: the training's figures.
    fn training_info(&self, model: &CatalogModel) -> Result<LogicalPlan>;

    /// Nothing when the model's predictions can be compared with labels and explained; why not otherwise.
    fn labelled(&self, args: &MlArgs<'_>) -> Result<()>;
}

/// A network or linear model: predictions of a label.
struct Supervised;

impl ModelKind for Supervised {
    fn predict(&self, args: &MlArgs<'_>) -> Result<LogicalPlan> {
        table_functions::predict(args.model, args.rows("the rows to predict are missing")?)
    }

    fn evaluate(&self, args: &MlArgs<'_>) -> Result<LogicalPlan> {
        table_functions::evaluate(args.model, args.rows_or_held_out()?)
    }

    fn training_info(&self, model: &CatalogModel) -> Result<LogicalPlan> {
        table_functions::training_info(model)
    }

    fn labelled(&self, _args: &MlArgs<'_>) -> Result<()> {
        Ok(())
    }
}

/// A k-means model: clusters of its rows.
struct Clustering;

impl ModelKind for Clustering {
    fn predict(&self, args: &MlArgs<'_>) -> Result<LogicalPlan> {
        kmeans::predict(args.model, args.rows("the rows to predict are missing")?)
    }

    fn evaluate(&self, args: &MlArgs<'_>) -> Result<LogicalPlan> {
        match &args.rows {
            Some(rows) => kmeans::evaluate(args.model, rows.clone()),
            // Without rows, k-means gives the figures of its training rows, as BigQuery ML does.
            None => kmeans::training_evaluation(args.model),
        }
    }

    fn training_info(&self, model: &CatalogModel) -> Result<LogicalPlan> {
        kmeans::training_info(model)
    }

    fn labelled(&self, args: &MlArgs<'_>) -> Result<()> {
        Err(HearthError::invalid_param(
            args.name,
            "MODEL",
            format!(
                "{} is a k-means model: it has no labels to compare or network to explain",
                args.model_name
            ),
        ))
    }
}

/// The kind of `model`: k-means when its pipeline ends with a k-means model, else supervised.
pub(crate) fn kind_of(model: &CatalogModel) -> &'static dyn ModelKind {
    match kmeans::fitted(&model.pipeline) {
        Some(_) => &Clustering,
        None => &Supervised,
    }
}
