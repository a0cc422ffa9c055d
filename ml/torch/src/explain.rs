//! Integrated gradients (Sundararajan, Taly and Yan, 2017), the attribution BigQuery ML gives its DNNs: for a
//! row `x`, a baseline `b` and the model's output `F` being explained, feature `i`'s attribution is
//! `(xᵢ − bᵢ) · ∫₀¹ ∂F(b + α(x − b))/∂xᵢ dα`, the integral by the midpoint rule over `steps` points. The
//! attributions add up to `F(x) − F(b)` up to the rule's error (the approximation error reported).
//!
//! `F` is the probability of the class the model predicts for `x` (a classifier), or its output (a
//! regressor). libtorch's autograd gives every step's gradient of a whole batch at once.

use tch::{Device, Kind, Tensor};

use crate::artifact::{ArtifactError, Predictor};

/// What is explained: a classifier's predicted class probability, or a regressor's one output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Explained {
    /// The softmax probability of the most probable class (of `classes` outputs).
    PredictedClass,
    /// The probability of the predicted class of a binary model with one logit (sigmoid).
    PredictedClassOfOneLogit,
    /// The one output of a regressor.
    Output,
}

/// The attributions of a batch of rows.
#[derive(Clone, Debug, PartialEq)]
pub struct Attributions {
    /// `rows × inputs` attributions, row-major.
    pub values: Vec<f32>,
    /// The explained output at each row.
    pub prediction: Vec<f32>,
    /// The explained output at the baseline, for each row's explained class.
    pub baseline_prediction: Vec<f32>,
}

/// The integrated gradients of `rows` rows of row-major `features` against `baseline`, with `steps`
/// interpolation points.
///
/// ```
/// use hearth_torch::artifact::ModelArtifact;
/// use hearth_torch::explain::{Explained, integrated_gradients};
/// use hearth_torch::model::NamedTensor;
/// use hearth_torch::model::ModelSpec;
/// use hearth_torch::train::{Loss, TrainOptions, TrainSettings};
///
/// // y = 2·x₀ − x₁: a linear model's attributions are exactly w·(x − b).
/// let mut options = TrainOptions::new(ModelSpec::Linear { inputs: 2, outputs: 1 }, TrainSettings::default());
/// options.loss = Loss::MeanSquaredError;
/// let tensors = vec![
///     NamedTensor { name: "0.weight".into(), shape: vec![1, 2], values: vec![2.0, -1.0] },
///     NamedTensor { name: "0.bias".into(), shape: vec![1], values: vec![0.5] },
/// ];
/// let predictor = ModelArtifact::new(options, tensors, vec![]).predictor().unwrap();
/// let explained = integrated_gradients(&predictor, &[3.0, 1.0], 1, &[1.0, 1.0], 20, Explained::Output).unwrap();
/// assert_eq!(explained.values, vec![4.0, 0.0]);
/// assert_eq!((explained.prediction[0], explained.baseline_prediction[0]), (5.5, 1.5));
/// ```
pub fn integrated_gradients(
    predictor: &Predictor,
    features: &[f32],
    rows: usize,
    baseline: &[f32],
    steps: usize,
    explained: Explained,
) -> Result<Attributions, ArtifactError> {
    let inputs = predictor.input_width();
    if rows == 0 {
        return Ok(Attributions {
            values: Vec::new(),
            prediction: Vec::new(),
            baseline_prediction: Vec::new(),
        });
    }
    let device = predictor.network().device();
    let shape = [rows as i64, inputs as i64];
    let x = Tensor::f_from_slice(features)?.f_view(shape)?.f_to_device(device)?;
    let b = Tensor::f_from_slice(baseline)?
        .f_view([1, inputs as i64])?
        .f_to_device(device)?;
    let outputs = tch::no_grad(|| predictor.network().forward(&x, false))?;
    let class = match explained {
        Explained::PredictedClass => Some(outputs.f_argmax(-1, true)?),
        Explained::PredictedClassOfOneLogit => Some(outputs.f_gt(0.0)?.f_to_kind(Kind::Int64)?),
        Explained::Output => None,
    };
    let target = |out: &Tensor, class: Option<&Tensor>| -> Result<Tensor, tch::TchError> {
        match (explained, class) {
            (Explained::PredictedClass, Some(class)) => out.f_softmax(-1, Kind::Float)?.f_gather(-1, class, false),
            // σ(z) for class 1, σ(−z) for class 0.
            (Explained::PredictedClassOfOneLogit, Some(class)) => {
                let sign = class.f_to_kind(Kind::Float)?.f_mul_scalar(2.0)?.f_sub_scalar(1.0)?;
                out.f_mul(&sign)?.f_sigmoid()
            }
            _ => out.f_narrow(-1, 0, 1),
        }
    };
    let diff = x.f_sub(&b)?;
    // Every step's points at once: [steps, rows, inputs] → [steps·rows, inputs].
    let alphas = Tensor::f_arange(steps as i64, (Kind::Float, device))?
        .f_add_scalar(0.5)?
        .f_div_scalar(steps as f64)?
        .f_view([steps as i64, 1, 1])?;
    let points = b
        .f_unsqueeze(0)?
        .f_add(&alphas.f_mul(&diff.f_unsqueeze(0)?)?)?
        .f_view([(steps * rows) as i64, inputs as i64])?
        .f_set_requires_grad(true)?;
    let step_class = class.as_ref().map(|c| c.repeat([steps as i64, 1]));
    let explained_at_points = target(&predictor.network().forward(&points, false)?, step_class.as_ref())?;
    let gradients = Tensor::f_run_backward(&[explained_at_points.f_sum(Kind::Float)?], &[&points], false, false)?;
    let average = gradients[0]
        .f_view([steps as i64, rows as i64, inputs as i64])?
        .f_mean_dim(0, false, Kind::Float)?;
    let values = average.f_mul(&diff)?;
    let prediction = target(&outputs, class.as_ref())?;
    let baselines = b.f_expand([rows as i64, inputs as i64], false)?;
    let at_baseline = tch::no_grad(|| predictor.network().forward(&baselines, false))?;
    let baseline_prediction = target(&at_baseline, class.as_ref())?;
    let host = |t: &Tensor| -> Result<Vec<f32>, tch::TchError> {
        Vec::<f32>::try_from(
            &t.f_to_device(Device::Cpu)?
                .f_to_kind(Kind::Float)?
                .f_contiguous()?
                .f_view([-1])?,
        )
    };
    Ok(Attributions {
        values: host(&values)?,
        prediction: host(&prediction)?,
        baseline_prediction: host(&baseline_prediction)?,
    })
}
