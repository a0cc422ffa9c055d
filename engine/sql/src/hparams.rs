//! Hyperparameter tuning in `CREATE MODEL`'s options, as BigQuery ML spells it: `num_trials`,
//! `max_parallel_trials`, `hparam_tuning_algorithm` and `hparam_tuning_objectives`, and option values given as
//! `HPARAM_RANGE(min, max)` or `HPARAM_CANDIDATES([…])`. A trial is the statement's options with one value for
//! every tuned option — drawn at random (`'random_search'`, the default) or taken in turn from the candidates'
//! grid (`'grid_search'`). k-means tunes `num_clusters` (by default over 2 to 10), keeping the model with the
//! lowest Davies–Bouldin index.
//!
//! ```sql
//! CREATE MODEL m OPTIONS (model_type = 'dnn_classifier', input_label_cols = ['y'],
//!                         num_trials = 8, max_parallel_trials = 2,
//!                         learn_rate = HPARAM_RANGE(0.0001, 0.01),
//!                         hidden_units = HPARAM_CANDIDATES([STRUCT([32]), STRUCT([64, 32])]))
//! AS SELECT * FROM t
//! ```

use datafusion::sql::sqlparser::ast::{Expr, FunctionArg, FunctionArgExpr, FunctionArguments, Ident, SqlOption};
use hearth_exec::error::Result;
use hearth_stats::random::Draws;

use super::error::invalid_option;
use super::literals::{self, number_expr};
use super::options::{Scale, Tunable, option_names, option_spec};

/// How the trials' values are chosen (`hparam_tuning_algorithm`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Algorithm {
    /// `'random_search'` (hearth's default): every trial draws each tuned option's value afresh.
    RandomSearch,
    /// `'grid_search'`: the candidates' combinations in turn (every tuned option needs `HPARAM_CANDIDATES`).
    GridSearch,
}

impl Algorithm {
    /// The name as the option spells it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Algorithm::RandomSearch => "random_search",
            Algorithm::GridSearch => "grid_search",
        }
    }
}

/// The values one tuned option may take.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Space {
    /// `HPARAM_RANGE(min, max)`: uniform, on a log scale for rates, whole numbers for counts.
    Range { min: f64, max: f64, scale: Scale },
    /// `HPARAM_CANDIDATES([a, b, …])`: one of these (a `STRUCT(x)` stands for `x`, as BigQuery ML writes lists).
    Candidates(Vec<Expr>),
}

/// The tuning a `CREATE MODEL` asked for.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Tuning {
    /// `num_trials`: how many models to train at most.
    pub num_trials: usize,
    /// `max_parallel_trials` (default 1): trials trained at once, each its own barrier stage.
    pub max_parallel_trials: usize,
    /// `hparam_tuning_algorithm`.
    pub algorithm: Algorithm,
    /// `hparam_tuning_objectives`: the metric the best trial maximizes (or minimizes, for losses and errors);
    /// `None`: `roc_auc` for a two-class classifier, `f1_score` for more classes, `r2_score` for a regressor.
    pub objective: Option<String>,
    /// The tuned options and their spaces, in the order written.
    pub spaces: Vec<(String, Space)>,
}

/// One trial's values: option name and value, in the order of [`Tuning::spaces`].
pub(crate) type TrialValues = Vec<(String, Expr)>;

fn literal_number(option: &str, value: &Expr) -> Result<f64> {
    literals::number(value).ok_or_else(|| invalid_option(option, format!("HPARAM_RANGE takes numbers, got {value}")))
}

fn at_least_one(option: &str, value: &Expr) -> Result<usize> {
    match literals::whole(value) {
        Some(0) => Err(invalid_option(option, "must be at least 1")),
        Some(n) => usize::try_from(n).map_err(|_| invalid_option(option, format!("{n} is too large"))),
        None => Err(invalid_option(option, format!("expected a whole number, got {value}"))),
    }
}

/// How `num_trials` may tune `option` (`Tunable::No` for an option that is not one).
fn tunable_as(option: &str) -> Tunable {
    option_spec(option).map_or(Tunable::No, |spec| spec.tunable)
}

