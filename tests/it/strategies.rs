//! dist-keras's trainer strategies: each trains the Higgs MLP as well as the synchronous trainer, the
//! deterministic ones repeat exactly, a dead or stalled rank ends the job within the deadline naming it, a
//! retried stage resumes from the checkpointed center, and the ATLAS challenge file's layout reads.

use std::io::Write;
use std::time::{Duration, Instant};

use hearth::collective::CollectiveError;
use hearth::datasets::higgs;
use hearth::prelude::*;
use hearth::torch::data::Shard;
use hearth::torch::model::{Activation, ModelSpec};
use hearth::torch::train::{RankTrainer, TrainError, TrainOptions};

use crate::collectives::run_ranks;

/// The walk-through's MLP, trained 5 epochs with the workers' rate decaying by 0.75 an epoch, so that every
/// strategy ends near where it converges rather than on one noisy step.
fn higgs_mlp(strategy: Strategy) -> MlpClassifier {
    MlpClassifier::new()
        .hidden_layers([600, 600])
        .dropout(0.2)
        .workers(2)
        .epochs(5)
        .schedule(LrSchedule::Exponential { gamma: 0.75 })
        .batch_size(64)
        .seed(42)
        .device(DeviceChoice::Cpu)
        .timeout(Duration::from_secs(60))
        .strategy(strategy)
}

/// Generated Higgs events preprocessed as dist-keras does, split 0.7/0.3.
async fn higgs_split(session: &Session, rows: usize) -> (DataFrame, DataFrame) {
    let events = session
        .read_batches(higgs::schema(), higgs::batches(rows, 8192, 42))
        .unwrap();
    let (_, prepared) = higgs::preprocessing().fit_transform(&events).await.unwrap();
    let parts = prepared.random_split(&[0.7, 0.3], 42).unwrap();
    (parts[0].clone(), parts[1].clone())
}

