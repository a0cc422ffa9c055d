//! `CREATE MODEL … OPTIONS (…)`: BigQuery ML's option names where one exists, hearth's own for the rest, each
//! read into its type with an error naming the option when it is unknown or ill-typed.

use std::collections::BTreeMap;
use std::time::Duration;

use datafusion::sql::sqlparser::ast::{Expr, SqlOption};
use hearth_common::names::did_you_mean;
use hearth_exec::error::Result;
use hearth_torch::model::Activation;
use hearth_torch::train::{DeviceChoice, OptimizerSpec, Precision, Strategy};

mod model_type;
mod reference;
mod table;

use super::error::invalid_option;
pub use model_type::{ModelType, OptimizeStrategy};
pub use reference::create_model_options_reference;
pub(crate) use table::{Models, Read, Scale, Tunable, expected, option_names, option_spec, wrong};

/// How the training rows are split into training and evaluation rows (`data_split_method`).
#[derive(Clone, Debug, PartialEq)]
pub enum DataSplit {
    /// `'auto_split'` (the default): no split under 500 rows, 20 % up to 50,000 rows, 10,000 rows beyond, at
    /// random — BigQuery ML's rule.
    Auto,
    /// `'random'`: `data_split_eval_fraction` of the rows at random (a seeded hash of each row, as
    /// `random_split`).
    Random,
    /// `'seq'`: the last `data_split_eval_fraction` of the rows ordered by `data_split_col`.
    Seq,
    /// `'custom'`: rows whose boolean `data_split_col` is true are for evaluation.
    Custom,
    /// `'no_split'`: every row trains.
    NoSplit,
}

