//! `Network`: a neural network trained by the barrier stage — a classifier or a regressor of any
//! [`Architecture`] — with pyspark.ml's column names.

use std::time::Duration;

use datafusion::arrow::datatypes::DataType;
use datafusion::logical_expr::{Expr, cast, ident};
use datafusion::prelude::DataFrame;
use hearth_collective::FrameProtection;
use hearth_common::params::new_uid;
use hearth_exec::barrier::{BarrierOptions, check_slots};
use hearth_exec::error::{HearthError, Result};
use hearth_exec::master::SessionInfo;
use hearth_exec::vector::vector_dim;
use hearth_preprocessing::pipeline::{IntoPipelineStage, PipelineStage, SavedStage, StageClass, load_serde_estimator};
use hearth_preprocessing::stage::{Estimator, Stage, to_params};
use hearth_torch::model::{Activation, Layer};
use hearth_torch::train::{
    Augmentation, DeviceChoice, EarlyStopping, LrSchedule, OptimizerSpec, Precision, Strategy, TrainOptions,
    TrainSettings,
};
use serde::{Deserialize, Serialize};

use super::architecture::{Architecture, Linear, Mlp, Sequential};
use super::fit::train;
use super::function::TrainArgs;
use super::label_scale::LabelScale;
use super::network_model::{ModelColumns, NetworkModel};
use super::task::{Classification, Regression, Task};
use super::trained::TrainedNetwork;

/// A network trained with data-parallel SGD by the barrier stage: `workers` trainers, one per partition,
/// averaging gradients with allreduce. It is an [`Estimator`], so it can be a pipeline's last stage. `A` is
/// the network, `T` what it learns: classes ([`Classifier`]) or a number ([`Regressor`]).
///
/// Columns default to pyspark.ml's: `features` (a vector) and `label` in; `prediction` out, and for a
/// classifier `rawPrediction` and `probability` too. A classifier's labels are class indices 0, 1, …
/// (the number of classes is the largest label + 1); a regressor's are targets. Training settings
/// ([`TrainSettings`]) and the stage's ([`BarrierOptions`]) keep their own defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, bound = "")]
pub struct Network<A: Architecture, T: Task> {
    uid: String,
    #[serde(flatten)]
    architecture: A,
    features_col: String,
    label_col: String,
    prediction_col: String,
    #[serde(flatten)]
    task: T,
    #[serde(skip_serializing_if = "Option::is_none")]
    validation_indicator_col: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    weight_col: Option<String>,
    training: TrainSettings,
    barrier: BarrierOptions,
}

/// A classifier of architecture `A`.
pub type Classifier<A> = Network<A, Classification>;

/// A regressor of architecture `A`: one output, mean squared error.
pub type Regressor<A> = Network<A, Regression>;

/// A multi-layer perceptron classifier (hidden layers `[64]`, ReLU, no dropout by default).
///
/// ```
/// use hearth_training::train::MlpClassifier;
/// let mlp = MlpClassifier::new().hidden_layers([600, 600]).dropout(0.2).workers(2).epochs(5);
/// ```
pub type MlpClassifier = Classifier<Mlp>;

/// Softmax regression trained by the barrier stage.
pub type LinearClassifier = Classifier<Linear>;

/// A multi-layer perceptron regressor (hidden layers `[64]`, ReLU, no dropout by default).
///
/// ```
/// use hearth_training::train::MlpRegressor;
/// let mlp = MlpRegressor::new().hidden_layers([32]).workers(2).epochs(5);
/// ```
pub type MlpRegressor = Regressor<Mlp>;

/// Linear regression trained by the barrier stage.
pub type LinearRegressor = Regressor<Linear>;

/// A regressor of any layers from hearth's Keras-like vocabulary; the last layer has one output.
pub type SequentialRegressor = Regressor<Sequential>;

/// A classifier of any layers from hearth's Keras-like vocabulary (convolutions included).
///
/// ```
/// use hearth_training::train::SequentialClassifier;
/// use hearth_torch::model::Layer;
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

impl<A: Architecture, T: Task> Default for Network<A, T> {
    fn default() -> Self {
        Self::with_architecture(A::default())
    }
}

