//! The trials of a tuned `CREATE MODEL`: each trial's estimator fitted after the preprocessing all trials
//! share (fitted once), `max_parallel_trials` at a time — a network's each its own barrier stage — and scored
//! with `ML.EVALUATE`'s metrics (a network's on the held-out rows, k-means' on the training rows, as BigQuery
//! ML scores them); the best by the objective becomes the model, every trial is kept in the model's
//! `trials.json` and shown by `ML.TRIAL_INFO(MODEL m)`.

use std::collections::BTreeMap;
use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::common::ScalarValue;
use datafusion::common::scalar::ScalarStructBuilder;
use datafusion::logical_expr::LogicalPlan;
use datafusion::prelude::DataFrame;
use hearth_exec::error::{HearthError, Result};
use hearth_exec::session::Session;
use hearth_preprocessing::pipeline::{Pipeline, PipelineModel, PipelineStage};
use hearth_preprocessing::stage::Estimator;
use hearth_preprocessing::tuning::search::{CandidateRun, best_of, run_candidates};
use serde::{Deserialize, Serialize};

use super::catalog::{CatalogModel, ModelEntry, read_json};
use super::error::{invalid, invalid_option};
use super::hparams::{TrialValues, Tuning};
use super::kmeans;
use super::options::{ModelOptions, ModelType};
use super::rows::{literal_rows, metric_value};
use super::table_functions::evaluate;
use super::trained::Trained;

/// The file of a tuned model's entry holding its trials.
pub const TRIALS_FILE: &str = "trials.json";

/// The objectives `hparam_tuning_objectives` takes — BigQuery ML's names — with the column of `ML.EVALUATE`
/// each is, and whether larger is better.
const CLASSIFIER_METRICS: [(&str, &str, bool); 6] = [
    ("roc_auc", "areaUnderROC", true),
    ("f1_score", "f1", true),
    ("accuracy", "accuracy", true),
    ("precision", "weightedPrecision", true),
    ("recall", "weightedRecall", true),
    ("log_loss", "logLoss", false),
];
const REGRESSOR_METRICS: [(&str, &str, bool); 4] = [
    ("r2_score", "r2", true),
    ("mean_absolute_error", "mae", false),
    ("mean_squared_error", "mse", false),
    ("explained_variance", "var", true),
];
const CLUSTERING_METRICS: [(&str, &str, bool); 2] = [
    ("davies_bouldin_index", "davies_bouldin_index", false),
    ("mean_squared_distance", "mean_squared_distance", false),
];

/// How a model type's trials are scored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scoring {
    /// `ML.EVALUATE`'s classification metrics on the held-out rows.
    Classifier,
    /// `ML.EVALUATE`'s regression metrics on the held-out rows.
    Regressor,
    /// k-means' `ML.EVALUATE` (Davies–Bouldin index, mean squared distance) on the training rows.
    Clustering,
}

impl Scoring {
    /// How `model_type`'s trials are scored.
    pub(crate) fn of(model_type: ModelType) -> Self {
        match model_type {
            ModelType::KMeans => Scoring::Clustering,
            kind if kind.is_classifier() => Scoring::Classifier,
            _ => Scoring::Regressor,
        }
    }

    /// The metrics: BigQuery ML's name, the column of `ML.EVALUATE`, whether larger is better.
    fn metrics(self) -> &'static [(&'static str, &'static str, bool)] {
        match self {
            Scoring::Classifier => &CLASSIFIER_METRICS,
            Scoring::Regressor => &REGRESSOR_METRICS,
            Scoring::Clustering => &CLUSTERING_METRICS,
        }
    }

    fn model_kind(self) -> &'static str {
        match self {
            Scoring::Classifier => "classifier",
            Scoring::Regressor => "regressor",
            Scoring::Clustering => "k-means model",
        }
    }

    /// The metric `ML.TRIAL_INFO` shows as a trial's `eval_loss`, when there are held-out rows.
    fn eval_loss(self) -> Option<&'static str> {
        match self {
            Scoring::Classifier => Some("log_loss"),
            Scoring::Regressor => Some("mean_squared_error"),
            Scoring::Clustering => None,
        }
    }
}

