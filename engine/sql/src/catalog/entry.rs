//! A model's entry in the catalog: what SQL needs to know of it besides its pipeline.

use serde::{Deserialize, Serialize};

/// What the catalog knows of a model besides its pipeline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelEntry {
    /// The model's name.
    pub name: String,
    /// `mlp_classifier`, `logistic_reg`, `mlp_regressor`, or `pipeline` for one registered from Rust.
    pub model_type: String,
    /// The label column of the training input.
    pub label: String,
    /// The label's values in class-index order, when the labels were indexed (strings); a prediction of
    /// index `i` is `labels[i]`.
    #[serde(default)]
    pub labels: Option<Vec<String>>,
    /// Whether the model predicts classes (else a number).
    pub classifier: bool,
    /// The column the pipeline's classifier reads its label index from.
    pub label_index: String,
    /// The columns of the training rows the preprocessing reads (a prediction's rows need them).
    #[serde(default)]
    pub inputs: Vec<String>,
    /// The columns the preprocessing outputs (TRANSFORM's select list), the label's excluded.
    pub features: Vec<String>,
    /// How many leading stages of the pipeline are the preprocessing (`ML.TRANSFORM` applies these).
    pub preprocessing_stages: usize,
    /// The `OPTIONS` as written.
    #[serde(default)]
    pub options: std::collections::BTreeMap<String, String>,
    /// The `TRANSFORM (…)` list as written.
    #[serde(default)]
    pub transform: Option<String>,
    /// The training query as written.
    #[serde(default)]
    pub query: Option<String>,
    /// Rows trained on.
    pub training_rows: u64,
    /// Rows held out for evaluation.
    pub evaluation_rows: u64,
    /// Seconds the training took.
    pub training_seconds: f64,
    /// When it was created (milliseconds since the Unix epoch).
    pub created_ms: u64,
    /// A network's training rows' mean features vector: the baseline its explanations are measured from
    /// (none for k-means and models registered from Rust).
    #[serde(default)]
    pub feature_means: Option<Vec<f64>>,
    /// The same rows' sample standard deviation of each slot of the features vector: what
    /// `ML.WEIGHTS(MODEL m, STRUCT(TRUE AS standardize))` weighs a number by.
    #[serde(default)]
    pub feature_deviations: Option<Vec<f64>>,
}
