//! The per-rank training loop: N ranks with batch b compute what one rank computes with batch N·b, and a
//! rank with no data still takes part.

use std::time::Duration;

use hearth::torch::data::Shard;
use hearth::torch::model::{Activation, ModelSpec, NamedTensor};
use hearth::torch::train::{DeviceChoice, OptimizerSpec, Precision, RankTrainer, TrainOptions, TrainSettings};

use crate::collectives::run_ranks;

const DIM: usize = 5;

/// Row `i` of a small three-class problem.
fn row(i: usize) -> (Vec<f32>, f32) {
    let x: Vec<f32> = (0..DIM)
        .map(|j| (((i * 31 + j * 17) % 23) as f32 - 11.0) / 7.0)
        .collect();
    let label = if x[0] + x[1] > 0.5 {
        2.0
    } else if x[2] > 0.0 {
        1.0
    } else {
        0.0
    };
    (x, label)
}

fn shard(rows: impl Iterator<Item = usize>) -> Shard {
    let (mut features, mut labels) = (Vec::new(), Vec::new());
    for i in rows {
        let (x, y) = row(i);
        features.extend(x);
        labels.push(y);
    }
    Shard::new(features, labels, DIM).unwrap()
}

fn options(batch_size: usize) -> TrainOptions {
    TrainOptions::new(
        ModelSpec::Mlp {
            inputs: DIM,
            hidden: vec![8],
            outputs: 3,
            activation: Activation::Tanh,
            dropout: 0.0,
        },
        TrainSettings {
            optimizer: OptimizerSpec::Sgd {
                learning_rate: 0.1,
                momentum: 0.9,
                nesterov: true,
                weight_decay: 1e-4,
            },
            batch_size,
            epochs: 3,
            shuffle: false,
            seed: 11,
            device: DeviceChoice::Cpu,
            threads: Some(1),
            ..TrainSettings::default()
        },
    )
}

/// Trains on `world` ranks, rank `r` getting `shards(r)`; returns rank 0's tensors and every report's loss.
fn train(world: usize, batch: usize, shards: fn(usize) -> Shard) -> (Vec<NamedTensor>, Vec<f64>) {
    let outcomes = run_ranks(world, Duration::from_secs(60), move |_, comm| {
        let mut comm = comm.unwrap();
        let data = shards(comm.rank());
        RankTrainer::new(&data, &options(batch)).run(&mut comm).unwrap()
    });
    let losses = outcomes.iter().map(|o| o.report.history.last().unwrap().loss).collect();
    let tensors = outcomes.into_iter().find_map(|o| o.tensors).unwrap();
    (tensors, losses)
}

pub(crate) fn assert_same(a: &[NamedTensor], b: &[NamedTensor]) {
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(b) {
        assert_eq!((&x.name, &x.shape), (&y.name, &y.shape));
        for (i, (p, q)) in x.values.iter().zip(&y.values).enumerate() {
            assert!((p - q).abs() <= 1e-5 * p.abs().max(1.0), "{}[{i}]: {p} vs {q}", x.name);
        }
    }
}

#[test]
fn two_ranks_with_batch_b_equal_one_rank_with_batch_2b() {
    const B: usize = 4;
    // Step k of one rank with batch 2B sees rank 0's batch k, then rank 1's batch k.
    fn split(rank: usize) -> Shard {
        shard((0..64).filter(|i| (i / B) % 2 == rank))
    }
    let (two, two_losses) = train(2, B, split);
    let (one, one_losses) = train(1, 2 * B, |_| shard(0..64));
    assert_same(&two, &one);
    assert!(
        (two_losses[0] - one_losses[0]).abs() < 1e-5,
        "{two_losses:?} vs {one_losses:?}"
    );
    assert_eq!(
        two_losses[0], two_losses[1],
        "every rank reports the same averaged loss"
    );
}

#[test]
fn a_rank_with_an_empty_shard_still_completes() {
    fn lopsided(rank: usize) -> Shard {
        if rank == 0 { shard(0..40) } else { shard(0..0) }
    }
    let (two, _) = train(2, 8, lopsided);
    let (one, _) = train(1, 8, |_| shard(0..40));
    assert_same(&two, &one);
}

#[test]
fn a_label_outside_the_classes_is_named() {
    let outcomes = run_ranks(1, Duration::from_secs(30), |_, comm| {
        let mut comm = comm.unwrap();
        let bad = Shard::new(vec![0.0; DIM * 2], vec![1.0, 7.0], DIM).unwrap();
        RankTrainer::new(&bad, &options(4))
            .run(&mut comm)
            .unwrap_err()
            .to_string()
    });
    assert!(outcomes[0].contains("training row 1: label 7"), "{}", outcomes[0]);
}

