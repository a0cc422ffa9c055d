//! Models as data: a [`ModelSpec`] is serialisable, travels inside a plan, and becomes a libtorch network on
//! each rank.

use serde::{Deserialize, Serialize};

/// An activation function.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Activation {
    /// max(0, x).
    #[default]
    Relu,
    /// tanh(x).
    Tanh,
    /// 1 / (1 + e^−x).
    Sigmoid,
}

/// One layer of a [`ModelSpec::Sequential`] network, in the vocabulary of Keras models.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "layer", rename_all = "snake_case")]
pub enum Layer {
    /// Fully connected, `units` outputs.
    Dense {
        /// Output features.
        units: usize,
    },
    /// 2-D convolution over `[channels, height, width]`.
    Conv2d {
        /// Output channels.
        filters: usize,
        /// Square kernel size.
        kernel: usize,
        /// Stride (default 1).
        #[serde(default = "one")]
        stride: usize,
        /// Zero padding on each side (default 0).
        #[serde(default)]
        padding: usize,
    },
    /// Batch normalisation over channels (after a convolution) or features.
    BatchNorm,
    /// 2-D max pooling.
    MaxPool2d {
        /// Square window.
        kernel: usize,
        /// Stride (default: the window).
        #[serde(default)]
        stride: Option<usize>,
    },
    /// `[c, h, w]` → `[c·h·w]`.
    Flatten,
    /// Dropout with this rate while training.
    Dropout {
        /// Probability of zeroing an input.
        rate: f64,
    },
    /// ReLU.
    Relu,
    /// tanh.
    Tanh,
    /// Sigmoid.
    Sigmoid,
    /// Softmax over the last dimension (the losses take logits, so this is rarely needed).
    Softmax,
}

fn one() -> usize {
    1
}

/// A network: what it is and the shape it takes.
///
/// ```
/// use hearth_torch::model::{Activation, ModelSpec};
/// // The dist-keras Higgs MLP: 30 features, 600-600 hidden, dropout 0.2, 2 classes.
/// let spec = ModelSpec::Mlp { inputs: 30, hidden: vec![600, 600], outputs: 2, activation: Activation::Relu, dropout: 0.2 };
/// assert_eq!(spec.parameter_count().unwrap(), 30 * 600 + 600 + 600 * 600 + 600 + 600 * 2 + 2);
/// let json = serde_json::to_string(&spec).unwrap();
/// assert_eq!(serde_json::from_str::<ModelSpec>(&json).unwrap(), spec);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "model", rename_all = "snake_case")]
pub enum ModelSpec {
    /// Multi-layer perceptron: dense layers with an activation and dropout between them.
    Mlp {
        /// Input features.
        inputs: usize,
        /// Hidden layer widths.
        hidden: Vec<usize>,
        /// Outputs: classes, 1 for a binary logit, or regression targets.
        outputs: usize,
        /// Activation after each hidden layer.
        #[serde(default)]
        activation: Activation,
        /// Dropout rate after each hidden activation.
        #[serde(default)]
        dropout: f64,
    },
    /// Logistic (1 output) or softmax (≥ 2 outputs) regression: one dense layer.
    Linear {
        /// Input features.
        inputs: usize,
        /// Outputs.
        outputs: usize,
    },
    /// Layers applied in order to inputs reshaped to `input_shape` (e.g. `[1, 28, 28]` for 784 pixels).
    Sequential {
        /// The shape of one example; the feature vector is reshaped to it.
        input_shape: Vec<usize>,
        /// The layers.
        layers: Vec<Layer>,
    },
}

/// Why a spec cannot be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("model spec, layer {layer}: {message}")]
pub struct SpecError {
    /// Index of the offending layer (0 for whole-model problems).
    pub layer: usize,
    /// What is wrong.
    pub message: String,
}

impl ModelSpec {
    /// Features each example must have.
    pub fn input_features(&self) -> usize {
        match self {
            ModelSpec::Mlp { inputs, .. } | ModelSpec::Linear { inputs, .. } => *inputs,
            ModelSpec::Sequential { input_shape, .. } => input_shape.iter().product(),
        }
    }

