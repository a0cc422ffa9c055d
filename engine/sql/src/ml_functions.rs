//! hearth's `ML.` table functions, declared once: the planner refuses a function or a setting that is not in
//! [`ML_FUNCTIONS`], and the guide's reference page is written from it ([`ml_functions_reference`]).

use std::fmt::Write;

/// One `ML.` table function: how a query calls it and what it gives.
#[derive(Debug, Clone, Copy)]
pub struct MlFunction {
    /// The name after `ML.`, lower case (`predict`).
    pub name: &'static str,
    /// How a query calls it, brackets around what may be left out.
    pub syntax: &'static str,
    /// Whether it reads rows after its model (`(SELECT …)` or `TABLE name`).
    pub takes_rows: bool,
    /// The settings it takes after its rows (`STRUCT(0.6 AS threshold)`), when it takes any.
    pub settings: Option<&'static str>,
    /// What it gives: its rows and columns, and which rows it reads without rows given.
    pub gives: &'static str,
}

impl MlFunction {
    /// The call's name in messages and pages (`ML.PREDICT`).
    pub fn call_name(&self) -> String {
        format!("ML.{}", self.name.to_ascii_uppercase())
    }
}

/// Every `ML.` table function, in the order the guide presents them. `rows` is `(SELECT …)` or `TABLE name`.
pub const ML_FUNCTIONS: &[MlFunction] = &[
    MlFunction {
        name: "predict",
        syntax: "ML.PREDICT(MODEL m, rows)",
        takes_rows: true,
        settings: None,
        gives: "The rows with `predicted_<label>` and, for a classifier, `predicted_<label>_probs` \
                (`[{label, prob}, …]`); a k-means model instead adds `centroid_id` (1, 2, …) and `nearest_centroids_distance` \
                (`[{centroid_id, distance}, …]`).",
    },
    MlFunction {
        name: "evaluate",
        syntax: "ML.EVALUATE(MODEL m [, rows])",
        takes_rows: true,
        settings: None,
        gives: "One row of metrics, over the rows given or else the rows held out when training: a classifier's \
                `f1`, `accuracy`, `weightedPrecision`, `weightedRecall`, `logLoss` (and `areaUnderROC`, \
                `areaUnderPR` for two classes); a regressor's `rmse`, `mse`, `mae`, `r2`, `var` and BigQuery's \
                `mean_absolute_error`, `mean_squared_error`, `r2_score`; k-means' `davies_bouldin_index` and \
                `mean_squared_distance` (without rows: its training rows', computed when it was created).",
    },
    MlFunction {
        name: "confusion_matrix",
        syntax: "ML.CONFUSION_MATRIX(MODEL m [, rows] [, settings])",
        takes_rows: true,
        settings: Some(
            "`STRUCT(t AS threshold)`: a binary model predicts its positive class at a probability of `t` or more",
        ),
        gives: "A row per actual label (`expected_label`) and a column per predicted label, named as BigQuery \
                names them; over the held-out rows when no rows are given.",
    },
    MlFunction {
        name: "roc_curve",
        syntax: "ML.ROC_CURVE(MODEL m [, rows] [, settings])",
        takes_rows: true,
        settings: Some(
            "`GENERATE_ARRAY(start, end, step)` or `[t, …]`: the thresholds (none given: every distinct score, or \
             from 200 of them on, Spark's 100 to 199 down-sampled groups)",
        ),
        gives: "A binary classifier's `threshold`, `recall`, `false_positive_rate`, `true_positives`, \
                `false_positives`, `true_negatives`, `false_negatives` per threshold; over the held-out rows \
                when no rows are given.",
    },
    MlFunction {
        name: "explain_predict",
        syntax: "ML.EXPLAIN_PREDICT(MODEL m, rows [, settings])",
        takes_rows: true,
        settings: Some("`STRUCT(k AS top_k_features)`: how many attributions each row keeps (5 by default)"),
        gives: "`ML.PREDICT`'s columns plus `top_feature_attributions` (the largest by magnitude, by integrated \
                gradients from the training rows' mean), `baseline_prediction_value`, `prediction_value` and \
                `approximation_error`; network, `linear_reg` and `logistic_reg` models (not k-means).",
    },
    MlFunction {
        name: "global_explain",
        syntax: "ML.GLOBAL_EXPLAIN(MODEL m [, rows])",
        takes_rows: true,
        settings: None,
        gives: "Each feature's mean attribution magnitude (`feature`, `attribution`) over the held-out rows or \
                the rows given; network, `linear_reg` and `logistic_reg` models (not k-means).",
    },
    MlFunction {
        name: "transform",
        syntax: "ML.TRANSFORM(MODEL m, rows)",
        takes_rows: true,
        settings: None,
        gives: "The fitted preprocessing's output columns (its `TRANSFORM` select list) for each row, and the \
                label when the rows have it; the rows' other columns are not kept.",
    },
    MlFunction {
        name: "training_info",
        syntax: "ML.TRAINING_INFO(MODEL m)",
        takes_rows: false,
        settings: None,
        gives: "A row per epoch: `attempt`, `epoch`, `loss`, `accuracy`, `validation_loss`, \
                `validation_accuracy`, `learning_rate`, `duration_ms`; a linear model solved exactly: a row per \
                solver iteration from 0, its objective in `loss` (a normal-equation solve: row 0 alone, `loss` \
                NULL); k-means: one row of `iterations`, `training_cost`, `cluster_sizes`.",
    },
    MlFunction {
        name: "feature_info",
        syntax: "ML.FEATURE_INFO(MODEL m)",
        takes_rows: false,
        settings: None,
        gives: "A row per fitted preprocessing stage: `stage`, `class`, `uid`, `state` (its labels, sizes, means \
                or standard deviations, as text) and `params` (JSON).",
    },
    MlFunction {
        name: "trial_info",
        syntax: "ML.TRIAL_INFO(MODEL m)",
        takes_rows: false,
        settings: None,
        gives: "A row per tuning trial: `trial_id`, `hyperparameters`, `hparam_tuning_evaluation_metrics`, \
                `training_loss`, `eval_loss`, `status`, `error_message`, `start_seconds`, `seconds`, `is_optimal`.",
    },
    MlFunction {
        name: "centroids",
        syntax: "ML.CENTROIDS(MODEL m)",
        takes_rows: false,
        settings: None,
        gives: "A k-means model's centroids: a row per centroid and feature (`centroid_id`, `feature`, \
                `numerical_value` in the column's own units, or a string column's `categorical_value`).",
    },
    MlFunction {
        name: "weights",
        syntax: "ML.WEIGHTS(MODEL m [, settings])",
        takes_rows: false,
        settings: Some(
            "`STRUCT(TRUE AS standardize)`: each number's weight per standard deviation instead of per unit",
        ),
        gives: "A linear model's weights in its input columns' units: `processed_input` (the intercept as \
                `__INTERCEPT__`), `weight`, a string column's `category_weights` (`[{category, weight}, …]`), \
                and `class_label` for a multinomial logistic regression.",
    },
];