/// The digits data, preprocessed by a hearth pipeline and split 80/20, as train and test shards.
fn digits() -> (Shard, Shard) {
    use hearth::prelude::*;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    runtime.block_on(async {
        let session = Session::builder().with_default_features().local(2);
        let path = crate::common::dataset("sklearn_digits/digits.csv.gz");
        let raw = session.read_csv(path, &CsvOptions::new().header(false)).await.unwrap();
        let pixels: Vec<String> = (1..=64).map(|i| format!("column_{i}")).collect();
        let parts = raw.random_split(&[0.8, 0.2], 7).unwrap();
        let model = Pipeline::new()
            .stage(VectorAssembler::new().input_cols(pixels).output_col("pixels"))
            .stage(StandardScaler::new().input_col("pixels").output_col("features"))
            .fit(&parts[0])
            .await
            .unwrap();
        let mut shards = Vec::new();
        for part in &parts {
            let batches = model.transform(part).unwrap().collect().await.unwrap();
            shards.push(Shard::from_batches(&batches, "features", "column_65").unwrap());
        }
        let test = shards.pop().unwrap();
        (shards.pop().unwrap(), test)
    })
}

#[test]
fn a_cnn_trained_on_two_ranks_classifies_sklearn_digits() {
    use hearth::stats::evaluation::MulticlassState;
    use hearth::torch::artifact::ModelArtifact;
    use hearth::torch::model::Layer;

    let (train, test) = digits();
    let spec = ModelSpec::Sequential {
        input_shape: vec![1, 8, 8],
        layers: vec![
            Layer::Conv2d {
                filters: 16,
                kernel: 3,
                stride: 1,
                padding: 1,
            },
            Layer::Relu,
            Layer::MaxPool2d {
                kernel: 2,
                stride: None,
            },
            Layer::Conv2d {
                filters: 32,
                kernel: 3,
                stride: 1,
                padding: 1,
            },
            Layer::Relu,
            Layer::MaxPool2d {
                kernel: 2,
                stride: None,
            },
            Layer::Flatten,
            Layer::Dense { units: 64 },
            Layer::Relu,
            Layer::Dense { units: 10 },
        ],
    };
    let settings = TrainSettings {
        optimizer: OptimizerSpec::adam(2e-3),
        epochs: 12,
        batch_size: 32,
        seed: 5,
        device: DeviceChoice::Cpu,
        threads: Some(1),
        ..TrainSettings::default()
    };
    let options = TrainOptions::new(spec, settings);
    let outcomes = run_ranks(2, Duration::from_secs(300), |_, comm| {
        let mut comm = comm.unwrap();
        let mine = train.round_robin(comm.rank(), 2);
        let validation = test.round_robin(comm.rank(), 2);
        RankTrainer::new(&mine, &options)
            .validation(&validation)
            .run(&mut comm)
            .unwrap()
    });
    let history = outcomes[0].report.history.clone();
    let tensors = outcomes.into_iter().find_map(|o| o.tensors).unwrap();
    let artifact = ModelArtifact::new(options, tensors, history.clone());
    let logits = artifact.predict(test.features(), test.rows()).unwrap();
    let mut state = MulticlassState::default();
    for (row, label) in test.labels().iter().enumerate() {
        let scores = &logits[row * 10..(row + 1) * 10];
        let predicted = (0..10).max_by(|&a, &b| scores[a].total_cmp(&scores[b])).unwrap();
        state.add(f64::from(*label), predicted as f64, 1.0, None);
    }
    let last = history.last().unwrap();
    println!(
        "digits CNN, 2 ranks, {} epochs: train loss {:.4}, validation accuracy {:.4}; test accuracy {:.4}, f1 {:.4} on {} rows",
        history.len(),
        last.loss,
        last.validation_accuracy.unwrap(),
        state.accuracy(),
        state.weighted_f_measure(1.0),
        test.rows()
    );
    assert!(state.accuracy() > 0.93, "test accuracy {}", state.accuracy());
    assert!(
        (last.validation_accuracy.unwrap() - state.accuracy()).abs() < 1e-6,
        "validation = test evaluation"
    );
}

