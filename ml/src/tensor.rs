//! Moving dense `f32` matrices between hearth's row-major buffers and libtorch tensors.

use tch::{Kind, Tensor};

/// What can go wrong when a buffer and a tensor shape disagree.
#[derive(Debug, thiserror::Error)]
pub enum TensorError {
    /// The buffer does not hold `rows × cols` values.
    #[error("a {rows}×{cols} matrix needs {expected} values, the buffer holds {found}")]
    Shape {
        /// Rows asked for.
        rows: usize,
        /// Columns asked for.
        cols: usize,
        /// `rows * cols`.
        expected: usize,
        /// Values in the buffer.
        found: usize,
    },
    /// libtorch refused the operation.
    #[error("libtorch: {0}")]
    Torch(#[from] tch::TchError),
}

/// Copies a row-major `rows × cols` buffer into a new `[rows, cols]` float tensor on the CPU.
///
/// ```
/// let t = hearth_ml::tensor::matrix_to_tensor(&[1.0, 2.0], 1, 2).unwrap();
/// assert_eq!(t.size(), vec![1, 2]);
/// ```
pub fn matrix_to_tensor(values: &[f32], rows: usize, cols: usize) -> Result<Tensor, TensorError> {
    let expected = rows * cols;
    if values.len() != expected {
        return Err(TensorError::Shape {
            rows,
            cols,
            expected,
            found: values.len(),
        });
    }
    let shape = [rows as i64, cols as i64];
    Ok(Tensor::f_from_slice(values)?.f_view(shape)?)
}

/// Copies a tensor of any shape back into a row-major `f32` buffer (moving it to the CPU and converting its
/// element type when needed).
///
/// ```
/// let t = tch::Tensor::from_slice(&[1.5_f64, 2.5]);
/// assert_eq!(hearth_ml::tensor::tensor_to_matrix(&t).unwrap(), vec![1.5, 2.5]);
/// ```
pub fn tensor_to_matrix(tensor: &Tensor) -> Result<Vec<f32>, TensorError> {
    let flat = tensor
        .f_to_kind(Kind::Float)?
        .f_to_device(tch::Device::Cpu)?
        .f_contiguous()?
        .f_view([-1])?;
    Ok(Vec::<f32>::try_from(&flat)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matmul_runs_in_libtorch() {
        let a = matrix_to_tensor(&[1.0, 2.0, 3.0, 4.0], 2, 2).unwrap();
        let b = matrix_to_tensor(&[1.0, 0.0, 0.0, 1.0], 2, 2).unwrap();
        assert_eq!(tensor_to_matrix(&a.matmul(&b)).unwrap(), vec![1.0, 2.0, 3.0, 4.0]);
    }

    #[test]
    fn wrong_buffer_length_is_an_error() {
        let err = matrix_to_tensor(&[1.0, 2.0, 3.0], 2, 2).unwrap_err();
        assert_eq!(err.to_string(), "a 2×2 matrix needs 4 values, the buffer holds 3");
    }
}
