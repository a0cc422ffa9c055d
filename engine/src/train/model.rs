//! `ClassificationModel`: a trained classifier as a pipeline stage — the network, how it was trained, and
//! the columns it reads and adds.

use std::path::Path;

use datafusion::functions::core::expr_fn::get_field;
use datafusion::logical_expr::ident;
use datafusion::prelude::DataFrame;
use hearth_ml::artifact::ModelArtifact;
use hearth_ml::model::ModelSpec;
use hearth_ml::train::EpochStats;
use serde::{Deserialize, Serialize};

use super::classify::classify;
use super::fit::TrainingSummary;
use crate::error::{HearthError, Result};
use crate::params::new_uid;
use crate::stage::{Stage, Transformer, to_params};

/// The columns a classification model reads and writes (pyspark.ml's param names).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Columns {
    #[serde(alias = "features")]
    pub features_col: String,
    #[serde(default = "label")]
    pub label_col: String,
    #[serde(alias = "prediction")]
    pub prediction_col: String,
    #[serde(alias = "probability")]
    pub probability_col: String,
    #[serde(alias = "raw_prediction")]
    pub raw_prediction_col: String,
}

/// What `training.json` holds beside the artifact.
#[derive(Serialize, Deserialize)]
struct SavedTraining {
    #[serde(default = "model_uid")]
    uid: String,
    columns: Columns,
    summary: TrainingSummary,
}

fn label() -> String {
    "label".to_string()
}

fn model_uid() -> String {
    new_uid("ClassificationModel")
}

/// The file beside `model.safetensors` and `model.json` that holds the training summary and the columns.
pub const TRAINING_FILE: &str = "training.json";

/// A fitted classifier: the trained network, how it was trained, and the columns it reads and adds. As a
/// pipeline stage it saves `model.safetensors`, `model.json` and `training.json` in its own directory.
#[derive(Clone, Debug)]
pub struct ClassificationModel {
    uid: String,
    artifact: ModelArtifact,
    bytes: Vec<u8>,
    summary: TrainingSummary,
    columns: Columns,
}

fn persistence(path: &Path, message: impl ToString) -> HearthError {
    HearthError::Persistence {
        path: path.to_path_buf(),
        message: message.to_string(),
    }
}

impl ClassificationModel {
    pub(crate) fn new(
        uid: String,
        artifact: ModelArtifact,
        summary: TrainingSummary,
        columns: Columns,
    ) -> Result<Self> {
        let bytes = artifact.to_bytes().map_err(|e| HearthError::Barrier {
            job: uid.clone(),
            message: e.to_string(),
        })?;
        Ok(Self {
            uid,
            artifact,
            bytes,
            summary,
            columns,
        })
    }

    /// The trained network: spec, options, weights, per-epoch history.
    pub fn artifact(&self) -> &ModelArtifact {
        &self.artifact
    }

    /// Per-epoch loss and accuracy, averaged over all workers' rows.
    pub fn history(&self) -> &[EpochStats] {
        &self.artifact.history
    }

    /// Every rank's report and every attempt of the training stage.
    pub fn summary(&self) -> &TrainingSummary {
        &self.summary
    }

    /// The vector column it reads.
    pub fn features_col(&self) -> &str {
        &self.columns.features_col
    }

    /// The predicted class column it adds.
    pub fn prediction_col(&self) -> &str {
        &self.columns.prediction_col
    }

    /// The class probability vector column it adds.
    pub fn probability_col(&self) -> &str {
        &self.columns.probability_col
    }

    /// The raw score vector column it adds.
    pub fn raw_prediction_col(&self) -> &str {
        &self.columns.raw_prediction_col
    }

    /// The label column it was trained on (class indices).
    pub fn label_col(&self) -> &str {
        &self.columns.label_col
    }

    /// The number of classes.
    pub fn num_classes(&self) -> usize {
        self.artifact.spec().outputs().unwrap_or(0)
    }

