//! What the preprocessing benchmarks share: the generated CSV, the bare scan they measure against, the fit +
//! transform with its rows drained.

use std::fs;
use std::path::PathBuf;

use datafusion::functions_aggregate::expr_fn::sum;
use datafusion::logical_expr::{Expr, ident};
use datafusion::prelude::DataFrame;
use futures::StreamExt;
use hearth::datasets::higgs;

/// `rows` generated Higgs-schema rows written as CSV in a fresh temporary directory: the directory (removed
/// when dropped), the file, and its size in MiB.
pub fn generated_csv(rows: usize) -> (tempfile::TempDir, PathBuf, f64) {
    let dir = tempfile::tempdir().expect("temp dir");
    let csv = dir.path().join("higgs.csv");
    higgs::write_csv(&csv, rows, 42).expect("write csv");
    let mib = fs::metadata(&csv).map_or(0.0, |m| m.len() as f64 / (1024.0 * 1024.0));
    (dir, csv, mib)
}

/// Runs every batch of `df` to completion and drops it; returns the rows seen.
pub async fn drain(df: DataFrame) -> usize {
    let mut stream = df.execute_stream().await.expect("plan");
    let mut rows = 0;
    while let Some(batch) = stream.next().await {
        rows += batch.expect("batch").num_rows();
    }
    rows
}

/// Fits the four-stage pipeline and transforms the same rows, running the transform to completion with
/// `features` and `label` drained unwritten.
pub async fn fit_transform_drained(df: &DataFrame) -> usize {
    let (_, transformed) = higgs::four_stage_preprocessing().fit_transform(df).await.expect("fit");
    drain(
        transformed
            .select(vec![ident("features"), ident("label")])
            .expect("select"),
    )
    .await
}

/// The baseline: one aggregate (`SUM` of each of the 30 feature columns) over the columns the pipeline reads.
pub async fn bare_aggregate(df: &DataFrame) -> usize {
    let sums: Vec<Expr> = higgs::FEATURES.iter().map(|f| sum(ident(*f)).alias(*f)).collect();
    drain(df.clone().aggregate(vec![], sums).expect("aggregate")).await
}
