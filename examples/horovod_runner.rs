//! Two ways people run their own training code on Spark barrier mode, on hearth:
//!
//! 1. Databricks' `HorovodRunner(np=2).run(train)`: a hand-written tch loop (an MLP on MNIST) that shards
//!    the data by `hvd.rank()`, broadcasts rank 0's initial weights and steps with a `DistributedOptimizer`;
//!    `--np -2` runs the same function as two threads of the driver alone, HorovodRunner's debugging mode.
//! 2. sparklyr's `spark_apply(barrier = TRUE)`: each barrier task gets its partition id and every task's
//!    address, and builds the cluster spec a framework like TensorFlow's `MultiWorkerMirroredStrategy` wants
//!    (`TF_CONFIG`) from them.
//!
//! ```text
//! ./dev cargo run --release --example horovod_runner                 # np = 2 barrier tasks
//! ./dev cargo run --release --example horovod_runner -- --np -2      # on the driver alone
//! ./dev cargo run --release --example horovod_runner -- --master df://HOST:PORT   # on a fleet
//! ```
//!
//! On a fleet, each task runs in a copy of this program that its executor starts (with the same arguments)
//! and that stops where it registers the task's function; so `main` registers `cluster_spec` first, and
//! the copies for `mnist_mlp` load MNIST themselves before `HorovodRunner::run` registers it.

use std::sync::Arc;
use std::time::Instant;

use clap::Parser;
use datafusion::arrow::array::{AsArray, RecordBatch, StringArray, UInt64Array};
use datafusion::arrow::datatypes::{DataType, Field, Float32Type, Float64Type, Schema};
use hearth::datasets::mnist;
use hearth::exec::barrier::{BarrierStage, FnBarrier, register_function};
use hearth::prelude::*;
use hearth::torch::horovod::{DistributedOptimizer, Horovod};
use hearth::training::horovod_runner::HorovodRunner;
use serde_json::json;
use tch::nn::{self, Module, OptimizerConfig};
use tch::{Device, Kind, Tensor};

/// Run a hand-written training loop with HorovodRunner, then sparklyr's barrier pattern.
#[derive(Parser)]
struct Args {
    /// Ranks: barrier tasks when positive, threads of the driver alone when negative.
    #[arg(long, default_value_t = 2, allow_negative_numbers = true)]
    np: i32,
    /// Passes over each rank's shard.
    #[arg(long, default_value_t = 3)]
    epochs: usize,
    /// Where the barrier tasks run: local[N] (default: local[np]), standalone[N] or a fleet's df://HOST:PORT.
    #[arg(long)]
    master: Option<String>,
}

/// MNIST's training images and labels, loaded once on the driver and shared with every rank.
struct Images {
    pixels: Vec<f32>,
    labels: Vec<i64>,
}

impl Images {
    async fn load(session: &Session) -> Result<Self, Box<dyn std::error::Error>> {
        let (mut pixels, mut labels) = (Vec::new(), Vec::new());
        for batch in mnist::train(session)?.collect().await? {
            let images = batch
                .column_by_name("image")
                .ok_or("no image column")?
                .as_fixed_size_list();
            pixels.extend_from_slice(images.values().as_primitive::<Float32Type>().values());
            let digits = batch
                .column_by_name("label")
                .ok_or("no label column")?
                .as_primitive::<Float64Type>();
            labels.extend(digits.values().iter().map(|&d| d as i64));
        }
        Ok(Self { pixels, labels })
    }

    /// The rows `rank`, `rank + size`, … as tensors: Horovod's usual `dataset.shard(size, rank)`.
    fn shard(&self, rank: usize, size: usize) -> (Tensor, Tensor) {
        let rows: Vec<i64> = (rank..self.labels.len()).step_by(size).map(|r| r as i64).collect();
        let index = Tensor::from_slice(&rows);
        let x = Tensor::from_slice(&self.pixels).view([-1, 784]).index_select(0, &index);
        let y = Tensor::from_slice(&self.labels).index_select(0, &index);
        (x, y)
    }
}

