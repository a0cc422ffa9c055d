//! `ml_explain(features)`: a trained network's integrated-gradients attributions as a SQL function bound to
//! its model and to how it explains — the baseline, the number of steps, which feature each vector slot
//! belongs to, how many features to keep. Each row gets its attributions summed per feature and sorted by
//! magnitude, the explained output at the row and at the baseline, and the approximation error.

use std::fmt;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, LazyLock};

use datafusion::arrow::array::{
    Array, ArrayRef, Float64Array, Float64Builder, ListBuilder, StringBuilder, StructArray, StructBuilder,
};
use datafusion::arrow::datatypes::{DataType, Field, Fields};
use datafusion::common::{exec_err, plan_err};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, Documentation, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use hearth_exec::extension::UdfCodec;
use hearth_exec::udf::ML_DOC_SECTION;
use hearth_exec::vector::{vector_dim, vector_values};
use hearth_torch::artifact::ModelArtifact;
use hearth_torch::explain::{Attributions, Explained, integrated_gradients};
use hearth_torch::train::Loss;
use serde::{Deserialize, Serialize};

use super::predictors::Predictors;

/// The function's name.
pub const EXPLAIN: &str = "ml_explain";

/// Rows whose interpolation points go through the network at once: 512 × 20 points keep a small network's
/// activations in the cache (benches/results/2026-11-28-explain.md: 2,048 took 1.4× as long).
const ROWS_AT_ONCE: usize = 512;

/// How a model's predictions are explained.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExplainSettings {
    /// The point attributions are measured from, one value per slot (hearth: the training rows' mean).
    pub baseline: Vec<f32>,
    /// Interpolation points between the baseline and the row (BigQuery's integrated gradients: 20 by default
    /// here; more is more exact and slower).
    pub steps: usize,
    /// The features attributions are reported for.
    pub features: Vec<String>,
    /// For each slot of the vector, the index of its feature in `features`.
    pub slot_features: Vec<usize>,
    /// How many features each row keeps, the largest attributions by magnitude (all when `None`).
    pub top_k: Option<usize>,
}

/// The fields of one attribution.
fn attribution_fields() -> Fields {
    Fields::from(vec![
        Field::new("feature", DataType::Utf8, false),
        Field::new("attribution", DataType::Float64, false),
    ])
}

/// The fields of `ml_explain`'s result.
fn output_fields() -> Fields {
    let attribution = Field::new("item", DataType::Struct(attribution_fields()), true);
    Fields::from(vec![
        Field::new("attributions", DataType::List(Arc::new(attribution)), true),
        Field::new("baseline_prediction_value", DataType::Float64, true),
        Field::new("prediction_value", DataType::Float64, true),
        Field::new("approximation_error", DataType::Float64, true),
    ])
}

/// `ml_explain(features)`, bound to a model (`ModelArtifact::to_bytes`) and its [`ExplainSettings`]; it travels
/// to a fleet's executors with both.
pub struct ExplainUdf {
    signature: Signature,
    model: Arc<Vec<u8>>,
    settings: ExplainSettings,
    explained: Explained,
    fingerprint: u64,
    networks: Predictors,
}

impl fmt::Debug for ExplainUdf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExplainUdf")
            .field("model", &format_args!("{} bytes", self.model.len()))
            .field("settings", &self.settings)
            .finish()
    }
}

impl PartialEq for ExplainUdf {
    fn eq(&self, other: &Self) -> bool {
        self.fingerprint == other.fingerprint && self.model == other.model && self.settings == other.settings
    }
}

impl Eq for ExplainUdf {}

impl Hash for ExplainUdf {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.fingerprint.hash(state);
    }
}

