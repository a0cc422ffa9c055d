//! An evaluation's metrics as one value to show: Spark's metrics of a classifier or a regressor on scored rows.

use datafusion::prelude::DataFrame;
use hearth_exec::error::Result;
use hearth_preprocessing::evaluation::{
    BinaryClassificationEvaluator, MulticlassClassificationEvaluator, RegressionEvaluator,
};
use hearth_preprocessing::stage::ClassifierColumns;
use hearth_stats::evaluation::{BinaryState, MulticlassState};
use hearth_training::train::RegressionModel;

use super::plot::{SPARK_NUM_BINS, Svg, confusion_matrix, pr_curve, roc_curve};
use super::{Grid, Rich};

/// Named metric values with a caption, e.g. what [`Metrics::of_classifier`] computes.
///
/// ```
/// use hearth_display::{Metrics, Rich};
/// let metrics = Metrics::new("Evaluation").with("f1", 0.7766);
/// assert_eq!(metrics.get("f1"), Some(0.7766));
/// assert!(metrics.to_text().contains("| f1     | 0.7766 |"));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Metrics {
    caption: String,
    values: Vec<(String, f64)>,
    multiclass: Option<MulticlassState>,
    binary: Option<BinaryState>,
}

/// The caption of an evaluation of rows whose weights sum to `weight` (their count, unweighted).
fn evaluated(weight: f64) -> String {
    format!("Evaluation on {weight} rows")
}

/// The multiclass metrics a classifier's evaluation shows (Spark's names).
const CLASSIFICATION: [&str; 5] = ["f1", "accuracy", "weightedPrecision", "weightedRecall", "logLoss"];

/// The metrics a binary classifier's evaluation adds.
const BINARY: [&str; 2] = ["areaUnderROC", "areaUnderPR"];

/// The metrics a regressor's evaluation shows.
const REGRESSION: [&str; 4] = ["rmse", "mse", "mae", "r2"];

impl Metrics {
    /// No metrics yet, under `caption`.
    pub fn new(caption: impl Into<String>) -> Self {
        Self {
            caption: caption.into(),
            values: Vec::new(),
            multiclass: None,
            binary: None,
        }
    }

    /// Adds metric `name`.
    pub fn with(mut self, name: impl Into<String>, value: f64) -> Self {
        self.values.push((name.into(), value));
        self
    }

    /// Metric `name`, when present.
    pub fn get(&self, name: &str) -> Option<f64> {
        self.values.iter().find(|(n, _)| n == name).map(|(_, v)| *v)
    }

    /// Every metric, in order.
    pub fn values(&self) -> &[(String, f64)] {
        &self.values
    }

    /// `model`'s metrics on `scored` (rows it transformed, with their labels): f1, accuracy, weighted
    /// precision and recall and log loss; areaUnderROC and areaUnderPR for two classes — as `ML.EVALUATE`.
    pub async fn of_classifier(model: &dyn ClassifierColumns, scored: &DataFrame) -> Result<Self> {
        let multiclass = MulticlassClassificationEvaluator::new()
            .label_col(model.label_col())
            .prediction_col(model.prediction_col())
            .probability_col(model.probability_col());
        let state = multiclass.clone().metric_name("logLoss").state(scored).await?;
        let mut metrics = Self::new(evaluated(state.weight()));
        for name in CLASSIFICATION {
            metrics = metrics.with(name, multiclass.clone().metric_name(name).metric(&state)?);
        }
        metrics.multiclass = Some(state);
        if model.num_classes() == 2 {
            let binary = BinaryClassificationEvaluator::new()
                .label_col(model.label_col())
                .raw_prediction_col(model.raw_prediction_col());
            let state = binary.state(scored).await?;
            for name in BINARY {
                metrics = metrics.with(name, binary.clone().metric_name(name).metric(&state)?);
            }
            metrics.binary = Some(state);
        }
        Ok(metrics)
    }

    /// `model`'s metrics on `scored`: rmse, mse, mae and r2.
    pub async fn of_regressor(model: &RegressionModel, scored: &DataFrame) -> Result<Self> {
        let evaluator = RegressionEvaluator::new()
            .label_col(model.label_col())
            .prediction_col(model.prediction_col());
        let state = evaluator.state(scored).await?;
        let mut metrics = Self::new(evaluated(state.weight()));
        for name in REGRESSION {
            metrics = metrics.with(name, evaluator.clone().metric_name(name).metric(&state)?);
        }
        Ok(metrics)
    }

    /// Its plots: the confusion matrix of a classifier, and the ROC and precision-recall curves of a binary
    /// one (Spark's curves, from [`SPARK_NUM_BINS`] bins).
    pub fn plots(&self) -> Result<Vec<Svg>> {
        let mut plots = Vec::new();
        if let Some(state) = &self.multiclass {
            plots.push(confusion_matrix(state)?);
        }
        if let Some(state) = &self.binary {
            plots.push(roc_curve(state, SPARK_NUM_BINS)?);
            plots.push(pr_curve(state, SPARK_NUM_BINS)?);
        }
        Ok(plots)
    }

    fn grid(&self) -> Grid {
        let mut grid = Grid::new(["metric", "value"]).caption(&self.caption);
        for (name, value) in &self.values {
            grid.push([name.clone(), format!("{value:.4}")]);
        }
        grid
    }
}

impl Rich for Metrics {
    /// The table, with its plots beside it.
    fn to_html(&self) -> String {
        let mut html = self.grid().to_html();
        for plot in self.plots().unwrap_or_default() {
            html.push('\n');
            html.push_str(&plot.to_html());
        }
        html
    }

    fn to_text(&self) -> String {
        self.grid().to_text()
    }
}
