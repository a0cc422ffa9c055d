//! The SQL and barrier functions training adds to every session and executor (a [`SessionExtension`]): the
//! linear models' and perceptron's scoring functions, the trainer (`hearth.train`) and the full-batch fit that
//! barrier stages run, and libtorch's count of the GPUs a local session's tasks get. Each function lives with its
//! model; this module only lists them.
//!
//! [`SessionExtension`]: hearth_exec::extension::SessionExtension

use datafusion::logical_expr::ScalarUDF;
use datafusion::prelude::SessionContext;
use hearth_exec::barrier::{count_trainer_gpus_with, register_builtin};
use hearth_exec::extension::SessionExtension;
use hearth_torch::train::{cuda_device_count, why_no_gpus};

use crate::full_batch::FullBatchFunction;
use crate::linear::{LINEAR_PREDICT, LOGISTIC_SCORES};
use crate::perceptron::PERCEPTRON_SCORES;
use crate::train::register_barrier_functions;

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

inventory::submit! {
    SessionExtension {
        name: "hearth_training::functions",
        functions: register_all,
        session: SessionExtension::nothing,
    }
}
