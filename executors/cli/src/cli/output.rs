//! How `hearth sql` prints a statement's rows: a table for people, CSV or JSON lines for scripts. Vectors
//! and other nested values print as text (`[0.5, 1.0]`) in CSV.

use std::io::Write;
use std::sync::Arc;

use clap::ValueEnum;
use datafusion::arrow::array::{ArrayRef, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::arrow::error::ArrowError;
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::arrow::util::pretty::pretty_format_batches;

/// An output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// A table with a header, as people read it.
    Table,
    /// CSV with a header row; nested values as text.
    Csv,
    /// One JSON object per row.
    Json,
}

/// A column of nested values (vectors, structs) as their text.
fn as_text(column: &ArrayRef) -> Result<ArrayRef, ArrowError> {
    let formatter = ArrayFormatter::try_new(column.as_ref(), &FormatOptions::default())?;
    let values: Vec<Option<String>> = (0..column.len())
        .map(|row| column.is_valid(row).then(|| formatter.value(row).to_string()))
        .collect();
    Ok(Arc::new(StringArray::from(values)))
}

/// `batch` with its nested columns as text, which CSV can hold.
fn flat(batch: &RecordBatch) -> Result<RecordBatch, ArrowError> {
    let mut fields = Vec::new();
    let mut columns = Vec::new();
    for (field, column) in batch.schema().fields().iter().zip(batch.columns()) {
        if field.data_type().is_nested() {
            fields.push(Field::new(field.name(), DataType::Utf8, true));
            columns.push(as_text(column)?);
        } else {
            fields.push(field.as_ref().clone());
            columns.push(Arc::clone(column));
        }
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
}

/// Writes a statement's rows to `out`; a statement without columns (DDL) prints nothing.
pub fn write(out: &mut impl Write, format: Format, batches: &[RecordBatch]) -> Result<(), Box<dyn std::error::Error>> {
    let Some(first) = batches.first() else {
        return Ok(());
    };
    if first.num_columns() == 0 {
        return Ok(());
    }
    match format {
        Format::Table => writeln!(out, "{}\n", pretty_format_batches(batches)?)?,
        Format::Csv => {
            let mut writer = datafusion::arrow::csv::WriterBuilder::new()
                .with_header(true)
                .build(&mut *out);
            for batch in batches {
                writer.write(&flat(batch)?)?;
            }
        }
        Format::Json => {
            let mut writer = datafusion::arrow::json::LineDelimitedWriter::new(&mut *out);
            for batch in batches {
                writer.write(batch)?;
            }
            writer.finish()?;
        }
    }
    Ok(())
}
