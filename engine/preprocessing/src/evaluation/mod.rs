//! Evaluators with Spark MLlib's names, parameters and metric definitions. Each evaluation is one aggregate
//! query (partial states on the partitions, merged once), whose state the driver reads metrics from.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! use hearth_preprocessing::evaluation::MulticlassClassificationEvaluator;
//! use hearth_exec::session::Session;
//! use hearth_preprocessing::functions::PreprocessingFeature;
//!
//! let session = Session::builder().with_preprocessing().local(2);
//! let scored = session
//!     .context()
//!     .sql("SELECT * FROM (VALUES (0.0, 0.0), (0.0, 1.0), (1.0, 1.0), (1.0, 1.0)) AS t(label, prediction)")
//!     .await
//!     .unwrap();
//! let accuracy = MulticlassClassificationEvaluator::new().metric_name("accuracy").evaluate(&scored).await.unwrap();
//! assert_eq!(accuracy, 0.75);
//! # });
//! ```

use datafusion::logical_expr::{Expr, ident, lit};
use datafusion::prelude::DataFrame;
use futures::future::BoxFuture;
use hearth_stats::evaluation::{BinaryState, MulticlassState, RegressionState};

mod clustering;
mod metric;
mod state;
mod tables;

pub use clustering::{ClusteringEvaluator, SilhouetteStatsUdaf, SilhouetteUdf};
pub(crate) use clustering::{SILHOUETTE, SILHOUETTE_STATS};
pub(crate) use metric::METRIC;
pub use metric::MetricUdf;
pub use metric::metric;
pub(crate) use state::EVALUATION_STATES;
pub use state::evaluation_state;
pub use state::{Evaluation, EvaluationStateUdaf};
pub(crate) use tables::STATE_ROWS;
pub use tables::{CONFUSION_COLUMNS, ROC_BINS, ROC_COLUMNS, StateRowsUdf, StateTable, state_rows};

use hearth_exec::error::{HearthError, Result};

/// What model selection needs of an evaluator (Spark's `Evaluator`): a metric of scored rows and which way
/// is better. Every evaluator of this module is one.
///
/// ```
/// use hearth_preprocessing::evaluation::{Evaluator, RegressionEvaluator};
/// let rmse: &dyn Evaluator = &RegressionEvaluator::new();
/// assert_eq!((rmse.name(), rmse.larger_is_better()), ("rmse", false));
/// ```
pub trait Evaluator: Send + Sync {
    /// The metric over `df`'s rows.
    fn evaluate_frame<'a>(&'a self, df: &'a DataFrame) -> BoxFuture<'a, Result<f64>>;

    /// The metric's name.
    fn name(&self) -> &str;

    /// Whether a larger value is better.
    fn larger_is_better(&self) -> bool;
}

/// Implements [`Evaluator`] for an evaluator with `evaluate`, `metric_name` and `is_larger_better`.
macro_rules! evaluator {
    ($($type:ty),*) => {
        $(impl Evaluator for $type {
            fn evaluate_frame<'a>(&'a self, df: &'a DataFrame) -> BoxFuture<'a, Result<f64>> {
                Box::pin(self.evaluate(df))
            }

            fn name(&self) -> &str {
                &self.metric_name
            }

            fn larger_is_better(&self) -> bool {
                self.is_larger_better()
            }
        })*
    };
}

evaluator!(
    MulticlassClassificationEvaluator,
    BinaryClassificationEvaluator,
    RegressionEvaluator,
    ClusteringEvaluator
);

/// Runs the aggregate of `evaluation` over `args` and returns the merged state's bytes.
async fn state_bytes(df: &DataFrame, evaluator: &str, evaluation: Evaluation, columns: &[&str]) -> Result<Vec<u8>> {
    for column in columns {
        if df.schema().index_of_column_by_name(None, column).is_none() {
            return Err(HearthError::schema(evaluator, *column, "no such column"));
        }
    }
    let args: Vec<Expr> = columns.iter().map(|c| ident(*c)).collect();
    let query = df
        .clone()
        .aggregate(vec![], vec![evaluation_state(evaluation, args).alias("state")])?;
    hearth_exec::udf::aggregate_bytes(query).await
}

