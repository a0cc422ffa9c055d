//! Optimizers with PyTorch's update rules: SGD (momentum, Nesterov), Adam, Adagrad and Adadelta, each with
//! L2 weight decay. They take the (already averaged) gradient of all parameters as one flat buffer and update
//! the parameters, which live in one flat buffer too, in place.

use serde::{Deserialize, Serialize};
use tch::Tensor;

use super::error::OptionsError;

fn zero() -> f64 {
    0.0
}
fn beta1() -> f64 {
    0.9
}
fn beta2() -> f64 {
    0.999
}
fn adam_eps() -> f64 {
    1e-8
}
fn adagrad_eps() -> f64 {
    1e-10
}
fn rho() -> f64 {
    0.9
}
fn adadelta_eps() -> f64 {
    1e-6
}

/// An optimizer and its hyper-parameters (the learning rate is the base rate before schedules and
/// world-size scaling).
///
/// ```
/// use hearth_torch::train::OptimizerSpec;
/// let adam: OptimizerSpec = serde_json::from_str(r#"{"optimizer": "adam", "learning_rate": 0.001}"#).unwrap();
/// assert_eq!(adam.learning_rate(), 0.001);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "optimizer", rename_all = "snake_case")]
pub enum OptimizerSpec {
    /// Stochastic gradient descent.
    Sgd {
        /// Base learning rate.
        learning_rate: f64,
        /// Momentum factor (0 = none).
        #[serde(default = "zero")]
        momentum: f64,
        /// Nesterov momentum.
        #[serde(default)]
        nesterov: bool,
        /// L2 penalty.
        #[serde(default = "zero")]
        weight_decay: f64,
    },
    /// Adam.
    Adam {
        /// Base learning rate.
        learning_rate: f64,
        /// First-moment decay.
        #[serde(default = "beta1")]
        beta1: f64,
        /// Second-moment decay.
        #[serde(default = "beta2")]
        beta2: f64,
        /// Denominator term.
        #[serde(default = "adam_eps")]
        eps: f64,
        /// L2 penalty.
        #[serde(default = "zero")]
        weight_decay: f64,
    },
    /// Adagrad.
    Adagrad {
        /// Base learning rate.
        learning_rate: f64,
        /// Denominator term.
        #[serde(default = "adagrad_eps")]
        eps: f64,
        /// L2 penalty.
        #[serde(default = "zero")]
        weight_decay: f64,
        /// What the sum of squared gradients starts at: PyTorch's `initial_accumulator_value`, 0 by default.
        /// Keras's Adagrad starts at 0.1 with ε 1e-7: set both to train as a Keras model (dist-keras) does.
        #[serde(default = "zero")]
        initial_accumulator_value: f64,
    },
    /// Adadelta.
    Adadelta {
        /// Base learning rate (PyTorch's default is 1.0).
        learning_rate: f64,
        /// Running-average decay.
        #[serde(default = "rho")]
        rho: f64,
        /// Denominator term.
        #[serde(default = "adadelta_eps")]
        eps: f64,
        /// L2 penalty.
        #[serde(default = "zero")]
        weight_decay: f64,
    },
}

impl OptimizerSpec {
    /// Adam with PyTorch's defaults (β = 0.9, 0.999; ε = 1e-8; no weight decay).
    ///
    /// ```
    /// assert_eq!(hearth_torch::train::OptimizerSpec::adam(1e-3).learning_rate(), 1e-3);
    /// ```
    pub fn adam(learning_rate: f64) -> Self {
        OptimizerSpec::Adam {
            learning_rate,
            beta1: beta1(),
            beta2: beta2(),
            eps: adam_eps(),
            weight_decay: 0.0,
        }
    }

    /// Adagrad with PyTorch's defaults (ε = 1e-10, the accumulator starting at 0, no weight decay).
    ///
    /// ```
    /// assert_eq!(hearth_torch::train::OptimizerSpec::adagrad(0.01).learning_rate(), 0.01);
    /// ```
    pub fn adagrad(learning_rate: f64) -> Self {
        OptimizerSpec::Adagrad {
            learning_rate,
            eps: adagrad_eps(),
            weight_decay: 0.0,
            initial_accumulator_value: 0.0,
        }
    }

