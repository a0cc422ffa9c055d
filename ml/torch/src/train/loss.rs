//! The losses a rank minimises, what counts as a correct prediction, and the labels each loss takes.

use tch::{Kind, Reduction, Tensor};

use super::error::TrainError;
use super::options::Loss;
use crate::data::LabelSummary;

/// Checks labels and widths before any step, naming the row and value: `rows` rows of `dim` features whose
/// labels `labels` sums up.
pub(crate) fn check_rows(
    rank: usize,
    what: &str,
    (rows, dim, labels): (usize, usize, &LabelSummary),
    (inputs, outputs, loss): (usize, usize, Loss),
) -> Result<(), TrainError> {
    let error = |message: String| TrainError::Data { rank, message };
    if rows > 0 && dim != inputs {
        return Err(error(format!(
            "{what} features have {dim} values per row; the model takes {inputs}"
        )));
    }
    let unfit = match loss {
        Loss::SoftmaxCrossEntropy => labels
            .first_not_class
            .or(labels.largest_class.filter(|&(_, label)| label as usize >= outputs)),
        Loss::BinaryCrossEntropy => labels.first_not_binary,
        Loss::MeanSquaredError => labels.first_not_finite,
    };
    match unfit {
        Some((row, label)) => Err(error(format!(
            "{what} row {row}: label {label} does not fit a {loss:?} loss with {outputs} outputs"
        ))),
        None => Ok(()),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn checked(chunks: &[&[f32]], model: (usize, usize, Loss)) -> Result<(), String> {
        let mut labels = LabelSummary::default();
        let mut rows = 0;
        for chunk in chunks {
            labels = labels.then(LabelSummary::of(chunk, rows));
            rows += chunk.len();
        }
        check_rows(1, "training", (rows, 2, &labels), model).map_err(|e| e.to_string())
    }

    #[test]
    fn a_label_beyond_the_classes_is_named_by_its_row_across_chunks() {
        let error = checked(&[&[0.0, 1.0, 2.0], &[1.0, 3.0, 0.0]], (2, 3, Loss::SoftmaxCrossEntropy)).unwrap_err();
        assert!(error.contains("training row 4: label 3 does not fit"), "{error}");
        assert!(checked(&[&[0.0, 2.0], &[1.0]], (2, 3, Loss::SoftmaxCrossEntropy)).is_ok());
    }

    #[test]
    fn each_loss_refuses_the_labels_it_cannot_take() {
        let error = checked(&[&[0.0, 1.0], &[0.5]], (2, 1, Loss::BinaryCrossEntropy)).unwrap_err();
        assert!(error.contains("training row 2: label 0.5"), "{error}");
        let error = checked(&[&[1.5, -1.0]], (2, 3, Loss::SoftmaxCrossEntropy)).unwrap_err();
        assert!(error.contains("training row 0: label 1.5"), "{error}");
        let error = checked(&[&[1.5], &[f32::NAN]], (2, 1, Loss::MeanSquaredError)).unwrap_err();
        assert!(error.contains("training row 1: label NaN"), "{error}");
        assert!(checked(&[&[1.5, -7.0]], (2, 1, Loss::MeanSquaredError)).is_ok());
    }

    #[test]
    fn features_of_another_width_are_refused() {
        let error = checked(&[&[0.0]], (3, 2, Loss::SoftmaxCrossEntropy)).unwrap_err();
        assert!(
            error.contains("training features have 2 values per row; the model takes 3"),
            "{error}"
        );
    }
}
