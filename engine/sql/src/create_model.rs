//! `CREATE MODEL`: the training query's rows, split as `data_split_method` says, preprocessed as `TRANSFORM`
//! says (or, without it, as BigQuery ML does: numbers standardized, strings one-hot encoded), the label
//! indexed when it is not a number, and the estimator `model_type` names — one pipeline, fitted and saved in
//! the catalog with the held-out rows. With `num_trials`, the preprocessing is fitted once and each trial's
//! estimator after it (see [`hparams`](super::hparams) and [`trials`](super::trials)); the best trial is kept.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::DataType;
use datafusion::logical_expr::{col, ident};
use datafusion::prelude::DataFrame;
use datafusion::sql::sqlparser::ast::{SelectItem, SqlOption};

use super::catalog::{EVALUATION_FILE, ModelCatalog, ModelEntry, now_ms};
use super::hparams::{TrialValues, split_tuning, with_values};
use super::kmeans::create_kmeans;
use super::options::{ClassWeights, DataSplit, ModelOptions, ModelType};
use super::parser::CreateModel;
use super::trained::Trained;
use super::transform::{TransformPlan, plan_transform};
use super::trials::{Scoring, TRIALS_FILE, TrialInputs, TrialsRecord, check_objective, run_trials};
use hearth_engine::error::{HearthError, Result};
use hearth_engine::feature::{OneHotEncoder, StandardScaler, StringIndexer, StringIndexerModel, VectorAssembler};
use hearth_engine::frame::DataFrameExt;
use hearth_engine::params::HandleInvalid;
use hearth_engine::pipeline::{Pipeline, PipelineStage};
use hearth_engine::session::Session;
use hearth_engine::stage::{Estimator, quoted_columns};
use hearth_engine::train::{Architecture, Classifier, LinearClassifier, MlpClassifier, MlpRegressor};
use hearth_engine::vector::vector_dim;

/// The column the pipeline's assembled features go to.
pub(super) const FEATURES: &str = "__features";
/// The automatic transform's assembled numbers, and the same standardized.
pub(super) const NUMBERS: &str = "__numbers";
pub(super) const SCALED_NUMBERS: &str = "__numbers_scaled";

/// The automatic transform's one-hot vector of string column `name`.
pub(super) fn one_hot_column(name: &str) -> String {
    format!("__{name}_vector")
}

/// The column an indexed label goes to.
const LABEL_INDEX: &str = "__label";

/// What `CREATE MODEL` reports: the model, its rows and how training went.
#[derive(Clone, Debug, PartialEq)]
pub struct CreatedModel {
    /// The model's name.
    pub name: String,
    /// Whether it was trained (`false`: `IF NOT EXISTS` found one).
    pub trained: bool,
    /// Its entry in the catalog.
    pub entry: Option<ModelEntry>,
    /// The last epoch's mean training loss.
    pub loss: Option<f64>,
    /// How many runs its training stage took (more than 1: it was retried from a checkpoint).
    pub attempts: Option<usize>,
    /// Its folder in the catalog.
    pub path: PathBuf,
    /// The trial kept, when `num_trials` tuned the model.
    pub best_trial: Option<BestTrial>,
}

/// The trial a tuned `CREATE MODEL` kept.
#[derive(Clone, Debug, PartialEq)]
pub struct BestTrial {
    /// Its id in `ML.TRIAL_INFO`.
    pub trial_id: usize,
    /// How many trials ran.
    pub trials: usize,
    /// The objective, by BigQuery ML's name.
    pub objective: String,
    /// Its value on the held-out rows.
    pub value: f64,
}

impl BestTrial {
    pub(super) fn of(record: &TrialsRecord) -> Option<Self> {
        let best = record.trials.iter().find(|t| t.is_optimal)?;
        Some(Self {
            trial_id: best.trial_id,
            trials: record.trials.len(),
            objective: record.objective.clone(),
            value: *best.metrics.get(&record.objective)?,
        })
    }
}

pub(super) fn invalid(param: &'static str, message: impl Into<String>) -> HearthError {
    HearthError::InvalidParam {
        stage: "CREATE MODEL".to_string(),
        param,
        message: message.into(),
    }
}

