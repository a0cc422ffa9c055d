//! Clustering with Spark MLlib's `KMeans`: parameters, defaults and update rules as Spark's, fitted as
//! aggregate queries — one pass over the data per iteration of Lloyd's algorithm, partial sums on the
//! partitions (the executors, on a fleet), merged once — and a [`KMeansModel`] that predicts with a scalar
//! function whose centers are a literal argument, so it transforms anywhere and from SQL.
//!
//! ```
//! # tokio::runtime::Builder::new_multi_thread().build().unwrap().block_on(async {
//! use hearth_preprocessing::prelude::*;
//!
//! let session = Session::builder().with_preprocessing().local(2);
//! let df = session
//!     .context()
//!     .sql("SELECT * FROM (VALUES (0.0, 0.0), (0.0, 1.0), (9.0, 9.0), (9.0, 10.0)) AS t(x, y)")
//!     .await
//!     .unwrap();
//! let df = VectorAssembler::new().input_cols(["x", "y"]).output_col("features").transform(&df).unwrap();
//! let model = KMeans::new().k(2).seed(1).fit(&df).await.unwrap();
//! let mut centers = model.cluster_centers().to_vec();
//! centers.sort_by(|a, b| a[0].total_cmp(&b[0]));
//! assert_eq!(centers, vec![vec![0.0, 0.5], vec![9.0, 9.5]]);
//! assert_eq!(model.summary().unwrap().training_cost, 1.0);
//! # });
//! ```

use datafusion::arrow::datatypes::DataType;
use datafusion::logical_expr::{cast, ident, lit};
use datafusion::prelude::DataFrame;
use hearth_common::params::new_uid;
use hearth_exec::cache::{DEFAULT_MEMORY_BUDGET, for_rereading};
use hearth_exec::error::{HearthError, Result};
use hearth_exec::udf::args::f64_list_literal;
use hearth_exec::vector::vector_dim;
use hearth_stats::clustering::DistanceMeasure;
use serde::{Deserialize, Serialize};

pub(crate) mod functions;
mod init;
mod model;

pub use functions::KMEANS_COST;
pub(crate) use functions::{KMEANS_ASSIGN, KMEANS_SUMS};
pub use functions::{KMeansRowUdf, KMeansSumsUdaf, PerRow};
pub use model::{KMeansModel, KMeansSummary};

use crate::pipeline::reads_files;
use crate::stage::{Estimator, input_field, serde_stage};
use init::{Init, sums_of};

/// The weight column of the prepared rows when no `weight_col` is set.
const UNIT_WEIGHT: &str = "__kmeans_unit_weight";

/// Spark's `KMeans`: `k` clusters (default 2) by Lloyd's algorithm from `k-means||` (default, `init_steps` 2)
/// or `random` initial centers, for at most `max_iter` iterations (20) or until no center moves more than
/// `tol` (1e-4); `euclidean` (default) or `cosine` distance; rows weighted by `weight_col` when set. The seed
/// defaults to Spark's (the hash of its class name). A row's draw is a hash of its values, so the same data
/// and seed give the same model on `local[N]` and on a fleet.
///
/// Like Spark, fitting makes a pass per iteration; when the input is read from files its features are cached
/// in memory first so the files are parsed once.
///
/// ```
/// use hearth_preprocessing::clustering::KMeans;
/// let kmeans = KMeans::new().k(10).max_iter(50).distance_measure("cosine").weight_col("w");
/// assert_eq!(kmeans.get_k(), 10);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct KMeans {
    uid: String,
    features_col: String,
    prediction_col: String,
    k: usize,
    max_iter: usize,
    tol: f64,
    init_mode: String,
    init_steps: usize,
    seed: i64,
    distance_measure: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    weight_col: Option<String>,
}

/// Spark's default seed for `KMeans`: `"org.apache.spark.ml.clustering.KMeans".hashCode`.
pub const DEFAULT_SEED: i64 = -1_689_246_527;

impl Default for KMeans {
    fn default() -> Self {
        Self::new()
    }
}

