//! `df.show()`: Spark's text table, byte for byte — cells as Spark's `Dataset.showString` writes them (`NULL`,
//! Java's `Double.toString`, `[1, 2]` arrays), truncated at `truncate` characters, right-aligned, with the
//! "only showing top N rows" line — or Spark's vertical records.

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Float32Type, Float64Type};
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};

use crate::errors::Result;

/// The narrowest a column is drawn.
const MIN_WIDTH: usize = 3;

/// How `show` lays out rows.
#[derive(Debug, Clone, Copy)]
pub struct ShowOptions {
    /// Rows shown; the batches hold one more when there are more.
    pub rows: usize,
    /// Cells longer than this are cut (0: never, and cells are left-aligned).
    pub truncate: usize,
    /// One record per block instead of a table.
    pub vertical: bool,
}

/// Spark's text for `batches` (at most `options.rows + 1` rows) with column names `names`.
///
/// ```
/// use std::sync::Arc;
/// use datafusion::arrow::array::{Float64Array, RecordBatch};
/// use datafusion::arrow::datatypes::{DataType, Field, Schema};
/// use hearth_connect::show::{ShowOptions, show_string};
///
/// let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::Float64, true)]));
/// let batch = RecordBatch::try_new(schema, vec![Arc::new(Float64Array::from(vec![Some(0.0001), None]))]).unwrap();
/// let text = show_string(&[batch], &["x".to_owned()], ShowOptions { rows: 20, truncate: 20, vertical: false }).unwrap();
/// assert_eq!(text, "+------+\n|     x|\n+------+\n|1.0E-4|\n|  NULL|\n+------+\n");
/// ```
pub fn show_string(batches: &[RecordBatch], names: &[String], options: ShowOptions) -> Result<String> {
    let mut rows: Vec<Vec<String>> = Vec::new();
    for batch in batches {
        for row in 0..batch.num_rows() {
            let cells = (batch.columns().iter())
                .map(|column| cell(column.as_ref(), row).map(|text| truncated(text, options.truncate)))
                .collect::<Result<Vec<_>>>()?;
            rows.push(cells);
        }
    }
    let more = rows.len() > options.rows;
    rows.truncate(options.rows);
    let mut text = if options.vertical {
        vertical(names, &rows)
    } else {
        horizontal(names, &rows, options.truncate > 0)
    };
    if more {
        let noun = if options.rows == 1 { "row" } else { "rows" };
        // Without a newline: Spark ends its text there, and PySpark prints it with one.
        text.push_str(&format!("only showing top {} {noun}", options.rows));
    }
    Ok(text)
}

fn truncated(text: String, truncate: usize) -> String {
    if truncate == 0 || text.chars().count() <= truncate {
        return text;
    }
    if truncate < 4 {
        return text.chars().take(truncate).collect();
    }
    text.chars().take(truncate - 3).chain("...".chars()).collect()
}

fn horizontal(names: &[String], rows: &[Vec<String>], right_align: bool) -> String {
    let widths: Vec<usize> = (0..names.len())
        .map(|c| {
            rows.iter()
                .map(|r| r[c].chars().count())
                .chain([names[c].chars().count(), MIN_WIDTH])
                .max()
                .unwrap_or(MIN_WIDTH)
        })
        .collect();
    let separator: String = widths
        .iter()
        .map(|w| format!("+{}", "-".repeat(*w)))
        .collect::<String>()
        + "+\n";
    let line = |cells: &[String]| -> String {
        let padded: String = (cells.iter().zip(&widths))
            .map(|(cell, width)| {
                let pad = " ".repeat(width - cell.chars().count());
                if right_align {
                    format!("|{pad}{cell}")
                } else {
                    format!("|{cell}{pad}")
                }
            })
            .collect();
        padded + "|\n"
    };
    let mut text = separator.clone() + &line(names) + &separator;
    for row in rows {
        text.push_str(&line(row));
    }
    text + &separator
}