    /// Plain SGD: no momentum, no weight decay.
    pub fn sgd(learning_rate: f64) -> Self {
        OptimizerSpec::Sgd {
            learning_rate,
            momentum: 0.0,
            nesterov: false,
            weight_decay: 0.0,
        }
    }

    /// The base learning rate.
    pub fn learning_rate(&self) -> f64 {
        match self {
            OptimizerSpec::Sgd { learning_rate, .. }
            | OptimizerSpec::Adam { learning_rate, .. }
            | OptimizerSpec::Adagrad { learning_rate, .. }
            | OptimizerSpec::Adadelta { learning_rate, .. } => *learning_rate,
        }
    }

    fn weight_decay(&self) -> f64 {
        match self {
            OptimizerSpec::Sgd { weight_decay, .. }
            | OptimizerSpec::Adam { weight_decay, .. }
            | OptimizerSpec::Adagrad { weight_decay, .. }
            | OptimizerSpec::Adadelta { weight_decay, .. } => *weight_decay,
        }
    }

    /// Checks what PyTorch's constructor checks of the options hearth adds to its own: Adagrad's
    /// `initial_accumulator_value` must be finite and ≥ 0 (a negative sum of squares has no square root). The
    /// message names the option and its value.
    ///
    /// ```
    /// use hearth_torch::train::OptimizerSpec;
    /// let negative = OptimizerSpec::Adagrad {
    ///     learning_rate: 0.01,
    ///     eps: 1e-10,
    ///     weight_decay: 0.0,
    ///     initial_accumulator_value: -0.1,
    /// };
    /// assert!(negative.check().unwrap_err().to_string().contains("initial_accumulator_value"));
    /// assert!(OptimizerSpec::adagrad(0.01).check().is_ok());
    /// ```
    pub fn check(&self) -> Result<(), OptionsError> {
        match self.initial_state() {
            start if start.is_finite() && start >= 0.0 => Ok(()),
            start => Err(OptionsError {
                option: "optimizer",
                message: format!("adagrad needs initial_accumulator_value ≥ 0, got {start}"),
            }),
        }
    }

    /// What every state tensor starts at (Adagrad's accumulator may start above 0; the others at 0).
    fn initial_state(&self) -> f64 {
        match self {
            OptimizerSpec::Adagrad {
                initial_accumulator_value,
                ..
            } => *initial_accumulator_value,
            _ => 0.0,
        }
    }

    /// State tensors kept per parameter.
    fn state_slots(&self) -> usize {
        match self {
            OptimizerSpec::Sgd { momentum, .. } if *momentum > 0.0 => 1,
            OptimizerSpec::Sgd { .. } => 0,
            OptimizerSpec::Adagrad { .. } => 1,
            OptimizerSpec::Adam { .. } | OptimizerSpec::Adadelta { .. } => 2,
        }
    }
}

/// An optimizer bound to a network's parameters.
///
/// The parameters' values are moved into one flat tensor (each parameter's storage becomes its slice of it),
/// and so are their gradients (backpropagation accumulates into the slices, as PyTorch's DDP does with
/// `gradient_as_bucket_view`) and the optimizer's state: an update is a handful of operations on whole
/// buffers however many parameter tensors the network has, and the gradient is ready to allreduce as it is —
/// with one more slot after it, where a trainer puts the step's row count to allreduce in the same buffer.
#[derive(Debug)]
pub struct Optimizer {
    spec: OptimizerSpec,
    parameters: Vec<Tensor>,
    /// Every parameter's values, one after another.
    values: Tensor,
    /// Every parameter's gradient, laid out as `values`, then one slot for a count (see
    /// [`Optimizer::gradient_and_count`]).
    gradient: Tensor,
    /// One tensor shaped as `values` per state slot (Adam: first and second moments).
    state: Vec<Tensor>,
    /// Where a step computes its intermediate buffer (Adam's and Adagrad's scaled moments, Nesterov's
    /// look-ahead): SGD, Adam and Adagrad steps allocate nothing without weight decay, since a fresh buffer of
    /// a large network's size costs its page faults on every step.
    scratch: Tensor,
    /// A step's scalar factors, as a tensor (tch's in-place operations take no scalar multiplier).
    factor: Tensor,
    steps: i64,
}

