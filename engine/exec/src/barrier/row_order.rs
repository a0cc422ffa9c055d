//! The order of a task's rows: by a hash of their values, the same in every process and run, so what a task
//! computes does not depend on the order its rows arrived in (nor ranks on which task got which partition).

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::compute::interleave_record_batch;
use datafusion::common::hash_utils::{RandomState, create_hashes};
use datafusion::error::{DataFusionError, Result};

/// A hash of each row's values, the same in every process and run: what orders ranks and a shard's rows.
pub fn row_hashes(batch: &RecordBatch) -> Result<Vec<u64>> {
    let mut hashes = vec![0u64; batch.num_rows()];
    create_hashes(batch.columns(), &RandomState::with_seed(0x6865_6172_7468), &mut hashes)?;
    Ok(hashes)
}

/// The `names` columns of each of `batches`, in that order; an error names a column a batch lacks.
///
/// ```
/// use std::sync::Arc;
/// use datafusion::arrow::array::{Int64Array, RecordBatch};
/// use hearth_exec::barrier::pick_columns;
///
/// let x = Arc::new(Int64Array::from(vec![1, 2]));
/// let batch = RecordBatch::try_from_iter([("x", x.clone() as _), ("y", x as _)]).unwrap();
/// assert_eq!(pick_columns(&[batch], &["y"]).unwrap()[0].schema().field(0).name(), "y");
/// ```
pub fn pick_columns(batches: &[RecordBatch], names: &[&str]) -> Result<Vec<RecordBatch>> {
    batches
        .iter()
        .map(|batch| {
            let picked = names
                .iter()
                .map(|&name| {
                    batch
                        .column_by_name(name)
                        .cloned()
                        .map(|column| (name, column))
                        .ok_or_else(|| DataFusionError::Execution(format!("column {name:?}: no such column")))
                })
                .collect::<Result<Vec<_>>>()?;
            Ok(RecordBatch::try_from_iter(picked)?)
        })
        .collect()
}

/// Where each of `batches`' rows goes in the canonical order, as `(batch, row)` pairs: sorted by a hash of the
/// row's values (all its columns), rows of equal hash in the order they arrived.
///
/// ```
/// use std::sync::Arc;
/// use datafusion::arrow::array::{Int64Array, RecordBatch};
/// use hearth_exec::barrier::canonical_positions;
///
/// let batch = |v: Vec<i64>| RecordBatch::try_from_iter([("x", Arc::new(Int64Array::from(v)) as _)]).unwrap();
/// let positions = canonical_positions(&[batch(vec![7, 8]), batch(vec![9])]).unwrap();
/// assert_eq!(positions.len(), 3);
/// ```
pub fn canonical_positions(batches: &[RecordBatch]) -> Result<Vec<(usize, usize)>> {
    let rows = batches.iter().map(RecordBatch::num_rows).sum();
    let mut keyed = Vec::with_capacity(rows);
    for (index, batch) in batches.iter().enumerate() {
        keyed.extend(
            row_hashes(batch)?
                .into_iter()
                .enumerate()
                .map(|(row, hash)| (hash, index, row)),
        );
    }
    keyed.sort_unstable();
    Ok(keyed.into_iter().map(|(_, batch, row)| (batch, row)).collect())
}

/// The `names` columns of `batches` in one batch (none without batches), rows sorted by a hash of their
/// values: a shard's rows in an order that does not depend on the order they arrived in.
///
/// ```
/// use std::sync::Arc;
/// use datafusion::arrow::array::{Int64Array, RecordBatch};
/// use hearth_exec::barrier::canonical_order;
///
/// let batch = |v: Vec<i64>| RecordBatch::try_from_iter([("x", Arc::new(Int64Array::from(v)) as _)]).unwrap();
/// let one = canonical_order(&[batch(vec![1, 2]), batch(vec![3])], &["x"]).unwrap().unwrap();
/// let other = canonical_order(&[batch(vec![3, 1]), batch(vec![2])], &["x"]).unwrap().unwrap();
/// assert_eq!(one, other);
/// ```
pub fn canonical_order(batches: &[RecordBatch], names: &[&str]) -> Result<Option<RecordBatch>> {
    let picked = pick_columns(batches, names)?;
    let Some(first) = picked.first() else {
        return Ok(None);
    };
    let positions = canonical_positions(&picked)?;
    if positions.is_empty() {
        return Ok(Some(RecordBatch::new_empty(first.schema())));
    }
    let picked: Vec<&RecordBatch> = picked.iter().collect();
    Ok(Some(interleave_record_batch(&picked, &positions)?))
}
