//! `CREATE MODEL` planned apart from its execution, as DataFusion's `SqlToRel` plans against its
//! `ContextProvider`: [`plan_create_model`] checks the statement against a [`ModelPlanContext`] (the training
//! query's columns, the catalog's names, the data roots) and gives a [`CreateModelPlan`] — the split, the
//! label, the preprocessing, the features, the estimator and the tuning — reading no row and training nothing.
//! `EXPLAIN CREATE MODEL …` prints it; `CREATE MODEL` executes it.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> hearth_exec::error::Result<()> {
//! use std::sync::Arc;
//! use datafusion::arrow::datatypes::{DataType, Field, Schema};
//! use datafusion::datasource::MemTable;
//! use datafusion::prelude::{DataFrame, SessionContext};
//! use datafusion::sql::sqlparser::ast::Query;
//! use hearth_exec::error::Result;
//! use hearth_sql::{DataRoots, ModelPlanContext, Statement, parse_statements, plan_create_model};
//!
//! /// A training query whose rows are an empty table of two columns: nothing to read, nothing to train.
//! struct Columns(DataFrame);
//!
//! impl ModelPlanContext for Columns {
//!     async fn query_rows(&self, _query: &Query) -> Result<DataFrame> {
//!         Ok(self.0.clone())
//!     }
//!     fn has_model(&self, _name: &str) -> Result<bool> {
//!         Ok(false)
//!     }
//!     fn data_roots(&self) -> Option<Arc<DataRoots>> {
//!         None
//!     }
//! }
//!
//! let schema = Arc::new(Schema::new(vec![
//!     Field::new("age", DataType::Float64, true),
//!     Field::new("class", DataType::Utf8, true),
//! ]));
//! let rows = SessionContext::new().read_table(Arc::new(MemTable::try_new(schema, vec![vec![]])?))?;
//! let statements = parse_statements(
//!     "CREATE MODEL m OPTIONS (model_type = 'logistic_reg', input_label_cols = ['class']) AS SELECT * FROM t",
//! )?;
//! let Statement::CreateModel(create) = &statements[0] else { unreachable!() };
//! let plan = plan_create_model(&Columns(rows), create).await?;
//! assert!(plan.to_string().contains("label: class, a string indexed by StringIndexer"));
//! # Ok(())
//! # }
//! ```

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::prelude::DataFrame;
use datafusion::sql::sqlparser::ast::{Query, SqlOption};
use hearth_exec::error::{HearthError, Result};
use hearth_exec::session::Session;
use hearth_preprocessing::pipeline::PipelineStage;
use hearth_preprocessing::stage::{closest_column, quoted_columns};

use super::catalog::ModelCatalog;
use super::data_roots::DataRoots;
use super::error::{CREATE_MODEL, invalid};
use super::estimators::estimator;
use super::hparams::{TrialValues, Tuning, split_tuning, with_values};
use super::options::{DataSplit, ModelOptions};
use super::parser::CreateModel;
use super::preprocessing::{FEATURES, plan_preprocessing};
use super::transform::TransformPlan;
use super::trials::{Scoring, check_objective};

/// The column an indexed label goes to.
pub(crate) const LABEL_INDEX: &str = "__label";

/// What planning a `CREATE MODEL` needs of the session it runs in.
pub trait ModelPlanContext {
    /// The training query's rows, as a plan: nothing is read.
    fn query_rows(&self, query: &Query) -> impl Future<Output = Result<DataFrame>> + Send;

    /// Whether the catalog holds a model called `name`, or why there is no catalog to look in.
    fn has_model(&self, name: &str) -> Result<bool>;

    /// The folders and stores the session's jobs are confined to, when they are (`--data-roots`).
    fn data_roots(&self) -> Option<Arc<DataRoots>>;
}

impl ModelPlanContext for Session {
    fn query_rows(&self, query: &Query) -> impl Future<Output = Result<DataFrame>> + Send {
        super::rows::plan_query(self, query)
    }

    fn has_model(&self, name: &str) -> Result<bool> {
        Ok(ModelCatalog::of(self)?.contains(name))
    }

    fn data_roots(&self) -> Option<Arc<DataRoots>> {
        self.context().copied_config().get_extension::<DataRoots>()
    }
}

/// How a model's label is read.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum LabelType {
    /// Strings or booleans: indexed, the values kept for predictions.
    Indexed,
    /// Numbers: class indices (classifier) or targets (regressor) as they are.
    Numeric,
    /// No label: k-means clusters the features alone.
    Unlabelled,
}

