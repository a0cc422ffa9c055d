//! The networks a trained model's SQL functions run: loaded from the model's bytes when a call finds none
//! free and kept for the next call — one per caller running at once, so partitions predicting at the same
//! time each run a copy of their own (a libtorch module cannot be shared between threads).

use std::sync::{Mutex, MutexGuard};

use datafusion::error::{DataFusionError, Result};
use hearth_torch::artifact::{ModelArtifact, Predictor};
use hearth_torch::threads::one_intra_op_thread_here;

/// A model's loaded networks not in use now.
#[derive(Default)]
pub(crate) struct Predictors {
    idle: Mutex<Vec<Predictor>>,
}

impl Predictors {
    /// Runs `work` on a network of `model` (bytes of `ModelArtifact::to_bytes`): a free one, or one loaded
    /// now, kept for later calls when `work` is done. A failure to load names `function`.
    pub(crate) fn with<R>(
        &self,
        model: &[u8],
        function: &str,
        work: impl FnOnce(&Predictor) -> Result<R>,
    ) -> Result<R> {
        // Callers are DataFusion's long-lived workers, which predict partitions side by side: each loads and
        // runs networks on its own thread alone, keeping no OpenMP team alive past the call.
        one_intra_op_thread_here();
        let free = self.idle(function)?.pop();
        let predictor = match free {
            Some(predictor) => predictor,
            None => ModelArtifact::from_bytes(model)
                .and_then(|artifact| artifact.predictor())
                .map_err(|e| DataFusionError::Execution(format!("{function}: {e}")))?,
        };
        let result = work(&predictor);
        self.idle(function)?.push(predictor);
        result
    }

    /// How many networks are loaded and free.
    #[cfg(test)]
    pub(crate) fn free(&self) -> usize {
        self.idle.lock().map_or(0, |idle| idle.len())
    }

    fn idle(&self, function: &str) -> Result<MutexGuard<'_, Vec<Predictor>>> {
        self.idle.lock().map_err(|_| {
            DataFusionError::Execution(format!(
                "{function}: a thread failed while holding the model's networks"
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Barrier;

    use hearth_torch::model::{ModelSpec, NamedTensor};
    use hearth_torch::train::{TrainOptions, TrainSettings};

    use super::*;

    fn model() -> Vec<u8> {
        let spec = ModelSpec::Linear { inputs: 2, outputs: 3 };
        let tensors = vec![
            NamedTensor {
                name: "0.weight".into(),
                shape: vec![3, 2],
                values: vec![0.1; 6],
            },
            NamedTensor {
                name: "0.bias".into(),
                shape: vec![3],
                values: vec![0.0; 3],
            },
        ];
        let options = TrainOptions::new(spec, TrainSettings::default());
        ModelArtifact::new(options, tensors, vec![]).to_bytes().unwrap()
    }

    #[test]
    fn callers_at_once_get_a_network_each_and_later_calls_reuse_them() {
        let (networks, model) = (Predictors::default(), model());
        let both_hold_one = Barrier::new(2);
        std::thread::scope(|scope| {
            for _ in 0..2 {
                scope.spawn(|| {
                    networks.with(&model, "ml_test", |predictor| {
                        both_hold_one.wait();
                        Ok(predictor.input_width())
                    })
                });
            }
        });
        assert_eq!(networks.free(), 2);
        for _ in 0..3 {
            assert_eq!(networks.with(&model, "ml_test", |p| Ok(p.output_width())).unwrap(), 3);
        }
        assert_eq!(networks.free(), 2);
    }

    #[test]
    fn a_model_that_does_not_load_is_an_error_naming_the_function() {
        let error = Predictors::default()
            .with(b"not a model", "ml_test", |_| Ok(()))
            .unwrap_err();
        assert!(error.to_string().contains("ml_test: "), "{error}");
    }
}
