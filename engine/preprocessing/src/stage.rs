//! The kinds of pipeline stage, as in Spark ML and scikit-learn: an [`Estimator`] is fitted on data and
//! returns a [`Transformer`]; a transformer adds columns to a data frame. Both are [`Stage`]s: a stage has
//! a class, a uid and parameters, describes itself, and saves itself into a pipeline's directory.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! use hearth_preprocessing::prelude::*;
//!
//! let session = Session::builder().with_preprocessing().local(1);
//! let df = session.context().sql("SELECT * FROM (VALUES ('b'), ('a'), ('b')) AS t(x)").await.unwrap();
//! let indexer = StringIndexer::new().input_col("x").output_col("i");
//! let model = indexer.fit(&df).await.unwrap();            // Estimator::fit
//! assert_eq!(model.class(), "StringIndexerModel");       // Stage
//! assert_eq!(model.describe(), "1 columns, 2 labels");
//! assert_eq!(model.transform(&df).unwrap().schema().fields().len(), 2); // Transformer::transform
//! # });
//! ```

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::path::Path;

use datafusion::arrow::datatypes::Field;
use datafusion::functions::core::expr_fn::get_field;
use datafusion::logical_expr::{Expr, ident};
use datafusion::prelude::DataFrame;
use hearth_common::names::closest;
use hearth_exec::error::{HearthError, Result};
use serde::Serialize;

/// What every pipeline stage says about itself, and how it is saved.
///
/// A saved pipeline holds each stage as `{"class": …, …params}` in `pipeline.json`; a stage with state too
/// large for JSON (a trained network) also writes files into a directory of its own. Loading finds the
/// stage's class in the registry of [`pipeline`](crate::pipeline).
pub trait Stage: fmt::Debug + Send + Sync + Any {
    /// The class name in saved pipelines and messages (Spark's simple class name, e.g.
    /// `StringIndexerModel`).
    fn class(&self) -> &'static str;

    /// The stage's uid (`<Class>_<12 hex digits>`, as Spark's).
    fn uid(&self) -> &str;

    /// The parameters, and a model's fitted state when it is small, as a JSON object in Spark's camelCase.
    fn params(&self) -> Result<serde_json::Value>;

    /// One line saying what the stage holds: a model's fitted state, an estimator's main settings.
    fn describe(&self) -> String;

    /// Whether [`Stage::save_data`] writes anything.
    fn has_data(&self) -> bool {
        false
    }

    /// Writes the state that does not fit in `pipeline.json` into `dir`, which exists and is empty.
    fn save_data(&self, _dir: &Path) -> Result<()> {
        Ok(())
    }
}

/// Adds columns computed from existing ones. Transforming builds a query plan; nothing runs until the data
/// frame is collected.
pub trait Transformer: Stage {
    /// The data frame with this stage's output columns added.
    fn transform(&self, df: &DataFrame) -> Result<DataFrame>;
}

impl dyn Transformer {
    /// The stage as its concrete type, if it is one.
    pub fn downcast_ref<T: Transformer>(&self) -> Option<&T> {
        (self as &dyn Any).downcast_ref()
    }
}

/// Learns a [`Transformer`] from data (with one aggregate query, for the feature stages). Fitting never
/// changes the estimator, so one estimator can be fitted many times.
pub trait Estimator: Stage {
    /// The fitted stage.
    type Model: Transformer;

    /// Fits the stage on `df`.
    fn fit(&self, df: &DataFrame) -> impl Future<Output = Result<Self::Model>> + Send;
}

/// `params` as the JSON that [`Stage::params`] returns, for the stage `uid`.
pub fn to_params(uid: &str, params: &impl Serialize) -> Result<serde_json::Value> {
    serde_json::to_value(params)
        .map_err(|e| HearthError::invalid_param(uid, "params", "cannot be written as JSON").caused_by(e))
}

/// The input column `column` of `df`, or an error naming the stage, the column and the columns there are.
pub fn input_field<'a>(stage: &str, df: &'a DataFrame, column: &str) -> Result<&'a Field> {
    df.schema()
        .field_with_unqualified_name(column)
        .map(AsRef::as_ref)
        .map_err(|_| {
            HearthError::schema(
                stage,
                column,
                format!(
                    "no such column{}; the input has {}",
                    closest_column(df, column),
                    quoted_columns(df)
                ),
            )
        })
}

/// `" (did you mean "x"?)"` for the column of `df` closest to `column`, or nothing.
pub fn closest_column(df: &DataFrame, column: &str) -> String {
    let names = df.schema().fields().iter().map(|f| f.name().as_str());
    closest(column, names).map_or_else(String::new, |close| format!(" (did you mean {close:?}?)"))
}

