//! k-means as SQL functions, the centers carried as a literal list: `ml_kmeans_assign` (a
//! `KMeansModel`'s prediction), `ml_kmeans_cost` (a row's distance to its nearest center, k-means||'s
//! sampling weight) and the aggregate `ml_kmeans_sums` (one pass of Lloyd's algorithm).

use std::mem::size_of;
use std::sync::{Arc, LazyLock};

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Float64Array, Int32Array};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Float64Type};
use datafusion::common::{ScalarValue, exec_err, plan_err};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, ColumnarValue, Documentation, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature, Volatility,
};
use hearth_exec::udf::ML_DOC_SECTION;
use hearth_exec::udf::args::{aggregate_constant, as_f64_list, as_string, constant};
use hearth_exec::vector::{vector_dim, vector_values};
use hearth_stats::clustering::{Centers, ClusterSums, DistanceMeasure};

/// What a scalar k-means function gives per row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PerRow {
    /// `ml_kmeans_assign(features, centers, measure)`: the nearest center's index (`Int32`).
    Assign,
    /// `ml_kmeans_cost(features, centers, measure)`: the distance to the nearest center (`Float64`).
    Cost,
}

/// `ml_kmeans_assign` / `ml_kmeans_cost`: each row's nearest of the centers (every center's slots one after
/// another), by `'euclidean'` (squared) or `'cosine'` distance. A null vector gives null.
///
/// ```sql
/// SELECT ml_kmeans_assign(features, [0.0, 0.0, 5.0, 5.0], 'euclidean') AS prediction FROM points
/// ```
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct KMeansRowUdf {
    per_row: PerRow,
    signature: Signature,
}

impl KMeansRowUdf {
    /// The function giving `per_row`.
    pub fn new(per_row: PerRow) -> Self {
        Self {
            per_row,
            signature: Signature::any(3, Volatility::Immutable),
        }
    }
}

/// `ml_kmeans_assign`, built once.
pub(crate) static KMEANS_ASSIGN: LazyLock<Arc<ScalarUDF>> =
    LazyLock::new(|| Arc::new(ScalarUDF::from(KMeansRowUdf::new(PerRow::Assign))));

/// `ml_kmeans_cost`, built once.
pub static KMEANS_COST: LazyLock<Arc<ScalarUDF>> =
    LazyLock::new(|| Arc::new(ScalarUDF::from(KMeansRowUdf::new(PerRow::Cost))));

/// `ml_kmeans_sums`, built once.
pub(crate) static KMEANS_SUMS: LazyLock<Arc<AggregateUDF>> =
    LazyLock::new(|| Arc::new(AggregateUDF::from(KMeansSumsUdaf::default())));

/// What the `centers` argument of the k-means functions holds.
const CENTERS: &str = "The centers, every center's slots one after another, a numeric list constant: at least one \
                       center, each as wide as the vectors.";

/// What the `measure` argument of the k-means functions holds.
const MEASURE: &str = "The distance, a string constant: `'euclidean'` (squared Euclidean) or `'cosine'`.";

/// The SQL documentation of `ml_kmeans_assign`.
static ASSIGN_DOCS: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        ML_DOC_SECTION,
        "`KMeansModel`'s prediction: the index of the center nearest each row's vector, the lowest index on a tie, \
         as an `Int32`. A null vector gives null.",
        "ml_kmeans_assign(features, centers, measure)",
    )
    .with_argument("features", "Each row's point, a vector (a `FixedSizeList` of numbers).")
    .with_argument("centers", CENTERS)
    .with_argument("measure", MEASURE)
    .with_sql_example(
        "```sql\nSELECT ml_kmeans_assign(features, [0.0, 0.0, 5.0, 5.0], 'euclidean') AS prediction FROM points\n```",
    )
    .build()
});

/// The SQL documentation of `ml_kmeans_cost`.
static COST_DOCS: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        ML_DOC_SECTION,
        "Each row's distance to its nearest center, as a `Float64`: the weight by which Spark's `k-means||` \
         initialisation of `KMeans` samples candidate centers. A null vector gives null.",
        "ml_kmeans_cost(features, centers, measure)",
    )
    .with_argument("features", "Each row's point, a vector (a `FixedSizeList` of numbers).")
    .with_argument("centers", CENTERS)
    .with_argument("measure", MEASURE)
    .with_sql_example(
        "```sql\nSELECT ml_kmeans_cost(features, [0.0, 0.0, 5.0, 5.0], 'euclidean') AS cost FROM points\n```",
    )
    .build()
});

