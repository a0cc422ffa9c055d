//! `ml_string_index(column, labels, handle_invalid)`: Spark's `StringIndexerModel` transform.

use std::sync::{Arc, LazyLock};

use datafusion::arrow::array::{ArrayRef, Float64Array};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{HashMap, exec_err, plan_err};
use datafusion::error::Result;
use datafusion::logical_expr::{
    ColumnarValue, Documentation, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use hearth_common::params::HandleInvalid;
use hearth_exec::attribute::NominalAttribute;
use hearth_exec::udf::ML_DOC_SECTION;
use hearth_exec::udf::args::{as_string, as_string_list, constant, keeps_invalid, planned_constant};

use super::label_keys::{KeyedValues, LabelPositions};
use super::spark_string::{is_indexable, spark_strings};

/// The SQL name.
pub const NAME: &str = "ml_string_index";

/// Maps each value (numbers cast to strings as Spark does) to its label's position in `labels`, as a double.
/// Under `'error'` a null or unseen value fails the query naming the column and the value; under `'keep'`
/// (and `'skip'`, whose row filter is the transformer's job) both become `len(labels)`. The output column
/// carries the labels as nominal attribute metadata, with `__unknown` appended under keep.
///
/// ```sql
/// SELECT ml_string_index(purpose, ['radio/tv', 'new car', 'furniture'], 'keep') AS purpose_idx FROM credit
/// ```
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct StringIndexUdf {
    signature: Signature,
}

impl Default for StringIndexUdf {
    fn default() -> Self {
        Self {
            signature: Signature::any(3, Volatility::Immutable),
        }
    }
}

/// `ml_string_index`, built once.
pub(crate) static STRING_INDEX: LazyLock<Arc<ScalarUDF>> =
    LazyLock::new(|| Arc::new(ScalarUDF::from(StringIndexUdf::default())));

/// The SQL documentation of `ml_string_index`.
static DOCS: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        ML_DOC_SECTION,
        "Spark's `StringIndexerModel` transform: each value's position in `labels` (numbers cast to strings as Spark \
         casts them), as a `Float64`. Under `'error'` a null or unseen value fails the query naming the column and \
         the value; under `'keep'` (and `'skip'`, whose row filter is the transformer's) both become \
         `len(labels)`. When `labels` is a literal at planning (as hearth's plans pass it; a query's `[…]` is not one), the \
         result carries the labels as nominal attribute metadata, with `__unknown` appended \
         under `'keep'`.",
        "ml_string_index(column, labels, handle_invalid)",
    )
    .with_argument("column", "The string, boolean or numeric column to index.")
    .with_argument("labels", "The fitted labels in index order, a string list constant.")
    .with_argument(
        "handle_invalid",
        "What a null or unseen value does, a string constant: `'error'`, `'keep'` or `'skip'`.",
    )
    .with_sql_example(
        "```sql\nSELECT ml_string_index(purpose, ['radio/tv', 'new car', 'furniture'], 'keep') AS purpose_idx \
         FROM credit\n```",
    )
    .build()
});

impl ScalarUDFImpl for StringIndexUdf {
    fn name(&self) -> &str {
        NAME
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Float64)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let input = &args.arg_fields[0];
        if !is_indexable(input.data_type()) {
            return plan_err!(
                "StringIndexer: column {:?} has type {}; string or numeric columns only",
                input.name(),
                input.data_type()
            );
        }
        let field = Field::new(NAME, DataType::Float64, true);
        let labels =
            planned_constant(NAME, args.scalar_arguments, 1, "labels").and_then(|v| as_string_list(NAME, v, "labels"));
        let mode = planned_constant(NAME, args.scalar_arguments, 2, "handle_invalid")
            .and_then(|v| as_string(NAME, v, "handle_invalid"));
        Ok(Arc::new(match (labels, mode) {
            (Ok(mut labels), Ok(mode)) => {
                if HandleInvalid::parse(&mode) == Some(HandleInvalid::Keep) {
                    labels.push(NominalAttribute::UNKNOWN_LABEL.to_string());
                }
                NominalAttribute::new(labels).attach(field)
            }
            _ => field,
        }))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let labels = as_string_list(NAME, &constant(NAME, &args.args, 1, "labels")?, "labels")?;
        let keep = keeps_invalid(NAME, &constant(NAME, &args.args, 2, "handle_invalid")?)?;
        let unknown = labels.len() as f64;
        let rows = args.number_rows;
        let column = args.arg_fields[0].name();
        let input = args.args[0].to_array(rows)?;
        let mut out = match KeyedValues::of(&input) {
            Some(values) => LabelPositions::new(&labels, values.kind).positions(&values),
            None => string_positions(&labels, &input)?,
        };
        // A branch-free scan first (it vectorises); rows without a label only when there are some.
        if out.iter().fold(false, |any, p| any | p.is_nan()) {
            for (row, position) in out.iter_mut().enumerate().filter(|(_, p)| p.is_nan()) {
                if keep {
                    *position = unknown;
                    continue;
                }
                let found = match spark_strings(&input.slice(row, 1))?.iter().next().flatten() {
                    Some(label) => format!("unseen label {label:?}"),
                    None => "null".to_string(),
                };
                return exec_err!(
                    "StringIndexer: {found} in column {column:?} (row {row} of a {rows}-row batch) with \
                     handle_invalid = \"error\"; set handle_invalid to \"skip\" or \"keep\" to handle it"
                );
            }
        }
        Ok(ColumnarValue::Array(Arc::new(Float64Array::from(out))))
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(&DOCS)
    }
}

/// Each row's label position through Spark's cast to strings (columns whose values have no keys); `NaN` for
/// null and unseen values.
fn string_positions(labels: &[String], input: &ArrayRef) -> Result<Vec<f64>> {
    let index: HashMap<&str, f64> = labels.iter().enumerate().map(|(i, l)| (l.as_str(), i as f64)).collect();
    Ok(spark_strings(input)?
        .iter()
        .map(|value| value.and_then(|v| index.get(v).copied()).unwrap_or(f64::NAN))
        .collect())
}
