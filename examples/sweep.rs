//! The Slurm batch scripts' parameter sweep as one hearth program: the main job's German credit data,
//! preprocessed by its pipeline, and an MLP tried over a grid of hidden layers, learning rates and epochs —
//! `--parallelism` trials at a time, each trial's workers its own barrier stage, cross-validated or on a
//! train-validation split — then every trial's figures and the best one, refitted on all rows.
//!
//! ```text
//! ./dev cargo run --release --example sweep                          # 8 trials × 2 workers, 2 at a time, local[4]
//! ./dev cargo run --release --example sweep -- --folds 3             # cross-validation
//! ./dev cargo run --release --example sweep -- --master df://127.0.0.1:50050   # on a fleet
//! ```

use std::time::Instant;

use clap::Parser;
use hearth::datasets::german_credit;
use hearth::prelude::*;
use hearth::preprocessing::tuning::{CrossValidator, ParamGridBuilder, TrainValidationSplit, TuningModel};
use hearth::torch::train::{DeviceChoice, OptimizerSpec};
use prettytable::format::consts::FORMAT_NO_LINESEP_WITH_TITLE;
use prettytable::{Table, row};

/// Sweep an MLP's hyperparameters on the German credit data.
#[derive(Parser)]
struct Args {
    /// Trials running at once.
    #[arg(long, default_value_t = 2)]
    parallelism: usize,
    /// Workers of each trial.
    #[arg(long, default_value_t = 2)]
    workers: usize,
    /// Cross-validate with this many folds (default: one train-validation split, 75/25).
    #[arg(long)]
    folds: Option<usize>,
    /// `local[N]`, `standalone[N]` or a fleet's `df://host:port` (default `local[parallelism × workers]`).
    #[arg(long)]
    master: Option<String>,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let master = args
        .master
        .clone()
        .unwrap_or_else(|| format!("local[{}]", args.parallelism * args.workers));
    let session = Session::builder().with_default_features().connect(&master).await?;
    let credit = session.read_csv(german_credit::csv_path(), &CsvOptions::new()).await?;
    let df = german_credit::preprocessing().fit(&credit).await?.transform(&credit)?;
    let grid = ParamGridBuilder::new()
        .add_grid("hiddenLayers", [vec![16], vec![64, 32]])
        .add_grid(
            "training.optimizer",
            [OptimizerSpec::adam(1e-3), OptimizerSpec::adam(1e-2)],
        )
        .add_grid("training.epochs", [5, 20])
        .build()?;
    let trials = grid.len();
    let mlp = MlpClassifier::new()
        .workers(args.workers)
        .seed(7)
        .device(DeviceChoice::Cpu);
    let evaluator = BinaryClassificationEvaluator::new();
    let started = Instant::now();
    let tuned: TuningModel = match args.folds {
        Some(folds) => {
            CrossValidator::new(mlp, grid, evaluator)
                .num_folds(folds)
                .parallelism(args.parallelism)
                .fit(&df)
                .await?
        }
        None => {
            TrainValidationSplit::new(mlp, grid, evaluator)
                .parallelism(args.parallelism)
                .fit(&df)
                .await?
        }
    };
    let seconds = started.elapsed().as_secs_f64();
    let mut table = Table::new();
    table.set_format(*FORMAT_NO_LINESEP_WITH_TITLE);
    table.set_titles(row![
        "trial",
        "hidden",
        "Adam rate",
        "epochs",
        "areaUnderROC",
        "± std",
        "ran s",
        "best"
    ]);
    for trial in tuned.trials() {
        let param = |name: &str| trial.params.get(name).map(ToString::to_string).unwrap_or_default();
        table.add_row(row![
            trial.index,
            param("hiddenLayers"),
            trial
                .params
                .get("training.optimizer")
                .and_then(|o| o.get("learning_rate"))
                .map(ToString::to_string)
                .unwrap_or_default(),
            param("training.epochs"),
            format!("{:.4}", trial.metric),
            format!("{:.4}", trial.std),
            format!("{:.1}-{:.1}", trial.started, trial.finished),
            if trial.index == tuned.best_trial().index {
                "*"
            } else {
                ""
            }
        ]);
    }
    let (trial_seconds, refit_seconds) = tuned.seconds();
    println!(
        "{trials} trials × {} workers on {master}, {} at a time, {}: trials {trial_seconds:.1} s, refit of the best {refit_seconds:.1} s, {seconds:.1} s in all",
        args.workers,
        args.parallelism,
        match args.folds {
            Some(folds) => format!("{folds}-fold cross-validation"),
            None => "a 75/25 train-validation split".to_string(),
        }
    );
    table.printstd();
    Ok(())
}