impl KMeans {
    /// KMeans with Spark's defaults.
    pub fn new() -> Self {
        Self {
            uid: new_uid("KMeans"),
            features_col: "features".to_string(),
            prediction_col: "prediction".to_string(),
            k: 2,
            max_iter: 20,
            tol: 1e-4,
            init_mode: "k-means||".to_string(),
            init_steps: 2,
            seed: DEFAULT_SEED,
            distance_measure: "euclidean".to_string(),
            weight_col: None,
        }
    }

    /// The vector column to cluster (default `features`).
    pub fn features_col(mut self, column: impl Into<String>) -> Self {
        self.features_col = column.into();
        self
    }

    /// The cluster index column the model adds (default `prediction`).
    pub fn prediction_col(mut self, column: impl Into<String>) -> Self {
        self.prediction_col = column.into();
        self
    }

    /// How many clusters (more than 1).
    pub fn k(mut self, k: usize) -> Self {
        self.k = k;
        self
    }

    /// The number of clusters asked for.
    pub fn get_k(&self) -> usize {
        self.k
    }

    /// The most iterations of Lloyd's algorithm.
    pub fn max_iter(mut self, iterations: usize) -> Self {
        self.max_iter = iterations;
        self
    }

    /// Convergence: iterations stop when no center moved further than this.
    pub fn tol(mut self, tol: f64) -> Self {
        self.tol = tol;
        self
    }

    /// `"k-means||"` or `"random"`.
    pub fn init_mode(mut self, mode: impl Into<String>) -> Self {
        self.init_mode = mode.into();
        self
    }

    /// The sampling steps of k-means|| (more than 0).
    pub fn init_steps(mut self, steps: usize) -> Self {
        self.init_steps = steps;
        self
    }

    /// The seed of the initial centers' draws.
    pub fn seed(mut self, seed: i64) -> Self {
        self.seed = seed;
        self
    }

    /// `"euclidean"` or `"cosine"`.
    pub fn distance_measure(mut self, measure: impl Into<String>) -> Self {
        self.distance_measure = measure.into();
        self
    }

    /// A column of non-negative row weights.
    pub fn weight_col(mut self, column: impl Into<String>) -> Self {
        self.weight_col = Some(column.into());
        self
    }

    /// The distance measure, once every parameter is checked as Spark checks them.
    fn checked(&self) -> Result<DistanceMeasure> {
        if self.k < 2 {
            return Err(HearthError::invalid_param(
                &self.uid,
                "k",
                format!("must be greater than 1, got {}", self.k),
            ));
        }
        if self.tol.is_nan() || self.tol < 0.0 {
            return Err(HearthError::invalid_param(
                &self.uid,
                "tol",
                format!("must be at least 0, got {}", self.tol),
            ));
        }
        if !["k-means||", "random"].contains(&self.init_mode.as_str()) {
            return Err(HearthError::invalid_param(
                &self.uid,
                "initMode",
                format!("must be \"k-means||\" or \"random\", got {:?}", self.init_mode),
            ));
        }
        if self.init_steps == 0 {
            return Err(HearthError::invalid_param(
                &self.uid,
                "initSteps",
                "must be greater than 0",
            ));
        }
        self.checked_measure()
    }

    /// The distance measure, or the error naming the parameter.
    fn checked_measure(&self) -> Result<DistanceMeasure> {
        DistanceMeasure::parse(&self.distance_measure).ok_or_else(|| {
            HearthError::invalid_param(
                &self.uid,
                "distanceMeasure",
                format!("must be \"euclidean\" or \"cosine\", got {:?}", self.distance_measure),
            )
        })
    }

    /// The vector width of the features column.
    fn features_dim(&self, df: &DataFrame) -> Result<usize> {
        let field = input_field(&self.uid, df, &self.features_col)?;
        match vector_dim(field.data_type()) {
            Some(dim) if dim > 0 => Ok(dim),
            _ => Err(HearthError::schema(
                &self.uid,
                &self.features_col,
                format!(
                    "must be a vector column of at least one slot, got {}",
                    field.data_type()
                ),
            )),
        }
    }

