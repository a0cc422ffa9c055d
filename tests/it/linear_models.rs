//! Spark's `LogisticRegression` and `LinearRegression` against Spark: every case of
//! `tests/fixtures/spark/linear.json` (made by `linear.py` beside it with PySpark 4 on German Credit) fitted over
//! two ranks of the barrier stage: coefficients within 1e-4 relative, the iterations Spark took, predictions
//! within 1e-6; the same fits on `local[1]` and `local[4]`, and the same bits on `standalone[2]`; errors that name
//! the row.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, FixedSizeListArray, Float32Array, Float64Array, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use hearth::prelude::*;
use serde_json::Value;

use crate::common::*;

fn fixture() -> &'static Value {
    static FIXTURE: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    FIXTURE.get_or_init(|| spark_fixture("linear.json"))
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array().unwrap().iter().map(number).collect()
}

/// The case's rows as `features` (its columns of the fixture's), `label` and `weight`.
fn rows(session: &Session, case: &Value) -> DataFrame {
    let columns: Vec<&str> = fixture()["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    let picked: Vec<usize> = case["features"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j.as_u64().unwrap() as usize)
        .collect();
    let label = case["label"].as_str().unwrap();
    let rows = fixture()["rows"].as_array().unwrap();
    let values: Vec<f32> = rows
        .iter()
        .flat_map(|r| picked.iter().map(move |j| number(&r["features"][*j]) as f32))
        .collect();
    let labels = rows.iter().map(|r| match columns.iter().position(|c| *c == label) {
        Some(j) => number(&r["features"][j]),
        None => number(&r[label]),
    });
    let item = Arc::new(Field::new_list_field(DataType::Float32, true));
    let features =
        FixedSizeListArray::try_new(item, picked.len() as i32, Arc::new(Float32Array::from(values)), None).unwrap();
    let schema = Arc::new(Schema::new(vec![
        Field::new("features", features.data_type().clone(), true),
        Field::new("label", DataType::Float64, false),
        Field::new("weight", DataType::Float64, false),
    ]));
    let columns: Vec<ArrayRef> = vec![
        Arc::new(features),
        Arc::new(Float64Array::from_iter_values(labels)),
        Arc::new(Float64Array::from_iter_values(
            rows.iter().map(|r| number(&r["weight"])),
        )),
    ];
    session
        .read_batches(
            Arc::clone(&schema),
            vec![RecordBatch::try_new(schema, columns).unwrap()],
        )
        .unwrap()
}

fn logistic(case: &Value, workers: usize) -> LogisticRegression {
    let p = &case["params"];
    let mut lr = LogisticRegression::new().workers(workers);
    if let Some(v) = p.get("regParam") {
        lr = lr.reg_param(number(v));
    }
    if let Some(v) = p.get("elasticNetParam") {
        lr = lr.elastic_net_param(number(v));
    }
    if let Some(v) = p.get("standardization") {
        lr = lr.standardization(v.as_bool().unwrap());
    }
    if let Some(v) = p.get("fitIntercept") {
        lr = lr.fit_intercept(v.as_bool().unwrap());
    }
    if let Some(v) = p.get("family") {
        lr = lr.family(v.as_str().unwrap());
    }
    if case["weighted"].as_bool().unwrap() {
        lr = lr.weight_col("weight");
    }
    lr
}

fn linear(case: &Value, workers: usize) -> LinearRegression {
    let p = &case["params"];
    let mut lr = LinearRegression::new()
        .workers(workers)
        .solver(p["solver"].as_str().unwrap());
    if let Some(v) = p.get("regParam") {
        lr = lr.reg_param(number(v));
    }
    if let Some(v) = p.get("fitIntercept") {
        lr = lr.fit_intercept(v.as_bool().unwrap());
    }
    if case["weighted"].as_bool().unwrap() {
        lr = lr.weight_col("weight");
    }
    lr
}

fn assert_close(what: &str, got: &[f64], want: &[f64], relative: f64) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= relative * w.abs().max(1e-2),
            "{what}[{i}]: hearth {g}, Spark {w}"
        );
    }
}

fn cases_of(estimator: &str) -> Vec<&'static Value> {
    fixture()["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["estimator"] == estimator)
        .collect()
}

