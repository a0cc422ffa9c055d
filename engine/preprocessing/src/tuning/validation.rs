//! Spark's `TrainValidationSplit` and `CrossValidator`: every point of a parameter grid fitted and evaluated,
//! `parallelism` trials at a time (each its own barrier stage for the trainers, so the gang check on the fleet
//! keeps concurrent trials from holding part of each other's slots), the best point refitted on all the data.

use std::sync::Arc;
use std::time::Instant;

use datafusion::prelude::DataFrame;
use hearth_exec::cache::{DEFAULT_MEMORY_BUDGET, for_rereading};
use hearth_exec::error::{HearthError, Result};
use hearth_exec::frame::DataFrameExt;

use super::grid::{ParamMap, with_params};
use super::search::{best_of, try_run_candidates};
use crate::evaluation::Evaluator;
use crate::pipeline::{EstimatorStage, reads_files};
use crate::stage::Transformer;

/// One point of the grid, as tried: its parameters, its metric on each validation split and their mean and
/// standard deviation, and how long its fits took.
#[derive(Clone, Debug, PartialEq)]
pub struct Trial {
    /// The point's index in the grid.
    pub index: usize,
    /// The parameters set.
    pub params: ParamMap,
    /// The metric on each validation split (one for a train-validation split, one per fold).
    pub metrics: Vec<f64>,
    /// Their mean: what the best trial is chosen by.
    pub metric: f64,
    /// Their standard deviation (0 for one split).
    pub std: f64,
    /// When its first fit started, in seconds since the trials began.
    pub started: f64,
    /// When its last evaluation ended, in seconds since the trials began.
    pub finished: f64,
}

/// What a tuner returns: the best parameters' model refitted on all the data, and every trial.
#[derive(Clone)]
pub struct TuningModel {
    best_model: Arc<dyn Transformer>,
    best_index: usize,
    trials: Vec<Trial>,
    metric_name: String,
    larger_is_better: bool,
    trial_seconds: f64,
    refit_seconds: f64,
}

impl TuningModel {
    /// The best parameters' model, fitted on all the data (Spark's `bestModel`).
    pub fn best_model(&self) -> &Arc<dyn Transformer> {
        &self.best_model
    }

    /// The best trial.
    pub fn best_trial(&self) -> &Trial {
        &self.trials[self.best_index]
    }

    /// Every trial, in grid order (Spark's `validationMetrics` / `avgMetrics` are their `metric`s).
    pub fn trials(&self) -> &[Trial] {
        &self.trials
    }

    /// The metric the trials were compared by, and whether larger is better.
    pub fn metric(&self) -> (&str, bool) {
        (&self.metric_name, self.larger_is_better)
    }

    /// Seconds the trials took together, and the refit of the best.
    pub fn seconds(&self) -> (f64, f64) {
        (self.trial_seconds, self.refit_seconds)
    }
}

impl std::fmt::Debug for TuningModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TuningModel")
            .field("best_index", &self.best_index)
            .field("trials", &self.trials)
            .finish_non_exhaustive()
    }
}

/// What both tuners share.
#[derive(Clone)]
struct Tuner {
    name: &'static str,
    estimator: Arc<dyn EstimatorStage>,
    grid: Vec<ParamMap>,
    evaluator: Arc<dyn Evaluator>,
    parallelism: usize,
    seed: u64,
}

impl Tuner {
    fn new(
        name: &'static str,
        estimator: impl EstimatorStage,
        grid: Vec<ParamMap>,
        evaluator: impl Evaluator + 'static,
    ) -> Self {
        Self {
            name,
            estimator: Arc::new(estimator),
            grid,
            evaluator: Arc::new(evaluator),
            parallelism: 1,
            seed: 0,
        }
    }

    /// Refuses a grid with no points and a parallelism of 0.
    fn check(&self) -> Result<()> {
        if self.grid.is_empty() {
            return Err(HearthError::invalid_param(
                self.name,
                "estimatorParamMaps",
                "the grid has no points",
            ));
        }
        if self.parallelism == 0 {
            return Err(HearthError::invalid_param(
                self.name,
                "parallelism",
                "must be at least 1",
            ));
        }
        Ok(())
    }

