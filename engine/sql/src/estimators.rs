//! The estimator `model_type` names, configured from a statement's options: Spark's linear models solved
//! exactly, a network trained by mini-batches through the barrier stage (an MLP classifier or regressor, a
//! linear model under `optimize_strategy = 'MINI_BATCH'`), or Spark's k-means.

use hearth_exec::error::Result;
use hearth_preprocessing::pipeline::PipelineStage;
use hearth_training::linear::{LinearRegression, LogisticRegression};
use hearth_training::train::{
    Architecture, Classifier, LinearClassifier, LinearRegressor, MlpClassifier, MlpRegressor,
};

use super::class_weighted::ClassWeighted;
use super::kmeans;
use super::options::{ModelOptions, ModelType, OptimizeStrategy};
use super::preprocessing::{FEATURES, HELD_OUT};

/// The estimator `options.model_type` names, reading [`FEATURES`] and the label column `label`; `weights` are
/// the classes' loss weights by class index (see [`class_weights`](super::class_weights)). Under `early_stop`
/// it validates on the rows [`HELD_OUT`] marks.
pub(super) fn estimator(options: &ModelOptions, label: &str, weights: Option<&[f64]>) -> Result<PipelineStage> {
    let weights = weights.map(<[f64]>::to_vec);
    if options.model_type.is_linear() && !options.trains_by_mini_batch() {
        return Ok(solved_exactly(options, label, weights));
    }
    /// The options every network estimator takes.
    macro_rules! configured {
        ($estimator:expr) => {{
            let mut estimator = $estimator
                .features_col(FEATURES)
                .label_col(label)
                .optimizer(options.optimizer.clone())
                .epochs(options.epochs)
                .batch_size(options.batch_size)
                .seed(options.seed)
                .device(options.device.clone())
                .precision(options.precision)
                .workers(options.workers)
                .strategy(options.strategy.clone())
                .max_attempts(options.max_attempts);
            if let Some(timeout) = options.timeout {
                estimator = estimator.timeout(timeout);
            }
            if let Some(dir) = &options.checkpoint_dir {
                estimator = estimator.checkpoint_dir(dir.clone());
            }
            if let Some(mib) = options.max_rank_memory_mb {
                estimator = estimator.memory_budget(mib.saturating_mul(1 << 20));
            }
            if let Some(rows) = options.shuffle_buffer_rows {
                estimator = estimator.shuffle_buffer_rows(rows);
            }
            if options.early_stop {
                estimator = estimator
                    .validation_indicator_col(HELD_OUT)
                    .early_stopping_relative(1, options.min_rel_progress);
            }
            estimator
        }};
    }
    Ok(match options.model_type {
        ModelType::MlpClassifier => weighted(
            configured!(
                MlpClassifier::new()
                    .hidden_layers(options.hidden_units.clone())
                    .activation(options.activation)
                    .dropout(options.dropout)
            ),
            weights,
        )
        .into(),
        ModelType::LogisticReg => weighted(configured!(LinearClassifier::new()), weights).into(),
        ModelType::MlpRegressor => configured!(
            MlpRegressor::new()
                .hidden_layers(options.hidden_units.clone())
                .activation(options.activation)
                .dropout(options.dropout)
        )
        .into(),
        ModelType::LinearReg => configured!(LinearRegressor::new()).into(),
        ModelType::KMeans => kmeans::estimator(options).into(),
    })
}

/// Spark's estimator of a linear model solved exactly: the penalty `l1_reg · ‖w‖₁ + l2_reg · ‖w‖²` as Spark's
/// `regParam` λ = `l1_reg + 2 · l2_reg` and `elasticNetParam` α = `l1_reg / λ` (λ·α is the L1 weight, λ·(1 − α)/2
/// the L2 weight), `max_iterations` as `maxIter`; `class_weights` as each row's weight (see
/// [`ClassWeighted`]).
fn solved_exactly(options: &ModelOptions, label: &str, weights: Option<Vec<f64>>) -> PipelineStage {
    let reg_param = options.l1_reg + 2.0 * options.l2_reg;
    let elastic_net_param = if reg_param > 0.0 {
        options.l1_reg / reg_param
    } else {
        0.0
    };
    /// The settings both linear estimators take.
    macro_rules! configured {
        ($estimator:expr) => {
            $estimator
                .features_col(FEATURES)
                .label_col(label)
                .reg_param(reg_param)
                .elastic_net_param(elastic_net_param)
                .max_iter(options.epochs)
                .workers(options.workers)
        };
    }
    match options.model_type {
        ModelType::LinearReg => configured!(LinearRegression::new())
            .solver(match options.optimize_strategy {
                OptimizeStrategy::NormalEquation => "normal",
                OptimizeStrategy::BatchGradientDescent => "l-bfgs",
                OptimizeStrategy::Auto | OptimizeStrategy::MiniBatch => "auto",
            })
            .into(),
        _ => match weights {
            Some(weights) => PipelineStage::estimator(ClassWeighted::new(
                configured!(LogisticRegression::new()),
                label,
                weights,
            )),
            None => configured!(LogisticRegression::new()).into(),
        },
    }
}

/// `classifier` with loss weights per class, if any.
fn weighted<A: Architecture>(classifier: Classifier<A>, weights: Option<Vec<f64>>) -> Classifier<A> {
    match weights {
        Some(weights) => classifier.class_weights(weights),
        None => classifier,
    }
}
