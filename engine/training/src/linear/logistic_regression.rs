//! Spark's `LogisticRegression` and its model.

use datafusion::logical_expr::{ident, lit};
use datafusion::prelude::DataFrame;
use hearth_common::params::new_uid;
use hearth_exec::error::{HearthError, Result};
use hearth_exec::udf::args::f64_list_literal;
use hearth_optim::glm::{Family, LogisticBounds, LogisticFit, LogisticSettings, Solved};
use hearth_preprocessing::stage::{Estimator, Transformer, ensure_new_column, serde_stage, with_classifier_scores};
use serde::{Deserialize, Serialize};

use super::scores::LOGISTIC_SCORES;
use super::setters::default_label_col;
use crate::full_batch::{Fitted, FullBatchModel, Inputs, check_params, fit_full_batch};

/// Spark's `LogisticRegression`: binomial or multinomial (`family`), an elastic-net penalty (`reg_param`,
/// `elastic_net_param`), fitted by L-BFGS (OWL-QN with an L1 part; L-BFGS-B within [`bounds`](Self::bounds))
/// on standardized features to Spark's coefficients, over `workers` ranks of the barrier stage. Labels are class
/// indices 0, 1, 2, …
///
/// ```
/// use hearth_training::linear::LogisticRegression;
/// let lr = LogisticRegression::new().reg_param(0.01).elastic_net_param(0.5).family("multinomial");
/// assert_eq!(lr.get_reg_param(), 0.01);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LogisticRegression {
    uid: String,
    features_col: String,
    label_col: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    weight_col: Option<String>,
    prediction_col: String,
    raw_prediction_col: String,
    probability_col: String,
    threshold: f64,
    #[serde(flatten)]
    settings: LogisticSettings,
    workers: usize,
    /// A name given to `family` that is not one, refused when fitting.
    #[serde(skip)]
    unknown_family: Option<String>,
}

impl Default for LogisticRegression {
    fn default() -> Self {
        Self::new()
    }
}

impl LogisticRegression {
    /// Spark's defaults: no penalty, 100 iterations, `tol` 1e-6, intercept, standardization, family `auto`,
    /// threshold 0.5; one rank.
    pub fn new() -> Self {
        Self {
            uid: new_uid("LogisticRegression"),
            features_col: "features".to_string(),
            label_col: "label".to_string(),
            weight_col: None,
            prediction_col: "prediction".to_string(),
            raw_prediction_col: "rawPrediction".to_string(),
            probability_col: "probability".to_string(),
            threshold: 0.5,
            settings: LogisticSettings::default(),
            workers: 1,
            unknown_family: None,
        }
    }

    super::setters::glm_setters!();

    /// `"auto"`, `"binomial"` or `"multinomial"`; another name is refused when fitting.
    pub fn family(mut self, family: &str) -> Self {
        match family {
            "auto" => self.settings.family = Family::Auto,
            "binomial" => self.settings.family = Family::Binomial,
            "multinomial" => self.settings.family = Family::Multinomial,
            other => self.unknown_family = Some(other.to_string()),
        }
        self
    }

    /// Spark's bounds on the coefficients and intercepts (`lowerBoundsOnCoefficients`, …): the fit runs
    /// L-BFGS-B, with an L2 penalty only.
    ///
    /// ```
    /// use hearth_training::linear::{BoundMatrix, LogisticBounds, LogisticRegression};
    /// let nonnegative = LogisticBounds {
    ///     lower_bounds_on_coefficients: BoundMatrix::new(1, 2, vec![0.0, 0.0]),
    ///     ..LogisticBounds::default()
    /// };
    /// let lr = LogisticRegression::new().bounds(nonnegative);
    /// ```
    pub fn bounds(mut self, bounds: LogisticBounds) -> Self {
        self.settings.bounds = bounds;
        self
    }

    /// The binomial threshold on class 1's probability (default 0.5).
    pub fn threshold(mut self, threshold: f64) -> Self {
        self.threshold = threshold;
        self
    }

    /// Each parameter checked as Spark checks it.
    fn checked(&self) -> Result<()> {
        let s = &self.settings;
        check_params(&self.uid, (s.reg_param, s.elastic_net_param, s.tol), self.workers)?;
        if let Some(family) = &self.unknown_family {
            let why = format!("must be \"auto\", \"binomial\" or \"multinomial\", got {family:?}");
            return Err(HearthError::invalid_param(&self.uid, "family", why));
        }
        if let Err(why) = s.bounds.check(s.elastic_net_param, s.fit_intercept) {
            return Err(HearthError::invalid_param(&self.uid, "bounds", why));
        }
        if !(0.0..=1.0).contains(&self.threshold) {
            let why = format!("must be in [0, 1], got {}", self.threshold);
            return Err(HearthError::invalid_param(&self.uid, "threshold", why));
        }
        Ok(())
    }
}

impl Estimator for LogisticRegression {
    type Model = LogisticRegressionModel;