/// One trial, as `trials.json` keeps it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrialRecord {
    /// 1, 2, … in the order the trials were drawn.
    pub trial_id: usize,
    /// The tuned options' values, as SQL.
    pub hyperparameters: BTreeMap<String, String>,
    /// The metrics it was scored by, by BigQuery ML's names (empty when the trial failed).
    pub metrics: BTreeMap<String, f64>,
    /// The last epoch's mean training loss; a k-means model's mean squared distance.
    pub training_loss: Option<f64>,
    /// The held-out rows' loss: log loss for a classifier, mean squared error for a regressor; none for k-means.
    pub eval_loss: Option<f64>,
    /// `SUCCEEDED` or `FAILED`.
    pub status: String,
    /// Why a trial failed.
    pub error_message: Option<String>,
    /// Seconds from the start of the first trial to this one's start.
    pub start_seconds: f64,
    /// How long it took.
    pub seconds: f64,
    /// Whether it is the model kept.
    pub is_optimal: bool,
}

/// What `trials.json` holds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrialsRecord {
    /// `random_search` or `grid_search`.
    pub algorithm: String,
    /// The objective, by BigQuery ML's name.
    pub objective: String,
    /// Whether a larger objective is better.
    pub larger_is_better: bool,
    /// Every trial, by id.
    pub trials: Vec<TrialRecord>,
}

/// What tuning kept: the best trial's model and options, and every trial.
pub(crate) struct Tuned {
    pub model: PipelineModel,
    pub options: ModelOptions,
    pub record: TrialsRecord,
}

/// Checks `hparam_tuning_objectives` names a metric of the model type, before anything trains.
pub(crate) fn check_objective(tuning: &Tuning, scoring: Scoring) -> Result<()> {
    let Some(objective) = &tuning.objective else {
        return Ok(());
    };
    let metrics = scoring.metrics();
    if metrics.iter().any(|(name, ..)| name == objective) {
        return Ok(());
    }
    Err(invalid_option(
        "hparam_tuning_objectives",
        format!(
            "{objective:?} is not a metric of a {}; expected one of {}",
            scoring.model_kind(),
            metrics.iter().map(|(name, ..)| *name).collect::<Vec<_>>().join(", ")
        ),
    ))
}

/// What a trial needs besides its options: the shared preprocessing, the rows, and how to build its estimator.
pub(crate) struct TrialInputs<'a> {
    pub session: &'a Session,
    /// The preprocessing every trial shares, fitted once on the training rows.
    pub preprocessing: &'a PipelineModel,
    pub train: &'a DataFrame,
    /// The rows the trials are scored on: held out from training, or (k-means) the training rows.
    pub scored_on: &'a DataFrame,
    /// The model's entry as far as scoring needs it (inputs, label, label index).
    pub entry: &'a ModelEntry,
    /// How the trials are scored.
    pub scoring: Scoring,
}