/// The typed `OPTIONS (…)` of a `CREATE MODEL`.
///
/// ```
/// use hearth_sql::{ModelOptions, ModelType, parse_statements, Statement};
/// let statements = parse_statements(
///     "CREATE MODEL m OPTIONS (model_type = 'dnn_classifier', input_label_cols = ['y'], hidden_units = [32, 16])
///      AS SELECT * FROM t",
/// )
/// .unwrap();
/// let Statement::CreateModel(create) = &statements[0] else { unreachable!() };
/// let options = ModelOptions::from_sql(&create.options).unwrap();
/// assert_eq!((options.model_type, options.hidden_units.clone()), (ModelType::MlpClassifier, vec![32, 16]));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct ModelOptions {
    /// `model_type` (required).
    pub model_type: ModelType,
    /// `input_label_cols`: the one label column (default `label`).
    pub label: String,
    /// `hidden_units` (default `[64]`).
    pub hidden_units: Vec<usize>,
    /// `activation_fn`: `'relu'` (default), `'tanh'` or `'sigmoid'`.
    pub activation: Activation,
    /// `dropout` after each hidden layer (default 0).
    pub dropout: f64,
    /// `optimizer`: `'adam'` (default), `'sgd'`, `'adagrad'` or `'adadelta'`, with `learn_rate` (default
    /// 0.001) and `l2_reg` (default 0) as its L2 weight decay.
    pub optimizer: OptimizerSpec,
    /// `batch_size` (default 64).
    pub batch_size: usize,
    /// `max_iterations`: epochs (default 10); for a linear model solved exactly, the solver's most iterations
    /// (default 100, Spark's `maxIter`).
    pub epochs: usize,
    /// `optimize_strategy`, for `linear_reg` and `logistic_reg` (default `AUTO_STRATEGY`).
    pub optimize_strategy: OptimizeStrategy,
    /// `l1_reg`, a linear model's L1 penalty (default 0).
    pub l1_reg: f64,
    /// `l2_reg`: a linear model's L2 penalty; a network's weight decay (default 0).
    pub l2_reg: f64,
    /// `class_weights`: by class index, or `[STRUCT('label', weight), …]` by label; or
    /// `auto_class_weights = TRUE`: balanced.
    pub class_weights: Option<ClassWeights>,
    /// `data_split_method`.
    pub data_split: DataSplit,
    /// `data_split_eval_fraction` (default 0.2).
    pub data_split_eval_fraction: f64,
    /// `data_split_col`, for `'seq'` and `'custom'`.
    pub data_split_col: Option<String>,
    /// hearth: `data_split_seed`, the seed of a random split (default 0).
    pub data_split_seed: u64,
    /// hearth: `workers`, trainers at once (default 1).
    pub workers: usize,
    /// hearth: `device`: `'auto'` (default), `'cpu'`, `'cuda'` or `'cuda:N'`.
    pub device: DeviceChoice,
    /// hearth: `precision`: `'fp32'` (default) or `'bf16'` (mixed precision over fp32 master weights).
    pub precision: Precision,
    /// hearth: `seed` of the initial weights, shuffling and dropout (default 0).
    pub seed: u64,
    /// hearth: `strategy`, how the workers combine what they learn (default `'synchronous'`), with its
    /// parameters `rho`, `communication_window`, `momentum` and `elastic_learn_rate` (dist-keras's names).
    pub strategy: Strategy,
    /// hearth: `max_attempts` of the training stage (default 3).
    pub max_attempts: usize,
    /// hearth: `timeout_seconds` of any one collective (default 120).
    pub timeout: Option<Duration>,
    /// hearth: `checkpoint_dir`, where the training stage keeps each epoch's checkpoint so that a job whose
    /// driver died resumes (`hearth job resume`); a local directory or an object store's URL (default:
    /// `$HEARTH_CHECKPOINT_DIR`, else none).
    pub checkpoint_dir: Option<String>,
    /// hearth: `max_rank_memory_mb`, the MiB of its rows each worker may hold in memory before it streams
    /// them from its disk (default: half the memory its host has free, shared by its workers).
    pub max_rank_memory_mb: Option<u64>,
    /// hearth: `shuffle_buffer_rows`, rows in a streaming worker's shuffle buffer (default: what a quarter of
    /// its memory budget holds).
    pub shuffle_buffer_rows: Option<usize>,
    /// `early_stop` (default false, unlike BigQuery's true: a model trains every epoch unless asked, as it
    /// always did, and stopping needs held-out rows): stop once an epoch lowers the held-out rows' loss by
    /// less than `min_rel_progress` of the best so far, keeping the best epoch's weights.
    pub early_stop: bool,
    /// `min_rel_progress` (default 0.01), for `early_stop`.
    pub min_rel_progress: f64,
    /// k-means: `num_clusters` (default 2, as Spark's `k`).
    pub num_clusters: usize,
    /// k-means: `kmeans_init_method`, `'kmeans++'` (default; Spark's scalable `k-means||`) or `'random'`.
    pub kmeans_init: String,
    /// k-means: `distance_type`, `'euclidean'` (default) or `'cosine'`.
    pub distance: String,
    /// k-means: `standardize_features` (default true): numbers standardized before clustering.
    pub standardize_features: bool,
    /// k-means, hearth: `tol`, Spark's convergence tolerance (default 1e-4).
    pub tol: f64,
    /// The options as written, for the catalog.
    pub written: BTreeMap<String, String>,
}

/// Loss weights per class.
#[derive(Clone, Debug, PartialEq)]
pub enum ClassWeights {
    /// One weight per class index.
    ByIndex(Vec<f64>),
    /// Weights by label value; a label not listed weighs 1.
    ByLabel(Vec<(String, f64)>),
    /// `auto_class_weights = TRUE`: each class weighs the training rows over (classes × its rows).
    Balanced,
}

impl Default for ModelOptions {
    fn default() -> Self {
        Self {
            model_type: ModelType::MlpClassifier,
            label: "label".to_string(),
            hidden_units: vec![64],
            activation: Activation::Relu,
            dropout: 0.0,
            optimizer: OptimizerSpec::adam(1e-3),
            batch_size: 64,
            epochs: 10,
            optimize_strategy: OptimizeStrategy::Auto,
            l1_reg: 0.0,
            l2_reg: 0.0,
            class_weights: None,
            data_split: DataSplit::Auto,
            data_split_eval_fraction: 0.2,
            data_split_col: None,
            data_split_seed: 0,
            workers: 1,
            device: DeviceChoice::Auto,
            precision: Precision::Fp32,
            seed: 0,
            strategy: Strategy::Synchronous,
            max_attempts: 3,
            timeout: None,
            checkpoint_dir: None,
            max_rank_memory_mb: None,
            shuffle_buffer_rows: None,
            early_stop: false,
            min_rel_progress: 0.01,
            num_clusters: 2,
            kmeans_init: "k-means||".to_string(),
            distance: "euclidean".to_string(),
            standardize_features: true,
            tol: 1e-4,
            written: BTreeMap::new(),
        }
    }
}

