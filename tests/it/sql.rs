//! SQL with models: the main job in SQL gives the Rust main job's metrics; every statement (CREATE MODEL with
//! and without TRANSFORM, OR REPLACE, IF NOT EXISTS, ML.PREDICT/EVALUATE/TRANSFORM/TRAINING_INFO/FEATURE_INFO,
//! DROP MODEL, SHOW MODELS) works; a model from Rust is usable from SQL; bad input is named and leaves the
//! catalog as it was.

use std::path::Path;

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{Float64Type, Int64Type, UInt64Type};
use hearth::datasets::german_credit;
use hearth::prelude::*;
use hearth::sql::{ModelCatalog, parse_statements};

/// Runs every statement of `script` and returns the last one's rows.
pub async fn run_script(session: &Session, script: &str) -> Result<Vec<RecordBatch>> {
    let mut last = Vec::new();
    for statement in parse_statements(script)? {
        last = session.execute(&statement).await?.collect().await?;
    }
    Ok(last)
}

/// Column `name` of the first row, as f64.
pub(crate) fn number(batches: &[RecordBatch], name: &str) -> f64 {
    let batch = batches.iter().find(|b| b.num_rows() > 0).expect("a row");
    let column = batch.column_by_name(name).unwrap_or_else(|| panic!("no column {name}"));
    match column.data_type() {
        datafusion::arrow::datatypes::DataType::Float64 => column.as_primitive::<Float64Type>().value(0),
        datafusion::arrow::datatypes::DataType::Int64 => column.as_primitive::<Int64Type>().value(0) as f64,
        datafusion::arrow::datatypes::DataType::UInt64 => column.as_primitive::<UInt64Type>().value(0) as f64,
        other => panic!("{name} is {other}"),
    }
}

pub(crate) fn rows(batches: &[RecordBatch]) -> usize {
    batches.iter().map(RecordBatch::num_rows).sum()
}

/// The model folders and anything else in a catalog directory (staging folders included).
fn catalog_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// The Rust main job's evaluation metrics on `local[2]`, and its fitted pipeline.
async fn rust_main_job() -> (PipelineModel, [f64; 3]) {
    let session = Session::local(2);
    let credit = session
        .read_csv(german_credit::csv_path(), &CsvOptions::new())
        .await
        .unwrap();
    let parts = credit.random_split(&[0.8, 0.2], 42).unwrap();
    let model = german_credit::preprocessing()
        .stage(german_credit::classifier())
        .fit(&parts[0])
        .await
        .unwrap();
    let scored = model.transform(&parts[1]).unwrap();
    let f1 = MulticlassClassificationEvaluator::new()
        .evaluate(&scored)
        .await
        .unwrap();
    let accuracy = MulticlassClassificationEvaluator::new()
        .metric_name("accuracy")
        .evaluate(&scored)
        .await
        .unwrap();
    let auc = BinaryClassificationEvaluator::new().evaluate(&scored).await.unwrap();
    (model, [f1, accuracy, auc])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_main_job_in_sql_gives_the_rust_main_jobs_metrics_and_predictions() {
    let models = tempfile::tempdir().unwrap();
    let session = Session::local(2).with_models(models.path());
    let script = std::fs::read_to_string(german_credit::sql_path()).unwrap();
    let statements = parse_statements(&script).unwrap();
    let (before_evaluate, after) = statements.split_at(3);
    for statement in before_evaluate {
        session.execute(statement).await.unwrap().collect().await.unwrap();
    }
    let evaluation = session.execute(&after[0]).await.unwrap().collect().await.unwrap();
    let sql = [
        number(&evaluation, "f1"),
        number(&evaluation, "accuracy"),
        number(&evaluation, "areaUnderROC"),
    ];
    let (rust_model, rust) = rust_main_job().await;
    for (name, (s, r)) in ["f1", "accuracy", "areaUnderROC"].iter().zip(sql.iter().zip(&rust)) {
        assert!((s - r).abs() < 1e-9, "{name}: SQL {s} vs Rust {r}");
    }
    // The 13 single-column indexers (and encoders) of the TRANSFORM fit as one multi-column stage each.
    let stages = session
        .sql("SELECT class, COUNT(*) AS n FROM ML.FEATURE_INFO(MODEL credit_risk) GROUP BY class ORDER BY class")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let classes: Vec<String> = stages[0]
        .column(0)
        .as_string::<i32>()
        .iter()
        .map(|c| c.unwrap().to_string())
        .collect();
    let counts = stages[0].column(1).as_primitive::<Int64Type>().values().to_vec();
    assert_eq!(
        classes.iter().map(String::as_str).zip(counts).collect::<Vec<_>>(),
        [
            ("OneHotEncoderModel", 1),
            ("StandardScalerModel", 1),
            ("StringIndexerModel", 2),
            ("VectorAssembler", 1)
        ]
    );
    println!(
        "main job, SQL and Rust: f1 {:.4}, accuracy {:.4}, areaUnderROC {:.4}",
        sql[0], sql[1], sql[2]
    );

    // The Rust model, registered in the catalog, predicts every row as the SQL one does.
    session
        .models()
        .register("credit_from_rust", &rust_model, "class", false)
        .unwrap();
    let different = session
        .sql(
            "SELECT COUNT(*) AS n FROM (
               SELECT checking_status, duration, credit_history, purpose, credit_amount, age, class, predicted_class
               FROM ML.PREDICT(MODEL credit_risk, (SELECT * FROM credit))
               EXCEPT ALL
               SELECT checking_status, duration, credit_history, purpose, credit_amount, age, class, predicted_class
               FROM ML.PREDICT(MODEL credit_from_rust, (SELECT * FROM credit)))",
        )
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    assert_eq!(number(&different, "n"), 0.0);
}

