//! BigQuery ML's k-means in SQL: `CREATE MODEL … OPTIONS (model_type = 'kmeans', num_clusters = 4)` clusters
//! every column of the query (numbers standardized unless `standardize_features = FALSE`, strings one-hot
//! encoded) — or the `TRANSFORM`'s outputs — with Spark's [`KMeans`], fitted as aggregate queries. Its table
//! functions:
//!
//! | function | rows |
//! |---|---|
//! | `ML.PREDICT(MODEL m, rows)` | the rows, plus `centroid_id` (1, 2, …) and `nearest_centroids_distance` (`[{centroid_id, distance}, …]`) |
//! | `ML.EVALUATE(MODEL m [, rows])` | `davies_bouldin_index` and `mean_squared_distance`, over the rows or (computed when it was created) the training rows |
//! | `ML.CENTROIDS(MODEL m)` | a row per centroid and feature: `numerical_value` in the column's own units, or `categorical_value` |
//! | `ML.TRAINING_INFO(MODEL m)` | the iterations run, the training cost and the cluster sizes |

use std::collections::BTreeMap;

use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::common::ScalarValue;
use datafusion::functions::core::expr_fn::{coalesce, greatest, named_struct};
use datafusion::functions::math::expr_fn::sqrt;
use datafusion::functions_aggregate::expr_fn::avg;
use datafusion::functions_nested::expr_fn::make_array;
use datafusion::logical_expr::{Expr, LogicalPlan, cast, ident, lit, when};
use datafusion::prelude::DataFrame;
use hearth_exec::error::{HearthError, Result};
use hearth_exec::session::Session;
use hearth_exec::udf::args::f64_list_literal;
use hearth_preprocessing::clustering::{KMEANS_COST, KMeans, KMeansModel};
use hearth_preprocessing::pipeline::PipelineModel;
use hearth_preprocessing::stage::Transformer;
use hearth_stats::clustering::DistanceMeasure;
use serde::{Deserialize, Serialize};

use super::catalog::{CatalogModel, read_json};
use super::feature_slots::{ColumnValue, by_column, category_list, category_list_type, slots};
use super::options::ModelOptions;
use super::preprocessing::FEATURES;
use super::rows::{literal_rows, metric_value};

/// The column the fitted pipeline writes each row's cluster (0-based) to.
const CLUSTER: &str = "__cluster";

/// Spark's [`KMeans`] with a statement's options.
pub(super) fn estimator(options: &ModelOptions) -> KMeans {
    KMeans::new()
        .features_col(FEATURES)
        .prediction_col(CLUSTER)
        .k(options.num_clusters)
        .max_iter(options.epochs)
        .tol(options.tol)
        .init_mode(options.kmeans_init.as_str())
        .distance_measure(options.distance.as_str())
        .seed(options.seed as i64)
}

/// The file of a k-means entry holding its training rows' figures.
pub const TRAINING_FIGURES_FILE: &str = "training_evaluation.json";

/// What `ML.EVALUATE` gives over the training rows, kept with the model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(super) struct TrainingFigures {
    davies_bouldin_index: Option<f64>,
    mean_squared_distance: Option<f64>,
}

impl TrainingFigures {
    /// The figures among a trial's metrics (by BigQuery ML's names, which are `ML.EVALUATE`'s columns).
    pub(super) fn of_metrics(metrics: &BTreeMap<String, f64>) -> Self {
        Self {
            davies_bouldin_index: metrics.get("davies_bouldin_index").copied(),
            mean_squared_distance: metrics.get("mean_squared_distance").copied(),
        }
    }

    /// The figures of `model` over its training rows `input`, computed now.
    pub(super) async fn compute(session: &Session, model: &CatalogModel, input: &DataFrame) -> Result<Self> {
        let rows = DataFrame::new(session.context().state(), evaluate(model, input.clone())?)
            .collect()
            .await?;
        Ok(Self {
            davies_bouldin_index: metric_value(&rows, "davies_bouldin_index"),
            mean_squared_distance: metric_value(&rows, "mean_squared_distance"),
        })
    }
}

