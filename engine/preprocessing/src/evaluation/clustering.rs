//! Spark's `ClusteringEvaluator` (the silhouette with squared Euclidean or cosine distance) and the clustering
//! accuracy under the best one-to-one matching of clusters to labels (the `cluster_acc` of clustering papers
//! and notebooks). The silhouette is two aggregate queries: per-cluster statistics, then each row scored
//! against them; the accuracy is one.

use std::mem::size_of;
use std::sync::{Arc, LazyLock};

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Float64Array};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Float64Type};
use datafusion::common::{ScalarValue, exec_err};
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::functions_aggregate::expr_fn::sum;
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, ColumnarValue, Documentation, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature, Volatility, col, ident, lit,
};
use datafusion::prelude::DataFrame;
use hearth_exec::error::{HearthError, Result};
use hearth_exec::udf::ML_DOC_SECTION;
use hearth_exec::udf::args::{aggregate_constant, as_string, constant};
use hearth_exec::vector::{vector_dim, vector_values};
use hearth_stats::clustering::{DistanceMeasure, SilhouetteStats};
use hearth_stats::evaluation::ClusteringState;

use super::{Evaluation, decode, state_bytes, unknown_metric, weighted};

const EVALUATOR: &str = "ClusteringEvaluator";
const METRICS: [&str; 2] = ["silhouette", "clusterAccuracy"];
const STATS: &str = "ml_silhouette_stats";
const SCORE: &str = "ml_silhouette";

/// Spark's `ClusteringEvaluator`: `silhouette` (the default; Spark's only metric) with `squaredEuclidean`
/// (default) or `cosine` distance over `features_col` and `prediction_col`, rows weighted by `weight_col`;
/// plus `clusterAccuracy`, the share of rows whose cluster maps to their `label_col` under the best one-to-one
/// matching (Hungarian algorithm). Both are larger-is-better.
///
/// ```
/// # tokio::runtime::Builder::new_multi_thread().build().unwrap().block_on(async {
/// use hearth_preprocessing::prelude::*;
/// let session = Session::builder().with_preprocessing().local(2);
/// let df = session
///     .context()
///     .sql("SELECT * FROM (VALUES (0.0, 0.0, 1), (0.0, 1.0, 1), (5.0, 5.0, 0), (5.0, 6.0, 0)) AS t(x, y, label)")
///     .await
///     .unwrap();
/// let df = VectorAssembler::new().input_cols(["x", "y"]).output_col("features").transform(&df).unwrap();
/// let scored = KMeans::new().k(2).fit(&df).await.unwrap().transform(&df).unwrap();
/// let silhouette = ClusteringEvaluator::new().evaluate(&scored).await.unwrap();
/// assert!((silhouette - 0.980002).abs() < 1e-6);
/// let accuracy = ClusteringEvaluator::new().metric_name("clusterAccuracy").evaluate(&scored).await.unwrap();
/// assert_eq!(accuracy, 1.0);
/// # });
/// ```
#[derive(Clone, Debug)]
pub struct ClusteringEvaluator {
    pub(super) metric_name: String,
    distance_measure: String,
    features_col: String,
    prediction_col: String,
    label_col: String,
    weight_col: Option<String>,
}

impl Default for ClusteringEvaluator {
    fn default() -> Self {
        Self {
            metric_name: "silhouette".to_string(),
            distance_measure: "squaredEuclidean".to_string(),
            features_col: "features".to_string(),
            prediction_col: "prediction".to_string(),
            label_col: "label".to_string(),
            weight_col: None,
        }
    }
}

impl ClusteringEvaluator {
    /// The evaluator with Spark's defaults (`silhouette`, `squaredEuclidean`, columns `features` and
    /// `prediction`).
    pub fn new() -> Self {
        Self::default()
    }

    /// `silhouette` or `clusterAccuracy`.
    pub fn metric_name(mut self, metric: impl Into<String>) -> Self {
        self.metric_name = metric.into();
        self
    }

    /// `squaredEuclidean` or `cosine` (the silhouette's distance).
    pub fn distance_measure(mut self, measure: impl Into<String>) -> Self {
        self.distance_measure = measure.into();
        self
    }

