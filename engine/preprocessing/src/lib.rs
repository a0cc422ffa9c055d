//! # hearth-preprocessing
//!
//! Spark MLlib on DataFusion without libtorch: everything from data frames to features, and the stages that
//! need no trainer. It stands on `hearth-exec` (sessions, reading and writing, the barrier stage, Ballista);
//! hearth's trainers and Spark's linear models are `hearth-training`, which builds on this crate.
//!
//! - Spark MLlib's [feature stages](feature) with Spark's exact semantics — all [`Estimator`](stage::Estimator)s
//!   and [`Transformer`](stage::Transformer)s, composed into [`Pipeline`](pipeline::Pipeline)s that save as JSON.
//! - [`KMeans`](clustering::KMeans) clustering, fitted with one aggregate query per iteration.
//! - [Evaluators](evaluation) as aggregate queries.
//! - Model selection ([`tuning`]): parameter grids, train-validation splits and cross-validation.
//! - The [conformance] battery every stage class passes.
//!
//! Fitting a feature stage is one aggregate query; a fitted stage transforms with a scalar function whose
//! fitted state is a literal argument. Every function is registered by name ([`functions`]), so the same
//! transforms are callable from SQL.
//!
//! ```
//! # tokio::runtime::Builder::new_multi_thread().build().unwrap().block_on(async {
//! use hearth_preprocessing::prelude::*;
//!
//! let session = Session::builder().with_preprocessing().build("local[2]").unwrap();
//! let df = session
//!     .context()
//!     .sql("SELECT * FROM (VALUES ('x', 1.0), ('y', 3.0), ('x', 2.0)) AS t(c, v)")
//!     .await
//!     .unwrap();
//! let model = Pipeline::new()
//!     .stage(StringIndexer::new().input_col("c").output_col("c_idx"))
//!     .stage(VectorAssembler::new().input_cols(["c_idx", "v"]).output_col("raw"))
//!     .stage(StandardScaler::new().input_col("raw").output_col("features"))
//!     .fit(&df)
//!     .await
//!     .unwrap();
//! let rows = model.transform(&df).unwrap().collect().await.unwrap();
//! assert_eq!(rows[0].num_columns(), 5); // + c_idx, raw, features
//! # });
//! ```

// No function over 80 lines in the library (clippy.toml); tests, examples and benchmarks are exempt.
#![warn(clippy::too_many_lines)]

pub mod clustering;
pub mod conformance;
pub mod evaluation;
pub mod feature;
pub mod functions;
pub mod pipeline;
pub mod stage;
pub mod tuning;

/// What a pipeline author writes: sessions, preprocessing stages, pipelines, evaluators and their traits.
pub mod prelude {
    pub use crate::clustering::{KMeans, KMeansModel};
    pub use crate::evaluation::{
        BinaryClassificationEvaluator, ClusteringEvaluator, MulticlassClassificationEvaluator, RegressionEvaluator,
    };
    pub use crate::feature::{
        OneHotEncoder, OneHotEncoderModel, StandardScaler, StandardScalerModel, StringIndexer, StringIndexerModel,
        VectorAssembler,
    };
    pub use crate::functions::PreprocessingFeature;
    pub use crate::pipeline::{Pipeline, PipelineModel, PipelineStage};
    pub use crate::stage::{Estimator, Stage, Transformer};
    pub use datafusion::prelude::DataFrame;
    pub use hearth_common::params::{HandleInvalid, StringOrderType};
    pub use hearth_exec::error::{HearthError, Result};
    pub use hearth_exec::frame::DataFrameExt;
    pub use hearth_exec::master::Master;
    pub use hearth_exec::read::CsvOptions;
    pub use hearth_exec::session::Session;
}
