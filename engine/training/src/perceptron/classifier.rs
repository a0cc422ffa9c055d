//! Spark's `MultilayerPerceptronClassifier` and its model.

use datafusion::logical_expr::{ident, lit};
use datafusion::prelude::DataFrame;
use hearth_common::params::new_uid;
use hearth_exec::error::{HearthError, Result};
use hearth_exec::udf::args::f64_list_literal;
use hearth_optim::glm::Solved;
use hearth_optim::perceptron::{MlpFit, MlpSettings, MlpSolver};
use hearth_preprocessing::stage::{Estimator, Transformer, ensure_new_column, serde_stage, with_classifier_scores};
use serde::{Deserialize, Serialize};

use super::scores::PERCEPTRON_SCORES;
use crate::full_batch::{Fitted, FullBatchModel, Inputs, fit_full_batch};

/// Spark's `MultilayerPerceptronClassifier`: `layers` `[inputs, hidden…, classes]`, sigmoid hidden layers and a
/// softmax output, fitted by L-BFGS (`solver` `"l-bfgs"`) or constant-step gradient descent (`"gd"`) over the
/// whole data, rows stacked `block_size` at a time as Spark stacks them (within each rank's partition: like
/// Spark's, the result depends on `block_size` and on how the rows are split). Weights start from Spark's draws
/// for `seed`, or from `initial_weights`. Labels are class indices.
///
/// ```
/// use hearth_training::perceptron::MultilayerPerceptronClassifier;
/// let mlp = MultilayerPerceptronClassifier::new().layers([4, 5, 3]).block_size(64).seed(7);
/// assert_eq!(mlp.get_layers(), [4, 5, 3]);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct MultilayerPerceptronClassifier {
    uid: String,
    features_col: String,
    label_col: String,
    prediction_col: String,
    raw_prediction_col: String,
    probability_col: String,
    #[serde(flatten)]
    settings: MlpSettings,
    workers: usize,
    /// A name given to `solver` that is not one, refused when fitting.
    #[serde(skip)]
    unknown_solver: Option<String>,
}

impl Default for MultilayerPerceptronClassifier {
    fn default() -> Self {
        Self::new()
    }
}

impl MultilayerPerceptronClassifier {
    /// Spark's defaults: solver `l-bfgs`, 100 iterations, `tol` 1e-6, `block_size` 128, `step_size` 0.03, Spark's
    /// default seed; one rank. `layers` must be set.
    pub fn new() -> Self {
        Self {
            uid: new_uid("MultilayerPerceptronClassifier"),
            features_col: "features".to_string(),
            label_col: "label".to_string(),
            prediction_col: "prediction".to_string(),
            raw_prediction_col: "rawPrediction".to_string(),
            probability_col: "probability".to_string(),
            settings: MlpSettings::default(),
            workers: 1,
            unknown_solver: None,
        }
    }

    /// The vector column of features (default `features`).
    pub fn features_col(mut self, column: impl Into<String>) -> Self {
        self.features_col = column.into();
        self
    }

    /// The label column, class indices (default `label`).
    pub fn label_col(mut self, column: impl Into<String>) -> Self {
        self.label_col = column.into();
        self
    }

    /// `[inputs, hidden…, classes]`.
    pub fn layers(mut self, layers: impl IntoIterator<Item = usize>) -> Self {
        self.settings.layers = layers.into_iter().collect();
        self
    }

    /// The layers, as set.
    pub fn get_layers(&self) -> &[usize] {
        &self.settings.layers
    }

    /// `"l-bfgs"` (default) or `"gd"`; another name is refused when fitting.
    pub fn solver(mut self, solver: &str) -> Self {
        match solver {
            "gd" => self.settings.solver = MlpSolver::Gd,
            "l-bfgs" => self.settings.solver = MlpSolver::LBfgs,
            other => self.unknown_solver = Some(other.to_string()),
        }
        self
    }

    /// The most iterations (default 100).
    pub fn max_iter(mut self, iterations: usize) -> Self {
        self.settings.max_iter = iterations;
        self
    }

    /// The relative tolerance (default 1e-6).
    pub fn tol(mut self, tol: f64) -> Self {
        self.settings.tol = tol;
        self
    }

    /// Gradient descent's step (default 0.03).
    pub fn step_size(mut self, step: f64) -> Self {
        self.settings.step_size = step;
        self
    }

    /// Rows stacked into one matrix (default 128).
    pub fn block_size(mut self, rows: usize) -> Self {
        self.settings.block_size = rows;
        self
    }

    /// The seed of the initial weights (default Spark's).
    pub fn seed(mut self, seed: i64) -> Self {
        self.settings.seed = seed;
        self
    }

    /// Weights to start from, in Spark's layout.
    pub fn initial_weights(mut self, weights: Vec<f64>) -> Self {
        self.settings.initial_weights = Some(weights);
        self
    }