impl ExplainUdf {
    /// The function explaining the model in `model` (bytes of `ModelArtifact::to_bytes`) as `settings` say;
    /// an error when the settings do not fit the model.
    pub fn new(model: Vec<u8>, settings: ExplainSettings) -> Result<Self> {
        let options =
            ModelArtifact::options_from_bytes(&model).map_err(|e| DataFusionError::Plan(format!("{EXPLAIN}: {e}")))?;
        let inputs = options.model.input_features();
        let outputs = options
            .model
            .outputs()
            .map_err(|e| DataFusionError::Plan(format!("{EXPLAIN}: {e}")))?;
        if settings.baseline.len() != inputs || settings.slot_features.len() != inputs {
            return plan_err!(
                "{EXPLAIN}: the model reads {inputs} slots, the baseline has {} and the slot map {}",
                settings.baseline.len(),
                settings.slot_features.len()
            );
        }
        if settings.slot_features.iter().any(|&f| f >= settings.features.len()) || settings.steps == 0 {
            return plan_err!("{EXPLAIN}: a slot names no feature, or no integration steps");
        }
        let explained = match (options.loss, outputs) {
            (Loss::MeanSquaredError, _) => Explained::Output,
            (Loss::BinaryCrossEntropy, 1) => Explained::PredictedClassOfOneLogit,
            _ => Explained::PredictedClass,
        };
        let mut hasher = DefaultHasher::new();
        model.hash(&mut hasher);
        Ok(Self {
            signature: Signature::any(1, Volatility::Immutable),
            model: Arc::new(model),
            settings,
            explained,
            fingerprint: hasher.finish(),
            networks: Predictors::default(),
        })
    }

    /// The model's bytes and the settings, as the codec writes them: the settings' JSON length (8 bytes,
    /// little-endian), the JSON, the model.
    fn to_bytes(&self) -> Vec<u8> {
        let json = serde_json::to_vec(&self.settings).unwrap_or_default();
        let mut bytes = (json.len() as u64).to_le_bytes().to_vec();
        bytes.extend_from_slice(&json);
        bytes.extend_from_slice(&self.model);
        bytes
    }

    fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let failed = || DataFusionError::Plan(format!("{EXPLAIN}: the function's bytes are damaged"));
        let length = bytes.get(..8).ok_or_else(failed)?;
        let length = u64::from_le_bytes(length.try_into().map_err(|_| failed())?) as usize;
        let json = bytes.get(8..8 + length).ok_or_else(failed)?;
        let settings = serde_json::from_slice(json).map_err(|_| failed())?;
        Self::new(bytes[8 + length..].to_vec(), settings)
    }

    /// Each row's attributions per feature, largest magnitude first, `top_k` of them.
    fn per_feature(&self, attributions: &[f32]) -> Vec<(usize, f64)> {
        let mut sums = vec![0.0; self.settings.features.len()];
        for (slot, value) in attributions.iter().enumerate() {
            sums[self.settings.slot_features[slot]] += f64::from(*value);
        }
        let mut ranked: Vec<(usize, f64)> = sums.into_iter().enumerate().collect();
        ranked.sort_by(|a, b| b.1.abs().total_cmp(&a.1.abs()));
        ranked.truncate(self.settings.top_k.unwrap_or(usize::MAX));
        ranked
    }

    /// The attributions of every row of `values` (rows × `dim`), a block of rows at a time.
    fn attribute(&self, values: &[f32], rows: usize, dim: usize) -> Result<Attributions> {
        let mut all = Attributions {
            values: Vec::with_capacity(rows * dim),
            prediction: Vec::with_capacity(rows),
            baseline_prediction: Vec::with_capacity(rows),
        };
        self.networks.with(&self.model, EXPLAIN, |predictor| {
            for start in (0..rows).step_by(ROWS_AT_ONCE) {
                let block = ROWS_AT_ONCE.min(rows - start);
                let part = integrated_gradients(
                    predictor,
                    &values[start * dim..(start + block) * dim],
                    block,
                    &self.settings.baseline,
                    self.settings.steps,
                    self.explained,
                )
                .map_err(|e| DataFusionError::Execution(format!("{EXPLAIN}: {e}")))?;
                all.values.extend(part.values);
                all.prediction.extend(part.prediction);
                all.baseline_prediction.extend(part.baseline_prediction);
            }
            Ok(())
        })?;
        Ok(all)
    }
}

