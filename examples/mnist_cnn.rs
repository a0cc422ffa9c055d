//! The MNIST CNN sparklyr users train with `spark_apply(barrier = TRUE)`, as one hearth program: read MNIST's
//! IDX files as a table of 784-pixel images, train Keras's `mnist_cnn` model (Conv2D 32 → Conv2D 64 →
//! MaxPool → Dropout → Dense 128 → Dropout → Dense 10) on two workers that average every step's gradients,
//! and report test accuracy, F1 and images/s.
//!
//! ```text
//! ./dev cargo run --release --example mnist_cnn                  # 10,000 training images, 3 epochs, 2 workers
//! ./dev cargo run --release --example mnist_cnn -- --epochs 5 --workers 1
//! ./dev cargo run --release --example mnist_cnn -- --master df://HOST:PORT   # on a fleet
//! ```
//!
//! It trains on the 10,000 MNIST training images shipped in `datasets/mnist/` and tests on the official
//! 10,000-image test set where `../shared/datasets/mnist/` holds it; without it, on a fifth of the training
//! images held out (and says so). Training uses Adam at 0.001 decaying by 0.7 an epoch, and shifts each image
//! by up to 2 pixels at random (`--crop-padding 0` turns that off).

use std::time::Instant;

use clap::Parser;
use hearth::datasets::mnist;
use hearth::prelude::*;
use hearth::torch::train::{Augmentation, DeviceChoice, LrSchedule, OptimizerSpec};

/// Train Keras's MNIST CNN on two workers and test it.
#[derive(Parser)]
struct Args {
    /// Passes over the training images.
    #[arg(long, default_value_t = 3)]
    epochs: usize,
    /// Workers, each training on its share of the images.
    #[arg(long, default_value_t = 2)]
    workers: usize,
    /// Images per step on each worker.
    #[arg(long, default_value_t = 64)]
    batch_size: usize,
    /// Multiply the learning rate by this every epoch (1: constant).
    #[arg(long, default_value_t = 0.7)]
    decay: f64,
    /// Shift each training image by up to this many pixels, at random (0: off).
    #[arg(long, default_value_t = 2)]
    crop_padding: usize,
    /// Seed of the weights, the shuffles and the held-out split.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Where to run: local[N] (default: local[workers]), standalone[N] or a fleet's df://HOST:PORT; the images
    /// are read here and travel to the fleet in the plan.
    #[arg(long)]
    master: Option<String>,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let session = match &args.master {
        Some(master) => Session::builder().with_default_features().connect(master).await?,
        None => Session::builder().with_default_features().local(args.workers),
    };
    let images = mnist::train(&session)?;
    let (train, test, tested_on) = match mnist::official_test(&session)? {
        Some(test) => (images, test, "the official MNIST test set"),
        None => {
            let parts = images.random_split(&[0.8, 0.2], args.seed)?;
            let [train, test]: [DataFrame; 2] = parts.try_into().map_err(|_| "random_split gave no 2 parts")?;
            (
                train,
                test,
                "a held-out fifth of the training images (../shared/datasets/mnist is absent)",
            )
        }
    };
    let cnn = SequentialClassifier::new(mnist::IMAGE_SHAPE, mnist::keras_cnn())
        .features_col("image")
        .label_col("label")
        .workers(args.workers)
        .epochs(args.epochs)
        .batch_size(args.batch_size)
        .optimizer(OptimizerSpec::adam(1e-3))
        .schedule(LrSchedule::Exponential { gamma: args.decay })
        .augmentation(Augmentation {
            horizontal_flip: false,
            crop_padding: args.crop_padding,
        })
        .seed(args.seed)
        .device(DeviceChoice::Auto);
    let started = Instant::now();
    let model = cnn.fit(&train).await?;
    let seconds = started.elapsed().as_secs_f64();
    for epoch in model.history() {
        println!(
            "epoch {}: loss {:.4}, training accuracy {:.4}, {:.1} s",
            epoch.epoch,
            epoch.loss,
            epoch.accuracy.unwrap_or(f64::NAN),
            epoch.seconds
        );
    }
    let ranks = &model.summary().ranks;
    let rows: usize = ranks.iter().map(|r| r.rows).sum();
    for rank in ranks {
        println!(
            "rank {} on {}: {} images, {} steps",
            rank.rank, rank.device, rank.rows, rank.steps
        );
    }
    let scored = model.transform(&test)?;
    let evaluator = MulticlassClassificationEvaluator::new();
    let accuracy = evaluator.clone().metric_name("accuracy").evaluate(&scored).await?;
    let f1 = evaluator.evaluate(&scored).await?;
    println!(
        "Keras MNIST CNN on {rows} training images, {} workers, {} epochs, {seconds:.1} s ({:.0} images/s): test accuracy {accuracy:.4}, f1 {f1:.4} on {tested_on} ({} images)",
        args.workers,
        args.epochs,
        (rows * args.epochs) as f64 / seconds,
        test.clone().count().await?
    );
    Ok(())
}
