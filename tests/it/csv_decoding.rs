//! hearth decodes plain CSV lines itself (`engine::read::plain_csv`) and leaves the rest to arrow: every file
//! here is read both ways — by a hearth session and by a bare DataFusion context, the same schema, the same
//! split of the file among partitions (ranges cut mid-line) — and must give the same rows, floats to the bit,
//! or both an error. Handwritten files cover the edges (quotes from the middle on, a quoted header, `\r\n`, empty
//! lines, no last newline, every number form arrow reads, nulls, bad values, ragged rows, bytes that are not
//! UTF-8); generated ones cover the rest (`HEARTH_FUZZ_CASES` files, default 128).

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::{DataType, Float64Type, SchemaRef};
use datafusion::arrow::util::display::array_value_to_string;
use datafusion::physical_plan::displayable;
use datafusion::prelude::{CsvReadOptions, SessionConfig, SessionContext};
use hearth::exec::read::schema_of;
use hearth::prelude::{CsvOptions, DefaultFeatures, Session};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

/// The smallest file DataFusion splits among partitions: small, so that tiny files are cut mid-line too.
const SPLIT_FROM_BYTES: usize = 16;

/// Rows read by a hearth session, or its error.
async fn hearth_rows(path: &Path, schema: Option<SchemaRef>, partitions: usize) -> Result<Vec<String>, String> {
    let session = Session::builder().with_default_features().local(partitions);
    session
        .context()
        .sql(&format!(
            "SET datafusion.optimizer.repartition_file_min_size = {SPLIT_FROM_BYTES}"
        ))
        .await
        .map_err(|e| e.to_string())?;
    let mut options = CsvOptions::new();
    if let Some(schema) = schema {
        options = options.schema(schema);
    }
    let df = session.read_csv(path, &options).await.map_err(|e| e.to_string())?;
    rows_of(df).await
}

/// Rows read by DataFusion's own CSV scan, or its error.
async fn datafusion_rows(path: &Path, schema: Option<SchemaRef>, partitions: usize) -> Result<Vec<String>, String> {
    let config = SessionConfig::new()
        .with_target_partitions(partitions)
        .set_usize("datafusion.optimizer.repartition_file_min_size", SPLIT_FROM_BYTES);
    let ctx = SessionContext::new_with_config(config);
    let mut options = CsvReadOptions::new().file_extension(".csv");
    if let Some(schema) = &schema {
        options = options.schema(schema);
    }
    let df = ctx
        .read_csv(path.to_str().unwrap(), options)
        .await
        .map_err(|e| e.to_string())?;
    rows_of(df).await
}

/// All of `df`'s rows, each as text — floats by their bits, so that NaN and -0 count — sorted: partitions
/// run at once, so the order they come in is not the file's.
async fn rows_of(df: datafusion::prelude::DataFrame) -> Result<Vec<String>, String> {
    let batches = df.collect().await.map_err(|e| e.to_string())?;
    let mut rows = Vec::new();
    for batch in &batches {
        for row in 0..batch.num_rows() {
            let values: Vec<String> = batch
                .columns()
                .iter()
                .map(|column| {
                    if column.is_null(row) {
                        "null".to_string()
                    } else if column.data_type() == &DataType::Float64 {
                        format!("{:#x}", column.as_primitive::<Float64Type>().value(row).to_bits())
                    } else {
                        array_value_to_string(column, row).unwrap_or_default()
                    }
                })
                .collect();
            rows.push(values.join("|"));
        }
    }
    rows.sort();
    Ok(rows)
}

/// Reads `text` as a file both ways, inferred and with `schema`, on 1 to 3 partitions; `Err` says how the
/// two differ.
async fn read_alike(dir: &Path, text: &[u8], schema: Option<SchemaRef>) -> Result<(), String> {
    // A file of its own: DataFusion's scan of a file cut short under it reads its end forever, and a scan
    // of the last case's file may still be winding down after its error.
    static FILES: AtomicUsize = AtomicUsize::new(0);
    let path = dir.join(format!("data-{}.csv", FILES.fetch_add(1, Ordering::Relaxed)));
    std::fs::write(&path, text).unwrap();
    for partitions in 1..=3 {
        for schema in [None, schema.clone()] {
            let ours = hearth_rows(&path, schema.clone(), partitions).await;
            let theirs = datafusion_rows(&path, schema.clone(), partitions).await;
            let described = || {
                format!(
                    "{} partitions, schema {}, file {:?}",
                    partitions,
                    if schema.is_some() { "given" } else { "inferred" },
                    String::from_utf8_lossy(text)
                )
            };
            match (&ours, &theirs) {
                (Ok(ours), Ok(theirs)) if ours != theirs => {
                    return Err(format!(
                        "hearth read {ours:?}\nDataFusion read {theirs:?}\n({})",
                        described()
                    ));
                }
                (Ok(_), Ok(_)) => {}
                (Err(_), Err(_)) => {}
                _ => {
                    return Err(format!(
                        "hearth read {ours:?}\nDataFusion read {theirs:?}\n({})",
                        described()
                    ));
                }
            }
        }
    }
    Ok(())
}

fn three_columns() -> SchemaRef {
    schema_of(&[
        ("id", DataType::Int64),
        ("x", DataType::Float64),
        ("name", DataType::Utf8),
    ])
}