async fn weighted_f1(model: &ClassificationModel, test: &DataFrame) -> f64 {
    MulticlassClassificationEvaluator::new()
        .evaluate(&model.transform(test).unwrap())
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_strategy_trains_the_higgs_mlp_within_a_point_of_synchronous() {
    let session = Session::builder().with_default_features().local(2);
    let (train, test) = higgs_split(&session, 30_000).await;
    let synchronous = higgs_mlp(Strategy::Synchronous).fit(&train).await.unwrap();
    let baseline = weighted_f1(&synchronous, &test).await;
    assert!(baseline > 0.8, "synchronous F1 {baseline}");
    let mut figures = vec![format!("synchronous {baseline:.4}")];
    for strategy in higgs::dist_keras_trainers() {
        let strategy = match strategy {
            Strategy::Synchronous => continue,
            // ADAG divides each push by the window, so the center advances at workers/window of a worker's
            // pace: dist-keras's window of 12 suits a dozen workers; two workers take a window of two.
            Strategy::Adag { .. } => Strategy::Adag {
                communication_window: 2,
            },
            other => other,
        };
        let model = higgs_mlp(strategy.clone()).fit(&train).await.unwrap();
        let f1 = weighted_f1(&model, &test).await;
        figures.push(format!("{} {f1:.4}", strategy.name()));
        let ranks = &model.summary().ranks;
        assert_eq!(
            ranks.len(),
            if strategy == Strategy::Single { 1 } else { 2 },
            "{}",
            strategy.name()
        );
        for rank in ranks {
            let staleness = rank.staleness.filter(|s| s.updates > 0);
            assert_eq!(
                staleness.is_some(),
                strategy.is_asynchronous(),
                "{}: {rank:?}",
                strategy.name()
            );
        }
        assert!(
            (f1 - baseline).abs() <= 0.01,
            "{}: weighted F1 {f1:.4} against synchronous {baseline:.4} ({})",
            strategy.name(),
            figures.join(", ")
        );
    }
    eprintln!(
        "weighted F1 on 30,000 generated Higgs events, 5 epochs: {}",
        figures.join(", ")
    );
}

/// A small Higgs problem for the trainer alone: 4,000 preprocessed events as one shard.
async fn higgs_shard() -> Shard {
    let session = Session::builder().with_default_features().local(1);
    let (train, _) = higgs_split(&session, 4_000).await;
    Shard::from_batches(&train.collect().await.unwrap(), "features", "label").unwrap()
}

fn options(strategy: Strategy, epochs: usize) -> TrainOptions {
    TrainOptions::new(
        ModelSpec::Mlp {
            inputs: 30,
            hidden: vec![32],
            outputs: 2,
            activation: Activation::Relu,
            dropout: 0.1,
        },
        TrainSettings {
            epochs,
            batch_size: 32,
            shuffle: true,
            seed: 5,
            device: DeviceChoice::Cpu,
            threads: Some(1),
            strategy,
            ..TrainSettings::default()
        },
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_synchronous_strategies_repeat_exactly_for_a_seed() {
    let shard = higgs_shard().await;
    for strategy in [
        Strategy::Easgd {
            rho: 5.0,
            communication_window: 4,
            learning_rate: Some(0.04),
        },
        Strategy::LocalSgd { period: 4 },
    ] {
        let run = || {
            let options = options(strategy.clone(), 2);
            run_ranks(2, Duration::from_secs(60), |_, comm| {
                let mut comm = comm.unwrap();
                let mine = shard.round_robin(comm.rank(), 2);
                RankTrainer::new(&mine, &options).run(&mut comm).unwrap()
            })
            .into_iter()
            .find_map(|outcome| outcome.tensors)
            .unwrap()
        };
        assert_eq!(run(), run(), "{}", strategy.name());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uneven_and_empty_shards_train_under_every_strategy() {
    let shard = higgs_shard().await;
    let (big, small) = (shard.round_robin(0, 2), shard.round_robin(1, 8));
    for strategy in higgs::dist_keras_trainers() {
        if strategy == Strategy::Single {
            continue;
        }
        let options = options(strategy.clone(), 2);
        let outcomes = run_ranks(3, Duration::from_secs(60), |_, comm| {
            let mut comm = comm.unwrap();
            let empty = Shard::default();
            let mine = [&big, &small, &empty][comm.rank()];
            RankTrainer::new(mine, &options).run(&mut comm)
        });
        let outcomes: Vec<_> = outcomes
            .into_iter()
            .map(|o| o.unwrap_or_else(|e| panic!("{}: {e}", strategy.name())))
            .collect();
        let trained = (big.rows() + small.rows()) as u64;
        for outcome in &outcomes {
            let history = &outcome.report.history;
            assert_eq!(history.len(), 2, "{}", strategy.name());
            assert_eq!(history[1].rows, trained, "{}", strategy.name());
        }
        assert!(outcomes[0].tensors.is_some(), "{}", strategy.name());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rank_that_dies_mid_training_stops_the_others_naming_it() {
    let shard = higgs_shard().await;
    let options = options(
        Strategy::Downpour {
            communication_window: 2,
        },
        100_000,
    );
    let started = Instant::now();
    let outcomes = run_ranks(2, Duration::from_secs(20), |_, comm| {
        let mut comm = comm.unwrap();
        let mine = shard.round_robin(comm.rank(), 2);
        if comm.rank() == 1 {
            // Rank 1 trains a moment, then dies: its thread ends, dropping its links without a goodbye.
            let flag = std::sync::atomic::AtomicBool::new(false);
            std::thread::scope(|s| {
                s.spawn(|| {
                    std::thread::sleep(Duration::from_millis(700));
                    flag.store(true, std::sync::atomic::Ordering::Relaxed);
                });
                RankTrainer::new(&mine, &options).cancel_flag(&flag).run(&mut comm)
            })
        } else {
            RankTrainer::new(&mine, &options).run(&mut comm)
        }
    });
    let survivor = match &outcomes[0] {
        Ok(outcome) => panic!("rank 0 finished {} epochs", outcome.report.history.len()),
        Err(e) => e.to_string(),
    };
    assert!(
        matches!(outcomes[1], Err(TrainError::Cancelled { rank: 1, .. })),
        "{:?}",
        outcomes[1].as_ref().err()
    );
    assert!(survivor.contains("rank 1"), "{survivor}");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "took {:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_rank_holds_the_others_no_longer_than_the_deadline() {
    let shard = higgs_shard().await;
    let options = options(
        Strategy::AsyncEasgd {
            rho: 5.0,
            communication_window: 4,
            learning_rate: Some(0.04),
        },
        3,
    );
    let deadline = Duration::from_secs(2);
    let outcomes = run_ranks(2, deadline, |_, comm| {
        let mut comm = comm.unwrap();
        let mine = shard.round_robin(comm.rank(), 2);
        let started = Instant::now();
        // Rank 0 stalls for three deadlines after its first epoch (its parameter server keeps serving).
        let stall = |_: &hearth::torch::train::Checkpoint| std::thread::sleep(3 * deadline);
        let result = RankTrainer::new(&mine, &options).on_epoch(stall).run(&mut comm);
        (result, started.elapsed())
    });
    let (rank1, waited) = &outcomes[1];
    let error = rank1.as_ref().unwrap_err();
    assert!(
        matches!(error, TrainError::Collective(CollectiveError::Peer { peer: 0, .. })),
        "{error}"
    );
    assert!(error.to_string().contains("missed the deadline"), "{error}");
    assert!(*waited < 3 * deadline, "rank 1 waited {waited:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_asynchronous_stage_retries_from_the_checkpointed_center() {
    crate::barrier::fail_once_after_the_first_epoch();
    let session = Session::builder().with_default_features().local(2);
    let (train, test) = higgs_split(&session, 4_000).await;
    let renamed = train
        .clone()
        .with_column("label_fail_once", datafusion::prelude::col("label"))
        .unwrap();
    let model = MlpClassifier::new()
        .hidden_layers([32])
        .workers(2)
        .epochs(6)
        .batch_size(32)
        .device(DeviceChoice::Cpu)
        .timeout(Duration::from_secs(30))
        .strategy(Strategy::AsyncEasgd {
            rho: 5.0,
            communication_window: 8,
            learning_rate: Some(0.04),
        })
        .label_col("label_fail_once")
        .fit(&renamed)
        .await
        .unwrap();
    let attempts = &model.summary().attempts;
    assert_eq!(attempts.len(), 2, "{attempts:?}");
    assert_eq!(
        (attempts[1].resumed_from_epoch, attempts[1].error.as_deref()),
        (1, None)
    );
    assert_eq!(model.history().len(), 6);
    let scored = model
        .transform(&test.with_column_renamed("label", "label_fail_once").unwrap())
        .unwrap();
    let accuracy = MulticlassClassificationEvaluator::new()
        .label_col("label_fail_once")
        .metric_name("accuracy")
        .evaluate(&scored)
        .await
        .unwrap();
    assert!(accuracy > 0.72, "accuracy {accuracy}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_challenge_file_layout_reads_and_weights_the_evaluation() {
    // The real challenge CSV: CRLF lines, −999.0 placeholders, KaggleSet and KaggleWeight after Label.
    let dir = tempfile::tempdir().unwrap();
    let (generated, challenge) = (dir.path().join("generated.csv"), dir.path().join("challenge.csv"));
    higgs::write_csv(&generated, 2_000, 3).unwrap();
    let mut out = std::fs::File::create(&challenge).unwrap();
    for (i, line) in std::fs::read_to_string(&generated).unwrap().lines().enumerate() {
        let extra = if i == 0 { ",KaggleSet,KaggleWeight" } else { ",t,0.5" };
        write!(out, "{line}{extra}\r\n").unwrap();
    }
    drop(out);
    let session = Session::builder().with_default_features().local(2);
    let events = session
        .read_csv(&challenge, &CsvOptions::new().infer_schema(true))
        .await
        .unwrap();
    let schema = events.schema();
    assert_eq!(schema.fields().len(), 35);
    assert_eq!(
        schema.field_with_unqualified_name("KaggleWeight").unwrap().data_type(),
        &datafusion::arrow::datatypes::DataType::Float64
    );
    let (_, prepared) = higgs::preprocessing().fit_transform(&events).await.unwrap();
    let undefined = prepared
        .clone()
        .filter(datafusion::logical_expr::ident("PRI_jet_leading_pt").eq(datafusion::prelude::lit(higgs::UNDEFINED)))
        .unwrap()
        .count()
        .await
        .unwrap();
    assert!(undefined > 0, "the −999.0 placeholders read as numbers");
    let model = MlpClassifier::new()
        .hidden_layers([16])
        .workers(2)
        .epochs(2)
        .device(DeviceChoice::Cpu)
        .strategy(Strategy::Downpour {
            communication_window: 4,
        })
        .fit(&prepared)
        .await
        .unwrap();
    let scored = model.transform(&prepared).unwrap();
    let weighted = MulticlassClassificationEvaluator::new()
        .weight_col("Weight")
        .metric_name("accuracy")
        .evaluate(&scored)
        .await
        .unwrap();
    let plain = MulticlassClassificationEvaluator::new()
        .metric_name("accuracy")
        .evaluate(&scored)
        .await
        .unwrap();
    assert!(
        weighted > 0.5 && plain > 0.5 && weighted != plain,
        "{weighted} vs {plain}"
    );
}
