//! The Higgs-schema features the benchmarks of Spark's linear models fit on: well defined for both models.

use hearth::datasets::higgs;

/// The regression target, left out of the features.
pub const TARGET: &str = "DER_mass_vis";
/// Left out of the features so that the coefficients are unique and well defined: the generator's sum of three
/// other columns, and the ten jet columns that hold -999 together whenever an event has too few jets (nearly
/// one column, on which neither Spark's L-BFGS nor scikit-learn's settles in 100 or 1,000 iterations).
pub const LEFT_OUT: [&str; 11] = [
    "DER_sum_pt",
    "DER_deltaeta_jet_jet",
    "DER_mass_jet_jet",
    "DER_prodeta_jet_jet",
    "DER_lep_eta_centrality",
    "PRI_jet_leading_pt",
    "PRI_jet_leading_eta",
    "PRI_jet_leading_phi",
    "PRI_jet_subleading_pt",
    "PRI_jet_subleading_eta",
    "PRI_jet_subleading_phi",
];

/// The features: every column of [`higgs::FEATURES`] but [`TARGET`] and [`LEFT_OUT`].
pub fn feature_columns() -> Vec<&'static str> {
    higgs::FEATURES
        .iter()
        .copied()
        .filter(|f| *f != TARGET && !LEFT_OUT.contains(f))
        .collect()
}

/// The rows the environment variable `var` asks for (a million by default), generated as `higgs.csv` in a new
/// temporary directory.
pub fn generated_csv(var: &str) -> (usize, tempfile::TempDir, std::path::PathBuf) {
    let rows = std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let dir = tempfile::tempdir().expect("temp dir");
    let csv = dir.path().join("higgs.csv");
    higgs::write_csv(&csv, rows, 42).expect("write csv");
    (rows, dir, csv)
}

/// Writes the rows of `csv` as the one Parquet file `parquet`: the features as doubles, then the `extra`
/// columns.
pub async fn write_one_parquet(
    session: &hearth::prelude::Session,
    csv: &std::path::Path,
    parquet: &std::path::Path,
    extra: Vec<datafusion::logical_expr::Expr>,
) {
    use datafusion::arrow::datatypes::DataType;
    use datafusion::logical_expr::{cast, ident};
    let df = session
        .read_csv(csv, &hearth::prelude::CsvOptions::new())
        .await
        .expect("read csv");
    let mut columns: Vec<_> = feature_columns()
        .into_iter()
        .map(|f| cast(ident(f), DataType::Float64).alias(f))
        .collect();
    columns.extend(extra);
    df.select(columns)
        .expect("select")
        .repartition(datafusion::logical_expr::Partitioning::RoundRobinBatch(1))
        .expect("one partition")
        .write_parquet(
            parquet.to_str().expect("path"),
            datafusion::dataframe::DataFrameWriteOptions::new().with_single_file_output(true),
            None,
        )
        .await
        .expect("write parquet");
}
