//! Spark's `LinearRegression` and its model.

use datafusion::logical_expr::{ident, lit};
use datafusion::prelude::DataFrame;
use hearth_common::params::new_uid;
use hearth_exec::error::{HearthError, Result};
use hearth_exec::udf::args::f64_list_literal;
use hearth_optim::glm::{LinearFit, LinearSettings, LinearSolver, Solved};
use hearth_preprocessing::stage::{Estimator, Transformer, ensure_new_column, serde_stage};
use serde::{Deserialize, Serialize};

use super::scores::LINEAR_PREDICT;
use super::setters::default_label_col;
use crate::full_batch::{Fitted, FullBatchModel, Inputs, check_params, fit_full_batch};

/// Spark's `LinearRegression` (squared error): by the normal equation up to 4,096 features (`solver` `auto` or
/// `normal`), by L-BFGS (`l-bfgs`, OWL-QN with an L1 part) otherwise, with an elastic-net penalty, to Spark's
/// coefficients, over `workers` ranks of the barrier stage.
///
/// ```
/// use hearth_training::linear::LinearRegression;
/// let lr = LinearRegression::new().solver("l-bfgs").reg_param(0.1).fit_intercept(false);
/// assert_eq!(lr.get_solver(), "l-bfgs");
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LinearRegression {
    uid: String,
    features_col: String,
    label_col: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    weight_col: Option<String>,
    prediction_col: String,
    #[serde(flatten)]
    settings: LinearSettings,
    workers: usize,
    /// A name given to `solver` that is not one, refused when fitting.
    #[serde(skip)]
    unknown_solver: Option<String>,
}

impl Default for LinearRegression {
    fn default() -> Self {
        Self::new()
    }
}

impl LinearRegression {
    /// Spark's defaults: no penalty, solver `auto`, 100 iterations, `tol` 1e-6, intercept, standardization; one
    /// rank.
    pub fn new() -> Self {
        Self {
            uid: new_uid("LinearRegression"),
            features_col: "features".to_string(),
            label_col: "label".to_string(),
            weight_col: None,
            prediction_col: "prediction".to_string(),
            settings: LinearSettings::default(),
            workers: 1,
            unknown_solver: None,
        }
    }

    super::setters::glm_setters!();

    /// `"auto"`, `"normal"` or `"l-bfgs"`; another name is refused when fitting.
    pub fn solver(mut self, solver: &str) -> Self {
        match solver {
            "auto" => self.settings.solver = LinearSolver::Auto,
            "normal" => self.settings.solver = LinearSolver::Normal,
            "l-bfgs" => self.settings.solver = LinearSolver::LBfgs,
            other => self.unknown_solver = Some(other.to_string()),
        }
        self
    }

    /// The solver, by Spark's name.
    pub fn get_solver(&self) -> &'static str {
        match self.settings.solver {
            LinearSolver::Auto => "auto",
            LinearSolver::Normal => "normal",
            LinearSolver::LBfgs => "l-bfgs",
        }
    }

    /// Each parameter checked as Spark checks it.
    fn checked(&self) -> Result<()> {
        let s = &self.settings;
        check_params(&self.uid, (s.reg_param, s.elastic_net_param, s.tol), self.workers)?;
        match &self.unknown_solver {
            Some(solver) => Err(HearthError::invalid_param(
                &self.uid,
                "solver",
                format!("must be \"auto\", \"normal\" or \"l-bfgs\", got {solver:?}"),
            )),
            None => Ok(()),
        }
    }

    /// What [`Stage::describe`](hearth_preprocessing::stage::Stage::describe) says.
    fn describe_line(&self) -> String {
        let s = &self.settings;
        format!(
            "solver={}, regParam={}, elasticNetParam={}, maxIter={}, workers={}",
            self.get_solver(),
            s.reg_param,
            s.elastic_net_param,
            s.max_iter,
            self.workers
        )
    }
}

impl Estimator for LinearRegression {
    type Model = LinearRegressionModel;

