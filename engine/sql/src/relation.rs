//! The relation planner that plans `FROM ML.PREDICT('model', (query))` and the other `ML.` table functions
//! (the parser has already turned `MODEL m` into `'m'`), looking models up in the session's catalog.

use std::sync::{Arc, OnceLock};

use datafusion::error::{DataFusionError, Result};
use datafusion::execution::SessionState;
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::logical_expr::LogicalPlan;
use datafusion::logical_expr::planner::{PlannedRelation, RelationPlanner, RelationPlannerContext, RelationPlanning};
use datafusion::prelude::{DataFrame, SessionContext};
use datafusion::sql::sqlparser::ast::{Expr, FunctionArg, FunctionArgExpr, Query, TableAlias, TableFactor, Value};
use hearth_common::names::did_you_mean;
use hearth_exec::extension::Extensions;

use super::catalog::ModelCatalog;
use super::ml_functions::{ML_FUNCTIONS, MlFunction};
use super::ml_table::{MlArgs, MlTableFunction, kind_of, table_function};

/// Plans hearth's `ML.` table functions against a model catalog.
#[derive(Debug)]
pub struct MlRelationPlanner {
    catalog: ModelCatalog,
    /// The extensions of the session it plans for, whose functions the plans' expressions name.
    extensions: Extensions,
    /// A state for building the plans' expressions (hearth's functions registered), made on first use.
    state: OnceLock<SessionState>,
}

impl MlRelationPlanner {
    /// The planner of the models in `catalog`, for a session with `extensions`.
    pub fn new(catalog: ModelCatalog, extensions: Extensions) -> Self {
        Self {
            catalog,
            extensions,
            state: OnceLock::new(),
        }
    }

    fn state(&self) -> &SessionState {
        self.state.get_or_init(|| {
            let ctx = SessionContext::new_with_state(SessionStateBuilder::new().with_default_features().build());
            self.extensions.register_functions(&ctx);
            ctx.state()
        })
    }
}

fn plan_error(message: String) -> DataFusionError {
    DataFusionError::Plan(message)
}

impl RelationPlanner for MlRelationPlanner {
    fn plan_relation(
        &self,
        relation: TableFactor,
        context: &mut dyn RelationPlannerContext,
    ) -> Result<RelationPlanning> {
        let Some((call, alias)) = MlCall::of(&relation)? else {
            return Ok(RelationPlanning::Original(Box::new(relation)));
        };
        let plan = self.plan_call(&call, context)?;
        Ok(RelationPlanning::Planned(Box::new(PlannedRelation::new(plan, alias))))
    }
}

impl MlRelationPlanner {
    /// The plan of an `ML.` call: its table function's, over the call's model (dispatching on its kind) and
    /// rows.
    fn plan_call(&self, call: &MlCall, context: &mut dyn RelationPlannerContext) -> Result<LogicalPlan> {
        let function = call.check()?;
        let model = self.catalog.get(&call.model).map_err(DataFusionError::from)?;
        let kind = kind_of(&model);
        let mut args = MlArgs {
            name: &call.name,
            model_name: &call.model,
            model: &model,
            rows: None,
            settings: call.settings.as_ref(),
            state: self.state(),
        };
        function.check_kind(&args, kind)?;
        if let Some(subquery) = call.query.clone() {
            let rows = context.plan(TableFactor::Derived {
                lateral: false,
                subquery,
                alias: None,
                sample: None,
            })?;
            args.rows = Some(DataFrame::new(self.state().clone(), rows));
        }
        Ok(function.plan(&args, kind)?)
    }
}

/// An `ML.<function>(MODEL m [, rows])` call, as written.
struct MlCall {
    /// The function, lower case (`predict`).
    function: String,
    /// The call's name in messages (`ML.PREDICT`).
    name: String,
    /// The model's name.
    model: String,
    /// The rows, when given.
    query: Option<Box<Query>>,
    /// The settings after the rows: `STRUCT(0.6 AS threshold)`, `GENERATE_ARRAY(…)`, when given.
    settings: Option<Expr>,
}

impl MlCall {
    /// The call's function; refuses a function hearth does not have, and rows or settings it does not take.
    fn check(&self) -> Result<&'static dyn MlTableFunction> {
        let Some(function) = table_function(&self.function) else {
            let functions: Vec<String> = ML_FUNCTIONS.iter().map(MlFunction::call_name).collect();
            return Err(plan_error(format!(
                "{} is not a table function{}; hearth has {}",
                self.name,
                did_you_mean(&self.name, functions.iter().map(String::as_str)),
                functions.join(", ")
            )));
        };
        let declaration = function.declaration();
        if self.query.is_some() && !declaration.takes_rows {
            return Err(plan_error(format!(
                "{} takes no rows: {}",
                self.name, declaration.syntax
            )));
        }
        if self.settings.is_some() && declaration.settings.is_none() {
            let taking: Vec<String> = ML_FUNCTIONS
                .iter()
                .filter(|f| f.settings.is_some())
                .map(MlFunction::call_name)
                .collect();
            return Err(plan_error(format!(
                "{} takes no settings after its rows; {} do",
                self.name,
                taking.join(" and ")
            )));
        }
        Ok(function)
    }

    /// The `ML.` call `relation` is, with its alias; `None` for any other relation.
    fn of(relation: &TableFactor) -> Result<Option<(Self, Option<TableAlias>)>> {
        let TableFactor::Table {
            name,
            args: Some(args),
            alias,
            ..
        } = relation
        else {
            return Ok(None);
        };
        let parts: Vec<String> = name.0.iter().map(|p| p.to_string().to_ascii_lowercase()).collect();
        let [schema, function] = parts.as_slice() else {
            return Ok(None);
        };
        if schema != "ml" {
            return Ok(None);
        }
        let call = format!("ML.{}", function.to_ascii_uppercase());
        let mut arguments = args.args.iter();
        let model = match arguments.next() {
            Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Value(value)))) => match &value.value {
                Value::SingleQuotedString(name) => name.clone(),
                _ => return Err(plan_error(format!("{call}: the first argument is MODEL name"))),
            },
            _ => return Err(plan_error(format!("{call}: the first argument is MODEL name"))),
        };
        let (mut query, mut settings) = (None, None);
        for argument in arguments {
            match argument {
                FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Subquery(rows)))
                    if query.is_none() && settings.is_none() =>
                {
                    query = Some(rows.clone());
                }
                FunctionArg::Unnamed(FunctionArgExpr::Expr(
                    expr @ (Expr::Struct { .. } | Expr::Array(_) | Expr::Function(_)),
                )) if settings.is_none() => settings = Some(expr.clone()),
                other => {
                    return Err(plan_error(format!(
                        "{call}: unexpected argument {other}; after MODEL name come the rows, as (SELECT …) or \
                         TABLE name, then the function's settings (STRUCT(…) or an array)"
                    )));
                }
            }
        }
        let call = Self {
            function: function.clone(),
            name: call,
            model,
            query,
            settings,
        };
        Ok(Some((call, alias.clone())))
    }
}

/// The planner as DataFusion takes it.
pub(crate) fn planner(catalog: ModelCatalog, extensions: Extensions) -> Arc<dyn RelationPlanner> {
    Arc::new(MlRelationPlanner::new(catalog, extensions))
}
