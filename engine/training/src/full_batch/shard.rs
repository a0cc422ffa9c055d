//! A task's rows as a solver's shard: gathered straight from the batches they arrived in, in the order of a
//! hash of their values, so a fit does not depend on the order the rows arrived in.

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Float32Array, Float64Array, RecordBatch};
use datafusion::arrow::buffer::NullBuffer;
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Float64Type};
use datafusion::error::{DataFusionError, Result};
use hearth_exec::barrier::{canonical_positions, pick_columns};
use hearth_exec::vector::vector_values;
use hearth_optim::glm::Shard;

/// One arrived batch's columns, ready to be gathered from.
struct Source {
    features: Float32Array,
    feature_nulls: Option<NullBuffer>,
    labels: Float64Array,
    weights: Option<Float64Array>,
}

/// The columns a shard is made of.
pub(super) struct ShardColumns<'a> {
    /// The vector column of features.
    pub(super) features_col: &'a str,
    /// The `Float64` label column.
    pub(super) label_col: &'a str,
    /// A `Float64` column of row weights.
    pub(super) weight_col: Option<&'a str>,
}

/// The task's rows as a shard, in the order of a hash of their values: features widened to `f64`, labels and
/// weights as given; a null is an error naming its column and row (counted in that order).
pub(super) fn shard_of(args: &ShardColumns<'_>, input: &[RecordBatch]) -> Result<Shard> {
    let mut names = vec![args.features_col, args.label_col];
    names.extend(args.weight_col);
    let picked = pick_columns(input, &names)?;
    let Some(first) = picked.first() else {
        return Ok(Shard::default());
    };
    let dim = match first.column(0).data_type() {
        DataType::FixedSizeList(_, dim) => *dim as usize,
        other => {
            return Err(DataFusionError::Execution(format!(
                "column {:?} is {other}, not a vector",
                args.features_col
            )));
        }
    };
    let sources = picked.iter().map(source).collect::<Result<Vec<_>>>()?;
    let positions = canonical_positions(&picked)?;
    let mut features = Vec::with_capacity(positions.len() * dim);
    let mut labels = Vec::with_capacity(positions.len());
    let mut weights = args.weight_col.map(|_| Vec::with_capacity(positions.len()));
    let null = |column: &str, row: usize| DataFusionError::Execution(format!("column {column:?}, row {row}: null"));
    for (row, &(batch, at)) in positions.iter().enumerate() {
        let source = &sources[batch];
        if source.feature_nulls.as_ref().is_some_and(|nulls| nulls.is_null(at)) {
            return Err(null(args.features_col, row));
        }
        if source.labels.is_null(at) {
            return Err(null(args.label_col, row));
        }
        let values = &source.features.values()[at * dim..(at + 1) * dim];
        features.extend(values.iter().map(|v| f64::from(*v)));
        labels.push(source.labels.value(at));
        if let (Some(weights), Some(given), Some(name)) = (&mut weights, &source.weights, args.weight_col) {
            if given.is_null(at) {
                return Err(null(name, row));
            }
            weights.push(given.value(at));
        }
    }
    Shard::new(dim, features, labels, weights).map_err(|e| DataFusionError::Execution(e.to_string()))
}

/// A batch of the picked columns (features, label, optional weight) as arrays to gather from.
fn source(batch: &RecordBatch) -> Result<Source> {
    let (features, feature_nulls) = vector_values(batch.column(0))?;
    let doubles = |column: &ArrayRef| -> Result<Float64Array> {
        Ok(cast(column, &DataType::Float64)?.as_primitive::<Float64Type>().clone())
    };
    Ok(Source {
        features,
        feature_nulls,
        labels: doubles(batch.column(1))?,
        weights: (batch.num_columns() > 2)
            .then(|| doubles(batch.column(2)))
            .transpose()?,
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::arrow::array::{ArrayRef, Float64Array, RecordBatch};

    use super::*;
    use hearth_exec::vector::vector_array;

    fn args(weight_col: Option<&str>) -> ShardColumns<'_> {
        ShardColumns {
            features_col: "features",
            label_col: "label",
            weight_col,
        }
    }

    /// Rows `(x, 2x)` with label `x` and weight `x + 1`, one batch per slice of `xs`.
    fn batches(slices: &[&[f32]]) -> Vec<RecordBatch> {
        slices
            .iter()
            .map(|xs| {
                let values = xs.iter().flat_map(|&x| [x, 2.0 * x]).collect();
                let features = vector_array(xs.len(), 2, values, None).unwrap();
                let labels: ArrayRef = Arc::new(Float64Array::from_iter_values(xs.iter().map(|&x| f64::from(x))));
                let weights: ArrayRef =
                    Arc::new(Float64Array::from_iter_values(xs.iter().map(|&x| f64::from(x) + 1.0)));
                RecordBatch::try_from_iter([("features", features), ("label", labels), ("weight", weights)]).unwrap()
            })
            .collect()
    }

    fn rows(shard: &Shard) -> Vec<(Vec<f64>, f64, f64)> {
        (0..shard.rows())
            .map(|i| (shard.row(i).to_vec(), shard.label(i), shard.weight(i)))
            .collect()
    }

    #[test]
    fn a_shard_does_not_depend_on_how_its_rows_arrived() {
        let one = shard_of(&args(Some("weight")), &batches(&[&[1.0, 2.0, 3.0], &[4.0]])).unwrap();
        let other = shard_of(&args(Some("weight")), &batches(&[&[4.0, 2.0], &[3.0], &[1.0]])).unwrap();
        assert_eq!(rows(&one), rows(&other));
        let (features, label, weight) = &rows(&one)[0];
        assert_eq!((features[1], *weight), (2.0 * label, label + 1.0));
        assert_eq!(shard_of(&args(None), &batches(&[&[1.0, 2.0]])).unwrap().rows(), 2);
    }

    #[test]
    fn a_null_label_names_its_column() {
        let mut input = batches(&[&[1.0, 2.0]]);
        let labels: ArrayRef = Arc::new(Float64Array::from(vec![Some(1.0), None]));
        input[0] = RecordBatch::try_from_iter([("features", input[0].column(0).clone()), ("label", labels)]).unwrap();
        let error = shard_of(&args(None), &input).unwrap_err().to_string();
        assert!(error.contains("column \"label\"") && error.contains("null"), "{error}");
    }
}
