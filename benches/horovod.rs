//! Benchmark: a hand-written tch training loop (an MLP on the 10,000 shipped MNIST images, Adam, 64 images per
//! step on each rank) run by `HorovodRunner` on two ranks — as barrier tasks of `local[2]`, and as two threads
//! of the driver (`np = -2`) — against the same loop in a bare process: on one libtorch thread with 64 images
//! a step, and on two threads with 128 (the same global batch as two ranks: both cores through libtorch's own
//! parallelism, the way to use them without Horovod). Same network, data and epochs, measured in the same run.
//!
//! ```text
//! ./dev bench --bench horovod
//! ```

use std::sync::Arc;
use std::time::Instant;

use datafusion::arrow::array::{AsArray, RecordBatch};
use datafusion::arrow::datatypes::{Float32Type, Float64Type};
use hearth::datasets::mnist;
use hearth::prelude::*;
use hearth::torch::horovod::{DistributedOptimizer, Horovod};
use hearth::training::horovod_runner::{HorovodRunner, MainError};
use prettytable::{Table, row};
use tch::nn::{self, Module, Optimizer, OptimizerConfig};
use tch::{Device, Kind, Tensor};

const EPOCHS: usize = 3;
/// Images per step on each rank.
const BATCH: i64 = 64;
const HIDDEN: [i64; 2] = [512, 256];

/// MNIST's pixels and digits, shared by every way of training.
struct Images {
    pixels: Vec<f32>,
    labels: Vec<i64>,
}

impl Images {
    fn from_batches(batches: &[RecordBatch]) -> Self {
        let (mut pixels, mut labels) = (Vec::new(), Vec::new());
        for batch in batches {
            let images = batch.column_by_name("image").expect("image").as_fixed_size_list();
            pixels.extend_from_slice(images.values().as_primitive::<Float32Type>().values());
            let digits = batch
                .column_by_name("label")
                .expect("label")
                .as_primitive::<Float64Type>();
            labels.extend(digits.values().iter().map(|&d| d as i64));
        }
        Self { pixels, labels }
    }

    /// Rows `rank`, `rank + size`, … as tensors (Horovod's `dataset.shard(size, rank)`).
    fn shard(&self, rank: usize, size: usize) -> (Tensor, Tensor) {
        let rows: Vec<i64> = (rank..self.labels.len()).step_by(size).map(|r| r as i64).collect();
        let index = Tensor::from_slice(&rows);
        let x = Tensor::from_slice(&self.pixels).view([-1, 784]).index_select(0, &index);
        let y = Tensor::from_slice(&self.labels).index_select(0, &index);
        (x, y)
    }
}

fn network(store: &nn::VarStore) -> nn::Sequential {
    let root = store.root();
    nn::seq()
        .add(nn::linear(&root / "h1", 784, HIDDEN[0], Default::default()))
        .add_fn(Tensor::relu)
        .add(nn::linear(&root / "h2", HIDDEN[0], HIDDEN[1], Default::default()))
        .add_fn(Tensor::relu)
        .add(nn::linear(&root / "out", HIDDEN[1], 10, Default::default()))
}

/// What one way of training measured: seconds of the training loop, images trained on, training accuracy.
#[derive(serde::Serialize, serde::Deserialize)]
struct Measured {
    loop_seconds: f64,
    images: usize,
    accuracy: f64,
}

/// `EPOCHS` passes over `(x, y)` in shuffled steps of `batch`, each step's loss handed to `step`; returns the
/// loop's seconds and the images it stepped through.
fn train_loop(
    net: &nn::Sequential,
    (x, y): (&Tensor, &Tensor),
    batch: i64,
    mut step: impl FnMut(&Tensor) -> Result<(), MainError>,
) -> Result<(f64, usize), MainError> {
    let started = Instant::now();
    let steps = y.size()[0] / batch;
    for _ in 0..EPOCHS {
        let order = Tensor::randperm(y.size()[0], (Kind::Int64, Device::Cpu));
        for s in 0..steps {
            let rows = order.narrow(0, s * batch, batch);
            let loss = net
                .forward(&x.index_select(0, &rows))
                .cross_entropy_for_logits(&y.index_select(0, &rows));
            step(&loss)?;
        }
    }
    Ok((
        started.elapsed().as_secs_f64(),
        (EPOCHS as i64 * steps * batch) as usize,
    ))
}

