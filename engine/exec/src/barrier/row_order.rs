//! The order of a task's rows: by a hash of their values, the same in every process and run, so what a task
//! computes does not depend on the order its rows arrived in (nor ranks on which task got which partition).

use datafusion::arrow::array::{RecordBatch, UInt32Array};
use datafusion::arrow::compute::{concat_batches, take_record_batch};
use datafusion::common::hash_utils::{RandomState, create_hashes};
use datafusion::error::{DataFusionError, Result};

/// A hash of each row's values, the same in every process and run: what orders ranks and a shard's rows.
pub fn row_hashes(batch: &RecordBatch) -> Result<Vec<u64>> {
    let mut hashes = vec![0u64; batch.num_rows()];
    create_hashes(batch.columns(), &RandomState::with_seed(0x6865_6172_7468), &mut hashes)?;
    Ok(hashes)
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
    let mut columns = Vec::with_capacity(batches.len());
    for batch in batches {
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
        columns.push(RecordBatch::try_from_iter(picked)?);
    }
    let Some(first) = columns.first() else {
        return Ok(None);
    };
    let all = concat_batches(&first.schema(), &columns)?;
    let hashes = row_hashes(&all)?;
    let mut order: Vec<u32> = (0..all.num_rows() as u32).collect();
    order.sort_by_key(|&i| hashes[i as usize]);
    Ok(Some(take_record_batch(&all, &UInt32Array::from(order))?))
}
