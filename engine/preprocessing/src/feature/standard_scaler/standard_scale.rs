//! `ml_standard_scale(vector, mean, std, with_mean, with_std)`: Spark's `StandardScalerModel` transform.

use std::sync::{Arc, LazyLock};

use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{exec_err, plan_err};
use datafusion::error::Result;
use datafusion::logical_expr::simplify::{ExprSimplifyResult, SimplifyContext};
use datafusion::logical_expr::{
    ColumnarValue, Documentation, Expr, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};
use hearth_exec::udf::ML_DOC_SECTION;
use hearth_exec::udf::args::{arrays, as_bool, as_f64_list, constant, keeps_invalid};
use hearth_exec::vector::{vector_array, vector_dim, vector_type, vector_values};

use crate::feature::vector_assembler::assembled_arguments;
use crate::feature::vector_assembler::assembly::{Columns, argument_fields, assembled_dim};

/// The SQL name.
pub const NAME: &str = "ml_standard_scale";

/// Scales each slot `i` of a vector by `1/std[i]` (0 where `std[i]` is 0) and, with `with_mean`, centres it on
/// `mean[i]` first, in `f64`, as Spark does. A null vector stays null.
///
/// ```sql
/// SELECT ml_standard_scale(features, [2.5, 10.0], [1.29, 4.0], false, true) AS scaled FROM t
/// ```
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct StandardScaleUdf {
    signature: Signature,
}

impl Default for StandardScaleUdf {
    fn default() -> Self {
        Self {
            signature: Signature::any(5, Volatility::Immutable),
        }
    }
}

/// `ml_standard_scale`, built once.
pub(crate) static STANDARD_SCALE: LazyLock<Arc<ScalarUDF>> =
    LazyLock::new(|| Arc::new(ScalarUDF::from(StandardScaleUdf::default())));

/// `ml_scaled_assemble`, built once.
pub(crate) static SCALED_ASSEMBLE: LazyLock<Arc<ScalarUDF>> =
    LazyLock::new(|| Arc::new(ScalarUDF::from(ScaledAssembleUdf::default())));

/// What the `mean` argument of the scaling functions holds.
const MEAN: &str = "The fitted mean of each slot, a numeric list constant as wide as the vectors.";

/// What the `std` argument of the scaling functions holds.
const STD: &str = "The fitted standard deviation of each slot, a numeric list constant as wide as the vectors.";

/// What the `with_mean` argument of the scaling functions holds.
const WITH_MEAN: &str = "Whether each slot is centred on its mean first, a boolean constant.";

/// What the `with_std` argument of the scaling functions holds.
const WITH_STD: &str = "Whether each slot is divided by its standard deviation, a boolean constant.";

/// The SQL documentation of `ml_standard_scale`.
static STANDARD_SCALE_DOCS: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        ML_DOC_SECTION,
        "Spark's `StandardScalerModel` transform: each slot `i` of a vector centred on `mean[i]` (with `with_mean`) \
         and multiplied by `1 / std[i]` (with `with_std`; by 0 where `std[i]` is 0), computed in `f64` as Spark \
         computes it. Returns a vector of the same width (`FixedSizeList<Float32>`); a null vector stays null, and \
         a vector whose width differs from the model's fails the query.",
        "ml_standard_scale(vector, mean, std, with_mean, with_std)",
    )
    .with_argument("vector", "The vectors to scale (a `FixedSizeList` of numbers).")
    .with_argument("mean", MEAN)
    .with_argument("std", STD)
    .with_argument("with_mean", WITH_MEAN)
    .with_argument("with_std", WITH_STD)
    .with_sql_example(
        "```sql\nSELECT ml_standard_scale(features, [2.5, 10.0], [1.29, 4.0], false, true) AS scaled FROM t\n```",
    )
    .build()
});