/// `df` with a weight column: `weight_col`, or a constant 1 added under a reserved name.
fn weighted<'a>(df: &DataFrame, weight_col: Option<&'a str>) -> Result<(DataFrame, &'a str)> {
    Ok(match weight_col {
        Some(w) => (df.clone(), w),
        None => (df.clone().with_column(WEIGHT_ONE, lit(1.0))?, WEIGHT_ONE),
    })
}

fn unknown_metric(evaluator: &str, metric: &str, known: &[&str]) -> HearthError {
    HearthError::invalid_param(
        evaluator,
        "metricName",
        format!("unknown metric {metric:?}; expected one of {}", known.join(", ")),
    )
}

fn decode<T>(evaluator: &str, state: Result<T, hearth_stats::evaluation::StateDecodeError>) -> Result<T> {
    state.map_err(|e| HearthError::invalid_data(evaluator, "state", "decoding the merged state").caused_by(e))
}

const MULTICLASS: &str = "MulticlassClassificationEvaluator";
const MULTICLASS_METRICS: [&str; 14] = [
    "f1",
    "accuracy",
    "weightedPrecision",
    "weightedRecall",
    "weightedTruePositiveRate",
    "weightedFalsePositiveRate",
    "weightedFMeasure",
    "truePositiveRateByLabel",
    "falsePositiveRateByLabel",
    "precisionByLabel",
    "recallByLabel",
    "fMeasureByLabel",
    "logLoss",
    "hammingLoss",
];

/// Spark's `MulticlassClassificationEvaluator`: `f1` (weighted F-measure, the default), `accuracy`,
/// `weightedPrecision`, `weightedRecall`, `weightedTruePositiveRate`, `weightedFalsePositiveRate`,
/// `weightedFMeasure`, the `…ByLabel` metrics for `metric_label`, `logLoss` (from `probability_col`) and
/// `hammingLoss`.
#[derive(Clone, Debug)]
pub struct MulticlassClassificationEvaluator {
    metric_name: String,
    label_col: String,
    prediction_col: String,
    probability_col: String,
    weight_col: Option<String>,
    metric_label: f64,
    beta: f64,
}

impl Default for MulticlassClassificationEvaluator {
    fn default() -> Self {
        Self {
            metric_name: "f1".to_string(),
            label_col: "label".to_string(),
            prediction_col: "prediction".to_string(),
            probability_col: "probability".to_string(),
            weight_col: None,
            metric_label: 0.0,
            beta: 1.0,
        }
    }
}

impl MulticlassClassificationEvaluator {
    /// The evaluator with Spark's defaults (`f1`, columns `label`, `prediction`, `probability`).
    pub fn new() -> Self {
        Self::default()
    }

    /// The metric `evaluate` returns.
    pub fn metric_name(mut self, metric: impl Into<String>) -> Self {
        self.metric_name = metric.into();
        self
    }

    /// The true label column.
    pub fn label_col(mut self, column: impl Into<String>) -> Self {
        self.label_col = column.into();
        self
    }

    /// The predicted label column.
    pub fn prediction_col(mut self, column: impl Into<String>) -> Self {
        self.prediction_col = column.into();
        self
    }

    /// The probability vector column (`logLoss` only).
    pub fn probability_col(mut self, column: impl Into<String>) -> Self {
        self.probability_col = column.into();
        self
    }

    /// A column of row weights (default: every row weighs 1).
    pub fn weight_col(mut self, column: impl Into<String>) -> Self {
        self.weight_col = Some(column.into());
        self
    }

    /// The label the `…ByLabel` metrics are about.
    pub fn metric_label(mut self, label: f64) -> Self {
        self.metric_label = label;
        self
    }

    /// β of the F-measures.
    pub fn beta(mut self, beta: f64) -> Self {
        self.beta = beta;
        self
    }

    /// Whether a larger value of the metric is better (false for the losses and false positive rates).
    pub fn is_larger_better(&self) -> bool {
        !matches!(
            self.metric_name.as_str(),
            "weightedFalsePositiveRate" | "falsePositiveRateByLabel" | "logLoss" | "hammingLoss"
        )
    }

    /// The metric over `df`'s rows.
    pub async fn evaluate(&self, df: &DataFrame) -> Result<f64> {
        if !MULTICLASS_METRICS.contains(&self.metric_name.as_str()) {
            return Err(unknown_metric(MULTICLASS, &self.metric_name, &MULTICLASS_METRICS));
        }
        let state = self.state(df).await?;
        self.metric(&state)
    }

