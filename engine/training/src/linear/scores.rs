//! The linear models' predictions as SQL functions, the coefficients carried as literal lists:
//! `ml_logistic_scores` (a `LogisticRegressionModel`'s `rawPrediction`, `probability` and `prediction`) and
//! `ml_linear_predict` (a `LinearRegressionModel`'s prediction).

use std::sync::{Arc, LazyLock};

use datafusion::arrow::array::{ArrayRef, Float64Array, StructArray};
use datafusion::arrow::buffer::NullBuffer;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{ScalarValue, exec_err, internal_err, plan_err};
use datafusion::error::Result;
use datafusion::logical_expr::{
    ColumnarValue, Documentation, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use hearth_exec::udf::ML_DOC_SECTION;
use hearth_exec::udf::args::{as_f64_list, constant};
use hearth_exec::vector::{classifier_score_fields, vector_array, vector_dim, vector_values};

/// Which prediction a function gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Kind {
    /// `ml_logistic_scores(features, coefficients, intercepts, threshold)`.
    Logistic,
    /// `ml_linear_predict(features, coefficients, intercept)`.
    Linear,
}

/// `ml_logistic_scores(features, coefficients, intercepts, threshold)` gives `{rawPrediction, probability,
/// prediction}` per row for `K` intercepts and `K × F` coefficients (row-major): binomial for one intercept (raw
/// `[−m, m]`, class 1 when `m` exceeds the threshold's log-odds), multinomial softmax beyond.
/// `ml_linear_predict(features, coefficients, intercept)` gives `x·c + b`. A null vector gives null.
///
/// ```sql
/// SELECT ml_linear_predict(features, [2.0, -1.0], [0.5]) AS prediction FROM rows
/// ```
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct LinearScoresUdf {
    kind: Kind,
    signature: Signature,
}

/// `ml_logistic_scores`, built once.
pub static LOGISTIC_SCORES: LazyLock<Arc<ScalarUDF>> = LazyLock::new(|| {
    Arc::new(ScalarUDF::from(LinearScoresUdf {
        kind: Kind::Logistic,
        signature: Signature::any(4, Volatility::Immutable),
    }))
});

/// `ml_linear_predict`, built once.
pub static LINEAR_PREDICT: LazyLock<Arc<ScalarUDF>> = LazyLock::new(|| {
    Arc::new(ScalarUDF::from(LinearScoresUdf {
        kind: Kind::Linear,
        signature: Signature::any(3, Volatility::Immutable),
    }))
});

/// The SQL documentation of `ml_logistic_scores`.
static LOGISTIC_DOCS: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        ML_DOC_SECTION,
        "`LogisticRegressionModel`'s prediction, as Spark gives it. With one intercept the model is binomial: \
         `rawPrediction` is `[−m, m]` for the margin `m`, `probability` is `[1 − σ(m), σ(m)]`, and the prediction \
         is class 1 when `σ(m)` exceeds `threshold`; with `K > 1` intercepts it is multinomial: the margins, their \
         softmax and the most probable class. Returns a struct `{rawPrediction, probability, prediction}`: two \
         vectors (`FixedSizeList<Float32>`, one slot per class) and the class index as a `Float64`. A null vector \
         gives null; coefficients that do not fit the vectors fail the query. The struct's shape depends on \
         `intercepts`, which planning must read as a literal: hearth's plans (a fitted model's `transform`, \
         `ML.PREDICT`) pass it so, but a query's `[…]` is a `make_array` call, so a query cannot call it.",
        "ml_logistic_scores(features, coefficients, intercepts, threshold)",
    )
    .with_argument("features", "Each row's vector (a `FixedSizeList` of numbers).")
    .with_argument(
        "coefficients",
        "The fitted coefficients, a numeric list constant: `K` rows of one coefficient per vector slot, one row \
         after another.",
    )
    .with_argument(
        "intercepts",
        "The fitted intercepts, a numeric list constant: one (binomial) or one per class (multinomial).",
    )
    .with_argument(
        "threshold",
        "The probability of class 1 above which a binomial model predicts it, a numeric constant; a multinomial \
         model does not use it.",
    )
    .build()
});

/// The SQL documentation of `ml_linear_predict`.
static LINEAR_DOCS: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        ML_DOC_SECTION,
        "`LinearRegressionModel`'s prediction: `x · coefficients + intercept` for each row's vector `x`, as a \
         `Float64`. A null vector gives null; coefficients that do not fit the vectors fail the query.",
        "ml_linear_predict(features, coefficients, intercept)",
    )
    .with_argument("features", "Each row's vector (a `FixedSizeList` of numbers).")
    .with_argument(
        "coefficients",
        "The fitted coefficients, one per vector slot, a numeric list constant.",
    )
    .with_argument(
        "intercept",
        "The fitted intercept, a one-element numeric list constant (`[0.5]`).",
    )
    .with_sql_example("```sql\nSELECT ml_linear_predict(features, [2.0, -1.0], [0.5]) AS prediction FROM points\n```")
    .build()
});