/// `df`'s column names, quoted and separated by commas, for messages.
pub fn quoted_columns(df: &DataFrame) -> String {
    df.schema()
        .fields()
        .iter()
        .map(|f| format!("{:?}", f.name()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A fitted classifier's columns and classes, whichever model it is (a network, a logistic regression): what
/// evaluations and plots of its scored rows read.
///
/// ```
/// use hearth_preprocessing::stage::ClassifierColumns;
/// fn positive_probability(model: &dyn ClassifierColumns) -> String {
///     format!("{}[1] of {} classes", model.probability_col(), model.num_classes())
/// }
/// ```
pub trait ClassifierColumns: Send + Sync {
    /// The label column it was trained on.
    fn label_col(&self) -> &str;
    /// The predicted class index column it adds.
    fn prediction_col(&self) -> &str;
    /// The class probability vector column it adds.
    fn probability_col(&self) -> &str;
    /// The raw score vector column it adds.
    fn raw_prediction_col(&self) -> &str;
    /// How many classes it predicts.
    fn num_classes(&self) -> usize;
}

/// [`ClassifierColumns`] of models with inherent methods of the same names.
#[macro_export]
#[doc(hidden)]
macro_rules! classifier_columns {
    ($($model:ty),*) => {$(
        impl $crate::stage::ClassifierColumns for $model {
            fn label_col(&self) -> &str {
                <$model>::label_col(self)
            }
            fn prediction_col(&self) -> &str {
                <$model>::prediction_col(self)
            }
            fn probability_col(&self) -> &str {
                <$model>::probability_col(self)
            }
            fn raw_prediction_col(&self) -> &str {
                <$model>::raw_prediction_col(self)
            }
            fn num_classes(&self) -> usize {
                <$model>::num_classes(self)
            }
        }
    )*};
}

/// `df` with a classifier's scores struct (`rawPrediction`, `probability`, `prediction`, as
/// [`classifier_score_fields`](hearth_exec::vector::classifier_score_fields) makes it) spread over the three `columns`.
pub fn with_classifier_scores(df: &DataFrame, scores: Expr, columns: [&String; 3]) -> Result<DataFrame> {
    const SCORES: &str = "__hearth_classifier_scores";
    let [raw, probability, prediction] = columns;
    Ok(df
        .clone()
        .with_column(SCORES, scores)?
        .with_column(raw, get_field(ident(SCORES), "rawPrediction"))?
        .with_column(probability, get_field(ident(SCORES), "probability"))?
        .with_column(prediction, get_field(ident(SCORES), "prediction"))?
        .drop_columns(&[SCORES])?)
}

/// Fails when `column` already exists, as Spark refuses to overwrite a column.
pub fn ensure_new_column(stage: &str, df: &DataFrame, column: &str) -> Result<()> {
    if df.schema().field_with_unqualified_name(column).is_ok() {
        return Err(HearthError::schema(stage, column, "output column already exists"));
    }
    Ok(())
}

/// Checks that input and output column lists are non-empty and pair up.
pub(crate) fn check_column_pairs(stage: &str, inputs: &[String], outputs: &[String]) -> Result<()> {
    if inputs.is_empty() {
        return Err(HearthError::invalid_param(stage, "inputCols", "no input column is set"));
    }
    if inputs.len() != outputs.len() {
        return Err(HearthError::invalid_param(
            stage,
            "outputCols",
            format!("{} input columns but {} output columns", inputs.len(), outputs.len()),
        ));
    }
    Ok(())
}

/// Spark's column setters for a stage that maps input columns to output columns one to one: `inputCol` /
/// `outputCol` for one column, `inputCols` / `outputCols` for several. The stage has `uid`, `input_cols`
/// and `output_cols` fields; a single input without an output column gets Spark's `<uid>__output`.
macro_rules! column_pair_setters {
    () => {
        /// Process one column (Spark's `inputCol`).
        pub fn input_col(mut self, column: impl Into<String>) -> Self {
            self.input_cols = vec![column.into()];
            if self.output_cols.is_empty() {
                self.output_cols = vec![format!("{}__output", self.uid)];
            }
            self
        }

        /// The output column for a single input (Spark's `outputCol`).
        pub fn output_col(mut self, column: impl Into<String>) -> Self {
            self.output_cols = vec![column.into()];
            self
        }

        /// Process several columns, each on its own (Spark's `inputCols`).
        pub fn input_cols<S: Into<String>>(mut self, columns: impl IntoIterator<Item = S>) -> Self {
            self.input_cols = columns.into_iter().map(Into::into).collect();
            self
        }

        /// The output columns, one per input (Spark's `outputCols`).
        pub fn output_cols<S: Into<String>>(mut self, columns: impl IntoIterator<Item = S>) -> Self {
            self.output_cols = columns.into_iter().map(Into::into).collect();
            self
        }
    };
}

pub(crate) use column_pair_setters;

/// Implements [`Stage`] for a stage whose serde form is its parameters and which has a `uid` field;
/// `$describe` names its inherent method giving [`Stage::describe`]'s line.
#[macro_export]
#[doc(hidden)]
macro_rules! serde_stage {
    ($type:ty, $class:literal, $describe:ident) => {
        impl $crate::stage::Stage for $type {
            fn class(&self) -> &'static str {
                $class
            }

            fn uid(&self) -> &str {
                &self.uid
            }

            fn params(&self) -> ::hearth_exec::error::Result<serde_json::Value> {
                $crate::stage::to_params(&self.uid, self)
            }

            fn describe(&self) -> String {
                self.$describe()
            }
        }
    };
}

pub use crate::serde_stage;