    /// The merged evaluation state of `df`'s rows, from which every metric can be read.
    pub async fn state(&self, df: &DataFrame) -> Result<MulticlassState> {
        let (df, weight) = weighted(df, self.weight_col.as_deref())?;
        let mut columns = vec![self.label_col.as_str(), self.prediction_col.as_str(), weight];
        if self.metric_name == "logLoss" {
            columns.push(self.probability_col.as_str());
        }
        let bytes = state_bytes(&df, MULTICLASS, Evaluation::Multiclass, &columns).await?;
        decode(MULTICLASS, MulticlassState::from_bytes(&bytes))
    }

    /// This evaluator's metric read from a state.
    pub fn metric(&self, state: &MulticlassState) -> Result<f64> {
        let label = self.metric_label;
        Ok(match self.metric_name.as_str() {
            "f1" | "weightedFMeasure" => state.weighted_f_measure(self.beta),
            "accuracy" => state.accuracy(),
            "weightedPrecision" => state.weighted_precision(),
            "weightedRecall" | "weightedTruePositiveRate" => state.weighted_recall(),
            "weightedFalsePositiveRate" => state.weighted_false_positive_rate(),
            "truePositiveRateByLabel" | "recallByLabel" => state.recall(label),
            "falsePositiveRateByLabel" => state.false_positive_rate(label),
            "precisionByLabel" => state.precision(label),
            "fMeasureByLabel" => state.f_measure(label, self.beta),
            "logLoss" => state.log_loss(),
            "hammingLoss" => state.hamming_loss(),
            other => return Err(unknown_metric(MULTICLASS, other, &MULTICLASS_METRICS)),
        })
    }
}

/// The name of the constant weight column evaluators add when no weight column is set.
const WEIGHT_ONE: &str = "__hearth_weight_one";

const BINARY: &str = "BinaryClassificationEvaluator";
const BINARY_METRICS: [&str; 2] = ["areaUnderROC", "areaUnderPR"];

/// Spark's `BinaryClassificationEvaluator`: `areaUnderROC` (the default) or `areaUnderPR` of the score in
/// `raw_prediction_col` — a number, or a vector whose second slot is the positive class's score — with
/// Spark's down-sampling to `num_bins` bins.
#[derive(Clone, Debug)]
pub struct BinaryClassificationEvaluator {
    metric_name: String,
    label_col: String,
    raw_prediction_col: String,
    weight_col: Option<String>,
    num_bins: usize,
}

impl Default for BinaryClassificationEvaluator {
    fn default() -> Self {
        Self {
            metric_name: "areaUnderROC".to_string(),
            label_col: "label".to_string(),
            raw_prediction_col: "rawPrediction".to_string(),
            weight_col: None,
            num_bins: 1000,
        }
    }
}

impl BinaryClassificationEvaluator {
    /// The evaluator with Spark's defaults (`areaUnderROC`, columns `label` and `rawPrediction`, 1000 bins).
    pub fn new() -> Self {
        Self::default()
    }

    /// `areaUnderROC` or `areaUnderPR`.
    pub fn metric_name(mut self, metric: impl Into<String>) -> Self {
        self.metric_name = metric.into();
        self
    }

    /// The true label column (positive when > 0.5).
    pub fn label_col(mut self, column: impl Into<String>) -> Self {
        self.label_col = column.into();
        self
    }

    /// The score column.
    pub fn raw_prediction_col(mut self, column: impl Into<String>) -> Self {
        self.raw_prediction_col = column.into();
        self
    }

    /// A column of row weights.
    pub fn weight_col(mut self, column: impl Into<String>) -> Self {
        self.weight_col = Some(column.into());
        self
    }

    /// Both of its metrics are larger-is-better.
    pub fn is_larger_better(&self) -> bool {
        true
    }

    /// Bins of the curves (0: every distinct score).
    pub fn num_bins(mut self, bins: usize) -> Self {
        self.num_bins = bins;
        self
    }

    /// The metric over `df`'s rows.
    pub async fn evaluate(&self, df: &DataFrame) -> Result<f64> {
        let state = self.state(df).await?;
        self.metric(&state)
    }

