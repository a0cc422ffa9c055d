//! The Higgs-schema generator: deterministic at any row count and batch size, faithful to the challenge's
//! conventions, and the same data whether generated in memory or written to CSV and read back.

use datafusion::arrow::array::{AsArray, RecordBatch};
use datafusion::arrow::compute::concat_batches;
use datafusion::arrow::datatypes::{Float64Type, Int64Type};
use hearth::datasets::higgs;
use hearth::prelude::*;

fn column<'a>(batch: &'a RecordBatch, name: &str) -> &'a datafusion::arrow::array::Float64Array {
    batch.column_by_name(name).unwrap().as_primitive::<Float64Type>()
}

#[test]
fn the_same_events_at_any_batch_size() {
    let whole = higgs::batch(0, 1000, 42);
    let pieces = concat_batches(&higgs::schema(), &higgs::batches(1000, 300, 42)).unwrap();
    assert_eq!(whole, pieces);
    assert_ne!(whole, higgs::batch(0, 1000, 43), "another seed gives other events");
}

#[test]
fn events_follow_the_challenge_conventions() {
    let batch = higgs::batch(0, 20_000, 7);
    let jets = batch.column_by_name("PRI_jet_num").unwrap().as_primitive::<Int64Type>();
    let subleading = column(&batch, "PRI_jet_subleading_pt");
    let leading = column(&batch, "PRI_jet_leading_pt");
    for row in 0..batch.num_rows() {
        let n = jets.value(row);
        assert!((0..=3).contains(&n));
        assert_eq!(leading.value(row) == higgs::UNDEFINED, n == 0, "row {row}");
        assert_eq!(subleading.value(row) == higgs::UNDEFINED, n <= 1, "row {row}");
    }
    let labels = batch.column_by_name("Label").unwrap().as_string::<i32>();
    let signal = labels.iter().filter(|l| *l == Some("s")).count() as f64 / batch.num_rows() as f64;
    assert!((0.32..0.37).contains(&signal), "signal share {signal}");
}

#[tokio::test]
async fn csv_holds_the_generated_values() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("higgs.csv");
    higgs::write_csv(&path, 500, 11).unwrap();
    let session = Session::builder().with_default_features().local(1);
    let read = session
        .read_csv(&path, &CsvOptions::new())
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let read = concat_batches(&read[0].schema(), &read).unwrap();
    let generated = higgs::batch(0, 500, 11);
    assert_eq!(read.num_rows(), 500);
    for name in ["DER_mass_MMC", "PRI_tau_pt", "PRI_jet_leading_eta", "Weight"] {
        let (a, b) = (column(&read, name), column(&generated, name));
        for row in 0..500 {
            assert!(
                (a.value(row) - b.value(row)).abs() < 1e-6 * b.value(row).abs().max(1.0),
                "{name} row {row}"
            );
        }
    }
}
