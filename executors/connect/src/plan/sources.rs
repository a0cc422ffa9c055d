//! `spark.read`: the data sources a PySpark client names (`csv`, `parquet`, `json`, `text`) read with Spark's
//! options, and the schemas it writes as DDL (`"a INT, b STRING"`) or as Spark's JSON.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Int64Type, Schema};
use datafusion::functions_aggregate::expr_fn::{max, min};
use datafusion::logical_expr::{cast, ident};
use datafusion::prelude::{DataFrame, JsonReadOptions};
use hearth_exec::read::CsvOptions;
use hearth_exec::session::Session;
use spark_connect_proto::read::DataSource;

use crate::errors::{ConnectError, Result};
use crate::persist::{LocalFiles, Location, part_files};
use crate::plan::libsvm::read_libsvm;
use crate::types::parse_type_name;

/// The data frame of `spark.read.format(…).options(…).load(paths)`: several paths are read one after
/// another as one frame.
pub(crate) async fn read(session: &Session, source: &DataSource) -> Result<DataFrame> {
    let format = source.format.as_deref().unwrap_or("parquet").to_ascii_lowercase();
    let [first, rest @ ..] = source.paths.as_slice() else {
        return Err(ConnectError::IllegalArgument(format!(
            "spark.read.{format} was given no path"
        )));
    };
    let mut df = read_one(session, &format, source, first).await?;
    for path in rest {
        df = df.union(read_one(session, &format, source, path).await?)?;
    }
    Ok(df)
}

async fn read_one(session: &Session, format: &str, source: &DataSource, path: &str) -> Result<DataFrame> {
    match format {
        "csv" => {
            let mut options = csv_options(&source.options)?;
            let given = source.schema.as_deref().filter(|s| !s.trim().is_empty());
            if let Some(schema) = given {
                options = options.schema(Arc::new(schema_from_text(schema)?));
            }
            let df = session.read_csv(path, &options).await?;
            match given.is_none() && flag(&source.options, "inferSchema", false)? {
                true => spark_integers(df).await,
                false => Ok(df),
            }
        }
        "parquet" => Ok(session.read_parquet(path).await?),
        "json" => Ok(session
            .context()
            .read_json(path, JsonReadOptions::default().file_extension(""))
            .await?),
        "text" => read_text(session, local_files(session, path).await?.path()),
        "libsvm" => {
            let features = source
                .options
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case("numFeatures"));
            let files = local_files(session, path).await?;
            read_libsvm(session, files.path(), features.map(|(_, v)| v.as_str()))
        }
        other => Err(ConnectError::Unsupported(format!(
            "the data source format {other:?} (csv, parquet, json, text and libsvm are read)"
        ))),
    }
}

/// Spark's CSV inference types a column of whole numbers `int` when every value fits 32 bits and `bigint` only
/// beyond; DataFusion's infers 64 bits for both. One aggregate pass finds the columns that fit, which are cast.
async fn spark_integers(df: DataFrame) -> Result<DataFrame> {
    let wide: Vec<String> = (df.schema().fields().iter())
        .filter(|field| field.data_type() == &DataType::Int64)
        .map(|field| field.name().clone())
        .collect();
    if wide.is_empty() {
        return Ok(df);
    }
    let bounds = (wide.iter().enumerate())
        .flat_map(|(i, column)| {
            [
                min(ident(column)).alias(format!("low{i}")),
                max(ident(column)).alias(format!("high{i}")),
            ]
        })
        .collect();
    let batches = df.clone().aggregate(vec![], bounds)?.collect().await?;
    let Some(batch) = batches.iter().find(|batch| batch.num_rows() == 1) else {
        return Ok(df);
    };
    let fits = |i: usize| {
        let bound = |j: usize| {
            let values = batch.column(j).as_primitive::<Int64Type>();
            values.is_null(0) || i32::try_from(values.value(0)).is_ok()
        };
        bound(2 * i) && bound(2 * i + 1)
    };
    let narrow: Vec<&String> = (wide.iter().enumerate())
        .filter(|(i, _)| fits(*i))
        .map(|(_, c)| c)
        .collect();
    let columns = (df.schema().fields().iter())
        .map(|field| match narrow.contains(&field.name()) {
            true => cast(ident(field.name()), DataType::Int32).alias(field.name()),
            false => ident(field.name()),
        })
        .collect::<Vec<_>>();
    Ok(df.select(columns)?)
}

/// The files at `path` (a local one, or an object store's URL) in a local folder or file.
async fn local_files(session: &Session, path: &str) -> Result<LocalFiles> {
    Location::of(path, session.context().runtime_env().as_ref())?
        .read()
        .await
}

/// Spark's `text` source: one row per line, in a string column `value`; a directory's files in name order,
/// leaving out Spark's `_SUCCESS` and hidden files.
fn read_text(session: &Session, path: &Path) -> Result<DataFrame> {
    let files = if path.is_dir() {
        part_files::list(path)?
    } else {
        vec![path.to_owned()]
    };
    let mut lines = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file)
            .map_err(|e| ConnectError::Execution(format!("[PATH_NOT_FOUND] reading {}: {e}", file.display())))?;
        lines.extend(text.lines().map(str::to_owned));
    }
    let schema = Arc::new(Schema::new(vec![Field::new("value", DataType::Utf8, true)]));
    let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(StringArray::from(lines))])?;
    Ok(session.read_batches(schema, vec![batch])?)
}

