//! SQL with models, where a test needs Rust: the main job in SQL gives the Rust main job's metrics; a model from
//! Rust is usable from SQL; failed statements leave the catalog's files as they were. Every statement's rows and
//! errors are in `tests/slt/`, run by `slt.rs`.

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
    let session = Session::builder().with_default_features().local(2);
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
    let session = Session::builder()
        .with_default_features()
        .local(2)
        .with_models(models.path());
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
        .unwrap()
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
    let session = Session::builder()
        .with_default_features()
        .connect(master)
        .await
        .unwrap()
        .with_models(models);
    session
        .sql(&format!(
            "CREATE EXTERNAL TABLE credit STORED AS CSV LOCATION '{}' OPTIONS ('format.has_header' 'true')",
            german_credit::csv_path().display()
        ))
        .await
        .unwrap();
    session
}

/// A session has what its builder lists: without the model catalog, SQL's model statements say how to get one
/// and write nothing into the working directory's `models`; without training, its functions are unknown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_has_only_the_extensions_its_builder_lists() {
    let session = Session::builder().with_default_features().local(1);
    for statement in [
        "SHOW MODELS",
        "CREATE MODEL m OPTIONS (model_type = 'linear_reg', input_label_cols = ['y']) AS SELECT 1.0 AS x, 2.0 AS y",
    ] {
        let error = session.sql(statement).await.unwrap_err();
        assert!(
            error
                .to_string()
                .contains("no model catalog: build it with `with_models(dir)`"),
            "{statement}: {error}"
        );
        assert_eq!(error.blame(), hearth::exec::error::Blame::Plan, "{statement}");
    }
    let preprocessing_only = Session::builder().with_preprocessing().local(1);
    let known = |session: &Session, name: &str| session.context().state().scalar_functions().contains_key(name);
    assert!(known(&preprocessing_only, "ml_string_index"));
    assert!(!known(&preprocessing_only, "ml_linear_predict"));
    assert!(known(&session, "ml_linear_predict"));
}

/// What only the catalog's files show: a statement that fails (in parsing, in planning, or on the ranks in the
/// middle of training) changes no file, and DROP MODEL leaves none. The statements' rows and errors are in
/// `tests/slt/model_statements.slt` and `tests/slt/errors.slt`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_statements_change_no_catalog_file_and_a_dropped_model_leaves_none() {
    let models = tempfile::tempdir().unwrap();
    let session = credit_session(models.path()).await;
    run_script(&session, CREATE).await.unwrap();
    let before = catalog_files(models.path());

    let syntax = run_script(
        &session,
        "SELECT 1;\nCREATE MODEL m OPTIONS (model_type = 'logistic_reg') SELECT 1",
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(syntax.contains("Line: 2"), "a script's error names its line: {syntax}");
    let replace = CREATE.replace("CREATE MODEL", "CREATE OR REPLACE MODEL");
    for failing in [
        replace.replace("max_iterations", "max_iteration"),
        replace.replace("['class']", "['klass']"),
        // A label that passes the driver's checks but not a worker's: training fails on the ranks.
        "CREATE OR REPLACE MODEL credit_lr OPTIONS (model_type = 'logistic_reg', input_label_cols = ['y'],
           workers = 2)
         AS SELECT age, CASE WHEN age < 30 THEN 0.0 WHEN age < 40 THEN 1.5 ELSE 2.0 END AS y FROM credit"
            .to_string(),
    ] {
        assert!(run_script(&session, &failing).await.is_err(), "{failing}");
    }
    assert_eq!(catalog_files(models.path()), before, "failed statements change nothing");
    let kept = ModelCatalog::new(models.path()).get("credit_lr").unwrap();
    assert_eq!(kept.entry.model_type, "logistic_reg");

    run_script(&session, "DROP MODEL credit_lr").await.unwrap();
    assert!(
        catalog_files(models.path()).is_empty(),
        "{:?}",
        catalog_files(models.path())
    );
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
