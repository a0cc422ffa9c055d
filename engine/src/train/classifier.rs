//! Neural-network classifiers trained by the barrier stage, with pyspark.ml's column names.

use std::fmt;
use std::path::Path;
use std::time::Duration;

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::{DataType, Float64Type};
use datafusion::functions::core::expr_fn::get_field;
use datafusion::functions_aggregate::expr_fn::{count, max, min};
use datafusion::logical_expr::{cast, ident, lit};
use datafusion::prelude::DataFrame;
use hearth_ml::artifact::ModelArtifact;
use hearth_ml::model::{Activation, Layer, ModelSpec};
use hearth_ml::train::{DeviceChoice, EpochStats, Loss, OptimizerSpec, TrainOptions};
use serde::{Deserialize, Serialize};

use super::fit::{StageParams, TrainingSummary, train};
use super::function::TrainArgs;
use crate::barrier::check_slots;
use crate::error::{HearthError, Result};
use crate::functions;
use crate::session::SessionInfo;
use crate::vector::vector_dim;

/// The network a [`Classifier`] trains, given the feature width and the number of classes.
pub trait Architecture: Clone + fmt::Debug + Send + Sync {
    /// The estimator's name in messages, as Spark names its classes.
    const NAME: &'static str;

    /// The spec for `inputs` features and `classes` classes.
    fn spec(&self, inputs: usize, classes: usize) -> std::result::Result<ModelSpec, String>;
}

/// A multi-layer perceptron: dense hidden layers with an activation and dropout.
#[derive(Clone, Debug, PartialEq)]
pub struct Mlp {
    hidden: Vec<usize>,
    activation: Activation,
    dropout: f64,
}

impl Architecture for Mlp {
    const NAME: &'static str = "MlpClassifier";

    fn spec(&self, inputs: usize, classes: usize) -> std::result::Result<ModelSpec, String> {
        Ok(ModelSpec::Mlp {
            inputs,
            hidden: self.hidden.clone(),
            outputs: classes,
            activation: self.activation,
            dropout: self.dropout,
        })
    }
}

/// Softmax regression: one dense layer.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Linear;

impl Architecture for Linear {
    const NAME: &'static str = "LinearClassifier";

    fn spec(&self, inputs: usize, classes: usize) -> std::result::Result<ModelSpec, String> {
        Ok(ModelSpec::Linear {
            inputs,
            outputs: classes,
        })
    }
}

/// Layers in order, over features reshaped to `input_shape` (e.g. `[1, 8, 8]` for 64 pixels); the last
/// layer must output one logit per class.
#[derive(Clone, Debug, PartialEq)]
pub struct Sequential {
    input_shape: Vec<usize>,
    layers: Vec<Layer>,
}

impl Architecture for Sequential {
    const NAME: &'static str = "SequentialClassifier";

    fn spec(&self, inputs: usize, classes: usize) -> std::result::Result<ModelSpec, String> {
        let input_shape = if self.input_shape.is_empty() {
            vec![inputs]
        } else {
            self.input_shape.clone()
        };
        if input_shape.iter().product::<usize>() != inputs {
            return Err(format!(
                "input shape {input_shape:?} holds {} values, but the feature vectors have {inputs}",
                input_shape.iter().product::<usize>()
            ));
        }
        let spec = ModelSpec::Sequential {
            input_shape,
            layers: self.layers.clone(),
        };
        let outputs = spec.outputs().map_err(|e| e.to_string())?;
        if outputs != classes {
            return Err(format!(
                "the last layer has {outputs} outputs, but the labels have {classes} classes"
            ));
        }
        Ok(spec)
    }
}

/// A classifier trained with data-parallel SGD by the barrier stage: `workers` trainers, one per partition,
/// averaging gradients with allreduce.
///
/// Columns default to pyspark.ml's: `features` (a vector) and `label` (0, 1, … `classes − 1`) in;
/// `rawPrediction`, `probability` and `prediction` out. The number of classes is the largest label + 1.
#[derive(Clone, Debug)]
pub struct Classifier<A: Architecture> {
    architecture: A,
    features_col: String,
    label_col: String,
    prediction_col: String,
    probability_col: String,
    raw_prediction_col: String,
    optimizer: OptimizerSpec,
    epochs: usize,
    batch_size: usize,
    seed: u64,
    shuffle: bool,
    device: DeviceChoice,
    scale_lr_by_world_size: bool,
    class_weights: Option<Vec<f64>>,
    threads: Option<usize>,
    stage: StageParams,
}

