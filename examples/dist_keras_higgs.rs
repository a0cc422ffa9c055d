//! dist-keras's "Distributed Deep Learning" walk-through, as one hearth program: read the ATLAS Higgs
//! challenge CSV, index `Label`, assemble and standardise the 30 features, split 0.7/0.3, and train the
//! Keras MLP (Dense 600 ReLU, Dropout 0.2, Dense 600 ReLU, Dense 2) with each of dist-keras's trainers —
//! then compare weighted F1, accuracy, areaUnderROC, wall time, samples/s and staleness in one table.
//!
//! ```text
//! ./dev cargo run --release --example dist_keras_higgs                     # 100,000 generated events, local[2]
//! ./dev cargo run --release --example dist_keras_higgs -- --csv atlas-higgs-challenge-2014-v2.csv
//! ./dev cargo run --release --example dist_keras_higgs -- --master df://127.0.0.1:50050 --rows 200000
//! ```
//!
//! Without `--csv` it writes generated events in the challenge's layout to a temporary CSV and reads that;
//! the real file (CERN Open Data record 328: CRLF lines, −999.0 for undefined values, `KaggleSet` and
//! `KaggleWeight` columns) reads the same way. `--weight-col Weight` weighs each event in training and in the
//! evaluators.

use std::path::PathBuf;
use std::time::Instant;

use clap::Parser;
use hearth::collective::Staleness;
use hearth::datasets::higgs;
use hearth::prelude::*;
use prettytable::format::consts::FORMAT_NO_LINESEP_WITH_TITLE;
use prettytable::{Table, row};

/// Compare dist-keras's distributed trainers on ATLAS Higgs data.
#[derive(Parser)]
struct Args {
    /// The challenge CSV (default: generated events in its layout).
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Events to generate without --csv.
    #[arg(long, default_value_t = 100_000)]
    rows: usize,
    /// Epochs each trainer runs.
    #[arg(long, default_value_t = 3)]
    epochs: usize,
    /// Workers of every trainer but the single one.
    #[arg(long, default_value_t = 2)]
    workers: usize,
    /// Rows per step on each worker.
    #[arg(long, default_value_t = 64)]
    batch_size: usize,
    /// `local[N]`, `standalone[N]` or a fleet's `df://host:port` (default `local[workers]`).
    #[arg(long)]
    master: Option<String>,
    /// Only these trainers (comma-separated names from the table, e.g. `synchronous,downpour`).
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// A sample-weight column (the challenge's `Weight`): training and the evaluators weigh each event by it.
    #[arg(long)]
    weight_col: Option<String>,
    /// Multiply the workers' learning rate by this every epoch (default: a constant rate, as dist-keras).
    #[arg(long)]
    decay: Option<f64>,
    /// Seed of the split and of every trainer.
    #[arg(long, default_value_t = 42)]
    seed: u64,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let master = args
        .master
        .clone()
        .unwrap_or_else(|| format!("local[{}]", args.workers));
    let session = Session::builder().with_default_features().connect(&master).await?;
    let generated = tempfile::tempdir()?;
    let csv = match &args.csv {
        Some(path) => path.clone(),
        None => {
            let path = generated.path().join("higgs.csv");
            higgs::write_csv(&path, args.rows, args.seed)?;
            path
        }
    };
    let events = session.read_csv(&csv, &CsvOptions::new().infer_schema(true)).await?;
    let started = Instant::now();
    let prepared = higgs::preprocessing().fit(&events).await?.transform(&events)?;
    let parts = prepared.random_split(&[0.7, 0.3], args.seed)?;
    let (train, test) = (&parts[0], &parts[1]);
    let train_rows = train.clone().count().await?;
    println!(
        "{} events from {} on {master}: preprocessed and split in {:.1} s ({train_rows} train / {} test rows)",
        train_rows + test.clone().count().await?,
        args.csv
            .as_ref()
            .map_or("generated data".to_string(), |p| p.display().to_string()),
        started.elapsed().as_secs_f64(),
        test.clone().count().await?,
    );

    let mut table = Table::new();
    table.set_format(*FORMAT_NO_LINESEP_WITH_TITLE);
    table.set_titles(row![
        "trainer",
        "workers",
        "F1",
        "accuracy",
        "areaUnderROC",
        "seconds",
        "samples/s",
        "staleness mean/max"
    ]);
    for strategy in higgs::dist_keras_trainers() {
        if !args.only.is_empty() && !args.only.iter().any(|name| name == strategy.name()) {
            continue;
        }
        let mut mlp = MlpClassifier::new()
            .hidden_layers([600, 600])
            .dropout(0.2)
            .workers(args.workers)
            .epochs(args.epochs)
            .batch_size(args.batch_size)
            .seed(args.seed)
            .schedule(
                args.decay
                    .map_or(LrSchedule::Constant, |gamma| LrSchedule::Exponential { gamma }),
            )
            .strategy(strategy.clone());
        if let Some(weight) = &args.weight_col {
            mlp = mlp.weight_col(weight);
        }
        let fitted = Instant::now();
        let model = mlp.fit(train).await?;
        let seconds = fitted.elapsed().as_secs_f64();
        let scored = model.transform(test)?;
        let mut multiclass = MulticlassClassificationEvaluator::new();
        let mut binary = BinaryClassificationEvaluator::new();
        if let Some(weight) = &args.weight_col {
            multiclass = multiclass.weight_col(weight);
            binary = binary.weight_col(weight);
        }
        let state = multiclass.state(&scored).await?;
        let ranks = &model.summary().ranks;
        let staleness = Staleness::combine(ranks.iter().filter_map(|r| r.staleness))
            .map_or("-".to_string(), |s| format!("{:.2} / {}", s.mean, s.max));
        table.add_row(row![
            strategy.name(),
            ranks.len(),
            format!("{:.4}", multiclass.clone().metric_name("f1").metric(&state)?),
            format!("{:.4}", multiclass.metric_name("accuracy").metric(&state)?),
            format!("{:.4}", binary.metric_name("areaUnderROC").evaluate(&scored).await?),
            format!("{seconds:.1}"),
            format!("{:.0}", (train_rows * args.epochs) as f64 / seconds),
            staleness
        ]);
        eprintln!("{} done in {seconds:.1} s", strategy.name());
    }
    println!(
        "\nThe Higgs MLP 600-600 (dropout 0.2, Adam 1e-3, batches of {}), {} epochs per trainer, tested on the 30 %",
        args.batch_size, args.epochs
    );
    table.printstd();
    Ok(())
}
