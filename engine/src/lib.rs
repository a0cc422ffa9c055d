//! # hearth-engine
//!
//! hearth's DataFusion side: [`Session`](session::Session)s and their masters, CSV and Parquet reading, Spark's
//! `randomSplit`/`repartition`, and Spark MLlib's preprocessing stages with Spark's exact semantics —
//! [`VectorAssembler`](feature::VectorAssembler), [`StandardScaler`](feature::StandardScaler),
//! [`StringIndexer`](feature::StringIndexer) and [`OneHotEncoder`](feature::OneHotEncoder) — composed into
//! [`Pipeline`](pipeline::Pipeline)s that save as JSON.
//!
//! Fitting a stage is one aggregate query; a fitted stage transforms with a scalar function whose fitted
//! state is a literal argument. Every function is registered by name ([`functions`]), so the same
//! transforms are callable from SQL.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! use hearth_engine::prelude::*;
//!
//! let session = Session::new("local[2]").unwrap();
//! let df = session.sql("SELECT * FROM (VALUES ('x', 1.0), ('y', 3.0)) AS t(c, v)").await.unwrap();
//! let model = Pipeline::new()
//!     .stage(StringIndexer::new().input_col("c").output_col("c_idx"))
//!     .stage(VectorAssembler::new().input_cols(["c_idx", "v"]).output_col("features"))
//!     .fit(&df)
//!     .await
//!     .unwrap();
//! let rows = model.transform(&df).unwrap().collect().await.unwrap();
//! assert_eq!(rows[0].num_columns(), 4);
//! # });
//! ```

pub mod attribute;
pub mod ballista;
pub mod barrier;
pub mod error;
pub mod evaluation;
pub mod exchange;
pub mod feature;
pub mod frame;
pub mod functions;
mod host;
pub mod params;
pub mod pipeline;
pub mod read;
pub mod session;
pub mod stage;
pub mod train;
pub mod vector;

/// What a pipeline author writes: sessions, stages, pipelines and their traits.
pub mod prelude {
    pub use crate::barrier::{BarrierStage, BarrierTaskContext, FnBarrier, register_function};
    pub use crate::error::{HearthError, Result};
    pub use crate::evaluation::{
        BinaryClassificationEvaluator, MulticlassClassificationEvaluator, RegressionEvaluator,
    };
    pub use crate::feature::{
        OneHotEncoder, OneHotEncoderModel, StandardScaler, StandardScalerModel, StringIndexer, StringIndexerModel,
        VectorAssembler,
    };
    pub use crate::frame::DataFrameExt;
    pub use crate::params::{HandleInvalid, StringOrderType};
    pub use crate::pipeline::{FittedStage, Pipeline, PipelineModel, PipelineStage};
    pub use crate::read::CsvOptions;
    pub use crate::session::{Master, Session};
    pub use crate::stage::{Estimator, Transformer};
    pub use crate::train::{
        ClassificationModel, LinearClassifier, MlpClassifier, SequentialClassifier, TrainingSummary,
    };
    pub use datafusion::prelude::DataFrame;
    pub use hearth_ml::model::{Activation, Layer};
    pub use hearth_ml::train::{DeviceChoice, OptimizerSpec};
}
