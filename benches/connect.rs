//! Benchmark: one PySpark ML pipeline — read Parquet, `StringIndexer`, `VectorAssembler`, `StandardScaler`,
//! `LogisticRegression`, predictions, two evaluators — run unchanged by the same PySpark client against
//! hearth's Spark Connect server (`local[2]`, in this process) and against Spark's own Connect server
//! (PySpark's `.remote("local[2]")`, which starts it), on the same generated Higgs-schema rows and the same
//! two cores (the features of the linear models' benchmark): the script's wall time after the session is up (best of 3), the round trip of
//! `spark.range(1).count()` (median of 20), and how far apart the two fits are.
//!
//! ```text
//! ./dev bench --bench connect       # 1,000,000 rows; HEARTH_CONNECT_ROWS=… for another size
//! ```
//!
//! The client is `pyspark[connect]` 4.0.5 (a 4.0 client: the release Spark's own server is), installed into
//! the libtorch environment the first time; Spark's server needs Java 17.

use std::path::Path;
use std::time::Duration;

use datafusion::logical_expr::ident;
use hearth::connect::{ConnectOptions, ConnectServer};
use hearth::prelude::*;
use prettytable::{Table, row};
use serde_json::Value;

#[path = "common/linear_features.rs"]
mod linear_features;
#[path = "common/python.rs"]
mod python;

use linear_features::{feature_columns, generated_csv, write_one_parquet};

const RUNS: usize = 3;
const PARTITIONS: usize = 2;
/// The client, with what `.remote()` needs.
const CLIENT: (&str, &str) = ("grpc", "pyspark[connect]==4.0.5");

/// The client script's report against `remote`.
fn run_script(remote: &str, parquet: &Path) -> Result<Value, String> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/connect_pipeline.py");
    let args = [
        remote.to_owned(),
        parquet.display().to_string(),
        RUNS.to_string(),
        feature_columns().join(","),
    ];
    python::json_report(&format!("the pipeline against {remote}"), script, args)
}

fn best(report: &Value) -> f64 {
    (report["seconds"].as_array().into_iter().flatten())
        .filter_map(Value::as_f64)
        .fold(f64::INFINITY, f64::min)
}

/// The largest difference between the two fits' coefficients and intercepts, over the largest of Spark's.
fn distance(a: &Value, b: &Value) -> f64 {
    let numbers = |r: &Value| -> Vec<f64> {
        let mut all: Vec<f64> = (r["coefficients"].as_array().into_iter().flatten())
            .filter_map(Value::as_f64)
            .collect();
        all.extend(r["intercept"].as_f64());
        all
    };
    let (a, b) = (numbers(a), numbers(b));
    let scale = b.iter().fold(0.0_f64, |m, v| m.max(v.abs()));
    a.iter().zip(&b).fold(0.0_f64, |m, (x, y)| m.max((x - y).abs())) / scale
}

#[tokio::main]
async fn main() {
    let (rows, dir, csv) = generated_csv("HEARTH_CONNECT_ROWS");
    let parquet = dir.path().join("events.parquet");
    // The features as doubles and the `Label` (`s` or `b`) as text.
    write_one_parquet(
        &Session::builder().with_default_features().local(PARTITIONS),
        &csv,
        &parquet,
        vec![ident("Label")],
    )
    .await;
    python::ensure_module(CLIENT.0, CLIENT.1).expect("the PySpark client");
    println!(
        "Spark Connect benchmark: {rows} Higgs-schema rows from one Parquet file, {} features, local[{PARTITIONS}] \
         on both servers, best of {RUNS} runs of the pipeline\n",
        feature_columns().len()
    );

    let mut options = ConnectOptions::new("127.0.0.1:0".parse().expect("address"), &format!("local[{PARTITIONS}]"));
    options.idle_timeout = Duration::from_secs(3600);
    let server = ConnectServer::start(options).await.expect("hearth's server");
    let url = format!("sc://127.0.0.1:{}", server.address().port());
    let hearth = tokio::task::spawn_blocking({
        let parquet = parquet.clone();
        move || run_script(&url, &parquet)
    })
    .await
    .expect("the client")
    .expect("the pipeline on hearth");
    server.shutdown().await.expect("stop hearth's server");
    let spark = tokio::task::spawn_blocking(move || run_script(&format!("local[{PARTITIONS}]"), &parquet))
        .await
        .expect("the client");

    let mut table = Table::new();
    table.set_titles(row![
        "server",
        "pipeline s (best)",
        "range(1).count() ms",
        "accuracy",
        "areaUnderROC",
        "Spark's time ÷ this"
    ]);
    let spark_best = spark.as_ref().map(best).ok();
    for (name, report) in [
        ("hearth connect", Some(&hearth)),
        ("Spark Connect 4.0.5", spark.as_ref().ok()),
    ] {
        let Some(report) = report else { continue };
        table.add_row(row![
            name,
            format!("{:.2}", best(report)),
            format!("{:.1}", report["round_trip_ms"].as_f64().unwrap_or(f64::NAN)),
            format!("{:.6}", report["accuracy"].as_f64().unwrap_or(f64::NAN)),
            format!("{:.6}", report["auc"].as_f64().unwrap_or(f64::NAN)),
            spark_best.map_or("-".to_string(), |s| format!("{:.1}", s / best(report)))
        ]);
    }
    table.printstd();
    for (name, report) in [("hearth", Some(&hearth)), ("Spark", spark.as_ref().ok())] {
        let Some(steps) = report.and_then(|r| r["steps"].as_object()) else {
            continue;
        };
        let seconds = |step: &str| steps.get(step).and_then(Value::as_f64).unwrap_or(f64::NAN);
        println!(
            "{name}'s best run: Pipeline.fit {:.2} s, accuracy {:.2} s, areaUnderROC {:.2} s",
            seconds("fit"),
            seconds("accuracy"),
            seconds("auc")
        );
    }
    match &spark {
        Ok(spark) => println!(
            "\ncoefficients and intercept: largest difference {:.2e} of Spark's largest; round trip {:.1} ms against \
             {:.1} ms; client pyspark {}",
            distance(&hearth, spark),
            hearth["round_trip_ms"].as_f64().unwrap_or(f64::NAN),
            spark["round_trip_ms"].as_f64().unwrap_or(f64::NAN),
            hearth["client"].as_str().unwrap_or("?")
        ),
        Err(why) => println!("\nSpark's own server: {why}"),
    }
}