    /// Writes `model.safetensors` and `model.json` (the artifact PyTorch and hearth load) and
    /// `training.json` (the summary and columns) into `dir`.
    pub fn save(&self, dir: impl AsRef<Path>) -> Result<()> {
        let dir = dir.as_ref();
        self.artifact.save(dir).map_err(|e| persistence(dir, e))?;
        let saved = SavedTraining {
            uid: self.uid.clone(),
            columns: self.columns.clone(),
            summary: self.summary.clone(),
        };
        let path = dir.join(TRAINING_FILE);
        let json = serde_json::to_string_pretty(&saved).map_err(|e| persistence(&path, e))?;
        std::fs::write(&path, json + "\n").map_err(|e| persistence(&path, e))
    }

    /// Reads a model written by [`ClassificationModel::save`].
    pub fn load(dir: impl AsRef<Path>) -> Result<Self> {
        let dir = dir.as_ref();
        let artifact = ModelArtifact::load(dir).map_err(|e| persistence(dir, e))?;
        let path = dir.join(TRAINING_FILE);
        let text = std::fs::read_to_string(&path).map_err(|e| persistence(&path, e))?;
        let saved: SavedTraining = serde_json::from_str(&text).map_err(|e| persistence(&path, e))?;
        Self::new(saved.uid, artifact, saved.summary, saved.columns)
    }
}

impl Transformer for ClassificationModel {
    /// Adds `rawPrediction`, `probability` and `prediction` columns (as named when fitting), computed on the
    /// partitions by the `ml_classify` function bound to the model.
    fn transform(&self, df: &DataFrame) -> Result<DataFrame> {
        const SCORES: &str = "__hearth_scores";
        let features = &self.columns.features_col;
        if df.schema().index_of_column_by_name(None, features).is_none() {
            return Err(HearthError::Schema {
                stage: self.uid.clone(),
                column: features.clone(),
                message: "no such column".to_string(),
            });
        }
        let scored = df
            .clone()
            .with_column(SCORES, classify(self.bytes.clone(), ident(features))?)?
            .with_column(
                &self.columns.raw_prediction_col,
                get_field(ident(SCORES), "rawPrediction"),
            )?
            .with_column(&self.columns.probability_col, get_field(ident(SCORES), "probability"))?
            .with_column(&self.columns.prediction_col, get_field(ident(SCORES), "prediction"))?
            .drop_columns(&[SCORES])?;
        Ok(scored)
    }
}

impl Stage for ClassificationModel {
    fn class(&self) -> &'static str {
        "ClassificationModel"
    }

    fn uid(&self) -> &str {
        &self.uid
    }

    /// The uid and columns; the network and its training are data ([`Stage::save_data`]).
    fn params(&self) -> Result<serde_json::Value> {
        #[derive(Serialize)]
        struct Params<'a> {
            uid: &'a str,
            #[serde(flatten)]
            columns: &'a Columns,
        }
        to_params(
            &self.uid,
            &Params {
                uid: &self.uid,
                columns: &self.columns,
            },
        )
    }

    fn describe(&self) -> String {
        let network = match self.artifact.spec() {
            ModelSpec::Mlp {
                inputs,
                hidden,
                outputs,
                ..
            } => {
                let widths: Vec<usize> = [*inputs]
                    .into_iter()
                    .chain(hidden.iter().copied())
                    .chain([*outputs])
                    .collect();
                format!("MLP {widths:?}")
            }
            ModelSpec::Linear { inputs, outputs } => format!("linear [{inputs}, {outputs}]"),
            ModelSpec::Sequential { input_shape, layers } => format!("{} layers over {input_shape:?}", layers.len()),
        };
        format!(
            "{network}, {} epochs on {} workers",
            self.history().len(),
            self.summary.ranks.len()
        )
    }

    fn has_data(&self) -> bool {
        true
    }

    fn save_data(&self, dir: &Path) -> Result<()> {
        self.save(dir)
    }
}

impl ClassificationModel {
    /// The model a pipeline saved: its uid and columns from `pipeline.json`, the rest from its directory.
    pub(crate) fn load_stage(params: serde_json::Value, dir: &Path) -> Result<Self> {
        let columns: Columns = serde_json::from_value(params).map_err(|e| persistence(dir, e))?;
        let mut model = Self::load(dir)?;
        model.columns = columns;
        Ok(model)
    }
}