/// Runs a `CREATE MODEL` statement in `session`, whose catalog receives the model.
pub(crate) async fn create_model(session: &Session, create: &CreateModel) -> Result<CreatedModel> {
    let (fixed, tuning) = split_tuning(&create.options)?;
    let options = ModelOptions::from_sql(&fixed)?;
    // Every trial's options are read before anything trains, so a bad candidate fails the statement at once.
    let trials: Vec<(TrialValues, ModelOptions)> = match &tuning {
        Some(tuning) => {
            check_objective(tuning, Scoring::of(options.model_type))?;
            for values in tuning.every_value() {
                ModelOptions::from_sql(&with_values(&fixed, &values))?;
            }
            tuning
                .trials(options.seed)
                .into_iter()
                .map(|values| Ok((values.clone(), ModelOptions::from_sql(&with_values(&fixed, &values))?)))
                .collect::<Result<_>>()?
        }
        None => Vec::new(),
    };
    let catalog = ModelCatalog::of(session);
    if catalog.contains(&create.name) {
        if create.if_not_exists {
            return Ok(CreatedModel {
                name: create.name.clone(),
                trained: false,
                entry: None,
                loss: None,
                attempts: None,
                path: catalog.dir().join(&create.name),
                best_trial: None,
            });
        }
        if !create.or_replace {
            return Err(invalid(
                "name",
                format!(
                    "model {:?} exists; use CREATE OR REPLACE MODEL to replace it",
                    create.name
                ),
            ));
        }
    }
    let started = Instant::now();
    let input = super::rows::plan_query(session, &create.query).await?;
    if !options.model_type.is_network() {
        let tuning = tuning.as_ref().map(|tuning| (tuning, trials));
        return create_kmeans(session, create, &options, &input, tuning, started).await;
    }
    let label_type = label_type(&input, &options)?;
    let transform = match &create.transform {
        Some(items) => plan_transform(items, &input)?,
        None => automatic_transform(&input, &options)?,
    };
    let features: Vec<String> = transform
        .outputs
        .iter()
        .filter(|c| **c != options.label && Some(*c) != options.data_split_col.as_ref())
        .cloned()
        .collect();
    if features.is_empty() {
        return Err(invalid("TRANSFORM", "no feature columns: every output is the label"));
    }
    let (train, evaluation) = split(&input, &options).await?;

    let mut stages: Vec<PipelineStage> = Vec::new();
    let indexed_label = label_type == LabelType::Indexed;
    let indexer = StringIndexer::new().input_col(&options.label).output_col(LABEL_INDEX);
    // Weights by label need the label order before training: then the indexer is fitted on its own.
    let labels = match (indexed_label, &options.class_weights) {
        (true, Some(ClassWeights::ByLabel(_))) => {
            let fitted = indexer.fit(&train).await?;
            let labels = fitted.labels()[0].clone();
            stages.push(fitted.into());
            Some(labels)
        }
        (true, _) => {
            stages.push(indexer.into());
            None
        }
        (false, _) => None,
    };
    let preprocessing_stages = stages.len() + transform.stages.len();
    stages.extend(transform.stages);
    stages.push(
        VectorAssembler::new()
            .input_cols(features.clone())
            .output_col(FEATURES)
            .into(),
    );
    let label_index = if indexed_label {
        LABEL_INDEX
    } else {
        options.label.as_str()
    };
    let mut entry = ModelEntry {
        name: create.name.clone(),
        model_type: options.model_type.to_string(),
        label: options.label.clone(),
        labels: None,
        classifier: options.model_type.is_classifier(),
        label_index: label_index.to_string(),
        inputs: transform
            .inputs
            .into_iter()
            .filter(|c| *c != options.label && Some(c) != options.data_split_col.as_ref())
            .collect(),
        features,
        preprocessing_stages,
        options: options.written.clone(),
        transform: create.transform.as_ref().map(|items| list_text(items)),
        query: Some(create.query.to_string()),
        training_rows: 0,
        evaluation_rows: 0,
        training_seconds: 0.0,
        created_ms: 0,
    };
    let (model, tuned) = match &tuning {
        None => {
            stages.push(estimator(&options, label_index, labels.as_deref())?);
            (Pipeline::from_stages(stages).fit(&train).await?, None)
        }
        Some(tuning) => {
            let Some((held_out, _)) = &evaluation else {
                return Err(invalid(
                    "OPTIONS",
                    "option num_trials: the trials are scored on held-out rows, and this split holds none out; \
                     set data_split_method (e.g. 'random' with data_split_eval_fraction = 0.2)",
                ));
            };
            let preprocessing = Pipeline::from_stages(stages).fit(&train).await?;
            let inputs = TrialInputs {
                session,
                preprocessing: &preprocessing,
                train: &train,
                scored_on: held_out,
                entry: &entry,
                scoring: Scoring::of(options.model_type),
            };
            let tuned = run_trials(inputs, tuning, trials, |options| {
                estimator(options, label_index, labels.as_deref())
            })
            .await?;
            entry.options = kept_options(&tuned.options, create);
            (tuned.model, Some(tuned.record))
        }
    };
    let labels = match (indexed_label, labels) {
        (true, None) => model
            .stages()
            .first()
            .and_then(|stage| stage.downcast_ref::<StringIndexerModel>())
            .map(|indexer| indexer.labels()[0].clone()),
        (_, labels) => labels,
    };

    let trained = Trained::of(&model);
    let evaluation_rows = match &evaluation {
        Some((_, rows)) => rows.iter().map(RecordBatch::num_rows).sum::<usize>() as u64,
        None => 0,
    };
    entry.labels = labels;
    entry.training_rows = trained.map_or(0, |t| t.summary().ranks.iter().map(|r| r.rows as u64).sum());
    entry.evaluation_rows = evaluation_rows;
    entry.training_seconds = started.elapsed().as_secs_f64();
    entry.created_ms = now_ms();
    catalog.save(&entry, &model, create.or_replace, |dir| {
        if let Some((_, rows)) = &evaluation
            && evaluation_rows > 0
        {
            write_parquet(&dir.join(EVALUATION_FILE), rows)?;
        }
        match &tuned {
            Some(record) => write_json(&dir.join(TRIALS_FILE), record),
            None => Ok(()),
        }
    })?;
    Ok(CreatedModel {
        name: create.name.clone(),
        trained: true,
        loss: trained.and_then(|t| t.history().last()).map(|e| e.loss),
        attempts: trained.map(|t| t.summary().attempts.len()),
        path: catalog.dir().join(&create.name),
        entry: Some(entry),
        best_trial: tuned.as_ref().and_then(BestTrial::of),
    })
}

