//! BigQuery ML's `class_weights` on a `logistic_reg` solved exactly: Spark's `LogisticRegression` has no class
//! weights, but it weighs rows (`weightCol`), so this estimator fits it on its rows with a weight column that
//! holds each row's class weight (1 for a class not given). The column exists only while fitting: the fitted
//! model is the plain `LogisticRegressionModel`, which predicts rows without a label.

use datafusion::logical_expr::{Expr, ident, lit, when};
use datafusion::prelude::DataFrame;
use hearth_exec::error::Result;
use hearth_preprocessing::stage::{Estimator, Stage};
use hearth_training::linear::{LogisticRegression, LogisticRegressionModel};

/// The column of row weights while fitting.
const CLASS_WEIGHT: &str = "__class_weight";

/// Spark's `LogisticRegression` fitted with a loss weight per class.
#[derive(Clone, Debug)]
pub(crate) struct ClassWeighted {
    estimator: LogisticRegression,
    label: String,
    weights: Vec<f64>,
}

impl ClassWeighted {
    /// `estimator` fitted with `weights[k]` as the weight of the rows whose `label` is class `k`.
    pub(crate) fn new(estimator: LogisticRegression, label: &str, weights: Vec<f64>) -> Self {
        Self {
            estimator,
            label: label.to_string(),
            weights,
        }
    }

    /// Each row's class weight: `weights[k]` where the label is `k`, else 1.
    fn row_weight(&self) -> Result<Expr> {
        let label = ident(&self.label);
        let Some((first, rest)) = self.weights.split_first() else {
            return Ok(lit(1.0));
        };
        let mut weight = when(label.clone().eq(lit(0.0)), lit(*first));
        for (class, w) in rest.iter().enumerate() {
            weight = weight.when(label.clone().eq(lit(class as f64 + 1.0)), lit(*w));
        }
        Ok(weight.otherwise(lit(1.0))?)
    }
}

impl Stage for ClassWeighted {
    fn class(&self) -> &'static str {
        self.estimator.class()
    }

    fn uid(&self) -> &str {
        self.estimator.uid()
    }

    fn params(&self) -> Result<serde_json::Value> {
        let mut params = self.estimator.params()?;
        if let Some(object) = params.as_object_mut() {
            object.insert("classWeights".to_string(), serde_json::json!(self.weights));
        }
        Ok(params)
    }

    fn describe(&self) -> String {
        format!("{}, class weights {:?}", self.estimator.describe(), self.weights)
    }
}

impl Estimator for ClassWeighted {
    type Model = LogisticRegressionModel;

    async fn fit(&self, df: &DataFrame) -> Result<LogisticRegressionModel> {
        let weighted = df.clone().with_column(CLASS_WEIGHT, self.row_weight()?)?;
        self.estimator.clone().weight_col(CLASS_WEIGHT).fit(&weighted).await
    }
}