    /// Ranks of the barrier stage fitting together (default 1).
    pub fn workers(mut self, workers: usize) -> Self {
        self.workers = workers;
        self
    }

    /// What [`Stage::describe`](hearth_preprocessing::stage::Stage::describe) says.
    fn describe_line(&self) -> String {
        let s = &self.settings;
        format!(
            "layers={:?}, solver={:?}, maxIter={}, blockSize={}, workers={}",
            s.layers, s.solver, s.max_iter, s.block_size, self.workers
        )
    }
}

impl Estimator for MultilayerPerceptronClassifier {
    type Model = MultilayerPerceptronClassificationModel;

    async fn fit(&self, df: &DataFrame) -> Result<MultilayerPerceptronClassificationModel> {
        let refused = |param: &'static str, why: String| Err(HearthError::invalid_param(&self.uid, param, why));
        if let Some(solver) = &self.unknown_solver {
            return refused("solver", format!("must be \"l-bfgs\" or \"gd\", got {solver:?}"));
        }
        if self.settings.tol.is_nan() || self.settings.tol < 0.0 {
            return refused("tol", format!("must be at least 0, got {}", self.settings.tol));
        }
        if self.workers == 0 {
            return refused("workers", "must be at least 1".to_string());
        }
        let inputs = Inputs {
            uid: &self.uid,
            features_col: &self.features_col,
            label_col: &self.label_col,
            weight_col: None,
            workers: self.workers,
        };
        let model = FullBatchModel::Perceptron(self.settings.clone());
        let Fitted { fit, .. } = fit_full_batch(df, &inputs, model).await?;
        Ok(MultilayerPerceptronClassificationModel {
            uid: self.uid.clone(),
            features_col: self.features_col.clone(),
            prediction_col: self.prediction_col.clone(),
            raw_prediction_col: self.raw_prediction_col.clone(),
            probability_col: self.probability_col.clone(),
            fit,
        })
    }
}

/// A fitted [`MultilayerPerceptronClassifier`]: Spark's `weights` and `layers` and the solve's summary;
/// `transform` adds `rawPrediction`, `probability` and `prediction`. Saved and loaded with pipelines.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MultilayerPerceptronClassificationModel {
    uid: String,
    features_col: String,
    prediction_col: String,
    raw_prediction_col: String,
    probability_col: String,
    #[serde(flatten)]
    fit: MlpFit,
}

impl MultilayerPerceptronClassificationModel {
    /// The weights, per layer `W` (outputs × inputs, column-major) then `b`, as Spark lays them out.
    pub fn weights(&self) -> &[f64] {
        &self.fit.weights
    }

    /// `[inputs, hidden…, classes]`.
    pub fn layers(&self) -> &[usize] {
        &self.fit.layers
    }

    /// The solve's objective history and iterations.
    pub fn summary(&self) -> &Solved {
        &self.fit.solved
    }

    /// The output layer's scores before the softmax for one row (Spark's `predictRaw`).
    pub fn predict_raw(&self, features: &[f64]) -> Vec<f64> {
        self.fit.predict_raw(features)
    }

    /// What [`Stage::describe`](hearth_preprocessing::stage::Stage::describe) says.
    fn describe_line(&self) -> String {
        format!(
            "perceptron {:?}, {} iterations",
            self.fit.layers, self.fit.solved.total_iterations
        )
    }
}

impl Transformer for MultilayerPerceptronClassificationModel {
    fn transform(&self, df: &DataFrame) -> Result<DataFrame> {
        for column in [&self.raw_prediction_col, &self.probability_col, &self.prediction_col] {
            ensure_new_column(&self.uid, df, column)?;
        }
        let layers: Vec<f64> = self.fit.layers.iter().map(|l| *l as f64).collect();
        let scores = PERCEPTRON_SCORES.call(vec![
            ident(&self.features_col),
            lit(f64_list_literal(&layers)),
            lit(f64_list_literal(&self.fit.weights)),
        ]);
        let columns = [&self.raw_prediction_col, &self.probability_col, &self.prediction_col];
        with_classifier_scores(df, scores, columns)
    }
}

hearth_preprocessing::stage_class!(estimator MultilayerPerceptronClassifier);
hearth_preprocessing::stage_class!(transformer MultilayerPerceptronClassificationModel);
hearth_preprocessing::stage_example!(
    MultilayerPerceptronClassifier,
    MultilayerPerceptronClassifier::new()
        .layers([2, 3, 2])
        .block_size(4)
        .seed(1)
        .max_iter(20)
);
serde_stage!(
    MultilayerPerceptronClassifier,
    "MultilayerPerceptronClassifier",
    describe_line
);
serde_stage!(
    MultilayerPerceptronClassificationModel,
    "MultilayerPerceptronClassificationModel",
    describe_line
);
