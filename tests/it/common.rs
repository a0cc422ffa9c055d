//! Helpers shared by the integration tests: data set paths, the Spark fixtures, building and reading frames.

use std::path::PathBuf;
use std::process::{Child, ExitStatus};
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, FixedSizeListArray, Float32Array, Float64Array, Int64Array, RecordBatch, StringArray,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Float32Type, Float64Type, Schema};
use datafusion::logical_expr::ident;
use hearth::prelude::*;
use serde_json::Value;

/// A runtime of two threads with the main thread's 8 MiB of stack: Ballista's scheduler decodes the client's
/// plans recursively, deeper than tokio's 2 MiB in an unoptimized build.
pub fn ballista_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_stack_size(8 << 20)
        .enable_all()
        .build()
        .unwrap()
}

/// Waits for `child` to end, killing it and failing the test (naming `what`) when it runs past `limit`.
pub fn wait_within(mut child: Child, limit: Duration, what: &str) -> ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not end within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Stage `index` of `model` as a `T`, or a panic naming what it is.
pub fn stage<T: Transformer>(model: &PipelineModel, index: usize) -> &T {
    let found = &model.stages()[index];
    found
        .downcast_ref::<T>()
        .unwrap_or_else(|| panic!("stage {index} is a {}", found.class()))
}

/// A file under the repository's `datasets/`.
pub fn dataset(relative: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("datasets")
        .join(relative)
}

static FIXTURE: LazyLock<Value> = LazyLock::new(|| spark_fixture("parity.json"));

/// A fixture file of `tests/fixtures/spark/` (made with PySpark by the script beside it).
pub fn spark_fixture(file: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/spark")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The case called `name` of a fixture file.
pub fn fixture_case<'a>(fixture: &'a Value, name: &str) -> &'a Value {
    fixture["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no fixture case {name:?}"))
}

/// Every Spark fixture case whose name starts with `prefix`.
pub fn cases(prefix: &str) -> Vec<&'static Value> {
    let found: Vec<&Value> = FIXTURE["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .filter(|c| c["name"].as_str().is_some_and(|n| n.starts_with(prefix)))
        .collect();
    assert!(!found.is_empty(), "no fixture case starts with {prefix:?}");
    found
}

/// The one fixture case named `name`.
pub fn case(name: &str) -> &'static Value {
    cases(name).into_iter().find(|c| c["name"] == name).expect("case")
}

/// A fixture number: a JSON number, or "NaN".
pub fn number(v: &Value) -> f64 {
    match v {
        Value::String(s) if s == "NaN" => f64::NAN,
        other => other.as_f64().unwrap_or_else(|| panic!("not a number: {other}")),
    }
}

/// A fixture vector (`null` or a list of numbers).
pub fn vector(v: &Value) -> Option<Vec<f64>> {
    v.as_array().map(|a| a.iter().map(number).collect())
}

fn column_array(column: &Value) -> (Field, ArrayRef) {
    let name = column["name"].as_str().expect("name");
    let values = column["values"].as_array().expect("values");
    let array: ArrayRef = match column["type"].as_str().expect("type") {
        "string" => Arc::new(values.iter().map(|v| v.as_str()).collect::<StringArray>()),
        "double" => Arc::new(
            values
                .iter()
                .map(|v| (!v.is_null()).then(|| number(v)))
                .collect::<Float64Array>(),
        ),
        "long" => Arc::new(values.iter().map(Value::as_i64).collect::<Int64Array>()),
        "vector" => {
            let dim = values.iter().find_map(|v| v.as_array()).map_or(0, Vec::len);
            let mut flat = Vec::new();
            let mut valid = Vec::new();
            for v in values {
                match vector(v) {
                    Some(x) => flat.extend(x.iter().map(|&x| x as f32)),
                    None => flat.extend(std::iter::repeat_n(0.0f32, dim)),
                }
                valid.push(!v.is_null());
            }
            let item = Arc::new(Field::new_list_field(DataType::Float32, true));
            Arc::new(
                FixedSizeListArray::try_new(item, dim as i32, Arc::new(Float32Array::from(flat)), Some(valid.into()))
                    .expect("vector column"),
            )
        }
        other => panic!("unknown fixture column type {other}"),
    };
    (Field::new(name, array.data_type().clone(), true), array)
}

