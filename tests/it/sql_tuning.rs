//! Hyperparameter tuning in SQL, as BigQuery ML spells it: `num_trials`, `max_parallel_trials`,
//! `HPARAM_RANGE` / `HPARAM_CANDIDATES`, `hparam_tuning_algorithm` and `hparam_tuning_objectives` in
//! `CREATE MODEL`, the best trial kept, and `ML.TRIAL_INFO` showing every trial. A grid search's trials and bad
//! tuning options are in `tests/slt/tuning.slt`.

use datafusion::arrow::array::{AsArray, RecordBatch};
use datafusion::arrow::datatypes::{Float64Type, Int64Type};
use hearth::prelude::{DefaultFeatures, Session};
use hearth::sql::{ModelCatalog, SqlSessionExt};

use crate::sql::{credit_session, run_script};

/// Column `name` of every row, as f64.
fn floats(batches: &[RecordBatch], name: &str) -> Vec<f64> {
    batches
        .iter()
        .flat_map(|b| {
            let column = b.column_by_name(name).unwrap_or_else(|| panic!("no column {name}"));
            column
                .as_primitive::<Float64Type>()
                .iter()
                .map(|v| v.unwrap_or(f64::NAN))
                .collect::<Vec<_>>()
        })
        .collect()
}

const TUNED: &str = "CREATE MODEL credit_tuned
    OPTIONS (model_type = 'dnn_classifier', input_label_cols = ['class'], max_iterations = 3, workers = 2,
             num_trials = 4, max_parallel_trials = 2,
             learn_rate = HPARAM_RANGE(0.001, 0.05),
             hidden_units = HPARAM_CANDIDATES([STRUCT([8]), STRUCT([16, 8])]),
             data_split_method = 'random', data_split_eval_fraction = 0.25, seed = 3)
    AS SELECT duration, credit_amount, age, purpose, housing, class FROM credit";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_model_tunes_with_bigquery_options_and_trial_info_shows_every_trial() {
    let models = tempfile::tempdir().unwrap();
    let session = credit_session(models.path()).await;
    let created = run_script(&session, TUNED).await.unwrap();
    let status = created[0]
        .column_by_name("status")
        .unwrap()
        .as_string::<i32>()
        .value(0)
        .to_string();
    assert!(
        status.starts_with("trained: trial ") && status.contains(" of 4 kept (roc_auc "),
        "{status}"
    );

    let trials = run_script(
        &session,
        "SELECT trial_id, hyperparameters.learn_rate AS learn_rate, hyperparameters.hidden_units AS hidden_units,
                hparam_tuning_evaluation_metrics.roc_auc AS roc_auc, training_loss, eval_loss, status,
                start_seconds, seconds, is_optimal
         FROM ML.TRIAL_INFO(MODEL credit_tuned) ORDER BY trial_id",
    )
    .await
    .unwrap();
    let batch = datafusion::arrow::compute::concat_batches(&trials[0].schema(), &trials).unwrap();
    assert_eq!(batch.num_rows(), 4);
    let ids: Vec<i64> = batch.column(0).as_primitive::<Int64Type>().values().to_vec();
    assert_eq!(ids, [1, 2, 3, 4]);
    for rate in floats(&trials, "learn_rate") {
        assert!((0.001..=0.05).contains(&rate), "learn_rate {rate} outside its range");
    }
    let units = batch.column_by_name("hidden_units").unwrap().as_string::<i32>();
    assert!(units.iter().all(|u| matches!(u, Some("[8]" | "[16, 8]"))), "{units:?}");
    let statuses = batch.column_by_name("status").unwrap().as_string::<i32>();
    assert!(statuses.iter().all(|s| s == Some("SUCCEEDED")));
    let aucs = floats(&trials, "roc_auc");
    assert!(aucs.iter().all(|auc| (0.5..=1.0).contains(auc)), "{aucs:?}");
    assert!(floats(&trials, "eval_loss").iter().all(|loss| *loss > 0.0));
    let optimal = batch.column_by_name("is_optimal").unwrap().as_boolean();
    let kept: Vec<usize> = (0..4).filter(|&i| optimal.value(i)).collect();
    assert_eq!(kept.len(), 1, "exactly one trial is kept");
    let best = aucs.iter().cloned().fold(f64::MIN, f64::max);
    assert_eq!(aucs[kept[0]], best, "the kept trial has the best roc_auc");
    // Two at a time: the second trial starts before the first ends.
    let (starts, seconds) = (floats(&trials, "start_seconds"), floats(&trials, "seconds"));
    assert!(
        starts[1] < starts[0] + seconds[0],
        "starts {starts:?}, seconds {seconds:?}"
    );

    // The model kept is the best trial's: ML.EVALUATE on the held-out rows gives its figure, and the
    // catalog records the values it trained with.
    let evaluated = run_script(&session, "SELECT \"areaUnderROC\" FROM ML.EVALUATE(MODEL credit_tuned)")
        .await
        .unwrap();
    assert!((floats(&evaluated, "areaUnderROC")[0] - best).abs() < 1e-12);
    let entry = ModelCatalog::new(models.path()).get("credit_tuned").unwrap().entry;
    assert_eq!(entry.options["num_trials"], "4");
    let rate: f64 = entry.options["learn_rate"].parse().unwrap();
    assert_eq!(rate, floats(&trials, "learn_rate")[kept[0]]);
    let predicted = run_script(
        &session,
        "SELECT count(*) AS n FROM ML.PREDICT(MODEL credit_tuned, (SELECT * FROM credit))",
    )
    .await
    .unwrap();
    assert_eq!(predicted[0].column(0).as_primitive::<Int64Type>().value(0), 1000);

    // An untuned model has no trials.
    run_script(
        &session,
        "CREATE MODEL plain OPTIONS (model_type = 'logistic_reg', input_label_cols = ['class'], max_iterations = 1)
         AS SELECT age, class FROM credit",
    )
    .await
    .unwrap();
    let untuned = run_script(&session, "SELECT * FROM ML.TRIAL_INFO(MODEL plain)")
        .await
        .unwrap_err();
    assert!(untuned.to_string().contains("not tuned"), "{untuned}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tuning_example_keeps_the_best_of_its_eight_trials() {
    let models = tempfile::tempdir().unwrap();
    let session = Session::builder()
        .with_default_features()
        .local(2)
        .with_models(models.path());
    let script = std::fs::read_to_string("examples/credit_tuning.sql").unwrap();
    let trials = run_script(&session, &script).await.unwrap();
    let aucs = floats(&trials, "roc_auc");
    assert_eq!(aucs.len(), 8);
    let optimal: Vec<bool> = trials
        .iter()
        .flat_map(|b| {
            b.column_by_name("is_optimal")
                .unwrap()
                .as_boolean()
                .iter()
                .flatten()
                .collect::<Vec<_>>()
        })
        .collect();
    let kept = optimal.iter().position(|o| *o).unwrap();
    assert!(
        aucs.iter().all(|auc| *auc <= aucs[kept]),
        "{aucs:?}, kept trial {}",
        kept + 1
    );
}