/// A multi-layer perceptron classifier (hidden layers `[64]`, ReLU, no dropout by default).
///
/// ```
/// use hearth_engine::train::MlpClassifier;
/// let mlp = MlpClassifier::new().hidden_layers([600, 600]).dropout(0.2).workers(2).epochs(5);
/// ```
pub type MlpClassifier = Classifier<Mlp>;

/// Softmax regression trained by the barrier stage.
pub type LinearClassifier = Classifier<Linear>;

/// A classifier of any layers from hearth's Keras-like vocabulary (convolutions included).
///
/// ```
/// use hearth_engine::train::SequentialClassifier;
/// use hearth_ml::model::Layer;
/// let cnn = SequentialClassifier::new(
///     [1, 8, 8],
///     vec![
///         Layer::Conv2d { filters: 8, kernel: 3, stride: 1, padding: 1 },
///         Layer::Relu,
///         Layer::Flatten,
///         Layer::Dense { units: 10 },
///     ],
/// );
/// ```
pub type SequentialClassifier = Classifier<Sequential>;

impl<A: Architecture> Classifier<A> {
    fn with_architecture(architecture: A) -> Self {
        Self {
            architecture,
            features_col: "features".to_string(),
            label_col: "label".to_string(),
            prediction_col: "prediction".to_string(),
            probability_col: "probability".to_string(),
            raw_prediction_col: "rawPrediction".to_string(),
            optimizer: OptimizerSpec::adam(1e-3),
            epochs: 10,
            batch_size: 64,
            seed: 0,
            shuffle: true,
            device: DeviceChoice::Auto,
            scale_lr_by_world_size: false,
            class_weights: None,
            threads: None,
            stage: StageParams::default(),
        }
    }

    /// The vector column of features.
    pub fn features_col(mut self, column: impl Into<String>) -> Self {
        self.features_col = column.into();
        self
    }

    /// The label column: class indices 0, 1, …
    pub fn label_col(mut self, column: impl Into<String>) -> Self {
        self.label_col = column.into();
        self
    }

    /// The predicted class column the model adds.
    pub fn prediction_col(mut self, column: impl Into<String>) -> Self {
        self.prediction_col = column.into();
        self
    }

    /// The class probability vector column the model adds.
    pub fn probability_col(mut self, column: impl Into<String>) -> Self {
        self.probability_col = column.into();
        self
    }

    /// The raw score (logit) vector column the model adds.
    pub fn raw_prediction_col(mut self, column: impl Into<String>) -> Self {
        self.raw_prediction_col = column.into();
        self
    }

    /// The optimizer (default: Adam, learning rate 0.001).
    pub fn optimizer(mut self, optimizer: OptimizerSpec) -> Self {
        self.optimizer = optimizer;
        self
    }

    /// Passes over the data (default 10).
    pub fn epochs(mut self, epochs: usize) -> Self {
        self.epochs = epochs;
        self
    }

    /// Rows per step on each worker (default 64).
    pub fn batch_size(mut self, rows: usize) -> Self {
        self.batch_size = rows;
        self
    }

    /// Seed of the initial weights, shuffling and dropout (default 0).
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Whether each worker shuffles its rows every epoch (default true).
    pub fn shuffle(mut self, shuffle: bool) -> Self {
        self.shuffle = shuffle;
        self
    }

    /// Where the workers train (default: a GPU where the host has one).
    pub fn device(mut self, device: DeviceChoice) -> Self {
        self.device = device;
        self
    }

    /// Multiply the learning rate by the number of workers, as Horovod recommends.
    pub fn scale_lr_by_world_size(mut self, scale: bool) -> Self {
        self.scale_lr_by_world_size = scale;
        self
    }

    /// Per-class weights of the loss.
    pub fn class_weights(mut self, weights: impl Into<Vec<f64>>) -> Self {
        self.class_weights = Some(weights.into());
        self
    }

    /// libtorch threads per worker (default: cores / workers on the host).
    pub fn threads(mut self, threads: usize) -> Self {
        self.threads = Some(threads);
        self
    }

    /// Trainers running at once, one per partition (default 1). The session must have this many task slots.
    pub fn workers(mut self, workers: usize) -> Self {
        self.stage.workers = workers;
        self
    }

    /// Runs of the whole training stage before giving up (default 3); a retry resumes from the last
    /// checkpoint.
    pub fn max_attempts(mut self, attempts: usize) -> Self {
        self.stage.max_attempts = attempts;
        self
    }