fn vertical(names: &[String], rows: &[Vec<String>]) -> String {
    if rows.is_empty() {
        return "(0 rows)\n".into();
    }
    let name_width = names.iter().map(|n| n.chars().count()).fold(MIN_WIDTH, usize::max);
    let data_width = rows
        .iter()
        .flatten()
        .map(|c| c.chars().count())
        .fold(MIN_WIDTH, usize::max);
    let mut text = String::new();
    for (i, row) in rows.iter().enumerate() {
        text.push_str(&pad_right(&format!("-RECORD {i}"), name_width + data_width + 5, '-'));
        text.push('\n');
        for (name, cell) in names.iter().zip(row) {
            text.push_str(&format!(
                " {} | {} \n",
                pad_right(name, name_width, ' '),
                pad_right(cell, data_width, ' ')
            ));
        }
    }
    text
}

fn pad_right(text: &str, width: usize, fill: char) -> String {
    let len = text.chars().count();
    text.chars()
        .chain(std::iter::repeat_n(fill, width.saturating_sub(len)))
        .collect()
}

/// One value as Spark's `show` writes it.
fn cell(column: &dyn Array, row: usize) -> Result<String> {
    if column.is_null(row) {
        return Ok("NULL".into());
    }
    Ok(match column.data_type() {
        DataType::Float64 => java_double(column.as_primitive::<Float64Type>().value(row)),
        DataType::Float32 => java_float(column.as_primitive::<Float32Type>().value(row)),
        // Spark prints a dense vector as `[v0,v1,…]`.
        DataType::FixedSizeList(..) => {
            let values = column.as_fixed_size_list().value(row);
            let cells = (0..values.len())
                .map(|i| cell(values.as_ref(), i))
                .collect::<Result<Vec<_>>>()?;
            format!("[{}]", cells.join(","))
        }
        DataType::List(_) => {
            let values = column.as_list::<i32>().value(row);
            format!(
                "[{}]",
                (0..values.len())
                    .map(|i| cell(values.as_ref(), i))
                    .collect::<Result<Vec<_>>>()?
                    .join(", ")
            )
        }
        DataType::Struct(_) => {
            let fields = column.as_struct();
            let cells = fields
                .columns()
                .iter()
                .map(|f| cell(f.as_ref(), row))
                .collect::<Result<Vec<_>>>()?;
            format!("{{{}}}", cells.join(", "))
        }
        DataType::Binary => {
            let bytes = column.as_binary::<i32>().value(row);
            format!(
                "[{}]",
                bytes.iter().map(|b| format!("{b:02X}")).collect::<Vec<_>>().join(" ")
            )
        }
        _ => {
            let options = FormatOptions::default().with_null("NULL");
            ArrayFormatter::try_new(column, &options)?.value(row).to_string()
        }
    })
}

/// Java's `Double.toString`: the shortest digits that read back as `value`, in plain notation from 10⁻³ up
/// to 10⁷ (`0.001`, `1234567.0`) and in Java's scientific notation outside it (`1.0E-4`, `1.0E7`).
///
/// ```
/// use hearth_connect::show::java_double;
///
/// assert_eq!(java_double(1.0), "1.0");
/// assert_eq!(java_double(0.1 + 0.2), "0.30000000000000004");
/// assert_eq!(java_double(1e7), "1.0E7");
/// assert_eq!(java_double(-2.5e-4), "-2.5E-4");
/// ```
pub fn java_double(value: f64) -> String {
    java_notation(
        value.is_nan(),
        value.is_infinite(),
        value == 0.0,
        value.abs(),
        format!("{value}"),
        format!("{value:e}"),
    )
}

/// Java's `Float.toString`, as [`java_double`] for `float`.
pub fn java_float(value: f32) -> String {
    java_notation(
        value.is_nan(),
        value.is_infinite(),
        value == 0.0,
        f64::from(value.abs()),
        format!("{value}"),
        format!("{value:e}"),
    )
}

fn java_notation(nan: bool, infinite: bool, zero: bool, magnitude: f64, plain: String, scientific: String) -> String {
    if nan {
        return "NaN".into();
    }
    if infinite {
        return if plain.starts_with('-') {
            "-Infinity".into()
        } else {
            "Infinity".into()
        };
    }
    if zero || (1e-3..1e7).contains(&magnitude) {
        return if plain.contains('.') { plain } else { plain + ".0" };
    }
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let mantissa = if mantissa.contains('.') {
        mantissa.to_owned()
    } else {
        format!("{mantissa}.0")
    };
    format!("{mantissa}E{exponent}")
}
