//! `CREATE MODEL … OPTIONS (…)`: BigQuery ML's option names where one exists, hearth's own for the rest, each
//! read into its type with an error naming the option when it is unknown or ill-typed.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use datafusion::sql::sqlparser::ast::{Expr, SqlOption, UnaryOperator, Value};
use hearth_torch::model::Activation;
use hearth_torch::train::{DeviceChoice, OptimizerSpec, Precision, Strategy};

use hearth_engine::error::{HearthError, Result};

/// What `CREATE MODEL` trains (`model_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelType {
    /// `'mlp_classifier'` (alias `'dnn_classifier'`): [`MlpClassifier`](hearth_engine::train::MlpClassifier).
    MlpClassifier,
    /// `'logistic_reg'`: softmax regression, [`LinearClassifier`](hearth_engine::train::LinearClassifier).
    LogisticReg,
    /// `'mlp_regressor'` (alias `'dnn_regressor'`): [`MlpRegressor`](hearth_engine::train::MlpRegressor).
    MlpRegressor,
    /// `'kmeans'`: [`KMeans`](hearth_engine::clustering::KMeans) clustering, no label.
    KMeans,
}

impl ModelType {
    fn parse(value: &str) -> Option<Self> {
        match value.to_ascii_lowercase().as_str() {
            "mlp_classifier" | "dnn_classifier" => Some(ModelType::MlpClassifier),
            "logistic_reg" => Some(ModelType::LogisticReg),
            "mlp_regressor" | "dnn_regressor" => Some(ModelType::MlpRegressor),
            "kmeans" => Some(ModelType::KMeans),
            _ => None,
        }
    }

    /// Whether the model predicts classes.
    pub fn is_classifier(self) -> bool {
        matches!(self, ModelType::MlpClassifier | ModelType::LogisticReg)
    }

    /// Whether the model is a network trained through the barrier stage (else k-means).
    pub fn is_network(self) -> bool {
        !matches!(self, ModelType::KMeans)
    }
}

impl fmt::Display for ModelType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ModelType::MlpClassifier => "mlp_classifier",
            ModelType::LogisticReg => "logistic_reg",
            ModelType::MlpRegressor => "mlp_regressor",
            ModelType::KMeans => "kmeans",
        })
    }
}

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
    /// `max_iterations`: epochs (default 10).
    pub epochs: usize,
    /// `class_weights`: by class index, or `[STRUCT('label', weight), …]` by label.
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
}

/// Every option, with what it takes, for error messages.
const OPTIONS: [(&str, &str); 32] = [
    (
        "model_type",
        "'mlp_classifier', 'dnn_classifier', 'logistic_reg', 'mlp_regressor', 'dnn_regressor' or 'kmeans'",
    ),
    ("num_clusters", "a whole number of clusters ≥ 1"),
    ("kmeans_init_method", "'kmeans++' or 'random'"),
    ("distance_type", "'euclidean' or 'cosine'"),
    ("standardize_features", "TRUE or FALSE"),
    ("tol", "a number ≥ 0"),
    ("input_label_cols", "a list of one column name, e.g. ['label']"),
    ("hidden_units", "a list of layer widths, e.g. [64, 32]"),
    ("activation_fn", "'relu', 'tanh' or 'sigmoid'"),
    ("dropout", "a rate from 0 to 1"),
    ("optimizer", "'adam', 'sgd', 'adagrad' or 'adadelta'"),
    ("learn_rate", "a positive number"),
    ("l2_reg", "a number ≥ 0"),
    ("batch_size", "a whole number ≥ 1"),
    ("max_iterations", "a whole number of epochs ≥ 1"),
    (
        "class_weights",
        "a list of weights by class index, or [STRUCT('label', weight), …]",
    ),
    (
        "data_split_method",
        "'auto_split', 'random', 'seq', 'custom' or 'no_split'",
    ),
    ("data_split_eval_fraction", "a fraction from 0 to 1"),
    ("data_split_col", "a column name"),
    ("data_split_seed", "a whole number"),
    ("workers", "a whole number ≥ 1"),
    ("device", "'auto', 'cpu', 'cuda' or 'cuda:N'"),
    ("precision", "'fp32' or 'bf16'"),
    ("seed", "a whole number"),
    (
        "strategy",
        "'synchronous', 'single', 'easgd', 'async_easgd', 'async_eamsgd', 'downpour', 'adag' or 'local_sgd'",
    ),
    ("rho", "the elastic force, a positive number (default 5.0)"),
    (
        "communication_window",
        "local steps between exchanges (or averagings), a whole number ≥ 1",
    ),
    ("momentum", "EAMSGD's momentum, from 0 to below 1 (default 0.9)"),
    (
        "elastic_learn_rate",
        "η of the elastic rate α = rho × η, a positive number (default: learn_rate)",
    ),
    ("max_attempts", "a whole number ≥ 1"),
    ("timeout_seconds", "a positive number of seconds"),
    ("early_stop", "not supported: training runs max_iterations epochs"),
];

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
            num_clusters: 2,
            kmeans_init: "k-means||".to_string(),
            distance: "euclidean".to_string(),
            standardize_features: true,
            tol: 1e-4,
            written: BTreeMap::new(),
        }
    }
}

