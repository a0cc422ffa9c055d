//! hearth's SQL functions: the transforms of fitted stages (scalar functions taking the fitted state as
//! literal arguments) and the aggregates that fit them. All are registered by name in every [`Session`],
//! so they are callable from SQL and resolve on any executor.
//!
//! | function | role |
//! |---|---|
//! | `ml_vector_assemble(handle_invalid, col, ...)` | `VectorAssembler` |
//! | `ml_standard_scale(vector, mean, std, with_mean, with_std)` | `StandardScalerModel` |
//! | `ml_scaled_assemble(handle_invalid, mean, std, with_mean, with_std, col, ...)` | both in one pass (planned from the nested form) |
//! | `ml_string_index(column, labels, handle_invalid)` | `StringIndexerModel` |
//! | `ml_one_hot(index, category_size, drop_last, handle_invalid)` | `OneHotEncoderModel` |
//! | `ml_vector_summary(vector)` (aggregate) | fits `StandardScaler` |
//! | `ml_assembled_summary(handle_invalid, col, ...)` (aggregate) | fits `StandardScaler` on a `VectorAssembler`'s columns |
//! | `ml_label_counts(column)` (aggregate) | fits `StringIndexer` |
//! | `ml_row_uniform(seed, col, ...)` | `random_split`'s key |
//! | `ml_classify(features)` (bound to its model, carried by hearth's codecs) | a trained classifier's `rawPrediction`, `probability`, `prediction` |
//! | `ml_multiclass_state(label, prediction, weight[, probability])` (aggregate) | `MulticlassClassificationEvaluator` |
//! | `ml_binary_state(score, label, weight)` (aggregate) | `BinaryClassificationEvaluator` |
//! | `ml_regression_state(label, prediction, weight)` (aggregate) | `RegressionEvaluator` |
//!
//! [`Session`]: crate::session::Session

mod args;
mod assembly;
mod classify;
mod evaluation_state;
mod label_counts;
mod label_keys;
mod list_state;
mod one_hot;
mod row_uniform;
mod spark_string;
mod standard_scale;
mod string_index;
mod vector_assemble;
mod vector_summary;

use std::sync::{Arc, LazyLock};

use datafusion::logical_expr::{AggregateUDF, Expr, ScalarUDF};
use datafusion::prelude::SessionContext;

pub(crate) use args::{f64_list_literal, string_list_literal};
pub use classify::{ClassifyUdf, NAME as CLASSIFY};
pub use evaluation_state::{Evaluation, EvaluationStateUdaf};
pub use label_counts::LabelCountsUdaf;
pub use one_hot::OneHotUdf;
pub(crate) use one_hot::encoded_width;
pub use row_uniform::RowUniformUdf;
pub(crate) use spark_string::is_indexable;
pub use standard_scale::{ScaledAssembleUdf, StandardScaleUdf};
pub use string_index::StringIndexUdf;
pub use vector_assemble::VectorAssembleUdf;
pub(crate) use vector_assemble::assembled_arguments;
pub use vector_summary::VectorSummaryUdaf;

static VECTOR_ASSEMBLE: LazyLock<Arc<ScalarUDF>> =
    LazyLock::new(|| Arc::new(ScalarUDF::from(VectorAssembleUdf::default())));
static STANDARD_SCALE: LazyLock<Arc<ScalarUDF>> =
    LazyLock::new(|| Arc::new(ScalarUDF::from(StandardScaleUdf::default())));
static SCALED_ASSEMBLE: LazyLock<Arc<ScalarUDF>> =
    LazyLock::new(|| Arc::new(ScalarUDF::from(ScaledAssembleUdf::default())));
static STRING_INDEX: LazyLock<Arc<ScalarUDF>> = LazyLock::new(|| Arc::new(ScalarUDF::from(StringIndexUdf::default())));
static ONE_HOT: LazyLock<Arc<ScalarUDF>> = LazyLock::new(|| Arc::new(ScalarUDF::from(OneHotUdf::default())));
static ROW_UNIFORM: LazyLock<Arc<ScalarUDF>> = LazyLock::new(|| Arc::new(ScalarUDF::from(RowUniformUdf::default())));
static EVALUATION_STATES: LazyLock<[Arc<AggregateUDF>; 3]> = LazyLock::new(|| {
    [Evaluation::Multiclass, Evaluation::Binary, Evaluation::Regression]
        .map(|evaluation| Arc::new(AggregateUDF::from(EvaluationStateUdaf::new(evaluation))))
});
static VECTOR_SUMMARY: LazyLock<Arc<AggregateUDF>> =
    LazyLock::new(|| Arc::new(AggregateUDF::from(VectorSummaryUdaf::of_vectors())));