#[tokio::test]
async fn logistic_regression_matches_spark_on_two_ranks() {
    let session = Session::builder().with_default_features().local(2);
    for case in cases_of("LogisticRegression") {
        let name = case["name"].as_str().unwrap();
        let df = rows(&session, case);
        let model = logistic(case, 2).fit(&df).await.unwrap();
        let want: Vec<f64> = case["coefficient_matrix"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(floats)
            .collect();
        assert_close(
            &format!("{name} coefficients"),
            &model.coefficient_matrix().concat(),
            &want,
            1e-4,
        );
        assert_close(
            &format!("{name} intercepts"),
            model.intercept_vector(),
            &floats(&case["intercept_vector"]),
            1e-4,
        );
        let summary = model.summary().unwrap();
        assert_eq!(
            summary.total_iterations as u64,
            case["total_iterations"].as_u64().unwrap(),
            "{name}"
        );
        let out = model.transform(&df).unwrap().limit(0, Some(20)).unwrap();
        assert_scores_match(name, &out, case, 1e-6).await;
    }
}

#[tokio::test]
async fn linear_regression_matches_spark_on_two_ranks() {
    let session = Session::builder().with_default_features().local(2);
    for case in cases_of("LinearRegression") {
        let name = case["name"].as_str().unwrap();
        let df = rows(&session, case);
        let model = linear(case, 2).fit(&df).await.unwrap();
        assert_close(
            &format!("{name} coefficients"),
            model.coefficients(),
            &floats(&case["coefficients"]),
            1e-4,
        );
        assert_close(
            &format!("{name} intercept"),
            &[model.intercept()],
            &[number(&case["intercept"])],
            1e-4,
        );
        assert_eq!(
            model.summary().total_iterations as u64,
            case["total_iterations"].as_u64().unwrap(),
            "{name}"
        );
        let out = model.transform(&df).unwrap().limit(0, Some(20)).unwrap();
        let predictions: Vec<f64> = doubles(&out, "prediction").await.into_iter().flatten().collect();
        assert_close(
            &format!("{name} predictions"),
            &predictions,
            &floats(&case["prediction"]),
            1e-6,
        );
    }
}

#[tokio::test]
async fn the_same_fit_on_one_rank_and_on_ballista() {
    let case = cases_of("LogisticRegression")
        .into_iter()
        .find(|c| c["name"] == "binomial_elastic_net")
        .unwrap();
    let local = Session::builder().with_default_features().local(2);
    let two = logistic(case, 2).fit(&rows(&local, case)).await.unwrap();
    for ranks in [1, 4] {
        let other = logistic(case, ranks)
            .fit(&rows(&Session::builder().with_default_features().local(ranks), case))
            .await
            .unwrap();
        assert_close(
            &format!("local[{ranks}] vs local[2]"),
            &other.coefficient_matrix().concat(),
            &two.coefficient_matrix().concat(),
            1e-9,
        );
    }
    let standalone = Session::builder()
        .with_default_features()
        .connect("standalone[2]")
        .await
        .unwrap();
    let ballista = logistic(case, 2).fit(&rows(&standalone, case)).await.unwrap();
    // A rank's rows are ordered by a hash of their values: the same sums, the same bits.
    assert_eq!(
        ballista.coefficient_matrix(),
        two.coefficient_matrix(),
        "standalone[2] vs local[2]"
    );
    let case = cases_of("LinearRegression")
        .into_iter()
        .find(|c| c["name"] == "lbfgs_l2_weighted")
        .unwrap();
    let two = linear(case, 2).fit(&rows(&local, case)).await.unwrap();
    let ballista = linear(case, 2).fit(&rows(&standalone, case)).await.unwrap();
    assert_eq!(ballista.coefficients(), two.coefficients(), "standalone[2] vs local[2]");
}

#[tokio::test]
async fn a_label_that_is_not_a_class_names_its_rank_and_row_and_a_bad_param_its_name() {
    let session = Session::builder().with_default_features().local(1);
    let df = session
        .context()
        .sql("SELECT * FROM (VALUES (0.0, 0.0), (1.0, 2.5)) AS t(x, label)")
        .await
        .unwrap();
    let df = VectorAssembler::new()
        .input_cols(["x"])
        .output_col("features")
        .transform(&df)
        .unwrap();
    let error = LogisticRegression::new().fit(&df).await.unwrap_err().to_string();
    assert!(
        error.contains("rank 0: row 1: label 2.5 is not a class index"),
        "{error}"
    );
    let error = LinearRegression::new()
        .label_col("nothing")
        .fit(&df)
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("nothing"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rank_without_rows_fits_with_the_others() {
    let session = Session::builder().with_default_features().local(4);
    let df = session
        .context()
        .sql("SELECT * FROM (VALUES (0.0, 1.0, 0.0), (1.0, 0.5, 1.0), (2.0, -1.0, 1.0)) AS t(x, y, label)")
        .await
        .unwrap();
    let df = VectorAssembler::new()
        .input_cols(["x", "y"])
        .output_col("features")
        .transform(&df)
        .unwrap();
    // Three rows on four ranks: one rank has none, and fits with the others' width. (Regularized: three
    // points in a plane are separable, and the unregularized fit has no finite optimum.)
    let fit = |workers| {
        let df = df.clone();
        async move { LogisticRegression::new().reg_param(0.1).workers(workers).fit(&df).await }
    };
    let (spread, alone) = (fit(4).await.unwrap(), fit(1).await.unwrap());
    assert_eq!(spread.coefficients().len(), 2);
    for (a, b) in spread.coefficients().iter().zip(alone.coefficients()) {
        assert!(
            (a - b).abs() <= 1e-6 * b.abs().max(1.0),
            "{:?} against {:?}",
            spread.coefficients(),
            alone.coefficients()
        );
    }
    let spread = LinearRegression::new().workers(4).fit(&df).await.unwrap();
    assert_eq!(spread.coefficients().len(), 2);
}

/// Spark's own `LinearRegressionSummary` case (pyspark's `test_linear_regression`): four weighted rows, the
/// normal equation; its standard errors, t statistics and p-values, intercept last, as Spark gives them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_normal_equation_fit_has_sparks_standard_errors_and_p_values() {
    let session = Session::builder().with_default_features().local(2);
    let df = session
        .context()
        .sql(
            "SELECT * FROM (VALUES (1.0, 1.0, 0.0, 5.0), (0.0, 2.0, 1.0, 2.0), (1.5, 3.0, 2.0, 1.0),
                                   (0.7, 4.0, 1.5, 3.0)) AS t(label, weight, a, b)",
        )
        .await
        .unwrap();
    let df = VectorAssembler::new()
        .input_cols(["a", "b"])
        .output_col("features")
        .transform(&df)
        .unwrap();
    let fit = |solver: &'static str| {
        let df = df.clone();
        async move {
            LinearRegression::new()
                .solver(solver)
                .weight_col("weight")
                .workers(2)
                .fit(&df)
                .await
                .unwrap()
        }
    };
    let model = fit("normal").await;
    assert_close("coefficients", model.coefficients(), &[0.65, 0.1125], 1e-9);
    let rows = [
        (1.0, 1.0, [0.0, 5.0]),
        (0.0, 2.0, [1.0, 2.0]),
        (1.5, 3.0, [2.0, 1.0]),
        (0.7, 4.0, [1.5, 3.0]),
    ];
    let rss: f64 = rows.iter().map(|(y, w, x)| w * (y - model.predict(x)).powi(2)).sum();
    assert_eq!(model.degrees_of_freedom(4), 1);
    let statistics = model.coefficient_statistics(rss, 4).unwrap();
    let spark = [
        (
            &statistics.standard_errors,
            [1.2859821149611763, 0.6248749874975031, 3.1645497310044184],
        ),
        (
            &statistics.t_values,
            [0.5054502643838291, 0.1800360108036021, -0.11060025272186746],
        ),
        (
            &statistics.p_values,
            [0.7020630236843428, 0.8866003086182783, 0.9298746994547682],
        ),
    ];
    for (ours, theirs) in spark {
        assert_close("statistics", ours, &theirs, 1e-9);
    }
    // L-BFGS leaves no inverse to take standard errors from, as in Spark.
    assert_eq!(fit("l-bfgs").await.coefficient_statistics(rss, 4), None);
}