    /// The weight column of the prepared rows.
    fn weight_name(&self) -> &str {
        self.weight_col.as_deref().unwrap_or(UNIT_WEIGHT)
    }

    /// The features and weights as the passes read them, cached when they come from files.
    async fn prepared(&self, df: &DataFrame) -> Result<DataFrame> {
        let weight = match &self.weight_col {
            Some(column) => {
                let field = input_field(&self.uid, df, column)?;
                if !field.data_type().is_numeric() {
                    return Err(HearthError::schema(
                        &self.uid,
                        column,
                        format!("a weight column must be numeric, got {}", field.data_type()),
                    ));
                }
                cast(ident(column), DataType::Float64)
            }
            None => lit(1.0),
        };
        let data = df
            .clone()
            .select(vec![ident(&self.features_col), weight.alias(self.weight_name())])?;
        // Lloyd's passes read the rows again and again: kept once (on a fleet, read again on the executors).
        Ok(match reads_files(data.logical_plan()) {
            true => for_rereading(data, DEFAULT_MEMORY_BUDGET).await?,
            false => data,
        })
    }
}

impl KMeans {
    /// One pass of Lloyd's algorithm over the prepared rows with `centers`.
    async fn lloyd_pass(
        &self,
        data: &DataFrame,
        centers: &[Vec<f64>],
        measure: DistanceMeasure,
    ) -> Result<hearth_stats::clustering::ClusterSums> {
        let call = KMEANS_SUMS.call(vec![
            ident(&self.features_col),
            ident(self.weight_name()),
            lit(f64_list_literal(&centers.concat())),
            lit(measure.name()),
        ]);
        sums_of(data.clone().aggregate(vec![], vec![call.alias("sums")])?).await
    }
}

impl Estimator for KMeans {
    type Model = KMeansModel;

    async fn fit(&self, df: &DataFrame) -> Result<KMeansModel> {
        let measure = self.checked()?;
        let dim = self.features_dim(df)?;
        let data = self.prepared(df).await?;
        let init = Init {
            data: &data,
            features: &self.features_col,
            weight: self.weight_name(),
            dim,
            k: self.k,
            seed: self.seed,
            measure,
        };
        let mut centers = match self.init_mode.as_str() {
            "random" => init.random().await?,
            _ => init.parallel(self.init_steps).await?,
        };
        if centers.is_empty() {
            return Err(HearthError::invalid_data(
                &self.uid,
                &self.features_col,
                "cannot fit on an empty input (no rows)",
            ));
        }
        let (mut iterations, mut cost, mut converged) = (0, 0.0, false);
        while iterations < self.max_iter && !converged {
            let sums = self.lloyd_pass(&data, &centers, measure).await?;
            if iterations == 0 && (0..sums.k()).all(|c| sums.weight(c) == 0.0) {
                return Err(HearthError::invalid_data(
                    &self.uid,
                    &self.features_col,
                    "cannot fit on rows whose weights are all 0",
                ));
            }
            converged = true;
            for (cluster, center) in centers.iter_mut().enumerate() {
                if let Some(moved) = sums.centroid(measure, cluster) {
                    converged &= measure.converged(center, &moved, self.tol);
                    *center = moved;
                }
            }
            cost = sums.cost();
            iterations += 1;
        }
        let sizes = self.lloyd_pass(&data, &centers, measure).await?;
        Ok(KMeansModel::new(
            (&self.uid, &self.features_col, &self.prediction_col),
            measure,
            centers,
            KMeansSummary {
                training_cost: cost,
                cluster_sizes: (0..sizes.k()).map(|c| sizes.rows(c)).collect(),
                num_iter: iterations,
            },
        ))
    }
}

crate::stage_class!(estimator KMeans);
crate::stage_example!(KMeans, KMeans::new().features_col("features").k(2).seed(1));

impl KMeans {
    /// What [`Stage::describe`](crate::stage::Stage::describe) says.
    fn summary(&self) -> String {
        format!(
            "k={}, initMode={}, maxIter={}, distanceMeasure={}",
            self.k, self.init_mode, self.max_iter, self.distance_measure
        )
    }
}

serde_stage!(KMeans, "KMeans", summary);
