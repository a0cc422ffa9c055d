//! Benchmark: the same model trained again and again in one process, as a SQL script with several models, a
//! tuning run, a notebook or a long-lived server trains them. In one SQL session on `local[2]`, over the
//! generated Higgs events through a TRANSFORM (the jet count one-hot encoded, every slot standardised): three
//! identical `CREATE MODEL`s of the dist-keras MLP 600-600 (dropout 0.2, batch 64, `device = 'cpu'`) for SGD,
//! Adagrad and Adam on one worker and on two, each run's samples/s against the first's; beside them PyTorch's
//! own three runs of the same recipe in one Python process with the same threads (a plain loop with both cores
//! at one worker, DDP over gloo with one thread per rank at two). Then a 20-trial `num_trials` tuning run, its first
//! trial's samples/s against its last's. Goal: every run within 10 % of the first.
//!
//! ```text
//! ./dev bench --bench repeated                 # 100,000 events, 2 epochs a model, 20 trials
//! ./dev bench --bench repeated -- 20000 1 5    # events, epochs, trials
//! ```

#[path = "common/torch_peer.rs"]
mod torch_peer;

use datafusion::arrow::array::{AsArray, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Float64Type};
use hearth::datasets::higgs;
use hearth::prelude::*;
use hearth::sql::{SqlSessionExt, parse_statements};
use hearth::torch::data::Shard;
use hearth::torch::train::OptimizerSpec;
use prettytable::{Table, row};
use torch_peer::{Recipe, Rows};

const RUNS: usize = 3;
const SEED: u64 = 1;

/// The model's TRANSFORM: the 29 numeric features, the jet count one-hot encoded, all standardised.
fn transform() -> String {
    let numeric: Vec<&str> = higgs::FEATURES
        .iter()
        .copied()
        .filter(|f| *f != "PRI_jet_num")
        .collect();
    format!(
        "TRANSFORM (ML.STANDARD_SCALER(ML.VECTOR_ASSEMBLER({}, \
         ML.ONE_HOT_ENCODER(ML.STRING_INDEXER(PRI_jet_num) OVER ()) OVER ()), with_mean => TRUE) OVER () AS features, \
         Label)",
        numeric.join(", ")
    )
}

fn create_model(name: &str, optimizer: &str, workers: usize, epochs: usize, tuning: &str) -> String {
    let learn_rate = if optimizer == "adam" { "0.001" } else { "0.01" };
    format!(
        "CREATE OR REPLACE MODEL {name} OPTIONS (model_type = 'mlp_classifier', input_label_cols = ['Label'], \
         hidden_units = [600, 600], dropout = 0.2, optimizer = '{optimizer}', learn_rate = {learn_rate}, \
         max_iterations = {epochs}, batch_size = 64, seed = {SEED}, workers = {workers}, device = 'cpu'{tuning}) \
         {} AS SELECT * FROM higgs",
        transform()
    )
}

async fn run(session: &Session, sql: &str) -> Result<Vec<RecordBatch>, Box<dyn std::error::Error>> {
    let mut last = Vec::new();
    for statement in parse_statements(sql)? {
        last = session.execute(&statement).await?.collect().await?;
    }
    Ok(last)
}

/// Every value of column `name`, as f64.
fn column(batches: &[RecordBatch], name: &str) -> Vec<f64> {
    let mut values = Vec::new();
    for batch in batches {
        let column = batch.column_by_name(name).expect("the column");
        let floats = cast(column, &DataType::Float64).expect("a number column");
        values.extend(
            floats
                .as_primitive::<Float64Type>()
                .iter()
                .map(|v| v.unwrap_or(f64::NAN)),
        );
    }
    values
}

/// One `CREATE MODEL`'s training samples/s (its rows times its epochs over its epochs' seconds).
async fn trained_samples_per_second(
    session: &Session,
    sql: &str,
    name: &str,
) -> Result<f64, Box<dyn std::error::Error>> {
    let created = run(session, sql).await?;
    let rows = column(&created, "training_rows")[0];
    let info = run(
        session,
        &format!("SELECT duration_ms FROM ML.TRAINING_INFO(MODEL {name})"),
    )
    .await?;
    let millis = column(&info, "duration_ms");
    Ok(rows * millis.len() as f64 / (millis.iter().sum::<f64>() / 1000.0))
}

/// The same rows for PyTorch's side, through the same four Spark stages in a Rust pipeline (the label
/// indexed as `StringIndexer` indexes it).
async fn prepared_rows(session: &Session) -> Result<Shard, Box<dyn std::error::Error>> {
    let events = session.context().table("higgs").await?;
    let (_, prepared) = higgs::four_stage_preprocessing().fit_transform(&events).await?;
    Ok(Shard::from_batches(&prepared.collect().await?, "features", "label")?)
}

