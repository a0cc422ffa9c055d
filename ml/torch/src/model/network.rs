//! A [`ModelSpec`] built as a libtorch network. Parameters are named as PyTorch names the layers of an
//! `nn.Sequential` (`"0.weight"`, `"3.running_mean"`, …), so the saved weights load into the same model in
//! PyTorch.

use std::sync::{Arc, Mutex};

use hearth_stats::random::Draws;
use tch::nn::{self, ModuleT};
use tch::{Device, Kind, Tensor};

use super::dropout::{DropoutStream, apply_dropout};
use super::spec::{Layer, ModelSpec, SpecError};

/// A network on a device: its parameters and its forward pass.
#[derive(Debug)]
pub struct Network {
    store: nn::VarStore,
    layers: nn::SequentialT,
    input_shape: Vec<i64>,
    /// The draws of every dropout layer: the network's own stream, not libtorch's process-wide generator,
    /// so ranks sharing a process do not take each other's numbers and a seed gives the same masks anywhere.
    dropout: Arc<Mutex<DropoutStream>>,
}

/// Mixed into the seed of the dropout draws, so they differ from the initial weights' stream.
const DROPOUT_STREAM: u64 = 0x6472_6f70_6f75_7421;

/// PyTorch's initialisation of a dense or convolution weight: `kaiming_uniform_(w, a = √5)`, its bound
/// computed in PyTorch's steps so the draws scale exactly as PyTorch's.
fn pytorch_weight_init(fan_in: i64) -> nn::Init {
    let a = 5f64.sqrt();
    let gain = (2.0 / (1.0 + a.powi(2))).sqrt();
    let bound = 3f64.sqrt() * (gain / (fan_in as f64).sqrt());
    nn::Init::Uniform { lo: -bound, up: bound }
}

/// PyTorch's initialisation of a dense or convolution bias, drawn after its weight: uniform within
/// ±1/√fan-in.
fn pytorch_bias_init(bias: Option<&Tensor>, fan_in: i64) {
    if let Some(bias) = bias {
        let bound = 1.0 / (fan_in as f64).sqrt();
        tch::no_grad(|| {
            let _ = bias.shallow_clone().uniform_(-bound, bound);
        });
    }
}

/// PyTorch's batch normalisation: scale 1, shift 0, momentum 0.1, ε 1e-5.
fn pytorch_batch_norm() -> nn::BatchNormConfig {
    nn::BatchNormConfig {
        ws_init: nn::Init::Const(1.0),
        ..Default::default()
    }
}

