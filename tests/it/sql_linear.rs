//! SQL's linear models solved as BigQuery ML and Spark solve them: `linear_reg` by the normal equation is
//! ordinary least squares (solved here by hand on the same rows) on a label in the thousands, by L-BFGS the
//! same; `logistic_reg` is Spark's `LogisticRegression` on the rows its preprocessing makes; `ML.WEIGHTS` gives
//! the weights in the query's columns' units; `class_weights` weigh its rows; a linear regression's explanations add up
//! exactly.

use std::collections::BTreeMap;

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Float64Type, Int64Type};
use datafusion::logical_expr::{ident, lit, when};
use hearth::prelude::*;
use hearth::sql::ModelCatalog;

use super::sql::{credit_session, number, rows, run_script};

/// One row of German Credit: `duration`, `age`, `installment_commitment`, `housing` and `credit_amount` (mean
/// about 3,271).
struct Credit {
    numbers: [f64; 3],
    housing: String,
    amount: f64,
}

async fn credit_rows(session: &Session) -> Vec<Credit> {
    let batches = run_script(
        session,
        "SELECT CAST(duration AS DOUBLE), CAST(age AS DOUBLE), CAST(installment_commitment AS DOUBLE), housing,
                CAST(credit_amount AS DOUBLE) FROM credit",
    )
    .await
    .unwrap();
    let mut out = Vec::new();
    for batch in &batches {
        let number = |i: usize| batch.column(i).as_primitive::<Float64Type>().clone();
        let (duration, age, installment, amount) = (number(0), number(1), number(2), number(4));
        let housing = cast(batch.column(3), &DataType::Utf8).unwrap();
        let housing = housing.as_string::<i32>();
        for r in 0..batch.num_rows() {
            out.push(Credit {
                numbers: [duration.value(r), age.value(r), installment.value(r)],
                housing: housing.value(r).to_string(),
                amount: amount.value(r),
            });
        }
    }
    out
}

/// Ordinary least squares by hand on `rows`: the coefficients of an intercept, the numbers and an indicator of
/// each of `housing` (none: housing left out), and the fit's r².
fn ordinary_least_squares(rows: &[Credit], housing: &[String]) -> (Vec<f64>, f64) {
    let design: Vec<Vec<f64>> = rows
        .iter()
        .map(|row| {
            let mut x = vec![1.0];
            x.extend(row.numbers);
            x.extend(housing.iter().map(|h| f64::from(u8::from(*h == row.housing))));
            x
        })
        .collect();
    let amounts: Vec<f64> = rows.iter().map(|row| row.amount).collect();
    let beta = least_squares(&design, &amounts);
    let mean = amounts.iter().sum::<f64>() / amounts.len() as f64;
    let fitted = |x: &[f64]| x.iter().zip(&beta).map(|(x, b)| x * b).sum::<f64>();
    let residual: f64 = design.iter().zip(&amounts).map(|(x, y)| (y - fitted(x)).powi(2)).sum();
    let total: f64 = amounts.iter().map(|y| (y - mean).powi(2)).sum();
    (beta, 1.0 - residual / total)
}

/// Least squares by hand: the coefficients of `design`'s columns for `y`, from the normal equations solved by
/// Gaussian elimination with partial pivoting.
fn least_squares(design: &[Vec<f64>], y: &[f64]) -> Vec<f64> {
    let p = design[0].len();
    let mut a = vec![vec![0.0; p + 1]; p];
    for (row, &target) in design.iter().zip(y) {
        for i in 0..p {
            for j in 0..p {
                a[i][j] += row[i] * row[j];
            }
            a[i][p] += row[i] * target;
        }
    }
    for column in 0..p {
        let pivot = (column..p)
            .max_by(|&i, &j| a[i][column].abs().total_cmp(&a[j][column].abs()))
            .unwrap();
        a.swap(column, pivot);
        let pivot_row = a[column].clone();
        for (i, row) in a.iter_mut().enumerate() {
            if i != column {
                let factor = row[column] / pivot_row[column];
                for (value, pivot) in row.iter_mut().zip(&pivot_row).skip(column) {
                    *value -= factor * pivot;
                }
            }
        }
    }
    (0..p).map(|i| a[i][p] / a[i][i]).collect()
}

