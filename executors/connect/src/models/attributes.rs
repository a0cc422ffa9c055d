//! A fitted model's attributes as `pyspark.ml` reads them (`model.labels`, `.categorySizes`, `.mean`, `.std`,
//! `.coefficients`, `.intercept`, `.coefficientMatrix`, a perceptron's `.weights`, …): Spark's values as literals,
//! vectors and matrices as Spark's `VectorUDT` and `MatrixUDT` structs that PySpark turns into `DenseVector`s and
//! `DenseMatrix`es.

use hearth_preprocessing::clustering::KMeansModel;
use hearth_preprocessing::feature::{OneHotEncoderModel, StandardScalerModel, StringIndexerModel};
use hearth_preprocessing::stage::Transformer;
use hearth_training::linear::{LinearRegressionModel, LogisticRegressionModel};
use hearth_training::perceptron::MultilayerPerceptronClassificationModel;
use spark_connect_proto::data_type::{self, Kind};
use spark_connect_proto::expression::Literal;
use spark_connect_proto::expression::literal::LiteralType;

use crate::errors::{ConnectError, Result};
use crate::models::literals::{array, array_of, dense_matrix, dense_vector, double, integer, literal, strings};
use crate::types::vector_udt;

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
                array_of(Kind::String(data_type::String::default())),
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
            "coefficientMatrix" => Some(dense_matrix(&m.coefficient_matrix())),
            "numClasses" => Some(integer(m.num_classes())),
            "numFeatures" => Some(integer(m.coefficient_matrix().first().map_or(0, |row| row.len()))),
            _ => None,
        }
    } else if let Some(m) = model.downcast_ref::<LinearRegressionModel>() {
        match method {
            "coefficients" => Some(dense_vector(m.coefficients())),
            "intercept" => Some(double(m.intercept())),
            "numFeatures" => Some(integer(m.coefficients().len())),
            // The loss's scale: 1 for squared error, the only loss hearth fits.
            "scale" => Some(double(1.0)),
            _ => None,
        }
    } else if let Some(m) = model.downcast_ref::<KMeansModel>() {
        let centers: Vec<&[f64]> = m.cluster_centers().iter().map(Vec::as_slice).collect();
        match method {
            // Clients from 4.1 read the centers as one matrix; 4.0's as a list of vectors.
            "clusterCenterMatrix" => Some(dense_matrix(&centers)),
            "clusterCenters" => Some(array(
                centers.iter().map(|center| dense_vector(center)).collect(),
                vector_udt().kind.unwrap_or(Kind::Null(data_type::Null::default())),
            )),
            "numFeatures" => Some(integer(centers.first().map_or(0, |c| c.len()))),
            _ => None,
        }
    } else if let Some(m) = model.downcast_ref::<MultilayerPerceptronClassificationModel>() {
        match method {
            "weights" => Some(dense_vector(m.weights())),
            "numFeatures" => Some(integer(m.layers().first().copied().unwrap_or(0))),
            "numClasses" => Some(integer(m.layers().last().copied().unwrap_or(0))),
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