/// The training function every rank runs: what a HorovodRunner user writes.
fn train(
    hvd: &mut Horovod<'_>,
    images: &Images,
    epochs: usize,
) -> Result<(f64, f64), Box<dyn std::error::Error + Send + Sync>> {
    tch::manual_seed(hvd.rank() as i64); // different initial weights on purpose: the broadcast evens them
    tch::set_num_threads(1);
    let (x, y) = images.shard(hvd.rank(), hvd.size());
    let store = nn::VarStore::new(Device::Cpu);
    let root = store.root();
    let net = nn::seq()
        .add(nn::linear(&root / "hidden", 784, 128, Default::default()))
        .add_fn(Tensor::relu)
        .add(nn::linear(&root / "out", 128, 10, Default::default()));
    hvd.broadcast_parameters(&store.trainable_variables(), 0)?;
    // Horovod's recipe: the learning rate scaled by the number of ranks.
    let mut optimizer = DistributedOptimizer::new(nn::Adam::default().build(&store, 1e-3 * hvd.size() as f64)?, &store);
    let batch = 64;
    let mut last_loss = 0.0;
    for epoch in 0..epochs {
        let order = Tensor::randperm(y.size()[0], (Kind::Int64, Device::Cpu));
        let (mut total, mut batches) = (0.0, 0);
        // Every rank takes the same number of steps: the shards differ by at most one row.
        let steps = y.size()[0] / batch;
        for step in 0..steps {
            let rows = order.narrow(0, step * batch, batch);
            let loss = net
                .forward(&x.index_select(0, &rows))
                .cross_entropy_for_logits(&y.index_select(0, &rows));
            optimizer.backward_step(hvd, &loss)?;
            total += loss.double_value(&[]);
            batches += 1;
        }
        // The epoch's mean loss over every rank.
        last_loss = hvd
            .allreduce(&Tensor::from_slice(&[(total / batches as f64) as f32]))?
            .double_value(&[0]);
        if hvd.rank() == 0 {
            println!(
                "  epoch {}: loss {last_loss:.4} (mean over {} ranks)",
                epoch + 1,
                hvd.size()
            );
        }
    }
    let accuracy = tch::no_grad(|| {
        net.forward(&x)
            .argmax(1, false)
            .eq_tensor(&y)
            .to_kind(Kind::Double)
            .mean(Kind::Double)
    });
    let accuracy = hvd.allreduce(&accuracy.to_kind(Kind::Float))?.double_value(&[]);
    Ok((last_loss, accuracy))
}

/// sparklyr's barrier function: each task reports its partition, its row count and the `TF_CONFIG` it
/// builds from its peers' addresses.
fn register_cluster_spec() {
    let schema = Arc::new(Schema::new(vec![
        Field::new("partition", DataType::UInt64, false),
        Field::new("rows", DataType::UInt64, false),
        Field::new("tf_config", DataType::Utf8, false),
    ]));
    let out = Arc::clone(&schema);
    register_function(FnBarrier::new("cluster_spec", schema, move |context, rows| {
        let workers: Vec<String> = context
            .peers()
            .iter()
            .map(|p| p.registration.listen.to_string())
            .collect();
        let tf_config = json!({
            "cluster": { "worker": workers },
            "task": { "type": "worker", "index": context.rank() },
        });
        let count: usize = rows.iter().map(RecordBatch::num_rows).sum();
        Ok(RecordBatch::try_new(
            Arc::clone(&out),
            vec![
                Arc::new(UInt64Array::from(vec![context.rank() as u64])),
                Arc::new(UInt64Array::from(vec![count as u64])),
                Arc::new(StringArray::from(vec![tf_config.to_string()])),
            ],
        )?)
    }));
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    register_cluster_spec();
    let session = match &args.master {
        Some(master) => Session::builder().with_default_features().connect(master).await?,
        None => Session::builder()
            .with_default_features()
            .local(args.np.unsigned_abs() as usize),
    };
    let images = Arc::new(Images::load(&session).await?);

    println!(
        "1. HorovodRunner(np={}).run(train): an MLP on {} MNIST images",
        args.np,
        images.labels.len()
    );
    let started = Instant::now();
    let epochs = args.epochs;
    let shared = Arc::clone(&images);
    let (loss, accuracy) = HorovodRunner::new(args.np)
        .run(&session, "mnist_mlp", move |hvd| train(hvd, &shared, epochs))
        .await?;
    println!(
        "  rank 0 returned: final loss {loss:.4}, training accuracy {accuracy:.4} ({:.1} s)",
        started.elapsed().as_secs_f64()
    );

    println!("2. sparklyr's spark_apply(barrier = TRUE): each task builds TF_CONFIG from its peers");
    let tasks = args.np.unsigned_abs() as usize;
    let frame = session.sql("SELECT * FROM generate_series(1, 1000) AS t(id)").await?;
    let mut specs = Vec::new();
    for batch in BarrierStage::new("cluster_spec", "").workers(tasks).run(&frame).await? {
        let (partitions, rows, configs) = (
            batch
                .column(0)
                .as_primitive::<datafusion::arrow::datatypes::UInt64Type>(),
            batch
                .column(1)
                .as_primitive::<datafusion::arrow::datatypes::UInt64Type>(),
            batch.column(2).as_string::<i32>(),
        );
        for i in 0..batch.num_rows() {
            specs.push((partitions.value(i), rows.value(i), configs.value(i).to_string()));
        }
    }
    specs.sort();
    for (partition, rows, config) in specs {
        println!("  partition {partition}: {rows} rows, TF_CONFIG={config}");
    }
    Ok(())
}