/// A data frame holding the fixture's columns.
pub fn frame(session: &Session, columns: &Value) -> DataFrame {
    let (fields, arrays): (Vec<Field>, Vec<ArrayRef>) =
        columns.as_array().expect("columns").iter().map(column_array).unzip();
    let schema = Arc::new(Schema::new(fields));
    let batch = RecordBatch::try_new(schema.clone(), arrays).expect("batch");
    session.read_batches(schema, vec![batch]).expect("frame")
}

/// All values of a double (or castable) column, in order.
pub async fn doubles(df: &DataFrame, column: &str) -> Vec<Option<f64>> {
    let batches = df.clone().select(vec![ident(column)]).unwrap().collect().await.unwrap();
    batches
        .iter()
        .flat_map(|b| {
            let values = cast(b.column(0), &DataType::Float64).unwrap();
            values.as_primitive::<Float64Type>().iter().collect::<Vec<_>>()
        })
        .collect()
}

/// All values of a vector column, in order.
pub async fn vectors(df: &DataFrame, column: &str) -> Vec<Option<Vec<f32>>> {
    let batches = df.clone().select(vec![ident(column)]).unwrap().collect().await.unwrap();
    batches
        .iter()
        .flat_map(|b| {
            let list = b.column(0).as_fixed_size_list().clone();
            (0..list.len())
                .map(|i| (!list.is_null(i)).then(|| list.value(i).as_primitive::<Float32Type>().values().to_vec()))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Whether `got` equals `want` within `relative` (NaN equals NaN; near zero the tolerance is absolute).
pub fn close(got: f64, want: f64, relative: f64) -> bool {
    (got.is_nan() && want.is_nan()) || (got - want).abs() <= relative * want.abs().max(1.0)
}

/// Asserts two vector columns agree within 1e-5 relative (hearth's vectors are f32, Spark's f64).
pub fn assert_vectors_match(what: &str, got: &[Option<Vec<f32>>], want: &[Option<Vec<f64>>]) {
    assert_eq!(got.len(), want.len(), "{what}: row count");
    for (row, (g, w)) in got.iter().zip(want).enumerate() {
        match (g, w) {
            (None, None) => {}
            (Some(g), Some(w)) => {
                assert_eq!(g.len(), w.len(), "{what}: width of row {row}");
                for (slot, (&g, &w)) in g.iter().zip(w).enumerate() {
                    assert!(
                        close(f64::from(g), w, 1e-5),
                        "{what}: row {row} slot {slot}: hearth {g}, Spark {w}"
                    );
                }
            }
            _ => panic!("{what}: row {row}: hearth {g:?}, Spark {w:?}"),
        }
    }
}

/// The error of a query that must fail, as text.
pub async fn query_error(df: DataFrame) -> String {
    match df.collect().await {
        Ok(rows) => panic!("expected an error, got {} batches", rows.len()),
        Err(e) => e.to_string(),
    }
}

/// Asserts a classifier's first rows `out` (its `probability` and `prediction`) are Spark's in a fixture case
/// (`probability`: a vector per row, within `tolerance`; `prediction`: equal).
pub async fn assert_scores_match(name: &str, out: &DataFrame, case: &Value, tolerance: f64) {
    let got: Vec<f64> = vectors(out, "probability")
        .await
        .into_iter()
        .flatten()
        .flatten()
        .map(f64::from)
        .collect();
    let want: Vec<f64> = case["probability"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|row| row.as_array().unwrap().iter().map(number))
        .collect();
    assert_eq!(got.len(), want.len(), "{name}: probabilities");
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!(
            (g - w).abs() <= tolerance,
            "{name} probability {i}: hearth {g}, Spark {w}"
        );
    }
    let predictions: Vec<f64> = doubles(out, "prediction").await.into_iter().flatten().collect();
    let want: Vec<f64> = case["prediction"].as_array().unwrap().iter().map(number).collect();
    assert_eq!(predictions, want, "{name}: predictions");
}
