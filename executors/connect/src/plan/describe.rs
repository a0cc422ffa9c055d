//! `df.describe(*cols)`: Spark's table of `count`, `mean`, `stddev`, `min` and `max` for each column — the
//! numeric and string ones when none are named — every figure as text, as Spark casts them: a count as a
//! whole number, a mean and a standard deviation (the sample's) as Java prints a double, a minimum and a
//! maximum in the column's own type; null where a figure has no value (the mean of a text column).

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Float32Type, Float64Type, Schema};
use datafusion::arrow::util::display::array_value_to_string;
use datafusion::functions_aggregate::expr_fn::{avg, count, max, min, stddev};
use datafusion::logical_expr::{Expr, TryCast, col};
use datafusion::prelude::DataFrame;
use hearth_exec::session::Session;

use crate::errors::{ConnectError, Result};
use crate::show::{java_double, java_float};

/// The figures, in Spark's order.
const FIGURES: [&str; 5] = ["count", "mean", "stddev", "min", "max"];

/// The `describe` table of `columns` of `df` (all its numeric and string columns when empty).
pub(crate) async fn describe(session: &Session, df: DataFrame, columns: &[String]) -> Result<DataFrame> {
    let fields: Vec<Field> = if columns.is_empty() {
        (df.schema().fields().iter())
            .filter(|f| f.data_type().is_numeric() || is_text(f.data_type()))
            .map(|f| f.as_ref().clone())
            .collect()
    } else {
        (columns.iter())
            .map(|name| {
                let (_, field) =
                    df.schema()
                        .qualified_field_with_unqualified_name(name)
                        .map_err(|_| ConnectError::Analysis {
                            error_class: "UNRESOLVED_COLUMN.WITH_SUGGESTION",
                            message: format!("A column or function parameter with name `{name}` cannot be resolved."),
                        })?;
                Ok(field.as_ref().clone())
            })
            .collect::<Result<_>>()?
    };
    let figures: Vec<Expr> = (fields.iter().enumerate())
        .flat_map(|(i, field)| {
            let column = col(datafusion::common::Column::from_name(field.name()));
            let number = Expr::TryCast(TryCast::new(Box::new(column.clone()), DataType::Float64));
            [
                count(column.clone()).alias(format!("c{i}")),
                avg(number.clone()).alias(format!("a{i}")),
                stddev(number).alias(format!("s{i}")),
                min(column.clone()).alias(format!("n{i}")),
                max(column).alias(format!("x{i}")),
            ]
        })
        .collect();
    let row = df.aggregate(vec![], figures)?.collect().await?;
    let row = row
        .iter()
        .find(|batch| batch.num_rows() > 0)
        .ok_or_else(|| ConnectError::Execution("describe's aggregate gave no row".into()))?;
    let mut schema_fields = vec![Field::new("summary", DataType::Utf8, true)];
    let mut arrays: Vec<ArrayRef> = vec![Arc::new(StringArray::from(FIGURES.to_vec()))];
    for (i, field) in fields.iter().enumerate() {
        let text: Vec<Option<String>> = (0..FIGURES.len())
            .map(|figure| cell_text(row.column(i * FIGURES.len() + figure)))
            .collect::<Result<_>>()?;
        schema_fields.push(Field::new(field.name(), DataType::Utf8, true));
        arrays.push(Arc::new(StringArray::from(text)));
    }
    let schema = Arc::new(Schema::new(schema_fields));
    let batch = RecordBatch::try_new(Arc::clone(&schema), arrays)?;
    Ok(session.read_batches(schema, vec![batch])?)
}

fn is_text(data_type: &DataType) -> bool {
    matches!(data_type, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
}

/// The one value of `array` as Spark casts it to text.
fn cell_text(array: &ArrayRef) -> Result<Option<String>> {
    if array.is_null(0) {
        return Ok(None);
    }
    Ok(Some(match array.data_type() {
        DataType::Float64 => java_double(array.as_primitive::<Float64Type>().value(0)),
        DataType::Float32 => java_float(array.as_primitive::<Float32Type>().value(0)),
        _ => array_value_to_string(array, 0)?,
    }))
}
