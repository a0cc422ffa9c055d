//! # hearth-ml
//!
//! hearth's libtorch side: everything that turns Arrow data into a trained model. It holds no DataFusion; the
//! engine calls into it.
//!
//! This release carries the tensor bridge that the trainer builds on: dense feature matrices move between
//! hearth's row-major `f32` vectors and libtorch tensors without per-row loops.
//!
//! ```
//! use hearth_ml::tensor::{matrix_to_tensor, tensor_to_matrix};
//!
//! let rows = vec![1.0_f32, 2.0, 3.0, 4.0, 5.0, 6.0];
//! let t = matrix_to_tensor(&rows, 3, 2).unwrap();
//! assert_eq!(t.size(), vec![3, 2]);
//! assert_eq!(tensor_to_matrix(&(t * 2.0)).unwrap(), vec![2.0, 4.0, 6.0, 8.0, 10.0, 12.0]);
//! ```

pub mod artifact;
pub mod collective;
pub mod data;
pub mod evaluation;
pub mod model;
pub mod random;
pub mod tensor;
pub mod train;

/// The libtorch release hearth is built against (`tch` 0.26).
pub const LIBTORCH_VERSION: &str = "2.13.0";
