//! Model selection: parameter grids over any estimator's saved parameters, cross-validation and
//! train-validation splits choosing the best trial and refitting it, trials run in parallel — and a sweep of
//! 4 trials × 2 workers on a fleet of 2 executors with 2 slots each, which must not deadlock and must take
//! about two rounds of trials.

use std::time::{Duration, Instant};

use hearth::datasets::german_credit;
use hearth::prelude::*;
use hearth::preprocessing::tuning::{CrossValidator, ParamGridBuilder, TrainValidationSplit};
use hearth::torch::train::DeviceChoice;

use crate::fleet::Fleet;

/// Three blobs of points as a CSV file, read back with their vector assembled.
async fn blobs(session: &Session, dir: &std::path::Path) -> DataFrame {
    let mut text = String::from("x,y\n");
    for i in 0..90 {
        let (cx, cy) = [(0.0, 0.0), (10.0, 0.0), (0.0, 10.0)][i % 3];
        text += &format!("{},{}\n", cx + (i % 7) as f64 * 0.1, cy + (i % 5) as f64 * 0.1);
    }
    let path = dir.join("blobs.csv");
    std::fs::write(&path, text).unwrap();
    let df = session.read_csv(&path, &CsvOptions::new()).await.unwrap();
    VectorAssembler::new()
        .input_cols(["x", "y"])
        .output_col("features")
        .transform(&df)
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cross_validation_picks_the_number_of_clusters_and_refits_it() {
    let session = Session::builder().with_default_features().local(2);
    let dir = tempfile::tempdir().unwrap();
    let df = blobs(&session, dir.path()).await;
    let grid = ParamGridBuilder::new().add_grid("k", [2, 3, 4]).build().unwrap();
    let tuned = CrossValidator::new(KMeans::new().seed(3), grid, ClusteringEvaluator::new())
        .num_folds(3)
        .parallelism(2)
        .seed(9)
        .fit(&df)
        .await
        .unwrap();
    assert_eq!(tuned.trials().len(), 3);
    assert!(
        tuned.trials().iter().all(|t| t.metrics.len() == 3),
        "{:?}",
        tuned.trials()
    );
    assert_eq!(tuned.best_trial().params["k"], 3, "{:?}", tuned.trials());
    let best = tuned.best_model().downcast_ref::<KMeansModel>().unwrap();
    assert_eq!(best.cluster_centers().len(), 3);
    assert_eq!(tuned.metric(), ("silhouette", true));

    // Mistakes are named before anything trains.
    let typo = ParamGridBuilder::new().add_grid("numClusters", [2]).build().unwrap();
    let error = CrossValidator::new(KMeans::new(), typo, ClusteringEvaluator::new())
        .fit(&df)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("\"numClusters\"") && error.contains("maxIter"),
        "{error}"
    );
    let grid = ParamGridBuilder::new().add_grid("k", [2]).build().unwrap();
    let error = CrossValidator::new(KMeans::new(), grid.clone(), ClusteringEvaluator::new())
        .num_folds(1)
        .fit(&df)
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("numFolds"), "{error}");
    let error = TrainValidationSplit::new(KMeans::new(), grid, ClusteringEvaluator::new())
        .parallelism(0)
        .fit(&df)
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("parallelism"), "{error}");
}

/// The main job's preprocessed German credit rows on `session`.
async fn credit(session: &Session) -> DataFrame {
    let credit = session
        .read_csv(german_credit::csv_path(), &CsvOptions::new())
        .await
        .unwrap();
    german_credit::preprocessing()
        .fit(&credit)
        .await
        .unwrap()
        .transform(&credit)
        .unwrap()
}

/// 4 trials of a two-worker MLP on the credit data: hidden layers × epochs.
fn sweep() -> TrainValidationSplit {
    let grid = ParamGridBuilder::new()
        .add_grid("hiddenLayers", [vec![16], vec![32, 16]])
        .add_grid("training.epochs", [10, 20])
        .build()
        .unwrap();
    let mlp = MlpClassifier::new()
        .workers(2)
        .seed(4)
        .device(DeviceChoice::Cpu)
        .timeout(Duration::from_secs(60));
    TrainValidationSplit::new(mlp, grid, BinaryClassificationEvaluator::new()).seed(6)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sweep_of_four_two_worker_trials_runs_two_at_a_time_on_a_fleet_of_four_slots() {
    let fleet = Fleet::start(&[2, 2]).await;
    let session = fleet.session().await;
    let df = credit(&session).await;
    // One trial alone: a round's time.
    let grid = ParamGridBuilder::new()
        .add_grid("training.epochs", [4])
        .build()
        .unwrap();
    let one = TrainValidationSplit::new(
        MlpClassifier::new()
            .workers(2)
            .seed(4)
            .hidden_layers([32, 16])
            .device(DeviceChoice::Cpu),
        grid,
        BinaryClassificationEvaluator::new(),
    )
    .seed(6)
    .fit(&df)
    .await
    .unwrap();
    let round = one.seconds().0;
    let started = Instant::now();
    let tuned = sweep().parallelism(2).fit(&df).await.unwrap();
    let (trials, refit) = tuned.seconds();
    println!(
        "sweep on a 2×2-slot fleet: 4 trials × 2 workers, 2 at a time, in {trials:.1} s (one trial alone {round:.1} s), refit {refit:.1} s, {:.1} s in all",
        started.elapsed().as_secs_f64()
    );
    assert_eq!(tuned.trials().len(), 4);
    let best = tuned.trials().iter().map(|t| t.metric).fold(f64::MIN, f64::max);
    assert_eq!(tuned.best_trial().metric, best);
    assert!(tuned.trials().iter().all(|t| t.metric > 0.5), "{:?}", tuned.trials());
    // Two trials at a time, never more: at each trial's start, how many trials were running.
    let running_at = |moment: f64| {
        tuned
            .trials()
            .iter()
            .filter(|t| t.started <= moment && moment < t.finished)
            .count()
    };
    let most = tuned.trials().iter().map(|t| running_at(t.started)).max().unwrap();
    assert_eq!(most, 2, "{:?}", tuned.trials());
    // Two rounds of two trials, not four rounds one after another.
    let sequential: f64 = tuned.trials().iter().map(|t| t.finished - t.started).sum();
    assert!(
        trials < 0.8 * sequential,
        "4 trials took {trials:.1} s; their own times add up to {sequential:.1} s"
    );
}
