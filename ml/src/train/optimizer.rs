//! Optimizers with PyTorch's update rules: SGD (momentum, Nesterov), Adam, Adagrad and Adadelta, each with
//! L2 weight decay. They read each parameter's (already averaged) gradient and update it in place.

use serde::{Deserialize, Serialize};
use tch::Tensor;

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
/// use hearth_ml::train::OptimizerSpec;
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
    /// assert_eq!(hearth_ml::train::OptimizerSpec::adam(1e-3).learning_rate(), 1e-3);
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
#[derive(Debug)]
pub struct Optimizer {
    spec: OptimizerSpec,
    parameters: Vec<Tensor>,
    state: Vec<Vec<Tensor>>,
    steps: i64,
}

impl Optimizer {
    /// An optimizer over `parameters` with zeroed state.
    pub fn new(spec: OptimizerSpec, parameters: Vec<Tensor>) -> Self {
        let slots = spec.state_slots();
        let state = parameters
            .iter()
            .map(|p| (0..slots).map(|_| p.zeros_like()).collect())
            .collect();
        Self {
            spec,
            parameters,
            state,
            steps: 0,
        }
    }

    /// Clears every parameter's gradient.
    pub fn zero_grad(&mut self) {
        for p in &mut self.parameters {
            p.zero_grad();
        }
    }

    /// The optimizer's state tensors, for checkpoints (parameter order, then slot order).
    pub fn state(&self) -> (i64, Vec<Tensor>) {
        (
            self.steps,
            self.state.iter().flatten().map(Tensor::shallow_clone).collect(),
        )
    }

    /// Restores state saved by [`Optimizer::state`].
    pub fn restore(&mut self, steps: i64, values: &[Tensor]) {
        self.steps = steps;
        tch::no_grad(|| {
            for (slot, value) in self.state.iter_mut().flatten().zip(values) {
                slot.copy_(value);
            }
        });
    }

    /// One update of every parameter with learning rate `lr`.
    pub fn step(&mut self, lr: f64) {
        self.steps += 1;
        let t = self.steps as f64;
        let decay = self.spec.weight_decay();
        tch::no_grad(|| {
            for (p, state) in self.parameters.iter_mut().zip(self.state.iter_mut()) {
                let grad = p.grad();
                if !grad.defined() {
                    continue;
                }
                let g = if decay != 0.0 { &grad + &*p * decay } else { grad };
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
                                &g + &*buffer * *momentum
                            } else {
                                buffer.shallow_clone()
                            }
                        } else {
                            g
                        };
                        let _ = p.g_sub_(&(update * lr));
                    }
                    OptimizerSpec::Adam { beta1, beta2, eps, .. } => {
                        // PyTorch's single-tensor Adam, in place.
                        let (m, v) = state.split_at_mut(1);
                        let _ = m[0].lerp_(&g, 1.0 - beta1);
                        let _ = v[0].g_mul_scalar_(*beta2).addcmul_(&g, &(&g * (1.0 - beta2)));
                        let bias1 = 1.0 - beta1.powf(t);
                        let bias2 = 1.0 - beta2.powf(t);
                        let mut denominator = v[0].sqrt();
                        let _ = denominator.g_div_scalar_(bias2.sqrt()).g_add_scalar_(*eps);
                        let _ = p.addcdiv_(&(&m[0] * (-lr / bias1)), &denominator);
                    }
                    OptimizerSpec::Adagrad { eps, .. } => {
                        let _ = state[0].g_add_(&(&g * &g));
                        let denominator = state[0].sqrt() + *eps;
                        let _ = p.g_sub_(&(&g / denominator * lr));
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
            }
        });
    }
}
