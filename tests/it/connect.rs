//! hearth's Spark Connect server driven by PySpark's own client (PyPI's `pyspark-client`, installed by
//! `scripts/pyspark_client.sh`): the DataFrame API a PySpark user writes gives what hearth's Rust API gives on
//! the same data, on an embedded and a Ballista master; `show()` prints Spark's text; bad requests raise
//! PySpark's exceptions and leave the server serving; sessions keep their views to themselves, end on
//! `stop()` or when idle; a server with a token refuses calls without it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use datafusion::arrow::array::AsArray;
use datafusion::arrow::compute::cast as cast_array;
use datafusion::arrow::datatypes::{DataType, Float64Type, Int64Type};
use datafusion::functions_aggregate::count::count_all;
use datafusion::functions_aggregate::expr_fn::avg;
use datafusion::logical_expr::{cast, col, ident, lit};
use hearth::connect::{ConnectOptions, ConnectServer};
use hearth::datasets::german_credit;
use hearth::prelude::*;
use serde_json::Value;

use crate::common::{ballista_runtime, wait_within};

mod guide;

/// The Python of the environment `scripts/pyspark_client.sh` installed (`./dev test` names it).
fn client_python() -> PathBuf {
    let env = std::env::var("HEARTH_PYSPARK_CLIENT").expect(
        "HEARTH_PYSPARK_CLIENT is not set: run the tests with ./dev test, which installs PySpark's client \
         (scripts/pyspark_client.sh)",
    );
    PathBuf::from(env).join("bin/python")
}

/// A server on a free loopback port for `master`.
async fn serve(master: &str, token: Option<&str>, idle: Duration) -> ConnectServer {
    let mut options = ConnectOptions::new("127.0.0.1:0".parse().unwrap(), master);
    options.token = token.map(str::to_owned);
    options.idle_timeout = idle;
    ConnectServer::start(options)
        .await
        .expect("start the Spark Connect server")
}

/// Runs `tests/it/connect/SCRIPT` with `args` (at most two minutes) and returns its standard output; fails
/// with its standard error when it fails.
async fn run_client(script: &'static str, args: Vec<String>, env: Vec<(&'static str, String)>) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/it/connect")
        .join(script);
    tokio::task::spawn_blocking(move || {
        let (out, err) = (
            tempfile::NamedTempFile::new().unwrap(),
            tempfile::NamedTempFile::new().unwrap(),
        );
        let child = Command::new(client_python())
            .arg(&path)
            .args(&args)
            .env_remove("SPARK_CONNECT_AUTHENTICATE_TOKEN")
            .env("PYTHONWARNINGS", "ignore")
            .envs(env)
            .stdout(out.reopen().unwrap())
            .stderr(err.reopen().unwrap())
            .spawn()
            .expect("start the PySpark client");
        let status = wait_within(child, Duration::from_secs(120), script);
        let errors = std::fs::read_to_string(err.path()).unwrap();
        assert!(status.success(), "{script} failed ({status}):\n{errors}");
        std::fs::read_to_string(out.path()).unwrap()
    })
    .await
    .unwrap()
}

/// The last line of a script's output, which is its JSON report.
fn report(output: &str) -> Value {
    serde_json::from_str(output.lines().last().expect("a report line")).expect("a JSON report")
}

/// What hearth's Rust API says of German Credit: rows, rows with duration over 24, mean amount, rows per class
/// and the three commonest purposes with their mean amount.
async fn credit_in_rust() -> Value {
    let session = Session::builder().with_default_features().local(2);
    let credit = session
        .read_csv(german_credit::csv_path(), &CsvOptions::new())
        .await
        .unwrap();
    let count = credit.clone().count().await.unwrap();
    let long = credit
        .clone()
        .filter(col("duration").gt(lit(24)))
        .unwrap()
        .count()
        .await
        .unwrap();
    let mean = credit
        .clone()
        .aggregate(vec![], vec![avg(col("credit_amount"))])
        .unwrap()
        .collect()
        .await
        .unwrap();
    let mean = mean[0].column(0).as_primitive::<Float64Type>().value(0);
    let mut by_class = BTreeMap::new();
    for batch in credit
        .clone()
        .aggregate(vec![col("class")], vec![count_all()])
        .unwrap()
        .collect()
        .await
        .unwrap()
    {
        for r in 0..batch.num_rows() {
            let class = cast_array(batch.column(0), &DataType::Utf8).unwrap();
            by_class.insert(
                class.as_string::<i32>().value(r).to_owned(),
                batch.column(1).as_primitive::<Int64Type>().value(r),
            );
        }
    }
    let purposes = credit
        .aggregate(
            vec![col("purpose")],
            vec![count_all().alias("n"), avg(col("credit_amount")).alias("a")],
        )
        .unwrap()
        .sort(vec![col("n").sort(false, true), col("purpose").sort(true, true)])
        .unwrap()
        .limit(0, Some(3))
        .unwrap()
        .select(vec![cast(col("purpose"), DataType::Utf8), col("n"), col("a")])
        .unwrap()
        .collect()
        .await
        .unwrap();
    let mut top = Vec::new();
    for batch in &purposes {
        for r in 0..batch.num_rows() {
            top.push(serde_json::json!([
                batch.column(0).as_string::<i32>().value(r),
                batch.column(1).as_primitive::<Int64Type>().value(r),
                batch.column(2).as_primitive::<Float64Type>().value(r),
            ]));
        }
    }
    serde_json::json!({ "count": count, "long": long, "mean": mean, "by_class": by_class, "top": top })
}

