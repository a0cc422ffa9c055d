//! Spark Connect literals as DataFusion scalars, and the text Spark gives a literal in a column's name.

use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use spark_connect_proto::expression::Literal;
use spark_connect_proto::expression::literal::LiteralType;

use crate::errors::{ConnectError, Result};
use crate::types::arrow_type;

/// The scalar a literal holds.
///
/// ```
/// use datafusion::common::ScalarValue;
/// use spark_connect_proto::expression::Literal;
/// use spark_connect_proto::expression::literal::LiteralType;
///
/// let literal = Literal { literal_type: Some(LiteralType::Integer(7)), ..Default::default() };
/// assert_eq!(hearth_connect::plan::scalar(&literal).unwrap(), ScalarValue::Int32(Some(7)));
/// ```
pub fn scalar(literal: &Literal) -> Result<ScalarValue> {
    let kind =
        (literal.literal_type.as_ref()).ok_or_else(|| ConnectError::InvalidPlan("a literal without a value".into()))?;
    Ok(match kind {
        LiteralType::Null(data_type) => ScalarValue::try_from(&arrow_type(data_type)?)?,
        LiteralType::Binary(bytes) => ScalarValue::Binary(Some(bytes.to_vec())),
        LiteralType::Boolean(value) => ScalarValue::Boolean(Some(*value)),
        LiteralType::Byte(value) => ScalarValue::Int8(Some(narrow(*value, "byte")?)),
        LiteralType::Short(value) => ScalarValue::Int16(Some(narrow(*value, "short")?)),
        LiteralType::Integer(value) => ScalarValue::Int32(Some(*value)),
        LiteralType::Long(value) => ScalarValue::Int64(Some(*value)),
        LiteralType::Float(value) => ScalarValue::Float32(Some(*value)),
        LiteralType::Double(value) => ScalarValue::Float64(Some(*value)),
        LiteralType::String(value) => ScalarValue::Utf8(Some(value.clone())),
        LiteralType::Date(days) => ScalarValue::Date32(Some(*days)),
        LiteralType::Timestamp(micros) => ScalarValue::TimestampMicrosecond(Some(*micros), Some("UTC".into())),
        LiteralType::TimestampNtz(micros) => ScalarValue::TimestampMicrosecond(Some(*micros), None),
        LiteralType::Decimal(decimal) => {
            ScalarValue::try_from_string(decimal.value.clone(), &decimal_type(decimal.precision, decimal.scale))?
        }
        LiteralType::Array(array) => {
            let elements = array.elements.iter().map(scalar).collect::<Result<Vec<_>>>()?;
            let element_type = elements.first().map_or(DataType::Null, ScalarValue::data_type);
            ScalarValue::List(ScalarValue::new_list_nullable(&elements, &element_type))
        }
        other => return Err(ConnectError::Unsupported(format!("the literal {other:?}"))),
    })
}

fn narrow<T: TryFrom<i32>>(value: i32, type_name: &str) -> Result<T> {
    T::try_from(value).map_err(|_| ConnectError::IllegalArgument(format!("{value} is out of range for a {type_name}")))
}

fn decimal_type(precision: Option<i32>, scale: Option<i32>) -> DataType {
    let precision = precision.and_then(|p| u8::try_from(p).ok()).unwrap_or(38);
    let scale = scale.and_then(|s| i8::try_from(s).ok()).unwrap_or(18);
    DataType::Decimal128(precision, scale)
}

/// How Spark writes a literal inside a column's name: `1`, `0.5`, `a` (strings bare), `NULL`, `true`.
pub(crate) fn literal_name(value: &ScalarValue) -> String {
    if value.is_null() {
        return "NULL".into();
    }
    match value {
        ScalarValue::Utf8(Some(text)) => text.clone(),
        ScalarValue::Float64(Some(v)) => crate::show::java_double(*v),
        ScalarValue::Float32(Some(v)) => crate::show::java_float(*v),
        ScalarValue::List(list) => format!("array({})", list_items(list).join(", ")),
        other => other.to_string(),
    }
}

fn list_items(list: &Arc<datafusion::arrow::array::ListArray>) -> Vec<String> {
    let values = list.value(0);
    (0..values.len())
        .map(|i| {
            ScalarValue::try_from_array(&values, i)
                .map(|v| literal_name(&v))
                .unwrap_or_default()
        })
        .collect()
}
