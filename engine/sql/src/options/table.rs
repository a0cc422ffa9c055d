//! Every `CREATE MODEL` option, declared once: its name, what it takes, the model types that take it, how
//! `num_trials` may tune it, and how its value is read. Error messages, the model-type check and the tuner
//! read this table; nothing else spells an option's name.

use std::time::Duration;

use Models::{Every, Exact, KMeans, Labelled, Linear, MiniBatch, Penalized};
use Tunable::{Candidates, No, Range};
use datafusion::sql::sqlparser::ast::Expr;
use hearth_exec::error::{HearthError, Result};
use hearth_torch::model::Activation;
use hearth_torch::train::{DeviceChoice, Precision};

use super::model_type::{ModelType, OptimizeStrategy};
use super::{ClassWeights, DataSplit, Reading};
use crate::error::invalid_option;
use crate::literals;

/// The model types that take an option.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Models {
    /// Every model with a label: the networks and the linear models.
    Labelled,
    /// The models trained by mini-batches: the networks, and the linear models under
    /// `optimize_strategy = 'MINI_BATCH'`.
    MiniBatch,
    /// `linear_reg` and `logistic_reg`, however solved.
    Linear,
    /// `linear_reg` and `logistic_reg` solved exactly (not by mini-batches).
    Exact,
    /// The models with an L2 penalty: mini-batch and linear ones.
    Penalized,
    /// k-means only.
    KMeans,
    /// Every model type.
    Every,
}

impl Models {
    /// Why `model_type`, solved by `strategy`, does not take option `name`, which these models take.
    pub(crate) fn why_not(self, name: &str, model_type: ModelType, strategy: OptimizeStrategy) -> String {
        match (model_type, self) {
            (ModelType::KMeans, _) if name == "input_label_cols" => {
                "k-means takes no label: it clusters every column of the query".to_string()
            }
            (ModelType::KMeans, _) => {
                let kmeans_options = option_names(|spec| spec.models == KMeans);
                let shared = option_names(|spec| {
                    spec.models == Every && spec.name != "model_type" && !matches!(spec.read, Read::Tuning)
                });
                format!(
                    "model_type 'kmeans' does not take it; it takes {}, {}",
                    kmeans_options.join(", "),
                    shared.join(", ")
                )
            }
            (_, KMeans) => format!("only model_type 'kmeans' takes it, not '{model_type}'"),
            (_, Linear | Exact) if !model_type.is_linear() => {
                format!("only 'linear_reg' and 'logistic_reg' take it, not '{model_type}'")
            }
            (_, Exact) => format!(
                "only the exact solvers take it, not optimize_strategy '{strategy}' (mini-batch training takes l2_reg)"
            ),
            _ => format!(
                "'{model_type}' is solved exactly (optimize_strategy '{strategy}'), which does not take it; it is an \
                 option of mini-batch training: set optimize_strategy = 'MINI_BATCH' to train by mini-batches"
            ),
        }
    }

    /// Whether `model_type`, solved by `strategy`, takes the option.
    pub(crate) fn take(self, model_type: ModelType, strategy: OptimizeStrategy) -> bool {
        let kmeans = model_type == ModelType::KMeans;
        let linear = model_type.is_linear();
        let mini_batch = !kmeans && (!linear || strategy == OptimizeStrategy::MiniBatch);
        match self {
            Labelled => !kmeans,
            MiniBatch => mini_batch,
            Linear => linear,
            Exact => linear && !mini_batch,
            Penalized => mini_batch || linear,
            KMeans => kmeans,
            Every => true,
        }
    }
}

/// How `num_trials` may tune an option.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tunable {
    /// It is not tuned.
    No,
    /// `HPARAM_RANGE(min, max)` or `HPARAM_CANDIDATES`, a range drawn at this scale.
    Range(Scale),
    /// `HPARAM_CANDIDATES([…])` only.
    Candidates,
}

/// How a range is drawn from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scale {
    /// Uniform.
    Linear,
    /// Uniform in the logarithm (learning rates, regularization).
    Log,
    /// A uniform whole number.
    Whole,
}

