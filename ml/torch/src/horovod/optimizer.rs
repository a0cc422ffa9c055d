//! `hvd.DistributedOptimizer`: any tch optimizer whose gradients are averaged over the ranks before each
//! step, in one fused allreduce.

use tch::{Device, Tensor, nn};

use super::{Horovod, HorovodError};

/// A tch optimizer over a var store's trainable variables, stepping on gradients averaged over every rank.
///
/// ```
/// use hearth_collective::LocalWorld;
/// use hearth_torch::horovod::{DistributedOptimizer, Horovod};
/// use tch::nn::{self, OptimizerConfig};
/// use tch::{Device, Kind, Tensor};
///
/// // Each rank fits y = 2x on its own point; the averaged steps keep the ranks' weights identical.
/// let weights = LocalWorld::new(2)
///     .run(|mut comm| {
///         let mut hvd = Horovod::new(&mut comm);
///         let store = nn::VarStore::new(Device::Cpu);
///         let w = store.root().zeros("w", &[1]);
///         hvd.broadcast_parameters(&store.trainable_variables(), 0).unwrap();
///         let mut optimizer = DistributedOptimizer::new(nn::Sgd::default().build(&store, 0.1).unwrap(), &store);
///         let x = Tensor::from_slice(&[hvd.rank() as f32 + 1.0]);
///         for _ in 0..50 {
///             let loss = (&w * &x - &x * 2.0).square().sum(Kind::Float);
///             optimizer.backward_step(&mut hvd, &loss).unwrap();
///         }
///         w.double_value(&[0])
///     })
///     .unwrap();
/// assert!((weights[0] - 2.0).abs() < 1e-3 && weights[0] == weights[1]);
/// ```
pub struct DistributedOptimizer {
    optimizer: nn::Optimizer,
    variables: Vec<Tensor>,
}

impl DistributedOptimizer {
    /// Wraps `optimizer`, built over `store`'s trainable variables.
    pub fn new(optimizer: nn::Optimizer, store: &nn::VarStore) -> Self {
        Self {
            optimizer,
            variables: store.trainable_variables(),
        }
    }

    /// Sets the learning rate.
    pub fn set_lr(&mut self, learning_rate: f64) {
        self.optimizer.set_lr(learning_rate);
    }

    /// Zeroes the gradients, backpropagates `loss`, averages the gradients over every rank and steps.
    pub fn backward_step(&mut self, hvd: &mut Horovod<'_>, loss: &Tensor) -> Result<(), HorovodError> {
        self.optimizer.zero_grad();
        loss.backward();
        self.average_gradients(hvd)?;
        self.optimizer.step();
        Ok(())
    }

    /// Replaces every variable's gradient with its mean over the ranks (a variable without a gradient counts
    /// as zeros, so the ranks' fused buffers line up).
    pub fn average_gradients(&mut self, hvd: &mut Horovod) -> Result<(), HorovodError> {
        let mut fused = Vec::new();
        for variable in &self.variables {
            let grad = variable.grad();
            if grad.defined() {
                fused.extend(hvd.host_values(&grad)?);
            } else {
                fused.extend(std::iter::repeat_n(0.0, variable.numel()));
            }
        }
        hvd.communicator().allreduce_sum(&mut fused)?;
        let size = hvd.size() as f32;
        let mut offset = 0;
        for variable in &self.variables {
            let len = variable.numel();
            let mut grad = variable.grad();
            if grad.defined() {
                let mean = Tensor::from_slice(&fused[offset..offset + len])
                    .to_device(Device::Cpu)
                    .divide_scalar(f64::from(size))
                    .view(variable.size().as_slice())
                    .to_kind(grad.kind())
                    .to_device(grad.device());
                tch::no_grad(|| grad.copy_(&mean));
            }
            offset += len;
        }
        Ok(())
    }
}
