//! # hearth-sql
//!
//! SQL with models, in BigQuery ML's shape: `CREATE MODEL … OPTIONS (…) TRANSFORM (…) AS SELECT …` trains
//! through the barrier stage and saves the fitted pipeline in the session's [`ModelCatalog`];
//! `ML.PREDICT`, `ML.EVALUATE` and the other table functions of [`ML_FUNCTIONS`] are usable inside any query; `DROP MODEL` and `SHOW MODELS` manage the catalog. Every other statement is
//! DataFusion's.
//!
//! ```
//! # tokio::runtime::Builder::new_multi_thread().build().unwrap().block_on(async {
//! use hearth_training::prelude::*;
//! use hearth_sql::SqlSessionExt;
//!
//! let models = std::env::temp_dir().join(format!("hearth-doc-sql-{}", std::process::id()));
//! let session = Session::builder().with_default_features().local(2).with_models(&models);
//! session
//!     .sql("CREATE TABLE points AS SELECT x, x * x AS y, x > 50 AS big FROM generate_series(1, 100) AS t(x)")
//!     .await
//!     .unwrap();
//! session
//!     .sql("CREATE MODEL sizes OPTIONS (model_type = 'logistic_reg', input_label_cols = ['big'], max_iterations = 2)
//!           AS SELECT x, big FROM points")
//!     .await
//!     .unwrap()
//!     .collect()
//!     .await
//!     .unwrap();
//! let predictions = session
//!     .sql("SELECT x, predicted_big FROM ML.PREDICT(MODEL sizes, (SELECT x FROM points))")
//!     .await
//!     .unwrap();
//! assert_eq!(predictions.count().await.unwrap(), 100);
//! # std::fs::remove_dir_all(&models).unwrap();
//! # });
//! ```

// No function over 80 lines in the library (clippy.toml); tests, examples and benchmarks are exempt.
#![warn(clippy::too_many_lines)]

mod catalog;
mod class_weighted;
mod class_weights;
mod create_model;
mod data_roots;
mod error;
mod estimators;
mod evaluation_tables;
mod explain;
mod feature_slots;
mod hparams;
mod kmeans;
mod linear_artifact;
mod literals;
mod ml_functions;
mod ml_table;
mod model_plan;
mod models_feature;
mod options;
mod parser;
mod preprocessing;
mod relation;
mod rows;
mod session;
mod settings;
mod table_functions;
mod trained;
mod training_rows;
mod transform;
mod trials;
mod weights;

pub use catalog::{CatalogModel, ENTRY_FILE, EVALUATION_FILE, ModelCatalog, ModelEntry, default_models_dir};
pub use create_model::{BestTrial, CreatedModel};
pub use data_roots::DataRoots;
pub use ml_functions::{ML_FUNCTIONS, MlFunction, ml_functions_reference};
pub use model_plan::{CreateModelPlan, ModelPlanContext, plan_create_model};
pub use models_feature::{ModelCatalogExtension, ModelsFeature};
pub use options::{ClassWeights, DataSplit, ModelOptions, ModelType, OptimizeStrategy, create_model_options_reference};
pub use parser::{CreateModel, Statement, parse_statements};
pub use relation::MlRelationPlanner;
pub use session::SqlSessionExt;
pub use transform::{TransformPlan, plan_transform};
pub use trials::{TRIALS_FILE, TrialRecord, TrialsRecord};

pub use table_functions::held_out_rows;
pub use trained::Trained;