/// How an option's value is read.
#[derive(Clone, Copy)]
pub(crate) enum Read {
    /// Into the options being read.
    Value(fn(&mut Reading, &'static str, &Expr) -> Result<()>),
    /// By the tuning, before the options are read (see `hparams`).
    Tuning,
}

/// One option.
#[derive(Clone, Copy)]
pub(crate) struct OptionSpec {
    /// Its name, as `OPTIONS (…)` spells it (lower case).
    pub name: &'static str,
    /// What it takes, for error messages.
    pub takes: &'static str,
    /// The model types that take it.
    pub models: Models,
    /// How `num_trials` may tune it.
    pub tunable: Tunable,
    /// How its value is read.
    pub read: Read,
}

/// Every option, in the table's order.
pub(crate) fn option_table() -> &'static [OptionSpec] {
    &OPTION_TABLE
}

/// The option named `name` (lower case), if there is one.
pub(crate) fn option_spec(name: &str) -> Option<&'static OptionSpec> {
    OPTION_TABLE.iter().find(|spec| spec.name == name)
}

/// The names of the options `include` keeps, in the table's order.
pub(crate) fn option_names(include: impl Fn(&OptionSpec) -> bool) -> Vec<&'static str> {
    OPTION_TABLE
        .iter()
        .filter(|spec| include(spec))
        .map(|spec| spec.name)
        .collect()
}

/// What option `name` takes ("" for no option).
pub(crate) fn expected(name: &str) -> &'static str {
    option_spec(name).map_or("", |spec| spec.takes)
}

/// `option`'s value is not what it takes.
pub(crate) fn wrong(option: &str, value: &Expr) -> HearthError {
    invalid_option(option, format!("expected {}, got {value}", expected(option)))
}

fn string(option: &str, value: &Expr) -> Result<String> {
    literals::string(value)
        .map(str::to_string)
        .ok_or_else(|| wrong(option, value))
}

/// A string, lower case: the spelling of a choice.
fn choice(option: &str, value: &Expr) -> Result<String> {
    string(option, value).map(|s| s.to_ascii_lowercase())
}

fn number(option: &str, value: &Expr) -> Result<f64> {
    literals::number(value).ok_or_else(|| wrong(option, value))
}

/// A number for which `valid` holds.
fn number_where(option: &str, value: &Expr, valid: impl Fn(f64) -> bool) -> Result<f64> {
    number(option, value).and_then(|n| if valid(n) { Ok(n) } else { Err(wrong(option, value)) })
}

fn whole(option: &str, value: &Expr) -> Result<u64> {
    literals::whole(value).ok_or_else(|| wrong(option, value))
}

fn at_least_one(option: &str, value: &Expr) -> Result<usize> {
    match whole(option, value)? {
        0 => Err(wrong(option, value)),
        n => usize::try_from(n).map_err(|_| wrong(option, value)),
    }
}

fn fraction(option: &str, value: &Expr) -> Result<f64> {
    number_where(option, value, |n| (0.0..=1.0).contains(&n))
}

fn list<'a>(option: &str, value: &'a Expr) -> Result<&'a [Expr]> {
    literals::list(value).ok_or_else(|| wrong(option, value))
}

fn class_weights(option: &str, value: &Expr) -> Result<ClassWeights> {
    let items = list(option, value)?;
    if let Some(weights) = items.iter().map(literals::number).collect::<Option<Vec<f64>>>() {
        return Ok(ClassWeights::ByIndex(weights));
    }
    items
        .iter()
        .map(|item| match item {
            Expr::Struct { values, .. } | Expr::Tuple(values) => match values.as_slice() {
                [label, weight] => Ok((string(option, label)?, number(option, weight)?)),
                _ => Err(wrong(option, value)),
            },
            _ => Err(wrong(option, value)),
        })
        .collect::<Result<_>>()
        .map(ClassWeights::ByLabel)
}

/// BigQuery's refusal of both ways of weighing classes in one statement.
fn both_class_weights() -> HearthError {
    invalid_option(
        "auto_class_weights",
        "give class_weights or auto_class_weights = TRUE, not both",
    )
}

fn device(option: &str, value: &Expr) -> Result<DeviceChoice> {
    Ok(match choice(option, value)?.as_str() {
        "auto" => DeviceChoice::Auto,
        "cpu" => DeviceChoice::Cpu,
        "cuda" | "gpu" => DeviceChoice::Cuda(None),
        other => match other.strip_prefix("cuda:").and_then(|i| i.parse().ok()) {
            Some(index) => DeviceChoice::Cuda(Some(index)),
            None => return Err(wrong(option, value)),
        },
    })
}

