//! # hearth-training
//!
//! Training from data frames, on `hearth-preprocessing`'s stages and `hearth-exec`'s barrier stage:
//!
//! - hearth's trainers ([`train`]: [`MlpClassifier`](train::MlpClassifier) and friends), libtorch networks
//!   trained by one task per partition, all at once, averaging gradients with allreduce;
//! - Spark's [linear models](linear) ([`LogisticRegression`](linear::LogisticRegression),
//!   [`LinearRegression`](linear::LinearRegression)) and
//!   [`MultilayerPerceptronClassifier`](perceptron::MultilayerPerceptronClassifier), fitted as Spark fits them
//!   ([`full_batch`]);
//! - [`HorovodRunner`](horovod_runner::HorovodRunner) for hand-written tch training loops on the barrier stage.
//!
//! Each is an [`Estimator`](hearth_preprocessing::stage::Estimator), so it ends a
//! [`Pipeline`](hearth_preprocessing::pipeline::Pipeline) of feature stages:
//!
//! ```
//! # tokio::runtime::Builder::new_multi_thread().build().unwrap().block_on(async {
//! use hearth_training::prelude::*;
//!
//! let session = Session::builder().with_default_features().build("local[2]").unwrap();
//! let df = session
//!     .context()
//!     .sql("SELECT * FROM (VALUES ('x', 1.0, 0.0), ('y', 3.0, 1.0), ('x', 2.0, 0.0)) AS t(c, v, label)")
//!     .await
//!     .unwrap();
//! let model = Pipeline::new()
//!     .stage(StringIndexer::new().input_col("c").output_col("c_idx"))
//!     .stage(VectorAssembler::new().input_cols(["c_idx", "v"]).output_col("features"))
//!     .stage(MlpClassifier::new().hidden_layers([4]).epochs(1))
//!     .fit(&df)
//!     .await
//!     .unwrap();
//! let rows = model.transform(&df).unwrap().collect().await.unwrap();
//! assert_eq!(rows[0].num_columns(), 8); // + c_idx, features, rawPrediction, probability, prediction
//! # });
//! ```

// No function over 80 lines in the library (clippy.toml); tests, examples and benchmarks are exempt.
#![warn(clippy::too_many_lines)]

pub mod classes;
pub mod full_batch;
pub mod functions;
pub mod horovod_runner;
pub mod linear;
pub mod perceptron;
pub mod train;

// The fitted classifiers that evaluations and plots read through `ClassifierColumns`.
hearth_preprocessing::classifier_columns!(train::ClassificationModel, linear::LogisticRegressionModel);

/// What a pipeline author writes: [`hearth_preprocessing::prelude`], and the trainers and their settings.
pub mod prelude {
    pub use crate::functions::DefaultFeatures;
    pub use crate::linear::{LinearRegression, LinearRegressionModel, LogisticRegression, LogisticRegressionModel};
    pub use crate::perceptron::{MultilayerPerceptronClassificationModel, MultilayerPerceptronClassifier};
    pub use crate::train::{
        ClassificationModel, LinearClassifier, MlpClassifier, ProgressSessionExt, SequentialClassifier, TrainingSummary,
    };
    pub use hearth_collective::FrameProtection;
    pub use hearth_exec::barrier::{BarrierOptions, BarrierStage, BarrierTaskContext, FnBarrier, register_function};
    pub use hearth_preprocessing::prelude::*;
    pub use hearth_torch::model::{Activation, Layer};
    pub use hearth_torch::train::{DeviceChoice, LrSchedule, OptimizerSpec, Precision, Strategy, TrainSettings};
}