/// Setters of a field of the training settings, each documented with the setting's default.
macro_rules! training_setters {
    ($($(#[$doc:meta])* $name:ident: $type:ty;)*) => {
        $($(#[$doc])*
        pub fn $name(mut self, value: $type) -> Self {
            self.training.$name = value;
            self
        })*
    };
}

impl<A: Architecture, T: Task> Network<A, T> {
    fn with_architecture(architecture: A) -> Self {
        Self {
            uid: new_uid(T::class::<A>()),
            architecture,
            features_col: "features".to_string(),
            label_col: "label".to_string(),
            prediction_col: "prediction".to_string(),
            task: T::default(),
            validation_indicator_col: None,
            weight_col: None,
            training: TrainSettings::default(),
            barrier: BarrierOptions::default(),
        }
    }

    /// The vector column of features.
    pub fn features_col(mut self, column: impl Into<String>) -> Self {
        self.features_col = column.into();
        self
    }

    /// The label column: class indices 0, 1, … for a classifier, targets for a regressor.
    pub fn label_col(mut self, column: impl Into<String>) -> Self {
        self.label_col = column.into();
        self
    }

    /// The prediction column the model adds.
    pub fn prediction_col(mut self, column: impl Into<String>) -> Self {
        self.prediction_col = column.into();
        self
    }

    /// A boolean column marking validation rows (Spark's `validationIndicatorCol`): rows where it is true
    /// are not trained on; every epoch reports the loss and accuracy on them.
    pub fn validation_indicator_col(mut self, column: impl Into<String>) -> Self {
        self.validation_indicator_col = Some(column.into());
        self
    }

    /// A numeric column of sample weights (Spark's `weightCol`; default none: every row weighs 1): each
    /// row's loss counts that much, and the epochs' loss and accuracy are weighted means.
    pub fn weight_col(mut self, column: impl Into<String>) -> Self {
        self.weight_col = Some(column.into());
        self
    }

    /// All training settings at once.
    pub fn training(mut self, settings: TrainSettings) -> Self {
        self.training = settings;
        self
    }

    training_setters! {
        /// The optimizer (default: Adam, learning rate 0.001).
        optimizer: OptimizerSpec;
        /// How the learning rate changes over epochs (default constant).
        schedule: LrSchedule;
        /// Epochs of Horovod's linear warm-up to the world-size-scaled rate (default 0).
        warmup_epochs: f64;
        /// Passes over the data (default 10).
        epochs: usize;
        /// Rows per step on each worker (default 64).
        batch_size: usize;
        /// Seed of the initial weights, shuffling, dropout and MixUp (default 0).
        seed: u64;
        /// Whether each worker shuffles its rows every epoch (default true).
        shuffle: bool;
        /// Where the workers train (default: a GPU where the host has one).
        device: DeviceChoice;
        /// The number format of the forward and backward passes: fp32 (default) or bf16 over an fp32 master
        /// copy (mixed precision).
        precision: Precision;
        /// Multiply the learning rate by the number of workers, as Horovod recommends (default false).
        scale_lr_by_world_size: bool;
        /// How the workers combine what they learn: every step's gradient averaged (the default), elastic
        /// averaging, a parameter server (DOWNPOUR, ADAG, asynchronous EASGD/EAMSGD), model averaging, or one
        /// worker alone. See [`Strategy`].
        strategy: Strategy;
        /// Random flips and crops of image inputs while training (a `Sequential` model on `[C, H, W]`
        /// images; default none).
        augmentation: Augmentation;
    }

    /// The bytes of its rows each worker may hold in memory (default: half the memory its host has free,
    /// shared by the workers it runs). A worker whose rows do not fit streams them from its disk every epoch
    /// through a shuffle buffer, as Ray Data's `iter_torch_batches(local_shuffle_buffer_size=…)` does; the Ranks
    /// table says which each worker did.
    ///
    /// ```
    /// use hearth_training::train::MlpClassifier;
    /// let mlp = MlpClassifier::new().memory_budget(512 << 20).shuffle_buffer_rows(100_000);
    /// assert_eq!(mlp.get_training().memory_budget, Some(512 << 20));
    /// ```
    pub fn memory_budget(mut self, bytes: u64) -> Self {
        self.training.memory_budget = Some(bytes);
        self
    }

    /// Rows in a streaming worker's shuffle buffer (default: what a quarter of its memory budget holds); a
    /// buffer that holds every row shuffles exactly as training in memory does.
    pub fn shuffle_buffer_rows(mut self, rows: usize) -> Self {
        self.training.shuffle_buffer_rows = Some(rows);
        self
    }

    /// Train on MixUp batches with Beta(α, α) mixing (Zhang et al. 2018; default off).
    pub fn mixup_alpha(mut self, alpha: f64) -> Self {
        self.training.mixup_alpha = Some(alpha);
        self
    }

    /// Stop once the validation loss has not fallen by `min_delta` for `patience` epochs, and keep the best
    /// epoch's weights (Keras's `EarlyStopping(patience, min_delta, restore_best_weights=True)`; default:
    /// train every epoch). Needs [`validation_indicator_col`](Self::validation_indicator_col).
    ///
    /// ```
    /// use hearth_training::train::MlpClassifier;
    /// let mlp = MlpClassifier::new().validation_indicator_col("is_validation").early_stopping(3, 1e-4);
    /// assert_eq!(mlp.get_training().early_stopping.unwrap().patience, 3);
    /// ```
    pub fn early_stopping(mut self, patience: usize, min_delta: f64) -> Self {
        self.training.early_stopping = Some(EarlyStopping::new(patience, min_delta));
        self
    }

    /// Early stopping by relative progress: stop once `patience` epochs have not lowered the validation
    /// loss by `min_rel_progress` of the best so far (BigQuery ML's `early_stop` is patience 1 with 0.01).
    pub fn early_stopping_relative(mut self, patience: usize, min_rel_progress: f64) -> Self {
        self.training.early_stopping = Some(EarlyStopping::relative(patience, min_rel_progress));
        self
    }

    /// libtorch threads per worker (default: cores / workers on the host).
    pub fn threads(mut self, threads: usize) -> Self {
        self.training.threads = Some(threads);
        self
    }

    /// All the barrier stage's settings at once.
    pub fn barrier(mut self, options: BarrierOptions) -> Self {
        self.barrier = options;
        self
    }

    /// Trainers running at once, one per partition (default 1). The session must have this many task slots.
    pub fn workers(mut self, workers: usize) -> Self {
        self.barrier.workers = workers;
        self
    }

    /// Runs of the whole training stage before giving up (default 3); a retry resumes from the last
    /// checkpoint.
    pub fn max_attempts(mut self, attempts: usize) -> Self {
        self.barrier.max_attempts = attempts;
        self
    }

    /// Where the training stage keeps each epoch's checkpoint, a local directory or an object store's URL
    /// (default: `$HEARTH_CHECKPOINT_DIR`, else the driver's memory alone): a job whose driver died
    /// resumes from its last epoch when run again as the same job
    /// ([`Session::resume_job`](hearth_exec::session::Session::resume_job), `hearth job resume`).
    pub fn checkpoint_dir(mut self, dir: impl Into<String>) -> Self {
        self.barrier.checkpoint_dir = Some(dir.into());
        self
    }

    /// The longest any one collective may take (default 2 minutes).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.barrier.timeout = timeout;
        self
    }

    /// How long the driver waits for every worker to start (default 5 minutes).
    pub fn rendezvous_timeout(mut self, timeout: Duration) -> Self {
        self.barrier.rendezvous_timeout = timeout;
        self
    }

    /// How the links between workers protect their frames: encrypted (default) or integrity-checked alone.
    pub fn frame_protection(mut self, protection: FrameProtection) -> Self {
        self.barrier.frame_protection = protection;
        self
    }

    /// The training settings.
    pub fn get_training(&self) -> &TrainSettings {
        &self.training
    }

    /// The barrier stage's settings.
    pub fn get_barrier(&self) -> &BarrierOptions {
        &self.barrier
    }

    /// GPUs each rank holds: one for `cuda`, one for `auto` when the session has one for every rank, none
    /// otherwise (or as [`BarrierOptions::gpus_per_task`] says, if more; more than one fails the stage).
    async fn gpus_per_task(&self, info: &SessionInfo) -> Result<usize> {
        let wanted = match self.training.device {
            DeviceChoice::Cpu => 0,
            DeviceChoice::Cuda(_) => 1,
            DeviceChoice::Auto => {
                let (found, workers) = (info.gpu_slots().await?, self.barrier.workers);
                if found < workers {
                    log::info!(
                        "{}: device auto trains on the CPU: {} can give {found} tasks a GPU at once, {workers} ranks need one each",
                        self.uid,
                        info.master()
                    );
                }
                usize::from(found >= workers)
            }
        };
        Ok(wanted.max(self.barrier.gpus_per_task))
    }

    /// The feature width, after checking the input columns; and the columns the trainers get.
    fn training_columns(&self, df: &DataFrame) -> Result<(usize, Vec<Expr>)> {
        let schema = df.schema();
        let features = schema
            .field_with_unqualified_name(&self.features_col)
            .map_err(|_| HearthError::schema(&self.uid, &self.features_col, "no such column"))?;
        let inputs = vector_dim(features.data_type()).ok_or_else(|| {
            HearthError::schema(
                &self.uid,
                &self.features_col,
                format!("must be a vector column, got {}", features.data_type()),
            )
        })?;
        let label = schema
            .field_with_unqualified_name(&self.label_col)
            .map_err(|_| HearthError::schema(&self.uid, &self.label_col, "no such column"))?;
        if !label.data_type().is_numeric() {
            return Err(HearthError::schema(
                &self.uid,
                &self.label_col,
                format!("must be numeric class indices, got {}", label.data_type()),
            ));
        }
        let mut columns = vec![
            ident(&self.features_col),
            cast(ident(&self.label_col), DataType::Float64).alias(&self.label_col),
        ];
        if let Some(indicator) = &self.validation_indicator_col {
            let field = schema
                .field_with_unqualified_name(indicator)
                .map_err(|_| HearthError::schema(&self.uid, indicator, "no such column"))?;
            if field.data_type() != &DataType::Boolean {
                return Err(HearthError::schema(
                    &self.uid,
                    indicator,
                    format!("a validation indicator must be boolean, got {}", field.data_type()),
                ));
            }
            columns.push(ident(indicator));
        }
        if let Some(weight) = &self.weight_col {
            let field = schema
                .field_with_unqualified_name(weight)
                .map_err(|_| HearthError::schema(&self.uid, weight, "no such column"))?;
            if !field.data_type().is_numeric() {
                return Err(HearthError::schema(
                    &self.uid,
                    weight,
                    format!("sample weights must be numeric, got {}", field.data_type()),
                ));
            }
            columns.push(cast(ident(weight), DataType::Float64).alias(weight));
        }
        Ok((inputs, columns))
    }
}

impl<A: Architecture, T: Task> Estimator for Network<A, T> {
    type Model = NetworkModel<T::Outputs>;

    /// Trains on `df`'s rows with the barrier stage and returns the fitted model.
    async fn fit(&self, df: &DataFrame) -> Result<Self::Model> {
        let info = SessionInfo::of(df);
        // dist-keras's SingleTrainer: every row on one worker, whatever `workers` says.
        let workers = match self.training.strategy {
            Strategy::Single => 1,
            _ => self.barrier.workers,
        };
        check_slots(&info, workers).await?;
        self.training
            .strategy
            .check(self.training.scaled_learning_rate(workers))
            .map_err(|e| HearthError::invalid_param(&self.uid, "strategy", "is not usable").caused_by(e))?;
        let barrier = BarrierOptions {
            workers,
            gpus_per_task: self.gpus_per_task(&info).await?,
            memory_budget: self.training.memory_budget.or(self.barrier.memory_budget),
            ..self.barrier.clone()
        };
        let (inputs, columns) = self.training_columns(df)?;
        if let Some(rule) = &self.training.early_stopping {
            rule.check()
                .map_err(|e| HearthError::invalid_param(&self.uid, "early_stopping", "is not usable").caused_by(e))?;
            if self.validation_indicator_col.is_none() {
                return Err(HearthError::invalid_param(
                    &self.uid,
                    "early_stopping",
                    "decides on the validation loss: mark validation rows with validation_indicator_col",
                ));
            }
        }
        if self.training.epochs == 0 || self.training.batch_size == 0 {
            return Err(HearthError::invalid_param(
                &self.uid,
                "epochs",
                "epochs and batch size must be at least 1",
            ));
        }
        let training = df.clone().select(columns)?;
        let outputs = self.task.outputs(&self.uid, &self.label_col, &training).await?;
        let spec = self.architecture.spec(&self.uid, inputs, outputs)?;
        let layers = spec.layers().1;
        let scale = match T::STANDARDIZES_LABEL {
            true => LabelScale::of(&training, &self.label_col, &layers).await?,
            false => None,
        };
        let training = match &scale {
            Some(scale) => training.with_column(&self.label_col, scale.standardized(&self.label_col))?,
            None => training,
        };
        let args = TrainArgs {
            options: TrainOptions {
                model: spec,
                loss: T::LOSS,
                settings: self.training.clone(),
            },
            features_col: self.features_col.clone(),
            label_col: self.label_col.clone(),
            validation_col: self.validation_indicator_col.clone(),
            weight_col: self.weight_col.clone(),
        };
        let (mut artifact, mut summary) = train(&training, &self.uid, &args, &barrier, scale).await?;
        if let Some(scale) = &scale {
            scale.unscale(&mut artifact, &mut summary.ranks, layers.len())?;
        }
        let columns = self.task.columns(ModelColumns {
            features_col: self.features_col.clone(),
            label_col: self.label_col.clone(),
            prediction_col: self.prediction_col.clone(),
        });
        Ok(NetworkModel::new(
            TrainedNetwork::new(self.uid.clone(), artifact, summary)?,
            columns,
        ))
    }
}

impl<A: Architecture, T: Task> Stage for Network<A, T> {
    fn class(&self) -> &'static str {
        T::class::<A>()
    }

    fn uid(&self) -> &str {
        &self.uid
    }

    fn params(&self) -> Result<serde_json::Value> {
        to_params(&self.uid, self)
    }

    fn describe(&self) -> String {
        let strategy = match &self.training.strategy {
            Strategy::Synchronous => String::new(),
            other => format!(", strategy {}", other.name()),
        };
        format!(
            "{} epochs of {}-row batches on {} workers{strategy}",
            self.training.epochs, self.training.batch_size, self.barrier.workers
        )
    }
}

impl<A: Architecture, T: Task> IntoPipelineStage for Network<A, T> {
    fn into_stage(self) -> PipelineStage {
        PipelineStage::estimator(self)
    }
}

/// Makes the classes of saved networks, each loaded through its serde form.
macro_rules! network_classes {
    ($($network:ident),*) => {
        $(impl SavedStage for $network {
            const CLASS: StageClass = StageClass::new(stringify!($network), load_serde_estimator::<$network>);
        })*
    };
}

network_classes!(
    MlpClassifier,
    LinearClassifier,
    SequentialClassifier,
    MlpRegressor,
    LinearRegressor,
    SequentialRegressor
);

/// `network` set for the conformance battery's rows: one epoch on one CPU worker.
fn example<A: Architecture, T: Task>(network: Network<A, T>) -> Network<A, T> {
    network
        .features_col("features")
        .label_col("label")
        .epochs(1)
        .batch_size(4)
        .workers(1)
        .device(DeviceChoice::Cpu)
        .seed(1)
}

hearth_preprocessing::stage_example!(MlpClassifier, example(MlpClassifier::new().hidden_layers(vec![4])));
hearth_preprocessing::stage_example!(LinearClassifier, example(LinearClassifier::new()));
hearth_preprocessing::stage_example!(
    SequentialClassifier,
    example(SequentialClassifier::new(
        [2],
        vec![Layer::Dense { units: 4 }, Layer::Relu, Layer::Dense { units: 2 }]
    ))
);
hearth_preprocessing::stage_example!(MlpRegressor, example(MlpRegressor::new().hidden_layers(vec![4])));
hearth_preprocessing::stage_example!(LinearRegressor, example(LinearRegressor::new()));
hearth_preprocessing::stage_example!(
    SequentialRegressor,
    example(SequentialRegressor::new(
        [2],
        vec![Layer::Dense { units: 4 }, Layer::Relu, Layer::Dense { units: 1 }]
    ))
);

impl<A: Architecture> Classifier<A> {
    /// The class probability vector column the model adds.
    pub fn probability_col(mut self, column: impl Into<String>) -> Self {
        self.task.probability_col = column.into();
        self
    }

    /// The raw score (logit) vector column the model adds.
    pub fn raw_prediction_col(mut self, column: impl Into<String>) -> Self {
        self.task.raw_prediction_col = column.into();
        self
    }

    /// Per-class weights of the loss (default none).
    pub fn class_weights(mut self, weights: impl Into<Vec<f64>>) -> Self {
        self.training.class_weights = Some(weights.into());
        self
    }
}

impl<T: Task> Network<Mlp, T> {
    /// A perceptron with one hidden layer of 64 ReLU units.
    pub fn new() -> Self {
        Self::default()
    }

    /// The widths of the hidden layers.
    pub fn hidden_layers(mut self, widths: impl Into<Vec<usize>>) -> Self {
        self.architecture.hidden_layers = widths.into();
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

impl<T: Task> Network<Linear, T> {
    /// One dense layer: softmax regression, or linear regression.
    pub fn new() -> Self {
        Self::default()
    }
}

impl<T: Task> Network<Sequential, T> {
    /// `layers` over the features reshaped to `input_shape` (empty: the flat vector).
    pub fn new(input_shape: impl Into<Vec<usize>>, layers: Vec<Layer>) -> Self {
        Self::with_architecture(Sequential {
            input_shape: input_shape.into(),
            layers,
        })
    }
}
