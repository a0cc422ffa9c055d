//! A fitted model's attributes as `pyspark.ml` reads them (`model.labels`, `.categorySizes`, `.mean`, `.std`,
//! `.coefficients`, `.intercept`, …): Spark's values as literals, vectors as Spark's `VectorUDT` structs
//! that PySpark turns into `DenseVector`s.

use hearth_engine::feature::{OneHotEncoderModel, StandardScalerModel, StringIndexerModel};
use hearth_engine::linear::{LinearRegressionModel, LogisticRegressionModel};
use hearth_engine::stage::Transformer;
use spark_connect_proto::data_type::{self, Kind};
use spark_connect_proto::expression::Literal;
use spark_connect_proto::expression::literal::specialized_array::ValueType;
use spark_connect_proto::expression::literal::{Array, LiteralType, SpecializedArray, Struct};
use spark_connect_proto::{DataType, Doubles};

use crate::errors::{ConnectError, Result};
use crate::types::vector_udt;

fn literal(value: LiteralType) -> Literal {
    Literal {
        literal_type: Some(value),
        ..Default::default()
    }
}

fn double(value: f64) -> Literal {
    literal(LiteralType::Double(value))
}

fn integer(value: usize) -> Literal {
    literal(LiteralType::Integer(i32::try_from(value).unwrap_or(i32::MAX)))
}

fn spark_type(kind: Kind) -> DataType {
    DataType { kind: Some(kind) }
}

#[allow(deprecated)] // element_type: clients before 4.1 read it
fn array(elements: Vec<Literal>, element: Kind) -> Literal {
    literal(LiteralType::Array(Array {
        element_type: Some(spark_type(element)),
        elements,
    }))
}

fn strings(values: &[String]) -> Literal {
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

/// The value of `method` on `model`.
pub(crate) fn attribute(model: &dyn Transformer, method: &str) -> Result<Literal> {
    if method == "uid" {
        return Ok(literal(LiteralType::String(model.uid().to_owned())));
    }
    if method == "toString" {
        return Ok(literal(LiteralType::String(format!(
            "{}: uid={}",
            model.class(),
            model.uid()
        ))));
    }
    let found = if let Some(m) = model.downcast_ref::<StringIndexerModel>() {
        match method {
            "labels" => m.labels().first().map(|l| strings(l)),
            "labelsArray" => Some(array(
                m.labels().iter().map(|l| strings(l)).collect(),
                Kind::Array(Box::default()),
            )),
            _ => None,
        }
    } else if let Some(m) = model.downcast_ref::<OneHotEncoderModel>() {
        match method {
            "categorySizes" => Some(array(
                m.category_sizes().iter().map(|s| integer(*s)).collect(),
                Kind::Integer(data_type::Integer::default()),
            )),
            _ => None,
        }
    } else if let Some(m) = model.downcast_ref::<StandardScalerModel>() {
        match method {
            "mean" => Some(dense_vector(m.mean())),
            "std" => Some(dense_vector(m.std())),
            _ => None,
        }
    } else if let Some(m) = model.downcast_ref::<LogisticRegressionModel>() {
        match method {
            "coefficients" => Some(dense_vector(m.coefficients())),
            "intercept" => Some(double(m.intercept())),
            "interceptVector" => Some(dense_vector(m.intercept_vector())),
            "numClasses" => Some(integer(m.num_classes())),
            "numFeatures" => Some(integer(m.coefficient_matrix().first().map_or(0, |row| row.len()))),
            _ => None,
        }
    } else if let Some(m) = model.downcast_ref::<LinearRegressionModel>() {
        match method {
            "coefficients" => Some(dense_vector(m.coefficients())),
            "intercept" => Some(double(m.intercept())),
            "numFeatures" => Some(integer(m.coefficients().len())),
            _ => None,
        }
    } else {
        None
    };
    found.ok_or_else(|| {
        ConnectError::Unsupported(format!(
            "the attribute {method} of {} over Spark Connect",
            model.class()
        ))
    })
}
