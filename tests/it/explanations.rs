//! Explanations: integrated gradients agree with a plain finite-difference estimate of the same path
//! integral and add up to the change of the output; on data whose label is made from two of ten columns,
//! `ML.GLOBAL_EXPLAIN` ranks those two first; `ML.EXPLAIN_PREDICT` keeps `top_k_features` per row, by input
//! column. Summing one-hot slots back into columns, and bad requests, are in `tests/slt/explain_and_weights.slt`.

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::Float64Type;
use hearth::torch::artifact::ModelArtifact;
use hearth::torch::explain::{Explained, integrated_gradients};
use hearth::torch::model::{Activation, ModelSpec, Network};
use hearth::torch::train::{TrainOptions, TrainSettings};

use crate::sql::{credit_session, rows, run_script};

#[test]
fn integrated_gradients_match_finite_differences_and_add_up_to_the_change() {
    let spec = ModelSpec::Mlp {
        inputs: 4,
        hidden: vec![12],
        outputs: 3,
        activation: Activation::Tanh,
        dropout: 0.0,
    };
    let network = Network::new(&spec, tch::Device::Cpu, 3).unwrap();
    let artifact =
        ModelArtifact::from_network(TrainOptions::new(spec, TrainSettings::default()), &network, vec![]).unwrap();
    let predictor = artifact.predictor().unwrap();
    let x = [0.8f32, -1.2, 0.3, 2.0, -0.5, 0.4, 1.5, -0.9];
    let baseline = [0.1f32, 0.0, -0.2, 0.5];
    let steps = 50;
    let ig = integrated_gradients(&predictor, &x, 2, &baseline, steps, Explained::PredictedClass).unwrap();

    // The explained output: the softmax probability of class `class` at a point.
    let probability = |point: &[f32], class: usize| -> f64 {
        let logits = predictor.outputs(point, 1).unwrap();
        let exp: Vec<f64> = logits.iter().map(|&z| f64::from(z).exp()).collect();
        exp[class] / exp.iter().sum::<f64>()
    };
    for row in 0..2 {
        let point = &x[row * 4..(row + 1) * 4];
        let logits = predictor.outputs(point, 1).unwrap();
        let class = (0..3).max_by(|&a, &b| logits[a].total_cmp(&logits[b])).unwrap();
        let h = 1e-2f32;
        for i in 0..4 {
            // The same midpoint rule, each gradient a central difference.
            let mut sum = 0.0;
            for k in 0..steps {
                let alpha = (k as f32 + 0.5) / steps as f32;
                let mut p: Vec<f32> = (0..4).map(|j| baseline[j] + alpha * (point[j] - baseline[j])).collect();
                p[i] += h;
                let up = probability(&p, class);
                p[i] -= 2.0 * h;
                sum += (up - probability(&p, class)) / (2.0 * f64::from(h));
            }
            let estimate = sum / steps as f64 * f64::from(point[i] - baseline[i]);
            let attribution = f64::from(ig.values[row * 4 + i]);
            assert!(
                (attribution - estimate).abs() < 2e-3,
                "row {row} feature {i}: {attribution} vs {estimate}"
            );
        }
        let total: f64 = ig.values[row * 4..(row + 1) * 4].iter().map(|&v| f64::from(v)).sum();
        let change = probability(point, class) - probability(&baseline, class);
        assert!(
            (total - change).abs() < 1e-2 * change.abs().max(0.05),
            "row {row}: Σ {total} vs {change}"
        );
        assert!((f64::from(ig.prediction[row]) - probability(point, class)).abs() < 1e-5);
    }
}

/// The first column's strings, every row.
fn first_column(batches: &[datafusion::arrow::array::RecordBatch]) -> Vec<String> {
    batches
        .iter()
        .flat_map(|b| {
            let column = b.column(0).as_string::<i32>();
            column.iter().map(|v| v.unwrap().to_string()).collect::<Vec<_>>()
        })
        .collect()
}

