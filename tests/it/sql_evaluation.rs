//! What BigQuery ML users reach for after the first model: `early_stop` (stops on a plateau of the held-out
//! loss, keeps the best epoch, with every strategy), `ML.CONFUSION_MATRIX` and `ML.ROC_CURVE` as tables that
//! agree with the predictions and the evaluator, `linear_reg` with BigQuery's metric names, `dnn_regressor` on a
//! label in the tens and one in the thousands, and SHOW MODELS' `creation_time`. The errors of these functions,
//! and the training rows a model cannot learn from, are in `tests/slt/`.

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Float64Type, Int64Type, TimeUnit};
use hearth::sql::ModelCatalog;

use crate::sql::{credit_session, number, rows, run_script};

/// Column `name` of every row, as f64.
fn column(batches: &[RecordBatch], name: &str) -> Vec<f64> {
    batches
        .iter()
        .flat_map(|batch| {
            let column = batch.column_by_name(name).unwrap_or_else(|| panic!("no column {name}"));
            match column.data_type() {
                DataType::Float64 => column
                    .as_primitive::<Float64Type>()
                    .iter()
                    .map(|v| v.unwrap_or(f64::NAN))
                    .collect::<Vec<_>>(),
                DataType::Int64 => column
                    .as_primitive::<Int64Type>()
                    .iter()
                    .map(|v| v.unwrap() as f64)
                    .collect(),
                other => panic!("{name} is {other}"),
            }
        })
        .collect()
}