    /// The longest any one collective may take (default 2 minutes).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.stage.timeout = timeout;
        self
    }

    /// How long the driver waits for every worker to start (default 5 minutes).
    pub fn rendezvous_timeout(mut self, timeout: Duration) -> Self {
        self.stage.rendezvous_timeout = timeout;
        self
    }

    fn invalid(&self, param: &'static str, message: impl ToString) -> HearthError {
        HearthError::InvalidParam {
            stage: A::NAME.to_string(),
            param,
            message: message.to_string(),
        }
    }

    fn schema_error(&self, column: &str, message: impl ToString) -> HearthError {
        HearthError::Schema {
            stage: A::NAME.to_string(),
            column: column.to_string(),
            message: message.to_string(),
        }
    }

    /// Trains on `df`'s rows with the barrier stage and returns the fitted model.
    pub async fn fit(&self, df: &DataFrame) -> Result<ClassificationModel> {
        check_slots(&SessionInfo::of(df), self.stage.workers).await?;
        let schema = df.schema();
        let features = schema
            .field_with_unqualified_name(&self.features_col)
            .map_err(|_| self.schema_error(&self.features_col, "no such column"))?;
        let inputs = vector_dim(features.data_type()).ok_or_else(|| {
            self.schema_error(
                &self.features_col,
                format!("must be a vector column, got {}", features.data_type()),
            )
        })?;
        let label = schema
            .field_with_unqualified_name(&self.label_col)
            .map_err(|_| self.schema_error(&self.label_col, "no such column"))?;
        if !label.data_type().is_numeric() {
            return Err(self.schema_error(
                &self.label_col,
                format!("must be numeric class indices, got {}", label.data_type()),
            ));
        }
        if self.epochs == 0 || self.batch_size == 0 {
            return Err(self.invalid("epochs", "epochs and batch size must be at least 1"));
        }
        let training = df.clone().select(vec![
            ident(&self.features_col),
            cast(ident(&self.label_col), DataType::Float64).alias(&self.label_col),
        ])?;
        let classes = self.count_classes(&training).await?;
        let spec = self
            .architecture
            .spec(inputs, classes)
            .map_err(|message| self.invalid("layers", message))?;
        let mut options = TrainOptions::new(spec, self.optimizer.clone());
        options.loss = Loss::SoftmaxCrossEntropy;
        options.epochs = self.epochs;
        options.batch_size = self.batch_size;
        options.seed = self.seed;
        options.shuffle = self.shuffle;
        options.device = self.device.clone();
        options.scale_lr_by_world_size = self.scale_lr_by_world_size;
        options.class_weights = self.class_weights.clone();
        options.threads = self.threads;
        let args = TrainArgs {
            options,
            features_col: self.features_col.clone(),
            label_col: self.label_col.clone(),
            resume: None,
        };
        let (artifact, summary) = train(&training, args, &self.stage).await?;
        ClassificationModel::new(
            artifact,
            summary,
            Columns {
                features: self.features_col.clone(),
                prediction: self.prediction_col.clone(),
                probability: self.probability_col.clone(),
                raw_prediction: self.raw_prediction_col.clone(),
            },
        )
    }

    /// Classes = largest label + 1, after checking there are rows and the labels are class indices.
    async fn count_classes(&self, training: &DataFrame) -> Result<usize> {
        let label = ident(&self.label_col);
        let batches = training
            .clone()
            .aggregate(
                vec![],
                vec![
                    min(label.clone()).alias("lowest"),
                    max(label.clone()).alias("highest"),
                    count(lit(1)).alias("rows"),
                ],
            )?
            .collect()
            .await?;
        let batch = batches
            .iter()
            .find(|b| b.num_rows() > 0)
            .ok_or_else(|| self.schema_error(&self.label_col, "the data frame has no rows"))?;
        let lowest = batch.column(0).as_primitive::<Float64Type>();
        let highest = batch.column(1).as_primitive::<Float64Type>();
        if lowest.is_null(0) {
            return Err(self.schema_error(&self.label_col, "no rows with a label to train on"));
        }
        let (lowest, highest) = (lowest.value(0), highest.value(0));
        if lowest < 0.0 || highest.fract() != 0.0 || !highest.is_finite() {
            return Err(self.schema_error(
                &self.label_col,
                format!("labels must be class indices 0, 1, …; found values from {lowest} to {highest}"),
            ));
        }
        Ok((highest as usize + 1).max(2))
    }
}

impl Classifier<Mlp> {
    /// A perceptron with one hidden layer of 64 ReLU units.
    pub fn new() -> Self {
        Self::with_architecture(Mlp {
            hidden: vec![64],
            activation: Activation::Relu,
            dropout: 0.0,
        })
    }

    /// The widths of the hidden layers.
    pub fn hidden_layers(mut self, widths: impl Into<Vec<usize>>) -> Self {
        self.architecture.hidden = widths.into();
        self
    }

    /// The activation after each hidden layer.
    pub fn activation(mut self, activation: Activation) -> Self {
        self.architecture.activation = activation;
        self
    }

