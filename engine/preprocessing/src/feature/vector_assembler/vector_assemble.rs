//! `ml_vector_assemble(handle_invalid, col, ...)`: numeric, boolean and vector columns into one vector.

use std::sync::{Arc, LazyLock};

use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::plan_err;
use datafusion::error::Result;
use datafusion::logical_expr::{
    ColumnarValue, Documentation, Expr, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};
use hearth_exec::udf::ML_DOC_SECTION;
use hearth_exec::udf::args::{arrays, constant, keeps_invalid};
use hearth_exec::vector::{vector_array, vector_type};

use super::assembly::{Columns, argument_fields, assembled_dim};

/// The SQL name.
pub const NAME: &str = "ml_vector_assemble";

/// Spark's `VectorAssembler` as a scalar function. The first argument is `'error'` (a null, or NaN in a scalar
/// column, fails the query naming the column and row) or `'keep'` (null becomes NaN, NaN stays);
/// `'skip'` behaves as `'keep'` here because dropping rows is the transformer's filter.
///
/// ```sql
/// SELECT ml_vector_assemble('error', duration, credit_amount, age) AS features FROM credit
/// ```
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct VectorAssembleUdf {
    signature: Signature,
}

impl Default for VectorAssembleUdf {
    fn default() -> Self {
        Self {
            signature: Signature::variadic_any(Volatility::Immutable),
        }
    }
}

/// The dimension the columns after `handle_invalid` assemble to.
fn output_dim(inputs: &[FieldRef]) -> Result<usize> {
    if inputs.len() < 2 {
        return plan_err!("{NAME}: expects handle_invalid and at least one column");
    }
    assembled_dim(NAME, &inputs[1..])
}

/// The arguments (`handle_invalid`, columns...) of `expr` when it is an `ml_vector_assemble` call, aliased or not.
pub(crate) fn assembled_arguments(expr: &Expr) -> Option<&[Expr]> {
    match expr {
        Expr::Alias(alias) => assembled_arguments(&alias.expr),
        Expr::ScalarFunction(call) if call.func.name() == NAME => Some(&call.args),
        _ => None,
    }
}

/// `ml_vector_assemble`, built once.
pub(crate) static VECTOR_ASSEMBLE: LazyLock<Arc<ScalarUDF>> =
    LazyLock::new(|| Arc::new(ScalarUDF::from(VectorAssembleUdf::default())));

/// The SQL documentation of `ml_vector_assemble`.
static DOCS: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        ML_DOC_SECTION,
        "Spark's `VectorAssembler` transform: the values of numeric, boolean and vector columns one after another \
         in one vector (`FixedSizeList<Float32>`, as wide as the columns' slots together). Under `'error'` a null, \
         or NaN in a numeric column, fails the query naming the column and the row's place in its batch; under `'keep'` a null becomes NaN \
         (in every slot of a vector) and NaN stays; `'skip'` behaves as `'keep'` here, since dropping the rows is \
         the transformer's filter.",
        "ml_vector_assemble(handle_invalid, col, ...)",
    )
    .with_argument(
        "handle_invalid",
        "What nulls and NaN do, a string constant: `'error'`, `'keep'` or `'skip'`.",
    )
    .with_argument(
        "col",
        "One or more numeric, boolean or vector columns; a number or boolean fills one slot, a vector its width.",
    )
    .with_sql_example(
        "```sql\nSELECT ml_vector_assemble('error', duration, credit_amount, age) AS features FROM credit\n```",
    )
    .build()
});

impl ScalarUDFImpl for VectorAssembleUdf {
    fn name(&self) -> &str {
        NAME
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        Ok(vector_type(output_dim(&argument_fields(arg_types))?))
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let dim = output_dim(args.arg_fields)?;
        Ok(Arc::new(Field::new(NAME, vector_type(dim), true)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let keep = keeps_invalid(NAME, &constant(NAME, &args.args, 0, "handle_invalid")?)?;
        let rows = args.number_rows;
        let dim = output_dim(&args.arg_fields)?;
        let columns = Columns::read(&arrays(&args.args[1..], rows)?, &args.arg_fields[1..], keep)?;
        let out = columns.assemble(dim, |_, x| x as f32)?;
        Ok(ColumnarValue::Array(vector_array(rows, dim, out, None)?))
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(&DOCS)
    }
}
