//! Early stopping in the training loop: the ranks stop together once the validation loss stops improving,
//! the trained tensors are the best epoch's, and a run resumed from any of its checkpoints stops where the
//! straight run stopped with the same weights.

use std::sync::Mutex;
use std::time::Duration;

use hearth::torch::data::Shard;
use hearth::torch::model::{Activation, ModelSpec};
use hearth::torch::train::{
    Checkpoint, DeviceChoice, EarlyStopping, OptimizerSpec, RankOutcome, RankTrainer, TrainOptions, TrainSettings,
};

use crate::collectives::run_ranks;
use crate::training::assert_same;

const DIM: usize = 4;
const EPOCHS: usize = 60;

/// Rows `range` of a two-class problem; `noisy` labels are unrelated to the features, so a model that
/// learns the real ones grows worse on them: the validation loss rises after a few epochs.
fn shard(range: std::ops::Range<usize>, rank: usize, noisy: bool) -> Shard {
    let (mut features, mut labels) = (Vec::new(), Vec::new());
    for i in range.filter(|i| i % 2 == rank) {
        let x: Vec<f32> = (0..DIM).map(|j| (((i * 13 + j * 7) % 17) as f32 - 8.0) / 5.0).collect();
        let label = match noisy {
            true => ((i * 7919) % 5 < 2) as u8,
            false => (x[0] - x[1] > 0.0) as u8,
        };
        features.extend(x);
        labels.push(f32::from(label));
    }
    Shard::new(features, labels, DIM).unwrap()
}

fn options(rule: Option<EarlyStopping>) -> TrainOptions {
    TrainOptions::new(
        ModelSpec::Mlp {
            inputs: DIM,
            hidden: vec![16],
            outputs: 2,
            activation: Activation::Relu,
            dropout: 0.0,
        },
        TrainSettings {
            optimizer: OptimizerSpec::adam(0.05),
            epochs: EPOCHS,
            batch_size: 8,
            shuffle: false,
            seed: 5,
            device: DeviceChoice::Cpu,
            threads: Some(1),
            early_stopping: rule,
            ..TrainSettings::default()
        },
    )
}

/// Trains on two ranks under `rule`, from `resume` if given: rank 0's outcome, every rank's epoch count and
/// rank 0's checkpoints.
fn train(rule: EarlyStopping, resume: Option<&Checkpoint>) -> (RankOutcome, Vec<usize>, Vec<Checkpoint>) {
    let saved: Mutex<Vec<Checkpoint>> = Mutex::default();
    let options = options(Some(rule));
    let outcomes = run_ranks(2, Duration::from_secs(60), |_, comm| {
        let mut comm = comm.unwrap();
        let rank = comm.rank();
        let (data, validation) = (shard(0..200, rank, false), shard(200..300, rank, true));
        RankTrainer::new(&data, &options)
            .validation(&validation)
            .resume(resume)
            .on_epoch(|c| saved.lock().unwrap().push(c.clone()))
            .run(&mut comm)
            .unwrap()
    });
    let epochs = outcomes.iter().map(|o| o.report.history.len()).collect();
    let rank0 = outcomes.into_iter().find(|o| o.tensors.is_some()).unwrap();
    (rank0, epochs, saved.into_inner().unwrap())
}

#[test]
fn the_ranks_stop_together_and_keep_the_best_epochs_weights() {
    let rule = EarlyStopping::new(3, 0.0);
    let (outcome, epochs, checkpoints) = train(rule, None);
    let history = &outcome.report.history;
    let verdict = rule.verdict(history);
    let best = verdict.best_epoch.unwrap();
    println!(
        "early stopping: stopped after epoch {} of {EPOCHS}, kept epoch {best} (validation loss {:.4})",
        history.len(),
        history[best - 1].validation_loss.unwrap()
    );
    assert!(verdict.stop && history.len() < EPOCHS, "it stopped early: {history:?}");
    assert_eq!(history.len(), best + 3, "three epochs without improvement, then stop");
    assert_eq!(
        epochs,
        [history.len(), history.len()],
        "every rank stops at the same epoch"
    );
    let kept = outcome.tensors.unwrap();
    assert_same(&kept, &checkpoints[best - 1].tensors);
    assert_same(&checkpoints.last().unwrap().best_tensors, &kept);

    // A retry from a checkpoint in the middle of the patience, or from the last, ends the same way.
    for from in [best, history.len()] {
        let (resumed, _, _) = train(rule, Some(&checkpoints[from - 1]));
        assert_eq!(resumed.report.history.len(), history.len(), "resumed from epoch {from}");
        assert_same(&resumed.tensors.unwrap(), &kept);
    }
}

#[test]
fn early_stopping_without_validation_rows_is_refused_by_name() {
    let errors = run_ranks(1, Duration::from_secs(60), |_, comm| {
        let mut comm = comm.unwrap();
        let options = options(Some(EarlyStopping::relative(1, 0.01)));
        RankTrainer::new(&shard(0..20, 0, false), &options)
            .run(&mut comm)
            .unwrap_err()
            .to_string()
    });
    assert!(
        errors[0].contains("early_stopping") && errors[0].contains("validation"),
        "{}",
        errors[0]
    );
    let zero = run_ranks(1, Duration::from_secs(60), |_, comm| {
        let mut comm = comm.unwrap();
        let options = options(Some(EarlyStopping::new(0, 0.0)));
        let validation = shard(20..40, 0, true);
        RankTrainer::new(&shard(0..20, 0, false), &options)
            .validation(&validation)
            .run(&mut comm)
            .unwrap_err()
            .to_string()
    });
    assert!(zero[0].contains("patience"), "{}", zero[0]);
}
