//! Training from data frames: hearth's trainer as a barrier stage, and the estimators built on it.
//!
//! An estimator such as [`MlpClassifier`] fits in three steps: one aggregate query learns the feature width
//! and the number of classes; the rows are repartitioned into exactly `workers` partitions; and a barrier
//! stage runs the trainer on every partition at once ([`TRAIN_FUNCTION`](crate::barrier::TRAIN_FUNCTION)),
//! averaging gradients with allreduce. Rank 0 sends the driver a checkpoint after every epoch; a failed stage
//! is re-run as a whole from the last one, up to `max_attempts` times. The fitted model transforms data
//! frames with the `ml_classify` SQL function, which carries the model as a literal.
//!
//! ```
//! # tokio::runtime::Builder::new_multi_thread().build().unwrap().block_on(async {
//! use hearth_engine::prelude::*;
//!
//! let session = Session::local(2);
//! let df = session
//!     .sql("SELECT ml_vector_assemble('error', x) AS features, CAST(x > 50 AS DOUBLE) AS label FROM generate_series(1, 100) AS t(x)")
//!     .await
//!     .unwrap();
//! let model = MlpClassifier::new().hidden_layers([8]).workers(2).epochs(2).fit(&df).await.unwrap();
//! assert_eq!(model.summary().ranks.len(), 2);
//! let scored = model.transform(&df).unwrap();
//! assert_eq!(scored.schema().fields().len(), 5); // features, label, rawPrediction, probability, prediction
//! # });
//! ```

mod classifier;
mod fit;
mod function;

pub use classifier::{
    Architecture, ClassificationModel, Classifier, Linear, LinearClassifier, Mlp, MlpClassifier, Sequential,
    SequentialClassifier,
};
pub use fit::{AttemptReport, StageParams, TrainingSummary};
pub use function::{TrainArgs, TrainFunction};
