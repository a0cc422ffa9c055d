//! `df.write…save(path)`: a DataFrame saved as Spark's `DataFrameWriter` saves it — `parquet` (Spark's
//! default source), `csv` and `json` by hearth's writer (part files and `_SUCCESS`, whole or nothing, on every
//! master), `text` (one string column, a line a row) as one part file; to local folders and object stores.
//! Spark's save modes; tables, partitioning and bucketing are refused by name.

use std::path::Path;

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::DataType;
use datafusion::prelude::DataFrame;
use hearth_exec::write::{FrameWriter, OutputFormat, SaveMode};
use spark_connect_proto::WriteOperation;
use spark_connect_proto::write_operation::{SaveMode as SparkMode, SaveType};

use crate::errors::{ConnectError, Result};
use crate::persist::{Location, part_files};
use crate::plan::Planner;
use crate::sessions::ClientSession;

/// Runs the write `operation` asks for.
pub(crate) async fn write(session: &ClientSession, operation: WriteOperation) -> Result<()> {
    let path = match &operation.save_type {
        Some(SaveType::Path(path)) => path.clone(),
        Some(SaveType::Table(_)) => {
            return Err(ConnectError::Unsupported("saveAsTable and insertInto (tables)".into()));
        }
        None => {
            return Err(ConnectError::IllegalArgument(
                "df.write needs a path: save(path)".into(),
            ));
        }
    };
    refuse_layout(&operation)?;
    let mode = match SparkMode::try_from(operation.mode).unwrap_or(SparkMode::Unspecified) {
        SparkMode::Unspecified | SparkMode::ErrorIfExists => SaveMode::ErrorIfExists,
        SparkMode::Append => SaveMode::Append,
        SparkMode::Overwrite => SaveMode::Overwrite,
        SparkMode::Ignore => SaveMode::Ignore,
    };
    let input = operation
        .input
        .as_ref()
        .ok_or_else(|| ConnectError::InvalidPlan("df.write without its DataFrame".into()))?;
    let df = Planner::new(&session.hearth, &session.models).plan(input).await?;
    let source = operation.source.as_deref().unwrap_or("parquet").to_ascii_lowercase();
    let location = Location::of(&path, session.hearth.context().runtime_env().as_ref())?;
    if mode == SaveMode::ErrorIfExists && location.exists().await? {
        return Err(ConnectError::Analysis {
            error_class: "PATH_ALREADY_EXISTS",
            message: format!("Path {path} already exists. Set mode as \"overwrite\" to overwrite the existing path."),
        });
    }
    if source == "text" {
        no_options(&operation, &source, &[])?;
        return write_text(df, &location, mode).await;
    }
    let format: OutputFormat = source.parse().map_err(|_| {
        ConnectError::Unsupported(format!(
            "writing the data source {source:?} (parquet, csv, json and text are written)"
        ))
    })?;
    let mut writer = FrameWriter::new(format).mode(mode);
    match format {
        OutputFormat::Parquet => {
            no_options(&operation, &source, &["compression"])?;
            if let Some(codec) = operation.options.get("compression") {
                writer = writer.compression(codec.clone());
            }
        }
        OutputFormat::Csv => {
            no_options(&operation, &source, &["header"])?;
            if operation.options.get("header").map(String::as_str) != Some("true") {
                return Err(ConnectError::Unsupported(
                    "CSV without a header row: hearth writes one, pass header=True".into(),
                ));
            }
        }
        OutputFormat::Json => no_options(&operation, &source, &[])?,
    }
    writer.save(df, &path).await?;
    Ok(())
}

/// Refuses what shapes the output beyond a folder of part files.
fn refuse_layout(operation: &WriteOperation) -> Result<()> {
    let refused = if !operation.partitioning_columns.is_empty() {
        Some("partitionBy")
    } else if operation.bucket_by.is_some() {
        Some("bucketBy")
    } else if !operation.sort_column_names.is_empty() {
        Some("sortBy")
    } else if !operation.clustering_columns.is_empty() {
        Some("clusterBy")
    } else {
        None
    };
    match refused {
        Some(method) => Err(ConnectError::Unsupported(format!("df.write.{method}"))),
        None => Ok(()),
    }
}

fn no_options(operation: &WriteOperation, source: &str, known: &[&str]) -> Result<()> {
    match operation
        .options
        .keys()
        .find(|key| !known.contains(&key.to_ascii_lowercase().as_str()))
    {
        Some(option) => Err(ConnectError::Unsupported(format!(
            "the {source} write option {option:?}"
        ))),
        None => Ok(()),
    }
}

/// Spark's `text` source: a single string column, each value a line of one part file.
async fn write_text(df: DataFrame, location: &Location, mode: SaveMode) -> Result<()> {
    let fields = df.schema().fields().clone();
    let [field] = fields.iter().collect::<Vec<_>>()[..] else {
        return Err(ConnectError::Analysis {
            error_class: "UNSUPPORTED_DATA_TYPE_FOR_DATASOURCE",
            message: format!(
                "Text data source supports only a single column, and you have {} columns.",
                fields.len()
            ),
        });
    };
    if !matches!(
        field.data_type(),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
    ) {
        return Err(ConnectError::Analysis {
            error_class: "UNSUPPORTED_DATA_TYPE_FOR_DATASOURCE",
            message: format!(
                "The Text datasource doesn't support the column `{}` of the type {}.",
                field.name(),
                field.data_type()
            ),
        });
    }
    let mut text = String::new();
    for batch in df.collect().await? {
        let column = datafusion::arrow::compute::cast(batch.column(0), &DataType::Utf8)?;
        let strings = column.as_string::<i32>();
        for row in 0..strings.len() {
            if strings.is_valid(row) {
                text.push_str(strings.value(row));
            }
            text.push('\n');
        }
    }
    match mode {
        SaveMode::Ignore if location.exists().await? => Ok(()),
        SaveMode::Append if location.exists().await? => {
            location.add_file(&part_files::name(0, "txt"), text.as_bytes()).await
        }
        _ => {
            let fill = |staging: &Path| part_files::write(staging, "txt", text.as_bytes());
            location.write_whole(fill).await
        }
    }
}
