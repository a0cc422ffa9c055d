//! Spark MLlib's linear models, fitted as Spark fits them: [`LogisticRegression`] (binomial or multinomial) and
//! [`LinearRegression`] (the normal equation or L-BFGS), with Spark's params, defaults and coefficients. The
//! fit runs on the barrier stage: every rank reads its partition into a shard, and each pass of the solver sums
//! the ranks' totals (`hearth-optim` holds the solvers); the model predicts with a scalar function whose
//! coefficients are literal arguments, so it transforms anywhere and from SQL.
//!
//! hearth's networks ([`MlpClassifier`](crate::train::MlpClassifier), [`LinearClassifier`](crate::train::LinearClassifier), …)
//! train by mini-batches with libtorch's optimizers, on GPUs too: the choice for deep models and data
//! too large for full passes. These are the choice for a linear model: exact, in a few passes.
//!
//! ```
//! # tokio::runtime::Builder::new_multi_thread().build().unwrap().block_on(async {
//! use hearth_training::prelude::*;
//!
//! let session = Session::builder().with_default_features().local(2);
//! let df = session
//!     .context()
//!     .sql("SELECT * FROM (VALUES (0.0, 5.0, 17.0), (1.0, 7.0, 19.0), (2.0, 11.0, 23.0), (3.0, 13.0, 29.0)) AS t(a, b, y)")
//!     .await
//!     .unwrap();
//! let df = VectorAssembler::new().input_cols(["a", "b"]).output_col("features").transform(&df).unwrap();
//! let model = LinearRegression::new().label_col("y").workers(2).fit(&df).await.unwrap();
//! // Least squares: y = 16 + 4a + 0b.
//! assert!((model.coefficients()[0] - 4.0).abs() < 1e-9 && model.coefficients()[1].abs() < 1e-9);
//! assert!((model.intercept() - 16.0).abs() < 1e-9);
//! # });
//! ```

mod linear_regression;
mod logistic_regression;
mod scores;
mod setters;
mod statistics;

pub use hearth_optim::glm::{BoundMatrix, Family, LinearSolver, LogisticBounds, Solved};
pub use linear_regression::{LinearRegression, LinearRegressionModel};
pub use logistic_regression::{LogisticRegression, LogisticRegressionModel};
pub(crate) use scores::score_columns;
pub use scores::{LINEAR_PREDICT, LOGISTIC_SCORES, LinearScoresUdf};
pub use statistics::CoefficientStatistics;
