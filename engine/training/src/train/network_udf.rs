//! A trained network as a SQL function bound to its model: `ml_classify(features)` for a classifier (its
//! `rawPrediction`, `probability` and `prediction`), `ml_regress(features)` for a regressor (its prediction).

use std::fmt;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, LazyLock};

use datafusion::arrow::array::{ArrayRef, Float64Array, StructArray};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{exec_err, plan_err};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, Documentation, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use hearth_exec::extension::UdfCodec;
use hearth_exec::udf::ML_DOC_SECTION;
use hearth_exec::vector::{classifier_score_fields, vector_array, vector_dim, vector_values};
use hearth_torch::artifact::ModelArtifact;
use hearth_torch::train::Loss;

use super::predictors::Predictors;

/// The function's name for a classifier.
pub const CLASSIFY: &str = "ml_classify";

/// The function's name for a regressor.
pub const REGRESS: &str = "ml_regress";

/// What a model predicts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Task {
    /// Classes: the outputs are logits (one logit for a binary model trained with binary cross-entropy).
    Classes { classes: usize, one_logit: bool },
    /// A number: the one output.
    Value,
}

/// A trained network as a scalar function of a vector column, bound to its model. For a classifier,
/// `ml_classify(features)` gives `{rawPrediction, probability, prediction}` per row, as Spark's
/// probabilistic classifiers. `rawPrediction` holds the network's logits centred on their mean (softmax does
/// not change, and slot 1 of a two-class model ranks rows as the positive class's probability does, which is
/// what `BinaryClassificationEvaluator` reads; a one-logit binary model gives `[-z/2, z/2]`), `probability`
/// their softmax, and `prediction` the index of the largest probability, the first on ties. A null vector
/// gives a null result. For a regressor (mean squared error loss), `ml_regress(features)` gives the network's
/// output as a `Float64`.
///
/// The model (`ModelArtifact::to_bytes`) lives in the function, not in the plan's text: hearth's codecs
/// carry it to a cluster's scheduler and executors, and two functions are equal when their models are.
pub struct NetworkUdf {
    signature: Signature,
    model: Arc<Vec<u8>>,
    fingerprint: u64,
    task: Task,
    networks: Predictors,
}

impl fmt::Debug for NetworkUdf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NetworkUdf")
            .field(
                "model",
                &format_args!("{} bytes, fingerprint {:016x}", self.model.len(), self.fingerprint),
            )
            .field("task", &self.task)
            .finish()
    }
}

impl PartialEq for NetworkUdf {
    fn eq(&self, other: &Self) -> bool {
        self.fingerprint == other.fingerprint && self.model == other.model
    }
}

impl Eq for NetworkUdf {}

impl Hash for NetworkUdf {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.fingerprint.hash(state);
    }
}

impl NetworkUdf {
    /// The function of the model in `model` (bytes written by `ModelArtifact::to_bytes`).
    ///
    /// ```
    /// use hearth_training::train::NetworkUdf;
    /// use hearth_torch::artifact::ModelArtifact;
    /// use hearth_torch::model::{ModelSpec, NamedTensor};
    /// use hearth_torch::train::{TrainOptions, TrainSettings};
    ///
    /// let spec = ModelSpec::Linear { inputs: 2, outputs: 3 };
    /// let tensors = vec![
    ///     NamedTensor { name: "0.weight".into(), shape: vec![3, 2], values: vec![0.1; 6] },
    ///     NamedTensor { name: "0.bias".into(), shape: vec![3], values: vec![0.0; 3] },
    /// ];
    /// let model = ModelArtifact::new(TrainOptions::new(spec, TrainSettings::default()), tensors, vec![]);
    /// assert_eq!(NetworkUdf::new(model.to_bytes().unwrap()).unwrap().classes(), Some(3));
    /// assert!(NetworkUdf::new(b"not a model".to_vec()).is_err());
    /// ```
    pub fn new(model: Vec<u8>) -> Result<Self> {
        let task = task_of(&model)?;
        let mut hasher = DefaultHasher::new();
        model.hash(&mut hasher);
        Ok(Self {
            signature: Signature::any(1, Volatility::Immutable),
            model: Arc::new(model),
            fingerprint: hasher.finish(),
            task,
            networks: Predictors::default(),
        })
    }

    /// The model's bytes.
    pub fn model(&self) -> &[u8] {
        &self.model
    }

    /// The number of classes of a classifier; `None` for a regressor.
    pub fn classes(&self) -> Option<usize> {
        match self.task {
            Task::Classes { classes, .. } => Some(classes),
            Task::Value => None,
        }
    }
}

