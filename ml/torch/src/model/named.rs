//! Tensors by name on the host: how a network's parameters (and an optimizer's state) leave libtorch — for
//! checkpoints, broadcasts and artifacts — and how they come back.

use std::collections::HashMap;

use safetensors::tensor::{Dtype, SafeTensorError, SafeTensors, TensorView};
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
    #[error("has no tensor {0:?}, which the spec's network needs")]
    Missing(String),
    /// A value's shape is not its tensor's.
    #[error("tensor {name:?} has shape {found:?}; the spec's network needs {expected:?}")]
    Shape {
        /// The tensor.
        name: String,
        /// The value's shape.
        found: Vec<i64>,
        /// The tensor's.
        expected: Vec<i64>,
    },
    /// A value has no tensor of its name.
    #[error("holds tensor {0:?}, which the spec's network does not have")]
    Extra(String),
    /// libtorch refused the copy (a shape that does not fit, …).
    #[error("libtorch: {0}")]
    Torch(#[from] TchError),
}

/// Why tensors cannot be written as safetensors, or safetensors bytes read as tensors.
#[derive(Debug, thiserror::Error)]
pub enum SafetensorsError {
    /// safetensors refused to write the tensors (a shape that does not hold its values, …).
    #[error(transparent)]
    Write(SafeTensorError),
    /// The bytes are not safetensors, or are cut short or padded: `message` says which, in words.
    #[error("{message}")]
    Unreadable {
        /// What is wrong with the bytes.
        message: String,
        /// safetensors' own error.
        source: SafeTensorError,
    },
    /// A tensor holds values of another type than `F32`.
    #[error("tensor {name} is {dtype:?}, expected F32")]
    NotF32 {
        /// The tensor.
        name: String,
        /// Its type.
        dtype: Dtype,
    },
}

/// Host copies of tensors (as `f32`), keeping their names and shapes.
///
/// ```
/// let named = vec![("w".to_string(), tch::Tensor::from_slice(&[1.0_f32, 2.0]))];
/// let host = hearth_torch::model::host_copies(&named).unwrap();
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
/// every tensor in `named` must have a value of its shape, and every value a tensor.
pub fn load_into(named: &[(String, Tensor)], values: &[NamedTensor]) -> Result<(), LoadError> {
    tch::no_grad(|| {
        for (name, tensor) in named {
            let source = values
                .iter()
                .find(|v| &v.name == name)
                .ok_or_else(|| LoadError::Missing(name.clone()))?;
            if source.shape != tensor.size() {
                return Err(LoadError::Shape {
                    name: name.clone(),
                    found: source.shape.clone(),
                    expected: tensor.size(),
                });
            }
            let mut target = tensor.shallow_clone();
            let value = Tensor::f_from_slice(&source.values)?.f_view(source.shape.as_slice())?;
            target.f_copy_(&value.f_to_device(tensor.device())?.f_to_kind(tensor.kind())?)?;
        }
        match values.iter().find(|v| !named.iter().any(|(name, _)| name == &v.name)) {
            Some(extra) => Err(LoadError::Extra(extra.name.clone())),
            None => Ok(()),
        }
    })
}

