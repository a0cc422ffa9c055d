//! A fitted network as a pipeline stage: [`ClassificationModel`] adds Spark's `rawPrediction`, `probability`
//! and `prediction`; [`RegressionModel`] adds `prediction`. Both save `model.safetensors`, `model.json` and
//! `training.json` in their own directory.

use std::fmt;
use std::path::Path;

use datafusion::logical_expr::{Expr, ident};
use datafusion::prelude::DataFrame;
use hearth_exec::error::{HearthError, Result};
use hearth_preprocessing::pipeline::{IntoPipelineStage, MlWriter, PipelineStage, SavedStage, StageClass};
use hearth_preprocessing::stage::{Stage, Transformer, to_params, with_classifier_scores};
use hearth_torch::artifact::ModelArtifact;
use hearth_torch::train::EpochStats;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::fit::TrainingSummary;
use super::trained::TrainedNetwork;

/// The columns every fitted network reads or adds (pyspark.ml's param names).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelColumns {
    /// The vector column it reads.
    #[serde(alias = "features")]
    pub features_col: String,
    /// The label column it was trained on.
    #[serde(default = "label")]
    pub label_col: String,
    /// The prediction column it adds.
    #[serde(alias = "prediction")]
    pub prediction_col: String,
}

fn label() -> String {
    "label".to_string()
}

/// The columns a fitted network reads and adds, and how it adds them.
pub trait Outputs: Clone + fmt::Debug + PartialEq + Serialize + DeserializeOwned + Send + Sync + 'static {
    /// The model's class name.
    const CLASS: &'static str;

    /// The columns every network has.
    fn columns(&self) -> &ModelColumns;

    /// `df` with the model's columns, taken from `scores` (its bound function's result).
    fn add(&self, df: DataFrame, scores: Expr) -> Result<DataFrame>;
}

/// A classifier's columns: the probability and raw score vectors besides the prediction.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClassificationOutputs {
    #[serde(flatten)]
    pub(crate) columns: ModelColumns,
    #[serde(alias = "probability")]
    pub(crate) probability_col: String,
    #[serde(alias = "raw_prediction")]
    pub(crate) raw_prediction_col: String,
}

impl Outputs for ClassificationOutputs {
    const CLASS: &'static str = "ClassificationModel";

    fn columns(&self) -> &ModelColumns {
        &self.columns
    }

    fn add(&self, df: DataFrame, scores: Expr) -> Result<DataFrame> {
        let columns = [
            &self.raw_prediction_col,
            &self.probability_col,
            &self.columns.prediction_col,
        ];
        with_classifier_scores(&df, scores, columns)
    }
}

/// A regressor's columns.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RegressionOutputs {
    #[serde(flatten)]
    pub(crate) columns: ModelColumns,
}

impl Outputs for RegressionOutputs {
    const CLASS: &'static str = "RegressionModel";

    fn columns(&self) -> &ModelColumns {
        &self.columns
    }

    fn add(&self, df: DataFrame, scores: Expr) -> Result<DataFrame> {
        Ok(df.with_column(&self.columns.prediction_col, scores)?)
    }
}

/// A fitted network: the trained network, how it was trained, and the columns it reads and adds.
#[derive(Clone, Debug)]
pub struct NetworkModel<O: Outputs> {
    network: TrainedNetwork,
    columns: O,
}

/// A fitted classifier; it adds `rawPrediction`, `probability` and `prediction` (as named when fitting),
/// computed on the partitions by the `ml_classify` function bound to the model.
pub type ClassificationModel = NetworkModel<ClassificationOutputs>;

/// A fitted regressor; it adds `prediction`, computed by the `ml_regress` function bound to the model.
pub type RegressionModel = NetworkModel<RegressionOutputs>;

impl<O: Outputs> NetworkModel<O> {
    pub(crate) fn new(network: TrainedNetwork, columns: O) -> Self {
        Self { network, columns }
    }

    /// The trained network: spec, options, weights, per-epoch history.
    pub fn artifact(&self) -> &ModelArtifact {
        self.network.artifact()
    }

    /// Per-epoch loss (and accuracy), averaged over all workers' rows.
    pub fn history(&self) -> &[EpochStats] {
        self.network.history()
    }

