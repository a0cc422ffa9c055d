//! Benchmark: hearth's whole path on generated Higgs-schema events at `local[2]` — preprocessing
//! (StringIndexer → VectorAssembler → StandardScaler, fitted and applied), one epoch of the dist-keras MLP
//! (600-600, dropout 0.2) trained by two workers through the barrier stage, and evaluation — with the
//! training compared in the same run against the ml trainer called directly on the same rows (two rank
//! threads, the same rendezvous and allreduce, no plan, codec or repartition).
//!
//! ```text
//! ./dev bench --bench end_to_end                 # 1,000,000 events, one epoch
//! ./dev bench --bench end_to_end -- 200000 2     # events, epochs
//! ```

use std::time::{Duration, Instant};

use datafusion::logical_expr::ident;
use hearth::collective::LocalWorld;
use hearth::datasets::higgs;
use hearth::prelude::*;
use hearth::torch::data::Shard;
use hearth::torch::model::ModelSpec;
use hearth::torch::train::{Loss, RankTrainer, TrainOptions};
use prettytable::{Table, row};

const WORKERS: usize = 2;
const HIDDEN: [usize; 2] = [600, 600];
const DROPOUT: f64 = 0.2;
const BATCH: usize = 128;

fn classifier(epochs: usize) -> MlpClassifier {
    MlpClassifier::new()
        .hidden_layers(HIDDEN)
        .dropout(DROPOUT)
        .workers(WORKERS)
        .epochs(epochs)
        .batch_size(BATCH)
        .seed(5)
        .device(DeviceChoice::Cpu)
        .max_attempts(1)
        .timeout(Duration::from_secs(600))
}

/// The same training with the ml library alone: the rows split in two shards, one rank thread each, with
/// the classifier's own settings.
fn train_directly(rows: &Shard, epochs: usize) -> Result<Duration, Box<dyn std::error::Error>> {
    let spec = ModelSpec::Mlp {
        inputs: rows.dim(),
        hidden: HIDDEN.to_vec(),
        outputs: 2,
        activation: Activation::Relu,
        dropout: DROPOUT,
    };
    let options = TrainOptions {
        model: spec,
        loss: Loss::SoftmaxCrossEntropy,
        settings: classifier(epochs).get_training().clone(),
    };
    let shards: Vec<Shard> = (0..WORKERS).map(|r| rows.round_robin(r, WORKERS)).collect();
    let started = Instant::now();
    let outcomes =
        LocalWorld::new(WORKERS).run(|mut comm| RankTrainer::new(&shards[comm.rank()], &options).run(&mut comm))?;
    for outcome in outcomes {
        outcome?;
    }
    Ok(started.elapsed())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let (events, epochs) = (
        args.first().copied().unwrap_or(1_000_000),
        args.get(1).copied().unwrap_or(1),
    );
    let session = Session::builder().with_default_features().local(WORKERS);
    let all = session.read_batches(higgs::schema(), higgs::batches(events, 8192, 42))?;
    let parts = all.random_split(&[0.8, 0.2], 7)?;

    let started = Instant::now();
    let preprocessing = higgs::preprocessing().fit(&parts[0]).await?;
    // Materialised once, so both trainers start from the same rows in memory.
    let train = preprocessing
        .transform(&parts[0])?
        .select(vec![ident("features"), ident("label")])?
        .cache()
        .await?;
    let train_rows = train.clone().count().await?;
    let preprocessing_time = started.elapsed();

    let started = Instant::now();
    let model = classifier(epochs).fit(&train).await?;
    let barrier_time = started.elapsed();

    let shard = Shard::from_batches(&train.clone().collect().await?, "features", "label")?;
    let direct_time = train_directly(&shard, epochs)?;

    let started = Instant::now();
    let scored = model.transform(&preprocessing.transform(&parts[1])?)?;
    let state = MulticlassClassificationEvaluator::new().state(&scored).await?;
    let auc = BinaryClassificationEvaluator::new().evaluate(&scored).await?;
    let evaluation_time = started.elapsed();

    let overhead = barrier_time.as_secs_f64() / direct_time.as_secs_f64() - 1.0;
    let mut table = Table::new();
    table.set_titles(row!["part", "seconds", "notes"]);
    table.add_row(row![
        "preprocessing",
        format!("{:.2}", preprocessing_time.as_secs_f64()),
        format!("fit + transform, {train_rows} training rows cached")
    ]);
    table.add_row(row![
        "training, barrier stage",
        format!("{:.2}", barrier_time.as_secs_f64()),
        format!("MlpClassifier {HIDDEN:?}, {epochs} epoch(s), {WORKERS} workers")
    ]);
    table.add_row(row![
        "training, ml trainer directly",
        format!("{:.2}", direct_time.as_secs_f64()),
        "baseline: same rows, two rank threads"
    ]);
    table.add_row(row![
        "evaluation",
        format!("{:.2}", evaluation_time.as_secs_f64()),
        format!(
            "test accuracy {:.4}, f1 {:.4}, areaUnderROC {auc:.4}",
            state.accuracy(),
            state.weighted_f_measure(1.0)
        )
    ]);
    println!("hearth end to end: {events} Higgs-schema events, local[{WORKERS}]");
    table.printstd();
    println!(
        "barrier-stage overhead over the direct trainer: {:+.1} % (target ≤ 10 %)",
        overhead * 100.0
    );
    Ok(())
}
