//! SQL with models, in BigQuery ML's shape: `CREATE MODEL … OPTIONS (…) TRANSFORM (…) AS SELECT …` trains
//! through the barrier stage and saves the fitted pipeline in the session's [`ModelCatalog`];
//! `ML.PREDICT`, `ML.EVALUATE`, `ML.TRANSFORM`, `ML.TRAINING_INFO`, `ML.FEATURE_INFO` and `ML.TRIAL_INFO` are table functions
//! usable inside any query; `DROP MODEL` and `SHOW MODELS` manage the catalog. Every other statement is
//! DataFusion's.
//!
//! ```
//! # tokio::runtime::Builder::new_multi_thread().build().unwrap().block_on(async {
//! use hearth_engine::prelude::*;
//!
//! let models = std::env::temp_dir().join(format!("hearth-doc-sql-{}", std::process::id()));
//! let session = Session::local(2).with_models(&models);
//! session
//!     .sql("CREATE TABLE points AS SELECT x, x * x AS y, x > 50 AS big FROM generate_series(1, 100) AS t(x)")
//!     .await
//!     .unwrap();
//! session
//!     .sql("CREATE MODEL sizes OPTIONS (model_type = 'logistic_reg', input_label_cols = ['big'], max_iterations = 2)
//!           AS SELECT x, big FROM points")
//!     .await
//!     .unwrap()
//!     .collect()
//!     .await
//!     .unwrap();
//! let predictions = session
//!     .sql("SELECT x, predicted_big FROM ML.PREDICT(MODEL sizes, (SELECT x FROM points))")
//!     .await
//!     .unwrap();
//! assert_eq!(predictions.count().await.unwrap(), 100);
//! # std::fs::remove_dir_all(&models).unwrap();
//! # });
//! ```

mod catalog;
mod create_model;
mod hparams;
mod kmeans;
mod options;
mod parser;
mod relation;
mod table_functions;
mod transform;
mod trials;

use std::path::PathBuf;
use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::common::ScalarValue;
use datafusion::execution::SessionState;
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::logical_expr::{LogicalPlan, LogicalPlanBuilder};
use datafusion::prelude::{DataFrame, SessionContext};
use datafusion::sql::parser::Statement as DFStatement;
use datafusion::sql::sqlparser::ast::{Query, Statement as SqlStatement};

pub use catalog::{CatalogModel, ENTRY_FILE, EVALUATION_FILE, ModelCatalog, ModelEntry};
pub use create_model::{BestTrial, CreatedModel};
pub use options::{ClassWeights, DataSplit, ModelOptions, ModelType};
pub use parser::{CreateModel, Statement, parse_statements};
pub use relation::MlRelationPlanner;
pub use transform::{TransformPlan, plan_transform};
pub use trials::{TRIALS_FILE, TrialRecord, TrialsRecord};

pub use table_functions::{Trained, held_out_rows};

use crate::error::{HearthError, Result};
use crate::extension::SessionExtension;
use crate::session::Session;

/// Where a session keeps its models unless told otherwise: `$HEARTH_MODELS`, else `models` in the working
/// directory.
pub fn default_models_dir() -> PathBuf {
    std::env::var_os("HEARTH_MODELS").map_or_else(|| PathBuf::from("models"), PathBuf::from)
}

/// Gives a driver's session the models in [`default_models_dir`]: the catalog, kept as an extension of the
/// session's configuration, and the planner of `ML.` table functions over it.
fn install_catalog(ctx: &SessionContext) {
    let state = with_catalog(ctx.state(), ModelCatalog::new(default_models_dir()));
    *ctx.state_ref().write() = state;
}

/// `state` with its models in `catalog`.
fn with_catalog(mut state: SessionState, catalog: ModelCatalog) -> SessionState {
    state.config_mut().set_extension(Arc::new(catalog.clone()));
    SessionStateBuilder::new_from_existing(state)
        .with_relation_planners(vec![relation::planner(catalog)])
        .build()
}

