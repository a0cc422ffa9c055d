//! Trains the dist-keras Higgs MLP (600-600, dropout 0.2) on generated ATLAS Higgs-schema events with two
//! ranks averaging gradients over the ring allreduce, and reports test accuracy and area under the ROC curve.
//!
//! ```text
//! ./dev cargo run --release --example train_higgs [-- ROWS EPOCHS]      # default 100000 rows, 5 epochs
//! ```

use std::time::Instant;

use hearth::collective::LocalWorld;
use hearth::datasets::higgs;
use hearth::prelude::*;
use hearth::stats::evaluation::{BinaryState, MulticlassState};
use hearth::torch::artifact::ModelArtifact;
use hearth::torch::data::Shard;
use hearth::torch::train::{DeviceChoice, RankTrainer, TrainOptions, TrainSettings};

const WORKERS: usize = 2;

/// Train and test shards: `Label` indexed, the 30 features assembled and standardised by a hearth pipeline.
async fn prepare(rows: usize) -> Result<(Shard, Shard), Box<dyn std::error::Error>> {
    let session = Session::builder().with_default_features().local(WORKERS);
    let events = session.read_batches(higgs::schema(), higgs::batches(rows, 8192, 42))?;
    let parts = events.random_split(&[0.8, 0.2], 7)?;
    let model = higgs::preprocessing().fit(&parts[0]).await?;
    let train = Shard::from_batches(&model.transform(&parts[0])?.collect().await?, "features", "label")?;
    let test = Shard::from_batches(&model.transform(&parts[1])?.collect().await?, "features", "label")?;
    Ok((train, test))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let (rows, epochs) = (
        args.first().copied().unwrap_or(100_000),
        args.get(1).copied().unwrap_or(5),
    );
    let (train, test) = prepare(rows).await?;
    let spec = higgs::dist_keras_mlp(30);
    let settings = TrainSettings {
        epochs,
        batch_size: 128,
        device: DeviceChoice::Auto,
        ..TrainSettings::default()
    };
    let options = TrainOptions::new(spec, settings);

    let started = Instant::now();
    let outcomes = LocalWorld::new(WORKERS)
        .run(|mut comm| {
            let mine = train.round_robin(comm.rank(), WORKERS);
            RankTrainer::new(&mine, &options).run(&mut comm)
        })?
        .into_iter()
        .collect::<Result<Vec<_>, _>>()?;
    let seconds = started.elapsed().as_secs_f64();
    for outcome in &outcomes {
        let r = &outcome.report;
        println!(
            "rank {} on {}: {} rows, {} steps, {:.1} s",
            r.rank, r.device, r.rows, r.steps, r.seconds
        );
    }
    let history = outcomes[0].report.history.clone();
    for epoch in &history {
        println!(
            "epoch {}: loss {:.4}, accuracy {:.4}, {:.1} s",
            epoch.epoch,
            epoch.loss,
            epoch.accuracy.unwrap_or(f64::NAN),
            epoch.seconds
        );
    }
    let tensors = outcomes
        .into_iter()
        .find_map(|o| o.tensors)
        .ok_or("rank 0 returned no model")?;
    let artifact = ModelArtifact::new(options, tensors, history);
    let logits = artifact.predict(test.features(), test.rows())?;
    let (mut classes, mut scores) = (MulticlassState::default(), BinaryState::default());
    for (row, label) in test.labels().iter().enumerate() {
        let (background, signal) = (f64::from(logits[2 * row]), f64::from(logits[2 * row + 1]));
        classes.add(
            f64::from(*label),
            if signal > background { 1.0 } else { 0.0 },
            1.0,
            None,
        );
        scores.add(1.0 / (1.0 + (background - signal).exp()), f64::from(*label), 1.0);
    }
    println!(
        "Higgs MLP 600-600 on {} training rows, {WORKERS} ranks, {:.1} s: test accuracy {:.4}, areaUnderROC {:.4} ({} test rows)",
        train.rows(),
        seconds,
        classes.accuracy(),
        scores.area_under_roc(1000),
        test.rows()
    );
    Ok(())
}
