//! Evaluator math against Spark: every metric in `tests/fixtures/spark/evaluators.json` (made by
//! `evaluators.py` beside it with PySpark 4.0.1), computed from states merged across two halves of the rows.

use hearth::stats::evaluation::{BinaryState, MulticlassState, RegressionState};
use serde_json::Value;

pub use crate::common::{fixture_case as case, spark_fixture};

/// The evaluator fixture made with PySpark.
pub fn fixture() -> Value {
    spark_fixture("evaluators.json")
}

fn check(what: &str, got: f64, want: &Value) {
    let want = want.as_f64().unwrap_or_else(|| panic!("{what}: no Spark value"));
    assert!(
        (got - want).abs() <= 1e-9 * want.abs().max(1.0),
        "{what}: hearth {got}, Spark {want}"
    );
}

/// Adds the rows to two states (as two partitions would) and merges them.
fn merged<S: Default>(rows: &[Value], add: impl Fn(&mut S, &[Value]), merge: impl Fn(&mut S, &S)) -> S {
    let (mut first, mut second) = (S::default(), S::default());
    for (i, row) in rows.iter().enumerate() {
        add(
            if i % 2 == 0 { &mut first } else { &mut second },
            row.as_array().unwrap(),
        );
    }
    merge(&mut first, &second);
    first
}

#[test]
fn multiclass_metrics_match_spark() {
    let fixture = fixture();
    let spark = case(&fixture, "multiclass");
    let rows = spark["rows"].as_array().unwrap();
    for weighted in [false, true] {
        let state: MulticlassState = merged(
            rows,
            |s: &mut MulticlassState, r| {
                let (label, prediction) = (r[0].as_f64().unwrap(), r[1].as_f64().unwrap());
                let probability = r[2][label as usize].as_f64().unwrap();
                let weight = if weighted { r[3].as_f64().unwrap() } else { 1.0 };
                s.add(label, prediction, weight, Some(probability));
            },
            MulticlassState::merge,
        );
        let suffix = if weighted { "/weighted" } else { "" };
        let metric = |name: &str| &spark["metrics"][format!("{name}{suffix}")];
        check("f1", state.weighted_f_measure(1.0), metric("f1"));
        check("accuracy", state.accuracy(), metric("accuracy"));
        check(
            "weightedPrecision",
            state.weighted_precision(),
            metric("weightedPrecision"),
        );
        check("weightedRecall", state.weighted_recall(), metric("weightedRecall"));
        check(
            "weightedTruePositiveRate",
            state.weighted_recall(),
            metric("weightedTruePositiveRate"),
        );
        check(
            "weightedFalsePositiveRate",
            state.weighted_false_positive_rate(),
            metric("weightedFalsePositiveRate"),
        );
        check(
            "weightedFMeasure",
            state.weighted_f_measure(1.0),
            metric("weightedFMeasure"),
        );
        check("hammingLoss", state.hamming_loss(), metric("hammingLoss"));
        check("logLoss", state.log_loss(), metric("logLoss"));
        for label in [0.0, 1.0, 2.0] {
            let by_label = |name: &str| &spark["metrics"][format!("{name}/{label:.1}{suffix}")];
            check(
                "truePositiveRateByLabel",
                state.recall(label),
                by_label("truePositiveRateByLabel"),
            );
            check(
                "falsePositiveRateByLabel",
                state.false_positive_rate(label),
                by_label("falsePositiveRateByLabel"),
            );
            check("precisionByLabel", state.precision(label), by_label("precisionByLabel"));
            check("recallByLabel", state.recall(label), by_label("recallByLabel"));
            check(
                "fMeasureByLabel",
                state.f_measure(label, 1.0),
                by_label("fMeasureByLabel"),
            );
        }
        if !weighted {
            check(
                "beta 0.5",
                state.weighted_f_measure(0.5),
                &spark["metrics"]["weightedFMeasure/beta=0.5"],
            );
        }
    }
}

#[test]
fn binary_areas_match_spark_with_ties_and_bins() {
    let fixture = fixture();
    for name in ["binary_ties", "binary_bins"] {
        let spark = case(&fixture, name);
        let rows = spark["rows"].as_array().unwrap();
        for (key, want) in spark["metrics"].as_object().unwrap() {
            let parts: Vec<&str> = key.split('/').collect();
            let (metric, bins, weighted) = (parts[0], parts[1].parse::<usize>().unwrap(), parts.len() == 3);
            let state: BinaryState = merged(
                rows,
                |s: &mut BinaryState, r| {
                    let weight = if weighted { r[2].as_f64().unwrap() } else { 1.0 };
                    s.add(r[0].as_f64().unwrap(), r[1].as_f64().unwrap(), weight);
                },
                BinaryState::merge,
            );
            let got = if metric == "areaUnderROC" {
                state.area_under_roc(bins)
            } else {
                state.area_under_pr(bins)
            };
            check(&format!("{name} {key}"), got, want);
        }
    }
}

#[test]
fn regression_metrics_match_spark() {
    let fixture = fixture();
    let spark = case(&fixture, "regression");
    let rows = spark["rows"].as_array().unwrap();
    for (key, want) in spark["metrics"].as_object().unwrap() {
        let weighted = key.contains("/weighted");
        let origin = key.contains("/origin");
        let state: RegressionState = merged(
            rows,
            |s: &mut RegressionState, r| {
                let weight = if weighted { r[2].as_f64().unwrap() } else { 1.0 };
                s.add(r[0].as_f64().unwrap(), r[1].as_f64().unwrap(), weight);
            },
            RegressionState::merge,
        );
        let got = match key.split('/').next().unwrap() {
            "rmse" => state.rmse(),
            "mse" => state.mse(),
            "mae" => state.mae(),
            "r2" => state.r2(origin),
            "var" => state.explained_variance(),
            other => panic!("unknown metric {other}"),
        };
        check(key, got, want);
    }
}