impl ScalarUDFImpl for LinearScoresUdf {
    fn name(&self) -> &str {
        match self.kind {
            Kind::Logistic => "ml_logistic_scores",
            Kind::Linear => "ml_linear_predict",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        if vector_dim(&arg_types[0]).is_none() {
            return plan_err!(
                "{}: the first argument must be a vector, got {}",
                self.name(),
                arg_types[0]
            );
        }
        match self.kind {
            // The classes are known from the intercepts' literal, which `return_field_from_args` reads.
            Kind::Logistic => internal_err!("{}: the return type depends on the intercepts", self.name()),
            Kind::Linear => Ok(DataType::Float64),
        }
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let data_type = match self.kind {
            Kind::Logistic => {
                let Some(Some(intercepts)) = args.scalar_arguments.get(2) else {
                    return plan_err!("{}: the intercepts must be a literal list", self.name());
                };
                let sets = as_f64_list(self.name(), intercepts, "intercepts")?.len();
                DataType::Struct(classifier_score_fields(classes_of(sets)))
            }
            Kind::Linear => DataType::Float64,
        };
        let features = args.arg_fields[0].data_type();
        if vector_dim(features).is_none() {
            return plan_err!("{}: the first argument must be a vector, got {features}", self.name());
        }
        Ok(Arc::new(Field::new(self.name(), data_type, true)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let name = self.name();
        let input = args.args[0].to_array(args.number_rows)?;
        let dim = vector_dim(input.data_type()).unwrap_or(0);
        let coefficients = as_f64_list(name, &constant(name, &args.args, 1, "coefficients")?, "coefficients")?;
        let intercepts = as_f64_list(name, &constant(name, &args.args, 2, "intercepts")?, "intercepts")?;
        let sets = intercepts.len();
        if self.kind == Kind::Linear && sets != 1 {
            return exec_err!("{name}: a linear regression has one intercept, got {sets}");
        }
        if sets == 0 || coefficients.len() != sets * dim {
            return exec_err!(
                "{name}: {} coefficients and {sets} intercepts do not fit {dim}-slot vectors",
                coefficients.len()
            );
        }
        let (values, nulls) = vector_values(&input)?;
        let rows = input.len();
        let (coefficients, intercepts) = (&coefficients, &intercepts);
        let margins: Vec<f64> = values
            .values()
            .chunks_exact(dim.max(1))
            .take(rows)
            .flat_map(|x| {
                (0..sets).map(move |k| {
                    let row = &coefficients[k * dim..(k + 1) * dim];
                    intercepts[k] + row.iter().zip(x).map(|(c, v)| c * f64::from(*v)).sum::<f64>()
                })
            })
            .collect();
        if self.kind == Kind::Linear {
            return Ok(ColumnarValue::Array(Arc::new(Float64Array::new(margins.into(), nulls))));
        }
        let threshold = match constant(name, &args.args, 3, "threshold")?.cast_to(&DataType::Float64)? {
            ScalarValue::Float64(Some(t)) => t,
            other => return exec_err!("{name}: threshold must be a number, got {other}"),
        };
        Ok(ColumnarValue::Array(score_columns(
            &margins, rows, sets, threshold, nulls,
        )?))
    }

    fn documentation(&self) -> Option<&Documentation> {
        let docs: &LazyLock<Documentation> = match self.kind {
            Kind::Logistic => &LOGISTIC_DOCS,
            Kind::Linear => &LINEAR_DOCS,
        };
        Some(docs)
    }
}

/// The `{rawPrediction, probability, prediction}` column of `rows` rows' `sets` margins each: binomial (class 1
/// past `threshold`'s log-odds) for one margin, softmax and its most likely class for more.
pub(crate) fn score_columns(
    margins: &[f64],
    rows: usize,
    sets: usize,
    threshold: f64,
    nulls: Option<NullBuffer>,
) -> Result<ArrayRef> {
    let classes = classes_of(sets);
    let (raw, probability, prediction) = scores(margins, sets, threshold);
    let columns: Vec<ArrayRef> = vec![
        vector_array(rows, classes, raw, nulls.clone())?,
        vector_array(rows, classes, probability, nulls.clone())?,
        Arc::new(Float64Array::new(prediction.into(), nulls.clone())),
    ];
    Ok(Arc::new(StructArray::try_new(
        classifier_score_fields(classes),
        columns,
        nulls,
    )?))
}

/// Classes of a model with `sets` coefficient sets: one set is binomial.
fn classes_of(sets: usize) -> usize {
    if sets == 1 { 2 } else { sets }
}

/// Each row's raw scores, probabilities and prediction from its `sets` margins, as Spark's models give them.
fn scores(margins: &[f64], sets: usize, threshold: f64) -> (Vec<f32>, Vec<f32>, Vec<f64>) {
    let (mut raw, mut probability, mut prediction) = (Vec::new(), Vec::new(), Vec::new());
    for row in margins.chunks_exact(sets) {
        if sets == 1 {
            let m = row[0];
            let p0 = 1.0 / (1.0 + m.exp());
            raw.extend([-m as f32, m as f32]);
            probability.extend([p0 as f32, (1.0 - p0) as f32]);
            prediction.push(if m > (threshold / (1.0 - threshold)).ln() {
                1.0
            } else {
                0.0
            });
            continue;
        }
        let largest = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let exps: Vec<f64> = row.iter().map(|m| (m - largest).exp()).collect();
        let total: f64 = exps.iter().sum();
        raw.extend(row.iter().map(|m| *m as f32));
        probability.extend(exps.iter().map(|e| (e / total) as f32));
        let best = (0..sets).fold(0, |best, k| if exps[k] > exps[best] { k } else { best });
        prediction.push(best as f64);
    }
    (raw, probability, prediction)
}

#[cfg(test)]
mod tests {
    use datafusion::prelude::SessionContext;

    #[tokio::test]
    async fn a_linear_prediction_with_two_intercepts_is_refused_not_a_panic() {
        let ctx = SessionContext::new();
        hearth_preprocessing::functions::register_all(&ctx);
        crate::functions::register_all(&ctx);
        let query = "SELECT ml_linear_predict(ml_vector_assemble('error', 1.0, 2.0), [1.0, 1.0, 1.0, 1.0], [0.5, 0.3])";
        let error = ctx.sql(query).await.unwrap().collect().await.unwrap_err();
        assert!(error.to_string().contains("one intercept, got 2"), "{error}");
    }
}
