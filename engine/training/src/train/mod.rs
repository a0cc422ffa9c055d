//! Training from data frames: hearth's trainer as a barrier stage, and the estimators built on it.
//!
//! A [`Network`] — a [`Classifier`] such as [`MlpClassifier`], or a [`Regressor`] such as [`MlpRegressor`] —
//! is an [`Estimator`](hearth_preprocessing::stage::Estimator) like the feature stages, so it can end a
//! [`Pipeline`](hearth_preprocessing::pipeline::Pipeline). It fits in three steps: one aggregate
//! query checks the labels (and counts a classifier's classes); the rows are repartitioned into exactly `workers` partitions; and a
//! barrier stage runs the trainer on every partition at once ([`TRAIN_FUNCTION`]), averaging gradients with
//! allreduce. Rank 0 sends the driver a checkpoint after every epoch; a failed stage is re-run as a whole
//! from the last one, up to `max_attempts` times. The fitted [`ClassificationModel`] (or [`RegressionModel`])
//! transforms data frames with the `ml_classify` (`ml_regress`) SQL function, bound to the model.
//!
//! ```
//! # tokio::runtime::Builder::new_multi_thread().build().unwrap().block_on(async {
//! use hearth_training::prelude::*;
//!
//! let session = Session::builder().with_default_features().local(2);
//! let df = session
//!     .context()
//!     .sql("SELECT ml_vector_assemble('error', x) AS features, CAST(x > 50 AS DOUBLE) AS label FROM generate_series(1, 100) AS t(x)")
//!     .await
//!     .unwrap();
//! let model = MlpClassifier::new().hidden_layers([8]).workers(2).epochs(2).fit(&df).await.unwrap();
//! assert_eq!(model.summary().ranks.len(), 2);
//! let scored = model.transform(&df).unwrap();
//! assert_eq!(scored.schema().fields().len(), 5); // features, label, rawPrediction, probability, prediction
//! # });
//! ```

mod architecture;
mod explain_udf;
mod fit;
mod function;
mod label_scale;
mod network;
mod network_model;
mod network_udf;
mod predictors;
mod progress;
mod progress_bar;
mod task;
mod trained;

pub use architecture::{Architecture, Linear, Mlp, Sequential};
pub use explain_udf::{EXPLAIN, EXPLAIN_UDF_CODEC, ExplainSettings, ExplainUdf, explain_function};
pub use fit::TrainingSummary;
pub use function::{TRAIN_FUNCTION, TrainArgs, TrainFunction, register_barrier_functions};
pub use hearth_torch::train::{EpochStats, RankReport};
pub use network::{
    Classifier, LinearClassifier, LinearRegressor, MlpClassifier, MlpRegressor, Network, Regressor,
    SequentialClassifier, SequentialRegressor,
};
pub use network_model::{
    ClassificationModel, ClassificationOutputs, ModelColumns, NetworkModel, Outputs, RegressionModel, RegressionOutputs,
};
pub use network_udf::{CLASSIFY, NETWORK_UDF_CODEC, NetworkUdf, REGRESS};
pub use progress::{ProgressSessionExt, TrainingProgress};
pub use progress_bar::{TrainingBar, epoch_line};
pub use task::{Classification, Regression, Task};
pub use trained::{TRAINING_FILE, TrainedNetwork};