fn accuracy(net: &nn::Sequential, x: &Tensor, y: &Tensor) -> Tensor {
    tch::no_grad(|| {
        net.forward(x)
            .argmax(1, false)
            .eq_tensor(y)
            .to_kind(Kind::Float)
            .mean(Kind::Float)
    })
}

/// The bare loop: one process, `threads` libtorch threads, `batch` images a step.
fn bare(images: &Images, threads: usize, batch: i64) -> Measured {
    tch::set_num_threads(threads as i32);
    tch::manual_seed(0);
    let (x, y) = images.shard(0, 1);
    let store = nn::VarStore::new(Device::Cpu);
    let net = network(&store);
    let mut optimizer: Optimizer = nn::Adam::default().build(&store, 1e-3).expect("adam");
    let (loop_seconds, trained) = train_loop(&net, (&x, &y), batch, |loss| {
        optimizer.backward_step(loss);
        Ok(())
    })
    .expect("bare loop");
    Measured {
        loop_seconds,
        images: trained,
        accuracy: accuracy(&net, &x, &y).double_value(&[]),
    }
}

/// The function HorovodRunner runs on every rank: the same loop, one libtorch thread per rank, rank 0's
/// weights broadcast, gradients averaged every step.
fn horovod_main(hvd: &mut Horovod<'_>, images: &Images) -> Result<Measured, MainError> {
    tch::set_num_threads(1);
    tch::manual_seed(0);
    let (x, y) = images.shard(hvd.rank(), hvd.size());
    let store = nn::VarStore::new(Device::Cpu);
    let net = network(&store);
    hvd.broadcast_parameters(&store.trainable_variables(), 0)?;
    let mut optimizer = DistributedOptimizer::new(nn::Adam::default().build(&store, 1e-3)?, &store);
    let (loop_seconds, trained) = train_loop(&net, (&x, &y), BATCH, |loss| Ok(optimizer.backward_step(hvd, loss)?))?;
    let accuracy = hvd.allreduce(&accuracy(&net, &x, &y))?.double_value(&[]);
    let images = hvd
        .allreduce_sum(&Tensor::from_slice(&[trained as f32]))?
        .double_value(&[0]) as usize;
    Ok(Measured {
        loop_seconds,
        images,
        accuracy,
    })
}

fn main() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let session = Session::builder().with_default_features().local(2);
    let images = Arc::new(Images::from_batches(
        &runtime
            .block_on(mnist::train(&session).expect("mnist").collect())
            .expect("collect"),
    ));
    println!(
        "{} MNIST images, MLP 784-{}-{}-10, Adam 1e-3, {EPOCHS} epochs",
        images.labels.len(),
        HIDDEN[0],
        HIDDEN[1]
    );

    let mut table = Table::new();
    table.set_titles(row![
        "way",
        "ranks x threads",
        "images a step",
        "loop s",
        "whole s",
        "images/s (loop)",
        "vs bare 1 thread",
        "training accuracy"
    ]);
    let mut baseline = None;
    let mut add = |way: &str, shape: &str, batch: i64, measured: Measured, whole: f64| {
        let rate = measured.images as f64 / measured.loop_seconds;
        let base = *baseline.get_or_insert(rate);
        table.add_row(row![
            way,
            shape,
            batch,
            format!("{:.2}", measured.loop_seconds),
            format!("{whole:.2}"),
            format!("{rate:.0}"),
            format!("{:.2}x", rate / base),
            format!("{:.4}", measured.accuracy)
        ]);
    };
    for (way, shape, threads, batch) in [
        ("bare tch loop", "1 x 1", 1, BATCH),
        ("bare tch loop", "1 x 2", 2, 2 * BATCH),
    ] {
        let started = Instant::now();
        let measured = bare(&images, threads, batch);
        add(way, shape, batch, measured, started.elapsed().as_secs_f64());
    }
    for (way, np) in [
        ("HorovodRunner, driver threads", -2),
        ("HorovodRunner, barrier tasks", 2),
    ] {
        let shared = Arc::clone(&images);
        let started = Instant::now();
        let measured = runtime
            .block_on(HorovodRunner::new(np).run(&session, "bench_mlp", move |hvd| horovod_main(hvd, &shared)))
            .expect("HorovodRunner");
        add(way, "2 x 1", 2 * BATCH, measured, started.elapsed().as_secs_f64());
    }
    table.printstd();
    println!("loop s: rank 0's training loop; whole s: the call, with the stage's start and the broadcast");
}
