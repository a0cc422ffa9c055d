//! The model artifact: a directory with `model.safetensors` (the weights, loadable by PyTorch under the names
//! an `nn.Sequential` of the same layers uses) and `model.json` (spec, options, history, metrics, versions).

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::path::{Path, PathBuf};

use safetensors::tensor::{Dtype, SafeTensors, TensorView};
use serde::{Deserialize, Serialize};
use tch::{Device, Tensor};

use crate::model::{LoadError, ModelSpec, NamedTensor, Network, SpecError, host_copies, load_into};
use crate::train::{EpochStats, TrainOptions};

/// The weights file in an artifact directory.
pub const WEIGHTS_FILE: &str = "model.safetensors";
/// The description file in an artifact directory.
pub const MODEL_FILE: &str = "model.json";
/// The version of `model.json`'s layout.
pub const FORMAT_VERSION: u32 = 1;

/// Why an artifact cannot be written, read or used.
#[derive(Debug, thiserror::Error)]
pub enum ArtifactError {
    /// A file could not be read or written, or does not hold what it should.
    #[error("{}: {message}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// The spec cannot be built.
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// libtorch refused an operation.
    #[error("libtorch: {0}")]
    Torch(#[from] tch::TchError),
}

/// Library versions recorded with a model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Versions {
    /// hearth.
    pub hearth: String,
    /// libtorch.
    pub libtorch: String,
    /// The `model.json` layout.
    pub format: u32,
}

impl Default for Versions {
    fn default() -> Self {
        Self {
            hearth: env!("CARGO_PKG_VERSION").to_string(),
            libtorch: crate::LIBTORCH_VERSION.to_string(),
            format: FORMAT_VERSION,
        }
    }
}

/// What `model.json` holds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Description {
    versions: Versions,
    options: TrainOptions,
    history: Vec<EpochStats>,
    metrics: BTreeMap<String, f64>,
}

/// A trained model: its options (spec included), weights, training history and metrics.
///
/// ```
/// use hearth_ml::artifact::ModelArtifact;
/// use hearth_ml::model::{ModelSpec, Network};
/// use hearth_ml::train::{OptimizerSpec, TrainOptions};
///
/// let spec = ModelSpec::Linear { inputs: 2, outputs: 3 };
/// let options = TrainOptions::new(spec.clone(), OptimizerSpec::sgd(0.1));
/// let network = Network::new(&spec, tch::Device::Cpu, 1).unwrap();
/// let artifact = ModelArtifact::from_network(options, &network, vec![]).unwrap();
/// let dir = std::env::temp_dir().join(format!("hearth-doc-artifact-{}", std::process::id()));
/// artifact.save(&dir).unwrap();
/// let loaded = ModelArtifact::load(&dir).unwrap();
/// assert_eq!(loaded.predict(&[0.5, -1.0], 1).unwrap(), artifact.predict(&[0.5, -1.0], 1).unwrap());
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct ModelArtifact {
    /// How the model was trained (its spec is `options.model`).
    pub options: TrainOptions,
    /// The network's tensors.
    pub tensors: Vec<NamedTensor>,
    /// Per-epoch training metrics.
    pub history: Vec<EpochStats>,
    /// Evaluation metrics by name.
    pub metrics: BTreeMap<String, f64>,
    /// Versions it was written with.
    pub versions: Versions,
}

fn file_error(path: &Path, message: impl ToString) -> ArtifactError {
    ArtifactError::File {
        path: path.to_path_buf(),
        message: message.to_string(),
    }
}

impl ModelArtifact {
    /// An artifact from trained tensors.
    pub fn new(options: TrainOptions, tensors: Vec<NamedTensor>, history: Vec<EpochStats>) -> Self {
        Self {
            options,
            tensors,
            history,
            metrics: BTreeMap::new(),
            versions: Versions::default(),
        }
    }

    /// An artifact holding a network's current tensors.
    pub fn from_network(
        options: TrainOptions,
        network: &Network,
        history: Vec<EpochStats>,
    ) -> Result<Self, ArtifactError> {
        Ok(Self::new(options, host_copies(&network.named_tensors())?, history))
    }

