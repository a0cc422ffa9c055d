//! `spark.read.format("libsvm")`: LIBSVM text (`label index:value …`, indices from 1, ascending) as Spark reads
//! it — a `label` double and a `features` vector of `numFeatures` slots (the option, or the largest index
//! seen), here hearth's dense vectors. A line that does not parse is an error naming its file and line.

use std::path::Path;
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Float64Array, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::prelude::DataFrame;
use hearth_exec::session::Session;
use hearth_exec::vector::{vector_array, vector_type};

use crate::errors::{ConnectError, Result};
use crate::persist::part_files;

/// One parsed line: its label and its (index from 0, value) pairs.
type Row = (f64, Vec<(usize, f64)>);

/// The rows of the LIBSVM file or directory `path`; `num_features` as the option gives it.
pub(crate) fn read_libsvm(session: &Session, path: &Path, num_features: Option<&str>) -> Result<DataFrame> {
    let files = if path.is_dir() {
        part_files::list(path)?
    } else {
        vec![path.to_owned()]
    };
    let mut rows: Vec<Row> = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file)
            .map_err(|e| ConnectError::Execution(format!("[PATH_NOT_FOUND] reading {}: {e}", file.display())))?;
        for (number, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or_default().trim();
            if !line.is_empty() {
                rows.push(parse_line(line).ok_or_else(|| {
                    ConnectError::Execution(format!(
                        "{} line {}: not LIBSVM (`label index:value …`, indices from 1): {line:?}",
                        file.display(),
                        number + 1
                    ))
                })?);
            }
        }
    }
    let widest = rows
        .iter()
        .flat_map(|(_, pairs)| pairs.last().map(|(i, _)| i + 1))
        .max()
        .unwrap_or(0);
    let dim = match num_features {
        Some(text) => text.trim().parse::<usize>().map_err(|_| {
            ConnectError::IllegalArgument(format!("libsvm's numFeatures must be a whole number, got {text:?}"))
        })?,
        None => widest,
    };
    if widest > dim {
        return Err(ConnectError::IllegalArgument(format!(
            "libsvm: an index reaches {widest} but numFeatures is {dim}"
        )));
    }
    let mut values = vec![0.0_f32; rows.len() * dim];
    for (row, (_, pairs)) in rows.iter().enumerate() {
        for (index, value) in pairs {
            values[row * dim + index] = *value as f32;
        }
    }
    let labels: ArrayRef = Arc::new(Float64Array::from_iter_values(rows.iter().map(|(label, _)| *label)));
    let features = vector_array(rows.len(), dim, values, None)?;
    let schema = Arc::new(Schema::new(vec![
        Field::new("label", DataType::Float64, false),
        Field::new("features", vector_type(dim), true),
    ]));
    let batch = RecordBatch::try_new(Arc::clone(&schema), vec![labels, features])?;
    Ok(session.read_batches(schema, vec![batch])?)
}

/// `label index:value …` with indices from 1, strictly ascending.
fn parse_line(line: &str) -> Option<Row> {
    let mut parts = line.split_whitespace();
    let label = parts.next()?.parse().ok()?;
    let mut pairs: Vec<(usize, f64)> = Vec::new();
    for part in parts {
        let (index, value) = part.split_once(':')?;
        let index = index.parse::<usize>().ok()?.checked_sub(1)?;
        if pairs.last().is_some_and(|(last, _)| *last >= index) {
            return None;
        }
        pairs.push((index, value.parse().ok()?));
    }
    Some((label, pairs))
}

#[cfg(test)]
mod tests {
    use super::parse_line;

    #[test]
    fn lines_parse_as_spark_reads_them() {
        assert_eq!(parse_line("1 1:0.5 3:2"), Some((1.0, vec![(0, 0.5), (2, 2.0)])));
        assert_eq!(parse_line("0"), Some((0.0, vec![])));
        assert_eq!(parse_line("1 0:1"), None, "indices start at 1");
        assert_eq!(parse_line("1 3:1 2:1"), None, "indices ascend");
    }
}