    /// The layers this spec stands for, as a sequential list (an MLP and a linear model expanded).
    pub fn layers(&self) -> (Vec<usize>, Vec<Layer>) {
        match self {
            ModelSpec::Mlp {
                inputs,
                hidden,
                outputs,
                activation,
                dropout,
            } => {
                let mut layers = Vec::new();
                for &units in hidden {
                    layers.push(Layer::Dense { units });
                    layers.push(match activation {
                        Activation::Relu => Layer::Relu,
                        Activation::Tanh => Layer::Tanh,
                        Activation::Sigmoid => Layer::Sigmoid,
                    });
                    if *dropout > 0.0 {
                        layers.push(Layer::Dropout { rate: *dropout });
                    }
                }
                layers.push(Layer::Dense { units: *outputs });
                (vec![*inputs], layers)
            }
            ModelSpec::Linear { inputs, outputs } => (vec![*inputs], vec![Layer::Dense { units: *outputs }]),
            ModelSpec::Sequential { input_shape, layers } => (input_shape.clone(), layers.clone()),
        }
    }

    /// The shape after each layer, checking that every layer fits the shape it receives.
    pub fn shapes(&self) -> Result<Vec<Vec<usize>>, SpecError> {
        let (input, layers) = self.layers();
        if input.is_empty() || input.contains(&0) {
            return Err(SpecError {
                layer: 0,
                message: format!("input shape {input:?} must be non-empty and positive"),
            });
        }
        let mut shape = input;
        let mut shapes = Vec::with_capacity(layers.len());
        for (i, layer) in layers.iter().enumerate() {
            let parameters = layer.parameters(&shape);
            shape = layer.output_shape(i, shape)?;
            let values = shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d));
            if parameters.is_none_or(|n| n > MAX_VALUES) || values.is_none_or(|n| n > MAX_VALUES) {
                return Err(SpecError {
                    layer: i,
                    message: format!(
                        "too large: its parameters or its output {shape:?} pass {MAX_VALUES} values (16 GiB of f32)"
                    ),
                });
            }
            shapes.push(shape.clone());
        }
        if shapes.last().is_none_or(|s| s.len() != 1) {
            return Err(SpecError {
                layer: layers.len().saturating_sub(1),
                message: format!("the network must end in a flat output, got {:?}", shapes.last()),
            });
        }
        Ok(shapes)
    }

    /// Outputs per example (classes, a binary logit, or regression targets).
    pub fn outputs(&self) -> Result<usize, SpecError> {
        Ok(self.shapes()?.last().map_or(0, |s| s[0]))
    }

    /// Trainable parameters (weights and biases; batch norm's scale and shift).
    pub fn parameter_count(&self) -> Result<usize, SpecError> {
        let (input, layers) = self.layers();
        let shapes = self.shapes()?;
        let inputs = std::iter::once(&input).chain(&shapes);
        // Each layer's count is at most MAX_VALUES (shapes checked it), so the sum fits.
        Ok(layers
            .iter()
            .zip(inputs)
            .filter_map(|(layer, shape)| layer.parameters(shape))
            .sum())
    }
}

/// The most values one layer's parameters or output may hold (2³², 16 GiB of f32): a spec past it is refused
/// before libtorch is asked for the memory.
const MAX_VALUES: usize = 1 << 32;

impl Layer {
    /// Trainable parameters of this layer for an input of `shape` (weights and biases; batch norm's scale and
    /// shift), or `None` when the count overflows.
    fn parameters(&self, shape: &[usize]) -> Option<usize> {
        let channels = *shape.first()?;
        match self {
            Layer::Dense { units } => channels.checked_mul(*units)?.checked_add(*units),
            Layer::Conv2d { filters, kernel, .. } => channels
                .checked_mul(kernel.checked_mul(*kernel)?)?
                .checked_mul(*filters)?
                .checked_add(*filters),
            Layer::BatchNorm => channels.checked_mul(2),
            _ => Some(0),
        }
    }

