//! `session.sql(…)`: hearth's SQL on a [`Session`], and the rows its statements answer.

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use datafusion::common::ScalarValue;
use datafusion::prelude::DataFrame;
use datafusion::sql::parser::Statement as DFStatement;
use hearth_exec::error::{HearthError, Result};
use hearth_exec::session::Session;

use super::catalog::{ModelCatalog, ModelEntry};
use super::create_model::{CreatedModel, create_model};
use super::data_roots::DataRoots;
use super::model_plan::{CreateModelPlan, plan_create_model};
use super::models_feature::with_catalog;
use super::parser::{Statement, parse_statements};
use super::rows::{literal_frame, run_statement};

/// hearth's SQL on a [`Session`]: BigQuery ML's statements beside DataFusion's, over the session's model
/// catalog. In `hearth::prelude`.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use hearth_exec::session::Session;
/// use hearth_sql::SqlSessionExt;
///
/// let models = std::env::temp_dir().join(format!("hearth-doc-sql-ext-{}", std::process::id()));
/// let session = Session::builder().local(1).with_models(&models);
/// assert_eq!(session.models().unwrap().dir(), models.as_path());
/// assert_eq!(session.sql("SHOW MODELS").await.unwrap().count().await.unwrap(), 0);
/// # });
/// ```
pub trait SqlSessionExt: Sized {
    /// The catalog `CREATE MODEL` saves to and `ML.` functions read from, or why there is none (a session
    /// built without [`ModelsFeature::with_models`](crate::ModelsFeature::with_models) has none).
    fn models(&self) -> Result<Arc<ModelCatalog>>;

    /// The session with its models kept in `dir`.
    fn with_models(self, dir: impl Into<PathBuf>) -> Self;

    /// Runs one SQL statement — a query (hearth's `ml_*` and `ML.` functions included), DataFusion's DDL,
    /// or `CREATE MODEL`, `DROP MODEL`, `SHOW MODELS` — and returns its rows as a data frame. Queries are
    /// lazy; everything else has run when this returns.
    fn sql(&self, sql: &str) -> impl Future<Output = Result<DataFrame>> + Send;

    /// Runs a parsed statement (see [`parse_statements`]).
    fn execute(&self, statement: &Statement) -> impl Future<Output = Result<DataFrame>> + Send;

    /// This session with its statements confined to `roots` (see [`DataRoots`]): a statement whose plan
    /// names a file elsewhere is refused before it runs.
    fn with_data_roots(self, roots: DataRoots) -> Self;
}

impl SqlSessionExt for Session {
    fn models(&self) -> Result<Arc<ModelCatalog>> {
        ModelCatalog::of(self)
    }

    fn with_models(self, dir: impl Into<PathBuf>) -> Self {
        let state = with_catalog(self.context().state(), ModelCatalog::new(dir));
        self.with_state(state)
    }

    fn with_data_roots(self, roots: DataRoots) -> Self {
        let mut state = self.context().state();
        state.config_mut().set_extension(Arc::new(roots));
        self.with_state(state)
    }

    async fn sql(&self, sql: &str) -> Result<DataFrame> {
        let mut statements = parse_statements(sql)?;
        if statements.len() != 1 {
            return Err(HearthError::invalid_param(
                "Session::sql",
                "sql",
                format!(
                    "expected one statement, got {}; run a script with parse_statements and Session::execute",
                    statements.len()
                ),
            ));
        }
        self.execute(&statements.remove(0)).await
    }

    async fn execute(&self, statement: &Statement) -> Result<DataFrame> {
        match statement {
            Statement::CreateModel(create) => {
                let created = create_model(self, create).await?;
                literal_frame(self, created_rows(&created))
            }
            Statement::ExplainCreateModel(create) => {
                let plan = plan_create_model(self, create).await?;
                literal_frame(self, plan_rows(&plan))
            }
            Statement::DropModel { name, if_exists } => {
                let models = self.models()?;
                if !models.drop_model(name)? && !*if_exists {
                    return Err(HearthError::persistence(
                        models.dir(),
                        format!("no model named {name:?} to drop; DROP MODEL IF EXISTS ignores that"),
                    ));
                }
                literal_frame(self, empty_rows())
            }
            Statement::ShowModels => literal_frame(self, model_rows(&self.models()?.list()?)),
            Statement::Sql(statement) => run_statement(self, DFStatement::clone(statement)).await,
        }
    }
}

/// What `EXPLAIN CREATE MODEL` prints: the plan, a line per row.
fn plan_rows(plan: &CreateModelPlan) -> (Schema, Vec<Vec<ScalarValue>>) {
    let schema = Schema::new(vec![Field::new("plan", DataType::Utf8, false)]);
    let rows = plan
        .to_string()
        .lines()
        .map(|line| vec![ScalarValue::from(line)])
        .collect();
    (schema, rows)
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
        // To the hundredth: more digits say nothing about a training's time.
        ScalarValue::Float64(entry.map(|e| (e.training_seconds * 100.0).round() / 100.0)),
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
        Field::new(
            "creation_time",
            DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())),
            false,
        ),
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
                ScalarValue::TimestampMillisecond(Some(e.created_ms as i64), Some("UTC".into())),
            ]
        })
        .collect();
    (schema, rows)
}