fn invalid(option: &str, message: impl fmt::Display) -> HearthError {
    HearthError::InvalidParam {
        stage: "CREATE MODEL".to_string(),
        param: "OPTIONS",
        message: format!("option {option}: {message}"),
    }
}

/// What an option's value should look like.
fn expected(option: &str) -> &'static str {
    OPTIONS
        .iter()
        .find(|(name, _)| *name == option)
        .map_or("", |(_, takes)| takes)
}

fn wrong(option: &str, value: &Expr) -> HearthError {
    invalid(option, format!("expected {}, got {value}", expected(option)))
}

fn string(option: &str, value: &Expr) -> Result<String> {
    match value {
        Expr::Value(v) => match &v.value {
            Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) => Ok(s.clone()),
            _ => Err(wrong(option, value)),
        },
        _ => Err(wrong(option, value)),
    }
}

fn number(option: &str, value: &Expr) -> Result<f64> {
    let parsed = match value {
        Expr::Value(v) => match &v.value {
            Value::Number(n, _) => n.clone().parse::<f64>().ok(),
            _ => None,
        },
        Expr::UnaryOp {
            op: UnaryOperator::Minus,
            expr,
        } => number(option, expr).ok().map(|n| -n),
        _ => None,
    };
    parsed.filter(|n| n.is_finite()).ok_or_else(|| wrong(option, value))
}

fn whole(option: &str, value: &Expr) -> Result<u64> {
    let n = number(option, value)?;
    if n < 0.0 || n.fract() != 0.0 || n > u64::MAX as f64 {
        return Err(wrong(option, value));
    }
    Ok(n as u64)
}

fn positive(option: &str, value: &Expr) -> Result<f64> {
    let n = number(option, value)?;
    if n <= 0.0 {
        return Err(wrong(option, value));
    }
    Ok(n)
}

fn at_least_one(option: &str, value: &Expr) -> Result<usize> {
    match whole(option, value)? {
        0 => Err(wrong(option, value)),
        n => usize::try_from(n).map_err(|_| wrong(option, value)),
    }
}

fn list<'a>(option: &str, value: &'a Expr) -> Result<&'a [Expr]> {
    match value {
        Expr::Array(array) => Ok(&array.elem),
        _ => Err(wrong(option, value)),
    }
}

fn boolean(option: &str, value: &Expr) -> Result<bool> {
    match value {
        Expr::Value(v) => match &v.value {
            Value::Boolean(b) => Ok(*b),
            _ => Err(wrong(option, value)),
        },
        _ => Err(wrong(option, value)),
    }
}

fn fraction(option: &str, value: &Expr) -> Result<f64> {
    let n = number(option, value)?;
    if !(0.0..=1.0).contains(&n) {
        return Err(wrong(option, value));
    }
    Ok(n)
}

fn class_weights(value: &Expr) -> Result<ClassWeights> {
    const OPTION: &str = "class_weights";
    let items = list(OPTION, value)?;
    if items.iter().all(|item| number(OPTION, item).is_ok()) {
        return Ok(ClassWeights::ByIndex(
            items.iter().map(|item| number(OPTION, item)).collect::<Result<_>>()?,
        ));
    }
    items
        .iter()
        .map(|item| {
            let pair = match item {
                Expr::Struct { values, .. } | Expr::Tuple(values) => values.as_slice(),
                _ => return Err(wrong(OPTION, value)),
            };
            match pair {
                [label, weight] => Ok((string(OPTION, label)?, number(OPTION, weight)?)),
                _ => Err(wrong(OPTION, value)),
            }
        })
        .collect::<Result<_>>()
        .map(ClassWeights::ByLabel)
}

