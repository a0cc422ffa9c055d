//! `ml_multiclass_state`, `ml_binary_state`, `ml_regression_state`: the aggregates evaluators run. Each
//! returns the merged evaluation state as bytes; the evaluator reads its metrics from them.

use std::mem::size_of;
use std::sync::{Arc, LazyLock};

use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Float64Type};
use datafusion::common::{ScalarValue, exec_err};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, Documentation, Expr, Signature, Volatility,
};
use hearth_exec::udf::ML_DOC_SECTION;
use hearth_exec::vector::{list_as_vector, vector_dim, vector_values};
use hearth_stats::evaluation::{BinaryState, ClusteringState, MulticlassState, RegressionState};

/// Which evaluation an aggregate accumulates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Evaluation {
    /// `ml_multiclass_state(label, prediction, weight[, probability])`: confusion counts and log-loss.
    Multiclass,
    /// `ml_binary_state(score, label, weight)`: weight per distinct score; the score is a number or a vector
    /// whose second slot (the positive class) is taken, as Spark's `rawPrediction`.
    Binary,
    /// `ml_regression_state(label, prediction, weight)`: weighted sums of errors.
    Regression,
    /// `ml_clustering_state(prediction, label, weight)`: weight per (cluster, label) pair, for the clustering
    /// accuracy; both must be whole numbers.
    Clustering,
}

impl Evaluation {
    /// The SQL name.
    pub fn name(self) -> &'static str {
        match self {
            Evaluation::Multiclass => "ml_multiclass_state",
            Evaluation::Binary => "ml_binary_state",
            Evaluation::Regression => "ml_regression_state",
            Evaluation::Clustering => "ml_clustering_state",
        }
    }
}

/// The aggregate of an [`Evaluation`]: rows in, the merged state's bytes out.
///
/// ```sql
/// SELECT ml_multiclass_state(label, prediction, 1.0) FROM scored
/// ```
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct EvaluationStateUdaf {
    evaluation: Evaluation,
    signature: Signature,
}

impl EvaluationStateUdaf {
    /// The aggregate for `evaluation`.
    pub fn new(evaluation: Evaluation) -> Self {
        let signature = match evaluation {
            Evaluation::Multiclass => Signature::one_of(
                vec![
                    datafusion::logical_expr::TypeSignature::Any(3),
                    datafusion::logical_expr::TypeSignature::Any(4),
                ],
                Volatility::Immutable,
            ),
            _ => Signature::any(3, Volatility::Immutable),
        };
        Self { evaluation, signature }
    }
}

/// The evaluation aggregates (multiclass, binary, regression, clustering), built once.
pub(crate) static EVALUATION_STATES: LazyLock<[Arc<AggregateUDF>; 4]> = LazyLock::new(|| {
    [
        Evaluation::Multiclass,
        Evaluation::Binary,
        Evaluation::Regression,
        Evaluation::Clustering,
    ]
    .map(|evaluation| Arc::new(AggregateUDF::from(EvaluationStateUdaf::new(evaluation))))
});

/// The SQL documentation of `ml_multiclass_state`.
static MULTICLASS_DOCS: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        ML_DOC_SECTION,
        "The state of Spark's `MulticlassClassificationEvaluator` over the rows, the weight of each \
         (label, prediction) pair and, with a probability column, the log-loss, as `Binary` bytes that \
         `ml_metric('multiclass', ...)` and `ml_confusion` read. A null or NaN label, prediction or weight, a negative \
         weight, or a label with no slot in the probability vector fails the query naming the column and the \
         row's place in its batch; the probabilities themselves are not checked.",
        "ml_multiclass_state(label, prediction, weight[, probability])",
    )
    .with_argument("label", "Each row's true class index, a numeric column.")
    .with_argument("prediction", "Each row's predicted class index, a numeric column.")
    .with_argument(
        "weight",
        "Each row's weight, a non-negative number (`1.0` weighs every row the same).",
    )
    .with_argument(
        "probability",
        "Optional: each row's probability vector (a `FixedSizeList` of numbers, or a `List<Float64>` whose rows are \
         equally long); the slot of the row's label gives its log-loss term. The `logLoss` metric needs it.",
    )
    .with_sql_example("```sql\nSELECT ml_multiclass_state(label, prediction, 1.0) AS state FROM scored\n```")
    .build()
});