inventory::submit! {
    SessionExtension {
        name: "hearth_engine::sql",
        functions: SessionExtension::nothing,
        session: install_catalog,
    }
}

/// hearth's SQL on a [`Session`]: BigQuery ML's statements beside DataFusion's, over the session's model
/// catalog. In `hearth_engine::prelude`.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use hearth_engine::session::Session;
/// use hearth_engine::sql::SqlSessionExt;
///
/// let models = std::env::temp_dir().join(format!("hearth-doc-sql-ext-{}", std::process::id()));
/// let session = Session::local(1).with_models(&models);
/// assert_eq!(session.models().dir(), models.as_path());
/// assert_eq!(session.sql("SHOW MODELS").await.unwrap().count().await.unwrap(), 0);
/// # });
/// ```
pub trait SqlSessionExt: Sized {
    /// The catalog `CREATE MODEL` saves to and `ML.` functions read from.
    fn models(&self) -> Arc<ModelCatalog>;

    /// The session with its models kept in `dir`.
    fn with_models(self, dir: impl Into<PathBuf>) -> Self;

    /// Runs one SQL statement — a query (hearth's `ml_*` and `ML.` functions included), DataFusion's DDL,
    /// or `CREATE MODEL`, `DROP MODEL`, `SHOW MODELS` — and returns its rows as a data frame. Queries are
    /// lazy; everything else has run when this returns.
    fn sql(&self, sql: &str) -> impl Future<Output = Result<DataFrame>> + Send;

    /// Runs a parsed statement (see [`parse_statements`]).
    fn execute(&self, statement: &Statement) -> impl Future<Output = Result<DataFrame>> + Send;
}

impl SqlSessionExt for Session {
    fn models(&self) -> Arc<ModelCatalog> {
        let catalog = self.context().copied_config().get_extension::<ModelCatalog>();
        catalog.unwrap_or_else(|| Arc::new(ModelCatalog::new(default_models_dir())))
    }

    fn with_models(self, dir: impl Into<PathBuf>) -> Self {
        let state = with_catalog(self.context().state(), ModelCatalog::new(dir));
        self.with_state(state)
    }

    async fn sql(&self, sql: &str) -> Result<DataFrame> {
        let mut statements = parse_statements(sql)?;
        if statements.len() != 1 {
            return Err(HearthError::InvalidParam {
                stage: "Session::sql".to_string(),
                param: "sql",
                message: format!(
                    "expected one statement, got {}; run a script with parse_statements and Session::execute",
                    statements.len()
                ),
            });
        }
        self.execute(&statements.remove(0)).await
    }

    async fn execute(&self, statement: &Statement) -> Result<DataFrame> {
        match statement {
            Statement::CreateModel(create) => {
                let created = create_model::create_model(self, create).await?;
                literal_frame(self, created_rows(&created))
            }
            Statement::DropModel { name, if_exists } => {
                let models = self.models();
                if !models.drop_model(name)? && !*if_exists {
                    return Err(HearthError::Persistence {
                        path: models.dir().to_path_buf(),
                        message: format!("no model named {name:?} to drop; DROP MODEL IF EXISTS ignores that"),
                    });
                }
                literal_frame(self, empty_rows())
            }
            Statement::ShowModels => literal_frame(self, model_rows(&self.models().list()?)),
            Statement::Sql(statement) => run_statement(self, DFStatement::clone(statement)).await,
        }
    }
}

/// Plans and runs one of DataFusion's statements in `session`.
async fn run_statement(session: &Session, statement: DFStatement) -> Result<DataFrame> {
    let ctx = session.context();
    let plan = ctx.state().statement_to_plan(statement).await?;
    Ok(ctx.execute_logical_plan(plan).await?)
}

/// The rows of a query parsed from SQL.
pub(crate) async fn plan_query(session: &Session, query: &Query) -> Result<DataFrame> {
    let statement = DFStatement::Statement(Box::new(SqlStatement::Query(Box::new(query.clone()))));
    run_statement(session, statement).await
}

