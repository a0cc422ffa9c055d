//! A fitted perceptron's predictions as a SQL function, its layers and weights carried as literal lists:
//! `ml_perceptron_scores` (a `MultilayerPerceptronClassificationModel`'s `rawPrediction`, `probability` and
//! `prediction`).

use std::sync::{Arc, LazyLock};

use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{exec_err, internal_err, plan_err};
use datafusion::error::Result;
use datafusion::logical_expr::{
    ColumnarValue, Documentation, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use hearth_exec::udf::ML_DOC_SECTION;
use hearth_exec::udf::args::{as_f64_list, constant};
use hearth_exec::vector::{classifier_score_fields, vector_dim, vector_values};
use hearth_optim::perceptron::raw_scores;

use crate::linear::score_columns;

/// `ml_perceptron_scores(features, layers, weights)` gives `{rawPrediction, probability, prediction}` per row of a
/// perceptron of `layers` (`[inputs, hidden…, classes]`) and `weights` in Spark's layout: sigmoid hidden layers,
/// the output layer's scores as `rawPrediction`, their softmax as `probability`. A null vector gives null.
///
/// ```sql
/// SELECT ml_perceptron_scores(features, [1, 2], [1.0, -1.0, 0.0, 0.5]).prediction FROM rows
/// ```
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct PerceptronScoresUdf {
    signature: Signature,
}

/// `ml_perceptron_scores`, built once.
pub static PERCEPTRON_SCORES: LazyLock<Arc<ScalarUDF>> = LazyLock::new(|| {
    Arc::new(ScalarUDF::from(PerceptronScoresUdf {
        signature: Signature::any(3, Volatility::Immutable),
    }))
});

/// The SQL documentation of `ml_perceptron_scores`.
static DOCS: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        ML_DOC_SECTION,
        "`MultilayerPerceptronClassificationModel`'s prediction: a perceptron of `layers` with `weights` in Spark's \
         layout, sigmoid hidden layers and a softmax output. Returns a struct `{rawPrediction, probability, \
         prediction}` per row: the output layer's scores and their softmax as vectors (`FixedSizeList<Float32>`, \
         one slot per class) and the most probable class index as a `Float64`. A null vector gives null; layers \
         or weights that do not fit the vectors fail the query. The struct's shape depends on `layers`, which \
         planning must read as a literal: hearth's plans (a fitted model's `transform`) pass it so, but a query's \
         `[…]` is a `make_array` call, so a query cannot call it.",
        "ml_perceptron_scores(features, layers, weights)",
    )
    .with_argument(
        "features",
        "Each row's vector (a `FixedSizeList` of numbers), as wide as the first layer.",
    )
    .with_argument(
        "layers",
        "The layer sizes `[inputs, hidden..., classes]`, a numeric list constant of positive whole numbers ending \
         with at least 2 classes.",
    )
    .with_argument(
        "weights",
        "The fitted weights in Spark's layout (its model's `weights`), a numeric list constant: for each pair of \
         consecutive layers of sizes `a` and `b`, `a · b + b` values.",
    )
    .build()
});

/// The layers of a call, as sizes.
fn layers_of(function: &str, value: &datafusion::common::ScalarValue) -> Result<Vec<usize>> {
    let layers = as_f64_list(function, value, "layers")?;
    let classes = layers.last().copied().unwrap_or(0.0);
    if layers.len() < 2 || classes < 2.0 || layers.iter().any(|l| *l < 1.0 || l.fract() != 0.0) {
        return exec_err!("{function}: layers must be positive sizes ending with at least 2 classes, got {layers:?}");
    }
    Ok(layers.iter().map(|l| *l as usize).collect())
}

impl ScalarUDFImpl for PerceptronScoresUdf {
    fn name(&self) -> &str {
        "ml_perceptron_scores"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        internal_err!("{}: the return type depends on the layers", self.name())
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let features = args.arg_fields[0].data_type();
        if vector_dim(features).is_none() {
            return plan_err!("{}: the first argument must be a vector, got {features}", self.name());
        }
        let Some(Some(layers)) = args.scalar_arguments.get(1) else {
            return plan_err!("{}: the layers must be a literal list", self.name());
        };
        let classes = *layers_of(self.name(), layers)?.last().unwrap_or(&0);
        let data_type = DataType::Struct(classifier_score_fields(classes));
        Ok(Arc::new(Field::new(self.name(), data_type, true)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let name = self.name();
        let input = args.args[0].to_array(args.number_rows)?;
        let dim = vector_dim(input.data_type()).unwrap_or(0);
        let layers = layers_of(name, &constant(name, &args.args, 1, "layers")?)?;
        let weights = as_f64_list(name, &constant(name, &args.args, 2, "weights")?, "weights")?;
        let size: usize = layers.windows(2).map(|w| w[0] * w[1] + w[1]).sum();
        if layers[0] != dim || weights.len() != size {
            return exec_err!(
                "{name}: layers {layers:?} take {}-slot vectors and {size} weights, got {dim} slots and {} weights",
                layers[0],
                weights.len()
            );
        }
        let (values, nulls) = vector_values(&input)?;
        let rows = input.len();
        let features: Vec<f64> = values.values().iter().take(rows * dim).map(|v| f64::from(*v)).collect();
        let raw = raw_scores(&layers, &weights, &features, rows);
        let classes = layers[layers.len() - 1];
        Ok(ColumnarValue::Array(score_columns(&raw, rows, classes, 0.5, nulls)?))
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(&DOCS)
    }
}
