//! Benchmark: dist-keras's trainer strategies side by side — the Higgs MLP (600-600, dropout 0.2, Adam 1e-3)
//! on the same generated events, epochs and batches, each on two ranks (the single trainer on one): test
//! weighted F1, accuracy, areaUnderROC, seconds, samples/s and staleness. Then hearth's synchronous trainer
//! against PyTorch DDP over gloo (`benches/parity_torch.py`, two processes) on the same rows, model, batch,
//! epochs and threads, measured in the same run, best of two rounds each.
//!
//! ```text
//! ./dev bench --bench strategies                  # 100,000 events, 3 epochs
//! HEARTH_BENCH_ROWS=20000 ./dev bench --bench strategies
//! ```

#[path = "common/torch_peer.rs"]
mod torch_peer;

use std::time::Instant;

use hearth::collective::{LocalWorld, Staleness};
use hearth::datasets::higgs;
use hearth::prelude::*;
use hearth::stats::evaluation::{BinaryState, MulticlassState};
use hearth::torch::artifact::ModelArtifact;
use hearth::torch::data::Shard;
use hearth::torch::train::{
    DeviceChoice, OptimizerSpec, RankOutcome, RankTrainer, Strategy, TrainOptions, TrainSettings,
};
use prettytable::{Table, row};
use torch_peer::{Recipe, Rows};

const EPOCHS: usize = 3;
const BATCH: usize = 64;
const WORKERS: usize = 2;

/// Train and test shards (70/30) of `rows` generated events, preprocessed as dist-keras does.
async fn prepare(rows: usize) -> Result<(Shard, Shard), Box<dyn std::error::Error>> {
    let session = Session::builder().with_default_features().local(WORKERS);
    let events = session.read_batches(higgs::schema(), higgs::batches(rows, 8192, 42))?;
    let (_, prepared) = higgs::preprocessing().fit_transform(&events).await?;
    let parts = prepared.random_split(&[0.7, 0.3], 42)?;
    let shard = |batches: &[datafusion::arrow::array::RecordBatch]| Shard::from_batches(batches, "features", "label");
    Ok((
        shard(&parts[0].clone().collect().await?)?,
        shard(&parts[1].clone().collect().await?)?,
    ))
}

fn options(strategy: Strategy, threads: Option<usize>) -> TrainOptions {
    let spec = higgs::dist_keras_mlp(30);
    TrainOptions::new(
        spec,
        TrainSettings {
            epochs: EPOCHS,
            batch_size: BATCH,
            device: DeviceChoice::Cpu,
            strategy,
            threads,
            ..TrainSettings::default()
        },
    )
}

/// What one trainer did: its ranks' outcomes and the wall seconds of the whole run.
struct Run {
    outcomes: Vec<RankOutcome>,
    seconds: f64,
}

fn train(train: &Shard, options: &TrainOptions) -> Run {
    let world = if options.settings.strategy == Strategy::Single {
        1
    } else {
        WORKERS
    };
    let started = Instant::now();
    let outcomes = LocalWorld::new(world)
        .run(|mut comm| RankTrainer::new(&train.round_robin(comm.rank(), world), options).run(&mut comm))
        .expect("the ranks join")
        .into_iter()
        .collect::<Result<Vec<_>, _>>()
        .expect("training");
    Run {
        outcomes,
        seconds: started.elapsed().as_secs_f64(),
    }
}

/// Test weighted F1, accuracy and areaUnderROC of rank 0's model.
fn scores(run: Run, options: TrainOptions, test: &Shard) -> (f64, f64, f64) {
    let tensors = run
        .outcomes
        .into_iter()
        .find_map(|o| o.tensors)
        .expect("rank 0's tensors");
    let logits = ModelArtifact::new(options, tensors, Vec::new())
        .predict(test.features(), test.rows())
        .expect("prediction");
    let (mut classes, mut ranked) = (MulticlassState::default(), BinaryState::default());
    for (row, label) in test.labels().iter().enumerate() {
        let (background, signal) = (f64::from(logits[2 * row]), f64::from(logits[2 * row + 1]));
        classes.add(f64::from(*label), f64::from(u8::from(signal > background)), 1.0, None);
        ranked.add(1.0 / (1.0 + (background - signal).exp()), f64::from(*label), 1.0);
    }
    (
        classes.weighted_f_measure(1.0),
        classes.accuracy(),
        ranked.area_under_roc(1000),
    )
}

