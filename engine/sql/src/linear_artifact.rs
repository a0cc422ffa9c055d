//! A linear model's coefficients as a one-layer network artifact, so that `ML.EXPLAIN_PREDICT` and
//! `ML.GLOBAL_EXPLAIN` explain it the way they explain a network: for linear regression the integrated
//! gradients are exactly `coefficient × (x − mean)`; for logistic regression they explain the probability of the
//! predicted class.

use hearth_torch::artifact::ModelArtifact;
use hearth_torch::model::{ModelSpec, NamedTensor};
use hearth_torch::train::{Loss, TrainOptions, TrainSettings};
use hearth_training::linear::{LinearRegressionModel, LogisticRegressionModel};

/// `model`'s coefficient sets as a dense layer: one logit when binomial (its probability a sigmoid, as
/// Spark's), one per class when multinomial (a softmax).
pub(crate) fn logistic_artifact(model: &LogisticRegressionModel) -> ModelArtifact {
    let sets = model.coefficient_matrix();
    let inputs = sets.first().map_or(0, |set| set.len());
    let weights: Vec<f64> = sets.concat();
    dense_layer(inputs, &weights, model.intercept_vector(), None)
}

/// `model`'s coefficients as a dense layer of one output, trained for the squared error.
pub(crate) fn linear_artifact(model: &LinearRegressionModel) -> ModelArtifact {
    let coefficients = model.coefficients();
    dense_layer(
        coefficients.len(),
        coefficients,
        &[model.intercept()],
        Some(Loss::MeanSquaredError),
    )
}

/// One dense layer of `inputs` inputs, `weights` row-major by output, and `loss` (else the one that fits its
/// outputs).
fn dense_layer(inputs: usize, weights: &[f64], biases: &[f64], loss: Option<Loss>) -> ModelArtifact {
    let outputs = biases.len();
    let mut options = TrainOptions::new(ModelSpec::Linear { inputs, outputs }, TrainSettings::default());
    if let Some(loss) = loss {
        options.loss = loss;
    }
    let single = |values: &[f64]| values.iter().map(|&v| v as f32).collect();
    let tensors = vec![
        NamedTensor {
            name: "0.weight".to_string(),
            shape: vec![outputs as i64, inputs as i64],
            values: single(weights),
        },
        NamedTensor {
            name: "0.bias".to_string(),
            shape: vec![outputs as i64],
            values: single(biases),
        },
    ];
    ModelArtifact::new(options, tensors, Vec::new())
}
