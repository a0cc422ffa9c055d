//! Spark's `MultilayerPerceptronClassifier`, fitted as Spark fits it — L-BFGS or gradient descent over the whole
//! data on the barrier stage ([`full_batch`](crate::full_batch)), Spark's initial weights and layout — and its
//! model, which predicts with a scalar function whose layers and weights are literal arguments.
//!
//! hearth's [`MlpClassifier`](crate::train::MlpClassifier) trains a network by mini-batches with libtorch's
//! optimizers (ReLU, dropout, GPUs): the choice for deep learning. This is the one that gives Spark's weights.
//!
//! ```
//! # tokio::runtime::Builder::new_multi_thread().build().unwrap().block_on(async {
//! use hearth_training::prelude::*;
//!
//! let session = Session::builder().with_default_features().local(1);
//! let df = session
//!     .context()
//!     .sql("SELECT * FROM (VALUES (0.0, 0.0, 0.0), (0.0, 1.0, 1.0), (1.0, 0.0, 1.0), (1.0, 1.0, 0.0)) AS t(a, b, label)")
//!     .await
//!     .unwrap();
//! let df = VectorAssembler::new().input_cols(["a", "b"]).output_col("features").transform(&df).unwrap();
//! // PySpark's doctest: XOR learned in 37 L-BFGS iterations.
//! let mlp = MultilayerPerceptronClassifier::new().layers([2, 2, 2]).block_size(1).seed(123);
//! let model = mlp.fit(&df).await.unwrap();
//! let raw = model.predict_raw(&[1.0, 0.0]);
//! assert!((raw[1] - 16.34397052898097).abs() < 1e-6);
//! # });
//! ```

mod classifier;
mod scores;

pub use classifier::{MultilayerPerceptronClassificationModel, MultilayerPerceptronClassifier};
pub use hearth_optim::perceptron::MlpSolver;
pub use scores::{PERCEPTRON_SCORES, PerceptronScoresUdf};