    /// The shape this layer, the `layer`-th of its spec, gives for an input of `shape`, or why the input does not
    /// fit it.
    fn output_shape(&self, layer: usize, shape: Vec<usize>) -> Result<Vec<usize>, SpecError> {
        let misfit = |message: String| SpecError { layer, message };
        Ok(match self {
            Layer::Dense { units } => {
                if shape.len() != 1 {
                    return Err(misfit(format!(
                        "dense needs a flat input, got shape {shape:?} (add a flatten layer)"
                    )));
                }
                if *units == 0 {
                    return Err(misfit("dense needs at least one unit".to_string()));
                }
                vec![*units]
            }
            Layer::Conv2d {
                filters,
                kernel,
                stride,
                padding,
            } => {
                let [_, h, w] = shape[..] else {
                    return Err(misfit(format!(
                        "conv2d needs a [channels, height, width] input, got {shape:?}"
                    )));
                };
                if *kernel == 0
                    || *stride == 0
                    || *filters == 0
                    || h + 2 * padding < *kernel
                    || w + 2 * padding < *kernel
                {
                    return Err(misfit(format!(
                        "conv2d with {filters} filters, kernel {kernel}, stride {stride}, padding {padding} does not fit {shape:?}"
                    )));
                }
                vec![
                    *filters,
                    (h + 2 * padding - kernel) / stride + 1,
                    (w + 2 * padding - kernel) / stride + 1,
                ]
            }
            Layer::MaxPool2d { kernel, stride } => {
                let stride = stride.unwrap_or(*kernel);
                let [c, h, w] = shape[..] else {
                    return Err(misfit(format!(
                        "max_pool2d needs a [channels, height, width] input, got {shape:?}"
                    )));
                };
                if *kernel == 0 || stride == 0 || h < *kernel || w < *kernel {
                    return Err(misfit(format!(
                        "max_pool2d window {kernel} (stride {stride}) does not fit {shape:?}"
                    )));
                }
                vec![c, (h - kernel) / stride + 1, (w - kernel) / stride + 1]
            }
            Layer::BatchNorm => {
                if shape.len() != 1 && shape.len() != 3 {
                    return Err(misfit(format!(
                        "batch_norm needs a flat or [c, h, w] input, got {shape:?}"
                    )));
                }
                shape
            }
            Layer::Flatten => vec![shape.iter().product()],
            Layer::Dropout { rate } => {
                if !(0.0..1.0).contains(rate) {
                    return Err(misfit(format!("dropout rate must be in [0, 1), got {rate}")));
                }
                shape
            }
            Layer::Relu | Layer::Tanh | Layer::Sigmoid | Layer::Softmax => shape,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_cnn_infers_its_shapes() {
        let spec = ModelSpec::Sequential {
            input_shape: vec![1, 8, 8],
            layers: vec![
                Layer::Conv2d {
                    filters: 8,
                    kernel: 3,
                    stride: 1,
                    padding: 1,
                },
                Layer::BatchNorm,
                Layer::Relu,
                Layer::MaxPool2d {
                    kernel: 2,
                    stride: None,
                },
                Layer::Flatten,
                Layer::Dense { units: 10 },
            ],
        };
        let shapes = spec.shapes().unwrap();
        assert_eq!(shapes[0], vec![8, 8, 8]);
        assert_eq!(shapes[3], vec![8, 4, 4]);
        assert_eq!(spec.outputs().unwrap(), 10);
        assert_eq!(spec.parameter_count().unwrap(), 8 * 9 + 8 + 16 + 128 * 10 + 10);
    }

    #[test]
    fn a_spec_too_large_to_allocate_is_refused_before_libtorch_sees_it() {
        // A damaged model.json may hold any size: refused by the spec, not by an allocation libtorch fails.
        let huge = ModelSpec::Linear {
            inputs: usize::MAX / 2,
            outputs: 3,
        };
        let error = huge.shapes().unwrap_err();
        assert_eq!(error.layer, 0);
        assert!(error.message.starts_with("too large"), "{error}");
        let wide = ModelSpec::Sequential {
            input_shape: vec![1 << 20, 1 << 13],
            layers: vec![Layer::Flatten, Layer::Dense { units: 2 }],
        };
        assert!(wide.shapes().unwrap_err().message.contains("too large"));
        assert!(crate::model::Network::new(&huge, tch::Device::Cpu, 0).is_err());
    }

    #[test]
    fn misfit_layers_are_named() {
        let spec = ModelSpec::Sequential {
            input_shape: vec![64],
            layers: vec![Layer::MaxPool2d {
                kernel: 2,
                stride: None,
            }],
        };
        let error = spec.shapes().unwrap_err();
        assert_eq!(error.layer, 0);
        assert!(
            error
                .message
                .contains("max_pool2d needs a [channels, height, width] input"),
            "{error}"
        );
    }
}