/// The SQL documentation of `ml_kmeans_sums`.
static SUMS_DOCS: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        ML_DOC_SECTION,
        "One iteration of fitting `KMeans` (a pass of Lloyd's algorithm). Each row is assigned to its \
         nearest center; per center the aggregate sums the rows' weighted vectors, their weight and their count, \
         with the pass's weighted cost, and returns them as `Binary` bytes the fit reads its next centers from. A \
         null vector, a vector holding NaN or infinity, a null, negative, NaN or infinite weight, and under \
         `'cosine'` a zero vector fail the query naming the column.",
        "ml_kmeans_sums(features, weight, centers, measure)",
    )
    .with_argument("features", "Each row's point, a vector (a `FixedSizeList` of numbers).")
    .with_argument(
        "weight",
        "Each row's weight, a finite non-negative number (`1.0` weighs every row the same).",
    )
    .with_argument("centers", CENTERS)
    .with_argument("measure", MEASURE)
    .with_sql_example(
        "```sql\nSELECT ml_kmeans_sums(features, 1.0, [0.0, 0.0, 5.0, 5.0], 'euclidean') AS sums FROM points\n```",
    )
    .build()
});

/// The centers and measure of a call named `function` on vectors of `dim` slots.
fn read_centers(
    function: &str,
    dim: usize,
    centers: &ScalarValue,
    measure: &ScalarValue,
) -> Result<(Centers, DistanceMeasure)> {
    let values = as_f64_list(function, centers, "centers")?;
    let Some(centers) = Centers::new(dim, values).filter(|c| !c.is_empty()) else {
        return exec_err!("{function}: the centers must be whole vectors of {dim} slots, at least one");
    };
    let name = as_string(function, measure, "measure")?;
    let Some(measure) = DistanceMeasure::parse(&name) else {
        return exec_err!("{function}: measure must be 'euclidean' or 'cosine', got {name:?}");
    };
    Ok((centers, measure))
}

/// The dimension of a vector argument, or a planning error naming `function`.
fn vector_argument(function: &str, data_type: &DataType) -> Result<usize> {
    match vector_dim(data_type) {
        Some(dim) => Ok(dim),
        None => plan_err!("{function}: the first argument must be a vector, got {data_type}"),
    }
}