impl ModelOptions {
    /// Reads the `OPTIONS (…)` of a `CREATE MODEL`; `model_type` is required.
    pub fn from_sql(options: &[SqlOption]) -> Result<Self> {
        let mut reading = Reading::default();
        for option in options {
            let SqlOption::KeyValue { key, value } = option else {
                return Err(invalid_option(&option.to_string(), "expected name = value"));
            };
            let name = key.value.to_ascii_lowercase();
            reading.options.written.insert(name.clone(), value.to_string());
            match option_spec(&name).map(|spec| (spec.name, spec.read)) {
                Some((name, Read::Value(read))) => read(&mut reading, name, value)?,
                Some((_, Read::Tuning)) | None => {
                    let mut names = option_names(|_| true);
                    names.sort_unstable();
                    let suggestion = did_you_mean(&name, names.iter().copied());
                    return Err(invalid_option(
                        &key.value,
                        format!("unknown option{suggestion}; the options are {}", names.join(", ")),
                    ));
                }
            }
        }
        reading.finish()
    }
}

/// The options as far as read: the optimizer's and the strategy's parts are put together at the end.
pub(crate) struct Reading {
    options: ModelOptions,
    has_type: bool,
    optimizer: String,
    learn_rate: f64,
    l2_reg: f64,
    strategy: StrategyOptions,
}

impl Default for Reading {
    fn default() -> Self {
        Self {
            options: ModelOptions::default(),
            has_type: false,
            optimizer: "adam".to_string(),
            learn_rate: 1e-3,
            l2_reg: 0.0,
            strategy: StrategyOptions::default(),
        }
    }
}

impl Reading {
    /// The options read, checked as a whole: `model_type` given, every option one the model type takes.
    fn finish(self) -> Result<ModelOptions> {
        let Reading {
            options: mut out,
            has_type,
            optimizer,
            learn_rate,
            l2_reg,
            strategy,
        } = self;
        if !has_type {
            return Err(invalid_option(
                "model_type",
                format!("missing; expected {}", expected("model_type")),
            ));
        }
        out.optimizer = match optimizer.as_str() {
            "adam" => OptimizerSpec::Adam {
                learning_rate: learn_rate,
                beta1: 0.9,
                beta2: 0.999,
                eps: 1e-8,
                weight_decay: l2_reg,
            },
            "sgd" => OptimizerSpec::Sgd {
                learning_rate: learn_rate,
                momentum: 0.0,
                nesterov: false,
                weight_decay: l2_reg,
            },
            "adagrad" => OptimizerSpec::Adagrad {
                learning_rate: learn_rate,
                eps: 1e-10,
                weight_decay: l2_reg,
                initial_accumulator_value: 0.0,
            },
            "adadelta" => OptimizerSpec::Adadelta {
                learning_rate: learn_rate,
                rho: 0.9,
                eps: 1e-6,
                weight_decay: l2_reg,
            },
            other => {
                return Err(invalid_option(
                    "optimizer",
                    format!("expected {}, got '{other}'", expected("optimizer")),
                ));
            }
        };
        out.l2_reg = l2_reg;
        out.strategy = strategy.build()?;
        out.check_model_type_takes_options()?;
        if matches!(out.data_split, DataSplit::Seq | DataSplit::Custom) && out.data_split_col.is_none() {
            return Err(invalid_option(
                "data_split_col",
                "data_split_method 'seq' and 'custom' need data_split_col",
            ));
        }
        Ok(out)
    }
}

impl ModelOptions {
    /// Whether the model trains by mini-batches: a network, or a linear model under `'MINI_BATCH'`.
    pub fn trains_by_mini_batch(&self) -> bool {
        Models::MiniBatch.take(self.model_type, self.optimize_strategy)
    }

