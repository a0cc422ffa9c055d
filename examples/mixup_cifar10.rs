//! The MixUp notebook on CIFAR-10: the Keras CNN (Conv2D, BatchNorm, MaxPool, Dropout, Dense) trained on two
//! workers with and without MixUp (Beta(α, α) mixing of image pairs and their labels, α = 0.2 as in the
//! notebook), optionally with random flips and crops, and tested.
//!
//! ```text
//! ./dev cargo run --release --example mixup_cifar10                          # the 20-image sample, 5 folds
//! ./dev cargo run --release --example mixup_cifar10 -- --data-dir cifar-10-batches-bin --epochs 10
//! ./dev cargo run --release --example mixup_cifar10 -- --fashion-mnist  # keras.io's MixUp example instead
//! ```
//!
//! With `--data-dir` (the batches of `cifar-10-binary.tar.gz`) it trains on the 50,000 training images and
//! tests on the 10,000 test images. Without it, it runs on the 20 images shipped in `datasets/cifar10/` by
//! 5-fold cross-validation (16 to train, 4 to test, each image tested once): enough to run every part, far too
//! few for the accuracy to mean anything. `--fashion-mnist` runs keras.io's MixUp example instead — its CNN on
//! the 10,000 Fashion-MNIST images shipped in `datasets/`, 8,000 to train and 2,000 to test — for a figure that
//! does.

use std::path::PathBuf;
use std::time::Instant;

use clap::Parser;
use datafusion::prelude::{col, lit};
use hearth::datasets::{cifar10, fashion_mnist};
use hearth::prelude::*;
use hearth::torch::train::{Augmentation, DeviceChoice};
use prettytable::format::consts::FORMAT_NO_LINESEP_WITH_TITLE;
use prettytable::{Table, row};

/// Train the MixUp notebook's CNN with and without MixUp.
#[derive(Parser)]
struct Args {
    /// The CIFAR-10 binary batches (data_batch_1.bin … test_batch.bin); default the shipped 20-image sample.
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// keras.io's MixUp example: its CNN on the shipped Fashion-MNIST images (80/20 split) instead of CIFAR-10.
    #[arg(long, conflicts_with = "data_dir")]
    fashion_mnist: bool,
    /// Passes over the training images.
    #[arg(long, default_value_t = 5)]
    epochs: usize,
    /// MixUp's α.
    #[arg(long, default_value_t = 0.2)]
    alpha: f64,
    /// Also flip images left–right and crop them from a 4-pixel padding (random, while training).
    #[arg(long)]
    augment: bool,
    /// Workers.
    #[arg(long, default_value_t = 2)]
    workers: usize,
    /// Images per step on each worker.
    #[arg(long, default_value_t = 64)]
    batch_size: usize,
    /// Seed of the weights, the shuffles, MixUp and the folds.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

/// (correct, tested, training images × epochs, seconds) of one training run tested on `test`.
async fn run(
    args: &Args,
    mixup: Option<f64>,
    train: &DataFrame,
    test: &DataFrame,
) -> Result<(f64, f64, f64, f64), Box<dyn std::error::Error>> {
    let (shape, layers) = match args.fashion_mnist {
        true => (fashion_mnist::IMAGE_SHAPE, fashion_mnist::mixup_cnn()),
        false => (cifar10::IMAGE_SHAPE, cifar10::mixup_cnn()),
    };
    let mut cnn = SequentialClassifier::new(shape, layers)
        .features_col("image")
        .label_col("label")
        .workers(args.workers)
        .epochs(args.epochs)
        .batch_size(args.batch_size)
        .seed(args.seed)
        .device(DeviceChoice::Auto);
    if let Some(alpha) = mixup {
        cnn = cnn.mixup_alpha(alpha);
    }
    if args.augment {
        cnn = cnn.augmentation(Augmentation {
            horizontal_flip: true,
            crop_padding: 4,
        });
    }
    let started = Instant::now();
    let model = cnn.fit(train).await?;
    let seconds = started.elapsed().as_secs_f64();
    let rows: usize = model.summary().ranks.iter().map(|r| r.rows).sum();
    let scored = model.transform(test)?;
    let tested = test.clone().count().await? as f64;
    let accuracy = MulticlassClassificationEvaluator::new()
        .metric_name("accuracy")
        .evaluate(&scored)
        .await?;
    Ok((accuracy * tested, tested, (rows * args.epochs) as f64, seconds))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let session = Session::builder().with_default_features().local(args.workers);
    // (train, test) pairs: the real split, or the sample's five folds.
    let splits: Vec<(DataFrame, DataFrame)> = match &args.data_dir {
        Some(dir) => vec![cifar10::batches(&session, dir)?],
        None if args.fashion_mnist => {
            let parts = fashion_mnist::images(&session)?.random_split(&[0.8, 0.2], args.seed)?;
            vec![(parts[0].clone(), parts[1].clone())]
        }
        None => {
            session.register("cifar", &cifar10::sample(&session)?)?;
            let folded = session
                .sql(&format!(
                    "SELECT image, label, CAST(floor(ml_row_uniform({}, image) * 5) AS INT) AS fold FROM cifar",
                    args.seed
                ))
                .await?;
            (0..5)
                .map(|fold| {
                    Ok((
                        folded.clone().filter(col("fold").not_eq(lit(fold)))?,
                        folded.clone().filter(col("fold").eq(lit(fold)))?,
                    ))
                })
                .collect::<Result<_, datafusion::error::DataFusionError>>()?
        }
    };
    let mut table = Table::new();
    table.set_format(*FORMAT_NO_LINESEP_WITH_TITLE);
    table.set_titles(row!["training", "test accuracy", "tested", "seconds", "images/s"]);
    for (name, mixup) in [("no MixUp", None), ("MixUp", Some(args.alpha))] {
        let (mut correct, mut tested, mut images, mut seconds) = (0.0, 0.0, 0.0, 0.0);
        for (train, test) in &splits {
            let (c, t, i, s) = run(&args, mixup, train, test).await?;
            (correct, tested, images, seconds) = (correct + c, tested + t, images + i, seconds + s);
        }
        let label = match mixup {
            Some(alpha) => format!("{name} (α = {alpha})"),
            None => name.to_string(),
        };
        table.add_row(row![
            label + if args.augment { ", flips + crops" } else { "" },
            format!("{:.4}", correct / tested),
            tested,
            format!("{seconds:.1}"),
            format!("{:.0}", images / seconds)
        ]);
    }
    match &args.data_dir {
        Some(dir) => println!(
            "CIFAR-10 from {}: {} epochs, {} workers",
            dir.display(),
            args.epochs,
            args.workers
        ),
        None if args.fashion_mnist => println!(
            "keras.io's MixUp example: its CNN on Fashion-MNIST, 80/20 of the 10,000 shipped images, {} epochs, {} workers",
            args.epochs, args.workers
        ),
        None => println!(
            "the 20-image CIFAR-10 sample, 5-fold cross-validation: {} epochs, {} workers (too few images for the accuracy to mean anything)",
            args.epochs, args.workers
        ),
    }
    table.printstd();
    Ok(())
}