const CREATE: &str = "CREATE MODEL credit_lr
    OPTIONS (model_type = 'logistic_reg', input_label_cols = ['class'], max_iterations = 3, workers = 2,
             data_split_method = 'random', data_split_eval_fraction = 0.25, seed = 3)
    AS SELECT duration, credit_amount, age, purpose, housing, class FROM credit";

/// A session with its models in `models` and the German credit CSV as table `credit`.
pub async fn credit_session(models: &Path) -> Session {
    credit_session_on("local[2]", models).await
}

/// [`credit_session`] on `master`.
pub async fn credit_session_on(master: &str, models: &Path) -> Session {
    let session = Session::connect(master).await.unwrap().with_models(models);
    session
        .sql(&format!(
            "CREATE EXTERNAL TABLE credit STORED AS CSV LOCATION '{}' OPTIONS ('format.has_header' 'true')",
            german_credit::csv_path().display()
        ))
        .await
        .unwrap();
    session
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_model_statement_works_on_a_local_session() {
    let models = tempfile::tempdir().unwrap();
    let session = credit_session(models.path()).await;

    let created = run_script(&session, CREATE).await.unwrap();
    assert_eq!(
        number(&created, "training_rows") + number(&created, "evaluation_rows"),
        1000.0
    );
    assert!(number(&created, "evaluation_rows") > 150.0);
    let shown = run_script(&session, "SHOW MODELS").await.unwrap();
    assert_eq!(rows(&shown), 1);

    // Without TRANSFORM: numbers standardized, strings one-hot encoded, the label indexed.
    let predicted = run_script(
        &session,
        "SELECT predicted_class, predicted_class_probs FROM ML.PREDICT(MODEL credit_lr, (SELECT * FROM credit))",
    )
    .await
    .unwrap();
    assert_eq!(rows(&predicted), 1000);
    let batch = &predicted[0];
    let label = batch.column(0).as_string::<i32>().value(0).to_string();
    assert!(label == "good" || label == "bad", "{label}");
    assert_eq!(
        batch.column(1).as_list::<i32>().value(0).len(),
        2,
        "one probability per label"
    );

    // ML.PREDICT inside a larger query.
    let counts = run_script(
        &session,
        "SELECT predicted_class, COUNT(*) AS n FROM ML.PREDICT(MODEL credit_lr, TABLE credit) GROUP BY predicted_class",
    )
    .await
    .unwrap();
    assert_eq!(
        counts
            .iter()
            .flat_map(|b| b.column(1).as_primitive::<Int64Type>().values().to_vec())
            .sum::<i64>(),
        1000
    );

    let held_out = run_script(&session, "SELECT * FROM ML.EVALUATE(MODEL credit_lr)")
        .await
        .unwrap();
    let given = run_script(
        &session,
        "SELECT * FROM ML.EVALUATE(MODEL credit_lr, (SELECT * FROM credit))",
    )
    .await
    .unwrap();
    for evaluation in [&held_out, &given] {
        for metric in [
            "f1",
            "accuracy",
            "weightedPrecision",
            "weightedRecall",
            "areaUnderROC",
            "areaUnderPR",
        ] {
            let value = number(evaluation, metric);
            assert!((0.0..=1.0).contains(&value), "{metric} = {value}");
        }
        assert!(number(evaluation, "logLoss") > 0.0);
    }

    let info = run_script(
        &session,
        "SELECT loss FROM ML.TRAINING_INFO(MODEL credit_lr) ORDER BY epoch",
    )
    .await
    .unwrap();
    // L-BFGS's objective at the start and after each of its 3 iterations, falling.
    let losses: Vec<f64> = info
        .iter()
        .flat_map(|b| b.column(0).as_primitive::<Float64Type>().values().to_vec())
        .collect();
    assert_eq!(losses.len(), 4, "{losses:?}");
    assert!(losses.windows(2).all(|w| w[1] < w[0]), "{losses:?}");
    let features = run_script(&session, "SELECT * FROM ML.FEATURE_INFO(MODEL credit_lr)")
        .await
        .unwrap();
    assert!(
        rows(&features) >= 4,
        "label indexer, indexers, encoders, assembler, scaler"
    );
    let transformed = run_script(
        &session,
        "SELECT * FROM ML.TRANSFORM(MODEL credit_lr, TABLE credit) LIMIT 3",
    )
    .await
    .unwrap();
    assert!(transformed[0].schema().field_with_name("class").is_ok());

    // IF NOT EXISTS keeps the model; OR REPLACE retrains it.
    let kept = run_script(&session, &CREATE.replace("CREATE MODEL", "CREATE MODEL IF NOT EXISTS"))
        .await
        .unwrap();
    assert_eq!(kept[0].column(1).as_string::<i32>().value(0), "exists; not replaced");
    let replaced = run_script(&session, &CREATE.replace("CREATE MODEL", "CREATE OR REPLACE MODEL"))
        .await
        .unwrap();
    assert_eq!(replaced[0].column(1).as_string::<i32>().value(0), "trained");
    let error = run_script(&session, CREATE).await.unwrap_err().to_string();
    assert!(error.contains("exists; use CREATE OR REPLACE MODEL"), "{error}");

    run_script(&session, "DROP MODEL credit_lr").await.unwrap();
    assert_eq!(rows(&run_script(&session, "SHOW MODELS").await.unwrap()), 0);
    run_script(&session, "DROP MODEL IF EXISTS credit_lr").await.unwrap();
    let error = run_script(&session, "DROP MODEL credit_lr")
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("no model named \"credit_lr\""), "{error}");
    assert!(
        catalog_files(models.path()).is_empty(),
        "{:?}",
        catalog_files(models.path())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_statements_are_named_and_leave_the_catalog_as_it_was() {
    let models = tempfile::tempdir().unwrap();
    let session = credit_session(models.path()).await;
    run_script(&session, CREATE).await.unwrap();
    let before = catalog_files(models.path());

    let error = |script: &str| {
        let session = session.clone();
        let script = script.to_string();
        async move { run_script(&session, &script).await.unwrap_err().to_string() }
    };
    let syntax = error("SELECT 1;\nCREATE MODEL m OPTIONS (model_type = 'logistic_reg') SELECT 1").await;
    assert!(syntax.contains("Line: 2"), "{syntax}");
    let misspelt = error("SELECT * FROM ML.PREDCT(MODEL credit_lr, TABLE credit)").await;
    assert!(
        misspelt.contains("ML.PREDCT is not a table function (did you mean ML.PREDICT?)"),
        "{misspelt}"
    );
    let rows_not_read = error("SELECT * FROM ML.TRAINING_INFO(MODEL credit_lr, TABLE credit)").await;
    assert!(
        rows_not_read.contains("ML.TRAINING_INFO takes no rows: ML.TRAINING_INFO(MODEL m)"),
        "{rows_not_read}"
    );
    let unknown_model = error("SELECT * FROM ML.PREDICT(MODEL nope, TABLE credit)").await;
    assert!(
        unknown_model.contains("no model named \"nope\"") && unknown_model.contains("credit_lr"),
        "{unknown_model}"
    );
    let unknown_option = error(&CREATE.replace("max_iterations", "max_iteration")).await;
    assert!(
        unknown_option.contains("option max_iteration: unknown option (did you mean max_iterations?)"),
        "{unknown_option}"
    );
    let ill_typed = error(&CREATE.replace("max_iterations = 3", "max_iterations = 'three'")).await;
    assert!(
        ill_typed.contains("option max_iterations: expected a whole number"),
        "{ill_typed}"
    );
    let mini_batch_only = error(&CREATE.replace("max_iterations = 3", "max_iterations = 3, learn_rate = 0.01")).await;
    assert!(
        mini_batch_only.contains("option learn_rate: 'logistic_reg' is solved exactly")
            && mini_batch_only.contains("optimize_strategy = 'MINI_BATCH'"),
        "{mini_batch_only}"
    );
    let precision = error(&CREATE.replace("max_iterations = 3", "max_iterations = 3, precision = 'fp8'")).await;
    assert!(
        precision.contains("option precision: expected 'fp32' or 'bf16'"),
        "{precision}"
    );
    let replace = CREATE.replace("CREATE MODEL", "CREATE OR REPLACE MODEL");
    let missing_label = error(&replace.replace("['class']", "['klass']")).await;
    assert!(
        missing_label.contains("\"klass\"")
            && missing_label.contains("input_label_cols")
            && missing_label.contains("(did you mean \"class\"?)"),
        "{missing_label}"
    );
    let vector_label = error(
        "CREATE OR REPLACE MODEL credit_lr OPTIONS (model_type = 'logistic_reg', input_label_cols = ['v'])
         AS SELECT age, make_array(1.0, 2.0) AS v FROM credit",
    )
    .await;
    assert!(
        vector_label.contains("\"v\"") && vector_label.contains("a number or a string"),
        "{vector_label}"
    );
    let missing_column = error(
        "CREATE OR REPLACE MODEL credit_lr OPTIONS (model_type = 'logistic_reg', input_label_cols = ['class'])
         TRANSFORM (ML.STANDARD_SCALER(agee) OVER () AS a, class) AS SELECT * FROM credit",
    )
    .await;
    assert!(
        missing_column.contains("\"agee\"") && missing_column.contains("no such column"),
        "{missing_column}"
    );
    let predict_missing = error("SELECT * FROM ML.PREDICT(MODEL credit_lr, (SELECT age FROM credit))").await;
    assert!(
        predict_missing.contains("no column \"duration\"") && predict_missing.contains("ML.PREDICT"),
        "{predict_missing}"
    );
    // A label that passes the driver's checks but not a worker's: training fails on the ranks.
    let mid_training = error(
        "CREATE OR REPLACE MODEL credit_lr OPTIONS (model_type = 'logistic_reg', input_label_cols = ['y'],
           workers = 2)
         AS SELECT age, CASE WHEN age < 30 THEN 0.0 WHEN age < 40 THEN 1.5 ELSE 2.0 END AS y FROM credit",
    )
    .await;
    assert!(mid_training.contains("label 1.5"), "{mid_training}");

    assert_eq!(catalog_files(models.path()), before, "failed statements change nothing");
    let kept = ModelCatalog::new(models.path()).get("credit_lr").unwrap();
    assert_eq!(kept.entry.model_type, "logistic_reg");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_regressor_trains_predicts_and_evaluates() {
    let models = tempfile::tempdir().unwrap();
    let session = credit_session(models.path()).await;
    let created = run_script(
        &session,
        "CREATE MODEL amount
         OPTIONS (model_type = 'mlp_regressor', input_label_cols = ['amount'], hidden_units = [16],
                  max_iterations = 8, learn_rate = 0.01, batch_size = 32, workers = 2, seed = 1,
                  data_split_method = 'no_split')
         TRANSFORM (ML.STANDARD_SCALER(ML.VECTOR_ASSEMBLER(duration, age), with_mean => TRUE) OVER () AS x, amount)
         AS SELECT duration, age, credit_amount / 1000.0 AS amount FROM credit",
    )
    .await
    .unwrap();
    assert_eq!(number(&created, "training_rows"), 1000.0);
    let predicted = run_script(
        &session,
        "SELECT predicted_amount FROM ML.PREDICT(MODEL amount, (SELECT duration, age FROM credit))",
    )
    .await
    .unwrap();
    assert_eq!(rows(&predicted), 1000);
    assert!(
        predicted[0]
            .column(0)
            .as_primitive::<Float64Type>()
            .value(0)
            .is_finite()
    );
    let evaluation = run_script(
        &session,
        "SELECT * FROM ML.EVALUATE(MODEL amount, (SELECT duration, age, credit_amount / 1000.0 AS amount FROM credit))",
    )
    .await
    .unwrap();
    let (rmse, r2) = (number(&evaluation, "rmse"), number(&evaluation, "r2"));
    println!("regressor of credit_amount (thousands) on duration and age: rmse {rmse:.3}, r2 {r2:.3}");
    assert!(rmse > 0.0 && (number(&evaluation, "mse") - rmse * rmse).abs() < 1e-9);
    assert!(r2 > 0.2, "duration explains much of the amount: r2 {r2}");
    let info = run_script(&session, "SELECT accuracy FROM ML.TRAINING_INFO(MODEL amount)")
        .await
        .unwrap();
    assert_eq!(rows(&info), 8);
    assert!(info[0].column(0).is_null(0), "a regressor has no accuracy");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_model_takes_a_trainer_strategy_with_dist_keras_names() {
    let models = tempfile::tempdir().unwrap();
    let session = credit_session(models.path()).await;
    let downpour = CREATE.replace(
        "seed = 3)",
        "seed = 3, optimize_strategy = 'mini_batch', learn_rate = 0.01, strategy = 'downpour', \
         communication_window = 4)",
    );
    run_script(&session, &downpour).await.unwrap();
    let model = ModelCatalog::new(models.path()).get("credit_lr").unwrap();
    let last = model.pipeline.stages().last().unwrap();
    let classifier = last.downcast_ref::<ClassificationModel>().unwrap();
    assert_eq!(
        classifier.artifact().options.settings.strategy,
        Strategy::Downpour {
            communication_window: 4
        }
    );
    assert!(classifier.summary().ranks.iter().all(|r| r.staleness.is_some()));
    let evaluated = run_script(&session, "SELECT * FROM ML.EVALUATE(MODEL credit_lr)")
        .await
        .unwrap();
    assert!(number(&evaluated, "accuracy") > 0.6);

    let error = |script: String| {
        let session = session.clone();
        async move { run_script(&session, &script).await.unwrap_err().to_string() }
    };
    let replace = CREATE
        .replace("CREATE MODEL", "CREATE OR REPLACE MODEL")
        .replace("workers = 2,", "workers = 2, optimize_strategy = 'mini_batch',");
    let unknown = error(replace.replace("seed = 3)", "seed = 3, strategy = 'hogwild')")).await;
    assert!(
        unknown.contains("option strategy") && unknown.contains("'async_easgd'"),
        "{unknown}"
    );
    let misplaced = error(replace.replace("seed = 3)", "seed = 3, strategy = 'downpour', rho = 2.0)")).await;
    assert!(
        misplaced.contains("option rho: strategy 'downpour' does not take it"),
        "{misplaced}"
    );
    let too_strong =
        error(replace.replace("seed = 3)", "seed = 3, strategy = 'easgd', elastic_learn_rate = 0.5)")).await;
    assert!(too_strong.contains("α = rho × learning_rate < 1"), "{too_strong}");
}
