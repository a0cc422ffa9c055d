//! The model artifact: a directory with `model.safetensors` (the weights, loadable by PyTorch under the names
//! an `nn.Sequential` of the same layers uses) and `model.json` (spec, options, history, metrics, versions).

use std::collections::{BTreeMap, HashMap};
use std::error::Error;
use std::fs;
use std::path::{Path, PathBuf};

use hearth_common::files::{WholeDirError, refuse_occupied, write_dir_whole};
use serde::{Deserialize, Serialize};
use tch::{Device, Tensor};

use crate::model::{
    LoadError, ModelSpec, NamedTensor, Network, SafetensorsError, SpecError, from_safetensors, host_copies, load_into,
    to_safetensors,
};
use crate::train::{EpochStats, TrainOptions, prediction_device};

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
    #[error("{}: {message}{}", path.display(), caused(cause))]
    File {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
        /// The lower-level error (the file system's, the decoder's), when there is one.
        #[source]
        cause: Option<Box<dyn Error + Send + Sync>>,
    },
    /// The spec cannot be built.
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// libtorch refused an operation.
    #[error("libtorch: {0}")]
    Torch(#[from] tch::TchError),
}

impl From<WholeDirError> for ArtifactError {
    fn from(error: WholeDirError) -> Self {
        Self::File {
            path: error.path,
            message: error.message,
            cause: error.cause.map(Into::into),
        }
    }
}

