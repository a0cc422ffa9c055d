//! Literals a `pyspark.ml` client reads back: attribute values and params, vectors as Spark's `VectorUDT`
//! structs that PySpark turns into `DenseVector`s.

use serde_json::Value;
use spark_connect_proto::data_type::{self, Kind};
use spark_connect_proto::expression::Literal;
use spark_connect_proto::expression::literal::specialized_array::ValueType;
use spark_connect_proto::expression::literal::{Array, LiteralType, SpecializedArray, Struct};
use spark_connect_proto::{DataType, Doubles, MlParams};

use crate::types::vector_udt;

pub(crate) fn literal(value: LiteralType) -> Literal {
    Literal {
        literal_type: Some(value),
        ..Default::default()
    }
}

pub(crate) fn double(value: f64) -> Literal {
    literal(LiteralType::Double(value))
}

/// A boolean literal.
pub(crate) fn boolean(value: bool) -> Literal {
    literal(LiteralType::Boolean(value))
}

pub(crate) fn integer(value: usize) -> Literal {
    literal(LiteralType::Integer(i32::try_from(value).unwrap_or(i32::MAX)))
}

fn spark_type(kind: Kind) -> DataType {
    DataType { kind: Some(kind) }
}

#[allow(deprecated)] // element_type: clients before 4.1 read it
pub(crate) fn array(elements: Vec<Literal>, element: Kind) -> Literal {
    literal(LiteralType::Array(Array {
        element_type: Some(spark_type(element)),
        elements,
    }))
}

pub(crate) fn strings(values: &[String]) -> Literal {
    array(
        values.iter().map(|v| literal(LiteralType::String(v.clone()))).collect(),
        Kind::String(data_type::String::default()),
    )
}

/// A dense vector as the struct literal PySpark reads into a `DenseVector`.
#[allow(deprecated)] // struct_type: how the client tells a vector from other structs
pub(crate) fn dense_vector(values: &[f64]) -> Literal {
    let values = SpecializedArray {
        value_type: Some(ValueType::Doubles(Doubles {
            values: values.to_vec(),
        })),
    };
    let null = |kind| literal(LiteralType::Null(spark_type(kind)));
    literal(LiteralType::Struct(Struct {
        struct_type: Some(vector_udt()),
        elements: vec![
            literal(LiteralType::Byte(1)),
            null(Kind::Integer(data_type::Integer::default())),
            null(Kind::Integer(data_type::Integer::default())),
            literal(LiteralType::SpecializedArray(values)),
        ],
    }))
}

/// A JSON param value (as Spark's ML metadata holds it) as the literal a client reads: whole numbers as
/// `int` (or `long` beyond it), other numbers as `double`, lists of one kind as arrays of it; `None` for null.
pub(crate) fn json_literal(value: &Value) -> Option<Literal> {
    Some(match value {
        Value::Null => return None,
        Value::Bool(b) => boolean(*b),
        Value::Number(n) => match n.as_i64() {
            Some(v) => match i32::try_from(v) {
                Ok(v) => literal(LiteralType::Integer(v)),
                Err(_) => literal(LiteralType::Long(v)),
            },
            None => double(n.as_f64()?),
        },
        Value::String(s) => literal(LiteralType::String(s.clone())),
        Value::Array(items) => {
            let elements: Vec<Literal> = items.iter().map(json_literal).collect::<Option<_>>()?;
            let element = match elements.first().and_then(|e| e.literal_type.as_ref()) {
                Some(LiteralType::Integer(_))
                    if elements
                        .iter()
                        .all(|e| matches!(e.literal_type, Some(LiteralType::Integer(_)))) =>
                {
                    Kind::Integer(data_type::Integer::default())
                }
                Some(LiteralType::String(_)) => Kind::String(data_type::String::default()),
                Some(LiteralType::Boolean(_)) => Kind::Boolean(data_type::Boolean::default()),
                _ => {
                    let doubles = items.iter().map(Value::as_f64).collect::<Option<Vec<f64>>>()?;
                    return Some(array(
                        doubles.into_iter().map(double).collect(),
                        Kind::Double(data_type::Double::default()),
                    ));
                }
            };
            array(elements, element)
        }
        Value::Object(_) => return None,
    })
}

/// A JSON object of params as the `MlParams` a client reads (null values left out).
pub(crate) fn json_params(params: &serde_json::Map<String, Value>) -> MlParams {
    MlParams {
        params: (params.iter())
            .filter_map(|(key, value)| Some((key.clone(), json_literal(value)?)))
            .collect(),
    }
}

/// A list of doubles, as Spark's `Array[Double]` attributes come back (`pValues`, `clusterSizes`' figures).
pub(crate) fn doubles(values: &[f64]) -> Literal {
    array(
        values.iter().map(|v| double(*v)).collect(),
        Kind::Double(data_type::Double::default()),
    )
}
