//! `ml_classify(model, features)`: a trained classifier's `rawPrediction`, `probability` and `prediction`.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex};

use datafusion::arrow::array::{ArrayRef, Float64Array, StructArray};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Fields};
use datafusion::common::{ScalarValue, exec_err, plan_err};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};
use hearth_ml::artifact::{ModelArtifact, Predictor};
use hearth_ml::train::Loss;

use super::args::{constant, planned_constant};
use crate::vector::{vector_array, vector_dim, vector_type, vector_values};

/// The SQL name.
pub const NAME: &str = "ml_classify";

/// Applies a trained classifier — the model's bytes as a literal, as `ModelArtifact::to_bytes` writes them —
/// to a vector column: `{rawPrediction, probability, prediction}` per row, as Spark's probabilistic
/// classifiers. `rawPrediction` holds the network's logits centred on their mean (softmax does not change,
/// and slot 1 of a two-class model ranks rows as the positive class's probability does, which is what
/// `BinaryClassificationEvaluator` reads; a one-logit binary model gives `[-z/2, z/2]`), `probability` their
/// softmax, and `prediction` the index of the largest probability, the first on ties. A null vector gives a
/// null result.
///
/// ```sql
/// SELECT ml_classify(X'…model bytes…', features).prediction FROM scaled
/// ```
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct ClassifyUdf {
    signature: Signature,
}

impl Default for ClassifyUdf {
    fn default() -> Self {
        Self {
            signature: Signature::any(2, Volatility::Immutable),
        }
    }
}

/// The result's fields for `classes` classes.
pub(crate) fn output_fields(classes: usize) -> Fields {
    Fields::from(vec![
        Field::new("rawPrediction", vector_type(classes), true),
        Field::new("probability", vector_type(classes), true),
        Field::new("prediction", DataType::Float64, true),
    ])
}

/// Classes of a model from its spec: its outputs, or 2 for a one-logit binary model.
fn classes_of(bytes: &[u8]) -> Result<(usize, bool)> {
    let options =
        ModelArtifact::options_from_bytes(bytes).map_err(|e| DataFusionError::Plan(format!("{NAME}: {e}")))?;
    let outputs = options
        .model
        .outputs()
        .map_err(|e| DataFusionError::Plan(format!("{NAME}: {e}")))?;
    let one_logit = outputs == 1 && options.loss == Loss::BinaryCrossEntropy;
    if options.loss == Loss::MeanSquaredError {
        return plan_err!("{NAME}: the model is a regressor (mean squared error loss), not a classifier");
    }
    Ok((if one_logit { 2 } else { outputs }, one_logit))
}

fn model_bytes(value: &ScalarValue) -> Result<&[u8]> {
    match value {
        ScalarValue::Binary(Some(b)) | ScalarValue::LargeBinary(Some(b)) | ScalarValue::BinaryView(Some(b)) => Ok(b),
        other => exec_err!("{NAME}: the model must be a binary constant, got {}", other.data_type()),
    }
}

