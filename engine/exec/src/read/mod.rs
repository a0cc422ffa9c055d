//! Reading CSV and Parquet files into data frames. On a `local[N]` session a CSV file's plain lines are
//! decoded by hearth's own decoder (`plain_csv`), the rest by arrow's.

mod locate;
mod located_table;
mod plain_csv;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::ScalarValue;
use datafusion::datasource::file_format::file_compression_type::FileCompressionType;
use datafusion::datasource::source_as_provider;
use datafusion::logical_expr::{Expr, LogicalPlan, cast, ident, lit, when};
use datafusion::prelude::{CsvReadOptions, DataFrame, ParquetReadOptions, SessionContext};

use crate::error::{HearthError, Result};
use crate::master::Master;
use crate::object_stores;
pub(crate) use located_table::LocatedCsvFactory;
use located_table::{CsvFiles, LocatedCsvTable};

/// The URLs of the files behind a table, when it reads files: DataFusion's listing tables and hearth's CSV
/// tables; `None` for any other table (in memory, computed).
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let ctx = datafusion::prelude::SessionContext::new();
/// let numbers = ctx.sql("SELECT 1").await.unwrap().into_view();
/// assert_eq!(hearth_exec::read::file_urls(numbers.as_ref()), None);
/// # });
/// ```
pub fn file_urls(table: &dyn datafusion::datasource::TableProvider) -> Option<Vec<String>> {
    if let Some(located) = table.downcast_ref::<LocatedCsvTable>() {
        return file_urls(located.inner.as_ref());
    }
    let listing = table.downcast_ref::<datafusion::datasource::listing::ListingTable>()?;
    Some(
        listing
            .table_paths()
            .iter()
            .map(|url| url.as_str().to_string())
            .collect(),
    )
}

/// How to read a CSV file. Defaults: a header line, `,` separated, `"` quoted, types inferred from the data,
/// an empty field is null (Spark's `nullValue = ""`), and a row with the wrong number of fields or a value
/// that does not parse fails the read with the file, its line in the file and the value (Spark's
/// `mode = FAILFAST`); an empty file, with no header to name columns, is an error too. `NaN`, `inf`
/// and `-inf` parse as floating-point values. A `.gz`, `.bz2`, `.xz` or `.zst` file is decompressed.
///
/// ```
/// use hearth_exec::read::CsvOptions;
/// let options = CsvOptions::new().header(false).null_value("?");
/// ```
#[derive(Clone, Debug)]
pub struct CsvOptions {
    header: bool,
    delimiter: u8,
    quote: u8,
    escape: Option<u8>,
    comment: Option<u8>,
    schema: Option<SchemaRef>,
    infer_schema: bool,
    null_value: Option<String>,
}

impl Default for CsvOptions {
    fn default() -> Self {
        Self {
            header: true,
            delimiter: b',',
            quote: b'"',
            escape: None,
            comment: None,
            schema: None,
            infer_schema: true,
            null_value: None,
        }
    }
}

impl CsvOptions {
    /// The defaults described above.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the first line names the columns (without one, columns are `column_1`, `column_2`, …).
    pub fn header(mut self, header: bool) -> Self {
        self.header = header;
        self
    }

    /// The field separator (Spark's `sep`).
    pub fn delimiter(mut self, delimiter: u8) -> Self {
        self.delimiter = delimiter;
        self
    }

    /// The quote character.
    pub fn quote(mut self, quote: u8) -> Self {
        self.quote = quote;
        self
    }

    /// The escape character inside quoted fields.
    pub fn escape(mut self, escape: u8) -> Self {
        self.escape = Some(escape);
        self
    }

    /// Lines starting with this character are skipped.
    pub fn comment(mut self, comment: u8) -> Self {
        self.comment = Some(comment);
        self
    }

    /// Reads with this schema instead of inferring one.
    pub fn schema(mut self, schema: SchemaRef) -> Self {
        self.schema = Some(schema);
        self
    }

    /// Whether to infer column types (Spark's `inferSchema`); `false` reads every column as a string.
    pub fn infer_schema(mut self, infer: bool) -> Self {
        self.infer_schema = infer;
        self
    }