/// The SQL documentation of `ml_binary_state`.
static BINARY_DOCS: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        ML_DOC_SECTION,
        "The state of Spark's `BinaryClassificationEvaluator` over the rows, the weight of positive \
         and negative rows at each distinct score, as `Binary` bytes that `ml_metric('binary', ...)` and \
         `ml_roc_curve` read. A null or NaN value or a negative weight fails the query naming the column and the row's place in its \
         batch.",
        "ml_binary_state(score, label, weight)",
    )
    .with_argument(
        "score",
        "Each row's score for the positive class: a number, or a vector (a `FixedSizeList` of numbers, or a \
         `List<Float64>` whose rows are equally long) whose second slot is taken (its only slot when it has one), as Spark reads \
         `rawPrediction`.",
    )
    .with_argument(
        "label",
        "Each row's true label, a number; positive when above 0.5, as in Spark.",
    )
    .with_argument(
        "weight",
        "Each row's weight, a non-negative number (`1.0` weighs every row the same).",
    )
    .with_sql_example("```sql\nSELECT ml_binary_state(\"rawPrediction\", label, 1.0) AS state FROM scored\n```")
    .build()
});

/// The SQL documentation of `ml_regression_state`.
static REGRESSION_DOCS: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        ML_DOC_SECTION,
        "The state of Spark's `RegressionEvaluator` over the rows, the weighted sums of the labels, \
         the predictions, their squares and the errors, as `Binary` bytes that `ml_metric('regression', ...)` reads. \
         A null or NaN value or a negative weight fails the query naming the column and the row's place in its \
         batch.",
        "ml_regression_state(label, prediction, weight)",
    )
    .with_argument("label", "Each row's true value, a numeric column.")
    .with_argument("prediction", "Each row's predicted value, a numeric column.")
    .with_argument(
        "weight",
        "Each row's weight, a non-negative number (`1.0` weighs every row the same).",
    )
    .with_sql_example("```sql\nSELECT ml_regression_state(label, prediction, 1.0) AS state FROM scored\n```")
    .build()
});

/// The SQL documentation of `ml_clustering_state`.
static CLUSTERING_DOCS: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        ML_DOC_SECTION,
        "The weight of each (cluster, label) pair over the rows, as `Binary` bytes; the state of \
         `ClusteringEvaluator`'s `clusterAccuracy` (hearth's metric: the share of rows whose cluster maps to their \
         label under the best one-to-one matching). A null, NaN or fractional cluster or label, or a negative \
         weight, fails the query naming the column.",
        "ml_clustering_state(prediction, label, weight)",
    )
    .with_argument("prediction", "Each row's cluster, a whole number.")
    .with_argument("label", "Each row's true class, a whole number.")
    .with_argument(
        "weight",
        "Each row's weight, a non-negative number (`1.0` weighs every row the same).",
    )
    .with_sql_example("```sql\nSELECT ml_clustering_state(prediction, label, 1.0) AS state FROM clustered\n```")
    .build()
});

/// The evaluation aggregate `ml_*_state(args...)`.
pub fn evaluation_state(evaluation: Evaluation, args: Vec<Expr>) -> Expr {
    let index = match evaluation {
        Evaluation::Multiclass => 0,
        Evaluation::Binary => 1,
        Evaluation::Regression => 2,
        Evaluation::Clustering => 3,
    };
    EVALUATION_STATES[index].call(args)
}