/// The `ML.` function `name` (lower case), when hearth has it.
pub(crate) fn ml_function(name: &str) -> Option<&'static MlFunction> {
    ML_FUNCTIONS.iter().find(|function| function.name == name)
}

/// The `ML.` table functions as a Markdown page, from [`ML_FUNCTIONS`].
///
/// ```
/// let page = hearth_sql::ml_functions_reference();
/// assert!(page.contains("| `ML.PREDICT(MODEL m, rows)` |"));
/// ```
pub fn ml_functions_reference() -> String {
    let mut page = String::from(
        "# `ML.` table functions\n\n\
         <!-- Written from ML_FUNCTIONS (engine/sql/src/ml_functions.rs) by `hearth_sql::ml_functions_reference`; \
         a test fails when this page differs from it: `HEARTH_BLESS_DOCS=1 ./dev test docs_reference` rewrites \
         it. -->\n\n\
         BigQuery ML's table functions over a model of the catalog, usable in any `FROM`. `MODEL m` names the \
         model; `rows` is `(SELECT …)` or `TABLE name`. A function hearth does not have, or rows or settings a \
         function does not take, are refused by name.\n\n\
         | call | settings | gives |\n|---|---|---|\n",
    );
    for function in ML_FUNCTIONS {
        let _ = writeln!(
            page,
            "| `{}` | {} | {} |",
            function.syntax,
            function.settings.unwrap_or("none"),
            function.gives
        );
    }
    page
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_syntax_calls_its_own_function() {
        for function in ML_FUNCTIONS {
            assert!(
                function
                    .syntax
                    .starts_with(&format!("{}(MODEL m", function.call_name()))
            );
            assert_eq!(
                function.syntax.contains("settings"),
                function.settings.is_some(),
                "{}",
                function.name
            );
        }
    }
}
