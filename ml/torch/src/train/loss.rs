//! The losses a rank minimises, what counts as a correct prediction, and the labels each loss takes.

use tch::{Kind, Reduction, Tensor};

use super::error::TrainError;
use super::options::Loss;
use crate::data::Shard;

/// Checks labels and widths before any step, naming the row and value.
pub(crate) fn check_shard(
    rank: usize,
    what: &str,
    shard: &Shard,
    first_row: usize,
    (inputs, outputs, loss): (usize, usize, Loss),
) -> Result<(), TrainError> {
    let error = |message: String| TrainError::Data { rank, message };
    if shard.rows() > 0 && shard.dim() != inputs {
        return Err(error(format!(
            "{what} features have {} values per row; the model takes {inputs}",
            shard.dim()
        )));
    }
    for (row, &label) in shard.labels().iter().enumerate() {
        let valid = match loss {
            Loss::SoftmaxCrossEntropy => label >= 0.0 && label.fract() == 0.0 && (label as usize) < outputs,
            Loss::BinaryCrossEntropy => label == 0.0 || label == 1.0,
            Loss::MeanSquaredError => label.is_finite(),
        };
        if !valid {
            return Err(error(format!(
                "{what} row {}: label {label} does not fit a {loss:?} loss with {outputs} outputs",
                first_row + row
            )));
        }
    }
    Ok(())
}

/// The summed loss of a batch, each row's weighted by its sample weight when there are some.
pub(crate) fn loss_of(
    loss: Loss,
    logits: &Tensor,
    labels: &Tensor,
    class_weights: Option<&Tensor>,
    sample_weights: Option<&Tensor>,
) -> Tensor {
    let reduction = if sample_weights.is_some() {
        Reduction::None
    } else {
        Reduction::Sum
    };
    let losses = match loss {
        Loss::SoftmaxCrossEntropy => {
            logits
                .log_softmax(-1, Kind::Float)
                .g_nll_loss(labels, class_weights, reduction, -100)
        }
        Loss::BinaryCrossEntropy => {
            let row_class_weights = class_weights.map(|w| w.index_select(0, &labels.to_kind(Kind::Int64)));
            logits.view([-1]).binary_cross_entropy_with_logits(
                labels,
                row_class_weights.as_ref(),
                None::<&Tensor>,
                reduction,
            )
        }
        Loss::MeanSquaredError => logits.view([-1]).mse_loss(labels, reduction),
    };
    match sample_weights {
        Some(weights) => (losses * weights).sum(Kind::Float),
        None => losses,
    }
}

/// Correct predictions in a batch, as a `Double` (weighted by the sample weights when there are some; 0 for
/// regression).
pub(crate) fn hits_of(loss: Loss, logits: &Tensor, labels: &Tensor, sample_weights: Option<&Tensor>) -> Tensor {
    let correct = match loss {
        Loss::SoftmaxCrossEntropy => logits.argmax(-1, false).eq_tensor(labels),
        Loss::BinaryCrossEntropy => logits.view([-1]).gt(0.0).eq_tensor(&labels.gt(0.5)),
        Loss::MeanSquaredError => return Tensor::zeros([], (Kind::Double, logits.device())),
    };
    match sample_weights {
        Some(weights) => (correct.to_kind(Kind::Double) * weights.to_kind(Kind::Double)).sum(Kind::Double),
        None => correct.sum(Kind::Double),
    }
}

/// A shard's labels as the loss takes them: class indices (`Int64`) for softmax cross-entropy, values
/// (`Float`) otherwise.
pub(crate) fn label_tensor(loss: Loss, labels: &[f32]) -> Tensor {
    let values = Tensor::from_slice(labels);
    match loss {
        Loss::SoftmaxCrossEntropy => values.to_kind(Kind::Int64),
        Loss::BinaryCrossEntropy | Loss::MeanSquaredError => values,
    }
}