impl Network {
    /// Builds `spec` on `device` with parameters initialised from `seed` exactly as PyTorch initialises the
    /// same `nn.Sequential` after `torch.manual_seed(seed)`: dense and convolution weights from
    /// `kaiming_uniform_(a = √5)` (uniform within ±1/√fan-in), their biases uniform within ±1/√fan-in, drawn
    /// weight then bias, layer by layer, on the CPU; batch-norm scales 1 and shifts 0. (tch's own defaults
    /// differ: weights √6 times wider, convolution biases 0, batch-norm scales uniform in [0, 1).)
    ///
    /// ```
    /// use hearth_torch::model::{ModelSpec, Network};
    /// let net = Network::new(&ModelSpec::Linear { inputs: 3, outputs: 2 }, tch::Device::Cpu, 7).unwrap();
    /// let out = net.forward(&tch::Tensor::zeros([4, 3], (tch::Kind::Float, tch::Device::Cpu)), false).unwrap();
    /// assert_eq!(out.size(), vec![4, 2]);
    /// ```
    pub fn new(spec: &ModelSpec, device: Device, seed: u64) -> Result<Self, SpecError> {
        let shapes = spec.shapes()?;
        let (input, layers) = spec.layers();
        // libtorch's generator is global to the process: ranks that share a process (local masters) build
        // their networks one at a time, so each gets exactly the parameters its seed gives.
        static BUILDING: Mutex<()> = Mutex::new(());
        let _one_at_a_time = BUILDING.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        tch::manual_seed(seed as i64);
        // Drawn on the CPU, as PyTorch builds a model before `.to(device)`: a seed gives the same network on
        // every device.
        let mut store = nn::VarStore::new(Device::Cpu);
        let dropout = Arc::new(Mutex::new(DropoutStream::new(Draws::new(seed ^ DROPOUT_STREAM))));
        let mut dropout_layers = 0;
        let root = store.root();
        let mut net = nn::seq_t();
        let mut previous = input.clone();
        for (i, (layer, shape)) in layers.iter().zip(&shapes).enumerate() {
            let path = &root / i.to_string();
            net = match layer {
                Layer::Dense { units } => {
                    let fan_in = previous[0] as i64;
                    let config = nn::LinearConfig {
                        ws_init: pytorch_weight_init(fan_in),
                        bs_init: Some(nn::Init::Const(0.0)),
                        bias: true,
                    };
                    let linear = nn::linear(path, fan_in, *units as i64, config);
                    pytorch_bias_init(linear.bs.as_ref(), fan_in);
                    net.add(linear)
                }
                Layer::Conv2d {
                    filters,
                    kernel,
                    stride,
                    padding,
                } => {
                    let fan_in = (previous[0] * kernel * kernel) as i64;
                    let config = nn::ConvConfig {
                        stride: *stride as i64,
                        padding: *padding as i64,
                        ws_init: pytorch_weight_init(fan_in),
                        bs_init: nn::Init::Const(0.0),
                        ..Default::default()
                    };
                    let conv = nn::conv2d(path, previous[0] as i64, *filters as i64, *kernel as i64, config);
                    pytorch_bias_init(conv.bs.as_ref(), fan_in);
                    net.add(conv)
                }
                Layer::BatchNorm if previous.len() == 3 => {
                    net.add(nn::batch_norm2d(path, previous[0] as i64, pytorch_batch_norm()))
                }
                Layer::BatchNorm => net.add(nn::batch_norm1d(path, previous[0] as i64, pytorch_batch_norm())),
                Layer::MaxPool2d { kernel, stride } => {
                    let (k, s) = (*kernel as i64, stride.unwrap_or(*kernel) as i64);
                    net.add_fn(move |xs| xs.max_pool2d([k, k], [s, s], [0, 0], [1, 1], false))
                }
                Layer::Flatten => net.add_fn(|xs| xs.flatten(1, -1)),
                Layer::Dropout { rate } => {
                    let (rate, stream, layer) = (*rate, Arc::clone(&dropout), dropout_layers);
                    dropout_layers += 1;
                    net.add_fn_t(move |xs, train| apply_dropout(xs, rate, train, &stream, layer))
                }
                Layer::Relu => net.add_fn(Tensor::relu),
                Layer::Tanh => net.add_fn(Tensor::tanh),
                Layer::Sigmoid => net.add_fn(Tensor::sigmoid),
                Layer::Softmax => net.add_fn(|xs| xs.softmax(-1, Kind::Float)),
            };
            previous = shape.clone();
        }
        store.set_device(device);
        Ok(Self {
            store,
            layers: net,
            input_shape: input.iter().map(|&d| d as i64).collect(),
            dropout,
        })
    }

    /// Restarts the dropout layers' draws from `draws` (a trainer gives each rank and epoch its own stream).
    pub fn seed_dropout(&self, draws: Draws) {
        // Masks computed ahead from the old stream go with it: each epoch's masks follow from its own draws.
        *self.dropout.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = DropoutStream::new(draws);
    }

    /// The outputs (logits) for a `[n, features]` batch, reshaped to the spec's input shape first.
    pub fn forward(&self, features: &Tensor, train: bool) -> Result<Tensor, tch::TchError> {
        let mut shape = vec![-1i64];
        shape.extend(&self.input_shape);
        Ok(self.layers.forward_t(&features.f_view(shape.as_slice())?, train))
    }

    /// The trainable parameters, in creation order (the order gradients are fused in).
    pub fn parameters(&self) -> Vec<Tensor> {
        self.store.trainable_variables()
    }

    /// Every named tensor — parameters and batch-norm statistics — sorted by name.
    pub fn named_tensors(&self) -> Vec<(String, Tensor)> {
        let mut named: Vec<(String, Tensor)> = self.store.variables().into_iter().collect();
        named.sort_by(|a, b| a.0.cmp(&b.0));
        named
    }

    /// The device the parameters live on.
    pub fn device(&self) -> Device {
        self.store.device()
    }
}