/// Seconds of DDP's training on `train`'s rows (best of `rounds`; evaluation on `test` after each epoch is not
/// timed), or why it could not run.
fn ddp_seconds(train: &Shard, test: &Shard, rounds: usize) -> Result<f64, String> {
    let rows = Rows::new(train, test)?;
    let recipe = Recipe {
        rows: &rows,
        model: options(Strategy::Synchronous, Some(1)).model,
        batch: BATCH,
        epochs: EPOCHS,
        world: WORKERS,
        threads: 1,
        shuffle: true,
        tensors: false,
        device: DeviceChoice::Cpu,
        precision: Precision::Fp32,
    };
    let runs: Vec<(OptimizerSpec, u64)> = (0..rounds).map(|_| (OptimizerSpec::adam(1e-3), 0)).collect();
    Ok(recipe
        .torch(&runs)?
        .iter()
        .map(|curve| curve.seconds.iter().sum::<f64>())
        .fold(f64::INFINITY, f64::min))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let rows = std::env::var("HEARTH_BENCH_ROWS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(100_000);
    let (train_rows, test) = prepare(rows).await?;
    let samples = (train_rows.rows() * EPOCHS) as f64;
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    println!(
        "{rows} generated Higgs events ({} train / {} test), MLP 600-600, {EPOCHS} epochs, batches of {BATCH}, {cores} cores",
        train_rows.rows(),
        test.rows()
    );

    let mut table = Table::new();
    table.set_titles(row![
        "trainer",
        "ranks",
        "F1",
        "accuracy",
        "areaUnderROC",
        "seconds",
        "samples/s",
        "staleness mean/max"
    ]);
    for strategy in higgs::dist_keras_trainers() {
        let options = options(strategy.clone(), None);
        let run = train(&train_rows, &options);
        let seconds = run.seconds;
        let ranks = run.outcomes.len();
        let staleness = Staleness::combine(run.outcomes.iter().filter_map(|o| o.report.staleness))
            .map_or("-".to_string(), |s| format!("{:.2} / {}", s.mean, s.max));
        let (f1, accuracy, auc) = scores(run, options, &test);
        table.add_row(row![
            strategy.name(),
            ranks,
            format!("{f1:.4}"),
            format!("{accuracy:.4}"),
            format!("{auc:.4}"),
            format!("{seconds:.1}"),
            format!("{:.0}", samples / seconds),
            staleness
        ]);
    }
    table.printstd();

    // The synchronous trainer against DDP, both with one thread per rank, best of two rounds each.
    let one_thread = options(Strategy::Synchronous, Some(1));
    let synchronous_seconds = (0..2)
        .map(|_| train(&train_rows, &one_thread).seconds)
        .fold(f64::INFINITY, f64::min);
    match ddp_seconds(&train_rows, &test, 2) {
        Ok(ddp) => {
            let mut against = Table::new();
            against.set_titles(row!["trainer (2 ranks, 1 thread each)", "seconds", "samples/s"]);
            against.add_row(row![
                "hearth synchronous (ring allreduce)",
                format!("{synchronous_seconds:.1}"),
                format!("{:.0}", samples / synchronous_seconds)
            ]);
            against.add_row(row![
                "PyTorch DDP (gloo)",
                format!("{ddp:.1}"),
                format!("{:.0}", samples / ddp)
            ]);
            against.printstd();
            println!("hearth / DDP samples/s: {:.2}", ddp / synchronous_seconds);
        }
        Err(why) => println!("DDP not measured: {why}"),
    }
    Ok(())
}