#[tokio::test]
async fn plain_and_other_lines_read_as_arrow_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let files: [&[u8]; 15] = [
        b"id,x,name\n1,0.5,a\n2,-1.25,b\n3,-999,c\n4,0.000001,dd\n5,123456.789012,e\n",
        b"id,x,name\r\n1,0.5,a\r\n2,-1.25,b\r\n3,7,c\r\n",
        b"\nid,x,name\n\n1,0.5,a\n\n\n2,1.5,b\n\n",
        b"id,x,name\n1,0.5,a\n2,1.5,b",
        b"id,x,name\n1,0.5,a\n2,1.5,\"b, quoted\"\n3,2.5,c\n4,3.5,d\n",
        b"\"id\",\"x\",\"name\"\n1,0.5,a\n2,1.5,b\n",
        b"id,x,name\n1,1e5,a\n2,inf,b\n3,-inf,c\n4,NaN,d\n5,+1.5,e\n6, 2.5 ,f\n7,-0.0,g\n8,.5,h\n9,5.,i\n",
        b"id,x,name\n1,0.1000000000000000055511151231257827,a\n2,12345678901234567890,b\n3,9007199254740993,c\n",
        b"id,x,name\n,,\n1,,a\n,2.5,\n",
        b"id,x,name\n1,0.5,a\n2,oops,b\n",
        b"id,x,name\n1,0.5,a\n2,1.5\n3,2.5,c\n",
        b"id,x,name\n1,0.5,a\n2,1.5,b,extra\n",
        b"id,x,name\n1,0.5,a\n2,1.5,\xff\xfe\n",
        b"id,x,name\n1,0.5,a\r2,1.5,b\n",
        b"id,x,name\n+7,0.5,a\n 8,1.5,b\n-9223372036854775808,2.5,c\n99999999999999999999,3.5,d\n",
    ];
    for text in files {
        read_alike(dir.path(), text, Some(three_columns())).await.unwrap();
    }

    // A delimiter that numbers hold is a number's end, never part of one.
    let dotted = schema_of(&[("a", DataType::Float64), ("b", DataType::Int64)]);
    for (delimiter, text) in [(b'.', &b"a.b\n1.5.3\n"[..]), (b'-', &b"a-b\n-1-2\n"[..])] {
        let path = dir.path().join(format!("delimited-{}.csv", delimiter as char));
        std::fs::write(&path, text).unwrap();
        let options = CsvOptions::new().delimiter(delimiter).schema(Arc::clone(&dotted));
        let ours = Session::builder()
            .with_default_features()
            .local(1)
            .read_csv(&path, &options)
            .await
            .unwrap()
            .collect()
            .await;
        assert!(ours.is_err(), "{:?} read as {ours:?}", String::from_utf8_lossy(text));
    }

    // The scans compared are hearth's decoder's: its plan says so.
    let path = dir.path().join("plan.csv");
    std::fs::write(&path, files[0]).unwrap();
    let df = Session::builder()
        .with_default_features()
        .local(2)
        .read_csv(&path, &CsvOptions::new())
        .await
        .unwrap();
    let plan = df.create_physical_plan().await.unwrap();
    let shown = displayable(plan.as_ref()).indent(true).to_string();
    assert!(shown.contains("plain lines decoded by hearth"), "{shown}");
}

/// One field of a generated file: numbers in the forms files hold, and now and then something else.
fn field() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => (-1_000_000i64..1_000_000, 0u32..8).prop_map(|(n, places)| {
            let scaled = n as f64 / 10f64.powi(places as i32);
            format!("{scaled:.*}", places as usize)
        }),
        2 => any::<i32>().prop_map(|n| n.to_string()),
        // Runs of digits of every length a field holds, leading zeros included.
        2 => ("-?[0-9]{1,11}", "[0-9]{0,11}").prop_map(|(whole, fraction)| match fraction.is_empty() {
            true => whole,
            false => format!("{whole}.{fraction}"),
        }),
        1 => any::<f64>().prop_map(|x| x.to_string()),
        1 => Just(String::new()),
        1 => prop::sample::select(vec!["-999", "1e-3", "NaN", "inf", "-0", "abc", "\"q,uoted\"", " 4"])
            .prop_map(str::to_string),
    ]
}

/// A generated file: a header, rows of three fields, `\n` or `\r\n` ends, sometimes an empty line.
fn csv_file() -> impl Strategy<Value = Vec<u8>> {
    (
        prop::collection::vec((field(), field(), field(), 0u8..12), 1..60),
        any::<bool>(),
    )
        .prop_map(|(rows, crlf)| {
            let end = if crlf { "\r\n" } else { "\n" };
            let mut text = format!("a,b,c{end}");
            for (a, b, c, extra) in rows {
                text.push_str(&format!("{a},{b},{c}{end}"));
                if extra == 0 {
                    text.push_str(end);
                }
            }
            text.into_bytes()
        })
}

#[test]
fn generated_files_read_as_arrow_reads_them() {
    let cases = std::env::var("HEARTH_FUZZ_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(128);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let schema = schema_of(&[("a", DataType::Float64), ("b", DataType::Utf8), ("c", DataType::Int64)]);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&csv_file(), |text| {
            runtime
                .block_on(read_alike(dir.path(), &text, Some(Arc::clone(&schema))))
                .map_err(TestCaseError::fail)
        })
        .unwrap();
}