    /// The dropout rate after each hidden activation.
    pub fn dropout(mut self, rate: f64) -> Self {
        self.architecture.dropout = rate;
        self
    }
}

impl Default for Classifier<Mlp> {
    fn default() -> Self {
        Self::new()
    }
}

impl Classifier<Linear> {
    /// Softmax regression.
    pub fn new() -> Self {
        Self::with_architecture(Linear)
    }
}

impl Default for Classifier<Linear> {
    fn default() -> Self {
        Self::new()
    }
}

impl Classifier<Sequential> {
    /// `layers` over the features reshaped to `input_shape` (empty: the flat vector).
    pub fn new(input_shape: impl Into<Vec<usize>>, layers: Vec<Layer>) -> Self {
        Self::with_architecture(Sequential {
            input_shape: input_shape.into(),
            layers,
        })
    }
}

/// The columns a classification model reads and writes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Columns {
    features: String,
    prediction: String,
    probability: String,
    raw_prediction: String,
}

/// What `training.json` holds beside the artifact.
#[derive(Serialize, Deserialize)]
struct SavedTraining {
    columns: Columns,
    summary: TrainingSummary,
}

/// The file beside `model.safetensors` and `model.json` that holds the training summary and the columns.
pub const TRAINING_FILE: &str = "training.json";

/// A fitted classifier: the trained network, how it was trained, and the columns it reads and adds.
#[derive(Clone, Debug)]
pub struct ClassificationModel {
    artifact: ModelArtifact,
    bytes: Vec<u8>,
    summary: TrainingSummary,
    columns: Columns,
}

impl ClassificationModel {
    fn new(artifact: ModelArtifact, summary: TrainingSummary, columns: Columns) -> Result<Self> {
        let bytes = artifact.to_bytes().map_err(|e| HearthError::Barrier {
            job: "model".to_string(),
            message: e.to_string(),
        })?;
        Ok(Self {
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

    /// The number of classes.
    pub fn num_classes(&self) -> usize {
        self.artifact.spec().outputs().unwrap_or(0)
    }

    /// Adds `rawPrediction`, `probability` and `prediction` columns (as named when fitting), computed on the
    /// partitions by the `ml_classify` function bound to the model.
    pub fn transform(&self, df: &DataFrame) -> Result<DataFrame> {
        const SCORES: &str = "__hearth_scores";
        let features = &self.columns.features;
        if df.schema().index_of_column_by_name(None, features).is_none() {
            return Err(HearthError::Schema {
                stage: "ClassificationModel".to_string(),
                column: features.clone(),
                message: "no such column".to_string(),
            });
        }
        let scored = df
            .clone()
            .with_column(SCORES, functions::classify(self.bytes.clone(), ident(features))?)?
            .with_column(&self.columns.raw_prediction, get_field(ident(SCORES), "rawPrediction"))?
            .with_column(&self.columns.probability, get_field(ident(SCORES), "probability"))?
            .with_column(&self.columns.prediction, get_field(ident(SCORES), "prediction"))?
            .drop_columns(&[SCORES])?;
        Ok(scored)
    }

    /// Writes `model.safetensors` and `model.json` (the artifact PyTorch and hearth load) and
    /// `training.json` (the summary and columns) into `dir`.
    pub fn save(&self, dir: impl AsRef<Path>) -> Result<()> {
        let dir = dir.as_ref();
        let persistence = |path: &Path, message: String| HearthError::Persistence {
            path: path.to_path_buf(),
            message,
        };
        self.artifact.save(dir).map_err(|e| persistence(dir, e.to_string()))?;
        let saved = SavedTraining {
            columns: self.columns.clone(),
            summary: self.summary.clone(),
        };
        let path = dir.join(TRAINING_FILE);
        let json = serde_json::to_string_pretty(&saved).map_err(|e| persistence(&path, e.to_string()))?;
        std::fs::write(&path, json + "\n").map_err(|e| persistence(&path, e.to_string()))
    }

    /// Reads a model written by [`ClassificationModel::save`].
    pub fn load(dir: impl AsRef<Path>) -> Result<Self> {
        let dir = dir.as_ref();
        let persistence = |path: &Path, message: String| HearthError::Persistence {
            path: path.to_path_buf(),
            message,
        };
        let artifact = ModelArtifact::load(dir).map_err(|e| persistence(dir, e.to_string()))?;
        let path = dir.join(TRAINING_FILE);
        let text = std::fs::read_to_string(&path).map_err(|e| persistence(&path, e.to_string()))?;
        let saved: SavedTraining = serde_json::from_str(&text).map_err(|e| persistence(&path, e.to_string()))?;
        Self::new(artifact, saved.summary, saved.columns)
    }
}