/// A classifier's scores on a frame aliased twice over, as a Spark Connect client's relations are (each plan
/// id a `SubqueryAlias`): DataFusion's rules that push `get_field` towards the scan left the plan with a column
/// both qualified and not, and it failed.
#[tokio::test]
async fn a_classifier_scores_a_frame_aliased_twice() {
    let session = Session::builder().with_default_features().local(2);
    let rows = session
        .sql("SELECT CAST(x AS DOUBLE) AS x, CAST(x % 2 AS DOUBLE) AS label FROM generate_series(1, 20) AS t(x)")
        .await
        .unwrap()
        .alias("first")
        .unwrap();
    // Renamed as `toDF` renames, then aliased again.
    let rows = rows
        .select(vec![
            datafusion::prelude::col("first.x").alias("x"),
            datafusion::prelude::col("first.label").alias("label"),
        ])
        .unwrap()
        .alias("renamed")
        .unwrap();
    let assembled = VectorAssembler::new()
        .input_cols(["x"])
        .output_col("features")
        .transform(&rows)
        .unwrap()
        .alias("second")
        .unwrap();
    let model = LogisticRegression::new().max_iter(5).fit(&assembled).await.unwrap();
    let scored = model.transform(&assembled).unwrap().alias("third").unwrap();
    assert_eq!(scored.count().await.unwrap(), 20);
}
