//! Literals a `pyspark.ml` client reads back: attribute values and params, vectors as Spark's `VectorUDT`
//! structs that PySpark turns into `DenseVector`s.

use serde_json::Value;
use spark_connect_proto::data_type::{self, Kind};
use spark_connect_proto::expression::Literal;
use spark_connect_proto::expression::literal::specialized_array::ValueType;
use spark_connect_proto::expression::literal::{Array, LiteralType, SpecializedArray, Struct};
use spark_connect_proto::{DataType, Doubles, Ints, MlParams};

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

/// The type of arrays of `element`s (which may be null).
pub(crate) fn array_of(element: Kind) -> Kind {
    Kind::Array(Box::new(data_type::Array {
        element_type: Some(Box::new(spark_type(element))),
        contains_null: true,
        type_variation_reference: 0,
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

/// A dense matrix of `rows` (each of the same length) as the struct literal PySpark reads into a `DenseMatrix`.
pub(crate) fn dense_matrix(rows: &[&[f64]]) -> Literal {
    let cols = rows.first().map_or(0, |row| row.len());
    let column_major: Vec<Value> = (0..cols)
        .flat_map(|c| rows.iter().map(move |row| Value::from(row[c])))
        .collect();
    let json = serde_json::json!({"type": 1, "numRows": rows.len(), "numCols": cols, "values": column_major});
    json.as_object()
        .and_then(linalg_literal)
        .unwrap_or_else(|| null(Kind::Null(data_type::Null::default())))
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
        Value::Object(object) => return linalg_literal(object),
    })
}

/// A vector or matrix param as Spark's JSON writes it (see [`super::params::param_json`]) as the `VectorUDT` or
/// `MatrixUDT` struct literal PySpark reads into a `DenseVector`, `SparseVector`, `DenseMatrix` or
/// `SparseMatrix`; `None` for another object.
#[allow(deprecated)] // struct_type: how the client tells a vector or a matrix from other structs
fn linalg_literal(object: &serde_json::Map<String, Value>) -> Option<Literal> {
    let kind = i32::try_from(object.get("type")?.as_i64()?).ok()?;
    let integer_or_null = |key: &str| match object.get(key).and_then(Value::as_i64) {
        Some(v) => i32::try_from(v).ok().map(|v| literal(LiteralType::Integer(v))),
        None => Some(null(Kind::Integer(data_type::Integer::default()))),
    };
    let ints_or_null = |key: &str| match object.get(key).and_then(Value::as_array) {
        Some(items) => {
            let values: Option<Vec<i32>> = (items.iter())
                .map(|v| v.as_i64().and_then(|v| i32::try_from(v).ok()))
                .collect();
            Some(literal(LiteralType::SpecializedArray(SpecializedArray {
                value_type: Some(ValueType::Ints(Ints { values: values? })),
            })))
        }
        None => Some(null(array_of(Kind::Integer(data_type::Integer::default())))),
    };
    let values: Option<Vec<f64>> = object.get("values")?.as_array()?.iter().map(Value::as_f64).collect();
    let values = literal(LiteralType::SpecializedArray(SpecializedArray {
        value_type: Some(ValueType::Doubles(Doubles { values: values? })),
    }));
    let (struct_type, elements) = if object.contains_key("numRows") {
        let transposed = object.get("isTransposed").and_then(Value::as_bool).unwrap_or(false);
        let elements = vec![
            literal(LiteralType::Byte(kind)),
            integer_or_null("numRows")?,
            integer_or_null("numCols")?,
            ints_or_null("colPtrs")?,
            ints_or_null("rowIndices")?,
            values,
            boolean(transposed),
        ];
        (matrix_udt(), elements)
    } else {
        let elements = vec![
            literal(LiteralType::Byte(kind)),
            integer_or_null("size")?,
            ints_or_null("indices")?,
            values,
        ];
        (vector_udt(), elements)
    };
    Some(literal(LiteralType::Struct(Struct {
        struct_type: Some(struct_type),
        elements,
    })))
}

/// A null literal of `kind`.
fn null(kind: Kind) -> Literal {
    literal(LiteralType::Null(spark_type(kind)))
}

/// Spark's matrix type as a param literal names it: the client reads only its JVM class.
fn matrix_udt() -> DataType {
    spark_type(Kind::Udt(Box::new(data_type::Udt {
        r#type: "udt".into(),
        jvm_class: Some("org.apache.spark.ml.linalg.MatrixUDT".into()),
        python_class: Some("pyspark.ml.linalg.MatrixUDT".into()),
        serialized_python_class: None,
        sql_type: None,
    })))
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