/// A plateau-prone classifier of the credit data: a wide MLP at a high learning rate.
fn early_stopped(name: &str, extra: &str) -> String {
    format!(
        "CREATE OR REPLACE MODEL {name}
         OPTIONS (model_type = 'dnn_classifier', input_label_cols = ['class'], hidden_units = [64],
                  learn_rate = 0.02, batch_size = 32, max_iterations = 40, workers = 2, seed = 4,
                  data_split_method = 'random', data_split_eval_fraction = 0.3, data_split_seed = 1,
                  early_stop = TRUE, min_rel_progress = 0.01{extra})
         AS SELECT duration, credit_amount, age, purpose, housing, savings_status, checking_status, class FROM credit"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn early_stop_ends_on_a_plateau_and_keeps_the_best_epoch_with_every_strategy() {
    let models = tempfile::tempdir().unwrap();
    let session = credit_session(models.path()).await;
    for (name, strategy) in [
        ("stopped_sync", ""),
        ("stopped_easgd", ", strategy = 'easgd'"),
        ("stopped_downpour", ", strategy = 'downpour'"),
    ] {
        run_script(&session, &early_stopped(name, strategy)).await.unwrap();
        let info = run_script(
            &session,
            &format!("SELECT epoch, validation_loss FROM ML.TRAINING_INFO(MODEL {name}) ORDER BY epoch"),
        )
        .await
        .unwrap();
        let losses = column(&info, "validation_loss");
        assert!(
            losses.len() < 40,
            "{name}: stopped early, after {} epochs",
            losses.len()
        );
        // BigQuery's rule: the last epoch gained less than 1 % on the best before it, every other did not.
        let best_before_last = losses[..losses.len() - 1].iter().copied().fold(f64::INFINITY, f64::min);
        let last = losses[losses.len() - 1];
        assert!(best_before_last - last < 0.01 * best_before_last, "{name}: {losses:?}");
        // The model is the best epoch's: the held-out rows' log-loss is that epoch's validation loss.
        let evaluation = run_script(&session, &format!("SELECT * FROM ML.EVALUATE(MODEL {name})"))
            .await
            .unwrap();
        let log_loss = number(&evaluation, "logLoss");
        // Patience 1: the epoch before the last is the best one.
        let best = losses[losses.len() - 2];
        println!(
            "early_stop {name}: {} epochs, best validation loss {best:.5}, ML.EVALUATE logLoss {log_loss:.5}",
            losses.len()
        );
        assert!(
            (log_loss - best).abs() < 1e-4,
            "{name}: logLoss {log_loss} vs best epoch {best}"
        );
    }

    // Tuned models stop early too, each trial on its own.
    let tuned = early_stopped(
        "stopped_tuned",
        ", num_trials = 2, learn_rate = HPARAM_CANDIDATES([0.02, 0.05])",
    )
    .replace("learn_rate = 0.02, ", "");
    run_script(&session, &tuned).await.unwrap();
    let info = run_script(&session, "SELECT epoch FROM ML.TRAINING_INFO(MODEL stopped_tuned)")
        .await
        .unwrap();
    assert!(rows(&info) < 40);

    let error = |script: String| {
        let session = session.clone();
        async move { run_script(&session, &script).await.unwrap_err().to_string() }
    };
    let unsplit = error(early_stopped("bad", "").replace("'random'", "'no_split'")).await;
    assert!(
        unsplit.contains("early_stop") && unsplit.contains("holds none out"),
        "{unsplit}"
    );
    let progress = error(early_stopped("bad", "").replace("min_rel_progress = 0.01", "min_rel_progress = 2")).await;
    assert!(progress.contains("option min_rel_progress"), "{progress}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn confusion_matrix_and_roc_curve_agree_with_the_predictions_and_the_evaluator() {
    let models = tempfile::tempdir().unwrap();
    let session = credit_session(models.path()).await;
    run_script(
        &session,
        "CREATE MODEL credit_lr
         OPTIONS (model_type = 'logistic_reg', input_label_cols = ['class'], max_iterations = 5, workers = 2,
                  data_split_method = 'random', data_split_eval_fraction = 0.25, seed = 3)
         AS SELECT duration, credit_amount, age, purpose, housing, class FROM credit",
    )
    .await
    .unwrap();
    let labels = ModelCatalog::new(models.path())
        .get("credit_lr")
        .unwrap()
        .entry
        .labels
        .unwrap();
    let positive = &labels[1];

    // The matrix over the held-out rows counts every one of them once.
    let held_out = run_script(&session, "SELECT * FROM ML.CONFUSION_MATRIX(MODEL credit_lr)")
        .await
        .unwrap();
    let evaluated = ModelCatalog::new(models.path())
        .get("credit_lr")
        .unwrap()
        .entry
        .evaluation_rows as f64;
    let total: f64 = labels.iter().map(|l| column(&held_out, l).iter().sum::<f64>()).sum();
    assert_eq!(total, evaluated);

    // Over given rows and a threshold, it is the predictions counted by hand.
    let matrix = run_script(
        &session,
        "SELECT * FROM ML.CONFUSION_MATRIX(MODEL credit_lr, TABLE credit, STRUCT(0.3 AS threshold))",
    )
    .await
    .unwrap();
    println!(
        "ML.CONFUSION_MATRIX at threshold 0.3:\n{}",
        datafusion::arrow::util::pretty::pretty_format_batches(&matrix).unwrap()
    );
    let by_hand = run_script(
        &session,
        "SELECT class, SUM(CASE WHEN predicted_class_probs[2]['prob'] >= 0.3 THEN 1 ELSE 0 END) AS positive,
                SUM(CASE WHEN predicted_class_probs[2]['prob'] < 0.3 THEN 1 ELSE 0 END) AS negative
         FROM ML.PREDICT(MODEL credit_lr, TABLE credit) GROUP BY class ORDER BY class",
    )
    .await
    .unwrap();
    let expected: Vec<String> = matrix[0]
        .column_by_name("expected_label")
        .unwrap()
        .as_string::<i32>()
        .iter()
        .map(|v| v.unwrap().to_string())
        .collect();
    let hand_labels: Vec<String> = by_hand[0]
        .column(0)
        .as_string::<i32>()
        .iter()
        .map(|v| v.unwrap().to_string())
        .collect();
    for (row, label) in expected.iter().enumerate() {
        let hand = hand_labels.iter().position(|l| l == label).unwrap();
        assert_eq!(
            column(&matrix, positive)[row],
            column(&by_hand, "positive")[hand],
            "{label} → {positive}"
        );
        assert_eq!(
            column(&matrix, &labels[0])[row],
            column(&by_hand, "negative")[hand],
            "{label} → {}",
            labels[0]
        );
    }

    // The ROC curve at given thresholds counts as the predictions do.
    let curve = run_script(
        &session,
        "SELECT * FROM ML.ROC_CURVE(MODEL credit_lr, TABLE credit, GENERATE_ARRAY(0.1, 0.9, 0.2))",
    )
    .await
    .unwrap();
    assert_eq!(column(&curve, "threshold").len(), 5);
    for (row, threshold) in column(&curve, "threshold").into_iter().enumerate() {
        let counted = run_script(
            &session,
            &format!(
                "SELECT SUM(CASE WHEN class = '{positive}' AND predicted_class_probs[2]['prob'] >= {threshold} THEN 1 ELSE 0 END) AS tp,
                        SUM(CASE WHEN class <> '{positive}' AND predicted_class_probs[2]['prob'] >= {threshold} THEN 1 ELSE 0 END) AS fp
                 FROM ML.PREDICT(MODEL credit_lr, TABLE credit)"
            ),
        )
        .await
        .unwrap();
        assert_eq!(
            column(&curve, "true_positives")[row],
            number(&counted, "tp"),
            "at {threshold}"
        );
        assert_eq!(
            column(&curve, "false_positives")[row],
            number(&counted, "fp"),
            "at {threshold}"
        );
        let recall = column(&curve, "recall")[row];
        let tp = number(&counted, "tp");
        assert!((recall - tp / (tp + column(&curve, "false_negatives")[row])).abs() < 1e-12);
    }

    // Without thresholds: about a hundred, and the area under them is ML.EVALUATE's areaUnderROC.
    let curve = run_script(&session, "SELECT * FROM ML.ROC_CURVE(MODEL credit_lr, TABLE credit)")
        .await
        .unwrap();
    let (fpr, recall) = (column(&curve, "false_positive_rate"), column(&curve, "recall"));
    assert!((50..=110).contains(&fpr.len()), "{} thresholds", fpr.len());
    let mut points: Vec<(f64, f64)> = fpr.into_iter().zip(recall).collect();
    points.push((0.0, 0.0));
    points.push((1.0, 1.0));
    points.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let area: f64 = points
        .windows(2)
        .map(|w| (w[1].0 - w[0].0) * (w[0].1 + w[1].1) / 2.0)
        .sum();
    let auc = number(
        &run_script(&session, "SELECT * FROM ML.EVALUATE(MODEL credit_lr, TABLE credit)")
            .await
            .unwrap(),
        "areaUnderROC",
    );
    assert!(
        (area - auc).abs() < 5e-3,
        "area under the table {area}, areaUnderROC {auc}"
    );

    let error = |script: &str| {
        let session = session.clone();
        let script = script.to_string();
        async move { run_script(&session, &script).await.unwrap_err().to_string() }
    };
    let threshold =
        error("SELECT * FROM ML.CONFUSION_MATRIX(MODEL credit_lr, TABLE credit, STRUCT(1.5 AS threshold))").await;
    assert!(
        threshold.contains("threshold") && threshold.contains("[0, 1]"),
        "{threshold}"
    );
    let thresholds = error("SELECT * FROM ML.ROC_CURVE(MODEL credit_lr, TABLE credit, [0.5, 2.0])").await;
    assert!(
        thresholds.contains("thresholds") && thresholds.contains("2"),
        "{thresholds}"
    );
    let unknown =
        error("SELECT * FROM ML.CONFUSION_MATRIX(MODEL credit_lr, TABLE credit, STRUCT(0.5 AS cutoff))").await;
    assert!(unknown.contains("cutoff"), "{unknown}");
    let settings = error("SELECT * FROM ML.PREDICT(MODEL credit_lr, TABLE credit, STRUCT(0.5 AS threshold))").await;
    assert!(settings.contains("takes no settings"), "{settings}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn linear_reg_trains_with_bigquery_metric_names_and_show_models_has_a_creation_time() {
    let models = tempfile::tempdir().unwrap();
    let session = credit_session(models.path()).await;
    let created = run_script(
        &session,
        "CREATE MODEL amount OPTIONS (model_type = 'linear_reg', input_label_cols = ['amount'],
                                      data_split_method = 'random', data_split_eval_fraction = 0.2)
         AS SELECT duration, age, housing, credit_amount / 1000.0 AS amount FROM credit",
    )
    .await
    .unwrap();
    let seconds = number(&created, "seconds");
    assert_eq!(
        seconds,
        (seconds * 100.0).round() / 100.0,
        "seconds to the hundredth: {seconds}"
    );
    let evaluation = run_script(&session, "SELECT * FROM ML.EVALUATE(MODEL amount)")
        .await
        .unwrap();
    let (mse, r2) = (
        number(&evaluation, "mean_squared_error"),
        number(&evaluation, "r2_score"),
    );
    println!("linear_reg of credit_amount: mean_squared_error {mse:.3}, r2_score {r2:.3}");
    assert_eq!(mse, number(&evaluation, "mse"));
    assert_eq!(number(&evaluation, "mean_absolute_error"), number(&evaluation, "mae"));
    assert!(r2 > 0.2, "duration explains much of the amount: r2 {r2}");

    let shown = run_script(&session, "SHOW MODELS").await.unwrap();
    let creation = shown[0].column_by_name("creation_time").unwrap();
    assert_eq!(
        creation.data_type(),
        &DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into()))
    );
    let ms = creation
        .as_primitive::<datafusion::arrow::datatypes::TimestampMillisecondType>()
        .value(0);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    assert!(
        (now - ms).abs() < 600_000,
        "created within the last minutes: {ms} vs {now}"
    );
    assert_eq!(
        shown[0]
            .column_by_name("model_type")
            .unwrap()
            .as_string::<i32>()
            .value(0),
        "linear_reg"
    );

    let error = |script: &str| {
        let session = session.clone();
        let script = script.to_string();
        async move { run_script(&session, &script).await.unwrap_err().to_string() }
    };
    let roc = error("SELECT * FROM ML.ROC_CURVE(MODEL amount)").await;
    assert!(roc.contains("regressor"), "{roc}");
    let weights = error(
        "CREATE MODEL w OPTIONS (model_type = 'linear_reg', input_label_cols = ['amount'], class_weights = [1.0, 2.0])
         AS SELECT age, credit_amount AS amount FROM credit",
    )
    .await;
    assert!(weights.contains("class_weights"), "{weights}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dnn_regressor_learns_a_label_in_the_tens_and_one_in_the_thousands() {
    let models = tempfile::tempdir().unwrap();
    let session = credit_session(models.path()).await;
    // Twice the duration (mean 41.8) is a function of a feature; the credit amount (mean 3,271) about half
    // explained by the duration, age and installment rate (least squares' r2 0.50).
    for (label, expression, at_least) in [("months", "2 * duration", 0.9), ("amount", "credit_amount", 0.3)] {
        run_script(
            &session,
            &format!(
                "CREATE MODEL {label} OPTIONS (model_type = 'dnn_regressor', input_label_cols = ['{label}'],
                     hidden_units = [16], max_iterations = 30, batch_size = 32, learn_rate = 0.003, seed = 2,
                     data_split_method = 'no_split')
                 AS SELECT duration, age, installment_commitment, {expression} AS {label} FROM credit"
            ),
        )
        .await
        .unwrap();
        let evaluated = run_script(
            &session,
            &format!(
                "SELECT * FROM ML.EVALUATE(MODEL {label}, (SELECT duration, age, installment_commitment, \
                 {expression} AS {label} FROM credit))"
            ),
        )
        .await
        .unwrap();
        let r2 = number(&evaluated, "r2_score");
        println!("dnn_regressor of {expression}: r2 {r2:.4}");
        assert!(r2 > at_least, "{expression}: r2 {r2}");
        // The losses are mean squared errors in the label's units.
        let info = run_script(
            &session,
            &format!("SELECT loss FROM ML.TRAINING_INFO(MODEL {label}) ORDER BY epoch DESC LIMIT 1"),
        )
        .await
        .unwrap();
        let (loss, mse) = (number(&info, "loss"), number(&evaluated, "mse"));
        assert!(
            (loss / mse - 1.0).abs() < 0.5,
            "{expression}: last loss {loss}, mse {mse}"
        );
    }
}