    async fn fit(&self, df: &DataFrame) -> Result<LogisticRegressionModel> {
        self.checked()?;
        let inputs = Inputs {
            uid: &self.uid,
            features_col: &self.features_col,
            label_col: &self.label_col,
            weight_col: self.weight_col.as_deref(),
            workers: self.workers,
        };
        let Fitted { fit, rows } = fit_full_batch(df, &inputs, FullBatchModel::Logistic(self.settings.clone())).await?;
        Ok(LogisticRegressionModel {
            uid: self.uid.clone(),
            features_col: self.features_col.clone(),
            label_col: self.label_col.clone(),
            prediction_col: self.prediction_col.clone(),
            raw_prediction_col: self.raw_prediction_col.clone(),
            probability_col: self.probability_col.clone(),
            threshold: self.threshold,
            training_rows: rows,
            fit,
        })
    }
}

/// A fitted [`LogisticRegression`]: Spark's `coefficientMatrix` and `interceptVector` (`coefficients` and
/// `intercept` when binomial) and the solve's summary; `transform` adds `rawPrediction`, `probability` and
/// `prediction`. Saved and loaded with pipelines.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LogisticRegressionModel {
    uid: String,
    features_col: String,
    #[serde(default = "default_label_col")]
    label_col: String,
    prediction_col: String,
    raw_prediction_col: String,
    probability_col: String,
    threshold: f64,
    #[serde(default)]
    training_rows: u64,
    #[serde(flatten)]
    fit: LogisticFit,
}

impl LogisticRegressionModel {
    /// The coefficient sets, one row of `num_features` per set (one set when binomial).
    pub fn coefficient_matrix(&self) -> Vec<&[f64]> {
        self.fit
            .coefficient_matrix
            .chunks(self.fit.num_features.max(1))
            .collect()
    }

    /// The intercept of each coefficient set.
    pub fn intercept_vector(&self) -> &[f64] {
        &self.fit.intercept_vector
    }

    /// The binomial model's coefficients (the first set of a multinomial one).
    pub fn coefficients(&self) -> &[f64] {
        &self.fit.coefficient_matrix[..self.fit.num_features]
    }

    /// The binomial model's intercept (the first of a multinomial one).
    pub fn intercept(&self) -> f64 {
        self.fit.intercept_vector[0]
    }

    /// Classes: the largest label seen plus one.
    pub fn num_classes(&self) -> usize {
        self.fit.num_classes
    }

    /// Whether a coefficient set per class was fitted.
    pub fn is_multinomial(&self) -> bool {
        self.fit.multinomial
    }

    /// The solve's objective history and iterations; `None` when a single class needed no solve.
    pub fn summary(&self) -> Option<&Solved> {
        self.fit.solved.as_ref()
    }

    /// The rows it was fitted on, over every rank.
    pub fn training_rows(&self) -> u64 {
        self.training_rows
    }

    super::setters::model_columns!(
        features_col,
        label_col,
        prediction_col,
        raw_prediction_col,
        probability_col
    );

    /// What [`Stage::describe`](hearth_preprocessing::stage::Stage::describe) says.
    fn describe_line(&self) -> String {
        let iterations = self.summary().map_or(0, |s| s.total_iterations);
        format!(
            "{} logistic regression, {} classes, {} features, {iterations} iterations",
            if self.fit.multinomial {
                "multinomial"
            } else {
                "binomial"
            },
            self.fit.num_classes,
            self.fit.num_features
        )
    }
}

impl Transformer for LogisticRegressionModel {
    fn transform(&self, df: &DataFrame) -> Result<DataFrame> {
        for column in [&self.raw_prediction_col, &self.probability_col, &self.prediction_col] {
            ensure_new_column(&self.uid, df, column)?;
        }
        let scores = LOGISTIC_SCORES.call(vec![
            ident(&self.features_col),
            lit(f64_list_literal(&self.fit.coefficient_matrix)),
            lit(f64_list_literal(&self.fit.intercept_vector)),
            lit(self.threshold),
        ]);
        let columns = [&self.raw_prediction_col, &self.probability_col, &self.prediction_col];
        with_classifier_scores(df, scores, columns)
    }
}

impl LogisticRegression {
    /// What [`Stage::describe`](hearth_preprocessing::stage::Stage::describe) says.
    fn describe_line(&self) -> String {
        let s = &self.settings;
        format!(
            "regParam={}, elasticNetParam={}, maxIter={}, family={:?}, workers={}",
            s.reg_param, s.elastic_net_param, s.max_iter, s.family, self.workers
        )
    }
}

hearth_preprocessing::stage_class!(estimator LogisticRegression);
hearth_preprocessing::stage_class!(transformer LogisticRegressionModel);
hearth_preprocessing::stage_example!(LogisticRegression, LogisticRegression::new().reg_param(0.01).workers(1));
serde_stage!(LogisticRegression, "LogisticRegression", describe_line);
serde_stage!(LogisticRegressionModel, "LogisticRegressionModel", describe_line);