    /// The vector column the clusters were found in.
    pub fn features_col(mut self, column: impl Into<String>) -> Self {
        self.features_col = column.into();
        self
    }

    /// The cluster column.
    pub fn prediction_col(mut self, column: impl Into<String>) -> Self {
        self.prediction_col = column.into();
        self
    }

    /// The true class column (`clusterAccuracy` only).
    pub fn label_col(mut self, column: impl Into<String>) -> Self {
        self.label_col = column.into();
        self
    }

    /// A column of row weights.
    pub fn weight_col(mut self, column: impl Into<String>) -> Self {
        self.weight_col = Some(column.into());
        self
    }

    /// Both metrics are larger-is-better.
    pub fn is_larger_better(&self) -> bool {
        true
    }

    /// The metric over `df`'s rows.
    pub async fn evaluate(&self, df: &DataFrame) -> Result<f64> {
        match self.metric_name.as_str() {
            "silhouette" => self.silhouette(df).await,
            "clusterAccuracy" => Ok(self.accuracy_state(df).await?.accuracy()),
            other => Err(unknown_metric(EVALUATOR, other, &METRICS)),
        }
    }

    /// The merged (cluster, label) weights of `df`'s rows, the clustering accuracy's state.
    pub async fn accuracy_state(&self, df: &DataFrame) -> Result<ClusteringState> {
        let (df, weight) = weighted(df, self.weight_col.as_deref())?;
        let columns = [self.prediction_col.as_str(), self.label_col.as_str(), weight];
        let bytes = state_bytes(&df, EVALUATOR, Evaluation::Clustering, &columns).await?;
        decode(EVALUATOR, ClusteringState::from_bytes(&bytes))
    }

    fn measure(&self) -> Result<DistanceMeasure> {
        match self.distance_measure.as_str() {
            "squaredEuclidean" => Ok(DistanceMeasure::Euclidean),
            "cosine" => Ok(DistanceMeasure::Cosine),
            other => Err(HearthError::invalid_param(
                EVALUATOR,
                "distanceMeasure",
                format!("must be \"squaredEuclidean\" or \"cosine\", got {other:?}"),
            )),
        }
    }

    /// Spark's silhouette: the weighted mean of every row's coefficient.
    async fn silhouette(&self, df: &DataFrame) -> Result<f64> {
        let measure = self.measure()?;
        for column in [&self.features_col, &self.prediction_col] {
            crate::stage::input_field(EVALUATOR, df, column)?;
        }
        let (df, weight) = weighted(df, self.weight_col.as_deref())?;
        let row = |stats: ScalarValue| {
            vec![
                ident(&self.prediction_col),
                ident(&self.features_col),
                ident(weight),
                lit(stats),
            ]
        };
        let call = SILHOUETTE_STATS.call(row(ScalarValue::from(measure.name())));
        let bytes = hearth_exec::udf::aggregate_bytes(df.clone().aggregate(vec![], vec![call.alias("stats")])?).await?;
        let parsed = SilhouetteStats::from_bytes(&bytes).map_err(|e| {
            HearthError::invalid_data(EVALUATOR, &self.prediction_col, "reading the silhouette statistics").caused_by(e)
        })?;
        if parsed.clusters() < 2 {
            return Err(HearthError::invalid_data(
                EVALUATOR,
                &self.prediction_col,
                format!(
                    "the silhouette needs more than one cluster, the rows hold {}",
                    parsed.clusters()
                ),
            ));
        }
        let score = SILHOUETTE.call(row(ScalarValue::Binary(Some(bytes))));
        let totals = df
            .aggregate(
                vec![],
                vec![
                    sum(score * col(weight)).alias("scores"),
                    sum(col(weight)).alias("weight"),
                ],
            )?
            .collect()
            .await?;
        let batch = totals.iter().find(|b| b.num_rows() > 0);
        let value = |i: usize| batch.map_or(0.0, |b| b.column(i).as_primitive::<Float64Type>().value(0));
        Ok(value(0) / value(1))
    }
}

/// `ml_silhouette_stats(prediction, features, weight, measure)`: the silhouette's first pass, per-cluster
/// statistics as bytes; `measure` (`'euclidean'` or `'cosine'`) must be a constant.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct SilhouetteStatsUdaf {
    signature: Signature,
}

