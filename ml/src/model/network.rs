//! A [`ModelSpec`] built as a libtorch network. Parameters are named as PyTorch names the layers of an
//! `nn.Sequential` (`"0.weight"`, `"3.running_mean"`, …), so the saved weights load into the same model in
//! PyTorch.

use std::sync::Mutex;

use tch::nn::{self, ModuleT};
use tch::{Device, Kind, Tensor};

use super::spec::{Layer, ModelSpec, SpecError};

/// A network on a device: its parameters and its forward pass.
#[derive(Debug)]
pub struct Network {
    store: nn::VarStore,
    layers: nn::SequentialT,
    input_shape: Vec<i64>,
}

impl Network {
    /// Builds `spec` on `device` with parameters initialised from `seed` (libtorch's defaults: Kaiming
    /// uniform weights, as PyTorch).
    ///
    /// ```
    /// use hearth_ml::model::{ModelSpec, Network};
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
        let _one_at_a_time = BUILDING.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        tch::manual_seed(seed as i64);
        let store = nn::VarStore::new(device);
        let root = store.root();
        let mut net = nn::seq_t();
        let mut previous = input.clone();
        for (i, (layer, shape)) in layers.iter().zip(&shapes).enumerate() {
            let path = &root / i.to_string();
            net = match layer {
                Layer::Dense { units } => {
                    net.add(nn::linear(path, previous[0] as i64, *units as i64, Default::default()))
                }
                Layer::Conv2d {
                    filters,
                    kernel,
                    stride,
                    padding,
                } => {
                    let config = nn::ConvConfig {
                        stride: *stride as i64,
                        padding: *padding as i64,
                        ..Default::default()
                    };
                    net.add(nn::conv2d(
                        path,
                        previous[0] as i64,
                        *filters as i64,
                        *kernel as i64,
                        config,
                    ))
                }
                Layer::BatchNorm if previous.len() == 3 => {
                    net.add(nn::batch_norm2d(path, previous[0] as i64, Default::default()))
                }
                Layer::BatchNorm => net.add(nn::batch_norm1d(path, previous[0] as i64, Default::default())),
                Layer::MaxPool2d { kernel, stride } => {
                    let (k, s) = (*kernel as i64, stride.unwrap_or(*kernel) as i64);
                    net.add_fn(move |xs| xs.max_pool2d([k, k], [s, s], [0, 0], [1, 1], false))
                }
                Layer::Flatten => net.add_fn(|xs| xs.flatten(1, -1)),
                Layer::Dropout { rate } => {
                    let rate = *rate;
                    net.add_fn_t(move |xs, train| xs.dropout(rate, train))
                }
                Layer::Relu => net.add_fn(|xs| xs.relu()),
                Layer::Tanh => net.add_fn(|xs| xs.tanh()),
                Layer::Sigmoid => net.add_fn(|xs| xs.sigmoid()),
                Layer::Softmax => net.add_fn(|xs| xs.softmax(-1, Kind::Float)),
            };
            previous = shape.clone();
        }
        Ok(Self {
            store,
            layers: net,
            input_shape: input.iter().map(|&d| d as i64).collect(),
        })
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