/// `ML.EVALUATE(MODEL m)` of a k-means model: its training rows' figures, computed when it was created.
pub(crate) fn training_evaluation(model: &CatalogModel) -> Result<LogicalPlan> {
    kmeans_of("EVALUATE", model)?;
    let figures: TrainingFigures = read_json(&model.dir.join(TRAINING_FIGURES_FILE))?;
    let schema = Schema::new(vec![
        Field::new("davies_bouldin_index", DataType::Float64, true),
        Field::new("mean_squared_distance", DataType::Float64, true),
    ]);
    let row = vec![
        ScalarValue::Float64(figures.davies_bouldin_index),
        ScalarValue::Float64(figures.mean_squared_distance),
    ];
    literal_rows(schema, vec![row])
}

/// The k-means model ending a pipeline, if it ends with one.
pub(crate) fn fitted(pipeline: &PipelineModel) -> Option<&KMeansModel> {
    pipeline.last_stage::<KMeansModel>()
}

fn kmeans_of<'a>(function: &str, model: &'a CatalogModel) -> Result<&'a KMeansModel> {
    fitted(&model.pipeline).ok_or_else(|| {
        HearthError::invalid_param(
            format!("ML.{function}(MODEL {})", model.entry.name),
            "MODEL",
            format!(
                "a {} model has no centroids; ML.{function} takes a 'kmeans' model",
                model.entry.model_type
            ),
        )
    })
}

/// The distance from each row's features to `center` as BigQuery ML reports it: Euclidean (not squared), or
/// cosine.
fn distance_to(center: &[f64], measure: DistanceMeasure) -> Expr {
    let cost = KMEANS_COST.call(vec![
        ident(FEATURES),
        lit(f64_list_literal(center)),
        lit(measure.name()),
    ]);
    match measure {
        DistanceMeasure::Euclidean => sqrt(cost),
        DistanceMeasure::Cosine => cost,
    }
}

/// `ML.PREDICT` of a k-means model: the rows, their `centroid_id` and their distance to every centroid.
pub(crate) fn predict(model: &CatalogModel, input: DataFrame) -> Result<LogicalPlan> {
    let kmeans = kmeans_of("PREDICT", model)?;
    let mut projection: Vec<Expr> = input.schema().columns().into_iter().map(Expr::Column).collect();
    let scored = model.pipeline.transform(&input)?;
    projection.push((cast(ident(CLUSTER), DataType::Int64) + lit(1i64)).alias("centroid_id"));
    let distances = kmeans
        .cluster_centers()
        .iter()
        .enumerate()
        .map(|(index, center)| {
            named_struct(vec![
                lit("centroid_id"),
                lit(index as i64 + 1),
                lit("distance"),
                distance_to(center, kmeans.distance_measure()),
            ])
        })
        .collect();
    projection.push(make_array(distances).alias("nearest_centroids_distance"));
    Ok(scored.select(projection)?.into_parts().1)
}

