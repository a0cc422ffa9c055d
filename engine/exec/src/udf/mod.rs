//! What hearth's SQL functions share: reading the constant arguments that carry fitted state, and building
//! the list and struct values aggregates keep as state.

pub mod args;
pub mod list_state;

use datafusion::arrow::array::{Array, AsArray};
use datafusion::logical_expr::DocSection;
use datafusion::prelude::DataFrame;

/// The section hearth's `ml_` functions' documentation is filed under (DataFusion's `documentation()` of a
/// function): the transforms of fitted stages, the aggregates that fit them, and the evaluation aggregates with
/// the functions that read their states.
pub const ML_DOC_SECTION: DocSection = DocSection {
    include: true,
    label: "hearth ML functions",
    description: Some(
        "Spark MLlib's feature stages, models and evaluators as SQL functions. A fitted stage or model \
         transforms with a scalar function whose fitted state is a literal argument; fitting a stage is an \
         aggregate; an evaluation is an aggregate whose state the metric functions read.",
    ),
};

/// Runs a one-row aggregate whose single column is a state's bytes (`ml_*_state`, `ml_kmeans_sums`, …) and
/// returns them; no rows (or a null) gives no bytes, the empty state.
pub async fn aggregate_bytes(query: DataFrame) -> crate::error::Result<Vec<u8>> {
    let batches = query.collect().await?;
    Ok(batches
        .iter()
        .find(|b| b.num_rows() > 0)
        .map(|b| b.column(0).as_binary::<i32>())
        .filter(|s| s.is_valid(0))
        .map(|s| s.value(0).to_vec())
        .unwrap_or_default())
}