/// What a `CREATE MODEL` does to a model of the same name.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Existing {
    /// There is none.
    None,
    /// `IF NOT EXISTS` found one: it is kept, and nothing is trained.
    Kept,
    /// `OR REPLACE` found one: the new model replaces it.
    Replaced,
}

/// A `CREATE MODEL` checked and planned, before any row is read: printed by `EXPLAIN CREATE MODEL`.
#[derive(Debug)]
pub struct CreateModelPlan {
    pub(crate) create: CreateModel,
    pub(crate) existing: Existing,
    pub(crate) options: ModelOptions,
    pub(crate) tuning: Option<Tuning>,
    /// Each trial's values and options, when tuned.
    pub(crate) trials: Vec<(TrialValues, ModelOptions)>,
    /// The training query's rows, as a plan.
    pub(crate) input: DataFrame,
    pub(crate) label_type: LabelType,
    /// The preprocessing: the TRANSFORM clause's stages, or the automatic ones.
    pub(crate) transform: TransformPlan,
    /// The columns assembled into the features vector.
    pub(crate) features: Vec<String>,
    /// The estimator, before class weights drawn from the rows.
    pub(crate) estimator: Option<PipelineStage>,
}

/// Plans `create` against `context`: its options, tuning, label, preprocessing and features are checked, and a
/// model of its name found or not, with no row read.
pub async fn plan_create_model(context: &impl ModelPlanContext, create: &CreateModel) -> Result<CreateModelPlan> {
    let (fixed, tuning) = split_tuning(&create.options)?;
    let options = ModelOptions::from_sql(&fixed)?;
    // A job confined to its data roots keeps its checkpoints there too.
    if let (Some(dir), Some(roots)) = (&options.checkpoint_dir, context.data_roots()) {
        roots.check(dir, "checkpoint_dir")?;
    }
    let trials = trial_options(&fixed, tuning.as_ref(), &options)?;
    let existing = match (
        context.has_model(&create.name)?,
        create.if_not_exists,
        create.or_replace,
    ) {
        (false, ..) => Existing::None,
        (true, true, _) => Existing::Kept,
        (true, false, true) => Existing::Replaced,
        (true, false, false) => {
            return Err(invalid(
                "name",
                format!(
                    "model {:?} exists; use CREATE OR REPLACE MODEL to replace it",
                    create.name
                ),
            ));
        }
    };
    let input = context.query_rows(&create.query).await?;
    let label_type = label_type(&input, &options)?;
    let transform = plan_preprocessing(create, &input, &options)?;
    let features = features(&transform, &options, label_type)?;
    let estimator = match (&tuning, label_type) {
        (Some(_), _) => None,
        (None, LabelType::Indexed) => Some(estimator(&options, LABEL_INDEX, None)?),
        (None, _) => Some(estimator(&options, &options.label, None)?),
    };
    Ok(CreateModelPlan {
        create: create.clone(),
        existing,
        options,
        tuning,
        trials,
        input,
        label_type,
        transform,
        features,
        estimator,
    })
}

/// Each trial's values and options: every candidate checked, the objective too.
fn trial_options(
    fixed: &[SqlOption],
    tuning: Option<&Tuning>,
    options: &ModelOptions,
) -> Result<Vec<(TrialValues, ModelOptions)>> {
    let Some(tuning) = tuning else {
        return Ok(Vec::new());
    };
    check_objective(tuning, Scoring::of(options.model_type))?;
    for values in tuning.every_value() {
        ModelOptions::from_sql(&with_values(fixed, &values))?;
    }
    tuning
        .trials(options.seed)
        .into_iter()
        .map(|values| Ok((values.clone(), ModelOptions::from_sql(&with_values(fixed, &values))?)))
        .collect()
}

/// The preprocessing's outputs that are features: neither the label nor the split column; an error when none is.
fn features(transform: &TransformPlan, options: &ModelOptions, label_type: LabelType) -> Result<Vec<String>> {
    let features: Vec<String> = (transform.outputs.iter())
        .filter(|c| is_feature(c, options))
        .cloned()
        .collect();
    if features.is_empty() {
        return Err(invalid(
            "TRANSFORM",
            match label_type {
                LabelType::Unlabelled => "no feature columns to cluster",
                _ => "no feature columns: every output is the label",
            },
        ));
    }
    Ok(features)
}