/// `ml_silhouette(prediction, features, weight, stats)`: a row's silhouette coefficient against the first
/// pass's statistics (a constant).
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct SilhouetteUdf {
    signature: Signature,
}

/// `ml_silhouette_stats`, built once.
pub(crate) static SILHOUETTE_STATS: LazyLock<Arc<AggregateUDF>> = LazyLock::new(|| {
    Arc::new(AggregateUDF::from(SilhouetteStatsUdaf {
        signature: Signature::any(4, Volatility::Immutable),
    }))
});

/// `ml_silhouette`, built once.
pub(crate) static SILHOUETTE: LazyLock<Arc<ScalarUDF>> = LazyLock::new(|| {
    Arc::new(ScalarUDF::from(SilhouetteUdf {
        signature: Signature::any(4, Volatility::Immutable),
    }))
});

/// What the `prediction` argument of the silhouette's functions holds.
const PREDICTION: &str = "Each row's cluster, a numeric column.";
/// What their `features` argument holds.
const FEATURES: &str = "Each row's point, a vector (a `FixedSizeList` of numbers).";
/// What their `weight` argument holds.
const WEIGHT: &str = "Each row's weight, a number (`1.0` weighs every row the same).";

/// The SQL documentation of `ml_silhouette_stats`.
static STATS_DOCS: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        ML_DOC_SECTION,
        "The first pass of Spark's `ClusteringEvaluator` silhouette, the weighted statistics of each \
         cluster's points that every row's silhouette is measured against, as `Binary` bytes for `ml_silhouette`. \
         A null or non-numeric cluster or weight, or a null vector, fails the query naming the column.",
        "ml_silhouette_stats(prediction, features, weight, measure)",
    )
    .with_argument("prediction", PREDICTION)
    .with_argument("features", FEATURES)
    .with_argument("weight", WEIGHT)
    .with_argument(
        "measure",
        "The distance, a string constant: `'euclidean'` (squared Euclidean, Spark's `squaredEuclidean`) or \
         `'cosine'`.",
    )
    .with_sql_example(
        "```sql\nSELECT ml_silhouette_stats(prediction, features, 1.0, 'euclidean') AS stats FROM clustered\n```",
    )
    .build()
});

/// The SQL documentation of `ml_silhouette`.
static SILHOUETTE_DOCS: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        ML_DOC_SECTION,
        "The second pass of Spark's `ClusteringEvaluator` silhouette: each row's silhouette coefficient against the \
         cluster statistics `ml_silhouette_stats` returned, as a `Float64` (0 for a row alone in its cluster); the \
         weighted mean of the coefficients is the silhouette. A null cluster, weight or vector, or a cluster the \
         statistics do not hold, fails the query.",
        "ml_silhouette(prediction, features, weight, stats)",
    )
    .with_argument("prediction", PREDICTION)
    .with_argument("features", FEATURES)
    .with_argument("weight", WEIGHT)
    .with_argument(
        "stats",
        "The `Binary` bytes `ml_silhouette_stats` returned over the same rows with the same measure, a constant.",
    )
    .build()
});

/// A row's cluster, point and weight, read from the three leading columns.
struct Rows {
    clusters: Vec<f64>,
    points: Vec<f64>,
    weights: Vec<f64>,
    dim: usize,
}

impl Rows {
    fn read(function: &str, names: [&str; 3], values: &[ArrayRef]) -> DfResult<Self> {
        let numbers = |index: usize| -> DfResult<Vec<f64>> {
            let array = cast(&values[index], &DataType::Float64).map_err(|e| {
                DataFusionError::Execution(format!("{function}: column {:?} must be numeric ({e})", names[index]))
            })?;
            let array = array.as_primitive::<Float64Type>();
            if array.null_count() > 0 {
                return exec_err!("{function}: column {:?} holds a null", names[index]);
            }
            Ok(array.values().to_vec())
        };
        let Some(dim) = vector_dim(values[1].data_type()) else {
            return exec_err!(
                "{function}: column {:?} must be a vector, got {}",
                names[1],
                values[1].data_type()
            );
        };
        let (points, nulls) = vector_values(&values[1])?;
        if nulls.is_some_and(|n| n.null_count() > 0) {
            return exec_err!("{function}: column {:?} holds a null vector", names[1]);
        }
        Ok(Self {
            clusters: numbers(0)?,
            weights: numbers(2)?,
            points: points.values().iter().map(|&x| f64::from(x)).collect(),
            dim,
        })
    }

