//! `CREATE MODEL`: the training query's rows, split as `data_split_method` says, preprocessed as `TRANSFORM`
//! says (or, without it, as BigQuery ML does: numbers standardized, strings one-hot encoded), the label
//! indexed when it is not a number, and the estimator `model_type` names — a network, or k-means over the
//! features alone — in one pipeline, fitted and saved in the catalog with the held-out rows. With
//! `num_trials`, the preprocessing is fitted once and each trial's estimator after it (see
//! [`hparams`](super::hparams) and [`trials`](super::trials)); the best trial is kept.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use datafusion::arrow::array::RecordBatch;
use datafusion::logical_expr::{col, ident, lit};
use datafusion::prelude::DataFrame;
use datafusion::sql::sqlparser::ast::{SelectItem, SqlOption};
use hearth_exec::error::Result;
use hearth_exec::frame::DataFrameExt;
use hearth_exec::session::Session;
use hearth_preprocessing::feature::{StandardScaler, StringIndexer, StringIndexerModel, VectorAssembler};
use hearth_preprocessing::pipeline::{Pipeline, PipelineModel, PipelineStage};
use hearth_preprocessing::stage::Estimator;

use super::catalog::{CatalogModel, ModelCatalog, ModelEntry, now_ms, write_evaluation_rows, write_json};
use super::class_weights::class_weights;
use super::error::invalid;
use super::estimators::estimator;
use super::hparams::{TrialValues, Tuning};
use super::kmeans::{self, TRAINING_FIGURES_FILE, TrainingFigures};
use super::model_plan::{CreateModelPlan, LABEL_INDEX, LabelType, is_feature, plan_create_model};
use super::options::{ClassWeights, DataSplit, ModelOptions};
use super::parser::CreateModel;
use super::preprocessing::{FEATURES, HELD_OUT};
use super::trained::Trained;
use super::training_rows::check_training_rows;
use super::trials::{Scoring, TRIALS_FILE, TrialInputs, TrialsRecord, Tuned, run_trials};

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
    fn of(record: &TrialsRecord) -> Option<Self> {
        let best = record.trials.iter().find(|t| t.is_optimal)?;
        Some(Self {
            trial_id: best.trial_id,
            trials: record.trials.len(),
            objective: record.objective.clone(),
            value: *best.metrics.get(&record.objective)?,
        })
    }
}