impl ScalarUDFImpl for ClassifyUdf {
    fn name(&self) -> &str {
        NAME
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        plan_err!("{NAME}: the result type depends on the model; it is computed from the model constant")
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let model = planned_constant(NAME, args.scalar_arguments, 0, "model")?;
        let (classes, _) = classes_of(model_bytes(model)?)?;
        let features = &args.arg_fields[1];
        if vector_dim(features.data_type()).is_none() {
            return plan_err!(
                "classifier: column {:?} must be a vector, got {}",
                features.name(),
                features.data_type()
            );
        }
        Ok(Arc::new(Field::new(
            NAME,
            DataType::Struct(output_fields(classes)),
            true,
        )))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let model = constant(NAME, &args.args, 0, "model")?;
        let bytes = model_bytes(&model)?;
        let (classes, one_logit) = classes_of(bytes)?;
        let predictor = predictor(bytes)?;
        let input = args.args[1].to_array(args.number_rows)?;
        let (values, nulls) = vector_values(&input)?;
        let dim = vector_dim(input.data_type()).unwrap_or(0);
        let rows = input.len();
        let outputs = {
            let predictor = predictor
                .lock()
                .map_err(|_| DataFusionError::Execution(format!("{NAME}: model lock poisoned")))?;
            if predictor.input_width() != dim {
                return exec_err!(
                    "classifier: column {:?} holds {dim}-dimensional vectors but the model takes {}",
                    args.arg_fields[1].name(),
                    predictor.input_width()
                );
            }
            predictor
                .outputs(values.values(), rows)
                .map_err(|e| DataFusionError::Execution(format!("{NAME}: {e}")))?
        };
        let (raw, probability, prediction) = scores(&outputs, rows, classes, one_logit);
        let columns: Vec<ArrayRef> = vec![
            vector_array(classes, raw, nulls.clone())?,
            vector_array(classes, probability, nulls.clone())?,
            Arc::new(Float64Array::new(prediction.into(), nulls.clone())),
        ];
        let result = StructArray::try_new(output_fields(classes), columns, nulls)?;
        Ok(ColumnarValue::Array(Arc::new(result)))
    }
}

/// Raw scores, probabilities and predictions of `rows` rows of network outputs.
fn scores(outputs: &[f32], rows: usize, classes: usize, one_logit: bool) -> (Vec<f32>, Vec<f32>, Vec<f64>) {
    let mut raw = Vec::with_capacity(rows * classes);
    let mut probability = Vec::with_capacity(rows * classes);
    let mut prediction = Vec::with_capacity(rows);
    for row in 0..rows {
        if one_logit {
            let z = outputs[row];
            let p = 1.0 / (1.0 + (-f64::from(z)).exp());
            raw.extend([-z / 2.0, z / 2.0]);
            probability.extend([(1.0 - p) as f32, p as f32]);
            prediction.push(if p > 0.5 { 1.0 } else { 0.0 });
            continue;
        }
        let logits = &outputs[row * classes..(row + 1) * classes];
        let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let exp: Vec<f64> = logits.iter().map(|&z| f64::from(z - max).exp()).collect();
        let sum: f64 = exp.iter().sum();
        let mean = logits.iter().map(|&z| f64::from(z)).sum::<f64>() / classes as f64;
        raw.extend(logits.iter().map(|&z| (f64::from(z) - mean) as f32));
        probability.extend(exp.iter().map(|e| (e / sum) as f32));
        let best = exp
            .iter()
            .enumerate()
            .fold(0, |best, (i, &e)| if e > exp[best] { i } else { best });
        prediction.push(best as f64);
    }
    (raw, probability, prediction)
}

/// Loaded models, most recent last: a model is loaded once per process, not once per batch.
static PREDICTORS: Mutex<Vec<(u64, Arc<Mutex<Predictor>>)>> = Mutex::new(Vec::new());
const CACHED_MODELS: usize = 4;

fn predictor(bytes: &[u8]) -> Result<Arc<Mutex<Predictor>>> {
    let mut hasher = DefaultHasher::new();
    bytes.hash(&mut hasher);
    let key = hasher.finish();
    let mut cache = PREDICTORS.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(found) = cache.iter().position(|(k, _)| *k == key) {
        let entry = cache.remove(found);
        let predictor = Arc::clone(&entry.1);
        cache.push(entry);
        return Ok(predictor);
    }
    let predictor = ModelArtifact::from_bytes(bytes)
        .and_then(|artifact| artifact.predictor())
        .map_err(|e| DataFusionError::Execution(format!("{NAME}: {e}")))?;
    let predictor = Arc::new(Mutex::new(predictor));
    if cache.len() == CACHED_MODELS {
        cache.remove(0);
    }
    cache.push((key, Arc::clone(&predictor)));
    Ok(predictor)
}
