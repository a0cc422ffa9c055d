//! `ml_vector_summary(vector)`: count, mean and sample standard deviation of each vector slot, the aggregate a
//! `StandardScaler` is fitted with.

use std::mem::size_of;
use std::sync::{Arc, LazyLock};

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Float64Array, Int64Array};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Fields, Float64Type, Int64Type};
use datafusion::common::cast::as_list_array;
use datafusion::common::{ScalarValue, exec_err, plan_err};
use datafusion::error::Result;
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{Accumulator, AggregateUDF, AggregateUDFImpl, Documentation, Signature, Volatility};
use hearth_exec::udf::ML_DOC_SECTION;
use hearth_exec::udf::args::keeps_invalid;
use hearth_exec::udf::list_state::{list_scalar, list_type, struct_scalar};
use hearth_exec::vector::{vector_dim, vector_values};

use crate::feature::vector_assembler::assembly::{Columns, SlotMoments, argument_fields, assembled_dim};

/// The SQL name.
pub const NAME: &str = "ml_vector_summary";

/// The SQL name of the form over the columns a vector is assembled from.
pub const ASSEMBLED: &str = "ml_assembled_summary";

/// Per-slot statistics of a vector column, accumulated in `f64` and merged with Chan's parallel formulas:
/// `{count, mean: [..], std: [..]}`, where `std` is the corrected sample deviation (divisor `n − 1`, 0 when
/// `n ≤ 1`), as Spark's `Summarizer`. Null vectors are not counted.
///
/// Two forms: `ml_vector_summary(vector)`, and `ml_assembled_summary(handle_invalid, col, ...)`, the summary
/// of `ml_vector_assemble(handle_invalid, col, ...)` taken from the columns themselves without building the
/// vectors, in `f64` from the columns' values as Spark (no `f32` rounding first): what `StandardScaler` uses
/// when it is fitted right after a `VectorAssembler`.
///
/// ```sql
/// SELECT ml_vector_summary(features) FROM assembled;
/// SELECT ml_assembled_summary('error', duration, credit_amount, age) FROM credit
/// ```
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct VectorSummaryUdaf {
    assembled: bool,
    signature: Signature,
}

impl VectorSummaryUdaf {
    /// `ml_vector_summary(vector)`.
    pub fn of_vectors() -> Self {
        Self {
            assembled: false,
            signature: Signature::any(1, Volatility::Immutable),
        }
    }

    /// `ml_assembled_summary(handle_invalid, col, ...)`.
    pub fn of_assembled_columns() -> Self {
        Self {
            assembled: true,
            signature: Signature::variadic_any(Volatility::Immutable),
        }
    }

    /// The vector dimension the argument types summarise.
    fn dim(&self, arg_types: &[DataType]) -> Result<usize> {
        if self.assembled {
            if arg_types.len() < 2 {
                return plan_err!("{ASSEMBLED}: expects handle_invalid and at least one column");
            }
            return assembled_dim(ASSEMBLED, &argument_fields(&arg_types[1..]));
        }
        match vector_dim(&arg_types[0]) {
            Some(dim) => Ok(dim),
            None => plan_err!("StandardScaler: input must be a vector column, got {}", arg_types[0]),
        }
    }
}

fn output_fields() -> Fields {
    Fields::from(vec![
        Field::new("count", DataType::Int64, false),
        Field::new("mean", list_type(DataType::Float64), true),
        Field::new("std", list_type(DataType::Float64), true),
    ])
}

/// `ml_vector_summary`, built once.
pub(crate) static VECTOR_SUMMARY: LazyLock<Arc<AggregateUDF>> =
    LazyLock::new(|| Arc::new(AggregateUDF::from(VectorSummaryUdaf::of_vectors())));

/// `ml_assembled_summary`, built once.
pub(crate) static ASSEMBLED_SUMMARY: LazyLock<Arc<AggregateUDF>> =
    LazyLock::new(|| Arc::new(AggregateUDF::from(VectorSummaryUdaf::of_assembled_columns())));