    /// The model's spec.
    pub fn spec(&self) -> &ModelSpec {
        &self.options.model
    }

    /// Writes `dir/model.safetensors` and `dir/model.json`, creating `dir`.
    pub fn save(&self, dir: impl AsRef<Path>) -> Result<(), ArtifactError> {
        let dir = dir.as_ref();
        fs::create_dir_all(dir).map_err(|e| file_error(dir, e))?;
        let weights = dir.join(WEIGHTS_FILE);
        let views = self
            .tensors
            .iter()
            .map(|t| {
                let shape = t.shape.iter().map(|&d| d as usize).collect();
                TensorView::new(Dtype::F32, shape, bytemuck::cast_slice(&t.values)).map(|view| (t.name.clone(), view))
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| file_error(&weights, format!("{e:?}")))?;
        let metadata: Option<HashMap<String, String>> = Some(HashMap::from([("format".to_string(), "pt".to_string())]));
        safetensors::tensor::serialize_to_file(views, &metadata, &weights)
            .map_err(|e| file_error(&weights, format!("{e:?}")))?;
        let description = Description {
            versions: self.versions.clone(),
            options: self.options.clone(),
            history: self.history.clone(),
            metrics: self.metrics.clone(),
        };
        let model = dir.join(MODEL_FILE);
        let json = serde_json::to_string_pretty(&description).map_err(|e| file_error(&model, e))?;
        fs::write(&model, json + "\n").map_err(|e| file_error(&model, e))
    }

    /// Reads an artifact written by [`ModelArtifact::save`].
    pub fn load(dir: impl AsRef<Path>) -> Result<Self, ArtifactError> {
        let dir = dir.as_ref();
        let model = dir.join(MODEL_FILE);
        let text = fs::read_to_string(&model).map_err(|e| file_error(&model, e))?;
        let description: Description = serde_json::from_str(&text).map_err(|e| file_error(&model, e))?;
        if description.versions.format != FORMAT_VERSION {
            return Err(file_error(
                &model,
                format!(
                    "layout version {}; this build reads version {FORMAT_VERSION}",
                    description.versions.format
                ),
            ));
        }
        let weights = dir.join(WEIGHTS_FILE);
        let bytes = fs::read(&weights).map_err(|e| file_error(&weights, e))?;
        let file = SafeTensors::deserialize(&bytes).map_err(|e| file_error(&weights, format!("{e:?}")))?;
        let mut tensors = Vec::new();
        for (name, view) in file.tensors() {
            if view.dtype() != Dtype::F32 {
                return Err(file_error(
                    &weights,
                    format!("tensor {name} is {:?}, expected F32", view.dtype()),
                ));
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
        Ok(Self {
            options: description.options,
            tensors,
            history: description.history,
            metrics: description.metrics,
            versions: description.versions,
        })
    }

    /// The network with these weights, on `device`.
    pub fn network(&self, device: Device) -> Result<Network, ArtifactError> {
        let network = Network::new(self.spec(), device, 0)?;
        load_into(&network.named_tensors(), &self.tensors).map_err(|e| match e {
            LoadError::Torch(e) => ArtifactError::Torch(e),
            missing => file_error(Path::new(WEIGHTS_FILE), missing),
        })?;
        Ok(network)
    }

    /// The model's outputs (logits) for `rows` rows of row-major features, computed on the CPU.
    pub fn predict(&self, features: &[f32], rows: usize) -> Result<Vec<f32>, ArtifactError> {
        let network = self.network(Device::Cpu)?;
        let inputs = self.spec().input_features();
        if features.len() != rows * inputs {
            return Err(file_error(
                Path::new(MODEL_FILE),
                format!("{} feature values do not make {rows} rows of {inputs}", features.len()),
            ));
        }
        let x = Tensor::f_from_slice(features)?.f_view([rows as i64, inputs as i64])?;
        let out = tch::no_grad(|| network.forward(&x, false))?;
        Ok(Vec::<f32>::try_from(&out.f_contiguous()?.f_view([-1])?)?)
    }
}