    /// An option the model type (as solved) does not use is an error rather than ignored; k-means runs
    /// `max_iterations` 20 unless told (BigQuery's and Spark's default), a linear model solved exactly 100
    /// (Spark's).
    fn check_model_type_takes_options(&mut self) -> Result<()> {
        for name in self.written.keys() {
            let Some(spec) = option_spec(name) else { continue };
            if !spec.models.take(self.model_type, self.optimize_strategy) {
                return Err(invalid_option(
                    name,
                    spec.models.why_not(spec.name, self.model_type, self.optimize_strategy),
                ));
            }
        }
        if self.model_type == ModelType::LogisticReg && self.optimize_strategy == OptimizeStrategy::NormalEquation {
            return Err(invalid_option(
                "optimize_strategy",
                "'NORMAL_EQUATION' solves 'linear_reg' only; 'logistic_reg' takes 'AUTO_STRATEGY', \
                 'BATCH_GRADIENT_DESCENT' or 'MINI_BATCH'",
            ));
        }
        let unwritten = !self.written.contains_key("max_iterations");
        match self.model_type {
            ModelType::KMeans => {
                // Every column of the query is clustered: none is the label.
                self.label = String::new();
                if unwritten {
                    self.epochs = 20;
                }
            }
            _ if unwritten && !self.trains_by_mini_batch() => self.epochs = 100,
            _ => {}
        }
        Ok(())
    }
}

/// The strategy options as written, before they make a [`Strategy`].
#[derive(Default)]
struct StrategyOptions {
    name: Option<(String, Expr)>,
    rho: Option<f64>,
    window: Option<usize>,
    momentum: Option<f64>,
    learning_rate: Option<f64>,
}

impl StrategyOptions {
    /// The strategy, with dist-keras's defaults (rho 5, windows of 10 steps, momentum 0.9); a parameter the
    /// strategy does not take is an error rather than ignored.
    fn build(self) -> Result<Strategy> {
        let given = self.given();
        let Some((name, value)) = self.name else {
            if let Some(option) = given.first() {
                return Err(invalid_option(
                    option,
                    "needs a strategy that takes it, e.g. strategy = 'async_easgd'",
                ));
            }
            return Ok(Strategy::Synchronous);
        };
        let (rho, communication_window, learning_rate) =
            (self.rho.unwrap_or(5.0), self.window.unwrap_or(10), self.learning_rate);
        let strategy = match name.as_str() {
            "synchronous" => Strategy::Synchronous,
            "single" => Strategy::Single,
            "easgd" => Strategy::Easgd {
                rho,
                communication_window,
                learning_rate,
            },
            "async_easgd" | "aeasgd" => Strategy::AsyncEasgd {
                rho,
                communication_window,
                learning_rate,
            },
            "async_eamsgd" | "eamsgd" => Strategy::AsyncEamsgd {
                rho,
                communication_window,
                momentum: self.momentum.unwrap_or(0.9),
                learning_rate,
            },
            "downpour" => Strategy::Downpour { communication_window },
            "adag" => Strategy::Adag { communication_window },
            "local_sgd" => Strategy::LocalSgd {
                period: communication_window,
            },
            _ => return Err(wrong("strategy", &value)),
        };
        let takes = |option: &str| match option {
            "communication_window" => !strategy.averages_gradients(),
            "momentum" => strategy.momentum().is_some(),
            _ => strategy.alpha(1.0).is_some(),
        };
        if let Some(option) = given.into_iter().find(|option| !takes(option)) {
            return Err(invalid_option(option, format!("strategy '{name}' does not take it")));
        }
        Ok(strategy)
    }

    /// The names of the strategy parameters given.
    fn given(&self) -> Vec<&'static str> {
        [
            ("rho", self.rho.is_some()),
            ("communication_window", self.window.is_some()),
            ("momentum", self.momentum.is_some()),
            ("elastic_learn_rate", self.learning_rate.is_some()),
        ]
        .into_iter()
        .filter_map(|(name, given)| given.then_some(name))
        .collect()
    }
}