static ASSEMBLED_SUMMARY: LazyLock<Arc<AggregateUDF>> =
    LazyLock::new(|| Arc::new(AggregateUDF::from(VectorSummaryUdaf::of_assembled_columns())));
static LABEL_COUNTS: LazyLock<Arc<AggregateUDF>> =
    LazyLock::new(|| Arc::new(AggregateUDF::from(LabelCountsUdaf::default())));

/// Registers every hearth function in `ctx`, so SQL can call them by name.
///
/// ```
/// use datafusion::execution::FunctionRegistry;
///
/// let ctx = datafusion::prelude::SessionContext::new();
/// hearth_engine::functions::register_all(&ctx);
/// assert!(ctx.udf("ml_string_index").is_ok());
/// ```
pub fn register_all(ctx: &SessionContext) {
    for udf in [
        &VECTOR_ASSEMBLE,
        &STANDARD_SCALE,
        &SCALED_ASSEMBLE,
        &STRING_INDEX,
        &ONE_HOT,
        &ROW_UNIFORM,
    ] {
        ctx.register_udf(ScalarUDF::clone(udf));
    }
    for udaf in [&VECTOR_SUMMARY, &ASSEMBLED_SUMMARY, &LABEL_COUNTS]
        .into_iter()
        .map(|u| &**u)
    {
        ctx.register_udaf(AggregateUDF::clone(udaf));
    }
    for udaf in EVALUATION_STATES.iter() {
        ctx.register_udaf(AggregateUDF::clone(udaf));
    }
}

/// `ml_vector_assemble(args...)`.
pub(crate) fn vector_assemble(args: Vec<Expr>) -> Expr {
    VECTOR_ASSEMBLE.call(args)
}

/// `ml_standard_scale(args...)`.
pub(crate) fn standard_scale(args: Vec<Expr>) -> Expr {
    STANDARD_SCALE.call(args)
}

/// `ml_scaled_assemble(args...)`.
pub(crate) fn scaled_assemble(args: Vec<Expr>) -> Expr {
    SCALED_ASSEMBLE.call(args)
}

/// `ml_string_index(args...)`.
pub(crate) fn string_index(args: Vec<Expr>) -> Expr {
    STRING_INDEX.call(args)
}

/// `ml_one_hot(args...)`.
pub(crate) fn one_hot(args: Vec<Expr>) -> Expr {
    ONE_HOT.call(args)
}

/// `ml_row_uniform(args...)`.
pub(crate) fn row_uniform(args: Vec<Expr>) -> Expr {
    ROW_UNIFORM.call(args)
}

/// `ml_vector_summary(vector)`.
pub(crate) fn vector_summary(vector: Expr) -> Expr {
    VECTOR_SUMMARY.call(vec![vector])
}

/// `ml_assembled_summary(args...)`.
pub(crate) fn assembled_summary(args: Vec<Expr>) -> Expr {
    ASSEMBLED_SUMMARY.call(args)
}

/// `ml_label_counts(column)`.
pub(crate) fn label_counts(column: Expr) -> Expr {
    LABEL_COUNTS.call(vec![column])
}

/// `ml_classify(features)` bound to the model in `model`.
pub(crate) fn classify(model: Vec<u8>, features: Expr) -> datafusion::error::Result<Expr> {
    Ok(ScalarUDF::from(ClassifyUdf::new(model)?).call(vec![features]))
}

/// The evaluation aggregate `ml_*_state(args...)`.
pub(crate) fn evaluation_state(evaluation: Evaluation, args: Vec<Expr>) -> Expr {
    let index = match evaluation {
        Evaluation::Multiclass => 0,
        Evaluation::Binary => 1,
        Evaluation::Regression => 2,
    };
    EVALUATION_STATES[index].call(args)
}
