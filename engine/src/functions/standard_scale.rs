//! `ml_standard_scale(vector, mean, std, with_mean, with_std)`: Spark's `StandardScalerModel` transform.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{exec_err, plan_err};
use datafusion::error::Result;
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use super::args::{as_bool, as_f64_list, constant};
use crate::vector::{vector_array, vector_dim, vector_type, vector_values};

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
        let mean = as_f64_list(NAME, &constant(NAME, &args.args, 1, "mean")?, "mean")?;
        let std = as_f64_list(NAME, &constant(NAME, &args.args, 2, "std")?, "std")?;
        let with_mean = as_bool(NAME, &constant(NAME, &args.args, 3, "with_mean")?, "with_mean")?;
        let with_std = as_bool(NAME, &constant(NAME, &args.args, 4, "with_std")?, "with_std")?;
        let input = args.args[0].to_array(args.number_rows)?;
        let (values, nulls) = vector_values(&input)?;
        let dim = vector_dim(input.data_type()).unwrap_or(0);
        if mean.len() != dim || std.len() != dim {
            return exec_err!(
                "StandardScaler: column {:?} holds {dim}-dimensional vectors but the model was fitted on {} dimensions",
                args.arg_fields[0].name(),
                std.len()
            );
        }
        let shift: Vec<f64> = if with_mean { mean } else { vec![0.0; dim] };
        let scale: Vec<f64> = if with_std {
            std.iter().map(|&s| if s == 0.0 { 0.0 } else { 1.0 / s }).collect()
        } else {
            vec![1.0; dim]
        };
        let mut out = vec![0f32; values.len()];
        for (row_out, row_in) in out
            .chunks_exact_mut(dim.max(1))
            .zip(values.values().chunks_exact(dim.max(1)))
        {
            for (((y, &x), &m), &s) in row_out.iter_mut().zip(row_in).zip(&shift).zip(&scale) {
                *y = ((f64::from(x) - m) * s) as f32;
            }
        }
        Ok(ColumnarValue::Array(vector_array(dim, out, nulls)?))
    }
}