/// The SQL documentation of `ml_scaled_assemble`.
static SCALED_ASSEMBLE_DOCS: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        ML_DOC_SECTION,
        "Spark's `VectorAssembler` then `StandardScalerModel` in one pass: \
         `ml_standard_scale(ml_vector_assemble(handle_invalid, col, ...), mean, std, with_mean, with_std)` without \
         the assembled vectors in between, each value scaled in `f64` as it is written and rounded to `f32` once \
         (a vector column's values are `f32` already). \
         `ml_standard_scale` rewrites itself into this form when its vector is an `ml_vector_assemble` call. \
         Returns a vector (`FixedSizeList<Float32>`) as wide as the columns' slots together; `handle_invalid` \
         treats nulls and NaN as `ml_vector_assemble` does.",
        "ml_scaled_assemble(handle_invalid, mean, std, with_mean, with_std, col, ...)",
    )
    .with_argument(
        "handle_invalid",
        "What nulls and NaN do, a string constant: `'error'`, `'keep'` or `'skip'` (as `'keep'`).",
    )
    .with_argument("mean", MEAN)
    .with_argument("std", STD)
    .with_argument("with_mean", WITH_MEAN)
    .with_argument("with_std", WITH_STD)
    .with_argument(
        "col",
        "One or more numeric, boolean or vector columns; a number or boolean fills one slot, a vector its width.",
    )
    .with_sql_example(
        "```sql\nSELECT ml_scaled_assemble('error', [2.5, 10.0], [1.29, 4.0], false, true, duration, age) AS scaled \
         FROM t\n```",
    )
    .build()
});

impl ScalarUDFImpl for StandardScaleUdf {
    fn name(&self) -> &str {
        NAME
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match vector_dim(&arg_types[0]) {
            Some(dim) => Ok(vector_type(dim)),
            None => plan_err!("{NAME}: the first argument must be a vector, got {}", arg_types[0]),
        }
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let input = &args.arg_fields[0];
        match vector_dim(input.data_type()) {
            Some(dim) => Ok(Arc::new(Field::new(NAME, vector_type(dim), input.is_nullable()))),
            None => plan_err!(
                "StandardScaler: column {:?} must be a vector, got {}",
                input.name(),
                input.data_type()
            ),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let input = args.args[0].to_array(args.number_rows)?;
        let (values, nulls) = vector_values(&input)?;
        let dim = vector_dim(input.data_type()).unwrap_or(0);
        let scaling = Scaling::read(NAME, &args.args, 1, dim, args.arg_fields[0].name())?;
        let mut out = vec![0f32; values.len()];
        for (row_out, row_in) in out
            .chunks_exact_mut(dim.max(1))
            .zip(values.values().chunks_exact(dim.max(1)))
        {
            for (((y, &x), &m), &s) in row_out.iter_mut().zip(row_in).zip(&scaling.shift).zip(&scaling.scale) {
                *y = ((f64::from(x) - m) * s) as f32;
            }
        }
        Ok(ColumnarValue::Array(vector_array(input.len(), dim, out, nulls)?))
    }

    /// `ml_standard_scale(ml_vector_assemble(h, cols...), state...)` becomes `ml_scaled_assemble(h, state...,
    /// cols...)`: one pass, and no assembled vectors in between.
    fn documentation(&self) -> Option<&Documentation> {
        Some(&STANDARD_SCALE_DOCS)
    }

    fn simplify(&self, args: Vec<Expr>, _info: &SimplifyContext) -> Result<ExprSimplifyResult> {
        let fused = args
            .split_first()
            .and_then(|(vector, state)| match assembled_arguments(vector)? {
                [handle_invalid, columns @ ..] if !columns.is_empty() => {
                    let mut fused = vec![handle_invalid.clone()];
                    fused.extend(state.iter().cloned());
                    fused.extend(columns.iter().cloned());
                    Some(SCALED_ASSEMBLE.call(fused))
                }
                _ => None,
            });
        Ok(match fused {
            Some(fused) => ExprSimplifyResult::Simplified(fused),
            None => ExprSimplifyResult::Original(args),
        })
    }
}

/// What a fitted `StandardScaler` does to slot `i`: `(x − shift[i]) · scale[i]`, in `f64`.
struct Scaling {
    shift: Vec<f64>,
    scale: Vec<f64>,
}

impl Scaling {
    /// Reads `mean, std, with_mean, with_std` from the arguments starting at `first`, checking that the model
    /// was fitted on `dim`-dimensional vectors of `column`.
    fn read(function: &str, args: &[ColumnarValue], first: usize, dim: usize, column: &str) -> Result<Self> {
        let mean = as_f64_list(function, &constant(function, args, first, "mean")?, "mean")?;
        let std = as_f64_list(function, &constant(function, args, first + 1, "std")?, "std")?;
        let with_mean = as_bool(
            function,
            &constant(function, args, first + 2, "with_mean")?,
            "with_mean",
        )?;
        let with_std = as_bool(function, &constant(function, args, first + 3, "with_std")?, "with_std")?;
        if mean.len() != dim || std.len() != dim {
            return exec_err!(
                "StandardScaler: column {column:?} holds {dim}-dimensional vectors but the model was fitted on {} dimensions",
                std.len()
            );
        }
        Ok(Self {
            shift: if with_mean { mean } else { vec![0.0; dim] },
            scale: if with_std {
                std.iter().map(|&s| if s == 0.0 { 0.0 } else { 1.0 / s }).collect()
            } else {
                vec![1.0; dim]
            },
        })
    }

