//! What every fitted network model holds: the trained network, how it was trained, and its files —
//! `model.safetensors` and `model.json` (the artifact PyTorch and hearth load) and `training.json` (the
//! summary and the model's columns).

use std::path::Path;
use std::sync::Arc;

use datafusion::logical_expr::{Expr, ScalarUDF};
use hearth_exec::error::{HearthError, Result};
use hearth_torch::artifact::ModelArtifact;
use hearth_torch::model::ModelSpec;
use hearth_torch::train::{EpochStats, Strategy};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::fit::TrainingSummary;
use super::network_udf::NetworkUdf;

/// The file beside `model.safetensors` and `model.json` that holds the training summary and the columns.
pub const TRAINING_FILE: &str = "training.json";

/// What `training.json` holds beside the artifact.
#[derive(Deserialize)]
struct SavedTraining<C> {
    #[serde(default = "fresh_uid")]
    uid: String,
    columns: C,
    summary: TrainingSummary,
}

/// [`SavedTraining`] as written.
#[derive(Serialize)]
struct SavedTrainingRef<'a, C> {
    uid: &'a str,
    columns: &'a C,
    summary: &'a TrainingSummary,
}

fn fresh_uid() -> String {
    hearth_common::params::new_uid("NetworkModel")
}

/// A trained network: its uid (the estimator's), the artifact, the SQL function bound to it (built once, so
/// every query of the model shares one loaded network), and the training summary.
#[derive(Clone, Debug)]
pub struct TrainedNetwork {
    uid: String,
    artifact: ModelArtifact,
    function: Arc<ScalarUDF>,
    summary: TrainingSummary,
}

impl TrainedNetwork {
    pub(crate) fn new(uid: String, artifact: ModelArtifact, summary: TrainingSummary) -> Result<Self> {
        let bytes = artifact
            .to_bytes()
            .map_err(|e| HearthError::barrier(&uid, "cannot serialise the trained network").caused_by(e))?;
        let function = Arc::new(ScalarUDF::from(NetworkUdf::new(bytes)?));
        Ok(Self {
            uid,
            artifact,
            function,
            summary,
        })
    }

    /// The estimator's uid.
    pub fn uid(&self) -> &str {
        &self.uid
    }

    /// The trained network: spec, options, weights, per-epoch history.
    pub fn artifact(&self) -> &ModelArtifact {
        &self.artifact
    }

    /// `ml_classify(features)` or `ml_regress(features)`, bound to this network.
    pub(crate) fn predict(&self, features: Expr) -> Expr {
        self.function.call(vec![features])
    }

    /// Per-epoch loss (and accuracy), averaged over all workers' rows.
    pub fn history(&self) -> &[EpochStats] {
        &self.artifact.history
    }

    /// Every rank's report and every attempt of the training stage.
    pub fn summary(&self) -> &TrainingSummary {
        &self.summary
    }

    /// The network and how long it trained, in one line.
    pub(crate) fn describe(&self) -> String {
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
            ModelSpec::Sequential { input_shape, layers } => {
                format!("{} layers over {input_shape:?}", layers.len())
            }
        };
        let strategy = match &self.artifact.options.settings.strategy {
            Strategy::Synchronous => String::new(),
            other => format!(" ({})", other.name()),
        };
        format!(
            "{network}, {} epochs on {} workers{strategy}",
            self.history().len(),
            self.summary.ranks.len()
        )
    }

    /// Writes the artifact and `training.json` (with `columns`) into `dir`, a directory being staged.
    pub(crate) fn write_into<C: Serialize>(&self, dir: &Path, columns: &C) -> Result<()> {
        self.artifact
            .write_into(dir)
            .map_err(|e| HearthError::persistence(dir, "cannot write the trained network").caused_by(e))?;
        let saved = SavedTrainingRef {
            uid: &self.uid,
            columns,
            summary: &self.summary,
        };
        let path = dir.join(TRAINING_FILE);
        let json = serde_json::to_string_pretty(&saved)
            .map_err(|e| HearthError::persistence(&path, "cannot write the training summary as JSON").caused_by(e))?;
        std::fs::write(&path, json + "\n").map_err(|e| HearthError::persistence(&path, "cannot write it").caused_by(e))
    }

    /// Reads what [`TrainedNetwork::save`] wrote, and the columns.
    pub(crate) fn load<C: DeserializeOwned>(dir: &Path) -> Result<(Self, C)> {
        let artifact = ModelArtifact::load(dir)
            .map_err(|e| HearthError::persistence(dir, "cannot load the trained network").caused_by(e))?;
        let path = dir.join(TRAINING_FILE);
        let text = std::fs::read_to_string(&path)
            .map_err(|e| HearthError::persistence(&path, "cannot read it").caused_by(e))?;
        let saved: SavedTraining<C> =
            serde_json::from_str(&text).map_err(|e| HearthError::persistence(&path, "unreadable").caused_by(e))?;
        Ok((Self::new(saved.uid, artifact, saved.summary)?, saved.columns))
    }
}