    /// Fits every grid point on each `(train, validation)` split, `parallelism` fits at a time, then the best
    /// point on `all`.
    async fn run(&self, all: &DataFrame, splits: Vec<(DataFrame, DataFrame)>) -> Result<TuningModel> {
        self.check()?;
        let estimators: Vec<Arc<dyn EstimatorStage>> = self
            .grid
            .iter()
            .map(|params| with_params(self.estimator.as_ref(), params))
            .collect::<Result<_>>()?;
        let started = Instant::now();
        let jobs = estimators.iter().enumerate().flat_map(|(index, estimator)| {
            splits
                .iter()
                .map(move |split| (index, (index, Arc::clone(estimator), split)))
        });
        let runs = try_run_candidates(
            jobs,
            self.parallelism,
            |(index, estimator, (train, validation))| async move {
                let model = estimator
                    .fit_stage(train)
                    .await
                    .map_err(|e| self.trial_failed(index, "fitting its model", e))?;
                let scored = model.transform(validation)?;
                self.evaluator
                    .evaluate_frame(&scored)
                    .await
                    .map_err(|e| self.trial_failed(index, "evaluating its model", e))
            },
        )
        .await?;
        let trial_seconds = started.elapsed().as_secs_f64();
        let mut trials: Vec<Trial> = self
            .grid
            .iter()
            .enumerate()
            .map(|(index, params)| Trial {
                index,
                params: params.clone(),
                metrics: Vec::new(),
                metric: 0.0,
                std: 0.0,
                started: f64::INFINITY,
                finished: 0.0,
            })
            .collect();
        for run in runs {
            let trial = &mut trials[run.candidate];
            trial.metrics.push(run.outcome?);
            trial.started = trial.started.min(run.started);
            trial.finished = trial.finished.max(run.finished);
        }
        for trial in &mut trials {
            let count = trial.metrics.len() as f64;
            trial.metric = trial.metrics.iter().sum::<f64>() / count;
            trial.std = (trial.metrics.iter().map(|m| (m - trial.metric).powi(2)).sum::<f64>() / count).sqrt();
        }
        let larger = self.evaluator.larger_is_better();
        let best_index = best_of(trials.iter().map(|t| (t.index, t.metric)), larger).unwrap_or(0);
        let refit = Instant::now();
        let best_model = estimators[best_index].fit_stage(all).await?;
        Ok(TuningModel {
            best_model,
            best_index,
            trials,
            metric_name: self.evaluator.name().to_string(),
            larger_is_better: larger,
            trial_seconds,
            refit_seconds: refit.elapsed().as_secs_f64(),
        })
    }

    /// Trial `index` failed `doing` something, with `error`.
    fn trial_failed(&self, index: usize, doing: &str, error: HearthError) -> HearthError {
        let job = format!("{} trial {index} ({})", self.name, describe(&self.grid[index]));
        HearthError::barrier(job, doing).caused_by(error)
    }
}