    async fn fit(&self, df: &DataFrame) -> Result<LinearRegressionModel> {
        self.checked()?;
        let inputs = Inputs {
            uid: &self.uid,
            features_col: &self.features_col,
            label_col: &self.label_col,
            weight_col: self.weight_col.as_deref(),
            workers: self.workers,
        };
        let Fitted { fit, rows } = fit_full_batch(df, &inputs, FullBatchModel::Linear(self.settings.clone())).await?;
        Ok(LinearRegressionModel {
            uid: self.uid.clone(),
            features_col: self.features_col.clone(),
            label_col: self.label_col.clone(),
            prediction_col: self.prediction_col.clone(),
            fit_intercept: self.settings.fit_intercept,
            weight_col: self.weight_col.clone(),
            training_rows: rows,
            fit,
        })
    }
}

/// A fitted [`LinearRegression`]: Spark's `coefficients`, `intercept` and the solve's summary; `transform` adds
/// the prediction. Saved and loaded with pipelines.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LinearRegressionModel {
    uid: String,
    features_col: String,
    #[serde(default = "default_label_col")]
    label_col: String,
    prediction_col: String,
    #[serde(default = "fitted_with_intercept")]
    fit_intercept: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    weight_col: Option<String>,
    #[serde(default)]
    training_rows: u64,
    #[serde(flatten)]
    fit: LinearFit,
}

/// A model saved before it kept `fitIntercept` had one, Spark's default.
fn fitted_with_intercept() -> bool {
    true
}

impl LinearRegressionModel {
    /// One coefficient per feature, in the features' units.
    pub fn coefficients(&self) -> &[f64] {
        &self.fit.coefficients
    }

    /// The intercept (0 when none was fitted).
    pub fn intercept(&self) -> f64 {
        self.fit.intercept
    }

    /// The solve's objective history and iterations (none for a Cholesky solve, as Spark reports it).
    pub fn summary(&self) -> &Solved {
        &self.fit.solved
    }

    /// The rows it was fitted on, over every rank.
    pub fn training_rows(&self) -> u64 {
        self.training_rows
    }

    /// Whether it was fitted with an intercept (Spark's `fitIntercept`).
    pub fn get_fit_intercept(&self) -> bool {
        self.fit_intercept
    }

    /// The column that weighed the training rows, if one did (Spark's `weightCol`).
    pub fn get_weight_col(&self) -> Option<&str> {
        self.weight_col.as_deref()
    }

    /// The diagonal of `(XᵀWX)⁻¹` in the features' units, the intercept's last (Spark's `diagInvAtWA`): what the
    /// coefficients' standard errors are made of. From a Cholesky solve only; empty after an iterative one.
    pub fn inverse_gram_diagonal(&self) -> &[f64] {
        &self.fit.inverse_gram_diagonal
    }

    super::setters::model_columns!(features_col, label_col, prediction_col);

    /// The prediction for one row of features.
    pub fn predict(&self, features: &[f64]) -> f64 {
        self.fit.intercept
            + self
                .fit
                .coefficients
                .iter()
                .zip(features)
                .map(|(c, x)| c * x)
                .sum::<f64>()
    }

    /// What [`Stage::describe`](hearth_preprocessing::stage::Stage::describe) says.
    fn describe_line(&self) -> String {
        format!(
            "linear regression, {} features, intercept {:.6}, {} iterations",
            self.fit.coefficients.len(),
            self.fit.intercept,
            self.fit.solved.total_iterations
        )
    }
}

impl Transformer for LinearRegressionModel {
    fn transform(&self, df: &DataFrame) -> Result<DataFrame> {
        ensure_new_column(&self.uid, df, &self.prediction_col)?;
        let prediction = LINEAR_PREDICT.call(vec![
            ident(&self.features_col),
            lit(f64_list_literal(&self.fit.coefficients)),
            lit(f64_list_literal(&[self.fit.intercept])),
        ]);
        Ok(df.clone().with_column(&self.prediction_col, prediction)?)
    }
}

hearth_preprocessing::stage_class!(estimator LinearRegression);
hearth_preprocessing::stage_class!(transformer LinearRegressionModel);
hearth_preprocessing::stage_example!(
    LinearRegression,
    LinearRegression::new().label_col("x").features_col("features")
);
serde_stage!(LinearRegression, "LinearRegression", describe_line);
serde_stage!(LinearRegressionModel, "LinearRegressionModel", describe_line);