/// What a model predicts, from its spec and loss: classes (its outputs, or 2 for a one-logit binary model),
/// or one number.
fn task_of(bytes: &[u8]) -> Result<Task> {
    let failed = |e: &dyn fmt::Display| DataFusionError::Plan(format!("{CLASSIFY}: {e}"));
    let options = ModelArtifact::options_from_bytes(bytes).map_err(|e| failed(&e))?;
    let outputs = options.model.outputs().map_err(|e| failed(&e))?;
    if options.loss == Loss::MeanSquaredError {
        if outputs != 1 {
            return plan_err!("{REGRESS}: a regressor must have one output, the model has {outputs}");
        }
        return Ok(Task::Value);
    }
    let one_logit = outputs == 1 && options.loss == Loss::BinaryCrossEntropy;
    Ok(Task::Classes {
        classes: if one_logit { 2 } else { outputs },
        one_logit,
    })
}

impl NetworkUdf {
    /// The function's result type.
    fn output_type(&self) -> DataType {
        match self.task {
            Task::Classes { classes, .. } => DataType::Struct(classifier_score_fields(classes)),
            Task::Value => DataType::Float64,
        }
    }
}

/// What the `features` argument of a trained network's function holds.
const FEATURES: &str = "Each row's vector (a `FixedSizeList` of numbers), as wide as the model's input.";

/// The SQL documentation of `ml_classify`.
static CLASSIFY_DOCS: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        ML_DOC_SECTION,
        "A trained network classifier's prediction, as Spark's probabilistic classifiers give theirs: a struct \
         `{rawPrediction, probability, prediction}` per row, with the network's logits centred on their mean \
         (`[−z/2, z/2]` for a one-logit binary model) and their softmax (`[1 − σ(z), σ(z)]` for that model) as \
         vectors (`FixedSizeList<Float32>`, one slot per class), and the index of the most probable class, the \
         first on ties, as a `Float64`. The function is bound to its model, which hearth's codecs carry to the \
         executors; a null vector gives null.",
        "ml_classify(features)",
    )
    .with_argument("features", FEATURES)
    .build()
});

/// The SQL documentation of `ml_regress`.
static REGRESS_DOCS: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        ML_DOC_SECTION,
        "A trained network regressor's prediction (a network trained with mean squared error): its one output for \
         each row's vector, as a `Float64`. The function is bound to its model, which hearth's codecs carry to the \
         executors; a null vector gives null.",
        "ml_regress(features)",
    )
    .with_argument("features", FEATURES)
    .build()
});

impl ScalarUDFImpl for NetworkUdf {
    fn name(&self) -> &str {
        match self.task {
            Task::Classes { .. } => CLASSIFY,
            Task::Value => REGRESS,
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(self.output_type())
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let features = &args.arg_fields[0];
        if vector_dim(features.data_type()).is_none() {
            return plan_err!(
                "{}: column {:?} must be a vector, got {}",
                self.name(),
                features.name(),
                features.data_type()
            );
        }
        Ok(Arc::new(Field::new(self.name(), self.output_type(), true)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let input = args.args[0].to_array(args.number_rows)?;
        let (values, nulls) = vector_values(&input)?;
        let dim = vector_dim(input.data_type()).unwrap_or(0);
        let rows = input.len();
        let outputs = self.networks.with(&self.model, self.name(), |predictor| {
            if predictor.input_width() != dim {
                return exec_err!(
                    "{}: column {:?} holds {dim}-dimensional vectors but the model takes {}",
                    self.name(),
                    args.arg_fields[0].name(),
                    predictor.input_width()
                );
            }
            predictor
                .outputs(values.values(), rows)
                .map_err(|e| DataFusionError::Execution(format!("{}: {e}", self.name())))
        })?;
        let Task::Classes { classes, one_logit } = self.task else {
            let values: Vec<f64> = outputs.iter().map(|&v| f64::from(v)).collect();
            return Ok(ColumnarValue::Array(Arc::new(Float64Array::new(values.into(), nulls))));
        };
        let (raw, probability, prediction) = scores(&outputs, rows, classes, one_logit);
        let columns: Vec<ArrayRef> = vec![
            vector_array(rows, classes, raw, nulls.clone())?,
            vector_array(rows, classes, probability, nulls.clone())?,
            Arc::new(Float64Array::new(prediction.into(), nulls.clone())),
        ];
        let result = StructArray::try_new(classifier_score_fields(classes), columns, nulls)?;
        Ok(ColumnarValue::Array(Arc::new(result)))
    }

    fn documentation(&self) -> Option<&Documentation> {
        let docs: &LazyLock<Documentation> = match self.task {
            Task::Classes { .. } => &CLASSIFY_DOCS,
            Task::Value => &REGRESS_DOCS,
        };
        Some(docs)
    }
}

/// How a trained model's functions travel to the executors: with their model.
pub const NETWORK_UDF_CODEC: UdfCodec = UdfCodec {
    names: &[CLASSIFY, REGRESS],
    encode: |udf, buf| {
        let inner: &dyn std::any::Any = udf.inner().as_ref();
        let network = inner.downcast_ref::<NetworkUdf>();
        if let Some(network) = network {
            buf.extend_from_slice(network.model());
        }
        network.is_some()
    },
    decode: |model| Ok(Arc::new(ScalarUDF::from(NetworkUdf::new(model.to_vec())?))),
};

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