fn ratio(runs: &[f64]) -> String {
    runs.iter()
        .map(|r| format!("{:.2}", r / runs[0]))
        .collect::<Vec<_>>()
        .join(" ")
}

fn figures(runs: &[f64]) -> String {
    runs.iter().map(|r| format!("{r:.0}")).collect::<Vec<_>>().join(" / ")
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let (events, epochs, trials) = (
        args.first().copied().unwrap_or(100_000),
        args.get(1).copied().unwrap_or(2),
        args.get(2).copied().unwrap_or(20),
    );
    let dir = tempfile::tempdir()?;
    let csv = dir.path().join("higgs.csv");
    higgs::write_csv(&csv, events, 42)?;
    let session = Session::builder()
        .with_default_features()
        .local(2)
        .with_models(dir.path().join("models"));
    session
        .sql(&format!(
            "CREATE EXTERNAL TABLE higgs STORED AS CSV LOCATION '{}' OPTIONS ('format.has_header' 'true')",
            csv.display()
        ))
        .await?;
    println!("{events} events, {epochs} epochs a model, MLP 600-600 dropout 0.2, batch 64, on local[2]");

    let train = prepared_rows(&session).await?;
    let test = Shard::new(
        train.features()[..train.dim()].to_vec(),
        train.labels()[..1].to_vec(),
        train.dim(),
    )?;
    let rows = Rows::new(&train, &test)?;

    let mut table = Table::new();
    table.add_row(row![
        "optimizer",
        "workers",
        "hearth samples/s (1st / 2nd / 3rd)",
        "hearth vs 1st",
        "PyTorch samples/s (1st / 2nd / 3rd)",
        "PyTorch vs 1st"
    ]);
    for workers in [1, 2] {
        for (optimizer, spec) in [
            ("sgd", OptimizerSpec::sgd(0.01)),
            ("adagrad", OptimizerSpec::adagrad(0.01)),
            ("adam", OptimizerSpec::adam(1e-3)),
        ] {
            let mut ours = Vec::new();
            for run in 0..RUNS {
                let name = format!("repeated_{run}");
                let sql = create_model(&name, optimizer, workers, epochs, "");
                ours.push(trained_samples_per_second(&session, &sql, &name).await?);
            }
            let recipe = Recipe {
                rows: &rows,
                model: higgs::dist_keras_mlp(train.dim()),
                batch: 64,
                epochs,
                world: workers,
                threads: 2 / workers,
                shuffle: true,
                tensors: false,
                device: DeviceChoice::Cpu,
                precision: Default::default(),
            };
            let theirs: Vec<f64> = recipe
                .torch(&vec![(spec, SEED); RUNS])?
                .iter()
                .map(|curve| curve.samples_per_second(train.rows() / workers * workers, epochs))
                .collect();
            table.add_row(row![
                optimizer,
                workers,
                figures(&ours),
                ratio(&ours),
                figures(&theirs),
                ratio(&theirs)
            ]);
        }
    }
    table.printstd();

    let tuning = format!(
        ", num_trials = {trials}, max_parallel_trials = 1, learn_rate = HPARAM_RANGE(0.001, 0.05), \
         data_split_method = 'random', data_split_eval_fraction = 0.2"
    );
    let tuned = create_model("tuned", "adagrad", 1, 1, &tuning).replace(", learn_rate = 0.01", "");
    let created = run(&session, &tuned).await?;
    let trials_info = run(
        &session,
        "SELECT trial_id, seconds FROM ML.TRIAL_INFO(MODEL tuned) ORDER BY trial_id",
    )
    .await?;
    let seconds = column(&trials_info, "seconds");
    let training_rows = column(&created, "training_rows")[0];
    let per_trial: Vec<f64> = seconds.iter().map(|s| training_rows / s).collect();
    println!(
        "{trials}-trial tuning (Adagrad, 1 worker, 1 epoch a trial, train + evaluate): first trial {:.0} samples/s, \
         last {:.0} ({:.2}x the first); slowest {:.0}, fastest {:.0}",
        per_trial[0],
        per_trial[per_trial.len() - 1],
        per_trial[per_trial.len() - 1] / per_trial[0],
        per_trial.iter().cloned().fold(f64::MAX, f64::min),
        per_trial.iter().cloned().fold(0.0, f64::max)
    );
    Ok(())
}