/// Runs every trial, `max_parallel_trials` at once, and keeps the best by the objective. A trial that fails
/// is recorded as failed; when every trial fails, the first one's error is returned.
pub(crate) async fn run_trials(
    inputs: TrialInputs<'_>,
    tuning: &Tuning,
    trials: Vec<(TrialValues, ModelOptions)>,
    estimator: impl Fn(&ModelOptions) -> Result<PipelineStage>,
) -> Result<Tuned> {
    let jobs = trials
        .iter()
        .enumerate()
        .map(|(index, (_, options))| estimator(options).map(|stage| (index, stage)))
        .collect::<Result<Vec<_>>>()?;
    let inputs = &inputs;
    let mut runs = run_candidates(jobs, tuning.max_parallel_trials, |stage| trial(inputs, stage)).await;

    let scoring = inputs.scoring;
    let succeeded: Vec<&BTreeMap<String, f64>> = runs
        .iter()
        .filter_map(|run| run.outcome.as_ref().ok().map(|(_, m)| m))
        .collect();
    let Some(first_scores) = succeeded.first() else {
        let first = runs.swap_remove(0);
        let failed = invalid(
            "OPTIONS",
            format!("every trial failed; trial 1 ({})", describe(&trials[first.candidate].0)),
        );
        return Err(match first.outcome {
            Err(cause) => failed.caused_by(cause),
            Ok(_) => failed,
        });
    };
    let objective = objective(tuning, scoring, first_scores)?;
    let larger = scoring
        .metrics()
        .iter()
        .find(|(name, ..)| *name == objective)
        .is_none_or(|(.., larger)| *larger);
    let score = |metrics: &BTreeMap<String, f64>| metrics.get(&objective).copied().filter(|v| v.is_finite());
    let scores = runs
        .iter()
        .filter_map(|run| Some((run.candidate, score(&run.outcome.as_ref().ok()?.1)?)));
    let best = best_of(scores, larger).ok_or_else(|| {
        invalid(
            "OPTIONS",
            format!("no trial has a finite {objective} on the held-out rows"),
        )
    })?;

    let mut model = None;
    let mut records = Vec::with_capacity(runs.len());
    for run in runs {
        let values = &trials[run.candidate].0;
        let (record, pipeline) = trial_record(run, values, scoring, best);
        if record.is_optimal {
            model = pipeline;
        }
        records.push(record);
    }
    let model = model.ok_or_else(|| invalid("OPTIONS", "the best trial's model was lost"))?;
    Ok(Tuned {
        model,
        options: trials[best].1.clone(),
        record: TrialsRecord {
            algorithm: tuning.algorithm.name().to_string(),
            objective,
            larger_is_better: larger,
            trials: records,
        },
    })
}

/// A trial's record, and its fitted pipeline when it succeeded.
fn trial_record(
    run: CandidateRun<Scored>,
    values: &TrialValues,
    scoring: Scoring,
    best: usize,
) -> (TrialRecord, Option<PipelineModel>) {
    let (index, started, seconds) = (run.candidate, run.started, run.seconds());
    let hyperparameters = values
        .iter()
        .map(|(name, value)| (name.clone(), value.to_string()))
        .collect();
    let (metrics, training_loss, error_message, pipeline) = match run.outcome {
        Ok((pipeline, metrics)) => {
            let loss = match scoring {
                // k-means is scored on its training rows: their mean squared distance is its loss.
                Scoring::Clustering => metrics.get("mean_squared_distance").copied(),
                _ => Trained::of(&pipeline).and_then(Trained::final_loss),
            };
            (metrics, loss, None, Some(pipeline))
        }
        Err(error) => (BTreeMap::new(), None, Some(error.to_string()), None),
    };
    let eval_loss = scoring.eval_loss().and_then(|name| metrics.get(name).copied());
    let record = TrialRecord {
        trial_id: index + 1,
        hyperparameters,
        status: if error_message.is_none() { "SUCCEEDED" } else { "FAILED" }.to_string(),
        metrics,
        training_loss,
        eval_loss,
        error_message,
        start_seconds: started,
        seconds,
        is_optimal: index == best,
    };
    (record, pipeline)
}

/// The metric the trials are compared by: `hparam_tuning_objectives`, else BigQuery ML's default for the
/// model type (`roc_auc` for a classifier of two classes, which the first succeeded trial's `scores` show).
fn objective(tuning: &Tuning, scoring: Scoring, scores: &BTreeMap<String, f64>) -> Result<String> {
    Ok(match &tuning.objective {
        Some(name) if !scores.contains_key(name) => {
            return Err(invalid_option(
                "hparam_tuning_objectives",
                format!(
                    "{name:?} needs a label of two classes; use f1_score, accuracy, \
                     precision, recall or log_loss"
                ),
            ));
        }
        Some(name) => name.clone(),
        None => match scoring {
            Scoring::Clustering => "davies_bouldin_index",
            Scoring::Regressor => "r2_score",
            Scoring::Classifier if scores.contains_key("roc_auc") => "roc_auc",
            Scoring::Classifier => "f1_score",
        }
        .to_string(),
    })
}