impl Optimizer {
    /// An optimizer over `parameters` (all `f32`, on one device) with zeroed state.
    ///
    /// ```
    /// use hearth_torch::train::{Optimizer, OptimizerSpec};
    /// use tch::Tensor;
    ///
    /// let weight = Tensor::from_slice(&[1.0f32, 2.0]).set_requires_grad(true);
    /// let mut optimizer = Optimizer::new(OptimizerSpec::sgd(0.5), vec![weight.shallow_clone()]);
    /// (&weight * &weight).sum(tch::Kind::Float).backward();
    /// let gradient = optimizer.gradient();
    /// optimizer.step(&gradient, 0.5);
    /// assert_eq!(Vec::<f32>::try_from(&weight.detach()).unwrap(), [0.0, 0.0]);
    /// ```
    pub fn new(spec: OptimizerSpec, mut parameters: Vec<Tensor>) -> Self {
        let device = parameters.first().map_or(tch::Device::Cpu, Tensor::device);
        let values = tch::no_grad(|| {
            let flat: Vec<Tensor> = parameters.iter().map(|p| p.detach().reshape([-1])).collect();
            if flat.is_empty() {
                Tensor::zeros([0], (tch::Kind::Float, device))
            } else {
                Tensor::cat(&flat, 0)
            }
        });
        // Backpropagating zero gives every parameter a gradient tensor, which then becomes a view of the flat
        // gradient too.
        let gradient = Tensor::zeros([values.numel() as i64 + 1], (tch::Kind::Float, device));
        let zero = parameters
            .iter()
            .map(|p| (p * 0.0).sum(tch::Kind::Float))
            .reduce(|a, b| a + b);
        if let Some(zero) = zero {
            zero.backward();
        }
        let mut offset = 0;
        for p in &mut parameters {
            let (n, shape) = (p.numel() as i64, p.size());
            p.set_data(&values.narrow(0, offset, n).view(shape.as_slice()));
            p.grad().set_data(&gradient.narrow(0, offset, n).view(shape.as_slice()));
            offset += n;
        }
        let state = (0..spec.state_slots())
            .map(|_| values.full_like(spec.initial_state()))
            .collect();
        Self {
            spec,
            parameters,
            scratch: values.zeros_like(),
            factor: Tensor::zeros([], (tch::Kind::Float, device)),
            values,
            gradient,
            state,
            steps: 0,
        }
    }

    /// Clears every parameter's gradient.
    pub fn zero_grad(&mut self) {
        let _ = self.gradient.zero_();
    }

    /// Every parameter's gradient, one after another, as [`Optimizer::step`] takes it (the buffer itself,
    /// not a copy: writing into it sets the gradients).
    pub fn gradient(&self) -> Tensor {
        self.gradient.narrow(0, 0, self.values.numel() as i64)
    }

    /// The gradient followed by one slot, zero after [`Optimizer::zero_grad`], for a count to travel with it:
    /// a synchronous trainer allreduces the gradient and its rows in one buffer, in place.
    ///
    /// ```
    /// use hearth_torch::train::{Optimizer, OptimizerSpec};
    /// let weight = tch::Tensor::from_slice(&[1.0f32, 2.0]).set_requires_grad(true);
    /// let optimizer = Optimizer::new(OptimizerSpec::sgd(0.5), vec![weight]);
    /// assert_eq!(optimizer.gradient_and_count().size(), [3]);
    /// ```
    pub fn gradient_and_count(&self) -> Tensor {
        self.gradient.shallow_clone()
    }

    /// Every parameter's values, one after another (the buffer itself: writing into it sets the parameters).
    pub fn values(&self) -> Tensor {
        self.values.shallow_clone()
    }

    /// How many values the parameters hold together.
    pub fn len(&self) -> usize {
        self.values.numel()
    }

    /// Whether there is no parameter value to optimise.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The optimizer's state tensors, for checkpoints (parameter order, then slot order).
    pub fn state(&self) -> (i64, Vec<Tensor>) {
        (self.steps, self.state_views())
    }

    /// Restores state saved by [`Optimizer::state`].
    pub fn restore(&mut self, steps: i64, values: &[Tensor]) {
        self.steps = steps;
        tch::no_grad(|| {
            for (mut slot, value) in self.state_views().into_iter().zip(values) {
                slot.copy_(value);
            }
        });
    }

