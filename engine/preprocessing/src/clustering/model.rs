//! `KMeansModel`: the fitted centers, the training summary, and `transform` adding each row's cluster.

use datafusion::logical_expr::{ident, lit};
use datafusion::prelude::DataFrame;
use hearth_exec::error::{HearthError, Result};
use hearth_exec::udf::args::f64_list_literal;
use hearth_exec::vector::vector_dim;
use hearth_stats::clustering::{Centers, DistanceMeasure};
use serde::{Deserialize, Serialize};

use super::functions::KMEANS_ASSIGN;
use crate::stage::{Transformer, ensure_new_column, input_field, serde_stage};

/// What fitting found, as Spark's `KMeansSummary` holds it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KMeansSummary {
    /// The weighted cost of the last iteration: each row's distance to its nearest center of that
    /// iteration (squared Euclidean, or cosine), times its weight — Spark's `trainingCost`.
    pub training_cost: f64,
    /// How many rows each final center is nearest to.
    pub cluster_sizes: Vec<u64>,
    /// The iterations run.
    pub num_iter: usize,
}

/// A fitted [`KMeans`](super::KMeans): its centers (`clusterCenters`) and summary; `transform` adds the index of each row's
/// nearest center as an `Int32` column (null for a null vector). Saved and loaded with pipelines, summary
/// included.
///
/// ```
/// use hearth_preprocessing::clustering::KMeansModel;
/// let model = KMeansModel::from_centers(vec![vec![0.0, 0.0], vec![10.0, 10.0]], "euclidean").unwrap();
/// assert_eq!(model.predict(&[9.0, 8.0]), 1);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KMeansModel {
    uid: String,
    features_col: String,
    prediction_col: String,
    distance_measure: DistanceMeasure,
    cluster_centers: Vec<Vec<f64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    summary: Option<KMeansSummary>,
}

impl KMeansModel {
    /// The model a `KMeans` of `uid` fitted, reading `features_col` and writing `prediction_col`.
    pub(super) fn new(
        (uid, features_col, prediction_col): (&str, &str, &str),
        measure: DistanceMeasure,
        centers: Vec<Vec<f64>>,
        summary: KMeansSummary,
    ) -> Self {
        Self {
            uid: uid.to_string(),
            features_col: features_col.to_string(),
            prediction_col: prediction_col.to_string(),
            distance_measure: measure,
            cluster_centers: centers,
            summary: Some(summary),
        }
    }

    /// A model of given centers (all of one width) and measure, without a summary — as Spark's
    /// `KMeans.setInitialModel` takes, or to cluster with centers found elsewhere.
    pub fn from_centers(centers: Vec<Vec<f64>>, distance_measure: &str) -> Result<Self> {
        let uid = hearth_common::params::new_uid("KMeansModel");
        let measure = DistanceMeasure::parse(distance_measure).ok_or_else(|| {
            HearthError::invalid_param(
                &uid,
                "distanceMeasure",
                format!("must be \"euclidean\" or \"cosine\", got {distance_measure:?}"),
            )
        })?;
        Self {
            distance_measure: measure,
            uid,
            features_col: "features".to_string(),
            prediction_col: "prediction".to_string(),
            cluster_centers: centers,
            summary: None,
        }
        .checked()
    }

    /// The centers, one vector each (Spark's `clusterCenters`).
    pub fn cluster_centers(&self) -> &[Vec<f64>] {
        &self.cluster_centers
    }

    /// The training summary; `None` for a model built from given centers.
    pub fn summary(&self) -> Option<&KMeansSummary> {
        self.summary.as_ref()
    }

    /// The distance measure.
    pub fn distance_measure(&self) -> DistanceMeasure {
        self.distance_measure
    }

    /// The features column `transform` reads.
    pub fn get_features_col(&self) -> &str {
        &self.features_col
    }

    /// The cluster column `transform` adds.
    pub fn get_prediction_col(&self) -> &str {
        &self.prediction_col
    }

    /// The same model reading another features column.
    pub fn with_features_col(mut self, column: impl Into<String>) -> Self {
        self.features_col = column.into();
        self
    }

    /// The same model adding another cluster column.
    pub fn with_prediction_col(mut self, column: impl Into<String>) -> Self {
        self.prediction_col = column.into();
        self
    }

    /// The cluster of one point (as wide as the centers).
    pub fn predict(&self, point: &[f64]) -> usize {
        Centers::from_rows(self.width(), &self.cluster_centers)
            .map_or(0, |centers| self.distance_measure.closest(&centers, point).0)
    }

    /// The centers' width.
    fn width(&self) -> usize {
        self.cluster_centers.first().map_or(0, Vec::len)
    }

    /// The model, when its centers are at least one and all of one width of at least one slot (what a loaded
    /// model must hold); else an error naming its parameter `clusterCenters`.
    pub(crate) fn checked(self) -> Result<Self> {
        let width = self.width();
        if width == 0 || Centers::from_rows(width, &self.cluster_centers).is_none() {
            return Err(HearthError::invalid_param(
                &self.uid,
                "clusterCenters",
                format!(
                    "need at least one center, all of the same width (at least one slot), got {} centers",
                    self.cluster_centers.len()
                ),
            ));
        }
        Ok(self)
    }
}

impl Transformer for KMeansModel {
    fn transform(&self, df: &DataFrame) -> Result<DataFrame> {
        let field = input_field(&self.uid, df, &self.features_col)?;
        let dim = self.width();
        if vector_dim(field.data_type()) != Some(dim) {
            return Err(HearthError::schema(
                &self.uid,
                &self.features_col,
                format!(
                    "expected a vector of {dim} slots (the centers' width), got {}",
                    field.data_type()
                ),
            ));
        }
        ensure_new_column(&self.uid, df, &self.prediction_col)?;
        let prediction = KMEANS_ASSIGN.call(vec![
            ident(&self.features_col),
            lit(f64_list_literal(&self.cluster_centers.concat())),
            lit(self.distance_measure.name()),
        ]);
        Ok(df.clone().with_column(&self.prediction_col, prediction)?)
    }
}

// A loaded model must hold usable centers.
crate::stage_class!(transformer KMeansModel, |params, dir| {
    let model = crate::pipeline::from_params::<KMeansModel>(params, dir)?;
    let model = model
        .checked()
        .map_err(|e| HearthError::persistence(dir, "cannot be loaded").caused_by(e))?;
    Ok(crate::pipeline::PipelineStage::transformer(model))
});

impl KMeansModel {
    /// What [`Stage::describe`](crate::stage::Stage::describe) says.
    fn describe_line(&self) -> String {
        let width = self.width();
        match &self.summary {
            Some(summary) => format!(
                "{} centers of {width} slots ({}), training cost {:.6}, {} iterations",
                self.cluster_centers.len(),
                self.distance_measure.name(),
                summary.training_cost,
                summary.num_iter
            ),
            None => format!(
                "{} centers of {width} slots ({})",
                self.cluster_centers.len(),
                self.distance_measure.name()
            ),
        }
    }
}

serde_stage!(KMeansModel, "KMeansModel", describe_line);
