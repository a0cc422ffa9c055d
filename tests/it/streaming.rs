//! Ranks whose rows are beyond their memory budget: the partition is spilled to disk as it arrives and the
//! rank trains from a stream through a shuffle buffer, holding a bounded part of its rows at once; in SQL,
//! `max_rank_memory_mb` does the same, and explanations start from the same training means.

use std::time::Duration;

use datafusion::arrow::array::AsArray;
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Float64Type};
use hearth::prelude::*;
use hearth::sql::ModelCatalog;

use crate::sql::{credit_session, run_script};

/// Rows the tests train on: 8 deterministic features and a label that two of them decide, every row distinct
/// (equal rows sort together in a partition's canonical order, which a shuffle buffer smaller than their
/// number cannot mix).
const ROWS: usize = 400_000;

/// A 4 MiB budget, against about 14 MiB of rows per rank.
const BUDGET: u64 = 4 << 20;

async fn rows(session: &Session) -> DataFrame {
    let features: Vec<String> = (1..=8)
        .map(|i| format!("CAST((x * {}) % 1000003 AS DOUBLE) / 1000003.0", 7919 * i + 13))
        .collect();
    let sql = format!(
        "SELECT ml_vector_assemble('error', {features}) AS features, \
                CASE WHEN (x * 7932) % 1000003 + (x * 15851) % 1000003 > 1000003 THEN 1.0 ELSE 0.0 END AS label, \
                x % 10 = 0 AS is_validation \
         FROM generate_series(1, {ROWS}) AS t(x)",
        features = features.join(", ")
    );
    session.context().sql(&sql).await.unwrap()
}

fn mlp() -> MlpClassifier {
    MlpClassifier::new()
        .hidden_layers([16])
        .workers(2)
        .epochs(2)
        .batch_size(256)
        .seed(11)
        .device(DeviceChoice::Cpu)
        .timeout(Duration::from_secs(60))
}

/// Each epoch's training loss.
fn losses(model: &ClassificationModel) -> Vec<f64> {
    model.history().iter().map(|e| e.loss).collect()
}

