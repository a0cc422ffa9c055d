//! `ml_row_uniform(seed, col, ...)`: a uniform number in `[0, 1)` drawn from a row's values, the key that
//! `random_split` cuts on.

use std::sync::{Arc, LazyLock};

use datafusion::arrow::array::{ArrayRef, Float64Array};
use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::row::{RowConverter, SortField};
use datafusion::common::plan_err;
use datafusion::error::Result;
use datafusion::logical_expr::{
    ColumnarValue, Documentation, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use hearth_common::params::splitmix64;

use crate::udf::ML_DOC_SECTION;
use crate::udf::args::{as_usize, constant};

/// The SQL name.
pub const NAME: &str = "ml_row_uniform";

/// Hashes each row's values (Arrow's row encoding, then SplitMix64 over its bytes, seeded) to a number in
/// `[0, 1)`. The same row and seed give the same number on every machine and under any partitioning; rows
/// with equal values draw equal numbers.
///
/// ```sql
/// SELECT * FROM credit WHERE ml_row_uniform(42, duration, purpose, age) < 0.8
/// ```
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct RowUniformUdf {
    signature: Signature,
}

impl Default for RowUniformUdf {
    fn default() -> Self {
        Self {
            signature: Signature::variadic_any(Volatility::Immutable),
        }
    }
}

/// A seeded 64-bit hash of a byte string.
fn hash_bytes(seed: u64, bytes: &[u8]) -> u64 {
    let mut h = splitmix64(seed);
    let mut chunks = bytes.chunks_exact(8);
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        h = splitmix64(h ^ u64::from_le_bytes(word));
    }
    let mut tail = [0u8; 8];
    tail[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
    splitmix64(h ^ u64::from_le_bytes(tail) ^ ((bytes.len() as u64) << 56))
}

/// `ml_row_uniform`, built once.
pub static ROW_UNIFORM: LazyLock<Arc<ScalarUDF>> =
    LazyLock::new(|| Arc::new(ScalarUDF::from(RowUniformUdf::default())));

/// The SQL documentation of `ml_row_uniform`.
static DOCS: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        ML_DOC_SECTION,
        "A number in `[0, 1)` drawn from each row's values, as a `Float64`: the values' Arrow row encoding hashed \
         by SplitMix64 with `seed`. It is the key `randomSplit` cuts the rows on. The same row and seed give the \
         same number on every machine and under any partitioning; rows with equal values draw equal numbers.",
        "ml_row_uniform(seed, col, ...)",
    )
    .with_argument("seed", "The seed, a non-negative integer constant.")
    .with_argument("col", "One or more columns, whose values are hashed together.")
    .with_sql_example("```sql\nSELECT * FROM credit WHERE ml_row_uniform(42, duration, purpose, age) < 0.8\n```")
    .build()
});

impl ScalarUDFImpl for RowUniformUdf {
    fn name(&self) -> &str {
        NAME
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        if arg_types.len() < 2 {
            return plan_err!("{NAME}: expects a seed and at least one column");
        }
        Ok(DataType::Float64)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let seed = as_usize(NAME, &constant(NAME, &args.args, 0, "seed")?, "seed")? as u64;
        let rows = args.number_rows;
        let columns: Vec<ArrayRef> = args.args[1..].iter().map(|c| c.to_array(rows)).collect::<Result<_>>()?;
        let converter = RowConverter::new(columns.iter().map(|c| SortField::new(c.data_type().clone())).collect())?;
        let encoded = converter.convert_columns(&columns)?;
        let draws: Float64Array = (0..rows)
            .map(|i| (hash_bytes(seed, encoded.row(i).as_ref()) >> 11) as f64 / (1u64 << 53) as f64)
            .map(Some)
            .collect();
        Ok(ColumnarValue::Array(Arc::new(draws)))
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(&DOCS)
    }
}