    /// The text that stands for null (Spark's `nullValue`), instead of the empty field.
    pub fn null_value(mut self, text: &str) -> Self {
        self.null_value = Some(text.to_string());
        self
    }

    fn compression(path: &str) -> FileCompressionType {
        match path.rsplit('.').next() {
            Some("gz") => FileCompressionType::GZIP,
            Some("bz2") => FileCompressionType::BZIP2,
            Some("xz") => FileCompressionType::XZ,
            Some("zst") => FileCompressionType::ZSTD,
            _ => FileCompressionType::UNCOMPRESSED,
        }
    }

    fn datafusion_options<'a>(&'a self, path: &'a str, extension: &'a str) -> CsvReadOptions<'a> {
        let mut options = CsvReadOptions::new()
            .has_header(self.header)
            .delimiter(self.delimiter)
            .quote(self.quote)
            .file_extension(extension)
            .file_compression_type(Self::compression(path));
        options.escape = self.escape;
        options.comment = self.comment;
        options.null_regex = self.null_value.as_ref().map(|v| format!("^{}$", escape_regex(v)));
        options
    }
}

fn escape_regex(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            let special = "\\.+*?()|[]{}^$#&-~".contains(c);
            special.then_some('\\').into_iter().chain(std::iter::once(c))
        })
        .collect()
}

/// The suffix a file must end with to be read: a file's own extension, or `in_directory` (`.csv`,
/// `.parquet`) inside a directory.
fn extension_of(path: &Path, in_directory: &str) -> String {
    if path.is_dir() {
        return in_directory.to_string();
    }
    path.file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.rfind('.').map(|i| n[i..].to_string()))
        .unwrap_or_default()
}

/// The files a read of `path` takes, in order: `path`, or the files under it ending with `extension` (not
/// hidden ones, whose names start with `.` or `_`).
fn csv_files(path: &Path, extension: &str) -> Vec<PathBuf> {
    if !path.is_dir() {
        return vec![path.to_path_buf()];
    }
    let mut files = Vec::new();
    let mut dirs = vec![path.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let (file, name) = (entry.path(), entry.file_name());
            let name = name.to_string_lossy();
            if name.starts_with(['.', '_']) {
                continue;
            }
            if file.is_dir() {
                dirs.push(file);
            } else if name.ends_with(extension) {
                files.push(file);
            }
        }
    }
    files.sort();
    files
}

/// The schema with every column read as nullable text.
fn as_strings(schema: &Schema) -> Schema {
    Schema::new(
        schema
            .fields()
            .iter()
            .map(|f| Field::new(f.name(), DataType::Utf8, true))
            .collect::<Vec<_>>(),
    )
}

/// The location DataFusion reads for `path`: a local path that exists, or an object store's URL, its store
/// opened in `ctx` (see [`object_stores`]; on a fleet, the scheduler and each executor open it too, with the
/// job's store settings and their own credentials).
fn path_str<'p>(ctx: &SessionContext, path: &'p Path) -> Result<&'p str> {
    if let Some(location) = path.to_str().filter(|location| object_stores::is_remote(location)) {
        object_stores::register(ctx, location)?;
        return Ok(location);
    }
    if !path.exists() {
        return Err(HearthError::persistence(path, "no such file or directory"));
    }
    path.to_str()
        .ok_or_else(|| HearthError::persistence(path, "the path is not valid UTF-8"))
}

/// Reads files for a session: through its context, on its master.
pub(crate) struct Reader<'a> {
    ctx: &'a SessionContext,
    master: &'a Master,
}

impl<'a> Reader<'a> {
    /// A reader for the session of `ctx` on `master`.
    pub(crate) fn new(ctx: &'a SessionContext, master: &'a Master) -> Self {
        Self { ctx, master }
    }

