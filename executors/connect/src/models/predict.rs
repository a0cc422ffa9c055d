//! `model.predict(vector)`, `predictRaw` and `predictProbability`: a model applied to one vector the client
//! sends — a one-row frame of it, transformed, and the asked column read back.

use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Field, Float64Type, Int32Type, Schema};
use hearth_exec::session::Session;
use hearth_exec::vector::{vector_array, vector_type, vector_values};
use hearth_preprocessing::stage::Transformer;
use serde_json::Value;
use spark_connect_proto::expression::Literal;
use spark_connect_proto::expression::literal::LiteralType;

use crate::errors::{ConnectError, Result};
use crate::models::literals::{dense_vector, double, literal};

/// `model.<method>(vector)`.
pub(crate) async fn predict(
    session: &Session,
    model: &dyn Transformer,
    method: &str,
    args: &[Value],
) -> Result<Literal> {
    let params = model.params()?;
    let column = |name: &str, default: &str| params.get(name).and_then(Value::as_str).unwrap_or(default).to_owned();
    let output = match method {
        "predict" => column("predictionCol", "prediction"),
        "predictRaw" => column("rawPredictionCol", "rawPrediction"),
        "predictProbability" => column("probabilityCol", "probability"),
        other => {
            return Err(ConnectError::Unsupported(format!(
                "the method {other} of {} over Spark Connect",
                model.class()
            )));
        }
    };
    let [Value::Array(values)] = args else {
        return Err(ConnectError::IllegalArgument(format!("{method} takes one vector")));
    };
    let values: Vec<f32> = (values.iter())
        .map(|v| v.as_f64().map(|v| v as f32))
        .collect::<Option<_>>()
        .ok_or_else(|| ConnectError::IllegalArgument(format!("{method} takes a vector of numbers")))?;
    let features = column("featuresCol", "features");
    let schema = Arc::new(Schema::new(vec![Field::new(
        &features,
        vector_type(values.len()),
        true,
    )]));
    let dim = values.len();
    let batch = RecordBatch::try_new(Arc::clone(&schema), vec![vector_array(1, dim, values, None)?])?;
    let out = model.transform(&session.read_batches(schema, vec![batch])?)?;
    let rows = out.select_columns(&[output.as_str()])?.collect().await?;
    let cell = rows
        .iter()
        .find(|b| b.num_rows() > 0)
        .map(|b| Arc::clone(b.column(0)))
        .ok_or_else(|| ConnectError::Execution(format!("{method} gave no row")))?;
    Ok(match cell.data_type() {
        DataType::Float64 => double(cell.as_primitive::<Float64Type>().value(0)),
        DataType::Int32 => literal(LiteralType::Integer(cell.as_primitive::<Int32Type>().value(0))),
        _ => {
            let (floats, _) = vector_values(&cell)?;
            let doubles: Vec<f64> = floats.values().iter().map(|v| f64::from(*v)).collect();
            dense_vector(&doubles)
        }
    })
}