/// `a=1, b=[2]`: a grid point in messages.
fn describe(params: &ParamMap) -> String {
    params
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The settings both tuners have: `parallelism` and `seed`.
macro_rules! tuner_setters {
    () => {
        /// How many fits run at once (each trial's, each fold's; default 1).
        pub fn parallelism(mut self, fits: usize) -> Self {
            self.tuner.parallelism = fits;
            self
        }

        /// The seed of the random split of the rows (default 0).
        pub fn seed(mut self, seed: u64) -> Self {
            self.tuner.seed = seed;
            self
        }
    };
}

/// `df`, kept once when it is read from files (not on a fleet: see [`for_rereading`]): every trial reads it
/// again.
async fn cached(df: &DataFrame) -> Result<DataFrame> {
    Ok(match reads_files(df.logical_plan()) {
        true => for_rereading(df.clone(), DEFAULT_MEMORY_BUDGET).await?,
        false => df.clone(),
    })
}

/// Spark's `TrainValidationSplit`: each grid point fitted on a random `train_ratio` of the rows (default 0.75)
/// and evaluated on the rest; the best refitted on all rows.
///
/// ```
/// # tokio::runtime::Builder::new_multi_thread().build().unwrap().block_on(async {
/// use std::sync::Arc;
/// use hearth_preprocessing::prelude::*;
/// use hearth_preprocessing::tuning::{ParamGridBuilder, TrainValidationSplit};
///
/// let session = Session::builder().with_preprocessing().local(2);
/// // Three groups of distinct values: around 0, 10 and 20.
/// let df = session.context().sql("SELECT CAST(x % 3 AS DOUBLE) * 10 + x * 0.01 AS v FROM generate_series(1, 60) AS t(x)").await.unwrap();
/// let df = VectorAssembler::new().input_cols(["v"]).output_col("features").transform(&df).unwrap();
/// let grid = ParamGridBuilder::new().add_grid("k", [2, 3]).build().unwrap();
/// let tuned = TrainValidationSplit::new(KMeans::new(), grid, ClusteringEvaluator::new())
///     .parallelism(2)
///     .fit(&df)
///     .await
///     .unwrap();
/// assert_eq!(tuned.best_trial().params["k"], 3);
/// # });
/// ```
#[derive(Clone)]
pub struct TrainValidationSplit {
    tuner: Tuner,
    train_ratio: f64,
}

impl TrainValidationSplit {
    /// Tries every point of `grid` on `estimator`, compared by `evaluator`; Spark's defaults (train ratio
    /// 0.75, parallelism 1).
    pub fn new(estimator: impl EstimatorStage, grid: Vec<ParamMap>, evaluator: impl Evaluator + 'static) -> Self {
        Self {
            tuner: Tuner::new("TrainValidationSplit", estimator, grid, evaluator),
            train_ratio: 0.75,
        }
    }

    /// The share of rows trained on (between 0 and 1).
    pub fn train_ratio(mut self, ratio: f64) -> Self {
        self.train_ratio = ratio;
        self
    }

    tuner_setters!();

    /// Runs the trials and refits the best on all of `df`.
    pub async fn fit(&self, df: &DataFrame) -> Result<TuningModel> {
        if !(self.train_ratio > 0.0 && self.train_ratio < 1.0) {
            return Err(HearthError::invalid_param(
                self.tuner.name,
                "trainRatio",
                format!("must be between 0 and 1, got {}", self.train_ratio),
            ));
        }
        let all = cached(df).await?;
        let parts = all.random_split(&[self.train_ratio, 1.0 - self.train_ratio], self.tuner.seed)?;
        let split = (parts[0].clone(), parts[1].clone());
        self.tuner.run(&all, vec![split]).await
    }
}

/// Spark's `CrossValidator`: the rows split at random into `num_folds` folds (default 3); each grid point
/// fitted on all folds but one and evaluated on that one, for each fold; the best mean refitted on all rows.
#[derive(Clone)]
pub struct CrossValidator {
    tuner: Tuner,
    num_folds: usize,
}

impl CrossValidator {
    /// Tries every point of `grid` on `estimator`, compared by `evaluator`'s mean over the folds; Spark's
    /// defaults (3 folds, parallelism 1).
    ///
    /// ```
    /// use hearth_preprocessing::prelude::*;
    /// use hearth_preprocessing::tuning::{CrossValidator, ParamGridBuilder};
    /// let grid = ParamGridBuilder::new().add_grid("k", [2, 3, 4]).build().unwrap();
    /// let cv = CrossValidator::new(KMeans::new(), grid, ClusteringEvaluator::new()).num_folds(5);
    /// ```
    pub fn new(estimator: impl EstimatorStage, grid: Vec<ParamMap>, evaluator: impl Evaluator + 'static) -> Self {
        Self {
            tuner: Tuner::new("CrossValidator", estimator, grid, evaluator),
            num_folds: 3,
        }
    }

    /// How many folds (at least 2).
    pub fn num_folds(mut self, folds: usize) -> Self {
        self.num_folds = folds;
        self
    }

    tuner_setters!();

    /// Runs every fold of every trial and refits the best on all of `df`.
    pub async fn fit(&self, df: &DataFrame) -> Result<TuningModel> {
        if self.num_folds < 2 {
            return Err(HearthError::invalid_param(
                self.tuner.name,
                "numFolds",
                format!("must be at least 2, got {}", self.num_folds),
            ));
        }
        let all = cached(df).await?;
        let folds = all.random_split(&vec![1.0; self.num_folds], self.tuner.seed)?;
        let mut splits = Vec::with_capacity(folds.len());
        for held in 0..folds.len() {
            let mut train: Option<DataFrame> = None;
            for (_, fold) in folds.iter().enumerate().filter(|(i, _)| *i != held) {
                train = Some(match train {
                    None => fold.clone(),
                    Some(rows) => rows.union(fold.clone())?,
                });
            }
            if let Some(train) = train {
                splits.push((train, folds[held].clone()));
            }
        }
        self.tuner.run(&all, splits).await
    }
}
