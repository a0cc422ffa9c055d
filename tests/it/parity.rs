//! Parity with Spark MLlib: every case in `tests/fixtures/spark/parity.json` (made by `generate.py` beside it
//! with PySpark 4.0.1) is rebuilt here and must give Spark's fitted state and outputs.

use datafusion::logical_expr::ident;
use hearth::datasets::german_credit;
use hearth::prelude::*;
use serde_json::Value;

use crate::common::*;

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

fn numbers(v: &Value) -> Vec<f64> {
    v.as_array().unwrap().iter().map(number).collect()
}

fn assert_numbers(what: &str, got: &[f64], want: &[f64], relative: f64) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        assert!(close(g, w, relative), "{what}[{i}]: hearth {g}, Spark {w}");
    }
}

#[tokio::test]
async fn german_credit_end_to_end() {
    let spark = case("german_credit");
    let session = Session::builder().with_default_features().local(2);
    let credit = session
        .read_csv(german_credit::csv_path(), &CsvOptions::new())
        .await
        .unwrap();
    let model = german_credit::preprocessing().fit(&credit).await.unwrap();

    assert_eq!(model.stages().len(), 5);
    let label: &StringIndexerModel = stage(&model, 0);
    let categories: &StringIndexerModel = stage(&model, 1);
    let encoder: &OneHotEncoderModel = stage(&model, 2);
    let scaler: &StandardScalerModel = stage(&model, 4);
    assert_eq!(label.labels()[0], strings(&spark["label_labels"]));
    let spark_labels: Vec<Vec<String>> = spark["labels"].as_array().unwrap().iter().map(strings).collect();
    assert_eq!(categories.labels(), spark_labels.as_slice());
    let sizes: Vec<usize> = spark["category_sizes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap() as usize)
        .collect();
    assert_eq!(encoder.category_sizes(), sizes.as_slice());
    assert_numbers("mean", scaler.mean(), &numbers(&spark["mean"]), 1e-9);
    assert_numbers("std", scaler.std(), &numbers(&spark["std"]), 1e-9);

    let out = model.transform(&credit).unwrap();
    let labels: Vec<f64> = doubles(&out, "label").await.into_iter().map(Option::unwrap).collect();
    assert_numbers("label", &labels, &numbers(&spark["label"]), 0.0);
    let want: Vec<Option<Vec<f64>>> = spark["features"].as_array().unwrap().iter().map(vector).collect();
    assert_vectors_match("german_credit features", &vectors(&out, "features").await, &want);
}

#[tokio::test]
async fn ionosphere_end_to_end() {
    let spark = case("ionosphere");
    let session = Session::builder().with_default_features().local(2);
    let raw = session
        .read_csv(dataset("ionosphere/ionosphere.data"), &CsvOptions::new().header(false))
        .await
        .unwrap();
    let renamed = raw
        .select(
            (1..=35)
                .map(|i| ident(format!("column_{i}")).alias(format!("c{i}")))
                .collect::<Vec<_>>(),
        )
        .unwrap();
    let model = Pipeline::new()
        .stage(StringIndexer::new().input_col("c35").output_col("label"))
        .stage(
            VectorAssembler::new()
                .input_cols((1..=34).map(|i| format!("c{i}")))
                .output_col("raw_features"),
        )
        .stage(StandardScaler::new().input_col("raw_features").output_col("features"))
        .fit(&renamed)
        .await
        .unwrap();
    let label: &StringIndexerModel = stage(&model, 0);
    let scaler: &StandardScalerModel = stage(&model, 2);
    assert_eq!(label.labels()[0], strings(&spark["label_labels"]));
    // hearth's vectors hold f32, so statistics of 5-decimal inputs agree to f32 precision.
    assert_numbers("mean", scaler.mean(), &numbers(&spark["mean"]), 1e-6);
    assert_numbers("std", scaler.std(), &numbers(&spark["std"]), 1e-6);
    let out = model.transform(&renamed).unwrap();
    let want: Vec<Option<Vec<f64>>> = spark["features"].as_array().unwrap().iter().map(vector).collect();
    assert_vectors_match("ionosphere features", &vectors(&out, "features").await, &want);
}

fn order_of(name: &str) -> StringOrderType {
    match name {
        "frequencyDesc" => StringOrderType::FrequencyDesc,
        "frequencyAsc" => StringOrderType::FrequencyAsc,
        "alphabetDesc" => StringOrderType::AlphabetDesc,
        "alphabetAsc" => StringOrderType::AlphabetAsc,
        other => panic!("unknown order {other}"),
    }
}

fn handle_invalid_of(case: &Value) -> HandleInvalid {
    HandleInvalid::parse(case["handle_invalid"].as_str().unwrap_or("error")).unwrap()
}

#[tokio::test]
async fn string_indexer_orders_ties_and_numeric_labels() {
    let session = Session::builder().with_default_features().local(2);
    for spark in cases("string_order/") {
        let df = frame(&session, &spark["input"]);
        let model = StringIndexer::new()
            .input_col("x")
            .output_col("i")
            .string_order_type(order_of(spark["order"].as_str().unwrap()))
            .fit(&df)
            .await
            .unwrap();
        assert_eq!(model.labels()[0], strings(&spark["labels"]), "{}", spark["name"]);
    }
}

#[tokio::test]
async fn string_indexer_unseen_and_null_under_each_handle_invalid() {
    let session = Session::builder().with_default_features().local(2);
    for spark in cases("string_invalid/") {
        let name = spark["name"].as_str().unwrap();
        let (inputs, outputs): (Vec<&str>, Vec<String>) = if name.ends_with("multi_column_skip") {
            (vec!["x", "y"], vec!["xi".into(), "yi".into()])
        } else {
            (vec!["x"], vec!["i".into()])
        };
        let mode = if name.ends_with("multi_column_skip") {
            HandleInvalid::Skip
        } else {
            handle_invalid_of(spark)
        };
        let model = StringIndexer::new()
            .input_cols(inputs)
            .output_cols(outputs.clone())
            .handle_invalid(mode)
            .fit(&frame(&session, &spark["fit"]))
            .await
            .unwrap();
        let out = model.transform(&frame(&session, &spark["input"])).unwrap();
        if let Some(spark_error) = spark["error"].as_str() {
            let error = query_error(out).await;
            let what = if spark_error.contains("NULL") {
                "null"
            } else {
                "unseen label \"c\""
            };
            assert!(
                error.contains(what) && error.contains("column \"x\""),
                "{name}: {error}"
            );
            continue;
        }
        for column in &outputs {
            let want: Vec<Option<f64>> = spark["rows"][column]
                .as_array()
                .unwrap()
                .iter()
                .map(Value::as_f64)
                .collect();
            assert_eq!(doubles(&out, column).await, want, "{name}: {column}");
        }
    }
}

#[tokio::test]
async fn standard_scaler_edge_cases() {
    let session = Session::builder().with_default_features().local(2);
    for spark in cases("scaler/") {
        let name = spark["name"].as_str().unwrap();
        let df = frame(&session, &spark["input"]);
        let model = StandardScaler::new()
            .input_col("v")
            .output_col("s")
            .with_mean(spark["with_mean"].as_bool().unwrap())
            .with_std(spark["with_std"].as_bool().unwrap())
            .fit(&df)
            .await
            .unwrap();
        assert_numbers(&format!("{name} mean"), model.mean(), &numbers(&spark["mean"]), 1e-12);
        assert_numbers(&format!("{name} std"), model.std(), &numbers(&spark["std"]), 1e-12);
        let want: Vec<Option<Vec<f64>>> = spark["rows"]["s"].as_array().unwrap().iter().map(vector).collect();
        assert_vectors_match(name, &vectors(&model.transform(&df).unwrap(), "s").await, &want);
    }
}

#[tokio::test]
async fn one_hot_encoder_drop_last_by_handle_invalid() {
    let session = Session::builder().with_default_features().local(2);
    for spark in cases("one_hot/valid/").into_iter().chain(cases("one_hot/invalid/")) {
        let name = spark["name"].as_str().unwrap();
        let model = OneHotEncoder::new()
            .input_col("i")
            .output_col("v")
            .drop_last(spark["drop_last"].as_bool().unwrap())
            .handle_invalid(handle_invalid_of(spark))
            .fit(&frame(&session, &spark["fit"]))
            .await
            .unwrap();
        assert_eq!(
            model.category_sizes(),
            [spark["category_sizes"][0].as_u64().unwrap() as usize],
            "{name}"
        );
        let out = model.transform(&frame(&session, &spark["input"])).unwrap();
        if spark["error"].is_string() {
            let error = query_error(out).await;
            assert!(
                error.contains("OneHotEncoder") && error.contains("column \"i\""),
                "{name}: {error}"
            );
            continue;
        }
        let want: Vec<Option<Vec<f64>>> = spark["rows"]["v"].as_array().unwrap().iter().map(vector).collect();
        assert_vectors_match(name, &vectors(&out, "v").await, &want);
    }
}

#[tokio::test]
async fn one_hot_encoder_sizes_from_string_indexer_metadata() {
    let session = Session::builder().with_default_features().local(2);
    for spark in cases("one_hot/from_indexer_metadata/") {
        let name = spark["name"].as_str().unwrap();
        let df = frame(&session, &spark["input"]);
        let model = Pipeline::new()
            .stage(
                StringIndexer::new()
                    .input_col("x")
                    .output_col("i")
                    .handle_invalid(handle_invalid_of(spark)),
            )
            .stage(OneHotEncoder::new().input_col("i").output_col("v"))
            .fit(&df)
            .await
            .unwrap();
        let encoder: &OneHotEncoderModel = stage(&model, 1);
        assert_eq!(
            encoder.category_sizes(),
            [spark["category_sizes"][0].as_u64().unwrap() as usize],
            "{name}"
        );
        let want: Vec<Option<Vec<f64>>> = spark["rows"]["v"].as_array().unwrap().iter().map(vector).collect();
        assert_vectors_match(name, &vectors(&model.transform(&df).unwrap(), "v").await, &want);
    }
}

#[tokio::test]
async fn one_hot_encoder_fit_rejects_values_that_are_not_indices() {
    let session = Session::builder().with_default_features().local(2);
    for spark in cases("one_hot/fit_rejects/") {
        assert!(spark["error"].is_string(), "Spark rejected {}", spark["name"]);
        let error = OneHotEncoder::new()
            .input_col("i")
            .output_col("v")
            .fit(&frame(&session, &spark["input"]))
            .await
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("column \"i\"") && error.contains("category indices"),
            "{error}"
        );
    }
}

#[tokio::test]
async fn vector_assembler_handle_invalid() {
    let session = Session::builder().with_default_features().local(2);
    for spark in cases("assembler/") {
        let name = spark["name"].as_str().unwrap();
        let out = VectorAssembler::new()
            .input_cols(["a", "b", "v"])
            .output_col("f")
            .handle_invalid(handle_invalid_of(spark))
            .transform(&frame(&session, &spark["input"]))
            .unwrap();
        if spark["error"].is_string() {
            let error = query_error(out).await;
            assert!(error.contains("null in column \"a\""), "{name}: {error}");
            continue;
        }
        let want: Vec<Option<Vec<f64>>> = spark["rows"]["f"].as_array().unwrap().iter().map(vector).collect();
        assert_vectors_match(name, &vectors(&out, "f").await, &want);
    }
}
