//! `pyspark.ml` params as a client sends them — only those the user set, as literals — turned into the JSON
//! object of Spark-named params that hearth's stages are built from, checked against the params the stage has.

use serde_json::{Map, Value};
use spark_connect_proto::MlParams;
use spark_connect_proto::expression::Literal;
use spark_connect_proto::expression::literal::LiteralType;
use spark_connect_proto::expression::literal::specialized_array::ValueType;

use crate::errors::{ConnectError, Result};

/// A literal param value as JSON: numbers, strings, booleans, arrays, vectors (Spark's `VectorUDT` struct) as
/// arrays of numbers, and matrices (`MatrixUDT`) as Spark's JSON writes them.
pub(crate) fn literal_json(literal: &Literal) -> Result<Value> {
    to_json(literal, VectorForm::Values)
}

/// A literal param value as Spark's ML metadata writes it: [`literal_json`], but vectors as Spark's JSON objects
/// (`{"type":1,"values":[…]}`, sparse ones sparse), so that they load back as the vectors they were.
pub(crate) fn param_json(literal: &Literal) -> Result<Value> {
    to_json(literal, VectorForm::Spark)
}

/// How a vector becomes JSON.
#[derive(Clone, Copy)]
enum VectorForm {
    /// Its values, a sparse vector filled out with zeros.
    Values,
    /// Spark's `JsonVectorConverter` object.
    Spark,
}

fn to_json(literal: &Literal, vectors: VectorForm) -> Result<Value> {
    let kind = literal
        .literal_type
        .as_ref()
        .ok_or_else(|| ConnectError::InvalidPlan("a param without a value".into()))?;
    Ok(match kind {
        LiteralType::Null(_) => Value::Null,
        LiteralType::Boolean(b) => Value::Bool(*b),
        LiteralType::Byte(v) | LiteralType::Short(v) | LiteralType::Integer(v) => Value::from(*v),
        LiteralType::Long(v) => Value::from(*v),
        LiteralType::Float(v) => Value::from(f64::from(*v)),
        LiteralType::Double(v) => Value::from(*v),
        LiteralType::String(s) => Value::String(s.clone()),
        LiteralType::Array(array) => Value::Array(
            (array.elements.iter())
                .map(|element| to_json(element, vectors))
                .collect::<Result<_>>()?,
        ),
        LiteralType::SpecializedArray(array) => match &array.value_type {
            Some(ValueType::Doubles(d)) => Value::from(d.values.clone()),
            Some(ValueType::Ints(i)) => Value::from(i.values.clone()),
            Some(ValueType::Longs(l)) => Value::from(l.values.clone()),
            Some(ValueType::Strings(s)) => Value::from(s.values.clone()),
            Some(ValueType::Bools(b)) => Value::from(b.values.clone()),
            Some(ValueType::Floats(f)) => Value::from(f.values.iter().map(|v| f64::from(*v)).collect::<Vec<_>>()),
            None => Value::Null,
        },
        // A vector: [type (1 dense, 0 sparse), size, indices, values]; a matrix: [type, numRows, numCols,
        // colPtrs, rowIndices, values, isTransposed].
        LiteralType::Struct(udt) => match (udt.elements.as_slice(), vectors) {
            ([kind, size, indices, values], VectorForm::Values) => vector_json(kind, size, indices, values)?,
            ([kind, size, indices, values], VectorForm::Spark) => spark_vector_json(kind, size, indices, values)?,
            ([kind, rows, cols, pointers, indices, values, transposed], _) => {
                matrix_json([kind, rows, cols, pointers, indices, values, transposed])?
            }
            _ => {
                return Err(ConnectError::InvalidPlan(
                    "a struct param that is neither a vector nor a matrix".into(),
                ));
            }
        },
        other => return Err(ConnectError::Unsupported(format!("the param value {other:?}"))),
    })
}

/// A `VectorUDT` literal as Spark's JSON writes a vector.
fn spark_vector_json(kind: &Literal, size: &Literal, indices: &Literal, values: &Literal) -> Result<Value> {
    let values = literal_json(values)?;
    Ok(match kind.literal_type {
        Some(LiteralType::Byte(0)) => serde_json::json!({
            "type": 0,
            "size": literal_json(size)?,
            "indices": literal_json(indices)?,
            "values": values,
        }),
        _ => serde_json::json!({"type": 1, "values": values}),
    })
}

/// A `MatrixUDT` literal as Spark's JSON writes a matrix (`JsonMatrixConverter`): the fields it has, by name.
fn matrix_json(fields: [&Literal; 7]) -> Result<Value> {
    let [kind, rows, cols, pointers, indices, values, transposed] = fields.map(literal_json);
    let mut matrix = serde_json::json!({
        "class": "matrix",
        "type": kind?,
        "numRows": rows?,
        "numCols": cols?,
        "values": values?,
        "isTransposed": transposed?,
    });
    for (name, value) in [("colPtrs", pointers?), ("rowIndices", indices?)] {
        if !value.is_null() {
            matrix[name] = value;
        }
    }
    Ok(matrix)
}

/// A `VectorUDT` literal's values, a sparse vector's filled out with zeros.
fn vector_json(kind: &Literal, size: &Literal, indices: &Literal, values: &Literal) -> Result<Value> {
    let values = literal_json(values)?;
    if !matches!(kind.literal_type, Some(LiteralType::Byte(0))) {
        return Ok(values);
    }
    let (Some(LiteralType::Integer(size)), Value::Array(indices), Value::Array(values)) =
        (&size.literal_type, literal_json(indices)?, values)
    else {
        return Err(ConnectError::InvalidPlan(
            "a sparse vector param without its size, indices or values".into(),
        ));
    };
    let mut dense = vec![0.0; usize::try_from(*size).unwrap_or(0)];
    for (index, value) in indices.iter().zip(values) {
        let slot = index.as_u64().and_then(|i| dense.get_mut(usize::try_from(i).ok()?));
        match (slot, value.as_f64()) {
            (Some(slot), Some(value)) => *slot = value,
            _ => {
                return Err(ConnectError::InvalidPlan(format!(
                    "a sparse vector param's index {index} is out of its size"
                )));
            }
        }
    }
    Ok(Value::from(dense))
}

/// The params the client set, as the JSON object hearth's stage reads: a single column given where the stage
/// has only a list of them (`inputCol` for `inputCols`, by the stage's `known` params) wrapped in a list.
/// Whether the stage has each param is checked once it is built ([`super::operators::stage`]).
pub(crate) fn stage_params(params: Option<&MlParams>, known: &Map<String, Value>) -> Result<Map<String, Value>> {
    let mut json = Map::new();
    for (key, literal) in params.map(|p| &p.params).into_iter().flatten() {
        let value = literal_json(literal)?;
        let plural = format!("{key}s");
        if !known.contains_key(key) && known.contains_key(&plural) {
            json.insert(plural, Value::Array(vec![value]));
        } else {
            json.insert(key.clone(), value);
        }
    }
    Ok(json)
}
