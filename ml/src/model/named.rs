//! Tensors by name on the host: how a network's parameters (and an optimizer's state) leave libtorch — for
//! checkpoints, broadcasts and artifacts — and how they come back.

use serde::{Deserialize, Serialize};
use tch::{Device, Kind, TchError, Tensor};

/// A tensor by name, on the host.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NamedTensor {
    /// PyTorch-style name, e.g. `"0.weight"`.
    pub name: String,
    /// Dimensions.
    pub shape: Vec<i64>,
    /// Values, row-major.
    pub values: Vec<f32>,
}

/// Why host values cannot be loaded into tensors.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// A tensor has no value of its name.
    #[error("no tensor named {0:?}")]
    Missing(String),
    /// libtorch refused the copy (a shape that does not fit, …).
    #[error("libtorch: {0}")]
    Torch(#[from] TchError),
}

/// Host copies of tensors (as `f32`), keeping their names and shapes.
///
/// ```
/// let named = vec![("w".to_string(), tch::Tensor::from_slice(&[1.0_f32, 2.0]))];
/// let host = hearth_ml::model::host_copies(&named).unwrap();
/// assert_eq!((host[0].shape.clone(), host[0].values.clone()), (vec![2], vec![1.0, 2.0]));
/// ```
pub fn host_copies(named: &[(String, Tensor)]) -> Result<Vec<NamedTensor>, TchError> {
    named
        .iter()
        .map(|(name, t)| {
            let flat = t
                .f_to_device(Device::Cpu)?
                .f_to_kind(Kind::Float)?
                .f_contiguous()?
                .f_view([-1])?;
            Ok(NamedTensor {
                name: name.clone(),
                shape: t.size(),
                values: Vec::<f32>::try_from(&flat)?,
            })
        })
        .collect()
}

/// Copies each of `values` into the tensor of the same name in `named` (on that tensor's device and kind);
/// every tensor in `named` must have a value.
pub fn load_into(named: &[(String, Tensor)], values: &[NamedTensor]) -> Result<(), LoadError> {
    tch::no_grad(|| {
        for (name, tensor) in named {
            let source = values
                .iter()
                .find(|v| &v.name == name)
                .ok_or_else(|| LoadError::Missing(name.clone()))?;
            let mut target = tensor.shallow_clone();
            let value = Tensor::f_from_slice(&source.values)?.f_view(source.shape.as_slice())?;
            target.f_copy_(&value.f_to_device(tensor.device())?.f_to_kind(tensor.kind())?)?;
        }
        Ok(())
    })
}