/// The SQL documentation of `ml_vector_summary`.
static VECTOR_SUMMARY_DOCS: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        ML_DOC_SECTION,
        "The count of non-null vectors and each slot's mean and corrected sample standard deviation \
         (divisor `n − 1`, 0 when `n ≤ 1`), accumulated in `f64` as Spark's `Summarizer`: what `StandardScaler` is \
         fitted with. Returns a struct `{count: Int64, mean: List<Float64>, std: List<Float64>}`; null vectors are \
         not counted.",
        "ml_vector_summary(vector)",
    )
    .with_argument("vector", "The vectors to summarise (a `FixedSizeList` of numbers).")
    .with_sql_example("```sql\nSELECT ml_vector_summary(features) AS summary FROM assembled\n```")
    .build()
});

/// The SQL documentation of `ml_assembled_summary`.
static ASSEMBLED_SUMMARY_DOCS: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        ML_DOC_SECTION,
        "`ml_vector_summary` of `ml_vector_assemble(handle_invalid, col, ...)`, taken from the columns \
         themselves without building the vectors (a number or boolean column in `f64`, with no `f32` rounding \
         first, as Spark; a vector column's `f32` values as they are): what \
         `StandardScaler` is fitted with right after a `VectorAssembler`. Returns a struct \
         `{count: Int64, mean: List<Float64>, std: List<Float64>}`; `handle_invalid` treats nulls and NaN as \
         `ml_vector_assemble` does.",
        "ml_assembled_summary(handle_invalid, col, ...)",
    )
    .with_argument(
        "handle_invalid",
        "What nulls and NaN do, a string constant: `'error'`, `'keep'` or `'skip'` (as `'keep'`).",
    )
    .with_argument(
        "col",
        "One or more numeric, boolean or vector columns; a number or boolean fills one slot, a vector its width.",
    )
    .with_sql_example(
        "```sql\nSELECT ml_assembled_summary('error', duration, credit_amount, age) AS summary FROM credit\n```",
    )
    .build()
});

impl AggregateUDFImpl for VectorSummaryUdaf {
    fn name(&self) -> &str {
        if self.assembled { ASSEMBLED } else { NAME }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.dim(arg_types)?;
        Ok(DataType::Struct(output_fields()))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(vec![
            Arc::new(Field::new(format!("{}[count]", args.name), DataType::Int64, true)),
            Arc::new(Field::new(
                format!("{}[mean]", args.name),
                list_type(DataType::Float64),
                true,
            )),
            Arc::new(Field::new(
                format!("{}[m2]", args.name),
                list_type(DataType::Float64),
                true,
            )),
        ])
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let types: Vec<DataType> = args.expr_fields.iter().map(|f| f.data_type().clone()).collect();
        let mut moments = Moments::new(self.dim(&types)?);
        if self.assembled {
            moments.assembled_from = Some(args.expr_fields[1..].to_vec());
        }
        Ok(Box::new(moments))
    }

    fn documentation(&self) -> Option<&Documentation> {
        let docs: &LazyLock<Documentation> = if self.assembled {
            &ASSEMBLED_SUMMARY_DOCS
        } else {
            &VECTOR_SUMMARY_DOCS
        };
        Some(docs)
    }
}

/// Count, mean and sum of squared deviations per slot.
#[derive(Debug)]
struct Moments {
    count: i64,
    mean: Vec<f64>,
    m2: Vec<f64>,
    /// The columns after `handle_invalid`, in the assembled form.
    assembled_from: Option<Vec<FieldRef>>,
}

impl Moments {
    fn new(dim: usize) -> Self {
        Self {
            count: 0,
            mean: vec![0.0; dim],
            m2: vec![0.0; dim],
            assembled_from: None,
        }
    }