/// The SQL documentation of `ml_explain`.
static DOCS: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        ML_DOC_SECTION,
        "A trained network's prediction for each row explained by integrated gradients (`ML.EXPLAIN_PREDICT`): the \
         attributions summed per feature, largest magnitude first (only the top `k` when the function keeps `k`), \
         the explained value at the row and at the baseline, and the approximation error (the gap between the \
         attributions' sum and the value's change, relative to that change). The explained value is a \
         classifier's probability of its predicted class, or a regressor's output. Returns a struct \
         `{attributions: List<{feature: Utf8, attribution: Float64}>, baseline_prediction_value: Float64, \
         prediction_value: Float64, approximation_error: Float64}`; a null vector gives null. The function is bound \
         to its model and to how it explains (the baseline, the steps, each vector slot's feature, `k`), which \
         hearth's codecs carry to the executors.",
        "ml_explain(features)",
    )
    .with_argument(
        "features",
        "Each row's vector (a `FixedSizeList` of numbers), as wide as the model's input and the baseline.",
    )
    .build()
});

impl ScalarUDFImpl for ExplainUdf {
    fn name(&self) -> &str {
        EXPLAIN
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        if vector_dim(&arg_types[0]) != Some(self.settings.baseline.len()) {
            return plan_err!(
                "{EXPLAIN}: the features must be {}-slot vectors, got {}",
                self.settings.baseline.len(),
                arg_types[0]
            );
        }
        Ok(DataType::Struct(output_fields()))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let input = args.args[0].to_array(args.number_rows)?;
        let (values, nulls) = vector_values(&input)?;
        let (rows, dim) = (input.len(), self.settings.baseline.len());
        if vector_dim(input.data_type()) != Some(dim) {
            return exec_err!("{EXPLAIN}: the features are not {dim}-slot vectors");
        }
        let explained = self.attribute(values.values(), rows, dim)?;
        let builders: Vec<Box<dyn datafusion::arrow::array::ArrayBuilder>> =
            vec![Box::new(StringBuilder::new()), Box::new(Float64Builder::new())];
        let mut lists = ListBuilder::new(StructBuilder::new(attribution_fields(), builders));
        let mut errors = Vec::with_capacity(rows);
        for row in 0..rows {
            let attributions = &explained.values[row * dim..(row + 1) * dim];
            let change = f64::from(explained.prediction[row]) - f64::from(explained.baseline_prediction[row]);
            let total: f64 = attributions.iter().map(|&a| f64::from(a)).sum();
            errors.push((total - change).abs() / change.abs().max(1e-12));
            for (feature, value) in self.per_feature(attributions) {
                let entry = lists.values();
                entry
                    .field_builder::<StringBuilder>(0)
                    .ok_or_else(|| DataFusionError::Internal(format!("{EXPLAIN}: feature builder")))?
                    .append_value(&self.settings.features[feature]);
                entry
                    .field_builder::<Float64Builder>(1)
                    .ok_or_else(|| DataFusionError::Internal(format!("{EXPLAIN}: attribution builder")))?
                    .append_value(value);
                entry.append(true);
            }
            lists.append(nulls.as_ref().is_none_or(|n| n.is_valid(row)));
        }
        let number = |values: Vec<f64>| Arc::new(Float64Array::new(values.into(), nulls.clone())) as ArrayRef;
        let to_f64 = |values: &[f32]| values.iter().map(|&v| f64::from(v)).collect::<Vec<_>>();
        let columns: Vec<ArrayRef> = vec![
            Arc::new(lists.finish()),
            number(to_f64(&explained.baseline_prediction)),
            number(to_f64(&explained.prediction)),
            number(errors),
        ];
        let result = StructArray::try_new(output_fields(), columns, nulls)?;
        Ok(ColumnarValue::Array(Arc::new(result)))
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(&DOCS)
    }
}

/// How an explanation travels to the executors: with its model and settings.
pub const EXPLAIN_UDF_CODEC: UdfCodec = UdfCodec {
    names: &[EXPLAIN],
    encode: |udf, buf| {
        let inner: &dyn std::any::Any = udf.inner().as_ref();
        let explain = inner.downcast_ref::<ExplainUdf>();
        if let Some(explain) = explain {
            buf.extend_from_slice(&explain.to_bytes());
        }
        explain.is_some()
    },
    decode: |bytes| Ok(Arc::new(ScalarUDF::from(ExplainUdf::from_bytes(bytes)?))),
};

/// `ml_explain` of a model's bytes with `settings`, as a registered function.
pub fn explain_function(model: Vec<u8>, settings: ExplainSettings) -> Result<Arc<ScalarUDF>> {
    Ok(Arc::new(ScalarUDF::from(ExplainUdf::new(model, settings)?)))
}