    /// Every rank's report and every attempt of the training stage.
    pub fn summary(&self) -> &TrainingSummary {
        self.network.summary()
    }

    /// The vector column it reads.
    pub fn features_col(&self) -> &str {
        &self.columns.columns().features_col
    }

    /// The label column it was trained on.
    pub fn label_col(&self) -> &str {
        &self.columns.columns().label_col
    }

    /// The prediction column it adds.
    pub fn prediction_col(&self) -> &str {
        &self.columns.columns().prediction_col
    }

    /// Writes `model.safetensors` and `model.json` (the artifact PyTorch and hearth load) and
    /// `training.json` (the summary and columns) into `dir`, whole; a `dir` that holds anything is refused
    /// (replace it with `write().overwrite().save(dir)`).
    pub fn save(&self, dir: impl AsRef<Path>) -> Result<()> {
        self.write().save(dir)
    }

    /// A writer of this model, as Spark's `model.write()`: see [`MlWriter`].
    pub fn write(&self) -> MlWriter<'_> {
        MlWriter::files(|dir| self.network.write_into(dir, &self.columns))
    }

    /// Reads a model written by `save`.
    pub fn load(dir: impl AsRef<Path>) -> Result<Self> {
        let (network, columns) = TrainedNetwork::load(dir.as_ref())?;
        Ok(Self { network, columns })
    }

    /// The model a pipeline saved: its columns from `pipeline.json`, the rest from its directory.
    pub(crate) fn load_stage(params: serde_json::Value, dir: &Path) -> Result<Self> {
        let columns: O = serde_json::from_value(params)
            .map_err(|e| HearthError::persistence(dir, "cannot read the model's columns").caused_by(e))?;
        let mut model = Self::load(dir)?;
        model.columns = columns;
        Ok(model)
    }
}

impl ClassificationModel {
    /// The class probability vector column it adds.
    pub fn probability_col(&self) -> &str {
        &self.columns.probability_col
    }

    /// The raw score vector column it adds.
    pub fn raw_prediction_col(&self) -> &str {
        &self.columns.raw_prediction_col
    }

    /// The number of classes.
    pub fn num_classes(&self) -> usize {
        self.artifact().spec().outputs().unwrap_or(0)
    }
}

impl<O: Outputs> Transformer for NetworkModel<O> {
    fn transform(&self, df: &DataFrame) -> Result<DataFrame> {
        let features = self.features_col();
        if df.schema().index_of_column_by_name(None, features).is_none() {
            return Err(HearthError::schema(self.network.uid(), features, "no such column"));
        }
        self.columns.add(df.clone(), self.network.predict(ident(features)))
    }
}

impl<O: Outputs> Stage for NetworkModel<O> {
    fn class(&self) -> &'static str {
        O::CLASS
    }

    fn uid(&self) -> &str {
        self.network.uid()
    }

    /// The uid and columns; the network and its training are data ([`Stage::save_data`]).
    fn params(&self) -> Result<serde_json::Value> {
        #[derive(Serialize)]
        struct Params<'a, O> {
            uid: &'a str,
            #[serde(flatten)]
            columns: &'a O,
        }
        let uid = self.network.uid();
        to_params(
            uid,
            &Params {
                uid,
                columns: &self.columns,
            },
        )
    }

    fn describe(&self) -> String {
        self.network.describe()
    }

    fn has_data(&self) -> bool {
        true
    }

    fn save_data(&self, dir: &Path) -> Result<()> {
        self.network.write_into(dir, &self.columns)
    }
}

impl<O: Outputs> IntoPipelineStage for NetworkModel<O> {
    fn into_stage(self) -> PipelineStage {
        PipelineStage::transformer(self)
    }
}

impl SavedStage for ClassificationModel {
    const CLASS: StageClass = StageClass::new("ClassificationModel", |params, dir| {
        Ok(PipelineStage::transformer(ClassificationModel::load_stage(
            params, dir,
        )?))
    });
}

impl SavedStage for RegressionModel {
    const CLASS: StageClass = StageClass::new("RegressionModel", |params, dir| {
        Ok(PipelineStage::transformer(RegressionModel::load_stage(params, dir)?))
    });
}
