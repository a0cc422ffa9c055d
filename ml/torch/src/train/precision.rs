//! Mixed precision: a bfloat16 copy of the parameters computes, an fp32 master copy learns.
//!
//! With [`Precision::Bf16`](super::Precision::Bf16) the network's parameters become views of one flat bfloat16
//! buffer, and their gradients of another. Each step the master parameters (the optimizer's fp32 buffer) are
//! cast into the bfloat16 one before the forward pass, the batch goes in as bfloat16 and the logits come out as
//! fp32 for the loss; after the backward pass the bfloat16 gradient is cast into the optimizer's fp32 one,
//! which is averaged over the ranks and stepped on in fp32 as without mixed precision. Checkpoints, the
//! exchange strategies and the trained model see only the fp32 master copy.

use tch::{Kind, Tensor};

/// The bfloat16 parameters and gradients a network computes with.
pub(super) struct Bf16Compute {
    parameters: Tensor,
    gradient: Tensor,
}

impl Bf16Compute {
    /// Points `parameters` (the network's, in the optimizer's order, already views of `master`) and their
    /// gradients at new bfloat16 buffers holding `master`'s values.
    pub(super) fn new(parameters: &mut [Tensor], master: &Tensor) -> Self {
        let compute = Self {
            parameters: master.to_kind(Kind::BFloat16),
            gradient: master.zeros_like().to_kind(Kind::BFloat16),
        };
        let mut offset = 0;
        for p in parameters {
            let (n, shape) = (p.numel() as i64, p.size());
            p.set_data(&compute.parameters.narrow(0, offset, n).view(shape.as_slice()));
            p.grad()
                .set_data(&compute.gradient.narrow(0, offset, n).view(shape.as_slice()));
            offset += n;
        }
        compute
    }

    /// Casts the master parameters into the computing copy (before a forward pass).
    pub(super) fn refresh(&mut self, master: &Tensor) {
        tch::no_grad(|| self.parameters.copy_(master));
    }

    /// Zeroes the bfloat16 gradient (before a backward pass).
    pub(super) fn zero_grad(&mut self) {
        let _ = self.gradient.zero_();
    }

    /// Casts the bfloat16 gradient into `gradient`, the optimizer's fp32 one.
    pub(super) fn gradient_into(&self, gradient: &mut Tensor) {
        tch::no_grad(|| gradient.copy_(&self.gradient));
    }
}

/// The batch as the network computes it.
pub(super) fn computing(features: &Tensor) -> Tensor {
    features.to_kind(Kind::BFloat16)
}

/// The network's outputs as the loss reads them.
pub(super) fn for_loss(logits: &Tensor) -> Tensor {
    logits.to_kind(Kind::Float)
}