impl ScalarUDFImpl for KMeansRowUdf {
    fn name(&self) -> &str {
        match self.per_row {
            PerRow::Assign => "ml_kmeans_assign",
            PerRow::Cost => "ml_kmeans_cost",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        vector_argument(self.name(), &arg_types[0])?;
        Ok(match self.per_row {
            PerRow::Assign => DataType::Int32,
            PerRow::Cost => DataType::Float64,
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let name = self.name();
        let input = args.args[0].to_array(args.number_rows)?;
        let dim = vector_argument(name, input.data_type())?;
        let (centers, measure) = read_centers(
            name,
            dim,
            &constant(name, &args.args, 1, "centers")?,
            &constant(name, &args.args, 2, "measure")?,
        )?;
        let (values, nulls) = vector_values(&input)?;
        let mut point = vec![0.0; dim];
        let nearest: Vec<(usize, f64)> = (0..input.len())
            .map(|row| {
                for (slot, value) in point.iter_mut().zip(&values.values()[row * dim..(row + 1) * dim]) {
                    *slot = f64::from(*value);
                }
                measure.closest(&centers, &point)
            })
            .collect();
        let array: ArrayRef = match self.per_row {
            PerRow::Assign => Arc::new(Int32Array::new(
                nearest.iter().map(|(index, _)| *index as i32).collect(),
                nulls,
            )),
            PerRow::Cost => Arc::new(Float64Array::new(nearest.iter().map(|(_, d)| *d).collect(), nulls)),
        };
        Ok(ColumnarValue::Array(array))
    }

    fn documentation(&self) -> Option<&Documentation> {
        let docs: &LazyLock<Documentation> = match self.per_row {
            PerRow::Assign => &ASSIGN_DOCS,
            PerRow::Cost => &COST_DOCS,
        };
        Some(docs)
    }
}

/// `ml_kmeans_sums(features, weight, centers, measure)`: one pass of Lloyd's algorithm — each row assigned
/// to its nearest center, per center the weighted sum of its rows, their weight and count, and the pass's
/// weighted cost — as the bytes of a [`ClusterSums`]. `centers` and `measure` must be constants. Null
/// vectors, negative or NaN weights, and (for cosine) zero vectors are errors naming the column.
///
/// ```sql
/// SELECT ml_kmeans_sums(features, 1.0, [0.0, 0.0, 5.0, 5.0], 'euclidean') FROM points
/// ```
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct KMeansSumsUdaf {
    signature: Signature,
}

impl Default for KMeansSumsUdaf {
    fn default() -> Self {
        Self {
            signature: Signature::any(4, Volatility::Immutable),
        }
    }
}

const SUMS: &str = "ml_kmeans_sums";

impl AggregateUDFImpl for KMeansSumsUdaf {
    fn name(&self) -> &str {
        SUMS
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        vector_argument(SUMS, &arg_types[0])?;
        Ok(DataType::Binary)
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(vec![Arc::new(Field::new(
            format!("{}[sums]", args.name),
            DataType::Binary,
            true,
        ))])
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let dim = vector_argument(SUMS, args.expr_fields[0].data_type())?;
        let (centers, measure) = read_centers(
            SUMS,
            dim,
            aggregate_constant(SUMS, &args, 2, "centers")?,
            aggregate_constant(SUMS, &args, 3, "measure")?,
        )?;
        Ok(Box::new(SumsAccumulator {
            sums: ClusterSums::new(centers.len(), dim),
            features: args.expr_fields[0].name().clone(),
            weight: args.expr_fields[1].name().clone(),
            centers,
            measure,
            dim,
            pending: Vec::new(),
        }))
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(&SUMS_DOCS)
    }
}

#[derive(Debug)]
struct SumsAccumulator {
    centers: Centers,
    measure: DistanceMeasure,
    dim: usize,
    features: String,
    weight: String,
    sums: ClusterSums,
    /// Partial states merged in, kept until the result is read (see `settle`).
    pending: Vec<Vec<u8>>,
}

impl SumsAccumulator {
    /// Merges the partial states received so far in one order of their own (their bytes'), whatever order
    /// the partitions finished in: floating-point sums then come out the same on every run.
    fn settle(&mut self) -> Result<()> {
        let mut pending = std::mem::take(&mut self.pending);
        pending.sort_unstable();
        for bytes in pending {
            let other =
                ClusterSums::from_bytes(&bytes).map_err(|e| DataFusionError::Execution(format!("{SUMS}: {e}")))?;
            self.sums
                .merge(&other)
                .map_err(|e| DataFusionError::Execution(format!("{SUMS}: {e}")))?;
        }
        Ok(())
    }

    fn weights(&self, array: &ArrayRef) -> Result<Vec<f64>> {
        let doubles = cast(array, &DataType::Float64).map_err(|e| {
            DataFusionError::Execution(format!(
                "{SUMS}: weight column {:?} must be numeric, got {} ({e})",
                self.weight,
                array.data_type()
            ))
        })?;
        let doubles = doubles.as_primitive::<Float64Type>();
        if doubles.null_count() > 0 {
            return exec_err!("{SUMS}: weight column {:?} holds a null", self.weight);
        }
        if let Some(bad) = doubles
            .values()
            .iter()
            .find(|w| w.is_nan() || **w < 0.0 || w.is_infinite())
        {
            return exec_err!(
                "{SUMS}: weight column {:?} holds {bad}; weights must be finite and not negative",
                self.weight
            );
        }
        Ok(doubles.values().to_vec())
    }
}

impl Accumulator for SumsAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let (points, nulls) = vector_values(&values[0])?;
        if nulls.as_ref().is_some_and(|n| n.null_count() > 0) {
            return exec_err!(
                "{SUMS}: column {:?} holds a null vector; k-means needs every row's features (filter or impute them)",
                self.features
            );
        }
        let weights = self.weights(&values[1])?;
        let mut point = vec![0.0; self.dim];
        for (row, weight) in weights.iter().enumerate() {
            for (slot, value) in point
                .iter_mut()
                .zip(&points.values()[row * self.dim..(row + 1) * self.dim])
            {
                *slot = f64::from(*value);
            }
            if point.iter().any(|x| !x.is_finite()) {
                return exec_err!(
                    "{SUMS}: column {:?} holds a vector with NaN or infinity: {point:?}",
                    self.features
                );
            }
            if self.measure == DistanceMeasure::Cosine && point.iter().all(|x| *x == 0.0) {
                return exec_err!(
                    "{SUMS}: column {:?} holds a zero vector; the cosine distance needs non-zero vectors",
                    self.features
                );
            }
            self.sums.add(self.measure, &self.centers, &point, *weight);
        }
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let states = states[0].as_binary::<i32>();
        for row in 0..states.len() {
            if states.is_valid(row) {
                self.pending.push(states.value(row).to_vec());
            }
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        self.settle()?;
        Ok(vec![ScalarValue::Binary(Some(self.sums.to_bytes()))])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        self.settle()?;
        Ok(ScalarValue::Binary(Some(self.sums.to_bytes())))
    }

    fn size(&self) -> usize {
        let pending: usize = self.pending.iter().map(Vec::len).sum();
        size_of::<Self>() + self.sums.encoded_len() + 16 * self.centers.values().len() + pending
    }
}