    /// The moments of one batch of input.
    fn of_batch(&self, values: &[ArrayRef]) -> Result<SlotMoments> {
        let rows = values.first().map_or(0, Array::len);
        if let Some(fields) = &self.assembled_from {
            if rows == 0 {
                return Ok(SlotMoments::default());
            }
            let keep = keeps_invalid(ASSEMBLED, &ScalarValue::try_from_array(&values[0], 0)?)?;
            return Columns::read(&values[1..], fields, keep)?.moments();
        }
        let dim = self.mean.len();
        let (vectors, nulls) = vector_values(&values[0])?;
        let nulls = nulls.filter(|n| n.null_count() > 0);
        let mut moments = match &nulls {
            None => SlotMoments::of_values(vectors.values(), dim),
            Some(nulls) => {
                let valid_rows = vectors
                    .values()
                    .chunks_exact(dim.max(1))
                    .enumerate()
                    .filter(|(i, _)| nulls.is_valid(*i))
                    .map(|(_, row)| row);
                SlotMoments::of_rows(valid_rows, dim)
            }
        };
        // Counted from the rows, not from their values: an empty (0-slot) vector is a row too.
        moments.count = (rows - nulls.map_or(0, |n| n.null_count())) as i64;
        Ok(moments)
    }

    /// Chan et al.'s merge of another partial result into this one.
    fn merge(&mut self, count: i64, mean: &[f64], m2: &[f64]) -> Result<()> {
        if count == 0 {
            return Ok(());
        }
        if mean.len() != self.mean.len() || m2.len() != self.m2.len() {
            return exec_err!(
                "{NAME}: partial state has {} slots, expected {}",
                mean.len(),
                self.mean.len()
            );
        }
        let total = self.count + count;
        let (na, nb, n) = (self.count as f64, count as f64, total as f64);
        for j in 0..self.mean.len() {
            let delta = mean[j] - self.mean[j];
            self.mean[j] += delta * nb / n;
            self.m2[j] += m2[j] + delta * delta * na * nb / n;
        }
        self.count = total;
        Ok(())
    }

    fn std(&self) -> Vec<f64> {
        let denominator = self.count as f64 - 1.0;
        self.m2
            .iter()
            .map(|&m2| {
                // As Scala's `math.max(v, 0.0)`: clamps negatives, keeps NaN (Rust's `f64::max` would drop it).
                let variance = if denominator > 0.0 { m2 / denominator } else { 0.0 };
                if variance < 0.0 { 0.0 } else { variance.sqrt() }
            })
            .collect()
    }
}

impl Accumulator for Moments {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let batch = self.of_batch(values)?;
        self.merge(batch.count, &batch.mean, &batch.m2)
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let counts = states[0].as_primitive::<Int64Type>();
        let means = as_list_array(&states[1])?;
        let m2s = as_list_array(&states[2])?;
        for row in 0..counts.len() {
            if counts.is_null(row) || means.is_null(row) || m2s.is_null(row) {
                continue;
            }
            let mean = means.value(row);
            let m2 = m2s.value(row);
            self.merge(
                counts.value(row),
                mean.as_primitive::<Float64Type>().values(),
                m2.as_primitive::<Float64Type>().values(),
            )?;
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![
            ScalarValue::Int64(Some(self.count)),
            list_scalar(Arc::new(Float64Array::from(self.mean.clone())))?,
            list_scalar(Arc::new(Float64Array::from(self.m2.clone())))?,
        ])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let count: ArrayRef = Arc::new(Int64Array::from(vec![self.count]));
        let mean = list_scalar(Arc::new(Float64Array::from(self.mean.clone())))?.to_array()?;
        let std = list_scalar(Arc::new(Float64Array::from(self.std())))?.to_array()?;
        struct_scalar(output_fields(), vec![count, mean, std])
    }

    fn size(&self) -> usize {
        size_of::<Self>() + (self.mean.capacity() + self.m2.capacity()) * size_of::<f64>()
    }
}