async fn accuracy(model: &ClassificationModel, df: &DataFrame) -> f64 {
    MulticlassClassificationEvaluator::new()
        .metric_name("accuracy")
        .evaluate(&model.transform(df).unwrap())
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rank_beyond_its_budget_streams_and_trains_what_it_would_in_memory() {
    let session = Session::builder().with_default_features().local(2);
    let df = rows(&session).await;
    let held = mlp().fit(&df).await.unwrap();
    assert!(
        held.summary().ranks.iter().all(|r| !r.streamed),
        "{:?}",
        held.summary().ranks
    );

    // A buffer that holds every row: the rows come back from disk in the order memory gives them, so the
    // model is the same to the bit.
    let whole_buffer = mlp()
        .memory_budget(BUDGET)
        .shuffle_buffer_rows(ROWS)
        .fit(&df)
        .await
        .unwrap();
    assert!(
        whole_buffer.summary().ranks.iter().all(|r| r.streamed),
        "{:?}",
        whole_buffer.summary().ranks
    );
    assert_eq!(whole_buffer.artifact().tensors, held.artifact().tensors);
    assert_eq!(losses(&whole_buffer), losses(&held));

    // The default buffer (a quarter of the budget): another shuffle, a model as good.
    let streamed = mlp().memory_budget(BUDGET).fit(&df).await.unwrap();
    let ranks = &streamed.summary().ranks;
    assert_eq!(ranks.iter().map(|r| r.rows).sum::<usize>(), ROWS);
    let held_peak = held.summary().ranks.iter().map(|r| r.peak_bytes).min().unwrap();
    for rank in ranks {
        assert!(rank.streamed, "{rank:?}");
        // What the rank held at once stayed within its budget, far below its rows' size in memory.
        assert!(
            rank.peak_bytes <= BUDGET,
            "rank {} held {} bytes",
            rank.rank,
            rank.peak_bytes
        );
        assert!(
            rank.peak_bytes * 3 < held_peak,
            "rank {}: {} against {held_peak}",
            rank.rank,
            rank.peak_bytes
        );
    }
    let (in_memory, from_disk) = (accuracy(&held, &df).await, accuracy(&streamed, &df).await);
    assert!(in_memory > 0.9, "in memory: accuracy {in_memory}");
    assert!(
        (in_memory - from_disk).abs() < 0.02,
        "in memory {in_memory}, streamed {from_disk}: {:?} against {:?}",
        streamed.history(),
        held.history()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamed_validation_rows_decide_early_stopping_as_held_ones_do() {
    let session = Session::builder().with_default_features().local(2);
    let df = rows(&session).await;
    let network = || {
        mlp()
            .epochs(3)
            .validation_indicator_col("is_validation")
            .early_stopping(1, 0.0)
    };
    let held = network().fit(&df).await.unwrap();
    let streamed = network()
        .memory_budget(BUDGET)
        .shuffle_buffer_rows(ROWS)
        .fit(&df)
        .await
        .unwrap();
    assert!(streamed.summary().ranks.iter().all(|r| r.streamed));
    assert_eq!(streamed.artifact().tensors, held.artifact().tensors);
    let validation = |model: &ClassificationModel| -> Vec<Option<f64>> {
        model.history().iter().map(|e| e.validation_loss).collect()
    };
    assert_eq!(validation(&streamed), validation(&held));
    assert!(validation(&held).iter().all(Option::is_some));
}

/// Twelve columns of 60,000 rows; the label is made from `x2` and `x7`.
const WIDE: &str = "CREATE TABLE wide AS
    SELECT x0, x1, x2, x3, x4, x5, x6, x7, x8, x9, x10, x11,
           CASE WHEN x2 + 2 * x7 > 0.1 THEN 'yes' ELSE 'no' END AS label
    FROM (SELECT sin(i * 1.37) AS x0, sin(i * 2.71 + 1) AS x1, sin(i * 0.93 + 2) AS x2, sin(i * 3.17 + 3) AS x3,
                 sin(i * 1.91 + 4) AS x4, sin(i * 2.29 + 5) AS x5, sin(i * 0.61 + 6) AS x6, sin(i * 1.53 + 7) AS x7,
                 sin(i * 2.97 + 8) AS x8, sin(i * 0.77 + 9) AS x9, sin(i * 1.13 + 10) AS x10,
                 sin(i * 2.43 + 11) AS x11
          FROM generate_series(1, 60000) AS t(i))";

/// `CREATE MODEL name` of a two-rank classifier of `wide`, with `options` added.
fn create_wide(name: &str, options: &str) -> String {
    format!(
        "CREATE MODEL {name} OPTIONS (model_type = 'dnn_classifier', input_label_cols = ['label'],
             hidden_units = [16], max_iterations = 2, batch_size = 256, workers = 2, seed = 5{options})
         AS SELECT * FROM wide"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sql_max_rank_memory_streams_and_explanations_use_the_same_training_means() {
    let models = tempfile::tempdir().unwrap();
    let session = credit_session(models.path()).await;
    run_script(&session, WIDE).await.unwrap();
    run_script(&session, &create_wide("held", "")).await.unwrap();
    // 1 MiB per rank against about 3 MiB of assembled rows each, a buffer that holds them all.
    let streamed = create_wide("streamed", ", max_rank_memory_mb = 1, shuffle_buffer_rows = 60000");
    run_script(&session, &streamed).await.unwrap();

    let catalog = ModelCatalog::new(models.path());
    let classifier = |name: &str| {
        let model = catalog.get(name).unwrap();
        let last = model.pipeline.stages().last().unwrap();
        last.downcast_ref::<ClassificationModel>().unwrap().clone()
    };
    let (held, streamed) = (classifier("held"), classifier("streamed"));
    assert!(held.summary().ranks.iter().all(|r| !r.streamed));
    assert!(
        streamed.summary().ranks.iter().all(|r| r.streamed),
        "{:?}",
        streamed.summary().ranks
    );
    assert_eq!(streamed.artifact().tensors, held.artifact().tensors);

    // The baseline ML.EXPLAIN_PREDICT starts from is the training rows' mean, computed beside training by a
    // DataFusion aggregate, whose partial sums meet in any order: the same to 1e-9, not to the last bit.
    let explain = |name: &str| {
        let session = session.clone();
        let sql = format!("SELECT feature, attribution FROM ML.GLOBAL_EXPLAIN(MODEL {name}) ORDER BY feature");
        async move {
            let batches = run_script(&session, &sql).await.unwrap();
            let mut rows = Vec::new();
            for batch in &batches {
                let features = cast(batch.column(0), &DataType::Utf8).unwrap();
                let attributions = cast(batch.column(1), &DataType::Float64).unwrap();
                let (features, attributions) =
                    (features.as_string::<i32>(), attributions.as_primitive::<Float64Type>());
                for row in 0..batch.num_rows() {
                    rows.push((features.value(row).to_string(), attributions.value(row)));
                }
            }
            rows
        }
    };
    let (from_memory, from_disk) = (explain("held").await, explain("streamed").await);
    assert_eq!(from_memory.len(), from_disk.len(), "{from_memory:?}\n{from_disk:?}");
    for ((feature, held), (same, streamed)) in from_memory.iter().zip(&from_disk) {
        assert_eq!(feature, same);
        assert!(
            (held - streamed).abs() <= 1e-9 * held.abs().max(1e-12),
            "{feature}: {held} against {streamed}"
        );
    }
    assert!(
        from_memory.iter().any(|(feature, _)| feature == "x7"),
        "{from_memory:?}"
    );
}