impl AggregateUDFImpl for EvaluationStateUdaf {
    fn name(&self) -> &str {
        self.evaluation.name()
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Binary)
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(vec![Arc::new(Field::new(
            format!("{}[state]", args.name),
            DataType::Binary,
            true,
        ))])
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let columns: Vec<String> = args.expr_fields.iter().map(|f| f.name().clone()).collect();
        Ok(Box::new(StateAccumulator {
            evaluation: self.evaluation,
            columns,
            state: State::new(self.evaluation),
        }))
    }

    fn documentation(&self) -> Option<&Documentation> {
        let docs: &LazyLock<Documentation> = match self.evaluation {
            Evaluation::Multiclass => &MULTICLASS_DOCS,
            Evaluation::Binary => &BINARY_DOCS,
            Evaluation::Regression => &REGRESSION_DOCS,
            Evaluation::Clustering => &CLUSTERING_DOCS,
        };
        Some(docs)
    }
}

#[derive(Debug)]
enum State {
    Multiclass(MulticlassState),
    Binary(BinaryState),
    Regression(RegressionState),
    Clustering(ClusteringState),
}

impl State {
    fn new(evaluation: Evaluation) -> Self {
        match evaluation {
            Evaluation::Multiclass => State::Multiclass(MulticlassState::default()),
            Evaluation::Binary => State::Binary(BinaryState::default()),
            Evaluation::Regression => State::Regression(RegressionState::default()),
            Evaluation::Clustering => State::Clustering(ClusteringState::default()),
        }
    }

    fn to_bytes(&self) -> Vec<u8> {
        match self {
            State::Multiclass(s) => s.to_bytes(),
            State::Binary(s) => s.to_bytes(),
            State::Regression(s) => s.to_bytes(),
            State::Clustering(s) => s.to_bytes(),
        }
    }

    fn merge_bytes(&mut self, bytes: &[u8]) -> Result<()> {
        let error = |e: hearth_stats::evaluation::StateDecodeError| DataFusionError::Execution(e.to_string());
        match self {
            State::Multiclass(s) => s.merge(&MulticlassState::from_bytes(bytes).map_err(error)?),
            State::Binary(s) => s.merge(&BinaryState::from_bytes(bytes).map_err(error)?),
            State::Regression(s) => s.merge(&RegressionState::from_bytes(bytes).map_err(error)?),
            State::Clustering(s) => s.merge(&ClusteringState::from_bytes(bytes).map_err(error)?),
        }
        Ok(())
    }
}

#[derive(Debug)]
struct StateAccumulator {
    evaluation: Evaluation,
    columns: Vec<String>,
    state: State,
}

impl StateAccumulator {
    /// Argument `index` as `f64` values, refusing nulls and NaN with the column and row.
    fn numbers(&self, values: &[ArrayRef], index: usize) -> Result<Vec<f64>> {
        let column = &self.columns[index];
        let array = &values[index];
        let numbers = if vector_dim(array.data_type()).is_some() {
            // A score vector: its positive-class slot (the second), or its only slot.
            let dim = vector_dim(array.data_type()).unwrap_or(1);
            let (flat, nulls) = vector_values(array)?;
            if let Some(row) = nulls.as_ref().and_then(|n| (0..n.len()).find(|&i| n.is_null(i))) {
                return exec_err!("{}: column {column:?} is null at row {row}", self.evaluation.name());
            }
            let slot = if dim >= 2 { 1 } else { 0 };
            flat.values()
                .chunks_exact(dim.max(1))
                .map(|row| f64::from(row[slot]))
                .collect()
        } else {
            let cast = cast(array, &DataType::Float64).map_err(|e| {
                DataFusionError::Execution(format!(
                    "{}: column {column:?} must be numeric, got {} ({e})",
                    self.evaluation.name(),
                    array.data_type()
                ))
            })?;
            let doubles = cast.as_primitive::<Float64Type>();
            if let Some(row) = (0..doubles.len()).find(|&i| doubles.is_null(i)) {
                return exec_err!("{}: column {column:?} is null at row {row}", self.evaluation.name());
            }
            doubles.values().to_vec()
        };
        if let Some(row) = numbers.iter().position(|v| v.is_nan()) {
            return exec_err!("{}: column {column:?} is NaN at row {row}", self.evaluation.name());
        }
        Ok(numbers)
    }

