//! The networks a [`Network`](super::Network) estimator trains: what it builds once it knows the feature
//! width and the number of outputs.

use std::fmt;

use hearth_exec::error::{HearthError, Result};
use hearth_torch::model::{Activation, Layer, ModelSpec};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// The network a classifier trains, given the feature width and the number of classes. Its parameters are
/// saved with the classifier (flat, in camelCase).
pub trait Architecture:
    Clone + Default + fmt::Debug + PartialEq + Serialize + DeserializeOwned + Send + Sync + 'static
{
    /// The classifier's class name, as Spark names its classes.
    const CLASSIFIER: &'static str;

    /// The regressor's class name.
    const REGRESSOR: &'static str;

    /// The spec for `inputs` features and `outputs` outputs (the classes, or 1); an error names the stage
    /// `uid` (the estimator's) and its parameter that does not fit.
    fn spec(&self, uid: &str, inputs: usize, outputs: usize) -> Result<ModelSpec>;
}

/// A multi-layer perceptron: dense hidden layers with an activation and dropout (default: one hidden layer
/// of 64 ReLU units, no dropout).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Mlp {
    pub(super) hidden_layers: Vec<usize>,
    pub(super) activation: Activation,
    pub(super) dropout: f64,
}

impl Default for Mlp {
    fn default() -> Self {
        Self {
            hidden_layers: vec![64],
            activation: Activation::Relu,
            dropout: 0.0,
        }
    }
}

impl Architecture for Mlp {
    const CLASSIFIER: &'static str = "MlpClassifier";
    const REGRESSOR: &'static str = "MlpRegressor";

    fn spec(&self, _uid: &str, inputs: usize, outputs: usize) -> Result<ModelSpec> {
        Ok(ModelSpec::Mlp {
            inputs,
            hidden: self.hidden_layers.clone(),
            outputs,
            activation: self.activation,
            dropout: self.dropout,
        })
    }
}

/// Softmax regression: one dense layer.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Linear {}

impl Architecture for Linear {
    const CLASSIFIER: &'static str = "LinearClassifier";
    const REGRESSOR: &'static str = "LinearRegressor";

    fn spec(&self, _uid: &str, inputs: usize, outputs: usize) -> Result<ModelSpec> {
        Ok(ModelSpec::Linear { inputs, outputs })
    }
}

/// Layers in order, over features reshaped to `input_shape` (e.g. `[1, 8, 8]` for 64 pixels; empty: the flat
/// vector); the last layer must output one logit per class.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Sequential {
    pub(super) input_shape: Vec<usize>,
    pub(super) layers: Vec<Layer>,
}

impl Architecture for Sequential {
    const CLASSIFIER: &'static str = "SequentialClassifier";
    const REGRESSOR: &'static str = "SequentialRegressor";

    fn spec(&self, uid: &str, inputs: usize, outputs: usize) -> Result<ModelSpec> {
        let input_shape = if self.input_shape.is_empty() {
            vec![inputs]
        } else {
            self.input_shape.clone()
        };
        if input_shape.iter().product::<usize>() != inputs {
            return Err(HearthError::invalid_param(
                uid,
                "layers",
                format!(
                    "input shape {input_shape:?} holds {} values, but the feature vectors have {inputs}",
                    input_shape.iter().product::<usize>()
                ),
            ));
        }
        let spec = ModelSpec::Sequential {
            input_shape,
            layers: self.layers.clone(),
        };
        let last = spec
            .outputs()
            .map_err(|e| HearthError::invalid_param(uid, "layers", "cannot be built").caused_by(e))?;
        if last != outputs {
            return Err(HearthError::invalid_param(
                uid,
                "layers",
                format!(
                    "the last layer has {last} outputs, but {outputs} are needed (one per class, or one for a \
                     regressor)"
                ),
            ));
        }
        Ok(spec)
    }
}