/// The options a tuned model's kept trial trained with, and how it was tuned (as the statement wrote it).
pub(super) fn kept_options(trained_with: &ModelOptions, create: &CreateModel) -> BTreeMap<String, String> {
    let mut options = trained_with.written.clone();
    for option in &create.options {
        if let SqlOption::KeyValue { key, value } = option {
            let name = key.value.to_ascii_lowercase();
            options.entry(name).or_insert_with(|| value.to_string());
        }
    }
    options
}

pub(super) fn list_text(items: &[SelectItem]) -> String {
    items.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum LabelType {
    /// Strings or booleans: indexed, the values kept for predictions.
    Indexed,
    /// Numbers: class indices (classifier) or targets (regressor) as they are.
    Numeric,
}

fn label_type(input: &DataFrame, options: &ModelOptions) -> Result<LabelType> {
    let field = input
        .schema()
        .field_with_unqualified_name(&options.label)
        .map_err(|_| HearthError::Schema {
            stage: "CREATE MODEL".to_string(),
            column: options.label.clone(),
            message: format!(
                "input_label_cols names no column of the training query (it has {})",
                quoted_columns(input)
            ),
        })?;
    let data_type = field.data_type();
    match (data_type.is_numeric(), options.model_type.is_classifier()) {
        (true, _) => Ok(LabelType::Numeric),
        (false, true)
            if matches!(
                data_type,
                DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Boolean
            ) =>
        {
            Ok(LabelType::Indexed)
        }
        _ => Err(HearthError::Schema {
            stage: "CREATE MODEL".to_string(),
            column: options.label.clone(),
            message: format!(
                "a {} label must be {}, got {data_type}",
                options.model_type,
                if options.model_type.is_classifier() {
                    "a number or a string"
                } else {
                    "a number"
                }
            ),
        }),
    }
}

/// Without a TRANSFORM: every column but the label (and the split column) is a feature — numbers and
/// booleans assembled and standardized, strings indexed (unseen values kept) and one-hot encoded, vectors as
/// they are.
pub(super) fn automatic_transform(input: &DataFrame, options: &ModelOptions) -> Result<TransformPlan> {
    let (mut numbers, mut stages, mut outputs, mut inputs) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for field in input.schema().fields() {
        let name = field.name();
        if *name == options.label || Some(name) == options.data_split_col.as_ref() {
            continue;
        }
        inputs.push(name.clone());
        let data_type = field.data_type();
        if vector_dim(data_type).is_some() {
            outputs.push(name.clone());
        } else if data_type.is_numeric() || data_type == &DataType::Boolean {
            numbers.push(name.clone());
        } else if matches!(data_type, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View) {
            let (index, vector) = (format!("__{name}_index"), one_hot_column(name));
            stages.push(
                StringIndexer::new()
                    .input_col(name)
                    .output_col(&index)
                    .handle_invalid(HandleInvalid::Keep)
                    .into(),
            );
            stages.push(OneHotEncoder::new().input_col(&index).output_col(&vector).into());
            outputs.push(vector);
        } else {
            return Err(HearthError::Schema {
                stage: "CREATE MODEL".to_string(),
                column: name.clone(),
                message: format!("a {data_type} column cannot be a feature; leave it out or convert it in TRANSFORM"),
            });
        }
    }
    if !numbers.is_empty() && !options.standardize_features {
        stages.push(VectorAssembler::new().input_cols(numbers).output_col(NUMBERS).into());
        outputs.insert(0, NUMBERS.to_string());
    } else if !numbers.is_empty() {
        stages.push(VectorAssembler::new().input_cols(numbers).output_col(NUMBERS).into());
        stages.push(
            StandardScaler::new()
                .input_col(NUMBERS)
                .output_col(SCALED_NUMBERS)
                .with_mean(true)
                .into(),
        );
        outputs.insert(0, SCALED_NUMBERS.to_string());
    }
    Ok(TransformPlan {
        stages,
        outputs,
        inputs,
    })
}

/// The training rows, and the rows held out for evaluation: as a plan, and collected (they are saved with the
/// model).
async fn split(
    input: &DataFrame,
    options: &ModelOptions,
) -> Result<(DataFrame, Option<(DataFrame, Vec<RecordBatch>)>)> {
    let fraction = options.data_split_eval_fraction;
    let random = |fraction: f64| -> Result<(DataFrame, DataFrame)> {
        let parts = input.random_split(&[1.0 - fraction, fraction], options.data_split_seed)?;
        Ok((parts[0].clone(), parts[1].clone()))
    };
    let (train, held) = match options.data_split {
        DataSplit::NoSplit => return Ok((input.clone(), None)),
        DataSplit::Random if fraction > 0.0 => random(fraction)?,
        DataSplit::Random => return Ok((input.clone(), None)),
        DataSplit::Auto => {
            let rows = input.clone().count().await?;
            match rows {
                0..500 => return Ok((input.clone(), None)),
                500..=50_000 => random(0.2)?,
                _ => random(10_000.0 / rows as f64)?,
            }
        }
        DataSplit::Custom => {
            let column = options.data_split_col.as_deref().unwrap_or_default();
            let flag = ident(column).is_true();
            (input.clone().filter(!flag.clone())?, input.clone().filter(flag)?)
        }
        DataSplit::Seq => {
            let column = options.data_split_col.as_deref().unwrap_or_default();
            let rows = input.clone().count().await?;
            let training = rows - (rows as f64 * fraction).round() as usize;
            let ordered = input.clone().sort(vec![col(column).sort(true, true)])?;
            (
                ordered.clone().limit(0, Some(training))?,
                ordered.limit(training, None)?,
            )
        }
    };
    let rows = held.clone().collect().await?;
    Ok((train, Some((held, rows))))
}

/// The estimator `model_type` names, with the options; `labels` are the indexed label's values.
fn estimator(options: &ModelOptions, label: &str, labels: Option<&[String]>) -> Result<PipelineStage> {
    let weights = match (&options.class_weights, labels) {
        (None, _) => None,
        (Some(ClassWeights::ByIndex(weights)), _) => Some(weights.clone()),
        (Some(ClassWeights::ByLabel(pairs)), Some(labels)) => {
            for (name, _) in pairs {
                if !labels.contains(name) {
                    return Err(invalid(
                        "OPTIONS",
                        format!("option class_weights: the label has no value {name:?} (it has {labels:?})"),
                    ));
                }
            }
            Some(
                labels
                    .iter()
                    .map(|l| pairs.iter().find(|(name, _)| name == l).map_or(1.0, |(_, w)| *w))
                    .collect(),
            )
        }
        (Some(ClassWeights::ByLabel(_)), None) => {
            return Err(invalid(
                "OPTIONS",
                "option class_weights: weights by label need a string label; give them by class index",
            ));
        }
    };
    /// The options every network estimator takes.
    macro_rules! configured {
        ($estimator:expr) => {{
            let mut estimator = $estimator
                .features_col(FEATURES)
                .label_col(label)
                .optimizer(options.optimizer.clone())
                .epochs(options.epochs)
                .batch_size(options.batch_size)
                .seed(options.seed)
                .device(options.device.clone())
                .precision(options.precision)
                .workers(options.workers)
                .strategy(options.strategy.clone())
                .max_attempts(options.max_attempts);
            if let Some(timeout) = options.timeout {
                estimator = estimator.timeout(timeout);
            }

            estimator
        }};
    }
    Ok(match options.model_type {
        ModelType::MlpClassifier => weighted(
            configured!(
                MlpClassifier::new()
                    .hidden_layers(options.hidden_units.clone())
                    .activation(options.activation)
                    .dropout(options.dropout)
            ),
            weights,
        )
        .into(),
        ModelType::LogisticReg => weighted(configured!(LinearClassifier::new()), weights).into(),
        ModelType::MlpRegressor if weights.is_some() => {
            return Err(invalid("OPTIONS", "option class_weights: a regressor has no classes"));
        }
        ModelType::KMeans => return Err(invalid("model_type", "k-means is not a network estimator")),
        ModelType::MlpRegressor => configured!(
            MlpRegressor::new()
                .hidden_layers(options.hidden_units.clone())
                .activation(options.activation)
                .dropout(options.dropout)
        )
        .into(),
    })
}

/// `classifier` with loss weights per class, if any.
fn weighted<A: Architecture>(classifier: Classifier<A>, weights: Option<Vec<f64>>) -> Classifier<A> {
    match weights {
        Some(weights) => classifier.class_weights(weights),
        None => classifier,
    }
}

/// Writes `value` as pretty JSON.
pub(super) fn write_json(file: &Path, value: &impl serde::Serialize) -> Result<()> {
    let failed = |e: &dyn std::fmt::Display| HearthError::Persistence {
        path: file.to_path_buf(),
        message: e.to_string(),
    };
    let text = serde_json::to_string_pretty(value).map_err(|e| failed(&e))?;
    std::fs::write(file, text + "\n").map_err(|e| failed(&e))
}

/// Writes `batches` to a parquet file.
fn write_parquet(file: &Path, batches: &[RecordBatch]) -> Result<()> {
    let failed = |e: &dyn std::fmt::Display| HearthError::Persistence {
        path: file.to_path_buf(),
        message: e.to_string(),
    };
    let Some(first) = batches.first() else {
        return Ok(());
    };
    let out = std::fs::File::create(file).map_err(|e| failed(&e))?;
    let mut writer =
        datafusion::parquet::arrow::ArrowWriter::try_new(out, first.schema(), None).map_err(|e| failed(&e))?;
    for batch in batches {
        writer.write(batch).map_err(|e| failed(&e))?;
    }
    writer.close().map_err(|e| failed(&e))?;
    Ok(())
}