/// Ten columns; the label is made from `x2` and `x7` alone.
const KNOWN: &str = "CREATE TABLE known AS
    SELECT x0, x1, x2, x3, x4, x5, x6, x7, x8, x9,
           CASE WHEN x2 + 2 * x7 > 0.1 THEN 'yes' ELSE 'no' END AS label
    FROM (SELECT sin(i * 1.37) AS x0, sin(i * 2.71 + 1) AS x1, sin(i * 0.93 + 2) AS x2, sin(i * 3.17 + 3) AS x3,
                 sin(i * 1.91 + 4) AS x4, sin(i * 2.29 + 5) AS x5, sin(i * 0.61 + 6) AS x6, sin(i * 1.53 + 7) AS x7,
                 sin(i * 2.97 + 8) AS x8, sin(i * 0.77 + 9) AS x9
          FROM generate_series(1, 3000) AS t(i))";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn global_explain_ranks_the_two_columns_the_label_is_made_of_first() {
    let models = tempfile::tempdir().unwrap();
    let session = credit_session(models.path()).await;
    run_script(&session, KNOWN).await.unwrap();
    run_script(
        &session,
        "CREATE MODEL known_dnn OPTIONS (model_type = 'dnn_classifier', input_label_cols = ['label'],
             hidden_units = [32], max_iterations = 15, learn_rate = 0.01, workers = 2, seed = 2,
             data_split_method = 'random', data_split_eval_fraction = 0.2)
         AS SELECT * FROM known",
    )
    .await
    .unwrap();
    let global = run_script(
        &session,
        "SELECT * FROM ML.GLOBAL_EXPLAIN(MODEL known_dnn) ORDER BY attribution DESC",
    )
    .await
    .unwrap();
    println!(
        "ML.GLOBAL_EXPLAIN:\n{}",
        datafusion::arrow::util::pretty::pretty_format_batches(&global).unwrap()
    );
    let features = first_column(&global);
    assert_eq!(features.len(), 10);
    let mut top: Vec<&str> = features[..2].iter().map(String::as_str).collect();
    top.sort_unstable();
    assert_eq!(top, ["x2", "x7"], "{features:?}");
    assert_eq!(features[0], "x7", "the label weighs x7 twice: {features:?}");

    let explained = run_script(
        &session,
        "SELECT label, predicted_label, predicted_label_probs, top_feature_attributions, baseline_prediction_value,
                prediction_value, approximation_error
         FROM ML.EXPLAIN_PREDICT(MODEL known_dnn, (SELECT * FROM known LIMIT 40), STRUCT(3 AS top_k_features))",
    )
    .await
    .unwrap();
    assert_eq!(rows(&explained), 40);
    let mut errors = Vec::new();
    for batch in &explained {
        let attributions = batch
            .column_by_name("top_feature_attributions")
            .unwrap()
            .as_list::<i32>();
        let probs = batch.column_by_name("predicted_label_probs").unwrap().as_list::<i32>();
        let value = batch
            .column_by_name("prediction_value")
            .unwrap()
            .as_primitive::<Float64Type>();
        let error = batch
            .column_by_name("approximation_error")
            .unwrap()
            .as_primitive::<Float64Type>();
        for row in 0..batch.num_rows() {
            assert_eq!(attributions.value(row).len(), 3);
            let row_probs = probs.value(row);
            let row_probs = row_probs
                .as_struct()
                .column_by_name("prob")
                .unwrap()
                .as_primitive::<Float64Type>();
            let highest = row_probs.values().iter().copied().fold(0.0, f64::max);
            assert!(
                (value.value(row) - highest).abs() < 1e-5,
                "the explained value is the predicted class's probability"
            );
            errors.push(error.value(row));
        }
    }
    // 20 midpoint steps: the attributions add up to the change of the probability within a few percent.
    errors.sort_by(f64::total_cmp);
    assert!(
        errors[errors.len() / 2] < 0.05,
        "median approximation error: {errors:?}"
    );
}