fn device(value: &Expr) -> Result<DeviceChoice> {
    let text = string("device", value)?.to_ascii_lowercase();
    Ok(match text.as_str() {
        "auto" => DeviceChoice::Auto,
        "cpu" => DeviceChoice::Cpu,
        "cuda" | "gpu" => DeviceChoice::Cuda(None),
        other => match other.strip_prefix("cuda:").and_then(|i| i.parse().ok()) {
            Some(index) => DeviceChoice::Cuda(Some(index)),
            None => return Err(wrong("device", value)),
        },
    })
}

impl ModelOptions {
    /// Reads the `OPTIONS (…)` of a `CREATE MODEL`; `model_type` is required.
    pub fn from_sql(options: &[SqlOption]) -> Result<Self> {
        let mut out = Self::default();
        let (mut optimizer, mut learn_rate, mut l2_reg) = ("adam".to_string(), 1e-3, 0.0);
        let mut has_type = false;
        let mut strategy = StrategyOptions::default();
        for option in options {
            let SqlOption::KeyValue { key, value } = option else {
                return Err(invalid(&option.to_string(), "expected name = value"));
            };
            let name = key.value.to_ascii_lowercase();
            out.written.insert(name.clone(), value.to_string());
            match name.as_str() {
                "model_type" => {
                    out.model_type = ModelType::parse(&string(&name, value)?).ok_or_else(|| wrong(&name, value))?;
                    has_type = true;
                }
                "input_label_cols" => match list(&name, value)? {
                    [column] => out.label = string(&name, column)?,
                    _ => return Err(wrong(&name, value)),
                },
                "hidden_units" => {
                    out.hidden_units = list(&name, value)?
                        .iter()
                        .map(|width| at_least_one(&name, width))
                        .collect::<Result<_>>()?;
                }
                "activation_fn" => {
                    out.activation = match string(&name, value)?.to_ascii_lowercase().as_str() {
                        "relu" => Activation::Relu,
                        "tanh" => Activation::Tanh,
                        "sigmoid" => Activation::Sigmoid,
                        _ => return Err(wrong(&name, value)),
                    }
                }
                "dropout" => out.dropout = fraction(&name, value)?,
                "optimizer" => optimizer = string(&name, value)?.to_ascii_lowercase(),
                "learn_rate" => {
                    learn_rate = number(&name, value)?;
                    if learn_rate <= 0.0 {
                        return Err(wrong(&name, value));
                    }
                }
                "l2_reg" => {
                    l2_reg = number(&name, value)?;
                    if l2_reg < 0.0 {
                        return Err(wrong(&name, value));
                    }
                }
                "batch_size" => out.batch_size = at_least_one(&name, value)?,
                "max_iterations" => out.epochs = at_least_one(&name, value)?,
                "class_weights" => out.class_weights = Some(class_weights(value)?),
                "data_split_method" => {
                    out.data_split = match string(&name, value)?.to_ascii_lowercase().as_str() {
                        "auto_split" => DataSplit::Auto,
                        "random" => DataSplit::Random,
                        "seq" => DataSplit::Seq,
                        "custom" => DataSplit::Custom,
                        "no_split" => DataSplit::NoSplit,
                        _ => return Err(wrong(&name, value)),
                    }
                }
                "data_split_eval_fraction" => out.data_split_eval_fraction = fraction(&name, value)?,
                "data_split_col" => out.data_split_col = Some(string(&name, value)?),
                "data_split_seed" => out.data_split_seed = whole(&name, value)?,
                "workers" => out.workers = at_least_one(&name, value)?,
                "device" => out.device = device(value)?,
                "precision" => {
                    out.precision = match string(&name, value)?.to_ascii_lowercase().as_str() {
                        "fp32" => Precision::Fp32,
                        "bf16" => Precision::Bf16,
                        _ => return Err(wrong(&name, value)),
                    }
                }
                "seed" => out.seed = whole(&name, value)?,
                "strategy" => strategy.name = Some((string(&name, value)?.to_ascii_lowercase(), value.clone())),
                "rho" => strategy.rho = Some(positive(&name, value)?),
                "communication_window" => strategy.window = Some(at_least_one(&name, value)?),
                "momentum" => {
                    let momentum = number(&name, value)?;
                    if !(0.0..1.0).contains(&momentum) {
                        return Err(wrong(&name, value));
                    }
                    strategy.momentum = Some(momentum);
                }
                "elastic_learn_rate" => strategy.learning_rate = Some(positive(&name, value)?),
                "max_attempts" => out.max_attempts = at_least_one(&name, value)?,
                "num_clusters" => out.num_clusters = at_least_one(&name, value)?,
                "kmeans_init_method" => {
                    out.kmeans_init = match string(&name, value)?.to_ascii_lowercase().as_str() {
                        "kmeans++" | "k-means++" | "k-means||" => "k-means||".to_string(),
                        "random" => "random".to_string(),
                        _ => return Err(wrong(&name, value)),
                    }
                }
                "distance_type" => {
                    out.distance = match string(&name, value)?.to_ascii_lowercase().as_str() {
                        "euclidean" => "euclidean".to_string(),
                        "cosine" => "cosine".to_string(),
                        _ => return Err(wrong(&name, value)),
                    }
                }
                "standardize_features" => out.standardize_features = boolean(&name, value)?,
                "tol" => {
                    out.tol = number(&name, value)?;
                    if out.tol < 0.0 {
                        return Err(wrong(&name, value));
                    }
                }
                "timeout_seconds" => {
                    let seconds = number(&name, value)?;
                    out.timeout = Some(Duration::try_from_secs_f64(seconds).map_err(|_| wrong(&name, value))?);
                }
                "early_stop" => return Err(invalid(&name, expected(&name))),
                _ => {
                    let mut names: Vec<&str> = OPTIONS.iter().map(|(name, _)| *name).collect();
                    names.sort_unstable();
                    return Err(invalid(
                        &key.value,
                        format!(
                            "unknown option; the options are {}, and for tuning num_trials, max_parallel_trials, \
                             hparam_tuning_algorithm and hparam_tuning_objectives",
                            names.join(", ")
                        ),
                    ));
                }
            }
        }
        if !has_type {
            return Err(invalid(
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
                return Err(invalid(
                    "optimizer",
                    format!("expected {}, got '{other}'", expected("optimizer")),
                ));
            }
        };
        out.strategy = strategy.build()?;
        out.check_model_type_takes_options()?;
        if matches!(out.data_split, DataSplit::Seq | DataSplit::Custom) && out.data_split_col.is_none() {
            return Err(invalid(
                "data_split_col",
                "data_split_method 'seq' and 'custom' need data_split_col",
            ));
        }
        Ok(out)
    }
}

/// The options only k-means takes, and the options k-means takes besides them.
const KMEANS_OPTIONS: [&str; 5] = [
    "num_clusters",
    "kmeans_init_method",
    "distance_type",
    "standardize_features",
    "tol",
];
const KMEANS_SHARED: [&str; 3] = ["model_type", "max_iterations", "seed"];

impl ModelOptions {
    /// An option the model type does not use is an error rather than ignored; k-means runs
    /// `max_iterations` 20 unless told (BigQuery's and Spark's default).
    fn check_model_type_takes_options(&mut self) -> Result<()> {
        let kmeans = !self.model_type.is_network();
        for name in self.written.keys() {
            let kmeans_only = KMEANS_OPTIONS.contains(&name.as_str());
            if kmeans && !kmeans_only && !KMEANS_SHARED.contains(&name.as_str()) {
                let why = if name == "input_label_cols" {
                    "k-means takes no label: it clusters every column of the query".to_string()
                } else {
                    format!(
                        "model_type 'kmeans' does not take it; it takes {}, {}",
                        KMEANS_OPTIONS.join(", "),
                        KMEANS_SHARED[1..].join(", ")
                    )
                };
                return Err(invalid(name, why));
            }
            if !kmeans && kmeans_only {
                return Err(invalid(
                    name,
                    format!("only model_type 'kmeans' takes it, not '{}'", self.model_type),
                ));
            }
        }
        if kmeans {
            // Every column of the query is clustered: none is the label.
            self.label = String::new();
            if !self.written.contains_key("max_iterations") {
                self.epochs = 20;
            }
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
                return Err(invalid(
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
            return Err(invalid(option, format!("strategy '{name}' does not take it")));
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
