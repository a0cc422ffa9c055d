//! # hearth
//!
//! Spark-style dataframe ML pipelines in one native binary: DataFusion reads and preprocesses the data with
//! Spark MLlib's exact semantics, and libtorch trains the model.
//!
//! Everything a pipeline author writes comes from [`prelude`]; with `default-features = false` (no `torch`
//! feature) hearth is its preprocessing side alone, which builds where libtorch was never installed:
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! use hearth::prelude::*;
//!
//! let session = Session::builder().with_preprocessing().build("local[2]").unwrap();
//! let df = session.context().sql("SELECT * FROM (VALUES ('a', 1.0), ('b', 2.0), ('a', 3.0)) AS t(c, x)").await.unwrap();
//! let (model, scaled) = Pipeline::new()
//!     .stage(StringIndexer::new().input_col("c").output_col("c_idx"))
//!     .stage(VectorAssembler::new().input_cols(["c_idx", "x"]).output_col("features"))
//!     .stage(StandardScaler::new().input_col("features").output_col("scaled"))
//!     .fit_transform(&df)
//!     .await
//!     .unwrap();
//! assert_eq!(model.stages().len(), 3);
//! assert_eq!(scaled.count().await.unwrap(), 3);
//! # });
//! ```

// No function over 80 lines in the library (clippy.toml); tests, examples and benchmarks are exempt.
#![warn(clippy::too_many_lines)]

/// The DataFusion hearth runs on, Arrow included (`hearth::datafusion::arrow`): for code that works with
/// record batches itself, such as a [`BarrierFunction`](exec::barrier::BarrierFunction), without a
/// dependency of its own to keep at hearth's version.
pub use datafusion;
/// The tch (libtorch) hearth trains with, for a training loop of one's own.
#[cfg(feature = "torch")]
pub use tch;

// One module per crate, named after its folder; `ml/` first, then `engine/`, then `executors/`.
pub use hearth_collective as collective;
pub use hearth_common as common;
pub use hearth_optim as optim;
pub use hearth_stats as stats;
#[cfg(feature = "torch")]
pub use hearth_torch as torch;

#[cfg(feature = "torch")]
pub use hearth_display as display;
pub use hearth_exec as exec;
pub use hearth_preprocessing as preprocessing;
#[cfg(feature = "torch")]
pub use hearth_sql as sql;
#[cfg(feature = "torch")]
pub use hearth_training as training;

#[cfg(feature = "torch")]
pub use hearth_connect as connect;

#[cfg(feature = "torch")]
pub mod datasets;

/// What a pipeline author writes.
pub mod prelude {
    #[cfg(feature = "polars")]
    pub use hearth_display::polars::{FromPolars, ToPolars};
    #[cfg(feature = "torch")]
    pub use hearth_display::{CatalogPlots, FrameDisplay, Metrics, PreviewExt, Rich, SessionView, TrainingCurves};
    #[cfg(not(feature = "torch"))]
    pub use hearth_preprocessing::prelude::*;
    #[cfg(feature = "torch")]
    pub use hearth_sql::{ModelsFeature, SqlSessionExt};
    #[cfg(feature = "torch")]
    pub use hearth_training::prelude::*;
}

/// The README's Rust examples, compiled and run as doctests so the README stays true.
#[doc = include_str!("../README.md")]
#[cfg(all(doctest, feature = "torch"))]
pub struct ReadmeDoctests;

/// The guide's chapter on training, its Rust examples run as doctests.
#[cfg(all(doctest, feature = "torch"))]
#[doc = include_str!("../docs/src/training.md")]
pub struct TrainingDoctests;

/// The guide's chapter on clustering and tuning, its Rust examples run as doctests.
#[cfg(all(doctest, feature = "torch"))]
#[doc = include_str!("../docs/src/clustering-and-tuning.md")]
pub struct ClusteringAndTuningDoctests;