/// A schema a client sends as text: Spark's JSON (`{"type":"struct","fields":[…]}`) or DDL
/// (`a INT, b STRING`).
pub(crate) fn schema_from_text(text: &str) -> Result<Schema> {
    if text.trim_start().starts_with('{') {
        let json: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| ConnectError::IllegalArgument(format!("the schema {text:?} is not Spark's JSON: {e}")))?;
        return match json_type(&json)? {
            DataType::Struct(fields) => Ok(Schema::new(fields)),
            other => Ok(Schema::new(vec![Field::new("value", other, true)])),
        };
    }
    let fields = split_top_level(text)
        .into_iter()
        .map(|column| {
            let column = column.trim();
            let (name, type_name) = column.split_once(char::is_whitespace).ok_or_else(|| {
                ConnectError::IllegalArgument(format!("the schema column {column:?} has no type (write `name TYPE`)"))
            })?;
            Ok(Field::new(
                name.trim_matches('`'),
                parse_type_name(type_name.trim().trim_start_matches(':'))?,
                true,
            ))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Schema::new(fields))
}

/// A Spark JSON data type: a name (`"double"`) or an object (`struct`, `array`, `udt`).
fn json_type(json: &serde_json::Value) -> Result<DataType> {
    if let Some(name) = json.as_str() {
        return parse_type_name(name);
    }
    let kind = json.get("type").and_then(|t| t.as_str()).unwrap_or_default();
    match kind {
        "struct" => {
            let fields = (json.get("fields").and_then(|f| f.as_array()).into_iter().flatten())
                .map(|field| {
                    let name = field.get("name").and_then(|n| n.as_str()).unwrap_or_default();
                    let nullable = field
                        .get("nullable")
                        .and_then(serde_json::Value::as_bool)
                        .unwrap_or(true);
                    Ok(Field::new(
                        name,
                        json_type(field.get("type").unwrap_or(&serde_json::Value::Null))?,
                        nullable,
                    ))
                })
                .collect::<Result<Vec<_>>>()?;
            Ok(DataType::Struct(fields.into()))
        }
        "array" => {
            let element = json_type(json.get("elementType").unwrap_or(&serde_json::Value::Null))?;
            let nullable = json
                .get("containsNull")
                .and_then(serde_json::Value::as_bool)
                .unwrap_or(true);
            Ok(DataType::List(Arc::new(Field::new_list_field(element, nullable))))
        }
        "udt" => json_type(json.get("sqlType").unwrap_or(&serde_json::Value::Null)),
        _ => Err(ConnectError::Unsupported(format!("the schema type {json}"))),
    }
}

/// `text` split at the commas outside parentheses and angle brackets.
fn split_top_level(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in text.char_indices() {
        match c {
            '(' | '<' => depth += 1,
            ')' | '>' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts.into_iter().filter(|p| !p.trim().is_empty()).collect()
}

/// Options as Spark reads them: keys ignore case.
fn option<'m>(options: &'m HashMap<String, String>, key: &str) -> Option<&'m str> {
    options
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(key))
        .map(|(_, v)| v.as_str())
}

/// Spark's `true`/`false` option values.
fn flag(options: &HashMap<String, String>, key: &str, default: bool) -> Result<bool> {
    match option(options, key) {
        None => Ok(default),
        Some(value) if value.eq_ignore_ascii_case("true") => Ok(true),
        Some(value) if value.eq_ignore_ascii_case("false") => Ok(false),
        Some(value) => Err(ConnectError::IllegalArgument(format!(
            "the option {key} must be true or false, got {value:?}"
        ))),
    }
}

/// How a CSV is read with Spark's options: header, inferSchema, sep/delimiter, quote, escape, nullValue.
fn csv_options(options: &HashMap<String, String>) -> Result<CsvOptions> {
    let mut csv = CsvOptions::new()
        .header(flag(options, "header", false)?)
        .infer_schema(flag(options, "inferSchema", false)?);
    if let Some(separator) = option(options, "sep").or_else(|| option(options, "delimiter")) {
        csv = csv.delimiter(single_byte("sep", separator)?);
    }
    if let Some(quote) = option(options, "quote") {
        csv = csv.quote(single_byte("quote", quote)?);
    }
    if let Some(escape) = option(options, "escape") {
        csv = csv.escape(single_byte("escape", escape)?);
    }
    if let Some(null_value) = option(options, "nullValue") {
        csv = csv.null_value(null_value);
    }
    Ok(csv)
}

fn single_byte(key: &str, value: &str) -> Result<u8> {
    let unescaped = if value == "\\t" { "\t" } else { value };
    match unescaped.as_bytes() {
        [byte] => Ok(*byte),
        _ => Err(ConnectError::IllegalArgument(format!(
            "the option {key} must be one character, got {value:?}"
        ))),
    }
}