    /// Reads a CSV file, or a directory of them.
    pub(crate) async fn read_csv(&self, path: &Path, options: &CsvOptions) -> Result<DataFrame> {
        let location = path_str(self.ctx, path)?;
        let extension = extension_of(path, ".csv");
        let read = options.datafusion_options(location, &extension);
        let csv = Arc::new(CsvFiles {
            paths: vec![path.to_path_buf()],
            extension: extension.clone(),
            options: options.clone(),
        });
        if options.schema.is_none() && options.infer_schema && options.null_value.is_none() {
            return self.scan_csv(path, read, &csv).await;
        }
        let schema: SchemaRef = match &options.schema {
            Some(schema) => Arc::clone(schema),
            None => {
                let inferred = self
                    .scan_csv(path, read.clone(), &csv)
                    .await?
                    .schema()
                    .as_arrow()
                    .clone();
                if options.infer_schema {
                    Arc::new(inferred)
                } else {
                    Arc::new(as_strings(&inferred))
                }
            }
        };
        let Some(null_text) = &options.null_value else {
            return self.scan_csv(path, read.schema(schema.as_ref()), &csv).await;
        };
        // DataFusion's CSV scan applies a null pattern only while inferring types, so the columns are read as
        // text and the null text is mapped to null before the cast to each column's type.
        let strings = as_strings(&schema);
        let text = self.scan_csv(path, read.schema(&strings), &csv).await?;
        let columns = schema
            .fields()
            .iter()
            .map(|field| {
                let value = ident(field.name());
                let typed = match field.data_type() {
                    DataType::Utf8 => value.clone(),
                    other => cast(value.clone(), other.clone()),
                };
                let null = lit(ScalarValue::try_from(field.data_type())?);
                Ok(when(value.eq(lit(null_text.as_str())), null)
                    .otherwise(typed)?
                    .alias(field.name()))
            })
            .collect::<Result<Vec<Expr>>>()?;
        Ok(text.select(columns)?)
    }

    /// DataFusion's CSV scan of `path`; on an embedded session its read errors name the file and line (a
    /// fleet's plans carry DataFusion's own table).
    async fn scan_csv(&self, path: &Path, read: CsvReadOptions<'_>, csv: &Arc<CsvFiles>) -> Result<DataFrame> {
        let location = path_str(self.ctx, path)?;
        let df = match self.ctx.read_csv(location, read).await {
            Ok(df) => df,
            Err(e) if object_stores::is_remote(location) => return Err(remote_error(path, e)),
            Err(e) => return Err(csv.located(e).into()),
        };
        if df.schema().fields().is_empty() {
            let message = if path.is_dir() {
                "no CSV file here has a header or a row: there are no columns to read"
            } else {
                "the file is empty: no header and no rows, so no columns to read"
            };
            return Err(HearthError::persistence(path, message));
        }
        let (Master::Local { .. }, LogicalPlan::TableScan(scan)) = (self.master, df.logical_plan()) else {
            return Ok(df);
        };
        if object_stores::is_remote(location) {
            return Ok(df);
        }
        let table = LocatedCsvTable {
            inner: source_as_provider(&scan.source)?,
            files: Arc::clone(csv),
        };
        Ok(self.ctx.read_table(Arc::new(table))?)
    }

    /// Reads a Parquet file, or a directory of them.
    pub(crate) async fn read_parquet(&self, path: &Path) -> Result<DataFrame> {
        let location = path_str(self.ctx, path)?;
        let extension = extension_of(path, ".parquet");
        let options = ParquetReadOptions::default().file_extension(&extension);
        match self.ctx.read_parquet(location, options).await {
            Err(e) if object_stores::is_remote(location) => Err(remote_error(path, e)),
            read => Ok(read?),
        }
    }
}

/// A failed read of an object store's `path`, named, with where its settings come from.
fn remote_error(path: &Path, error: datafusion::error::DataFusionError) -> HearthError {
    HearthError::persistence(
        path,
        "reading it from its object store (settings and credentials from the store's environment variables, such \
         as AWS_ACCESS_KEY_ID)",
    )
    .caused_by(error)
}

/// A schema from `(name, type)` pairs, every column nullable: a short way to give [`CsvOptions::schema`].
///
/// ```
/// use datafusion::arrow::datatypes::DataType;
/// let schema = hearth_exec::read::schema_of(&[("age", DataType::Int64), ("city", DataType::Utf8)]);
/// assert_eq!(schema.fields().len(), 2);
/// ```
pub fn schema_of(columns: &[(&str, DataType)]) -> SchemaRef {
    Arc::new(Schema::new(
        columns
            .iter()
            .map(|(name, t)| Field::new(*name, t.clone(), true))
            .collect::<Vec<_>>(),
    ))
}