/// `learn_rate=0.001, dropout=0.2`: a trial in messages.
fn describe(values: &TrialValues) -> String {
    values
        .iter()
        .map(|(name, value)| format!("{name}={value}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A trial's fitted pipeline and its held-out metrics by BigQuery ML's names.
type Scored = (PipelineModel, BTreeMap<String, f64>);

/// One trial: its estimator fitted after the shared preprocessing, scored.
async fn trial(inputs: &TrialInputs<'_>, estimator: PipelineStage) -> Result<Scored> {
    let mut stages: Vec<PipelineStage> = inputs
        .preprocessing
        .stages()
        .iter()
        .map(|stage| PipelineStage::Transformer(Arc::clone(stage)))
        .collect();
    stages.push(estimator);
    let pipeline = Pipeline::from_stages(stages).fit(inputs.train).await?;
    let scored = CatalogModel {
        entry: inputs.entry.clone(),
        pipeline,
        dir: Default::default(),
        location: String::new(),
    };
    let plan = match inputs.scoring {
        Scoring::Clustering => kmeans::evaluate(&scored, inputs.scored_on.clone())?,
        _ => evaluate(&scored, inputs.scored_on.clone())?,
    };
    let rows = DataFrame::new(inputs.session.context().state(), plan).collect().await?;
    let metrics = inputs
        .scoring
        .metrics()
        .iter()
        .filter_map(|(name, column, _)| Some((name.to_string(), metric_value(&rows, column)?)))
        .collect();
    Ok((scored.pipeline, metrics))
}

/// `ML.TRIAL_INFO`: one row per trial of a tuned model.
pub(crate) fn trial_info(model: &CatalogModel) -> Result<LogicalPlan> {
    let file = model.dir.join(TRIALS_FILE);
    if !file.is_file() {
        return Err(HearthError::invalid_param(
            format!("ML.TRIAL_INFO(MODEL {})", model.entry.name),
            "MODEL",
            "the model was not tuned: it has trials only when CREATE MODEL set num_trials",
        ));
    }
    trial_rows(&read_json(&file)?)
}

/// The hyperparameters' SQL text as shown: whole numbers as `INT64` (BigQuery's type for `num_clusters`,
/// `batch_size`) and other numbers as `FLOAT64` when every trial's value of an option is one, quoted strings
/// without their quotes.
fn hyperparameter_types(record: &TrialsRecord) -> BTreeMap<&str, DataType> {
    let mut types = BTreeMap::new();
    for trial in &record.trials {
        for (name, value) in &trial.hyperparameters {
            let seen = if value.parse::<i64>().is_ok() {
                DataType::Int64
            } else if value.parse::<f64>().is_ok() {
                DataType::Float64
            } else {
                DataType::Utf8
            };
            let entry = types.entry(name.as_str()).or_insert(DataType::Int64);
            *entry = match (&*entry, seen) {
                (DataType::Utf8, _) | (_, DataType::Utf8) => DataType::Utf8,
                (DataType::Float64, _) | (_, DataType::Float64) => DataType::Float64,
                _ => DataType::Int64,
            };
        }
    }
    types
}

fn trial_rows(record: &TrialsRecord) -> Result<LogicalPlan> {
    let types = hyperparameter_types(record);
    let metric_names: Vec<&str> = {
        let mut names: Vec<&str> = record
            .trials
            .iter()
            .flat_map(|t| t.metrics.keys().map(String::as_str))
            .collect();
        names.sort_unstable();
        names.dedup();
        names
    };
    let mut rows = Vec::with_capacity(record.trials.len());
    let (mut hyperparameters_type, mut metrics_type) = (None, None);
    for trial in &record.trials {
        let mut hyperparameters = ScalarStructBuilder::new();
        for (name, data_type) in &types {
            let text = trial.hyperparameters.get(*name);
            let value = match data_type {
                DataType::Int64 => ScalarValue::Int64(text.and_then(|t| t.parse().ok())),
                DataType::Float64 => ScalarValue::Float64(text.and_then(|t| t.parse().ok())),
                _ => ScalarValue::Utf8(text.map(|t| t.trim_matches('\'').to_string())),
            };
            hyperparameters = hyperparameters.with_scalar(Field::new(*name, data_type.clone(), true), value);
        }
        let mut metrics = ScalarStructBuilder::new();
        for name in &metric_names {
            metrics = metrics.with_scalar(
                Field::new(*name, DataType::Float64, true),
                ScalarValue::Float64(trial.metrics.get(*name).copied()),
            );
        }
        let (hyperparameters, metrics) = (hyperparameters.build()?, metrics.build()?);
        hyperparameters_type.get_or_insert_with(|| hyperparameters.data_type());
        metrics_type.get_or_insert_with(|| metrics.data_type());
        rows.push(vec![
            ScalarValue::Int64(Some(trial.trial_id as i64)),
            hyperparameters,
            metrics,
            ScalarValue::Float64(trial.training_loss),
            ScalarValue::Float64(trial.eval_loss),
            ScalarValue::from(trial.status.as_str()),
            ScalarValue::Utf8(trial.error_message.clone()),
            ScalarValue::Float64(Some(trial.start_seconds)),
            ScalarValue::Float64(Some(trial.seconds)),
            ScalarValue::Boolean(Some(trial.is_optimal)),
        ]);
    }
    let schema = Schema::new(vec![
        Field::new("trial_id", DataType::Int64, false),
        Field::new("hyperparameters", hyperparameters_type.unwrap_or(DataType::Null), true),
        Field::new(
            "hparam_tuning_evaluation_metrics",
            metrics_type.unwrap_or(DataType::Null),
            true,
        ),
        Field::new("training_loss", DataType::Float64, true),
        Field::new("eval_loss", DataType::Float64, true),
        Field::new("status", DataType::Utf8, false),
        Field::new("error_message", DataType::Utf8, true),
        Field::new("start_seconds", DataType::Float64, false),
        Field::new("seconds", DataType::Float64, false),
        Field::new("is_optimal", DataType::Boolean, false),
    ]);
    literal_rows(schema, rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trial_rows_type_numbers_as_numbers_and_keep_failures() {
        let trial = |id: usize, rate: &str, auc: Option<f64>| TrialRecord {
            trial_id: id,
            hyperparameters: BTreeMap::from([
                ("batch_size".to_string(), (16 * id).to_string()),
                ("learn_rate".to_string(), rate.to_string()),
                ("optimizer".to_string(), "'adam'".to_string()),
            ]),
            metrics: auc
                .map(|auc| BTreeMap::from([("roc_auc".to_string(), auc)]))
                .unwrap_or_default(),
            training_loss: auc.map(|_| 0.5),
            eval_loss: None,
            status: if auc.is_some() { "SUCCEEDED" } else { "FAILED" }.to_string(),
            error_message: auc.is_none().then(|| "rank 1 failed".to_string()),
            start_seconds: 0.0,
            seconds: 1.0,
            is_optimal: id == 1,
        };
        let record = TrialsRecord {
            algorithm: "random_search".to_string(),
            objective: "roc_auc".to_string(),
            larger_is_better: true,
            trials: vec![trial(1, "0.001", Some(0.9)), trial(2, "1", None)],
        };
        let plan = trial_rows(&record).unwrap();
        let schema = plan.schema();
        let hyperparameters = schema
            .field_with_unqualified_name("hyperparameters")
            .unwrap()
            .data_type();
        let DataType::Struct(fields) = hyperparameters else {
            panic!("{hyperparameters}")
        };
        // batch_size always whole; learn_rate 0.001 in one trial and 1 in the other.
        assert_eq!(fields[0].data_type(), &DataType::Int64);
        assert_eq!(fields[1].data_type(), &DataType::Float64);
        assert_eq!(fields[2].data_type(), &DataType::Utf8);
    }
}
