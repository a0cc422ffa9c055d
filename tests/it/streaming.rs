//! Ranks whose rows are beyond their memory budget: the partition is spilled to disk as it arrives and the
//! rank trains from a stream through a shuffle buffer, holding a bounded part of its rows at once.

use std::time::Duration;

use hearth::prelude::*;

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
    let session = Session::local(2);
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
    let session = Session::local(2);
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
