//! `ml_metric(evaluation, state, metric)`: a metric read from an evaluation aggregate's state inside a query,
//! with Spark's definitions — so a whole evaluation (`ML.EVALUATE`) is one plan: the aggregate, then metrics.

use std::sync::{Arc, LazyLock};

use datafusion::arrow::array::{Array, AsArray, Float64Array};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{exec_err, plan_err};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, Documentation, Expr, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility, lit,
};
use hearth_exec::udf::ML_DOC_SECTION;
use hearth_exec::udf::args::{as_string, constant};
use hearth_stats::evaluation::{BinaryState, MulticlassState, RegressionState};

use super::{BinaryClassificationEvaluator, MulticlassClassificationEvaluator, RegressionEvaluator};

/// The SQL name.
pub const NAME: &str = "ml_metric";

/// `ml_metric(evaluation, state, metric)`: `evaluation` is `'multiclass'`, `'binary'` or `'regression'`,
/// `state` the bytes its `ml_*_state` aggregate returned, `metric` one of that evaluator's metric names
/// (`'f1'`, `'areaUnderROC'`, `'rmse'`, …). An empty state (no rows) gives NaN, as Spark's evaluators do.
///
/// ```sql
/// SELECT ml_metric('multiclass', s, 'f1') AS f1, ml_metric('multiclass', s, 'accuracy') AS accuracy
/// FROM (SELECT ml_multiclass_state(label, prediction, 1.0) AS s FROM scored)
/// ```
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct MetricUdf {
    signature: Signature,
}

impl Default for MetricUdf {
    fn default() -> Self {
        Self {
            signature: Signature::any(3, Volatility::Immutable),
        }
    }
}

/// `ml_metric`, built once.
pub(crate) static METRIC: LazyLock<Arc<ScalarUDF>> = LazyLock::new(|| Arc::new(ScalarUDF::from(MetricUdf::default())));

/// The SQL documentation of `ml_metric`.
static DOCS: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        ML_DOC_SECTION,
        "A metric read from the state an evaluation aggregate returned (`ml_multiclass_state`, `ml_binary_state`, \
         `ml_regression_state`), with Spark's definitions and its evaluators' default parameters (`metricLabel` 0, \
         `beta` 1, `numBins` 1000, `r2` not through the origin): `ML.EVALUATE` is this over the aggregate. \
         Returns a `Float64`; an empty multiclass state (no rows) gives NaN and a null state null. An unknown \
         evaluation or metric fails the query.",
        "ml_metric(evaluation, state, metric)",
    )
    .with_argument(
        "evaluation",
        "Which evaluation the state is of, a string constant: `'multiclass'`, `'binary'` or `'regression'`.",
    )
    .with_argument(
        "state",
        "The `Binary` bytes that evaluation's `ml_*_state` aggregate returned.",
    )
    .with_argument(
        "metric",
        "The metric's name as Spark's evaluator takes it, a string constant. Multiclass: `f1`, `accuracy`, \
         `weightedPrecision`, `weightedRecall`, `weightedTruePositiveRate`, `weightedFalsePositiveRate`, \
         `weightedFMeasure`, `truePositiveRateByLabel`, `falsePositiveRateByLabel`, `precisionByLabel`, \
         `recallByLabel`, `fMeasureByLabel`, `logLoss`, `hammingLoss`; binary: `areaUnderROC`, `areaUnderPR`; \
         regression: `rmse`, `mse`, `r2`, `mae`, `var`.",
    )
    .with_sql_example(
        "```sql\nSELECT ml_metric('multiclass', s, 'f1') AS f1, ml_metric('multiclass', s, 'accuracy') AS accuracy\n\
         FROM (SELECT ml_multiclass_state(label, prediction, 1.0) AS s FROM scored)\n```",
    )
    .build()
});

/// `ml_metric(evaluation, state, metric)` as an expression.
pub fn metric(evaluation: &str, state: Expr, name: &str) -> Expr {
    METRIC.call(vec![lit(evaluation), state, lit(name)])
}

fn failed(message: impl std::fmt::Display) -> DataFusionError {
    DataFusionError::Execution(format!("{NAME}: {message}"))
}

/// The metric `name` of the `evaluation` state in `bytes`.
fn read(evaluation: &str, bytes: &[u8], name: &str) -> Result<f64> {
    let metric = match evaluation {
        "multiclass" => {
            let state = MulticlassState::from_bytes(bytes).map_err(failed)?;
            if state.weight() == 0.0 {
                return Ok(f64::NAN);
            }
            MulticlassClassificationEvaluator::new()
                .metric_name(name)
                .metric(&state)
        }
        "binary" => {
            let state = BinaryState::from_bytes(bytes).map_err(failed)?;
            BinaryClassificationEvaluator::new().metric_name(name).metric(&state)
        }
        "regression" => {
            let state = RegressionState::from_bytes(bytes).map_err(failed)?;
            RegressionEvaluator::new().metric_name(name).metric(&state)
        }
        other => return exec_err!("{NAME}: evaluation must be 'multiclass', 'binary' or 'regression', got {other:?}"),
    };
    metric.map_err(failed)
}

impl ScalarUDFImpl for MetricUdf {
    fn name(&self) -> &str {
        NAME
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        if !matches!(
            arg_types[1],
            DataType::Binary | DataType::LargeBinary | DataType::BinaryView
        ) {
            return plan_err!(
                "{NAME}: the state must be an ml_*_state aggregate's bytes, got {}",
                arg_types[1]
            );
        }
        Ok(DataType::Float64)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let evaluation = as_string(NAME, &constant(NAME, &args.args, 0, "evaluation")?, "evaluation")?;
        let name = as_string(NAME, &constant(NAME, &args.args, 2, "metric")?, "metric")?;
        let states = args.args[1].to_array(args.number_rows)?;
        let states = datafusion::arrow::compute::cast(&states, &DataType::Binary)?;
        let states = states.as_binary::<i32>();
        let values = (0..states.len())
            .map(|row| {
                states
                    .is_valid(row)
                    .then(|| read(&evaluation, states.value(row), &name))
                    .transpose()
            })
            .collect::<Result<Float64Array>>()?;
        Ok(ColumnarValue::Array(Arc::new(values)))
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(&DOCS)
    }
}