    /// Each parameter's slice of each state slot, shaped as the parameter (parameter order, then slot order).
    fn state_views(&self) -> Vec<Tensor> {
        let mut views = Vec::with_capacity(self.parameters.len() * self.state.len());
        let mut offset = 0;
        for p in &self.parameters {
            let n = p.numel() as i64;
            for slot in &self.state {
                views.push(slot.narrow(0, offset, n).view(p.size().as_slice()));
            }
            offset += n;
        }
        views
    }

    /// One update of every parameter with learning rate `lr`, from `gradient` (as [`Optimizer::gradient`]
    /// lays it out: every parameter's gradient, already averaged across ranks).
    pub fn step(&mut self, gradient: &Tensor, lr: f64) {
        self.steps += 1;
        let t = self.steps as f64;
        let decay = self.spec.weight_decay();
        let (p, state, s) = (&mut self.values, &mut self.state, &mut self.scratch);
        // `p += x · c` for a buffer `x` and a scalar `c`, in one pass.
        let factor = &mut self.factor;
        let mut add_scaled = |p: &mut Tensor, x: &Tensor, c: f64| {
            let _ = factor.fill_(c);
            let _ = p.addcmul_(x, factor);
        };
        tch::no_grad(|| {
            let g = if decay != 0.0 {
                gradient + &*p * decay
            } else {
                gradient.shallow_clone()
            };
            match &self.spec {
                OptimizerSpec::Sgd { momentum, nesterov, .. } => {
                    let update = if *momentum > 0.0 {
                        let buffer = &mut state[0];
                        if t == 1.0 {
                            buffer.copy_(&g);
                        } else {
                            let _ = buffer.g_mul_scalar_(*momentum).g_add_(&g);
                        }
                        if *nesterov {
                            s.copy_(&g);
                            add_scaled(s, buffer, *momentum);
                            s.shallow_clone()
                        } else {
                            buffer.shallow_clone()
                        }
                    } else {
                        g
                    };
                    add_scaled(p, &update, -lr);
                }
                OptimizerSpec::Adam { beta1, beta2, eps, .. } => {
                    // PyTorch's Adam, in place: m ← lerp(m, g, 1 − β₁), v ← β₂v + (1 − β₂)g²,
                    // p ← p − lr/(1 − β₁ᵗ) · m / (√v / √(1 − β₂ᵗ) + ε).
                    let (m, v) = state.split_at_mut(1);
                    let _ = m[0].lerp_(&g, 1.0 - beta1);
                    let _ = g.mul_out(s, &g);
                    let _ = v[0].g_mul_scalar_(*beta2);
                    add_scaled(&mut v[0], s, 1.0 - beta2);
                    let (bias1, bias2) = (1.0 - beta1.powf(t), 1.0 - beta2.powf(t));
                    let _ = v[0].sqrt_out(s);
                    let _ = s.g_div_scalar_(bias2.sqrt()).g_add_scalar_(*eps);
                    let _ = m[0].div_out(s, s);
                    add_scaled(p, s, -lr / bias1);
                }
                OptimizerSpec::Adagrad { eps, .. } => {
                    // Σg² += g², p ← p − lr · g / (√Σg² + ε).
                    let _ = g.mul_out(s, &g);
                    let _ = state[0].g_add_(s);
                    let _ = state[0].sqrt_out(s);
                    let _ = s.g_add_scalar_(*eps);
                    let _ = g.div_out(s, s);
                    add_scaled(p, s, -lr);
                }
                OptimizerSpec::Adadelta { rho, eps, .. } => {
                    let (square, accumulated) = state.split_at_mut(1);
                    let _ = square[0].g_mul_scalar_(*rho).g_add_(&(&g * &g * (1.0 - rho)));
                    let delta = (&accumulated[0] + *eps).sqrt() / (&square[0] + *eps).sqrt() * &g;
                    let _ = accumulated[0]
                        .g_mul_scalar_(*rho)
                        .g_add_(&(&delta * &delta * (1.0 - rho)));
                    let _ = p.g_sub_(&(delta * lr));
                }
            }
        });
    }
}