    /// Each row's probability of its own label, from a probability vector column.
    fn probabilities_of(&self, values: &[ArrayRef], labels: &[f64]) -> Result<Vec<f64>> {
        let column = &self.columns[3];
        let Some(dim) = vector_dim(values[3].data_type()) else {
            return exec_err!("ml_multiclass_state: column {column:?} must be a probability vector");
        };
        let (flat, _) = vector_values(&values[3])?;
        labels
            .iter()
            .enumerate()
            .map(|(row, &label)| {
                let slot = label as usize;
                if label < 0.0 || slot >= dim {
                    return exec_err!(
                        "ml_multiclass_state: label {label} at row {row} has no slot in the {dim}-wide column {column:?}"
                    );
                }
                Ok(f64::from(flat.value(row * dim + slot)))
            })
            .collect()
    }
}

impl Accumulator for StateAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        // Spark's evaluators take array<double> scores and probabilities as vectors.
        let values = values
            .iter()
            .zip(&self.columns)
            .map(|(array, column)| Ok(list_as_vector(array, column)?.unwrap_or_else(|| array.clone())))
            .collect::<Result<Vec<ArrayRef>>>()?;
        let values = values.as_slice();
        let first = self.numbers(values, 0)?;
        let second = self.numbers(values, 1)?;
        let weights = self.numbers(values, 2)?;
        if let Some(row) = weights.iter().position(|w| *w < 0.0) {
            return exec_err!(
                "{}: weight column {:?} is negative ({}) at row {row}",
                self.evaluation.name(),
                self.columns[2],
                weights[row]
            );
        }
        let probabilities = match (&self.state, values.len()) {
            (State::Multiclass(_), 4) => Some(self.probabilities_of(values, &first)?),
            _ => None,
        };
        match &mut self.state {
            State::Multiclass(s) => {
                for row in 0..first.len() {
                    s.add(
                        first[row],
                        second[row],
                        weights[row],
                        probabilities.as_ref().map(|p| p[row]),
                    );
                }
            }
            State::Binary(s) => {
                for row in 0..first.len() {
                    s.add(first[row], second[row], weights[row]);
                }
            }
            State::Regression(s) => {
                for row in 0..first.len() {
                    s.add(first[row], second[row], weights[row]);
                }
            }
            State::Clustering(s) => {
                for row in 0..first.len() {
                    let (cluster, label) = (
                        whole(&self.columns[0], first[row])?,
                        whole(&self.columns[1], second[row])?,
                    );
                    s.add(cluster, label, weights[row]);
                }
            }
        }
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let states = states[0].as_binary::<i32>();
        for row in 0..states.len() {
            if states.is_valid(row) {
                self.state.merge_bytes(states.value(row))?;
            }
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![ScalarValue::Binary(Some(self.state.to_bytes()))])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        Ok(ScalarValue::Binary(Some(self.state.to_bytes())))
    }

    fn size(&self) -> usize {
        let state = match &self.state {
            State::Multiclass(s) => s.encoded_len(),
            State::Binary(s) => s.encoded_len(),
            State::Regression(s) => s.encoded_len(),
            State::Clustering(s) => s.encoded_len(),
        };
        size_of::<Self>() + state
    }
}

/// A cluster or label value as the whole number it must be.
fn whole(column: &str, value: f64) -> Result<i64> {
    if value.fract() != 0.0 || value.abs() > 2f64.powi(53) {
        return exec_err!("ml_clustering_state: column {column:?} holds {value}, not a whole number");
    }
    Ok(value as i64)
}