/// `ML.WEIGHTS`' rows: each input's weight (NULL for a string column) and category weights.
fn weights_by_input(batches: &[RecordBatch]) -> BTreeMap<String, (Option<f64>, BTreeMap<String, f64>)> {
    let mut out = BTreeMap::new();
    for batch in batches {
        let inputs = batch.column_by_name("processed_input").unwrap().as_string::<i32>();
        let weights = batch.column_by_name("weight").unwrap().as_primitive::<Float64Type>();
        let categories = batch.column_by_name("category_weights").unwrap().as_list::<i32>();
        for r in 0..batch.num_rows() {
            let mut by_category = BTreeMap::new();
            if categories.is_valid(r) {
                let list = categories.value(r);
                let list = list.as_struct();
                let names = list.column(0).as_string::<i32>();
                let values = list.column(1).as_primitive::<Float64Type>();
                for i in 0..list.len() {
                    by_category.insert(names.value(i).to_string(), values.value(i));
                }
            }
            let weight = weights.is_valid(r).then(|| weights.value(r));
            out.insert(inputs.value(r).to_string(), (weight, by_category));
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn linear_reg_is_least_squares_whatever_the_label_scale() {
    let models = tempfile::tempdir().unwrap();
    let session = credit_session(models.path()).await;
    let create = |name: &str, strategy: &str, columns: &str| {
        format!(
            "CREATE MODEL {name} OPTIONS (model_type = 'linear_reg', input_label_cols = ['credit_amount'], workers = 2,
                 data_split_method = 'no_split', optimize_strategy = '{strategy}')
             AS SELECT duration, age, installment_commitment, {columns} credit_amount FROM credit"
        )
    };
    run_script(&session, &create("normal", "normal_equation", ""))
        .await
        .unwrap();
    run_script(&session, &create("lbfgs", "batch_gradient_descent", ""))
        .await
        .unwrap();
    // Every housing value has an indicator beside the intercept: the matrix is singular and the solve falls
    // back to L-BFGS, as Spark's does.
    run_script(&session, &create("housing", "auto_strategy", "housing,"))
        .await
        .unwrap();
    let credit = credit_rows(&session).await;
    let r2 = |model: &str| {
        let session = session.clone();
        let sql = format!("SELECT * FROM ML.EVALUATE(MODEL {model}, TABLE credit)");
        async move { number(&run_script(&session, &sql).await.unwrap(), "r2_score") }
    };
    let weights = |model: &str| {
        let session = session.clone();
        let sql = format!("SELECT * FROM ML.WEIGHTS(MODEL {model})");
        async move { weights_by_input(&run_script(&session, &sql).await.unwrap()) }
    };
    let close = |a: f64, b: f64, tolerance: f64| (a - b).abs() <= tolerance * b.abs().max(1.0);

    // The numbers alone: the normal equation is least squares, weights in the columns' units (to the features
    // vector's single precision).
    let (beta, r2_by_hand) = ordinary_least_squares(&credit, &[]);
    let normal = weights("normal").await;
    for (input, expected) in ["__INTERCEPT__", "duration", "age", "installment_commitment"]
        .iter()
        .zip(&beta)
    {
        assert!(
            close(normal[*input].0.unwrap(), *expected, 1e-6),
            "{input}: {normal:?} {beta:?}"
        );
    }
    for (model, tolerance) in [("normal", 1e-9), ("lbfgs", 1e-6)] {
        let r2 = r2(model).await;
        println!("linear_reg ({model}) of credit_amount: r2 {r2:.9}, least squares by hand {r2_by_hand:.9}");
        assert!(
            (r2 - r2_by_hand).abs() < tolerance,
            "{model}: r2 {r2} against {r2_by_hand}"
        );
    }

    // With housing: each value's level (the intercept plus its weight) is least squares' level.
    let with_housing = weights("housing").await;
    let values: Vec<String> = with_housing["housing"].1.keys().cloned().collect();
    assert_eq!(values.len(), 3, "{with_housing:?}");
    let (beta, r2_by_hand) = ordinary_least_squares(&credit, &values[1..]);
    let intercept = with_housing["__INTERCEPT__"].0.unwrap();
    for (i, value) in values.iter().enumerate() {
        let level = beta[0] + if i == 0 { 0.0 } else { beta[3 + i] };
        let weighted = intercept + with_housing["housing"].1[value];
        assert!(close(weighted, level, 1e-4), "{value}: {with_housing:?} {beta:?}");
    }
    let r2 = r2("housing").await;
    println!("linear_reg with housing: r2 {r2:.9}, least squares by hand {r2_by_hand:.9}");
    assert!((r2 - r2_by_hand).abs() < 1e-6, "r2 {r2} against {r2_by_hand}");

    // With a TRANSFORM, the weights are the transform's outputs' (BigQuery's processed inputs): a standardized
    // duration weighs its standard deviation times the raw duration's weight, and the one-hot output its
    // categories.
    run_script(
        &session,
        "CREATE MODEL shaped
             TRANSFORM (ML.STANDARD_SCALER(duration) OVER () AS scaled_duration, age, installment_commitment,
                        ML.ONE_HOT_ENCODER(housing) OVER () AS housing_hot, credit_amount)
             OPTIONS (model_type = 'linear_reg', input_label_cols = ['credit_amount'], workers = 2,
                      data_split_method = 'no_split')
         AS SELECT duration, age, installment_commitment, housing, credit_amount FROM credit",
    )
    .await
    .unwrap();
    let shaped = weights("shaped").await;
    let inputs: Vec<&str> = shaped.keys().map(String::as_str).collect();
    assert_eq!(
        inputs,
        [
            "__INTERCEPT__",
            "age",
            "housing_hot",
            "installment_commitment",
            "scaled_duration"
        ]
    );
    let categories: Vec<&String> = shaped["housing_hot"].1.keys().collect();
    assert_eq!(categories, values.iter().collect::<Vec<_>>(), "{shaped:?}");
    let durations: Vec<f64> = credit.iter().map(|row| row.numbers[0]).collect();
    let mean = durations.iter().sum::<f64>() / durations.len() as f64;
    let variance = durations.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / (durations.len() - 1) as f64;
    let per_deviation = shaped["scaled_duration"].0.unwrap() / variance.sqrt();
    assert!(
        close(per_deviation, with_housing["duration"].0.unwrap(), 1e-4),
        "{shaped:?} against {with_housing:?}"
    );

    // Standardized (BigQuery's STRUCT(TRUE AS standardize)): a number weighs its weight per unit times its
    // training values' deviation, whether the automatic preprocessing standardized it, a TRANSFORM did, or
    // nothing did; the intercept is the prediction at the numbers' means; categories keep their weights.
    let moments = |values: &[f64]| {
        let mean = values.iter().sum::<f64>() / values.len() as f64;
        let variance = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (values.len() - 1) as f64;
        (mean, variance.sqrt())
    };
    let column = |i: usize| credit.iter().map(|row| row.numbers[i]).collect::<Vec<f64>>();
    let numbers = [
        ("duration", "scaled_duration", moments(&column(0))),
        ("age", "age", moments(&column(1))),
        ("installment_commitment", "installment_commitment", moments(&column(2))),
    ];
    for (model, per_unit) in [("housing", &with_housing), ("shaped", &shaped)] {
        let sql = format!("SELECT * FROM ML.WEIGHTS(MODEL {model}, STRUCT(TRUE AS standardize))");
        let standardized = weights_by_input(&run_script(&session, &sql).await.unwrap());
        let mut at_means = per_unit["__INTERCEPT__"].0.unwrap();
        for (raw, transformed, (mean, std)) in numbers {
            // The TRANSFORM's scaled duration (Spark's default: divided by its deviation, not centred) has
            // deviation 1 over the training rows.
            let (input, mean, std) = match (model, raw) {
                ("shaped", "duration") => (transformed, mean / std, 1.0),
                _ => (raw, mean, std),
            };
            let weight = per_unit[input].0.unwrap();
            at_means += weight * mean;
            let expected = weight * std;
            assert!(
                close(standardized[input].0.unwrap(), expected, 1e-6),
                "{model} {input}: {standardized:?} against {expected}"
            );
        }
        let intercept = standardized["__INTERCEPT__"].0.unwrap();
        assert!(
            close(intercept, at_means, 1e-6),
            "{model}: {intercept} against {at_means}"
        );
        let housing = if model == "shaped" { "housing_hot" } else { "housing" };
        assert_eq!(standardized[housing].1, per_unit[housing].1, "{model}");
    }
    let refused = run_script(&session, "SELECT * FROM ML.WEIGHTS(MODEL shaped, STRUCT(1 AS scale))")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("unknown setting scale") && refused.contains("standardize"),
        "{refused}"
    );

    // The normal equation has no iterations, L-BFGS its objective per iteration.
    let info = |model: &str| {
        let session = session.clone();
        let sql = format!("SELECT epoch, loss FROM ML.TRAINING_INFO(MODEL {model}) ORDER BY epoch");
        async move { run_script(&session, &sql).await.unwrap() }
    };
    let direct = info("normal").await;
    assert_eq!(rows(&direct), 1);
    assert!(
        direct[0].column(1).is_null(0),
        "Spark reports no objective for a Cholesky solve"
    );
    let iterated = info("lbfgs").await;
    let lbfgs = ModelCatalog::new(models.path()).get("lbfgs").unwrap();
    let solved = lbfgs.pipeline.last_stage::<LinearRegressionModel>().unwrap().summary();
    assert!(rows(&iterated) > 2);
    assert_eq!(rows(&iterated), solved.objective_history.len());

    // Exact explanations: the attributions add up to the prediction less the mean row's.
    let explained = run_script(
        &session,
        "SELECT MAX(ABS(approximation_error)) AS error, MAX(ABS(prediction_value - baseline_prediction_value)) AS moved
         FROM ML.EXPLAIN_PREDICT(MODEL normal, TABLE credit)",
    )
    .await
    .unwrap();
    let (error, moved) = (number(&explained, "error"), number(&explained, "moved"));
    assert!(
        error < 1e-3 * moved,
        "a linear model's integrated gradients are exact: {error} of {moved}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logistic_reg_is_sparks_logistic_regression_on_its_preprocessed_rows() {
    let models = tempfile::tempdir().unwrap();
    let session = credit_session(models.path()).await;
    run_script(
        &session,
        "CREATE MODEL risk OPTIONS (model_type = 'logistic_reg', input_label_cols = ['class'], workers = 2,
             l1_reg = 0.001, l2_reg = 0.01, data_split_method = 'no_split')
         AS SELECT duration, age, housing, purpose, class FROM credit",
    )
    .await
    .unwrap();
    let model = ModelCatalog::new(models.path()).get("risk").unwrap();
    let fitted = model.pipeline.last_stage::<LogisticRegressionModel>().unwrap();

    // Spark's estimator, given the rows the model's preprocessing makes: λ = l1 + 2·l2, α = l1 / λ.
    let stages = model.pipeline.stages();
    let credit = session.context().table("credit").await.unwrap();
    let preprocessed = stages[..stages.len() - 1]
        .iter()
        .try_fold(credit, |df, stage| stage.transform(&df))
        .unwrap();
    let spark = LogisticRegression::new()
        .features_col(fitted.features_col())
        .label_col(fitted.label_col())
        .reg_param(0.021)
        .elastic_net_param(0.001 / 0.021)
        .fit(&preprocessed)
        .await
        .unwrap();
    let agree = |a: &[f64], b: &[f64]| a.iter().zip(b).all(|(x, y)| (x - y).abs() <= 1e-6 * y.abs().max(1e-3));
    assert!(
        agree(fitted.coefficients(), spark.coefficients()),
        "{:?}\n{:?}",
        fitted.coefficients(),
        spark.coefficients()
    );
    assert!(agree(&[fitted.intercept()], &[spark.intercept()]));
    assert_eq!(fitted.training_rows(), 1000);

    // ML.WEIGHTS of a binomial model: one set, a number's weight per unit (its coefficient over its standard
    // deviation), every purpose but the dropped one by category.
    let weights = run_script(&session, "SELECT * FROM ML.WEIGHTS(MODEL risk)")
        .await
        .unwrap();
    assert!(weights[0].schema().field_with_name("class_label").is_err());
    let weights = weights_by_input(&weights);
    let scaled = stages
        .iter()
        .find_map(|stage| stage.downcast_ref::<StandardScalerModel>())
        .unwrap();
    let duration = fitted.coefficients()[0] / scaled.std()[0];
    assert!((weights["duration"].0.unwrap() - duration).abs() < 1e-12, "{weights:?}");
    assert!(weights["purpose"].1.len() >= 8, "{weights:?}");
    assert!(weights["purpose"].0.is_none());

    // A multinomial model's weights: a set per class, named in class_label.
    run_script(
        &session,
        "CREATE MODEL home OPTIONS (model_type = 'logistic_reg', input_label_cols = ['housing'],
             data_split_method = 'no_split')
         AS SELECT duration, age, credit_amount, housing FROM credit",
    )
    .await
    .unwrap();
    let home = ModelCatalog::new(models.path()).get("home").unwrap();
    let fitted_home = home.pipeline.last_stage::<LogisticRegressionModel>().unwrap();
    assert!(fitted_home.is_multinomial());
    let per_class = run_script(
        &session,
        "SELECT class_label, weight FROM ML.WEIGHTS(MODEL home) WHERE processed_input = 'duration'",
    )
    .await
    .unwrap();
    let labels = home.entry.labels.clone().unwrap();
    let home_scaler = home
        .pipeline
        .stages()
        .iter()
        .find_map(|stage| stage.downcast_ref::<StandardScalerModel>())
        .unwrap();
    let mut seen = 0;
    for batch in &per_class {
        let classes = batch.column(0).as_string::<i32>();
        let weights = batch.column(1).as_primitive::<Float64Type>();
        for r in 0..batch.num_rows() {
            let k = labels.iter().position(|l| l == classes.value(r)).unwrap();
            let expected = fitted_home.coefficient_matrix()[k][0] / home_scaler.std()[0];
            assert!((weights.value(r) - expected).abs() < 1e-12, "{}", classes.value(r));
            seen += 1;
        }
    }
    assert_eq!(seen, 3, "one duration weight per housing value");

    // Evaluated, predicted and explained as any classifier.
    let evaluated = run_script(&session, "SELECT * FROM ML.EVALUATE(MODEL risk, TABLE credit)")
        .await
        .unwrap();
    assert!(number(&evaluated, "accuracy") > 0.69, "{evaluated:?}");
    assert!(number(&evaluated, "areaUnderROC") > 0.6);
    let predicted = run_script(
        &session,
        "SELECT COUNT(*) AS n FROM ML.PREDICT(MODEL risk, TABLE credit) WHERE predicted_class IN ('good', 'bad')",
    )
    .await
    .unwrap();
    assert_eq!(predicted[0].column(0).as_primitive::<Int64Type>().value(0), 1000);
    let explained = run_script(
        &session,
        "SELECT feature FROM ML.GLOBAL_EXPLAIN(MODEL risk, TABLE credit) ORDER BY attribution DESC LIMIT 1",
    )
    .await
    .unwrap();
    assert_eq!(rows(&explained), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn options_of_mini_batch_training_name_the_strategy_that_takes_them() {
    let models = tempfile::tempdir().unwrap();
    let session = credit_session(models.path()).await;
    let error = |options: &str| {
        let session = session.clone();
        let sql = format!(
            "CREATE MODEL m OPTIONS (model_type = 'logistic_reg', input_label_cols = ['class'], {options})
             AS SELECT age, class FROM credit"
        );
        async move { run_script(&session, &sql).await.unwrap_err().to_string() }
    };
    let batch = error("batch_size = 32").await;
    assert!(
        batch.contains("option batch_size") && batch.contains("optimize_strategy = 'MINI_BATCH'"),
        "{batch}"
    );
    let normal = error("optimize_strategy = 'normal_equation'").await;
    assert!(normal.contains("'linear_reg' only"), "{normal}");
    let unknown = error("optimize_strategy = 'newton'").await;
    assert!(unknown.contains("option optimize_strategy: expected"), "{unknown}");
    let l1 = error("optimize_strategy = 'mini_batch', l1_reg = 0.1").await;
    assert!(l1.contains("option l1_reg"), "{l1}");
    let mlp = run_script(
        &session,
        "CREATE MODEL n OPTIONS (model_type = 'dnn_classifier', input_label_cols = ['class'], l1_reg = 0.1)
         AS SELECT age, class FROM credit",
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(mlp.contains("only 'linear_reg' and 'logistic_reg' take it"), "{mlp}");

    // MINI_BATCH trains the network, whose options it takes; ML.WEIGHTS is for the exact models.
    run_script(
        &session,
        "CREATE MODEL net OPTIONS (model_type = 'logistic_reg', input_label_cols = ['class'], max_iterations = 1,
             optimize_strategy = 'mini_batch', batch_size = 32, learn_rate = 0.01)
         AS SELECT age, class FROM credit",
    )
    .await
    .unwrap();
    let model = ModelCatalog::new(models.path()).get("net").unwrap();
    assert!(model.pipeline.last_stage::<ClassificationModel>().is_some());
    let weights = run_script(&session, "SELECT * FROM ML.WEIGHTS(MODEL net)")
        .await
        .unwrap_err()
        .to_string();
    assert!(weights.contains("mini-batches"), "{weights}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn class_weights_weigh_an_exact_logistic_regressions_rows() {
    let models = tempfile::tempdir().unwrap();
    let session = credit_session(models.path()).await;
    let create = |name: &str, weights: &str| {
        format!(
            "CREATE MODEL {name} OPTIONS (model_type = 'logistic_reg', input_label_cols = ['class'],
                 data_split_method = 'no_split'{weights})
             AS SELECT duration, age, credit_amount, class FROM credit"
        )
    };
    run_script(&session, &create("plain", "")).await.unwrap();
    run_script(&session, &create("weighted", ", class_weights = [STRUCT('bad', 3.0)]"))
        .await
        .unwrap();
    let catalog = ModelCatalog::new(models.path());
    let model = catalog.get("weighted").unwrap();
    let fitted = model.pipeline.last_stage::<LogisticRegressionModel>().unwrap();

    // Spark's estimator with a weight column: 3 on the rows labelled bad, 1 on the others.
    let labels = model.entry.labels.clone().unwrap();
    let bad = labels.iter().position(|l| l == "bad").unwrap() as f64;
    let stages = model.pipeline.stages();
    let preprocessed = stages[..stages.len() - 1]
        .iter()
        .try_fold(session.context().table("credit").await.unwrap(), |df, stage| {
            stage.transform(&df)
        })
        .unwrap();
    let weight = when(ident(fitted.label_col()).eq(lit(bad)), lit(3.0))
        .otherwise(lit(1.0))
        .unwrap();
    let spark = LogisticRegression::new()
        .features_col(fitted.features_col())
        .label_col(fitted.label_col())
        .weight_col("w")
        .fit(&preprocessed.with_column("w", weight).unwrap())
        .await
        .unwrap();
    let agree = fitted
        .coefficients()
        .iter()
        .zip(spark.coefficients())
        .all(|(x, y)| (x - y).abs() <= 1e-6 * y.abs().max(1e-3));
    assert!(agree, "{:?}\n{:?}", fitted.coefficients(), spark.coefficients());

    // Weighing bad credit three times predicts it more often; predicting needs no label.
    let predicted_bad = |name: &str| {
        let session = session.clone();
        let sql = format!(
            "SELECT COUNT(*) AS n FROM ML.PREDICT(MODEL {name}, (SELECT duration, age, credit_amount FROM credit))
             WHERE predicted_class = 'bad'"
        );
        async move { number(&run_script(&session, &sql).await.unwrap(), "n") }
    };
    let (plain, weighted) = (predicted_bad("plain").await, predicted_bad("weighted").await);
    assert!(
        weighted > plain + 100.0,
        "bad predicted {plain} times unweighted, {weighted} weighted"
    );

    // auto_class_weights = TRUE: 700 good and 300 bad rows weigh 1000 / (2 × 700) and 1000 / (2 × 300), the
    // same model as those weights given by hand.
    run_script(&session, &create("balanced", ", auto_class_weights = TRUE"))
        .await
        .unwrap();
    let by_hand = format!(
        ", class_weights = [STRUCT('good', {}), STRUCT('bad', {})]",
        1000.0 / 1400.0,
        1000.0 / 600.0
    );
    run_script(&session, &create("by_hand", &by_hand)).await.unwrap();
    let coefficients = |name: &str| {
        let model = catalog.get(name).unwrap();
        let fitted = model.pipeline.last_stage::<LogisticRegressionModel>().unwrap();
        (fitted.coefficients().to_vec(), fitted.intercept())
    };
    let (balanced, by_hand) = (coefficients("balanced"), coefficients("by_hand"));
    assert_eq!(balanced, by_hand);
    assert!(balanced.0 != coefficients("plain").0);
    let balanced_bad = predicted_bad("balanced").await;
    assert!(
        balanced_bad > plain + 100.0,
        "bad predicted {plain} times unweighted, {balanced_bad} balanced"
    );

    // Both ways at once, and classes for a regressor, are refused naming the option.
    let refused = |sql: String| {
        let session = session.clone();
        async move { run_script(&session, &sql).await.unwrap_err().to_string() }
    };
    let both = refused(create(
        "both",
        ", class_weights = [1.0, 2.0], auto_class_weights = TRUE",
    ))
    .await;
    assert!(
        both.contains("auto_class_weights") && both.contains("not both"),
        "{both}"
    );
    let regressor = refused(
        "CREATE MODEL r OPTIONS (model_type = 'linear_reg', input_label_cols = ['age'], auto_class_weights = TRUE)
         AS SELECT duration, age FROM credit"
            .to_string(),
    )
    .await;
    assert!(
        regressor.contains("auto_class_weights") && regressor.contains("no classes"),
        "{regressor}"
    );
}

/// The BigQuery ML user's query on UCI Adult (`scripts/adult.sh` installs it; `./dev test` gives its path in
/// `HEARTH_ADULT_CSV`): `linear_reg` of the weekly hours on six columns, four of them strings, is least squares
/// — the same r² on the same rows, and on the rows it holds out within 0.01 of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn linear_reg_of_adults_hours_is_least_squares() {
    let csv = std::env::var("HEARTH_ADULT_CSV")
        .expect("HEARTH_ADULT_CSV: the CSV scripts/adult.sh installs (./dev test sets it)");
    let models = tempfile::tempdir().unwrap();
    let session = Session::builder()
        .with_default_features()
        .local(2)
        .with_models(models.path());
    let query = "SELECT age, workclass, education_num, occupation, sex, marital_status, hours_per_week FROM adult";
    let create = |name: &str, split: &str| {
        format!(
            "CREATE MODEL {name} OPTIONS (model_type = 'linear_reg', input_label_cols = ['hours_per_week'],
                 max_iterations = 10, workers = 2, seed = 1, {split}) AS {query}"
        )
    };
    run_script(
        &session,
        &format!(
            "CREATE EXTERNAL TABLE adult STORED AS CSV LOCATION '{csv}' OPTIONS ('format.has_header' 'true');
             {}; {}",
            create(
                "adult_hours",
                "data_split_method = 'random', data_split_eval_fraction = 0.2"
            ),
            create("every_row", "data_split_method = 'no_split'")
        ),
    )
    .await
    .unwrap();
    let r2 = |sql: &'static str| {
        let session = session.clone();
        async move { number(&run_script(&session, sql).await.unwrap(), "r2") }
    };
    let held_out = r2("SELECT r2 FROM ML.EVALUATE(MODEL adult_hours)").await;
    let every_row = r2("SELECT r2 FROM ML.EVALUATE(MODEL every_row, TABLE adult)").await;

    // Least squares by hand on every row: an intercept, the two numbers, and an indicator of each string
    // column's values but its first.
    let batches = run_script(&session, query).await.unwrap();
    let mut rows: Vec<(Vec<f64>, Vec<String>, f64)> = Vec::new();
    for batch in &batches {
        let number = |i: usize| cast(batch.column(i), &DataType::Float64).unwrap();
        let text = |i: usize| cast(batch.column(i), &DataType::Utf8).unwrap();
        let (age, education, hours) = (number(0), number(2), number(6));
        let strings = [text(1), text(3), text(4), text(5)];
        for r in 0..batch.num_rows() {
            rows.push((
                vec![
                    age.as_primitive::<Float64Type>().value(r),
                    education.as_primitive::<Float64Type>().value(r),
                ],
                strings
                    .iter()
                    .map(|s| s.as_string::<i32>().value(r).to_string())
                    .collect(),
                hours.as_primitive::<Float64Type>().value(r),
            ));
        }
    }
    assert_eq!(rows.len(), 32_561);
    let levels: Vec<Vec<String>> = (0..4)
        .map(|k| {
            let mut values: Vec<String> = rows.iter().map(|(_, s, _)| s[k].clone()).collect();
            values.sort();
            values.dedup();
            values.split_off(1)
        })
        .collect();
    let design: Vec<Vec<f64>> = rows
        .iter()
        .map(|(numbers, strings, _)| {
            let mut x = vec![1.0];
            x.extend(numbers);
            for (value, kept) in strings.iter().zip(&levels) {
                x.extend(kept.iter().map(|level| f64::from(u8::from(level == value))));
            }
            x
        })
        .collect();
    let hours: Vec<f64> = rows.iter().map(|(_, _, y)| *y).collect();
    // Adult's unknown workclass and occupation ('?') go together, so the indicators are collinear; a ridge of
    // 1e-6 (rows of √λ·eᵢ, no penalty on the intercept) picks one of the equally fitting solutions.
    let width = design[0].len();
    let mut ridged = design.clone();
    ridged.extend((1..width).map(|i| (0..width).map(|j| if i == j { 1e-3 } else { 0.0 }).collect()));
    let mut targets = hours.clone();
    targets.resize(ridged.len(), 0.0);
    let beta = least_squares(&ridged, &targets);
    let mean = hours.iter().sum::<f64>() / hours.len() as f64;
    let fitted = |x: &[f64]| x.iter().zip(&beta).map(|(x, b)| x * b).sum::<f64>();
    let residual: f64 = design.iter().zip(&hours).map(|(x, y)| (y - fitted(x)).powi(2)).sum();
    let total: f64 = hours.iter().map(|y| (y - mean).powi(2)).sum();
    let by_hand = 1.0 - residual / total;
    println!(
        "Adult hours_per_week: r2 {every_row:.9} on every row, least squares {by_hand:.9}; held out {held_out:.6}"
    );
    assert!(
        (every_row - by_hand).abs() < 1e-6,
        "r2 {every_row} against least squares' {by_hand}"
    );
    assert!(
        (held_out - by_hand).abs() < 0.01,
        "held-out r2 {held_out} against least squares' {by_hand}"
    );
}
