//! # hearth-engine
//!
//! hearth's ML layer on DataFusion: everything from data frames to a trained model. The execution core it
//! stands on (sessions, reading and writing, the barrier stage, Ballista) is `hearth-exec`, re-exported here
//! at its old paths.
//!
//! - [`Session`](session::Session)s on three [masters](master::Master) (`local[N]`, `standalone[N]`,
//!   `df://host:port`), CSV and Parquet [reading](read), Spark's `randomSplit` and `repartition(n)`
//!   ([`frame`]).
//! - Spark MLlib's [feature stages](feature) with Spark's exact semantics, and hearth's trainers
//!   ([`train`]: [`MlpClassifier`](train::MlpClassifier) and friends) — all [`Estimator`](stage::Estimator)s
//!   and [`Transformer`](stage::Transformer)s, composed into [`Pipeline`](pipeline::Pipeline)s that save as
//!   JSON.
//! - The [barrier stage](barrier) that trains: one task per partition, all at once, with allreduce; on
//!   [Ballista](ballista) through hearth's [codecs](codec).
//! - Spark's [linear models](linear) ([`LogisticRegression`](linear::LogisticRegression),
//!   [`LinearRegression`](linear::LinearRegression)) and
//!   [`MultilayerPerceptronClassifier`](perceptron::MultilayerPerceptronClassifier), fitted as Spark fits them, on
//!   the barrier stage.
//! - [`KMeans`](clustering::KMeans) clustering, fitted with one aggregate query per iteration.
//! - [Evaluators](evaluation) as aggregate queries.
//! - Model selection ([`tuning`]): parameter grids, train-validation splits and cross-validation.
//! - [`HorovodRunner`](horovod_runner::HorovodRunner) for hand-written tch training loops on the barrier stage.
//!
//! Fitting a feature stage is one aggregate query; a fitted stage transforms with a scalar function whose
//! fitted state is a literal argument. Every function is registered by name ([`functions`]), so the same
//! transforms are callable from SQL.
//!
//! ```
//! # tokio::runtime::Builder::new_multi_thread().build().unwrap().block_on(async {
//! use hearth_engine::prelude::*;
//!
//! let session = Session::new("local[2]").unwrap();
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

pub use hearth_common::{attribute, error, files, host, names, params, peers, scratch, vector};
use hearth_exec::udf;
pub use hearth_exec::{
    ballista, barrier, cache, codec, driver_job, exchange, extension, frame, images, master, object_stores, read,
    session, write,
};

pub mod clustering;
pub mod conformance;
pub mod evaluation;
pub mod feature;
pub mod full_batch;
pub mod functions;
pub mod horovod_runner;
pub mod linear;
pub mod perceptron;
pub mod pipeline;
pub mod stage;
pub mod train;
pub mod tuning;

/// What a pipeline author writes: sessions, stages, pipelines and their traits.
pub mod prelude {
    pub use crate::barrier::{BarrierOptions, BarrierStage, BarrierTaskContext, FnBarrier, register_function};
    pub use crate::clustering::{KMeans, KMeansModel};
    pub use crate::error::{HearthError, Result};
    pub use crate::evaluation::{
        BinaryClassificationEvaluator, ClusteringEvaluator, MulticlassClassificationEvaluator, RegressionEvaluator,
    };
    pub use crate::feature::{
        OneHotEncoder, OneHotEncoderModel, StandardScaler, StandardScalerModel, StringIndexer, StringIndexerModel,
        VectorAssembler,
    };
    pub use crate::frame::DataFrameExt;
    pub use crate::linear::{LinearRegression, LinearRegressionModel, LogisticRegression, LogisticRegressionModel};
    pub use crate::master::Master;
    pub use crate::params::{HandleInvalid, StringOrderType};
    pub use crate::perceptron::{MultilayerPerceptronClassificationModel, MultilayerPerceptronClassifier};
    pub use crate::pipeline::{Pipeline, PipelineModel, PipelineStage};
    pub use crate::read::CsvOptions;
    pub use crate::session::Session;
    pub use crate::stage::{Estimator, Stage, Transformer};
    pub use crate::train::{
        ClassificationModel, LinearClassifier, MlpClassifier, ProgressSessionExt, SequentialClassifier, TrainingSummary,
    };
    pub use datafusion::prelude::DataFrame;
    pub use hearth_collective::FrameProtection;
    pub use hearth_torch::model::{Activation, Layer};
    pub use hearth_torch::train::{DeviceChoice, LrSchedule, OptimizerSpec, Precision, Strategy, TrainSettings};
}