/// An option of every model type, or of `models`, read by `read`.
const fn option(
    name: &'static str,
    takes: &'static str,
    models: Models,
    tunable: Tunable,
    read: fn(&mut Reading, &'static str, &Expr) -> Result<()>,
) -> OptionSpec {
    OptionSpec {
        name,
        takes,
        models,
        tunable,
        read: Read::Value(read),
    }
}

/// An option of the tuning (`num_trials` and its kin).
const fn tuning(name: &'static str, takes: &'static str) -> OptionSpec {
    OptionSpec {
        name,
        takes,
        models: Every,
        tunable: No,
        read: Read::Tuning,
    }
}

/// Every option.
const OPTION_TABLE: [OptionSpec; 43] = [
    option(
        "model_type",
        "'mlp_classifier', 'dnn_classifier', 'logistic_reg', 'linear_reg', 'mlp_regressor', 'dnn_regressor' or 'kmeans'",
        Every,
        No,
        |r, o, v| {
            r.options.model_type = ModelType::parse(&string(o, v)?).ok_or_else(|| wrong(o, v))?;
            r.has_type = true;
            Ok(())
        },
    ),
    option(
        "num_clusters",
        "a whole number of clusters ≥ 1",
        KMeans,
        Range(Scale::Whole),
        |r, o, v| {
            r.options.num_clusters = at_least_one(o, v)?;
            Ok(())
        },
    ),
    option("kmeans_init_method", "'kmeans++' or 'random'", KMeans, No, |r, o, v| {
        r.options.kmeans_init = match choice(o, v)?.as_str() {
            "kmeans++" | "k-means++" | "k-means||" => "k-means||",
            "random" => "random",
            _ => return Err(wrong(o, v)),
        }
        .to_string();
        Ok(())
    }),
    option("distance_type", "'euclidean' or 'cosine'", KMeans, No, |r, o, v| {
        r.options.distance = match choice(o, v)?.as_str() {
            measure @ ("euclidean" | "cosine") => measure.to_string(),
            _ => return Err(wrong(o, v)),
        };
        Ok(())
    }),
    option("standardize_features", "TRUE or FALSE", KMeans, No, |r, o, v| {
        r.options.standardize_features = literals::boolean(v).ok_or_else(|| wrong(o, v))?;
        Ok(())
    }),
    option("tol", "a number ≥ 0", KMeans, No, |r, o, v| {
        r.options.tol = number_where(o, v, |n| n >= 0.0)?;
        Ok(())
    }),
    option(
        "input_label_cols",
        "a list of one column name, e.g. ['label']",
        Labelled,
        No,
        |r, o, v| {
            match list(o, v)? {
                [column] => r.options.label = string(o, column)?,
                _ => return Err(wrong(o, v)),
            }
            Ok(())
        },
    ),
    option(
        "hidden_units",
        "a list of layer widths, e.g. [64, 32]",
        MiniBatch,
        Candidates,
        |r, o, v| {
            r.options.hidden_units = list(o, v)?
                .iter()
                .map(|width| at_least_one(o, width))
                .collect::<Result<_>>()?;
            Ok(())
        },
    ),
    option(
        "activation_fn",
        "'relu', 'tanh' or 'sigmoid'",
        MiniBatch,
        Candidates,
        |r, o, v| {
            r.options.activation = match choice(o, v)?.as_str() {
                "relu" => Activation::Relu,
                "tanh" => Activation::Tanh,
                "sigmoid" => Activation::Sigmoid,
                _ => return Err(wrong(o, v)),
            };
            Ok(())
        },
    ),
    option(
        "dropout",
        "a rate from 0 to 1",
        MiniBatch,
        Range(Scale::Linear),
        |r, o, v| {
            r.options.dropout = fraction(o, v)?;
            Ok(())
        },
    ),
    option(
        "optimizer",
        "'adam', 'sgd', 'adagrad' or 'adadelta'",
        MiniBatch,
        Candidates,
        |r, o, v| {
            r.optimizer = choice(o, v)?;
            Ok(())
        },
    ),
    option(
        "learn_rate",
        "a positive number",
        MiniBatch,
        Range(Scale::Log),
        |r, o, v| {
            r.learn_rate = number_where(o, v, |n| n > 0.0)?;
            Ok(())
        },
    ),
    option("l2_reg", "a number ≥ 0", Penalized, Range(Scale::Log), |r, o, v| {
        r.l2_reg = number_where(o, v, |n| n >= 0.0)?;
        Ok(())
    }),
    option("l1_reg", "a number ≥ 0", Exact, Range(Scale::Log), |r, o, v| {
        r.options.l1_reg = number_where(o, v, |n| n >= 0.0)?;
        Ok(())
    }),
    option(
        "optimize_strategy",
        "'auto_strategy', 'normal_equation', 'batch_gradient_descent' or 'mini_batch'",
        Linear,
        No,
        |r, o, v| {
            r.options.optimize_strategy = match choice(o, v)?.as_str() {
                "auto_strategy" => OptimizeStrategy::Auto,
                "normal_equation" => OptimizeStrategy::NormalEquation,
                "batch_gradient_descent" => OptimizeStrategy::BatchGradientDescent,
                "mini_batch" => OptimizeStrategy::MiniBatch,
                _ => return Err(wrong(o, v)),
            };
            Ok(())
        },
    ),
    option(
        "batch_size",
        "a whole number ≥ 1",
        MiniBatch,
        Range(Scale::Whole),
        |r, o, v| {
            r.options.batch_size = at_least_one(o, v)?;
            Ok(())
        },
    ),
    option(
        "max_iterations",
        "a whole number of epochs (a linear model's solver iterations) ≥ 1",
        Every,
        Range(Scale::Whole),
        |r, o, v| {
            r.options.epochs = at_least_one(o, v)?;
            Ok(())
        },
    ),
    option(
        "class_weights",
        "a list of weights by class index, or [STRUCT('label', weight), …]",
        Labelled,
        No,
        |r, o, v| {
            r.options.class_weights = match r.options.class_weights {
                Some(ClassWeights::Balanced) => return Err(both_class_weights()),
                _ => Some(class_weights(o, v)?),
            };
            Ok(())
        },
    ),
    option("auto_class_weights", "TRUE or FALSE", Labelled, No, |r, o, v| {
        let balanced = literals::boolean(v).ok_or_else(|| wrong(o, v))?;
        r.options.class_weights = match (&r.options.class_weights, balanced) {
            (Some(ClassWeights::ByIndex(_) | ClassWeights::ByLabel(_)), true) => return Err(both_class_weights()),
            (Some(ClassWeights::Balanced), false) => None,
            (weights, false) => weights.clone(),
            (_, true) => Some(ClassWeights::Balanced),
        };
        Ok(())
    }),
    option(
        "data_split_method",
        "'auto_split', 'random', 'seq', 'custom' or 'no_split'",
        Labelled,
        No,
        |r, o, v| {
            r.options.data_split = match choice(o, v)?.as_str() {
                "auto_split" => DataSplit::Auto,
                "random" => DataSplit::Random,
                "seq" => DataSplit::Seq,
                "custom" => DataSplit::Custom,
                "no_split" => DataSplit::NoSplit,
                _ => return Err(wrong(o, v)),
            };
            Ok(())
        },
    ),
    option(
        "data_split_eval_fraction",
        "a fraction from 0 to 1",
        Labelled,
        No,
        |r, o, v| {
            r.options.data_split_eval_fraction = fraction(o, v)?;
            Ok(())
        },
    ),
    option("data_split_col", "a column name", Labelled, No, |r, o, v| {
        r.options.data_split_col = Some(string(o, v)?);
        Ok(())
    }),
    option("data_split_seed", "a whole number", Labelled, No, |r, o, v| {
        r.options.data_split_seed = whole(o, v)?;
        Ok(())
    }),
    option("workers", "a whole number ≥ 1", Labelled, No, |r, o, v| {
        r.options.workers = at_least_one(o, v)?;
        Ok(())
    }),
    option(
        "device",
        "'auto', 'cpu', 'cuda' or 'cuda:N'",
        MiniBatch,
        No,
        |r, o, v| {
            r.options.device = device(o, v)?;
            Ok(())
        },
    ),
    option("precision", "'fp32' or 'bf16'", MiniBatch, No, |r, o, v| {
        r.options.precision = match choice(o, v)?.as_str() {
            "fp32" => Precision::Fp32,
            "bf16" => Precision::Bf16,
            _ => return Err(wrong(o, v)),
        };
        Ok(())
    }),
    option("seed", "a whole number", Every, No, |r, o, v| {
        r.options.seed = whole(o, v)?;
        Ok(())
    }),
    option(
        "strategy",
        "'synchronous', 'single', 'easgd', 'async_easgd', 'async_eamsgd', 'downpour', 'adag' or 'local_sgd'",
        MiniBatch,
        Candidates,
        |r, o, v| {
            r.strategy.name = Some((choice(o, v)?, v.clone()));
            Ok(())
        },
    ),
    option(
        "rho",
        "the elastic force, a positive number (default 5.0)",
        MiniBatch,
        Range(Scale::Linear),
        |r, o, v| {
            r.strategy.rho = Some(number_where(o, v, |n| n > 0.0)?);
            Ok(())
        },
    ),
    option(
        "communication_window",
        "local steps between exchanges (or averagings), a whole number ≥ 1",
        MiniBatch,
        Range(Scale::Whole),
        |r, o, v| {
            r.strategy.window = Some(at_least_one(o, v)?);
            Ok(())
        },
    ),
    option(
        "momentum",
        "EAMSGD's momentum, from 0 to below 1 (default 0.9)",
        MiniBatch,
        Range(Scale::Linear),
        |r, o, v| {
            r.strategy.momentum = Some(number_where(o, v, |n| (0.0..1.0).contains(&n))?);
            Ok(())
        },
    ),
    option(
        "elastic_learn_rate",
        "η of the elastic rate α = rho × η, a positive number (default: learn_rate)",
        MiniBatch,
        Range(Scale::Log),
        |r, o, v| {
            r.strategy.learning_rate = Some(number_where(o, v, |n| n > 0.0)?);
            Ok(())
        },
    ),
    option("max_attempts", "a whole number ≥ 1", MiniBatch, No, |r, o, v| {
        r.options.max_attempts = at_least_one(o, v)?;
        Ok(())
    }),
    option(
        "timeout_seconds",
        "a positive number of seconds",
        MiniBatch,
        No,
        |r, o, v| {
            let seconds = number(o, v)?;
            r.options.timeout = Some(Duration::try_from_secs_f64(seconds).map_err(|_| wrong(o, v))?);
            Ok(())
        },
    ),
    option(
        "checkpoint_dir",
        "a local directory or an object store's URL (s3://, gs://, az://)",
        MiniBatch,
        No,
        |r, o, v| {
            let dir = string(o, v)?;
            if dir.trim().is_empty() {
                return Err(wrong(o, v));
            }
            r.options.checkpoint_dir = Some(dir);
            Ok(())
        },
    ),
    option(
        "max_rank_memory_mb",
        "a whole number of MiB ≥ 1",
        MiniBatch,
        No,
        |r, o, v| {
            r.options.max_rank_memory_mb = Some(at_least_one(o, v)? as u64);
            Ok(())
        },
    ),
    option(
        "shuffle_buffer_rows",
        "a whole number of rows ≥ 1",
        MiniBatch,
        No,
        |r, o, v| {
            r.options.shuffle_buffer_rows = Some(at_least_one(o, v)?);
            Ok(())
        },
    ),
    option("early_stop", "TRUE or FALSE", MiniBatch, No, |r, o, v| {
        r.options.early_stop = literals::boolean(v).ok_or_else(|| wrong(o, v))?;
        Ok(())
    }),
    option("min_rel_progress", "a fraction in [0, 1]", MiniBatch, No, |r, o, v| {
        r.options.min_rel_progress = fraction(o, v)?;
        Ok(())
    }),
    tuning("num_trials", "a whole number of trials ≥ 1"),
    tuning("max_parallel_trials", "a whole number of trials ≥ 1"),
    tuning("hparam_tuning_algorithm", "'random_search' or 'grid_search'"),
    tuning("hparam_tuning_objectives", "a list of one metric, e.g. ['roc_auc']"),
];