/// Whether `column` is a feature: neither the label nor the split column.
pub(crate) fn is_feature(column: &str, options: &ModelOptions) -> bool {
    column != options.label && Some(column) != options.data_split_col.as_deref()
}

/// How the model's label is read: checked against the training query's columns.
fn label_type(input: &DataFrame, options: &ModelOptions) -> Result<LabelType> {
    if !options.model_type.is_network() {
        return Ok(LabelType::Unlabelled);
    }
    let field = input
        .schema()
        .field_with_unqualified_name(&options.label)
        .map_err(|_| {
            HearthError::schema(
                CREATE_MODEL,
                &options.label,
                format!(
                    "input_label_cols names no column of the training query{} (it has {})",
                    closest_column(input, &options.label),
                    quoted_columns(input)
                ),
            )
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
        _ => Err(HearthError::schema(
            CREATE_MODEL,
            &options.label,
            format!(
                "a {} label must be {}, got {data_type}",
                options.model_type,
                if options.model_type.is_classifier() {
                    "a number or a string"
                } else {
                    "a number"
                }
            ),
        )),
    }
}

impl fmt::Display for CreateModelPlan {
    /// One line per part, indented under the statement: what `EXPLAIN CREATE MODEL` prints.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let options = &self.options;
        let existing = match self.existing {
            Existing::None => "a new model",
            Existing::Kept => "a model of that name exists and is kept: nothing is trained",
            Existing::Replaced => "replaces the model of that name",
        };
        writeln!(
            f,
            "CreateModel: {} ({}; {existing})",
            self.create.name, options.model_type
        )?;
        writeln!(f, "  split: {}", self.split())?;
        writeln!(f, "  label: {}", self.label())?;
        for stage in &self.transform.stages {
            let stage = stage.as_stage();
            writeln!(f, "  preprocessing: {}: {}", stage.class(), stage.describe())?;
        }
        writeln!(f, "  features: {} → {FEATURES}", self.features.join(", "))?;
        match (&self.estimator, &self.tuning) {
            (Some(estimator), _) => {
                let estimator = estimator.as_stage();
                writeln!(f, "  estimator: {}: {}", estimator.class(), estimator.describe())?;
            }
            (None, Some(tuning)) => {
                let tuned: Vec<&str> = tuning.spaces.iter().map(|(name, _)| name.as_str()).collect();
                writeln!(
                    f,
                    "  tuning: {} trials ({}, {} at once) of {}, the best kept by {}",
                    self.trials.len(),
                    tuning.algorithm.name(),
                    tuning.max_parallel_trials,
                    tuned.join(", "),
                    tuning
                        .objective
                        .as_deref()
                        .unwrap_or("the model type's default objective")
                )?;
            }
            (None, None) => {}
        }
        write!(f, "  rows: {}", self.create.query)
    }
}

impl CreateModelPlan {
    /// The split, as `data_split_method` and its options say.
    fn split(&self) -> String {
        let options = &self.options;
        // To a millionth of a percent: 0.07 × 100 is 7.000000000000001 in floating point.
        let percent = (options.data_split_eval_fraction * 1e8).round() / 1e6;
        match (self.label_type, &options.data_split) {
            (LabelType::Unlabelled, _) => "none: k-means is fitted and scored on every row".to_string(),
            (_, DataSplit::Auto) => {
                "auto_split: none under 500 rows, 20 % held out up to 50,000, 10,000 rows beyond".to_string()
            }
            (_, DataSplit::Random) => format!(
                "random: {percent} % held out (data_split_seed {})",
                options.data_split_seed
            ),
            (_, DataSplit::Seq) => format!(
                "seq: the last {percent} % by {} held out",
                options.data_split_col.as_deref().unwrap_or("?")
            ),
            (_, DataSplit::Custom) => format!(
                "custom: the rows where {} is true held out",
                options.data_split_col.as_deref().unwrap_or("?")
            ),
            (_, DataSplit::NoSplit) => "no_split: every row trains".to_string(),
        }
    }

    /// The label, and how it is read.
    fn label(&self) -> String {
        let label = &self.options.label;
        match self.label_type {
            LabelType::Indexed => format!("{label}, a string indexed by StringIndexer into {LABEL_INDEX}"),
            LabelType::Numeric if self.options.model_type.is_classifier() => {
                format!("{label}, class indices as they are")
            }
            LabelType::Numeric => format!("{label}, a number as it is"),
            LabelType::Unlabelled => "none: k-means clusters the features alone".to_string(),
        }
    }
}