/// The tensors as one safetensors buffer (all `F32`) with `metadata` in its header.
///
/// ```
/// use std::collections::HashMap;
/// use hearth_torch::model::{NamedTensor, from_safetensors, to_safetensors};
///
/// let tensors = vec![NamedTensor { name: "w".into(), shape: vec![2], values: vec![1.0, 2.0] }];
/// let bytes = to_safetensors(&tensors, HashMap::from([("k".to_string(), "v".to_string())])).unwrap();
/// let (back, metadata) = from_safetensors(&bytes).unwrap();
/// assert_eq!((back, metadata["k"].as_str()), (tensors, "v"));
/// ```
pub fn to_safetensors(tensors: &[NamedTensor], metadata: HashMap<String, String>) -> Result<Vec<u8>, SafetensorsError> {
    let views = tensors
        .iter()
        .map(|t| {
            let shape = t.shape.iter().map(|&d| d as usize).collect();
            TensorView::new(Dtype::F32, shape, bytemuck::cast_slice(&t.values)).map(|view| (t.name.clone(), view))
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(SafetensorsError::Write)?;
    safetensors::tensor::serialize(views, &Some(metadata)).map_err(SafetensorsError::Write)
}

/// The `F32` tensors of a safetensors buffer, sorted by name, and its metadata.
pub fn from_safetensors(bytes: &[u8]) -> Result<(Vec<NamedTensor>, HashMap<String, String>), SafetensorsError> {
    let (_, header) = SafeTensors::read_metadata(bytes).map_err(|e| unreadable(e, bytes))?;
    let metadata = header.metadata().clone().unwrap_or_default();
    let file = SafeTensors::deserialize(bytes).map_err(|e| unreadable(e, bytes))?;
    let mut tensors = Vec::new();
    for (name, view) in file.tensors() {
        if view.dtype() != Dtype::F32 {
            return Err(SafetensorsError::NotF32 {
                name,
                dtype: view.dtype(),
            });
        }
        let values: Vec<f32> = view
            .data()
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        tensors.push(NamedTensor {
            name,
            shape: view.shape().iter().map(|&d| d as i64).collect(),
            values,
        });
    }
    tensors.sort_by(|a, b| a.name.cmp(&b.name));
    Ok((tensors, metadata))
}

/// Why safetensors bytes cannot be read, in words: above all, whether they were cut short.
fn unreadable(source: SafeTensorError, bytes: &[u8]) -> SafetensorsError {
    SafetensorsError::Unreadable {
        message: describe_unreadable(&source, bytes),
        source,
    }
}

/// What is wrong with safetensors bytes that cannot be read, in words.
fn describe_unreadable(error: &SafeTensorError, bytes: &[u8]) -> String {
    let declared = bytes.get(..8).and_then(|n| n.try_into().ok()).map(u64::from_le_bytes);
    match error {
        SafeTensorError::HeaderTooSmall => format!(
            "truncated: {} bytes, short of the 8 that give the header's length",
            bytes.len()
        ),
        SafeTensorError::InvalidHeaderLength => format!(
            "truncated or not safetensors: the header's length says {} bytes, {} follow it",
            declared.unwrap_or(0),
            bytes.len().saturating_sub(8)
        ),
        SafeTensorError::MetadataIncompleteBuffer => {
            let header = declared.map_or(0, |n| n as usize).saturating_add(8);
            format!(
                "truncated or padded: its tensors need {} bytes after the header, the file holds {}",
                tensor_bytes_declared(bytes.get(8..header).unwrap_or_default())
                    .map_or("other".to_string(), |n| n.to_string()),
                bytes.len().saturating_sub(header)
            )
        }
        SafeTensorError::InvalidHeader
        | SafeTensorError::InvalidHeaderStart
        | SafeTensorError::InvalidHeaderDeserialization => {
            "not safetensors: its header is not the JSON safetensors writes".to_string()
        }
        SafeTensorError::HeaderTooLarge => {
            "not safetensors: its header's length is beyond any safetensors header".to_string()
        }
        SafeTensorError::InvalidOffset(name) => format!("tensor {name:?} lies outside the file's data"),
        SafeTensorError::TensorInvalidInfo | SafeTensorError::ValidationOverflow => {
            "a tensor's shape, type and place in the file disagree".to_string()
        }
        other => format!("unreadable safetensors: {other:?}"),
    }
}

/// The bytes of tensor data a safetensors JSON header places its tensors over: the end of the last one.
fn tensor_bytes_declared(header: &[u8]) -> Option<u64> {
    let header: serde_json::Map<String, serde_json::Value> = serde_json::from_slice(header).ok()?;
    header
        .iter()
        .filter(|(name, _)| name.as_str() != "__metadata__")
        .filter_map(|(_, tensor)| tensor.get("data_offsets")?.get(1)?.as_u64())
        .max()
}
