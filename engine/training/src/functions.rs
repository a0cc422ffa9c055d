//! What training adds to the sessions and executors built with it ([`TrainingFunctions`], a
//! [`SessionExtension`]): the linear models' and perceptron's scoring functions, the trainer (`hearth.train`)
//! and the full-batch fit that barrier stages run, libtorch's count of the GPUs a local session's tasks get,
//! the codecs that carry trained models to executors, and training's stage classes. Each function lives with
//! its model; this module only lists them. [`DefaultFeatures::with_default_features`] lists preprocessing's
//! and training's extensions in a session's builder.

use std::sync::Arc;

use datafusion::logical_expr::ScalarUDF;
use datafusion::prelude::SessionContext;
use hearth_exec::barrier::{count_trainer_gpus_with, register_builtin};
use hearth_exec::extension::UdfCodec;
use hearth_exec::extension::{Extensions, SessionExtension};
use hearth_exec::session::SessionBuilder;
use hearth_preprocessing::functions::{PreprocessingFeature, PreprocessingFunctions};
use hearth_preprocessing::pipeline::register_stage_classes;
use hearth_torch::train::{cuda_device_count, why_no_gpus};

use crate::classes::TRAINING_CLASSES;
use crate::full_batch::FullBatchFunction;
use crate::linear::{LINEAR_PREDICT, LOGISTIC_SCORES};
use crate::perceptron::PERCEPTRON_SCORES;
use crate::train::{EXPLAIN_UDF_CODEC, NETWORK_UDF_CODEC, register_barrier_functions};

/// Registers training's SQL functions in `ctx`, makes the trainer and the full-batch fit runnable by barrier
/// stages in this process, and has the GPUs libtorch sees be those its tasks get where none were offered.
///
/// ```
/// use datafusion::execution::FunctionRegistry;
///
/// let ctx = datafusion::prelude::SessionContext::new();
/// hearth_training::functions::register_all(&ctx);
/// assert!(ctx.udf("ml_linear_predict").is_ok());
/// assert!(hearth_exec::barrier::function(hearth_training::train::TRAIN_FUNCTION).is_ok());
/// ```
pub fn register_all(ctx: &SessionContext) {
    for udf in [&LOGISTIC_SCORES, &LINEAR_PREDICT, &PERCEPTRON_SCORES] {
        ctx.register_udf(ScalarUDF::clone(udf));
    }
    register_barrier_functions();
    register_builtin(FullBatchFunction);
    count_trainer_gpus_with(libtorch_gpus);
}

/// How many CUDA devices libtorch in this process sees, or libtorch's reason for none.
fn libtorch_gpus() -> Result<usize, String> {
    match why_no_gpus() {
        Some(why) => Err(format!("libtorch: {why}")),
        None => Ok(cuda_device_count()),
    }
}

/// Training's additions as a session's extension: [`register_all`] in every context, the codecs of trained
/// models' functions, and [`TRAINING_CLASSES`] loadable by saved pipelines.
#[derive(Debug, Clone, Copy, Default)]
pub struct TrainingFunctions;

impl SessionExtension for TrainingFunctions {
    fn name(&self) -> &str {
        "hearth_training::functions"
    }

    fn register_functions(&self, ctx: &SessionContext) {
        register_all(ctx);
        register_stage_classes(TRAINING_CLASSES);
    }

    fn udf_codecs(&self) -> Vec<UdfCodec> {
        vec![NETWORK_UDF_CODEC, EXPLAIN_UDF_CODEC]
    }
}

/// The extensions of a session that preprocesses and trains: [`PreprocessingFunctions`] and
/// [`TrainingFunctions`], as a fleet's executors are given them.
///
/// ```
/// assert_eq!(
///     hearth_training::functions::default_extensions().names(),
///     ["hearth_preprocessing::functions", "hearth_training::functions"]
/// );
/// ```
pub fn default_extensions() -> Extensions {
    Extensions::default()
        .with(Arc::new(PreprocessingFunctions))
        .with(Arc::new(TrainingFunctions))
}

/// Lists preprocessing's and training's extensions in a [`SessionBuilder`], as DataFusion's
/// `SessionStateBuilder::with_default_features` lists its own.
///
/// ```
/// use datafusion::execution::FunctionRegistry;
/// use hearth_training::prelude::*;
///
/// let session = Session::builder().with_default_features().local(1);
/// assert!(session.context().udf("ml_linear_predict").is_ok());
/// assert!(session.context().udf("ml_string_index").is_ok());
/// ```
pub trait DefaultFeatures {
    /// The builder with [`PreprocessingFunctions`] and [`TrainingFunctions`].
    fn with_default_features(self) -> Self;
}

impl DefaultFeatures for SessionBuilder {
    fn with_default_features(self) -> Self {
        self.with_preprocessing().with_extension(Arc::new(TrainingFunctions))
    }
}