#[test]
fn resuming_from_a_checkpoint_continues_the_same_run() {
    use std::sync::Mutex;

    use hearth::torch::train::Checkpoint;

    let run = |epochs: usize, resume: Option<Checkpoint>| {
        let saved: Mutex<Vec<Checkpoint>> = Mutex::default();
        let outcomes = run_ranks(1, Duration::from_secs(60), |_, comm| {
            let mut comm = comm.unwrap();
            let mut options = options(8);
            options.settings.optimizer = OptimizerSpec::adam(0.01);
            options.settings.epochs = epochs;
            RankTrainer::new(&shard(0..64), &options)
                .resume(resume.as_ref())
                .on_epoch(|c| saved.lock().unwrap().push(c.clone()))
                .run(&mut comm)
                .unwrap()
        });
        let checkpoints = saved.into_inner().unwrap();
        (outcomes.into_iter().next().unwrap(), checkpoints)
    };
    let (straight, checkpoints) = run(3, None);
    assert_eq!(checkpoints.len(), 3);
    assert_eq!(checkpoints[0].epoch, 1);
    let (resumed, _) = run(3, Some(checkpoints[0].clone()));
    assert_eq!(
        resumed.report.history.len(),
        3,
        "the history carries on from the checkpoint"
    );
    assert_same(&resumed.tensors.unwrap(), &straight.tensors.unwrap());
}

#[test]
fn mixup_and_class_weights_train() {
    let outcomes = run_ranks(2, Duration::from_secs(60), |_, comm| {
        let mut comm = comm.unwrap();
        let mut options = options(8);
        options.settings.mixup_alpha = Some(0.4);
        options.settings.class_weights = Some(vec![1.0, 2.0, 0.5]);
        options.settings.shuffle = true;
        let data = shard((0..96).filter(|i| i % 2 == comm.rank()));
        RankTrainer::new(&data, &options).run(&mut comm).unwrap()
    });
    for outcome in outcomes {
        let history = &outcome.report.history;
        assert_eq!(history.len(), 3);
        assert!(
            history.iter().all(|e| e.loss.is_finite() && e.loss > 0.0),
            "{history:?}"
        );
        assert!(history[2].loss < history[0].loss, "the loss falls: {history:?}");
    }
}

/// Trains the three-class problem on two ranks (rows dealt round robin) with `precision`; rank 0's outcome.
fn train_in(precision: Precision, epochs: usize) -> hearth::torch::train::RankOutcome {
    let mut options = options(16);
    options.settings.precision = precision;
    options.settings.epochs = epochs;
    options.settings.shuffle = true;
    let outcomes = run_ranks(2, Duration::from_secs(60), move |_, comm| {
        let mut comm = comm.unwrap();
        let data = shard((0..400).filter(|i| i % 2 == comm.rank()));
        let validation = shard((400..600).filter(|i| i % 2 == comm.rank()));
        RankTrainer::new(&data, &options)
            .validation(&validation)
            .run(&mut comm)
            .unwrap()
    });
    outcomes.into_iter().find(|o| o.tensors.is_some()).unwrap()
}

#[test]
fn bf16_mixed_precision_learns_as_fp32_does_and_keeps_fp32_weights() {
    let (fp32, bf16) = (train_in(Precision::Fp32, 8), train_in(Precision::Bf16, 8));
    let accuracy =
        |o: &hearth::torch::train::RankOutcome| o.report.history.last().unwrap().validation_accuracy.unwrap();
    assert!(accuracy(&fp32) > 0.8, "fp32 reached {}", accuracy(&fp32));
    assert!(
        (accuracy(&bf16) - accuracy(&fp32)).abs() < 0.05,
        "bf16 reached {}, fp32 {}",
        accuracy(&bf16),
        accuracy(&fp32)
    );
    // The trained weights are the fp32 master copy: not all of them bfloat16-representable.
    let tensors = bf16.tensors.unwrap();
    let rounded = |v: f32| f32::from_bits(v.to_bits() & 0xffff_0000);
    assert!(tensors.iter().flat_map(|t| &t.values).any(|&v| v != rounded(v)));
    // And the two runs really differ: bf16 computed the steps.
    assert_ne!(
        fp32.report.history.last().unwrap().loss,
        bf16.report.history.last().unwrap().loss
    );
}

#[test]
fn bf16_is_refused_for_batch_normalisation_by_name() {
    use hearth::torch::model::Layer;
    let mut options = options(16);
    options.settings.precision = Precision::Bf16;
    options.model = ModelSpec::Sequential {
        input_shape: vec![DIM],
        layers: vec![Layer::Dense { units: 4 }, Layer::BatchNorm, Layer::Dense { units: 3 }],
    };
    let outcomes = run_ranks(1, Duration::from_secs(60), move |_, comm| {
        RankTrainer::new(&shard(0..40), &options)
            .run(&mut comm.unwrap())
            .map(|_| ())
    });
    let error = outcomes.into_iter().next().unwrap().unwrap_err().to_string();
    assert!(
        error.contains("precision bf16") && error.contains("batch normalisation"),
        "{error}"
    );
}
