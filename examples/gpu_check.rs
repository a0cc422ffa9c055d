//! hearth on a GPU, checked and measured in one run (what `scripts/gpu_check.sh` runs; ≤ 5 minutes on a GPU).
//!
//! 1. The main job's model on the GPU: German Credit preprocessed with the four Spark stages and an MLP
//!    trained with `device = cuda` on one worker, scored on the held-out rows.
//! 2. The dist-keras Higgs MLP (33-600-600-2, dropout 0.2, Adagrad 0.01) over 225,000 training rows, at batch
//!    64 and batch 1,024 (and at 1,024 in bfloat16 mixed precision, PyTorch's under `torch.autocast`), one rank: hearth on the GPU against a plain PyTorch loop on the same GPU
//!    (`benches/parity_torch.py`, rows on the device, batches indexed there) and against hearth on this
//!    machine's CPU cores. Each side trains two epochs; the second, warm one is measured (the first includes
//!    CUDA's start: kernels loaded, cuBLAS set up).
//!
//! ```text
//! scripts/gpu_check.sh target/release/examples/gpu_check "$LIBTORCH"       # on a machine with a GPU
//! scripts/gpu_check.sh --cpu target/release/examples/gpu_check "$LIBTORCH" # anywhere: every step on the CPU
//! gpu_check [--cpu] [--rows N]                                             # the program itself
//! ```

#[path = "../benches/common/torch_peer.rs"]
mod torch_peer;

use std::process::ExitCode;

use hearth::datasets::{german_credit, higgs};
use hearth::prelude::*;
use hearth::torch::data::Shard;
use hearth::torch::train::{OptimizerSpec, why_no_gpus};
use prettytable::{Table, row};
use torch_peer::{Recipe, Rows};

#[tokio::main]
async fn main() -> ExitCode {
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// hearth on a GPU against PyTorch on the same GPU and hearth on the CPU.
#[derive(clap::Parser)]
struct Args {
    /// Every step on the CPU (to check the program runs where there is no GPU).
    #[arg(long)]
    cpu: bool,
    /// Generated Higgs events (90 % of them train).
    #[arg(long, default_value_t = 250_000)]
    rows: usize,
}

async fn run() -> std::result::Result<(), Box<dyn std::error::Error>> {
    let args = <Args as clap::Parser>::parse();
    let device = if args.cpu {
        DeviceChoice::Cpu
    } else {
        if let Some(why) = why_no_gpus() {
            return Err(format!("no GPU for libtorch here ({why}); --cpu runs every step on the CPU").into());
        }
        DeviceChoice::Cuda(None)
    };
    german_credit_on(&device).await?;
    higgs_speed(&device, args.rows).await
}

/// The main job's pipeline with its MLP on `device`, on one worker: the rank's device and the test metrics.
async fn german_credit_on(device: &DeviceChoice) -> Result<()> {
    let session = Session::builder().with_default_features().local(1);
    let credit = session.read_csv(german_credit::csv_path(), &CsvOptions::new()).await?;
    let parts = credit.random_split(&[0.8, 0.2], 42)?;
    let classifier = german_credit::classifier().workers(1).device(device.clone());
    let model = german_credit::preprocessing().stage(classifier).fit(&parts[0]).await?;
    let trained: &ClassificationModel = model.last_stage().ok_or_else(|| {
        HearthError::invalid_data(
            "gpu_check",
            "features",
            "the pipeline's last stage is not a classification model",
        )
    })?;
    let ranks: Vec<String> = trained.summary().ranks.iter().map(|r| r.device.clone()).collect();
    let scored = model.transform(&parts[1])?;
    let f1 = MulticlassClassificationEvaluator::new().evaluate(&scored).await?;
    let auc = BinaryClassificationEvaluator::new().evaluate(&scored).await?;
    println!(
        "German Credit, MLP on {}: f1 {f1:.4}, areaUnderROC {auc:.4}\n",
        ranks.join(", ")
    );
    Ok(())
}

/// The Higgs MLP's speed at batch 64 and 1,024: hearth on `device`, PyTorch on the same, hearth on the CPU.
async fn higgs_speed(device: &DeviceChoice, events: usize) -> std::result::Result<(), Box<dyn std::error::Error>> {
    let session = Session::builder().with_default_features().local(2);
    let generated = session.read_batches(higgs::schema(), higgs::batches(events, 8192, 42))?;
    let (_, prepared) = higgs::four_stage_preprocessing().fit_transform(&generated).await?;
    let parts = prepared.random_split(&[0.9, 0.1], 42)?;
    let shard = |batches: &[datafusion::arrow::array::RecordBatch]| Shard::from_batches(batches, "features", "label");
    let (train, test) = (
        shard(&parts[0].clone().collect().await?)?,
        shard(&parts[1].clone().collect().await?)?,
    );
    let rows = Rows::new(&train, &test)?;
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let model = higgs::dist_keras_mlp(train.dim());
    let adagrad = OptimizerSpec::adagrad(0.01);
    let on = if matches!(device, DeviceChoice::Cpu) {
        "cpu"
    } else {
        "cuda"
    };
    let mut table = Table::new();
    table.set_titles(row![
        "batch",
        "precision",
        format!("hearth {on} samples/s"),
        format!("PyTorch {on} samples/s"),
        "hearth / PyTorch",
        "goal",
        format!("hearth cpu ({cores} cores)"),
        format!("hearth {on} / cpu"),
    ]);
    let runs = [
        (64, Precision::Fp32, "≥ 0.95"),
        (1024, Precision::Fp32, "≥ 0.9"),
        (1024, Precision::Bf16, "-"),
    ];
    for (batch, precision, goal) in runs {
        let recipe = |device: DeviceChoice| Recipe {
            rows: &rows,
            model: model.clone(),
            batch,
            epochs: 2,
            world: 1,
            threads: cores,
            shuffle: true,
            tensors: false,
            device,
            precision,
        };
        // The second epoch: warm on both sides.
        let speed = |curve: &torch_peer::Curve| train.rows() as f64 / curve.seconds[1];
        let format = match precision {
            Precision::Fp32 => "fp32",
            Precision::Bf16 => "bf16 (PyTorch: autocast)",
        };
        // Each figure as it comes, so a run cut short still says what it measured.
        let hearth = speed(&recipe(device.clone()).hearth(&adagrad, 1));
        eprintln!("batch {batch} {format}: hearth {on} {hearth:.0} samples/s");
        let torch = speed(&recipe(device.clone()).torch(&[(adagrad.clone(), 1)])?[0]);
        eprintln!("batch {batch} {format}: PyTorch {on} {torch:.0} samples/s");
        // The CPU column in fp32: bf16 is the GPU's trade.
        let cpu = matches!(precision, Precision::Fp32).then(|| speed(&recipe(DeviceChoice::Cpu).hearth(&adagrad, 1)));
        table.add_row(row![
            batch,
            format,
            format!("{hearth:.0}"),
            format!("{torch:.0}"),
            format!("{:.2}", hearth / torch),
            goal,
            cpu.map_or_else(|| "-".to_string(), |cpu| format!("{cpu:.0}")),
            cpu.map_or_else(|| "-".to_string(), |cpu| format!("{:.1}×", hearth / cpu)),
        ]);
    }
    println!(
        "Higgs MLP {}-600-600-2 (dropout 0.2, Adagrad 0.01), {} training rows, one rank, second epoch",
        train.dim(),
        train.rows()
    );
    table.printstd();
    Ok(())
}