/// The arguments of `HPARAM_RANGE(…)` or `HPARAM_CANDIDATES(…)`, or `None` for another value.
fn hparam_call(value: &Expr) -> Option<(String, Vec<&Expr>)> {
    let Expr::Function(function) = value else {
        return None;
    };
    let name = function.name.to_string().to_ascii_uppercase();
    if name != "HPARAM_RANGE" && name != "HPARAM_CANDIDATES" {
        return None;
    }
    let args = match &function.args {
        FunctionArguments::List(list) => list
            .args
            .iter()
            .filter_map(|arg| match arg {
                FunctionArg::Unnamed(FunctionArgExpr::Expr(expr)) => Some(expr),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    Some((name, args))
}

/// `STRUCT(x)` stands for `x` among candidates, as BigQuery ML writes a list of lists.
fn unwrapped(candidate: &Expr) -> Expr {
    match candidate {
        Expr::Struct { values, .. } if values.len() == 1 => values[0].clone(),
        other => other.clone(),
    }
}

fn space(option: &str, call: &str, args: &[&Expr]) -> Result<Space> {
    if call == "HPARAM_CANDIDATES" {
        let [Expr::Array(array)] = args else {
            return Err(invalid_option(
                option,
                "HPARAM_CANDIDATES takes one list, e.g. HPARAM_CANDIDATES([1, 2])",
            ));
        };
        if array.elem.is_empty() {
            return Err(invalid_option(option, "HPARAM_CANDIDATES([]) has no candidates"));
        }
        if tunable_as(option) == Tunable::No {
            return Err(invalid_option(
                option,
                format!("cannot be tuned; tunable options: {}", tunable()),
            ));
        }
        return Ok(Space::Candidates(array.elem.iter().map(unwrapped).collect()));
    }
    let Tunable::Range(scale) = tunable_as(option) else {
        return Err(invalid_option(
            option,
            format!(
                "HPARAM_RANGE tunes numbers: {}; use HPARAM_CANDIDATES for {}",
                option_names(|spec| matches!(spec.tunable, Tunable::Range(_))).join(", "),
                option_names(|spec| spec.tunable == Tunable::Candidates).join(", ")
            ),
        ));
    };
    let [min, max] = args else {
        return Err(invalid_option(
            option,
            "HPARAM_RANGE takes two numbers, HPARAM_RANGE(min, max)",
        ));
    };
    let (min, max) = (literal_number(option, min)?, literal_number(option, max)?);
    if min >= max {
        return Err(invalid_option(
            option,
            format!("HPARAM_RANGE({min}, {max}): min must be below max"),
        ));
    }
    let scale = match scale {
        Scale::Whole if min < 1.0 || min.fract() != 0.0 || max.fract() != 0.0 => {
            return Err(invalid_option(option, "HPARAM_RANGE takes whole numbers ≥ 1 here"));
        }
        Scale::Log if min <= 0.0 => Scale::Linear,
        scale => scale,
    };
    Ok(Space::Range { min, max, scale })
}

fn tunable() -> String {
    option_names(|spec| spec.tunable != Tunable::No).join(", ")
}

/// What `num_trials` tunes when no option is given as `HPARAM_…`: k-means' `num_clusters` from 2 to 10; a
/// linear model's L1 (0 to 0.01) and L2 (0 to 0.1) penalties; a network's rate and, for networks with hidden
/// layers, the dropout (for logistic regression by mini-batches, the L2 penalty) — unless the statement fixes
/// them.
fn default_spaces(model_type: &str, fixed: &[SqlOption]) -> Vec<(String, Space)> {
    let given = |option: &str| {
        fixed
            .iter()
            .any(|o| matches!(o, SqlOption::KeyValue { key, .. } if key.value.eq_ignore_ascii_case(option)))
    };
    let linear = ["linear_reg", "logistic_reg"]
        .iter()
        .any(|linear| model_type.eq_ignore_ascii_case(linear));
    let mini_batch = fixed.iter().any(|o| {
        matches!(o, SqlOption::KeyValue { key, value } if key.value.eq_ignore_ascii_case("optimize_strategy")
            && literals::string(value).is_some_and(|s| s.eq_ignore_ascii_case("mini_batch")))
    });
    let spaces = if model_type.eq_ignore_ascii_case("kmeans") {
        vec![("num_clusters", 2.0, 10.0, Scale::Whole)]
    } else if linear && !mini_batch {
        vec![
            ("l1_reg", 0.0, 0.01, Scale::Linear),
            ("l2_reg", 0.0, 0.1, Scale::Linear),
        ]
    } else if model_type.eq_ignore_ascii_case("logistic_reg") {
        vec![
            ("learn_rate", 1e-4, 1e-2, Scale::Log),
            ("l2_reg", 0.0, 0.1, Scale::Linear),
        ]
    } else {
        vec![
            ("learn_rate", 1e-4, 1e-2, Scale::Log),
            ("dropout", 0.0, 0.5, Scale::Linear),
        ]
    };
    spaces
        .into_iter()
        .filter(|(option, ..)| !given(option))
        .map(|(option, min, max, scale)| (option.to_string(), Space::Range { min, max, scale }))
        .collect()
}

/// Splits a statement's options into those every trial shares and the tuning, `None` when the statement
/// does not tune (no `num_trials`).
pub(crate) fn split_tuning(options: &[SqlOption]) -> Result<(Vec<SqlOption>, Option<Tuning>)> {
    let mut fixed = Vec::new();
    let mut asked = Asked::default();
    for option in options {
        let SqlOption::KeyValue { key, value } = option else {
            fixed.push(option.clone());
            continue;
        };
        let name = key.value.to_ascii_lowercase();
        if !asked.read(&name, value)? {
            fixed.push(option.clone());
        }
    }
    let Some(num_trials) = asked.num_trials else {
        if let Some(option) = asked.first_given() {
            return Err(invalid_option(option, "tuning needs num_trials, e.g. num_trials = 8"));
        }
        return Ok((fixed, None));
    };
    if asked.spaces.is_empty() {
        let model_type = fixed.iter().find_map(|o| match o {
            SqlOption::KeyValue { key, value } if key.value.eq_ignore_ascii_case("model_type") => {
                Some(value.to_string().trim_matches('\'').to_string())
            }
            _ => None,
        });
        asked.spaces = default_spaces(model_type.as_deref().unwrap_or_default(), &fixed);
    }
    let algorithm = asked.algorithm.unwrap_or(Algorithm::RandomSearch);
    if algorithm == Algorithm::GridSearch
        && let Some((name, _)) = asked
            .spaces
            .iter()
            .find(|(_, space)| matches!(space, Space::Range { .. }))
    {
        return Err(invalid_option(
            name,
            "hparam_tuning_algorithm 'grid_search' takes HPARAM_CANDIDATES only; a range has no grid",
        ));
    }
    let tuning = Tuning {
        num_trials,
        max_parallel_trials: asked.parallel.unwrap_or(1),
        algorithm,
        objective: asked.objective,
        spaces: asked.spaces,
    };
    Ok((fixed, Some(tuning)))
}

/// The tuning options a statement gives, as read.
#[derive(Default)]
struct Asked {
    num_trials: Option<usize>,
    parallel: Option<usize>,
    algorithm: Option<Algorithm>,
    objective: Option<String>,
    spaces: Vec<(String, Space)>,
}

impl Asked {
    /// Reads option `name` when it is one of the tuning's (or an `HPARAM_…` value); `false` for the others.
    fn read(&mut self, name: &str, value: &Expr) -> Result<bool> {
        match name {
            "num_trials" => self.num_trials = Some(at_least_one(name, value)?),
            "max_parallel_trials" => self.parallel = Some(at_least_one(name, value)?),
            "hparam_tuning_algorithm" => self.algorithm = Some(algorithm(name, value)?),
            "hparam_tuning_objectives" => self.objective = Some(objective(name, value)?),
            _ => match hparam_call(value) {
                Some((call, args)) => self.spaces.push((name.to_string(), space(name, &call, &args)?)),
                None => return Ok(false),
            },
        }
        Ok(true)
    }

    /// The first tuning option given, for the error when `num_trials` is not.
    fn first_given(&self) -> Option<&str> {
        match (self.spaces.first(), self.parallel, self.algorithm, &self.objective) {
            (Some((name, _)), ..) => Some(name.as_str()),
            (_, Some(_), ..) => Some("max_parallel_trials"),
            (_, _, Some(_), _) => Some("hparam_tuning_algorithm"),
            (_, _, _, Some(_)) => Some("hparam_tuning_objectives"),
            _ => None,
        }
    }
}

/// `hparam_tuning_algorithm`'s value.
fn algorithm(option: &str, value: &Expr) -> Result<Algorithm> {
    match value.to_string().trim_matches('\'').to_ascii_lowercase().as_str() {
        "random_search" => Ok(Algorithm::RandomSearch),
        "grid_search" => Ok(Algorithm::GridSearch),
        "vizier_default" => Err(invalid_option(
            option,
            "'vizier_default' (Bayesian search) is not available; use 'random_search' or 'grid_search'",
        )),
        _ => Err(invalid_option(
            option,
            format!("expected 'random_search' or 'grid_search', got {value}"),
        )),
    }
}

/// `hparam_tuning_objectives`' metric: a list of one, or (as k-means' page spells it) the metric alone.
fn objective(option: &str, value: &Expr) -> Result<String> {
    let metric = match value {
        Expr::Array(array) => match array.elem.as_slice() {
            [metric] => metric,
            _ => {
                return Err(invalid_option(
                    option,
                    "hearth tunes for one objective; give a list of one metric",
                ));
            }
        },
        Expr::Value(_) => value,
        _ => {
            return Err(invalid_option(
                option,
                format!("expected a list of one metric, e.g. ['roc_auc'], got {value}"),
            ));
        }
    };
    Ok(metric.to_string().trim_matches('\'').to_ascii_lowercase())
}

impl Tuning {
    /// Every value a trial may take, one option at a time: each candidate, and each range's ends.
    pub(crate) fn every_value(&self) -> impl Iterator<Item = TrialValues> + '_ {
        self.spaces.iter().flat_map(|(name, space)| {
            let values = match space {
                Space::Candidates(values) => values.clone(),
                Space::Range { min, max, .. } => vec![number_expr(*min), number_expr(*max)],
            };
            values.into_iter().map(move |value| vec![(name.clone(), value)])
        })
    }

    /// Every trial's values: `num_trials` draws seeded with `seed`, or the grid's first `num_trials` points
    /// (the last tuned option varying fastest).
    pub(crate) fn trials(&self, seed: u64) -> Vec<TrialValues> {
        match self.algorithm {
            Algorithm::RandomSearch => {
                let mut draws = Draws::new(seed ^ 0x6870_6172_616d_7321);
                (0..self.num_trials)
                    .map(|_| {
                        self.spaces
                            .iter()
                            .map(|(name, space)| (name.clone(), draw(space, &mut draws)))
                            .collect()
                    })
                    .collect()
            }
            Algorithm::GridSearch => {
                let sizes: Vec<usize> = self
                    .spaces
                    .iter()
                    .map(|(_, space)| match space {
                        Space::Candidates(values) => values.len(),
                        Space::Range { .. } => 1,
                    })
                    .collect();
                let points = sizes.iter().product::<usize>().min(self.num_trials);
                (0..points)
                    .map(|point| {
                        let mut rest = point;
                        let mut values: TrialValues = Vec::with_capacity(self.spaces.len());
                        for ((name, space), size) in self.spaces.iter().zip(&sizes).rev() {
                            let Space::Candidates(candidates) = space else {
                                unreachable!("split_tuning refuses ranges in a grid")
                            };
                            values.push((name.clone(), candidates[rest % size].clone()));
                            rest /= size;
                        }
                        values.reverse();
                        values
                    })
                    .collect()
            }
        }
    }
}

fn draw(space: &Space, draws: &mut Draws) -> Expr {
    match space {
        Space::Candidates(values) => values[(draws.next_u64() % values.len() as u64) as usize].clone(),
        Space::Range { min, max, scale } => number_expr(match scale {
            Scale::Linear => draws.between(*min, *max),
            Scale::Log => draws.between(min.ln(), max.ln()).exp(),
            Scale::Whole => (min + (draws.uniform() * (max - min + 1.0)).floor()).min(*max),
        }),
    }
}

/// `fixed` with a trial's `values` added.
pub(crate) fn with_values(fixed: &[SqlOption], values: &TrialValues) -> Vec<SqlOption> {
    let mut options = fixed.to_vec();
    options.extend(values.iter().map(|(name, value)| SqlOption::KeyValue {
        key: Ident::new(name),
        value: value.clone(),
    }));
    options
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Statement, parse_statements};

    fn options(text: &str) -> Vec<SqlOption> {
        let sql = format!("CREATE MODEL m OPTIONS ({text}) AS SELECT 1");
        match parse_statements(&sql).unwrap().remove(0) {
            Statement::CreateModel(create) => create.options,
            _ => unreachable!(),
        }
    }

    #[test]
    fn ranges_and_candidates_are_split_from_the_fixed_options() {
        let (fixed, tuning) = split_tuning(&options(
            "model_type = 'dnn_classifier', num_trials = 5, max_parallel_trials = 2, \
             learn_rate = HPARAM_RANGE(0.0001, 0.01), hidden_units = HPARAM_CANDIDATES([STRUCT([8]), STRUCT([16, 8])])",
        ))
        .unwrap();
        assert_eq!(fixed.len(), 1);
        let tuning = tuning.unwrap();
        assert_eq!((tuning.num_trials, tuning.max_parallel_trials), (5, 2));
        assert_eq!(
            tuning.spaces[0].1,
            Space::Range {
                min: 1e-4,
                max: 1e-2,
                scale: Scale::Log
            }
        );
        let Space::Candidates(lists) = &tuning.spaces[1].1 else {
            panic!()
        };
        assert_eq!(lists[1].to_string(), "[16, 8]");
        let trials = tuning.trials(3);
        assert_eq!(trials.len(), 5);
        assert_eq!(trials, tuning.trials(3), "the same seed draws the same trials");
        for values in &trials {
            let rate: f64 = values[0].1.to_string().parse().unwrap();
            assert!((1e-4..=1e-2).contains(&rate), "{rate}");
        }
    }

    #[test]
    fn a_grid_walks_the_candidates_last_option_fastest() {
        let (_, tuning) = split_tuning(&options(
            "model_type = 'mlp_classifier', num_trials = 3, hparam_tuning_algorithm = 'grid_search', \
             batch_size = HPARAM_CANDIDATES([16, 32]), optimizer = HPARAM_CANDIDATES(['adam', 'sgd'])",
        ))
        .unwrap();
        let trials: Vec<String> = tuning
            .unwrap()
            .trials(0)
            .iter()
            .map(|values| values.iter().map(|(_, v)| v.to_string()).collect::<Vec<_>>().join(" "))
            .collect();
        assert_eq!(trials, ["16 'adam'", "16 'sgd'", "32 'adam'"]);
    }

    #[test]
    fn whole_number_ranges_stay_whole_and_inside() {
        let space = Space::Range {
            min: 2.0,
            max: 4.0,
            scale: Scale::Whole,
        };
        let mut draws = Draws::new(1);
        let seen: std::collections::BTreeSet<String> = (0..200).map(|_| draw(&space, &mut draws).to_string()).collect();
        assert_eq!(seen.into_iter().collect::<Vec<_>>(), ["2", "3", "4"]);
    }

    #[test]
    fn num_trials_alone_tunes_the_rate_and_what_the_statement_leaves_open() {
        let (_, tuning) =
            split_tuning(&options("model_type = 'dnn_classifier', num_trials = 2, dropout = 0.1")).unwrap();
        let names: Vec<String> = tuning.unwrap().spaces.into_iter().map(|(name, _)| name).collect();
        assert_eq!(names, ["learn_rate"]);
        let (_, kmeans) = split_tuning(&options(
            "model_type = 'kmeans', num_trials = 4, hparam_tuning_objectives = 'DAVIES_BOULDIN_INDEX'",
        ))
        .unwrap();
        let kmeans = kmeans.unwrap();
        assert_eq!(kmeans.objective.as_deref(), Some("davies_bouldin_index"));
        assert_eq!(
            kmeans.spaces,
            [(
                "num_clusters".to_string(),
                Space::Range {
                    min: 2.0,
                    max: 10.0,
                    scale: Scale::Whole
                }
            )]
        );
        assert!(
            split_tuning(&options("model_type = 'dnn_classifier'"))
                .unwrap()
                .1
                .is_none()
        );
    }

    #[test]
    fn mistakes_name_the_option() {
        let error = |text: &str| split_tuning(&options(text)).unwrap_err().to_string();
        assert!(
            error("learn_rate = HPARAM_RANGE(0.1, 0.01), num_trials = 2")
                .contains("option learn_rate: HPARAM_RANGE(0.1, 0.01): min must be below max")
        );
        assert!(error("learn_rate = HPARAM_RANGE(0.001, 0.01)").contains("option learn_rate: tuning needs num_trials"));
        assert!(
            error("hidden_units = HPARAM_RANGE(1, 3), num_trials = 2")
                .contains("option hidden_units: HPARAM_RANGE tunes numbers")
        );
        assert!(
            error("input_label_cols = HPARAM_CANDIDATES([['a']]), num_trials = 2")
                .contains("option input_label_cols: cannot be tuned")
        );
        assert!(error("num_trials = 2, hparam_tuning_algorithm = 'vizier_default'").contains("not available"));
        assert!(
            error("num_trials = 2, hparam_tuning_algorithm = 'grid_search', dropout = HPARAM_RANGE(0, 0.5)")
                .contains("option dropout: hparam_tuning_algorithm 'grid_search' takes HPARAM_CANDIDATES only")
        );
        assert!(error("num_trials = 0").contains("option num_trials: must be at least 1"));
    }

    #[test]
    fn drawn_numbers_read_back_as_written() {
        assert_eq!(number_expr(0.000_123_456_789).to_string(), "0.000123457");
        assert_eq!(number_expr(0.25).to_string(), "0.25");
        assert_eq!(number_expr(64.0).to_string(), "64");
    }
}