    fn point(&self, row: usize) -> &[f64] {
        &self.points[row * self.dim..(row + 1) * self.dim]
    }
}

impl AggregateUDFImpl for SilhouetteStatsUdaf {
    fn name(&self) -> &str {
        STATS
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::Binary)
    }

    fn state_fields(&self, args: StateFieldsArgs) -> DfResult<Vec<FieldRef>> {
        Ok(vec![Arc::new(Field::new(
            format!("{}[stats]", args.name),
            DataType::Binary,
            true,
        ))])
    }

    fn accumulator(&self, args: AccumulatorArgs) -> DfResult<Box<dyn Accumulator>> {
        let name = as_string(STATS, aggregate_constant(STATS, &args, 3, "measure")?, "measure")?;
        let Some(measure) = DistanceMeasure::parse(&name) else {
            return exec_err!("{STATS}: measure must be 'euclidean' or 'cosine', got {name:?}");
        };
        let names = [0, 1, 2].map(|i| args.expr_fields[i].name().clone());
        Ok(Box::new(StatsAccumulator {
            stats: SilhouetteStats::new(measure),
            names,
        }))
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(&STATS_DOCS)
    }
}

#[derive(Debug)]
struct StatsAccumulator {
    stats: SilhouetteStats,
    names: [String; 3],
}

impl Accumulator for StatsAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> DfResult<()> {
        let names = [0, 1, 2].map(|i| self.names[i].as_str());
        let rows = Rows::read(STATS, names, values)?;
        for row in 0..rows.clusters.len() {
            self.stats
                .add(rows.clusters[row], rows.point(row), rows.weights[row])
                .map_err(|e| DataFusionError::Execution(format!("{STATS}: column {:?}: {e}", names[1])))?;
        }
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> DfResult<()> {
        let states = states[0].as_binary::<i32>();
        for row in 0..states.len() {
            if states.is_valid(row) {
                let other = SilhouetteStats::from_bytes(states.value(row))
                    .map_err(|e| DataFusionError::Execution(format!("{STATS}: {e}")))?;
                self.stats
                    .merge(&other)
                    .map_err(|e| DataFusionError::Execution(format!("{STATS}: {e}")))?;
            }
        }
        Ok(())
    }

    fn state(&mut self) -> DfResult<Vec<ScalarValue>> {
        Ok(vec![ScalarValue::Binary(Some(self.stats.to_bytes()))])
    }

    fn evaluate(&mut self) -> DfResult<ScalarValue> {
        Ok(ScalarValue::Binary(Some(self.stats.to_bytes())))
    }

    fn size(&self) -> usize {
        size_of::<Self>() + self.stats.encoded_len()
    }
}

impl ScalarUDFImpl for SilhouetteUdf {
    fn name(&self) -> &str {
        SCORE
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::Float64)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let stats = match constant(SCORE, &args.args, 3, "stats")? {
            ScalarValue::Binary(Some(bytes)) | ScalarValue::LargeBinary(Some(bytes)) => {
                SilhouetteStats::from_bytes(&bytes).map_err(|e| DataFusionError::Execution(format!("{SCORE}: {e}")))?
            }
            other => return exec_err!("{SCORE}: stats must be the bytes {STATS} returned, got {other}"),
        };
        let values = args.args[..3]
            .iter()
            .map(|value| value.to_array(args.number_rows))
            .collect::<DfResult<Vec<_>>>()?;
        let names = [0, 1, 2].map(|i| args.arg_fields[i].name().as_str());
        let rows = Rows::read(SCORE, names, &values)?;
        let scores = (0..rows.clusters.len())
            .map(|row| stats.coefficient(rows.clusters[row], rows.point(row), rows.weights[row]))
            .collect::<std::result::Result<Vec<f64>, _>>()
            .map_err(|e| DataFusionError::Execution(format!("{SCORE}: {e}")))?;
        Ok(ColumnarValue::Array(Arc::new(Float64Array::from(scores))))
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(&SILHOUETTE_DOCS)
    }
}