/// The DataFrame battery on `master`, checked against the Rust API and Spark's own text.
async fn dataframes_on(master: &str) {
    let server = serve(master, None, Duration::from_secs(600)).await;
    let url = format!("sc://127.0.0.1:{}", server.address().port());
    let csv = german_credit::csv_path().display().to_string();
    let seen = report(&run_client("dataframes.py", vec![url, csv], vec![]).await);
    let rust = credit_in_rust().await;

    assert_eq!(seen["version"], hearth::connect::SPARK_VERSION);
    assert_eq!(
        seen["range_show"],
        "+---+\n| id|\n+---+\n|  0|\n|  1|\n|  2|\n|  3|\n|  4|\n+---+\nonly showing top 5 rows\n"
    );
    assert_eq!(seen["range_rows"], serde_json::json!([2, 5, 8, 11, 14, 17]));
    assert_eq!(
        seen["small_show"],
        "+---+--------------------+-----------+\n\
         | id|                name|          x|\n\
         +---+--------------------+-----------+\n\
         |  1|               alpha|        2.5|\n\
         |  2|a rather long name!!|       NULL|\n\
         |  3|                   c|     1.0E-4|\n\
         |  4|                   d|1.2345678E7|\n\
         +---+--------------------+-----------+\n\n"
    );
    assert_eq!(
        seen["small_show_vertical"],
        "-RECORD 0-----\n id   | 1     \n name | alpha \n x    | 2.5   \n\n"
    );
    assert_eq!(
        seen["small_pandas"],
        serde_json::json!([
            [1, "alpha", 2.5],
            [2, "a rather long name!!", -1.0],
            [3, "c", 0.0001],
            [4, "d", 12345678.0]
        ])
    );
    assert_eq!(
        seen["small_schema"],
        "root\n |-- id: long (nullable = true)\n |-- name: string (nullable = true)\n |-- x: double (nullable = true)\n\n"
    );
    assert_eq!(
        seen["derived"],
        serde_json::json!([
            [4, 2.0, 24691356.0, false],
            [3, 1.5, 0.0002, false],
            [2, 1.0, null, true]
        ])
    );
    assert_eq!(
        seen["derived_columns"],
        serde_json::json!(["(id + 1)", "(id = 2)", "CAST(x AS INT)"])
    );

    assert_eq!(seen["credit_columns"].as_array().unwrap().len(), 21);
    // Spark's inference: whole numbers that fit 32 bits are `int`.
    assert_eq!(seen["credit_types"], serde_json::json!(["int", "int", "string"]));
    assert_eq!(seen["credit_count"], rust["count"]);
    assert_eq!(seen["credit_long"], rust["long"]);
    assert_eq!(seen["credit_mean_amount"], rust["mean"]);
    assert_eq!(seen["credit_by_class"], rust["by_class"]);
    assert_eq!(seen["credit_by_purpose"], rust["top"]);
    assert_eq!(seen["credit_purposes"], 10);

    let split: Vec<u64> = seen["split"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert_eq!(
        split[0] + split[1],
        1000,
        "randomSplit's parts cover the rows: {split:?}"
    );
    assert_eq!(split[0], split[2], "the same seed splits the same way: {split:?}");
    assert_eq!(split[3], 0, "randomSplit's parts share no row: {split:?}");
    assert!(
        (750..850).contains(&split[0]),
        "an 80% split holds about 800 rows: {split:?}"
    );

    assert_eq!(seen["sql"], serde_json::json!([["bad", 74], ["good", 75]]));
    assert_eq!(seen["join_using"], serde_json::json!([[1, "a", 10]]));
    assert_eq!(seen["join_left"], serde_json::json!([[1, "a", 10], [2, "b", null]]));
    assert_eq!(seen["join_full_columns"], serde_json::json!(["k", "v", "w"]));
    assert_eq!(seen["union"], 4);
    assert_eq!(seen["renamed"], serde_json::json!(["value"]));
    assert_eq!(seen["intersect"], 2, "intersect is distinct, as Spark's");
    assert_eq!(seen["intersect_all"], 3);
    assert_eq!(seen["select_expr"], serde_json::json!(["k1", "upper(s)"]));
    assert_eq!(
        seen["first_last"],
        serde_json::json!([["a", 1, 1], ["b", 2, 2], ["c", 3, 3]])
    );
    assert_eq!(seen["aliased"], serde_json::json!([1, 2, 2, 3]));
    // Classic PySpark 4.0.0's describe() of the same columns, as it printed them — but the standard deviation
    // of age, whose last digit differs: Spark's 11.37546857431751 against 11.375468574317512 here, the double
    // nearest the exact 11.3754685743175118….
    let mut described = seen["describe"].clone();
    let age_stddev = described[3][1].take();
    assert_close(
        "age's stddev",
        &age_stddev.as_str().unwrap().parse::<f64>().unwrap().into(),
        &[11.37546857431751],
    );
    assert_eq!(
        described,
        serde_json::json!([
            ["summary", "age", "purpose", "duration"],
            ["count", "1000", "1000", "1000"],
            ["mean", "35.546", null, "20.903"],
            ["stddev", null, null, "12.058814452756371"],
            ["min", "19", "business", "4"],
            ["max", "75", "used car", "72"]
        ])
    );
    assert_eq!(
        seen["describe_all"],
        serde_json::json!([
            ["count", "2", "2"],
            ["mean", "0.75005", null],
            ["stddev", "1.0605894611017026", null],
            ["min", "1.0E-4", "a"],
            ["max", "1.5", "b"]
        ])
    );
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pyspark_dataframes_run_on_an_embedded_master() {
    dataframes_on("local[2]").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pyspark_dataframes_run_on_a_ballista_master() {
    dataframes_on("standalone[2]").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_raise_pysparks_exceptions_and_the_server_goes_on() {
    let server = serve("local[2]", None, Duration::from_secs(600)).await;
    let url = format!("sc://127.0.0.1:{}", server.address().port());
    let seen = report(&run_client("errors.py", vec![url], vec![]).await);
    let expect = |case: &str, class: &str, words: &str| {
        let got = &seen[case];
        assert_eq!(got["class"], class, "{case}: {got}");
        let message = got["message"].as_str().unwrap();
        assert!(message.contains(words), "{case}: {message:?} should say {words:?}");
    };
    expect("missing_column", "AnalysisException", "`nope` cannot be resolved");
    expect("missing_table", "AnalysisException", "TABLE_OR_VIEW_NOT_FOUND");
    expect("bad_sql", "ParseException", "PARSE_SYNTAX_ERROR");
    expect("unknown_function", "AnalysisException", "UNRESOLVED_ROUTINE");
    expect(
        "unsupported_relation",
        "UnsupportedOperationException",
        "does not support the relation unpivot",
    );
    expect("unknown_config", "SparkNoSuchElementException", "SQL_CONF_NOT_FOUND");
    expect("missing_file", "SparkException", "no-such-file.csv");
    assert_eq!(seen["after"], 3, "the server answers after the errors");
    server.shutdown().await.unwrap();
}

/// On the embedded master and on Ballista's (`standalone[2]`, on a [`ballista_runtime`]).
#[test]
fn an_interrupt_stops_a_training_stage_and_the_next_fit_runs_as_fast() {
    let runtime = ballista_runtime();
    runtime.block_on(async {
        for master in ["local[2]", "standalone[2]"] {
            interrupt_on(master).await;
        }
    });
}

/// The interrupt script against a server on `master`.
async fn interrupt_on(master: &str) {
    let server = serve(master, None, Duration::from_secs(600)).await;
    let url = format!("sc://127.0.0.1:{}", server.address().port());
    let seen = report(&run_client("interrupt.py", vec![url], vec![]).await);
    assert_eq!(seen["short_iterations"], 20, "{master}: {seen}");
    assert!(seen["interrupted"].as_u64().unwrap() >= 1, "{master}: {seen}");
    let error = &seen["long_fit"]["error"];
    assert!(
        error["message"].as_str().unwrap().contains("OPERATION_CANCELED"),
        "{master}: {seen}"
    );
    assert_eq!(seen["still_fitting"], false, "{master}: {seen}");
    let seconds = |key: &str| seen[key].as_f64().unwrap();
    assert!(seconds("stopped_within") < 20.0, "{master}: {seen}");
    // A fit left running would take a core from the next one (two ranks on two cores).
    assert!(
        seconds("again_seconds") < 3.0 * seconds("short_seconds") + 5.0,
        "{master}: the fit after the interrupt is as fast as the one before: {seen}"
    );
    assert_eq!(seen["same_model"], true, "{master}: {seen}");
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_keep_their_views_and_end_when_released_or_idle() {
    let server = serve("local[1]", None, Duration::from_secs(2)).await;
    let url = format!("sc://127.0.0.1:{}", server.address().port());
    let seen = report(&run_client("sessions.py", vec![url], vec![]).await);
    assert_eq!(seen["own_view"], 3);
    assert_eq!(seen["other_session"]["class"], "AnalysisException", "{seen}");
    assert!(
        seen["after_stop"]["message"]
            .as_str()
            .unwrap()
            .contains("SESSION_CLOSED"),
        "{seen}"
    );
    assert!(
        seen["after_idle"]["message"]
            .as_str()
            .unwrap()
            .contains("SESSION_CLOSED"),
        "{seen}"
    );
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_with_a_token_refuses_calls_without_it() {
    let server = serve("local[1]", Some("s3cret-token"), Duration::from_secs(600)).await;
    let port = server.address().port();
    let seen = report(&run_client("bearer_token.py", vec![port.to_string(), "s3cret-token".into()], vec![]).await);
    assert_eq!(seen["with_token"], 1);
    for case in ["without_token", "wrong_token"] {
        assert_eq!(seen[case]["class"], "SparkConnectGrpcException", "{case}: {seen}");
        assert!(
            seen[case]["message"].as_str().unwrap().contains("UNAUTHENTICATED"),
            "{case}: {seen}"
        );
    }
    let from_env = report(
        &run_client(
            "bearer_token.py",
            vec![port.to_string(), String::new()],
            vec![("SPARK_CONNECT_AUTHENTICATE_TOKEN", "s3cret-token".into())],
        )
        .await,
    );
    assert_eq!(
        from_env["with_token"], 1,
        "the client's SPARK_CONNECT_AUTHENTICATE_TOKEN is the token too"
    );
    server.shutdown().await.unwrap();
}

/// `got` (a number or a list of them) within 1e-9 relative of `want`.
fn assert_close(what: &str, got: &Value, want: &[f64]) {
    let got: Vec<f64> = match got.as_array() {
        Some(list) => list.iter().map(|v| v.as_f64().unwrap()).collect(),
        None => vec![got.as_f64().unwrap()],
    };
    assert_eq!(got.len(), want.len(), "{what}: {got:?} against {want:?}");
    for (g, w) in got.iter().zip(want) {
        assert!(crate::common::close(*g, *w, 1e-9), "{what}: {got:?} against {want:?}");
    }
}

/// German Credit's pipeline fitted by hearth's Rust API on the rows PySpark's `randomSplit([0.8, 0.2], 42)`
/// keeps: the fitted stages and the test rows' predictions.
/// German Credit typed as Spark's `inferSchema` types it, and hearth's server with it: whole numbers as 32-bit
/// `int` (hearth's Rust reader infers 64 bits). A split draws each row from its values, typed: the Rust side
/// splits the same rows as the client only with the client's types.
async fn spark_typed_credit(session: &Session) -> DataFrame {
    let credit = session
        .read_csv(german_credit::csv_path(), &CsvOptions::new())
        .await
        .unwrap();
    let columns: Vec<_> = (credit.schema().fields().iter())
        .map(|field| match field.data_type() {
            DataType::Int64 => cast(ident(field.name()), DataType::Int32).alias(field.name()),
            _ => ident(field.name()),
        })
        .collect();
    credit.select(columns).unwrap()
}

async fn pipeline_in_rust() -> (PipelineModel, DataFrame) {
    let session = Session::builder().with_default_features().local(2);
    let credit = spark_typed_credit(&session).await;
    let split = credit.random_split(&[0.8, 0.2], 42).unwrap();
    let pipeline = Pipeline::new()
        .stage(StringIndexer::new().input_col("class").output_col("label"))
        .stage(StringIndexer::new().input_col("purpose").output_col("purpose_idx"))
        .stage(
            OneHotEncoder::new()
                .input_cols(["purpose_idx"])
                .output_cols(["purpose_vec"]),
        )
        .stage(
            VectorAssembler::new()
                .input_cols(["duration", "credit_amount", "age", "purpose_vec"])
                .output_col("raw"),
        )
        .stage(StandardScaler::new().input_col("raw").output_col("features"))
        .stage(LogisticRegression::new().max_iter(100).reg_param(0.01));
    let model = pipeline.fit(&split[0]).await.unwrap();
    let predictions = model.transform(&split[1]).unwrap();
    (model, predictions)
}

/// The older PySpark clients on PyPI, which `scripts/pyspark_client.sh` installs beside 4.2 (in the
/// environment's `clients/VERSION`, for PYTHONPATH).
const OLDER_CLIENTS: [&str; 2] = ["4.0.4", "4.1.3"];

/// The pipeline script's report with its errors' classes only: their messages name objects by random uids.
fn comparable(mut report: Value) -> Value {
    for error in ["missing_column", "other_session"] {
        report[error] = report[error]["class"].take();
    }
    report
}

/// Fails naming the first place where two reports differ: numbers by more than `relative`, anything else at all.
fn assert_same_report(seen: &Value, expected: &Value, relative: f64, at: &str) {
    match (seen, expected) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for key in keys {
                let (x, y) = (
                    &a.get(key).cloned().unwrap_or(Value::Null),
                    &b.get(key).cloned().unwrap_or(Value::Null),
                );
                assert_same_report(x, y, relative, &format!("{at}.{key}"));
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                assert_same_report(x, y, relative, &format!("{at}[{i}]"));
            }
        }
        (Value::Number(a), Value::Number(b)) => {
            let (x, y) = (a.as_f64().unwrap(), b.as_f64().unwrap());
            assert!((x - y).abs() <= relative * y.abs().max(1.0), "{at}: {x} against {y}");
        }
        _ => assert_eq!(seen, expected, "{at}"),
    }
}

/// The whole ML script on a Ballista master (`standalone[2]`: Ballista's scheduler and executor in the
/// process) reports what it reports on `local[2]`: the same indexers, scaler, fits, summaries, statistics,
/// predictions, evaluations and errors (on a [`ballista_runtime`]).
#[test]
fn the_pipeline_script_reports_the_same_on_a_ballista_master() {
    let runtime = ballista_runtime();
    runtime.block_on(async {
        let mut reports = Vec::new();
        for master in ["local[2]", "standalone[2]"] {
            let server = serve(master, None, Duration::from_secs(600)).await;
            let url = format!("sc://127.0.0.1:{}", server.address().port());
            let args = vec![url, german_credit::csv_path().display().to_string()];
            reports.push(comparable(report(&run_client("pipeline.py", args, vec![]).await)));
            server.shutdown().await.unwrap();
        }
        // A fit sums its partitions in another order on each master: the last bits may differ.
        assert_same_report(&reports[1], &reports[0], 1e-9, "report");
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_4_0_and_4_1_clients_run_the_pipeline_script_as_4_2_does() {
    let server = serve("local[2]", None, Duration::from_secs(600)).await;
    let url = format!("sc://127.0.0.1:{}", server.address().port());
    let args = vec![url, german_credit::csv_path().display().to_string()];
    let newest = comparable(report(&run_client("pipeline.py", args.clone(), vec![]).await));
    let environment = client_python().parent().and_then(Path::parent).unwrap().to_path_buf();
    for version in OLDER_CLIENTS {
        let client = environment.join("clients").join(version);
        assert!(
            client.join("pyspark").exists(),
            "{} (scripts/pyspark_client.sh installs it)",
            client.display()
        );
        let path = vec![("PYTHONPATH", client.display().to_string())];
        let seen = comparable(report(&run_client("pipeline.py", args.clone(), path).await));
        assert_eq!(seen, newest, "pyspark-client {version} against 4.2.0");
    }
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pyspark_ml_pipeline_fits_and_evaluates_as_the_rust_api_does() {
    let server = serve("local[2]", None, Duration::from_secs(600)).await;
    let url = format!("sc://127.0.0.1:{}", server.address().port());
    let csv = german_credit::csv_path().display().to_string();
    let seen = report(&run_client("pipeline.py", vec![url, csv], vec![]).await);
    let (model, predictions) = pipeline_in_rust().await;

    let labels = crate::common::stage::<StringIndexerModel>(&model, 0).labels()[0].clone();
    assert_eq!(seen["labels"], serde_json::json!(labels));
    let sizes = crate::common::stage::<OneHotEncoderModel>(&model, 2)
        .category_sizes()
        .to_vec();
    assert_eq!(seen["category_sizes"], serde_json::json!(sizes));
    // The same fit; sums over partitions may add in another order, so the last bits may differ.
    let scaler = crate::common::stage::<StandardScalerModel>(&model, 4);
    assert_close("mean", &seen["mean"], scaler.mean());
    assert_close("std", &seen["std"], scaler.std());
    let lr = crate::common::stage::<LogisticRegressionModel>(&model, 5);
    assert_close("coefficients", &seen["coefficients"], lr.coefficients());
    assert_close("intercept", &seen["intercept"], &[lr.intercept()]);
    assert_eq!(seen["uid"], true, "the model keeps its estimator's uid");
    let columns: Vec<String> = predictions.schema().fields().iter().map(|f| f.name().clone()).collect();
    assert_eq!(seen["columns"], serde_json::json!(columns));
    assert_eq!(seen["rows"], predictions.clone().count().await.unwrap());
    let accuracy = MulticlassClassificationEvaluator::new()
        .metric_name("accuracy")
        .evaluate(&predictions)
        .await
        .unwrap();
    assert_close("accuracy", &seen["accuracy"], &[accuracy]);
    assert_close(
        "f1",
        &seen["f1"],
        &[MulticlassClassificationEvaluator::new()
            .evaluate(&predictions)
            .await
            .unwrap()],
    );
    assert_close(
        "auc",
        &seen["auc"],
        &[BinaryClassificationEvaluator::new()
            .evaluate(&predictions)
            .await
            .unwrap()],
    );
    assert!(accuracy > 0.65, "a useful model: accuracy {accuracy}");

    // The training summary: the fitted model's figures on the rows it was fitted on.
    let summary = &seen["summary"];
    assert_eq!(summary["type"], "BinaryLogisticRegressionTrainingSummary", "{summary}");
    let session = Session::builder().with_default_features().local(2);
    let credit = spark_typed_credit(&session).await;
    let train = credit.random_split(&[0.8, 0.2], 42).unwrap().remove(0);
    let fitted = model.transform(&train).unwrap();
    let train_accuracy = MulticlassClassificationEvaluator::new()
        .metric_name("accuracy")
        .evaluate(&fitted)
        .await
        .unwrap();
    assert_close("summary accuracy", &summary["accuracy"], &[train_accuracy]);
    let train_auc = BinaryClassificationEvaluator::new()
        .raw_prediction_col("probability")
        .num_bins(0)
        .evaluate(&fitted)
        .await
        .unwrap();
    assert_close("summary areaUnderROC", &summary["area_under_roc"], &[train_auc]);
    assert_eq!(
        summary["roc"][1],
        serde_json::json!([0.0, 0.0]),
        "the curve starts at (0, 0): {summary}"
    );
    assert_eq!(
        summary["roc"][2],
        serde_json::json!([1.0, 1.0]),
        "and ends at (1, 1): {summary}"
    );
    let solved = lr.summary().unwrap();
    assert_close(
        "objectiveHistory",
        &summary["objective_history"],
        &solved.objective_history,
    );
    assert_eq!(summary["total_iterations"], solved.total_iterations);
    assert_eq!(summary["labels"], serde_json::json!([0.0, 1.0]));
    assert_eq!(summary["predictions"], train.count().await.unwrap());
    assert_eq!(summary["label_col"], "label");
    let linear_summary = seen["linear_summary"].as_array().unwrap();
    assert_eq!(linear_summary[1], 1000, "{seen}");
    assert_close(
        "linear rmse",
        &linear_summary[0],
        &[seen["linear"][1].as_f64().unwrap()],
    );
    // The normal equation's statistics (duration, age, intercept): 1000 rows less three estimates; the
    // credit amount rises with the duration, far beyond chance.
    let statistics = seen["linear_statistics"].as_array().unwrap();
    assert_eq!(statistics[0], 997, "{seen}");
    let p_values: Vec<f64> = (statistics[1].as_array().unwrap().iter())
        .map(|p| p.as_f64().unwrap())
        .collect();
    assert_eq!(p_values.len(), 3, "{seen}");
    assert!(p_values.iter().all(|p| (0.0..=1.0).contains(p)), "{seen}");
    assert!(
        p_values[0] < 1e-10 && statistics[2][0].as_f64().unwrap() > 10.0,
        "{seen}"
    );
    assert_eq!(seen["kmeans_summary"], serde_json::json!([3, 1000, 1000]), "{seen}");
    assert_eq!(seen["kmeans_centers"], serde_json::json!([3, [2, 2, 2]]), "{seen}");
    assert_eq!(seen["kmeans_after_eviction"], 1000);
    assert_eq!(seen["labels_array"], serde_json::json!([seen["labels"].clone()]));
    let sent = &seen["sent_vectors"];
    assert_close("sent mean", &sent[0], &[5.0 / 3.0]);
    assert_close("sent std", &sent[1], &[(7.0_f64 / 3.0).sqrt()]);
    assert_eq!(
        sent[2],
        serde_json::json!([[0.0], [2.0], [3.0]]),
        "a sparse vector arrives filled out"
    );
    assert_eq!(
        seen["libsvm"],
        serde_json::json!([
            ["label", "features"],
            [
                [0.0, [0.5, 0.0, 1.0]],
                [1.0, [0.0, 2.0, 0.0]],
                [1.0, [1.5, 1.0, 0.25]],
                [0.0, [0.0, 0.0, 3.0]]
            ]
        ])
    );
    assert_eq!(seen["libsvm_fit"], 3);
    let threshold = seen["threshold"].as_array().unwrap();
    assert!(
        threshold[0].as_u64().unwrap() < threshold[1].as_u64().unwrap(),
        "setThreshold on the fitted model moves its predictions: {seen}"
    );
    assert_close(
        "model.evaluate(df).accuracy",
        &seen["evaluate"][0],
        &[seen["evaluate"][1].as_f64().unwrap()],
    );
    assert_eq!(seen["predict"], serde_json::json!([true, true]), "{seen}");
    assert_eq!(
        seen["vectors"],
        serde_json::json!(["DenseVector", 12, "DenseVector"]),
        "vectors reach PySpark as its own"
    );
    assert_eq!(
        seen["assembled_show"],
        "+---+------+------------+\n|  a|     b|           v|\n+---+------+------------+\n\
         |1.0|   0.1|   [1.0,0.1]|\n|2.5|1.0E-4|[2.5,1.0E-4]|\n+---+------+------------+\n\n"
    );
    assert_eq!(seen["assembled"], serde_json::json!([[1.0, 0.1], [2.5, 0.0001]]));
    assert_eq!(seen["linear"][0], 2, "{seen}");
    let rmse = seen["linear"][1].as_f64().unwrap();
    assert!(
        rmse > 1000.0 && rmse < 2822.0,
        "below the amount's standard deviation (2,822): {rmse}"
    );
    assert_eq!(seen["kmeans_clusters"], 3);
    assert_eq!(
        seen["weighted"], 2,
        "weightCol is one of LogisticRegression's params: {seen}"
    );
    assert!(seen["perceptron_accuracy"].as_f64().unwrap() >= 0.65, "{seen}");

    assert_eq!(seen["missing_column"]["class"], "AnalysisException", "{seen}");
    assert!(
        seen["missing_column"]["message"].as_str().unwrap().contains("class"),
        "{seen}"
    );
    assert_eq!(
        seen["unsupported_class"]["class"], "UnsupportedOperationException",
        "{seen}"
    );
    assert!(
        seen["unsupported_class"]["message"]
            .as_str()
            .unwrap()
            .contains("Bucketizer"),
        "{seen}"
    );
    assert!(
        seen["other_session"]["message"]
            .as_str()
            .unwrap()
            .contains("CONNECT_ML.CACHE_INVALID"),
        "another session's model is not found: {seen}"
    );
    server.shutdown().await.unwrap();
}

/// Each list in `got[column]` (numbers, or lists of numbers) within `relative` of Spark's in `want[column]`.
fn assert_outputs(what: &str, got: &Value, want: &Value, relative: f64) {
    for (column, want) in want.as_object().unwrap() {
        let (got, want) = (got[column].as_array().unwrap(), want.as_array().unwrap());
        assert_eq!(got.len(), want.len(), "{what}.{column}: rows");
        for (row, (g, w)) in got.iter().zip(want).enumerate() {
            let flat = |v: &Value| -> Vec<f64> {
                match v.as_array() {
                    Some(list) => list.iter().map(|x| x.as_f64().unwrap()).collect(),
                    None => vec![v.as_f64().unwrap()],
                }
            };
            let (g, w) = (flat(g), flat(w));
            assert_eq!(g.len(), w.len(), "{what}.{column} row {row}");
            for (a, b) in g.iter().zip(&w) {
                assert!(
                    crate::common::close(*a, *b, relative),
                    "{what}.{column} row {row}: {g:?} against Spark's {w:?}"
                );
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn models_save_and_load_in_sparks_layout_both_ways() {
    let server = serve("local[2]", None, Duration::from_secs(600)).await;
    let url = format!("sc://127.0.0.1:{}", server.address().port());
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/spark");
    let work = tempfile::tempdir().unwrap();
    let args = vec![
        url,
        fixtures.join("saved").display().to_string(),
        fixtures.join("saved.json").display().to_string(),
        work.path().display().to_string(),
    ];
    let seen = report(&run_client("persistence.py", args, vec![]).await);
    let spark: Value = serde_json::from_str(&std::fs::read_to_string(fixtures.join("saved.json")).unwrap()).unwrap();

    // Spark's models give Spark's outputs: hearth keeps vectors in f32, so to about 1e-6.
    assert_eq!(
        seen["spark_pipeline_stages"],
        serde_json::json!([
            "StringIndexerModel",
            "OneHotEncoderModel",
            "VectorAssembler",
            "StandardScalerModel",
            "LogisticRegressionModel"
        ])
    );
    for model in ["pipeline", "linreg", "lrmulti", "mlp", "kmeans"] {
        assert_outputs(model, &seen[format!("spark_{model}")], &spark[model], 1e-5);
    }
    assert_eq!(seen["spark_unfitted"][4][0], "LogisticRegression");
    assert_eq!(
        seen["spark_unfitted"][4][2],
        serde_json::json!({"maxIter": 50, "regParam": 0.01})
    );
    assert_eq!(
        seen["spark_unfitted"][0][2],
        serde_json::json!({"inputCol": "cat", "outputCol": "cat_idx"})
    );

    for case in [
        "round_trip_same",
        "round_trip_uids",
        "round_trip_labels",
        "round_trip_mean",
        "round_trip_coefficients",
        "scaler_std",
    ] {
        assert_eq!(seen[case], true, "{case}: {seen}");
    }
    assert_eq!(seen["saved_layout"][0], "metadata");
    assert_eq!(seen["saved_layout"][1], "stages");
    assert!(
        seen["saved_layout"][2]
            .as_str()
            .unwrap()
            .starts_with("0_StringIndexer_"),
        "{seen}"
    );
    let indexer = &seen["indexer_metadata"];
    assert_eq!(indexer["class"], "org.apache.spark.ml.feature.StringIndexerModel");
    assert_eq!(
        indexer["paramMap"],
        serde_json::json!({"inputCol": "cat", "outputCol": "cat_idx"})
    );
    assert_eq!(indexer["defaultParamMap"]["handleInvalid"], "error");
    assert_eq!(seen["estimator"], serde_json::json!([true, 7, 0.5, false]));
    assert_eq!(seen["evaluator"], serde_json::json!([true, "areaUnderPR", 50]));

    // Spark's answer to its bounded binomial test (PySpark's test_binomial_logistic_regression_with_bound).
    let bounded = &seen["bounded"];
    let spark_said = [-0.2944, -0.0484, 0.0];
    let got = [&bounded[0][0], &bounded[0][1], &bounded[1]].map(|v| v.as_f64().unwrap());
    assert!(
        got.iter().zip(spark_said).all(|(g, s)| (g - s).abs() < 1e-4),
        "{got:?} against Spark's {spark_said:?}"
    );
    assert_eq!(
        (&bounded[0], &bounded[1]),
        (&bounded[2], &bounded[3]),
        "loaded as saved"
    );
    assert_eq!(seen["box_round_trip"], serde_json::json!([true, true, true, true]));
    assert_eq!(
        seen["box_types"],
        serde_json::json!(["DenseVector", "SparseVector", "DenseMatrix", "SparseMatrix"])
    );
    let metadata = &seen["box_metadata"];
    assert_eq!(
        metadata["upperBoundsOnIntercepts"],
        serde_json::json!({"type": 0, "size": 4, "indices": [1, 3], "values": [1.0, 5.5]}),
        "Spark's JSON of a sparse vector"
    );
    assert_eq!(metadata["lowerBoundsOnCoefficients"]["class"], "matrix");
    assert_eq!(metadata["lowerBoundsOnCoefficients"]["numRows"], 3);
    let box_fit = seen["box_fit"]["message"].as_str().unwrap();
    assert!(
        box_fit.contains("LowerBoundsOnIntercepts should always be less than or equal"),
        "{box_fit}"
    );

    let raises = |case: &str, words: &str| {
        let message = seen[case]["message"].as_str().unwrap();
        assert!(message.contains(words), "{case}: {message:?} should say {words:?}");
    };
    raises("exists", "already exists");
    raises("wrong_class", "not a org.apache.spark.ml.feature.StringIndexerModel");
    raises("missing", "nothing-here");

    let small = serde_json::json!([[1, "a", 0.5], [2, "b", null], [3, "c", 2.25]]);
    assert_eq!(seen["write_parquet"], small);
    assert_eq!(seen["write_json"], small);
    assert_eq!(seen["write_csv"], 3);
    assert_eq!(seen["write_text"], serde_json::json!(["a", "b", "c"]));
    assert_eq!(seen["write_exists"]["class"], "AnalysisException", "{seen}");
    raises("write_exists", "PATH_ALREADY_EXISTS");
    assert_eq!(seen["write_append"], 6, "{seen}");
    assert_eq!(seen["write_ignore"], 6);
    assert_eq!(seen["write_overwrite"], 1);
    raises("write_text_columns", "single column");
    raises("write_partitioned", "partitionBy");
    server.shutdown().await.unwrap();
}