/// A data frame of literal rows.
fn literal_frame(session: &Session, (schema, rows): (Schema, Vec<Vec<ScalarValue>>)) -> Result<DataFrame> {
    let plan = literal_rows(schema, rows)?;
    Ok(DataFrame::new(session.context().state(), plan))
}

/// A plan of literal rows: `schema`'s columns, `rows` of values in that order.
pub(crate) fn literal_rows(schema: Schema, rows: Vec<Vec<ScalarValue>>) -> Result<LogicalPlan> {
    use datafusion::common::{Column, DFSchema};
    use datafusion::logical_expr::{EmptyRelation, Expr};

    if rows.is_empty() {
        return Ok(LogicalPlan::EmptyRelation(EmptyRelation {
            produce_one_row: false,
            schema: Arc::new(DFSchema::try_from(schema)?),
        }));
    }
    let exprs: Vec<Vec<Expr>> = rows
        .into_iter()
        .map(|row| row.into_iter().map(|v| Expr::Literal(v, None)).collect())
        .collect();
    let plan = LogicalPlanBuilder::values(exprs)?.build()?;
    let renamed: Vec<Expr> = plan
        .schema()
        .columns()
        .into_iter()
        .zip(schema.fields())
        .map(|(column, field)| Expr::Column(Column::from_name(column.name)).alias(field.name()))
        .collect();
    Ok(LogicalPlanBuilder::from(plan).project(renamed)?.build()?)
}

fn empty_rows() -> (Schema, Vec<Vec<ScalarValue>>) {
    (Schema::empty(), Vec::new())
}

/// What `CREATE MODEL` prints.
fn created_rows(created: &CreatedModel) -> (Schema, Vec<Vec<ScalarValue>>) {
    let schema = Schema::new(vec![
        Field::new("model", DataType::Utf8, false),
        Field::new("status", DataType::Utf8, false),
        Field::new("training_rows", DataType::UInt64, true),
        Field::new("evaluation_rows", DataType::UInt64, true),
        Field::new("loss", DataType::Float64, true),
        Field::new("seconds", DataType::Float64, true),
        Field::new("attempts", DataType::UInt64, true),
        Field::new("path", DataType::Utf8, false),
    ]);
    let entry = created.entry.as_ref();
    let row = vec![
        ScalarValue::from(created.name.as_str()),
        ScalarValue::from(match (&created.best_trial, created.trained) {
            (Some(best), _) => format!(
                "trained: trial {} of {} kept ({} {:.4})",
                best.trial_id, best.trials, best.objective, best.value
            ),
            (None, true) => "trained".to_string(),
            (None, false) => "exists; not replaced".to_string(),
        }),
        ScalarValue::UInt64(entry.map(|e| e.training_rows)),
        ScalarValue::UInt64(entry.map(|e| e.evaluation_rows)),
        ScalarValue::Float64(created.loss),
        ScalarValue::Float64(entry.map(|e| e.training_seconds)),
        ScalarValue::UInt64(created.attempts.map(|n| n as u64)),
        ScalarValue::from(created.path.display().to_string()),
    ];
    (schema, vec![row])
}

/// What `SHOW MODELS` prints.
fn model_rows(entries: &[ModelEntry]) -> (Schema, Vec<Vec<ScalarValue>>) {
    let schema = Schema::new(vec![
        Field::new("model", DataType::Utf8, false),
        Field::new("model_type", DataType::Utf8, false),
        Field::new("label", DataType::Utf8, false),
        Field::new("training_rows", DataType::UInt64, false),
        Field::new("evaluation_rows", DataType::UInt64, false),
        Field::new("created_ms", DataType::UInt64, false),
    ]);
    let rows = entries
        .iter()
        .map(|e| {
            vec![
                ScalarValue::from(e.name.as_str()),
                ScalarValue::from(e.model_type.as_str()),
                ScalarValue::from(e.label.as_str()),
                ScalarValue::UInt64(Some(e.training_rows)),
                ScalarValue::UInt64(Some(e.evaluation_rows)),
                ScalarValue::UInt64(Some(e.created_ms)),
            ]
        })
        .collect();
    (schema, rows)
}
