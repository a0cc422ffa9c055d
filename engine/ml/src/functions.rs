//! The registry of hearth's SQL functions: the transforms of fitted stages (scalar functions taking the
//! fitted state as literal arguments) and the aggregates that fit them. All are registered by name in every
//! [`Session`] and executor (a [`SessionExtension`]), so they are callable from SQL and resolve on any executor. Each function lives with its
//! stage (`ml_string_index` and `ml_label_counts` in [`feature::string_indexer`](crate::feature::string_indexer),
//! …); this module only lists them.
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
//! | `ml_kmeans_assign(features, centers, measure)` | `KMeansModel`'s prediction |
//! | `ml_kmeans_cost(features, centers, measure)` | k-means\|\|'s sampling weight |
//! | `ml_kmeans_sums(features, weight, centers, measure)` (aggregate) | one iteration of fitting `KMeans` |
//! | `ml_silhouette_stats(prediction, features, weight, measure)` (aggregate) | `ClusteringEvaluator`'s first pass |
//! | `ml_silhouette(prediction, features, weight, stats)` | a row's silhouette, the second pass |
//! | `ml_logistic_scores(features, coefficients, intercepts, threshold)` | `LogisticRegressionModel`'s `rawPrediction`, `probability`, `prediction` |
//! | `ml_linear_predict(features, coefficients, intercept)` | `LinearRegressionModel`'s prediction |
//! | `ml_perceptron_scores(features, layers, weights)` | `MultilayerPerceptronClassificationModel`'s `rawPrediction`, `probability`, `prediction` |
//! | `ml_classify(features)` (bound to its model, carried by hearth's codecs) | a trained classifier's `rawPrediction`, `probability`, `prediction` |
//! | `ml_multiclass_state(label, prediction, weight[, probability])` (aggregate) | `MulticlassClassificationEvaluator` |
//! | `ml_binary_state(score, label, weight)` (aggregate) | `BinaryClassificationEvaluator` |
//! | `ml_regression_state(label, prediction, weight)` (aggregate) | `RegressionEvaluator` |
//! | `ml_metric(evaluation, state, metric)` | a metric of one of those states (`ML.EVALUATE`) |
//! | `ml_roc_curve(binary_state, thresholds)` | the ROC curve's counts per threshold (`ML.ROC_CURVE`) |
//! | `ml_confusion(multiclass_state)` | the confusion matrix's weight per pair (`ML.CONFUSION_MATRIX`) |
//!
//! [`Session`]: crate::session::Session

use std::sync::Arc;

use datafusion::logical_expr::{AggregateUDF, ScalarUDF};
use datafusion::prelude::SessionContext;

use crate::clustering::{KMEANS_ASSIGN, KMEANS_COST, KMEANS_SUMS};
use crate::evaluation::{EVALUATION_STATES, METRIC, SILHOUETTE, SILHOUETTE_STATS, STATE_ROWS};
use crate::extension::SessionExtension;
use crate::feature::one_hot_encoder::ONE_HOT;
use crate::feature::standard_scaler::{ASSEMBLED_SUMMARY, SCALED_ASSEMBLE, STANDARD_SCALE, VECTOR_SUMMARY};
use crate::feature::string_indexer::{LABEL_COUNTS, STRING_INDEX};
use crate::feature::vector_assembler::VECTOR_ASSEMBLE;
use crate::full_batch::FullBatchFunction;
use crate::linear::{LINEAR_PREDICT, LOGISTIC_SCORES};
use crate::perceptron::PERCEPTRON_SCORES;

/// Registers every hearth SQL function in `ctx`, so SQL can call them by name, and makes hearth's
/// trainer and linear models' fit runnable by barrier stages in this process.
///
/// ```
/// use datafusion::execution::FunctionRegistry;
///
/// let ctx = datafusion::prelude::SessionContext::new();
/// hearth_engine::functions::register_all(&ctx);
/// assert!(ctx.udf("ml_string_index").is_ok());
/// assert!(hearth_engine::barrier::function(hearth_engine::train::TRAIN_FUNCTION).is_ok());
/// ```
pub fn register_all(ctx: &SessionContext) {
    let scalars: [&Arc<ScalarUDF>; 12] = [
        &VECTOR_ASSEMBLE,
        &STANDARD_SCALE,
        &SCALED_ASSEMBLE,
        &STRING_INDEX,
        &ONE_HOT,
        &METRIC,
        &KMEANS_ASSIGN,
        &KMEANS_COST,
        &SILHOUETTE,
        &LOGISTIC_SCORES,
        &LINEAR_PREDICT,
        &PERCEPTRON_SCORES,
    ];
    for udf in scalars.into_iter().chain(STATE_ROWS.iter()) {
        ctx.register_udf(ScalarUDF::clone(udf));
    }
    let aggregates: [&Arc<AggregateUDF>; 5] = [
        &VECTOR_SUMMARY,
        &ASSEMBLED_SUMMARY,
        &LABEL_COUNTS,
        &KMEANS_SUMS,
        &SILHOUETTE_STATS,
    ];
    for udaf in aggregates.into_iter().chain(EVALUATION_STATES.iter()) {
        ctx.register_udaf(AggregateUDF::clone(udaf));
    }
    crate::train::register_barrier_functions();
    crate::barrier::register_builtin(FullBatchFunction);
}

inventory::submit! {
    SessionExtension {
        name: "hearth_engine::functions",
        functions: register_all,
        session: SessionExtension::nothing,
    }
}
