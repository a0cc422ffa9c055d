//! Spark's `MultilayerPerceptronClassifier` against Spark: every case of `tests/fixtures/spark/perceptron.json`
//! (made by `perceptron.py` beside it with PySpark 4 on standardized German Credit) fitted on one rank, as Spark
//! fitted it on one partition: weights within 1e-3, Spark's iterations, probabilities within 1e-4; two ranks give
//! the same bits on `local[2]` and `standalone[2]`, run after run; the model saved and loaded transforms the same.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, FixedSizeListArray, Float32Array, Float64Array, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use hearth::prelude::*;
use serde_json::Value;

use crate::common::*;

fn fixture() -> &'static Value {
    static FIXTURE: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    FIXTURE.get_or_init(|| spark_fixture("perceptron.json"))
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array().unwrap().iter().map(number).collect()
}

/// The fixture's rows as `features` and `label`.
fn rows(session: &Session) -> DataFrame {
    let rows = fixture()["rows"].as_array().unwrap();
    let values: Vec<f32> = rows
        .iter()
        .flat_map(|r| floats(&r["features"]))
        .map(|v| v as f32)
        .collect();
    let item = Arc::new(Field::new_list_field(DataType::Float32, true));
    let features = FixedSizeListArray::try_new(item, 7, Arc::new(Float32Array::from(values)), None).unwrap();
    let schema = Arc::new(Schema::new(vec![
        Field::new("features", features.data_type().clone(), true),
        Field::new("label", DataType::Float64, false),
    ]));
    let labels: ArrayRef = Arc::new(Float64Array::from_iter_values(rows.iter().map(|r| number(&r["label"]))));
    let batch = RecordBatch::try_new(Arc::clone(&schema), vec![Arc::new(features), labels]).unwrap();
    session.read_batches(schema, vec![batch]).unwrap()
}

fn estimator(case: &Value, workers: usize) -> MultilayerPerceptronClassifier {
    let p = &case["params"];
    let layers = p["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_u64().unwrap() as usize);
    let mut mlp = MultilayerPerceptronClassifier::new().layers(layers).workers(workers);
    if let Some(v) = p.get("seed") {
        mlp = mlp.seed(v.as_i64().unwrap());
    }
    if let Some(v) = p.get("maxIter") {
        mlp = mlp.max_iter(v.as_u64().unwrap() as usize);
    }
    if let Some(v) = p.get("blockSize") {
        mlp = mlp.block_size(v.as_u64().unwrap() as usize);
    }
    if let Some(v) = p.get("solver") {
        mlp = mlp.solver(v.as_str().unwrap());
    }
    if let Some(v) = p.get("stepSize") {
        mlp = mlp.step_size(number(v));
    }
    if let Some(v) = p.get("initialWeights") {
        mlp = mlp.initial_weights(floats(v));
    }
    mlp
}

#[tokio::test]
async fn the_perceptron_matches_spark_on_one_rank() {
    let session = Session::builder().with_default_features().local(1);
    let df = rows(&session);
    for case in fixture()["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let model = estimator(case, 1).fit(&df).await.unwrap();
        let want = floats(&case["weights"]);
        for (i, (g, w)) in model.weights().iter().zip(&want).enumerate() {
            assert!(
                (g - w).abs() <= 1e-3 * w.abs().max(1.0),
                "{name} weight {i}: hearth {g}, Spark {w}"
            );
        }
        assert_eq!(
            model.summary().total_iterations as u64,
            case["total_iterations"].as_u64().unwrap(),
            "{name}"
        );
        let out = model.transform(&df).unwrap().limit(0, Some(20)).unwrap();
        assert_scores_match(name, &out, case, 1e-4).await;
    }
}

#[tokio::test]
async fn two_ranks_give_the_same_bits_on_local_and_ballista_and_the_model_reloads() {
    // A rank's rows are ordered by a hash of their values, so its stacks, and the model, are the same on every
    // master and every run; stacks form within each rank's rows, so two ranks' model is not one rank's (as Spark's
    // depends on its partitions).
    let case = &fixture()["cases"][1];
    let one = estimator(case, 1)
        .fit(&rows(&Session::builder().with_default_features().local(1)))
        .await
        .unwrap();
    let local = Session::builder().with_default_features().local(2);
    let two = estimator(case, 2).fit(&rows(&local)).await.unwrap();
    let standalone = Session::builder()
        .with_default_features()
        .connect("standalone[2]")
        .await
        .unwrap();
    for run in 0..2 {
        let ballista = estimator(case, 2).fit(&rows(&standalone)).await.unwrap();
        assert_eq!(ballista.weights(), two.weights(), "standalone[2] run {run} vs local[2]");
    }
    let final_loss = |m: &MultilayerPerceptronClassificationModel| *m.summary().objective_history.last().unwrap();
    let (loss, alone) = (final_loss(&two), final_loss(&one));
    assert!(
        (loss - alone).abs() < 0.05 * alone,
        "two ranks' final loss {loss}, one rank's {alone}"
    );
    let dir = tempfile::tempdir().unwrap();
    let pipeline = Pipeline::new()
        .stage(estimator(case, 2))
        .fit(&rows(&local))
        .await
        .unwrap();
    pipeline.save(dir.path().join("mlp")).unwrap();
    let loaded = PipelineModel::load(dir.path().join("mlp")).unwrap();
    assert_eq!(loaded, pipeline);
    let before = doubles(&pipeline.transform(&rows(&local)).unwrap(), "prediction").await;
    let after = doubles(&loaded.transform(&rows(&local)).unwrap(), "prediction").await;
    assert_eq!(before, after);
}

#[tokio::test]
async fn layers_that_do_not_fit_the_features_are_refused_by_name() {
    let session = Session::builder().with_default_features().local(1);
    let error = MultilayerPerceptronClassifier::new()
        .layers([3, 2])
        .fit(&rows(&session))
        .await
        .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("layers start with 3 inputs, the features have 7"),
        "{error}"
    );
    let error = MultilayerPerceptronClassifier::new()
        .layers([7, 2])
        .solver("adam")
        .fit(&rows(&session))
        .await;
    assert!(error.unwrap_err().to_string().contains("solver"));
}
