//! Benchmark: hearth's training step at N = 1 against a bare tch loop on the same batches (same network,
//! same Adam, same data, measured in the same run), and samples/s at N = 1 and N = 2.
//!
//! ```text
//! cargo bench --bench trainer
//! ```

use std::thread;
use std::time::Instant;

use hearth::collective::LocalWorld;
use hearth::stats::random::Draws;
use hearth::torch::data::Shard;
use hearth::torch::model::{Activation, ModelSpec};
use hearth::torch::train::{DeviceChoice, RankTrainer, TrainOptions, TrainSettings};
use prettytable::{Table, row};
use tch::nn::{self, Module, OptimizerConfig};
use tch::{Device, Kind, Tensor};

const ROWS: usize = 32_768;
const DIM: usize = 30;
const BATCH: usize = 256;
const HIDDEN: i64 = 256;
/// Rounds of each loop, alternated.
const ROUNDS: usize = 9;

fn data() -> Shard {
    let mut draws = Draws::new(3);
    let features: Vec<f32> = (0..ROWS * DIM).map(|_| draws.normal(0.0, 1.0) as f32).collect();
    let labels = features
        .chunks(DIM)
        .map(|x| if x[0] + x[1] > 0.0 { 1.0 } else { 0.0 })
        .collect();
    Shard::new(features, labels, DIM).expect("shard")
}

fn options() -> TrainOptions {
    let spec = ModelSpec::Mlp {
        inputs: DIM,
        hidden: vec![HIDDEN as usize, HIDDEN as usize],
        outputs: 2,
        activation: Activation::Relu,
        dropout: 0.0,
    };
    // Two epochs; the second is timed (steady state: the rank thread's first-use costs are in the first).
    let settings = TrainSettings {
        epochs: 2,
        batch_size: BATCH,
        shuffle: false,
        device: DeviceChoice::Cpu,
        threads: Some(1),
        ..TrainSettings::default()
    };
    TrainOptions::new(spec, settings)
}

/// Seconds per step of a plain tch loop: forward, mean cross-entropy, backward, Adam step.
fn bare_step_seconds(shard: &Shard, threads: usize) -> f64 {
    tch::set_num_threads(threads as i32);
    let store = nn::VarStore::new(Device::Cpu);
    let root = store.root();
    let net = nn::seq()
        .add(nn::linear(&root / "0", DIM as i64, HIDDEN, Default::default()))
        .add_fn(Tensor::relu)
        .add(nn::linear(&root / "2", HIDDEN, HIDDEN, Default::default()))
        .add_fn(Tensor::relu)
        .add(nn::linear(&root / "4", HIDDEN, 2, Default::default()));
    let mut adam = nn::Adam::default().build(&store, 1e-3).expect("adam");
    let x = Tensor::from_slice(shard.features()).view([ROWS as i64, DIM as i64]);
    let y = Tensor::from_slice(shard.labels()).to_kind(Kind::Int64);
    let steps = ROWS / BATCH;
    // Two passes over the data, as the two epochs of hearth's loop; the second is timed.
    let mut started = Instant::now();
    for step in 0..2 * steps {
        if step == steps {
            started = Instant::now();
        }
        let offset = ((step % steps) * BATCH) as i64;
        let (xb, yb) = (x.narrow(0, offset, BATCH as i64), y.narrow(0, offset, BATCH as i64));
        let loss = net.forward(&xb).cross_entropy_for_logits(&yb);
        adam.backward_step(&loss);
    }
    started.elapsed().as_secs_f64() / steps as f64
}

/// Seconds per step and samples/s of hearth's loop on `world` ranks (one process, as `local[world]`), each
/// rank with one libtorch thread.
fn hearth_step_seconds(shard: &Shard, world: usize) -> (f64, f64) {
    let options = options();
    let results: Vec<(f64, usize)> = LocalWorld::new(world)
        .run(|mut comm| {
            let mine = shard.round_robin(comm.rank(), world);
            let outcome = RankTrainer::new(&mine, &options).run(&mut comm).expect("train");
            (outcome.report.history[1].seconds, outcome.report.steps / 2)
        })
        .expect("ranks join");
    let seconds = results.iter().map(|r| r.0).fold(0.0, f64::max);
    (seconds / results[0].1 as f64, ROWS as f64 / seconds)
}

fn main() {
    let shard = data();
    // Warm libtorch up once so neither side pays its first-use costs, then alternate the two loops and keep
    // each one's best round: this machine's speed drifts, and both sides see the same drift.
    bare_step_seconds(&shard, 1);
    let (mut bare, mut ours, mut ours_rate) = (f64::MAX, f64::MAX, 0.0);
    for _ in 0..ROUNDS {
        // In a thread of its own, as each hearth rank runs.
        let own = thread::scope(|s| s.spawn(|| bare_step_seconds(&shard, 1)).join().expect("bare loop"));
        bare = bare.min(own);
        let (seconds, rate) = hearth_step_seconds(&shard, 1);
        if seconds < ours {
            (ours, ours_rate) = (seconds, rate);
        }
    }
    let (_, two_rate) = hearth_step_seconds(&shard, 2);
    let mut table = Table::new();
    table.set_titles(row!["loop", "ms / step", "samples/s", "vs bare tch", "target"]);
    table.add_row(row![
        "bare tch (nn::Adam)",
        format!("{:.3}", bare * 1e3),
        format!("{:.0}", BATCH as f64 / bare),
        "1.00",
        ""
    ]);
    table.add_row(row![
        "hearth RankTrainer, N = 1",
        format!("{:.3}", ours * 1e3),
        format!("{ours_rate:.0}"),
        format!("{:.3}", ours / bare),
        "≤ 1.05"
    ]);
    table.add_row(row!["hearth RankTrainer, N = 2", "", format!("{two_rate:.0}"), "", ""]);
    println!(
        "MLP {DIM}-{HIDDEN}-{HIDDEN}-2, batch {BATCH}, Adam, {ROWS} rows, CPU, one libtorch thread per rank, \
         best of {ROUNDS} alternated rounds\n"
    );
    table.printstd();
}