/// How a cause reads after its error's message: `": {cause}"`, or nothing.
fn caused(cause: &Option<Box<dyn Error + Send + Sync>>) -> String {
    cause.as_ref().map(|e| format!(": {e}")).unwrap_or_default()
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
/// use hearth_torch::artifact::ModelArtifact;
/// use hearth_torch::model::{ModelSpec, Network};
/// use hearth_torch::train::{TrainOptions, TrainSettings};
///
/// let spec = ModelSpec::Linear { inputs: 2, outputs: 3 };
/// let options = TrainOptions::new(spec.clone(), TrainSettings::default());
/// let network = Network::new(&spec, tch::Device::Cpu, 1).unwrap();
/// let artifact = ModelArtifact::from_network(options, &network, vec![]).unwrap();
/// let dir = std::env::temp_dir().join(format!("hearth-doc-artifact-{}", std::process::id()));
/// artifact.save(&dir).unwrap();
/// let loaded = ModelArtifact::load(&dir).unwrap();
/// assert_eq!(loaded.predict(&[0.5, -1.0], 1).unwrap(), artifact.predict(&[0.5, -1.0], 1).unwrap());
/// # std::fs::remove_dir_all(&dir).unwrap();
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

/// The safetensors metadata key that holds `model.json` when an artifact travels as bytes.
const DESCRIPTION_KEY: &str = "hearth.model";

/// What an artifact's errors name when it travels as bytes rather than files.
const BYTES: &str = "<model bytes>";

/// The description in `text`, read from `path` (a file, or [`BYTES`]).
fn read_description(text: &str, path: &Path) -> Result<Description, ArtifactError> {
    let description: Description =
        serde_json::from_str(text).map_err(|e| file_error_from(path, "unreadable model description", e))?;
    if description.versions.format != FORMAT_VERSION {
        return Err(file_error(
            path,
            format!(
                "layout version {}; this build reads version {FORMAT_VERSION}",
                description.versions.format
            ),
        ));
    }
    Ok(description)
}

/// `path` does not hold what it should: `message` says what is wrong.
fn file_error(path: &Path, message: impl Into<String>) -> ArtifactError {
    ArtifactError::File {
        path: path.to_path_buf(),
        message: message.into(),
        cause: None,
    }
}

/// `path` could not be written or read: `message` says what was being done, `cause` what failed.
fn file_error_from(
    path: &Path,
    message: impl Into<String>,
    cause: impl Into<Box<dyn Error + Send + Sync>>,
) -> ArtifactError {
    ArtifactError::File {
        path: path.to_path_buf(),
        message: message.into(),
        cause: Some(cause.into()),
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

    /// Writes `dir/model.safetensors` and `dir/model.json` whole: into a hidden sibling first, synced, then
    /// renamed to `dir` — a failed save leaves nothing. A `dir` that holds anything is refused (replace it
    /// with [`ModelArtifact::overwrite`]).
    pub fn save(&self, dir: impl AsRef<Path>) -> Result<(), ArtifactError> {
        refuse_occupied(dir.as_ref(), "replace it with overwrite(dir)")?;
        self.overwrite(dir)
    }

    /// Writes the artifact whole as [`ModelArtifact::save`] does, replacing what `dir` holds in the same
    /// rename; a failed write leaves it as it was.
    pub fn overwrite(&self, dir: impl AsRef<Path>) -> Result<(), ArtifactError> {
        write_dir_whole(dir.as_ref(), |staging| self.write_into(staging))
    }

    /// Writes the artifact's two files into the existing directory `dir` as they are, with no staging: for a
    /// writer that stages a larger directory holding them (see [`hearth_common::files`]).
    pub fn write_into(&self, dir: &Path) -> Result<(), ArtifactError> {
        let weights = dir.join(WEIGHTS_FILE);
        let bytes = self
            .weights(None)
            .map_err(|e| file_error_from(&weights, "cannot encode the tensors", e))?;
        fs::write(&weights, bytes).map_err(|e| file_error_from(&weights, "cannot write", e))?;
        let model = dir.join(MODEL_FILE);
        let json = serde_json::to_string_pretty(&self.description())
            .map_err(|e| file_error_from(&model, "cannot encode the description", e))?;
        fs::write(&model, json + "\n").map_err(|e| file_error_from(&model, "cannot write", e))
    }

    /// Reads an artifact written by [`ModelArtifact::save`].
    pub fn load(dir: impl AsRef<Path>) -> Result<Self, ArtifactError> {
        let dir = dir.as_ref();
        let model = dir.join(MODEL_FILE);
        let text = fs::read_to_string(&model).map_err(|e| file_error_from(&model, "cannot read", e))?;
        let description = read_description(&text, &model)?;
        let weights = dir.join(WEIGHTS_FILE);
        let bytes = fs::read(&weights).map_err(|e| file_error_from(&weights, "cannot read", e))?;
        let (tensors, _) = from_safetensors(&bytes).map_err(|e| file_error_from(&weights, "unreadable tensors", e))?;
        let artifact = Self::from_parts(description, tensors);
        // The tensors must be the spec's network's, each of its shape: said now, naming the file at fault.
        artifact.network(Device::Cpu).map_err(|e| match e {
            ArtifactError::Spec(e) => file_error_from(&model, "the spec cannot be built", e),
            ArtifactError::File { message, cause, .. } => ArtifactError::File {
                path: weights.clone(),
                message,
                cause,
            },
            torch => torch,
        })?;
        Ok(artifact)
    }

    /// The whole artifact as one safetensors buffer, `model.json` in its metadata: how a model travels in a
    /// query plan or a result row.
    ///
    /// ```
    /// use hearth_torch::artifact::ModelArtifact;
    /// use hearth_torch::model::{ModelSpec, Network};
    /// use hearth_torch::train::{TrainOptions, TrainSettings};
    ///
    /// let spec = ModelSpec::Linear { inputs: 2, outputs: 1 };
    /// let network = Network::new(&spec, tch::Device::Cpu, 3).unwrap();
    /// let artifact = ModelArtifact::from_network(TrainOptions::new(spec, TrainSettings::default()), &network, vec![]).unwrap();
    /// assert_eq!(ModelArtifact::from_bytes(&artifact.to_bytes().unwrap()).unwrap(), artifact);
    /// ```
    pub fn to_bytes(&self) -> Result<Vec<u8>, ArtifactError> {
        let path = Path::new(BYTES);
        let description = serde_json::to_string(&self.description())
            .map_err(|e| file_error_from(path, "cannot encode the description", e))?;
        self.weights(Some(description))
            .map_err(|e| file_error_from(path, "cannot encode the tensors", e))
    }

    /// Reads an artifact written by [`ModelArtifact::to_bytes`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, ArtifactError> {
        let path = Path::new(BYTES);
        let (tensors, metadata) =
            from_safetensors(bytes).map_err(|e| file_error_from(path, "unreadable tensors", e))?;
        let text = metadata
            .get(DESCRIPTION_KEY)
            .ok_or_else(|| file_error(path, format!("no {DESCRIPTION_KEY:?} metadata")))?;
        let description = read_description(text, path)?;
        Ok(Self::from_parts(description, tensors))
    }

    /// The training options (the spec among them) of an artifact in bytes, reading only its header.
    pub fn options_from_bytes(bytes: &[u8]) -> Result<TrainOptions, ArtifactError> {
        let path = Path::new(BYTES);
        let (_, header) = safetensors::SafeTensors::read_metadata(bytes)
            .map_err(|e| file_error_from(path, "unreadable safetensors header", e))?;
        let text = header
            .metadata()
            .as_ref()
            .and_then(|m| m.get(DESCRIPTION_KEY))
            .ok_or_else(|| file_error(path, format!("no {DESCRIPTION_KEY:?} metadata")))?;
        Ok(read_description(text, path)?.options)
    }

    fn description(&self) -> Description {
        Description {
            versions: self.versions.clone(),
            options: self.options.clone(),
            history: self.history.clone(),
            metrics: self.metrics.clone(),
        }
    }

    fn from_parts(description: Description, tensors: Vec<NamedTensor>) -> Self {
        Self {
            options: description.options,
            tensors,
            history: description.history,
            metrics: description.metrics,
            versions: description.versions,
        }
    }

    /// The tensors as safetensors bytes, with the description in the metadata when given.
    fn weights(&self, description: Option<String>) -> Result<Vec<u8>, SafetensorsError> {
        let mut metadata = HashMap::from([("format".to_string(), "pt".to_string())]);
        if let Some(description) = description {
            metadata.insert(DESCRIPTION_KEY.to_string(), description);
        }
        to_safetensors(&self.tensors, metadata)
    }

    /// The network with these weights, on `device`.
    pub fn network(&self, device: Device) -> Result<Network, ArtifactError> {
        let network = Network::new(self.spec(), device, 0)?;
        load_into(&network.named_tensors(), &self.tensors).map_err(|e| match e {
            LoadError::Torch(e) => ArtifactError::Torch(e),
            missing => file_error(Path::new(WEIGHTS_FILE), missing.to_string()),
        })?;
        Ok(network)
    }

    /// The model's outputs (logits) for `rows` rows of row-major features (computed where
    /// [`ModelArtifact::predictor`] puts the network).
    pub fn predict(&self, features: &[f32], rows: usize) -> Result<Vec<f32>, ArtifactError> {
        self.predictor()?.outputs(features, rows)
    }

    /// The network loaded once, ready to compute outputs batch after batch: on a GPU where the model was
    /// trained for one and this process has one ([`prediction_device`]), on the CPU otherwise.
    pub fn predictor(&self) -> Result<Predictor, ArtifactError> {
        Ok(Predictor {
            network: self.network(prediction_device(&self.options.settings.device))?,
            inputs: self.spec().input_features(),
            outputs: self.spec().outputs()?,
        })
    }
}

/// A trained network on its device, in evaluation mode: rows of features in, rows of outputs (logits) out.
///
/// ```
/// use hearth_torch::artifact::ModelArtifact;
/// use hearth_torch::model::{ModelSpec, Network};
/// use hearth_torch::train::{TrainOptions, TrainSettings};
///
/// let spec = ModelSpec::Linear { inputs: 2, outputs: 3 };
/// let network = Network::new(&spec, tch::Device::Cpu, 1).unwrap();
/// let predictor = ModelArtifact::from_network(TrainOptions::new(spec, TrainSettings::default()), &network, vec![])
///     .unwrap()
///     .predictor()
///     .unwrap();
/// assert_eq!(predictor.outputs(&[0.5, -1.0, 2.0, 0.0], 2).unwrap().len(), 2 * predictor.output_width());
/// ```
#[derive(Debug)]
pub struct Predictor {
    network: Network,
    inputs: usize,
    outputs: usize,
}

impl Predictor {
    /// Features each row must have.
    pub fn input_width(&self) -> usize {
        self.inputs
    }

    /// Outputs per row.
    pub fn output_width(&self) -> usize {
        self.outputs
    }

    /// The network.
    pub(crate) fn network(&self) -> &Network {
        &self.network
    }

    /// The outputs for `rows` rows of row-major `features`, row-major.
    pub fn outputs(&self, features: &[f32], rows: usize) -> Result<Vec<f32>, ArtifactError> {
        if features.len() != rows * self.inputs {
            return Err(file_error(
                Path::new(MODEL_FILE),
                format!(
                    "{} feature values do not make {rows} rows of {}",
                    features.len(),
                    self.inputs
                ),
            ));
        }
        if rows == 0 {
            return Ok(Vec::new());
        }
        let x = Tensor::f_from_slice(features)?
            .f_view([rows as i64, self.inputs as i64])?
            .f_to_device(self.network.device())?;
        let out = tch::no_grad(|| self.network.forward(&x, false))?.f_to_device(Device::Cpu)?;
        Ok(Vec::<f32>::try_from(&out.f_contiguous()?.f_view([-1])?)?)
    }
}