/// `ML.EVALUATE` of a k-means model: the Davies–Bouldin index (the mean over clusters of the largest
/// `(sᵢ + sⱼ) / d(cᵢ, cⱼ)`, `s` a cluster's mean distance to its centroid; empty clusters left out) and the
/// mean squared distance to the nearest centroid (cosine distance under `distance_type = 'cosine'`).
pub(crate) fn evaluate(model: &CatalogModel, input: DataFrame) -> Result<LogicalPlan> {
    let kmeans = kmeans_of("EVALUATE", model)?;
    let (centers, measure) = (kmeans.cluster_centers(), kmeans.distance_measure());
    let scored = model.pipeline.transform(&input)?;
    let cost = KMEANS_COST.call(vec![
        ident(FEATURES),
        lit(f64_list_literal(&centers.concat())),
        lit(measure.name()),
    ]);
    let own_distance = match measure {
        DistanceMeasure::Euclidean => sqrt(cost.clone()),
        DistanceMeasure::Cosine => cost.clone(),
    };
    let spread = |i: usize| format!("__spread_{i}");
    let mut aggregates = vec![avg(cost).alias("mean_squared_distance")];
    for i in 0..centers.len() {
        let own = when(ident(CLUSTER).eq(lit(i as i32)), own_distance.clone()).end()?;
        aggregates.push(avg(own).alias(spread(i)));
    }
    let separation = |a: &[f64], b: &[f64]| match measure {
        DistanceMeasure::Euclidean => measure.distance(a, b).sqrt(),
        DistanceMeasure::Cosine => measure.distance(a, b),
    };
    let worst: Vec<Expr> = (0..centers.len())
        .map(|i| {
            let ratios: Vec<Expr> = (0..centers.len())
                .filter(|&j| j != i)
                .map(|j| (ident(spread(i)) + ident(spread(j))) / lit(separation(&centers[i], &centers[j])))
                .collect();
            if ratios.is_empty() {
                lit(ScalarValue::Float64(None))
            } else {
                greatest(ratios)
            }
        })
        .collect();
    let sum = worst
        .iter()
        .fold(lit(0.0), |sum, w| sum + coalesce(vec![w.clone(), lit(0.0)]));
    let counted = worst.iter().try_fold(lit(0.0), |count, w| {
        Ok::<_, HearthError>(count + when(w.clone().is_not_null(), lit(1.0)).otherwise(lit(0.0))?)
    })?;
    let index = when(counted.clone().gt(lit(0.0)), sum / counted).otherwise(lit(ScalarValue::Float64(None)))?;
    Ok(scored
        .aggregate(vec![], aggregates)?
        .select(vec![
            index.alias("davies_bouldin_index"),
            ident("mean_squared_distance"),
        ])?
        .into_parts()
        .1)
}

/// `ML.TRAINING_INFO` of a k-means model: one row — the iterations run, the training cost and the sizes of
/// the clusters.
pub(crate) fn training_info(model: &CatalogModel) -> Result<LogicalPlan> {
    let kmeans = kmeans_of("TRAINING_INFO", model)?;
    let summary = kmeans.summary();
    let sizes: Vec<ScalarValue> = summary
        .map(|s| s.cluster_sizes.iter().map(|n| ScalarValue::UInt64(Some(*n))).collect())
        .unwrap_or_default();
    let schema = Schema::new(vec![
        Field::new("iterations", DataType::Int64, true),
        Field::new("training_cost", DataType::Float64, true),
        Field::new_list("cluster_sizes", Field::new_list_field(DataType::UInt64, true), true),
    ]);
    let row = vec![
        ScalarValue::Int64(summary.map(|s| s.num_iter as i64)),
        ScalarValue::Float64(summary.map(|s| s.training_cost)),
        ScalarValue::List(ScalarValue::new_list_nullable(&sizes, &DataType::UInt64)),
    ];
    literal_rows(schema, vec![row])
}

/// `ML.CENTROIDS`: a row per centroid and feature — a number column's centroid value in its own units, or a
/// string column's share of each category.
pub(crate) fn centroids(model: &CatalogModel) -> Result<LogicalPlan> {
    let kmeans = kmeans_of("CENTROIDS", model)?;
    let centers = kmeans.cluster_centers();
    let slots = slots(model, centers.first().map_or(0, Vec::len));
    let categories_type = category_list_type("value");
    let no_categories = ScalarValue::try_from(&categories_type)?;
    let mut rows = Vec::new();
    for (id, center) in centers.iter().enumerate() {
        for (feature, value) in by_column(&slots, center, |value, mean, std| value * std + mean) {
            let (number, categories) = match value {
                ColumnValue::Number(value) => (Some(value), no_categories.clone()),
                ColumnValue::Categories(shares) => (None, category_list(&shares, "value")?),
            };
            rows.push(vec![
                ScalarValue::Int64(Some(id as i64 + 1)),
                ScalarValue::from(feature.as_str()),
                ScalarValue::Float64(number),
                categories,
            ]);
        }
    }
    let schema = Schema::new(vec![
        Field::new("centroid_id", DataType::Int64, false),
        Field::new("feature", DataType::Utf8, false),
        Field::new("numerical_value", DataType::Float64, true),
        Field::new("categorical_value", categories_type, true),
    ]);
    literal_rows(schema, rows)
}