    fn apply(&self, slot: usize, x: f64) -> f32 {
        ((x - self.shift[slot]) * self.scale[slot]) as f32
    }
}

/// The SQL name of the fused form.
pub const SCALED_ASSEMBLE_NAME: &str = "ml_scaled_assemble";

/// `ml_standard_scale(ml_vector_assemble(handle_invalid, col, ...), mean, std, with_mean, with_std)` in one
/// pass: each value is scaled in `f64` as it is written, as Spark computes it on its double vectors, and
/// rounded to `f32` once (the nested form rounds the assembled vector first: the two agree to an `f32` ulp).
/// hearth's planner rewrites the nested form into this one when the assembled column is used only by the
/// scaler.
///
/// ```sql
/// SELECT ml_scaled_assemble('error', [2.5, 10.0], [1.29, 4.0], false, true, duration, age) AS scaled FROM t
/// ```
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct ScaledAssembleUdf {
    signature: Signature,
}

impl Default for ScaledAssembleUdf {
    fn default() -> Self {
        Self {
            signature: Signature::variadic_any(Volatility::Immutable),
        }
    }
}

/// Arguments before the assembled columns: handle_invalid, mean, std, with_mean, with_std.
const SCALED_ASSEMBLE_STATE: usize = 5;

fn scaled_assemble_dim(fields: &[FieldRef]) -> Result<usize> {
    if fields.len() <= SCALED_ASSEMBLE_STATE {
        return plan_err!(
            "{SCALED_ASSEMBLE_NAME}: expects handle_invalid, mean, std, with_mean, with_std and at least one column"
        );
    }
    assembled_dim(SCALED_ASSEMBLE_NAME, &fields[SCALED_ASSEMBLE_STATE..])
}

impl ScalarUDFImpl for ScaledAssembleUdf {
    fn name(&self) -> &str {
        SCALED_ASSEMBLE_NAME
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        Ok(vector_type(scaled_assemble_dim(&argument_fields(arg_types))?))
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let dim = scaled_assemble_dim(args.arg_fields)?;
        Ok(Arc::new(Field::new(SCALED_ASSEMBLE_NAME, vector_type(dim), true)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let keep = keeps_invalid(
            SCALED_ASSEMBLE_NAME,
            &constant(SCALED_ASSEMBLE_NAME, &args.args, 0, "handle_invalid")?,
        )?;
        let rows = args.number_rows;
        let dim = scaled_assemble_dim(&args.arg_fields)?;
        let scaling = Scaling::read(SCALED_ASSEMBLE_NAME, &args.args, 1, dim, "assembled")?;
        let columns = &args.args[SCALED_ASSEMBLE_STATE..];
        let columns = Columns::read(&arrays(columns, rows)?, &args.arg_fields[SCALED_ASSEMBLE_STATE..], keep)?;
        let out = columns.assemble(dim, |slot, x| scaling.apply(slot, x))?;
        Ok(ColumnarValue::Array(vector_array(rows, dim, out, None)?))
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(&SCALED_ASSEMBLE_DOCS)
    }
}
