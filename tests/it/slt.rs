//! The SQL surface as sqllogictest files (`tests/slt/*.slt`): every `ML.*` function, CREATE/DROP/SHOW MODEL and
//! the options' errors, each file run on a `local[2]` session and again on `standalone[2]`, where every plan
//! crosses Ballista's codecs. Each file gets a fresh session, its own model catalog and the German credit CSV as
//! table `credit`.
//!
//! `HEARTH_BLESS_SLT=1` rewrites the files' expected rows and errors from a `local[2]` run; review the diff.

use std::path::{Path, PathBuf};

use datafusion::arrow::array::{Array, RecordBatch};
use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use hearth::datasets::german_credit;
use hearth::prelude::*;
use sqllogictest::{DBOutput, DefaultColumnType, Runner};
use tempfile::TempDir;

use crate::common::ballista_runtime;

/// The masters every file runs on: the embedded one, and Ballista's in this process.
const MASTERS: [&str; 2] = ["local[2]", "standalone[2]"];

/// A hearth session as sqllogictest's database: one statement per record, through hearth's SQL (with `ML.*`
/// and the model statements), its rows as text.
struct HearthDb {
    session: Session,
    master: &'static str,
    /// The session's model catalog, removed with it.
    _models: TempDir,
}

/// A statement's error, as hearth printed it.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct SltError(String);

impl From<HearthError> for SltError {
    fn from(error: HearthError) -> Self {
        SltError(error.to_string())
    }
}

impl HearthDb {
    /// A session on `master` with a new model catalog and the table `credit`.
    async fn open(master: &'static str) -> Result<Self, SltError> {
        let models = tempfile::tempdir().map_err(|e| SltError(e.to_string()))?;
        let session = Session::builder()
            .with_default_features()
            .connect(master)
            .await?
            .with_models(models.path());
        session
            .sql(&format!(
                "CREATE EXTERNAL TABLE credit STORED AS CSV LOCATION '{}' OPTIONS ('format.has_header' 'true')",
                german_credit::csv_path().display()
            ))
            .await?;
        Ok(HearthDb {
            session,
            master,
            _models: models,
        })
    }
}

#[async_trait::async_trait]
impl sqllogictest::AsyncDB for HearthDb {
    type Error = SltError;
    type ColumnType = DefaultColumnType;

    async fn run(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, SltError> {
        let frame = self.session.sql(sql).await?;
        let schema = frame.schema().inner().clone();
        let batches = frame.collect().await.map_err(HearthError::from)?;
        if schema.fields().is_empty() {
            return Ok(DBOutput::StatementComplete(0));
        }
        let types = schema
            .fields()
            .iter()
            .map(|field| column_type(field.data_type()))
            .collect();
        let rows = batches
            .iter()
            .map(rows_as_text)
            .collect::<Result<Vec<_>, _>>()?
            .concat();
        Ok(DBOutput::Rows { types, rows })
    }

    async fn shutdown(&mut self) {}

    fn engine_name(&self) -> &str {
        self.master
    }

    async fn sleep(duration: std::time::Duration) {
        tokio::time::sleep(duration).await;
    }
}

/// sqllogictest's letter for a column: `I` for integers, `R` for floating point and decimals, `T` otherwise.
fn column_type(data_type: &DataType) -> DefaultColumnType {
    if data_type.is_integer() {
        DefaultColumnType::Integer
    } else if data_type.is_floating() || matches!(data_type, DataType::Decimal128(..) | DataType::Decimal256(..)) {
        DefaultColumnType::FloatingPoint
    } else {
        DefaultColumnType::Text
    }
}

/// A batch's rows as sqllogictest's text: Arrow's display of each value, `NULL`, and `(empty)` for "".
fn rows_as_text(batch: &RecordBatch) -> Result<Vec<Vec<String>>, SltError> {
    let formatters = batch
        .columns()
        .iter()
        .map(|column| ArrayFormatter::try_new(column.as_ref(), &FormatOptions::default()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| SltError(e.to_string()))?;
    let cell = |column: &dyn Array, formatter: &ArrayFormatter, row: usize| match formatter.value(row).to_string() {
        _ if column.is_null(row) => "NULL".to_string(),
        text if text.is_empty() => "(empty)".to_string(),
        text => text,
    };
    Ok((0..batch.num_rows())
        .map(|row| {
            (batch.columns().iter().zip(&formatters))
                .map(|(column, formatter)| cell(column.as_ref(), formatter, row))
                .collect()
        })
        .collect())
}

/// The `.slt` files, by name.
fn files() -> Vec<PathBuf> {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/slt");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&folder)
        .unwrap_or_else(|e| panic!("{}: {e}", folder.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "slt"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no .slt file in {}", folder.display());
    files
}

/// Runs `file` on `master`, or rewrites its expectations from what `master` gives.
async fn run_file(file: &Path, master: &'static str, bless: bool) -> Result<(), String> {
    let mut runner = Runner::new(move || HearthDb::open(master));
    runner.add_label(if master.starts_with("local") {
        "local"
    } else {
        "standalone"
    });
    if bless {
        let (validator, normalizer) = (sqllogictest::default_validator, sqllogictest::default_normalizer);
        let columns = sqllogictest::default_column_validator;
        return (runner.update_test_file(file, " ", validator, normalizer, columns).await)
            .map_err(|e| format!("{}: {e}", file.display()));
    }
    (runner.run_file_async(file).await).map_err(|e| format!("{} on {master}:\n{}", file.display(), e.display(false)))
}

/// Every `.slt` file on every master; all failures are reported together.
#[test]
fn the_sql_surface_gives_the_rows_and_errors_of_its_slt_files_on_every_master() {
    let bless = std::env::var_os("HEARTH_BLESS_SLT").is_some();
    let masters = if bless { &MASTERS[..1] } else { &MASTERS[..] };
    let failures: Vec<String> = ballista_runtime().block_on(async {
        let mut failures = Vec::new();
        for file in files() {
            for &master in masters {
                if let Err(failure) = run_file(&file, master, bless).await {
                    failures.push(failure);
                }
            }
        }
        failures
    });
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