    /// The merged evaluation state of `df`'s rows.
    pub async fn state(&self, df: &DataFrame) -> Result<BinaryState> {
        let (df, weight) = weighted(df, self.weight_col.as_deref())?;
        let columns = [self.raw_prediction_col.as_str(), self.label_col.as_str(), weight];
        let bytes = state_bytes(&df, BINARY, Evaluation::Binary, &columns).await?;
        decode(BINARY, BinaryState::from_bytes(&bytes))
    }

    /// This evaluator's metric read from a state.
    pub fn metric(&self, state: &BinaryState) -> Result<f64> {
        match self.metric_name.as_str() {
            "areaUnderROC" => Ok(state.area_under_roc(self.num_bins)),
            "areaUnderPR" => Ok(state.area_under_pr(self.num_bins)),
            other => Err(unknown_metric(BINARY, other, &BINARY_METRICS)),
        }
    }
}

const REGRESSION: &str = "RegressionEvaluator";
const REGRESSION_METRICS: [&str; 5] = ["rmse", "mse", "r2", "mae", "var"];

/// Spark's `RegressionEvaluator`: `rmse` (the default), `mse`, `r2` (optionally through the origin), `mae`,
/// `var` (explained variance).
#[derive(Clone, Debug)]
pub struct RegressionEvaluator {
    metric_name: String,
    label_col: String,
    prediction_col: String,
    weight_col: Option<String>,
    through_origin: bool,
}

impl Default for RegressionEvaluator {
    fn default() -> Self {
        Self {
            metric_name: "rmse".to_string(),
            label_col: "label".to_string(),
            prediction_col: "prediction".to_string(),
            weight_col: None,
            through_origin: false,
        }
    }
}

impl RegressionEvaluator {
    /// The evaluator with Spark's defaults (`rmse`, columns `label` and `prediction`).
    pub fn new() -> Self {
        Self::default()
    }

    /// The metric `evaluate` returns.
    pub fn metric_name(mut self, metric: impl Into<String>) -> Self {
        self.metric_name = metric.into();
        self
    }

    /// The true value column.
    pub fn label_col(mut self, column: impl Into<String>) -> Self {
        self.label_col = column.into();
        self
    }

    /// The predicted value column.
    pub fn prediction_col(mut self, column: impl Into<String>) -> Self {
        self.prediction_col = column.into();
        self
    }

    /// A column of row weights.
    pub fn weight_col(mut self, column: impl Into<String>) -> Self {
        self.weight_col = Some(column.into());
        self
    }

    /// `r2` of a model fitted through the origin.
    pub fn through_origin(mut self, through_origin: bool) -> Self {
        self.through_origin = through_origin;
        self
    }

    /// Whether a larger value of the metric is better (`r2` and `var`).
    pub fn is_larger_better(&self) -> bool {
        matches!(self.metric_name.as_str(), "r2" | "var")
    }

    /// The metric over `df`'s rows.
    pub async fn evaluate(&self, df: &DataFrame) -> Result<f64> {
        if !REGRESSION_METRICS.contains(&self.metric_name.as_str()) {
            return Err(unknown_metric(REGRESSION, &self.metric_name, &REGRESSION_METRICS));
        }
        let state = self.state(df).await?;
        self.metric(&state)
    }

    /// The merged evaluation state of `df`'s rows.
    pub async fn state(&self, df: &DataFrame) -> Result<RegressionState> {
        let (df, weight) = weighted(df, self.weight_col.as_deref())?;
        let columns = [self.label_col.as_str(), self.prediction_col.as_str(), weight];
        let bytes = state_bytes(&df, REGRESSION, Evaluation::Regression, &columns).await?;
        decode(REGRESSION, RegressionState::from_bytes(&bytes))
    }

    /// This evaluator's metric read from a state.
    pub fn metric(&self, state: &RegressionState) -> Result<f64> {
        Ok(match self.metric_name.as_str() {
            "rmse" => state.rmse(),
            "mse" => state.mse(),
            "r2" => state.r2(self.through_origin),
            "mae" => state.mae(),
            "var" => state.explained_variance(),
            other => return Err(unknown_metric(REGRESSION, other, &REGRESSION_METRICS)),
        })
    }
}