/// Runs a `CREATE MODEL` statement in `session`, whose catalog receives the model: planned, then executed. With
/// `IF NOT EXISTS` and a model of that name, nothing is planned (the query may no longer plan) or trained.
pub(crate) async fn create_model(session: &Session, create: &CreateModel) -> Result<CreatedModel> {
    let catalog = ModelCatalog::of(session)?;
    if create.if_not_exists && catalog.contains(&create.name) {
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
    let started = Instant::now();
    let plan = plan_create_model(session, create).await?;
    execute_create_model(session, &catalog, plan, started).await
}

/// Executes a planned `CREATE MODEL`: splits the rows, fits the pipeline (or tunes it), and saves the model in
/// `catalog`; its training time counts from `started`.
async fn execute_create_model(
    session: &Session,
    catalog: &ModelCatalog,
    plan: CreateModelPlan,
    started: Instant,
) -> Result<CreatedModel> {
    let create = &plan.create;
    let (options, input) = (&plan.options, &plan.input);
    let mut planned = prepare(&plan).await?;
    let (model, tuned) = match &plan.tuning {
        None => {
            let estimator = estimator(options, &planned.entry.label_index, planned.class_weights.as_deref())?;
            (fit(&planned, estimator, options.early_stop).await?, None)
        }
        Some(tuning) => {
            let scoring = Scoring::of(options.model_type);
            let trials = plan.trials.clone();
            let tuned = tune(session, &planned, tuning, trials, scoring, options.early_stop).await?;
            planned.entry.options = kept_options(&tuned.options, create);
            (tuned.model, Some(tuned.record))
        }
    };
    let mut entry = planned.entry;
    entry.labels = match (planned.label_type, planned.labels) {
        (LabelType::Indexed, None) => model
            .stages()
            .first()
            .and_then(|stage| stage.downcast_ref::<StringIndexerModel>())
            .map(|indexer| indexer.labels()[0].clone()),
        (_, labels) => labels,
    };
    let outcome = Outcome::of(&model);
    entry.training_rows = outcome.rows;
    entry.evaluation_rows = planned.evaluation.as_ref().map_or(0, |(_, rows)| {
        rows.iter().map(RecordBatch::num_rows).sum::<usize>() as u64
    });
    (entry.feature_means, entry.feature_deviations) = feature_moments(&model, &planned.train).await?.unzip();
    entry.training_seconds = started.elapsed().as_secs_f64();
    entry.created_ms = now_ms();
    let files = EntryFiles::of(session, &entry, &model, input, planned.evaluation, tuned).await?;
    catalog.save(&entry, &model, create.or_replace, |dir| files.write(dir))?;
    Ok(CreatedModel {
        name: create.name.clone(),
        trained: true,
        loss: outcome.loss,
        attempts: outcome.attempts,
        path: catalog.dir().join(&create.name),
        best_trial: files.trials.as_ref().and_then(BestTrial::of),
        entry: Some(entry),
    })
}

/// A `CREATE MODEL`'s pipeline before its estimator: the preprocessing's stages (the label's indexer, the
/// TRANSFORM's or automatic stages, the features' assembler), the rows, and the catalog entry as far as known.
struct Planned {
    stages: Vec<PipelineStage>,
    label_type: LabelType,
    /// The label's values, when they are needed before training (class weights by label or balanced).
    labels: Option<Vec<String>>,
    /// The classes' loss weights by class index, when the statement weighs them.
    class_weights: Option<Vec<f64>>,
    train: DataFrame,
    /// The rows held out for evaluation: as a plan, and collected.
    evaluation: Option<(DataFrame, Vec<RecordBatch>)>,
    entry: ModelEntry,
}

/// The planned pipeline over the rows: split, the label's indexer (fitted first when class weights need its
/// order), the preprocessing and the assembler, the training rows checked and the class weights drawn.
async fn prepare(plan: &CreateModelPlan) -> Result<Planned> {
    let (create, options, input, label_type) = (&plan.create, &plan.options, &plan.input, plan.label_type);
    let (transform, features) = (plan.transform.clone(), plan.features.clone());
    // k-means is fitted, and scored, on every row.
    let (train, evaluation) = match label_type {
        LabelType::Unlabelled => (input.clone(), None),
        _ => split(input, options).await?,
    };
    let mut stages: Vec<PipelineStage> = Vec::new();
    let indexer = StringIndexer::new().input_col(&options.label).output_col(LABEL_INDEX);
    // Weights by label or balanced need the label order before training: then the indexer is fitted on its own.
    let labels = match (label_type, &options.class_weights) {
        (LabelType::Indexed, Some(ClassWeights::ByLabel(_) | ClassWeights::Balanced)) => {
            let fitted = indexer.fit(&train).await?;
            let labels = fitted.labels()[0].clone();
            stages.push(fitted.into());
            Some(labels)
        }
        (LabelType::Indexed, _) => {
            stages.push(indexer.into());
            None
        }
        _ => None,
    };
    // ML.TRANSFORM applies these; a k-means model's include the assembler (its features are the vector).
    let preprocessing_stages = stages.len() + transform.stages.len() + usize::from(label_type == LabelType::Unlabelled);
    stages.extend(transform.stages);
    stages.push(
        VectorAssembler::new()
            .input_cols(features.clone())
            .output_col(FEATURES)
            .into(),
    );
    let entry = ModelEntry {
        name: create.name.clone(),
        model_type: options.model_type.to_string(),
        label: options.label.clone(),
        labels: None,
        classifier: options.model_type.is_classifier(),
        label_index: match label_type {
            LabelType::Indexed => LABEL_INDEX,
            _ => options.label.as_str(),
        }
        .to_string(),
        inputs: (transform.inputs.into_iter())
            .filter(|c| is_feature(c, options))
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
        feature_means: None,
        feature_deviations: None,
    };
    check_training_rows(&train, options, &entry.inputs).await?;
    let class_weights = class_weights(options, &train, &options.label, labels.as_deref()).await?;
    Ok(Planned {
        stages,
        label_type,
        labels,
        class_weights,
        train,
        evaluation,
        entry,
    })
}

/// The preprocessing and `estimator` fitted on the training rows; under `early_stop`, the preprocessing on
/// the training rows, then `estimator` on the training rows and the held-out rows, marked [`HELD_OUT`]: it
/// trains on the first and validates on the second every epoch.
async fn fit(planned: &Planned, estimator: PipelineStage, early_stop: bool) -> Result<PipelineModel> {
    if !early_stop {
        let mut stages = planned.stages.clone();
        stages.push(estimator);
        return Pipeline::from_stages(stages).fit(&planned.train).await;
    }
    let rows = validating_rows(planned)?;
    let preprocessing = Pipeline::from_stages(planned.stages.clone())
        .fit(&planned.train)
        .await?;
    let mut stages: Vec<PipelineStage> = preprocessing
        .stages()
        .iter()
        .map(|stage| PipelineStage::Transformer(Arc::clone(stage)))
        .collect();
    stages.push(estimator);
    Pipeline::from_stages(stages).fit(&rows).await
}

/// The training rows and the held-out rows in one frame, the second marked [`HELD_OUT`]; an error when the
/// split holds no rows out.
fn validating_rows(planned: &Planned) -> Result<DataFrame> {
    let Some((held_out, _)) = &planned.evaluation else {
        return Err(invalid(
            "OPTIONS",
            "option early_stop: training stops when the held-out rows' loss stops improving, and this split \
             holds none out; set data_split_method (e.g. 'random' with data_split_eval_fraction = 0.2)",
        ));
    };
    let marked = |rows: &DataFrame, held: bool| rows.clone().with_column(HELD_OUT, lit(held));
    Ok(marked(&planned.train, false)?.union(marked(held_out, true)?)?)
}

/// A model's training rows' mean features vector, the baseline of its explanations (`ML.EXPLAIN_PREDICT`),
/// and each slot's standard deviation, what standardized weights weigh by (`ML.WEIGHTS`); none for k-means.
async fn feature_moments(model: &PipelineModel, train: &DataFrame) -> Result<Option<(Vec<f64>, Vec<f64>)>> {
    let Some(network) = Trained::of(model) else {
        return Ok(None);
    };
    let stages = model.stages();
    let features = stages[..stages.len() - 1]
        .iter()
        .try_fold(train.clone(), |df, stage| stage.transform(&df))?;
    let summary = StandardScaler::new()
        .input_col(network.features_col())
        .output_col("__feature_moments")
        .with_mean(true)
        .fit(&features)
        .await?;
    Ok(Some((summary.mean().to_vec(), summary.std().to_vec())))
}

/// The trials of a tuned statement, scored on the held-out rows (k-means: on the training rows), after the
/// preprocessing fitted once.
async fn tune(
    session: &Session,
    planned: &Planned,
    tuning: &Tuning,
    trials: Vec<(TrialValues, ModelOptions)>,
    scoring: Scoring,
    early_stop: bool,
) -> Result<Tuned> {
    let scored_on = match (&planned.evaluation, planned.label_type) {
        (_, LabelType::Unlabelled) => &planned.train,
        (Some((held_out, _)), _) => held_out,
        (None, _) => {
            return Err(invalid(
                "OPTIONS",
                "option num_trials: the trials are scored on held-out rows, and this split holds none out; set \
                 data_split_method (e.g. 'random' with data_split_eval_fraction = 0.2)",
            ));
        }
    };
    // Under early_stop each trial validates on the held-out rows as it trains.
    let train = match early_stop {
        true => validating_rows(planned)?,
        false => planned.train.clone(),
    };
    let preprocessing = Pipeline::from_stages(planned.stages.clone())
        .fit(&planned.train)
        .await?;
    let inputs = TrialInputs {
        session,
        preprocessing: &preprocessing,
        train: &train,
        scored_on,
        entry: &planned.entry,
        scoring,
    };
    let (label, weights) = (planned.entry.label_index.as_str(), planned.class_weights.as_deref());
    run_trials(inputs, tuning, trials, |options| estimator(options, label, weights)).await
}

/// The files an entry keeps beside its pipeline: the held-out rows, a k-means model's figures on its
/// training rows, a tuned model's trials.
struct EntryFiles {
    evaluation: Option<Vec<RecordBatch>>,
    figures: Option<TrainingFigures>,
    trials: Option<TrialsRecord>,
}

impl EntryFiles {
    /// The files of `model`, trained on `input`; a k-means model's figures are the kept trial's score, or
    /// computed now (for ML.EVALUATE(MODEL m) without rows).
    async fn of(
        session: &Session,
        entry: &ModelEntry,
        model: &PipelineModel,
        input: &DataFrame,
        evaluation: Option<(DataFrame, Vec<RecordBatch>)>,
        trials: Option<TrialsRecord>,
    ) -> Result<Self> {
        let best = trials
            .as_ref()
            .and_then(|record| record.trials.iter().find(|t| t.is_optimal));
        let figures = match (kmeans::fitted(model), best) {
            (None, _) => None,
            (Some(_), Some(trial)) => Some(TrainingFigures::of_metrics(&trial.metrics)),
            (Some(_), None) => {
                let scored = CatalogModel {
                    entry: entry.clone(),
                    pipeline: model.clone(),
                    dir: PathBuf::new(),
                    location: String::new(),
                };
                Some(TrainingFigures::compute(session, &scored, input).await?)
            }
        };
        Ok(Self {
            evaluation: evaluation.map(|(_, rows)| rows),
            figures,
            trials,
        })
    }

    /// Writes them into the entry's folder.
    fn write(&self, dir: &Path) -> Result<()> {
        if let Some(rows) = &self.evaluation {
            write_evaluation_rows(dir, rows)?;
        }
        if let Some(figures) = &self.figures {
            write_json(&dir.join(TRAINING_FIGURES_FILE), figures)?;
        }
        match &self.trials {
            Some(record) => write_json(&dir.join(TRIALS_FILE), record),
            None => Ok(()),
        }
    }
}

/// How the fitted model trained: the rows it trained on, its last loss (k-means: its training cost; a linear
/// model: its last objective) and how many runs its training stage took (none for k-means, fitted as aggregate
/// queries, nor for a linear model, solved in one stage).
struct Outcome {
    rows: u64,
    loss: Option<f64>,
    attempts: Option<usize>,
}

impl Outcome {
    fn of(model: &PipelineModel) -> Self {
        if let Some(kmeans) = kmeans::fitted(model) {
            let summary = kmeans.summary();
            return Self {
                rows: summary.map_or(0, |s| s.cluster_sizes.iter().sum()),
                loss: summary.map(|s| s.training_cost),
                attempts: None,
            };
        }
        let trained = Trained::of(model);
        Self {
            rows: trained.map_or(0, Trained::training_rows),
            loss: trained.and_then(Trained::final_loss),
            attempts: trained.and_then(Trained::summary).map(|s| s.attempts.len()),
        }
    }
}

/// The options a tuned model's kept trial trained with, and how it was tuned (as the statement wrote it).
fn kept_options(trained_with: &ModelOptions, create: &CreateModel) -> BTreeMap<String, String> {
    let mut options = trained_with.written.clone();
    for option in &create.options {
        if let SqlOption::KeyValue { key, value } = option {
            let name = key.value.to_ascii_lowercase();
            options.entry(name).or_insert_with(|| value.to_string());
        }
    }
    options
}

fn list_text(items: &[SelectItem]) -> String {
    items.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
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
