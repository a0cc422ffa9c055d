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
use hearth_exec::session::install_session_functions;

use super::catalog::{CatalogModel, ModelCatalog};
use super::evaluation_tables::{confusion_matrix, roc_curve};
use super::explain::{explain_predict, global_explain};
use super::kmeans;
use super::ml_functions::{ML_FUNCTIONS, MlFunction, ml_function};
use super::table_functions::{evaluate, feature_info, held_out_rows, predict, training_info, transform};
use super::trials::trial_info;
use super::weights::weights;

/// Plans hearth's `ML.` table functions against a model catalog.
#[derive(Debug)]
pub struct MlRelationPlanner {
    catalog: ModelCatalog,
    /// A state for building the plans' expressions (hearth's functions registered), made on first use.
    state: OnceLock<SessionState>,
}

impl MlRelationPlanner {
    /// The planner of the models in `catalog`.
    pub fn new(catalog: ModelCatalog) -> Self {
        Self {
            catalog,
            state: OnceLock::new(),
        }
    }

    fn state(&self) -> &SessionState {
        self.state.get_or_init(|| {
            let ctx = SessionContext::new_with_state(SessionStateBuilder::new().with_default_features().build());
            install_session_functions(&ctx);
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
    /// The plan of an `ML.` call: the model's table function, over the call's rows where it has them.
    fn plan_call(&self, call: &MlCall, context: &mut dyn RelationPlannerContext) -> Result<LogicalPlan> {
        call.check()?;
        let mut rows = |what: &str| -> Result<DataFrame> {
            let Some(query) = call.query.clone() else {
                return Err(plan_error(format!(
                    "{}(MODEL {}, (SELECT …)): {what}",
                    call.name, call.model
                )));
            };
            let plan = context.plan(TableFactor::Derived {
                lateral: false,
                subquery: query,
                alias: None,
                sample: None,
            })?;
            Ok(DataFrame::new(self.state().clone(), plan))
        };
        let model = self.catalog.get(&call.model).map_err(DataFusionError::from)?;
        let clusters = kmeans::fitted(&model.pipeline).is_some();
        let given = call.query.is_some();
        match (call.function.as_str(), clusters) {
            ("predict", true) => kmeans::predict(&model, rows("the rows to predict are missing")?),
            ("predict", false) => predict(&model, rows("the rows to predict are missing")?),
            ("transform", _) => transform(&model, rows("the rows to transform are missing")?),
            ("evaluate", true) if given => kmeans::evaluate(&model, rows("")?),
            // Without rows, k-means gives the figures of its training rows, as BigQuery ML does.
            ("evaluate", true) => kmeans::training_evaluation(&model),
            ("evaluate", false) if given => evaluate(&model, rows("")?),
            ("evaluate", false) => {
                held_out_rows(&model).and_then(|plan| evaluate(&model, DataFrame::new(self.state().clone(), plan)))
            }
            ("training_info", true) => kmeans::training_info(&model),
            ("training_info", false) => training_info(&model),
            ("confusion_matrix" | "roc_curve" | "explain_predict" | "global_explain", true) => {
                Err(hearth_exec::error::HearthError::invalid_param(
                    &call.name,
                    "MODEL",
                    format!(
                        "{} is a k-means model: it has no labels to compare or network to explain",
                        call.model
                    ),
                ))
            }
            ("explain_predict", false) => {
                explain_predict(&model, rows("the rows to explain are missing")?, call.settings.as_ref())
            }
            ("confusion_matrix" | "roc_curve" | "global_explain", false) => {
                let rows = given.then(|| rows("")).transpose()?;
                self.network_table(call, &model, rows)
            }
            ("trial_info", _) => trial_info(&model),
            ("centroids", _) => kmeans::centroids(&model),
            ("weights", _) => weights(&model, call.settings.as_ref()),
            _ => feature_info(&model),
        }
        .map_err(DataFusionError::from)
    }
}

impl MlRelationPlanner {
    /// A network's evaluation table or global explanation over `rows`, or without them over the rows the
    /// model held out, as ML.EVALUATE does.
    fn network_table(
        &self,
        call: &MlCall,
        model: &CatalogModel,
        rows: Option<DataFrame>,
    ) -> hearth_exec::error::Result<LogicalPlan> {
        let rows = match rows {
            Some(rows) => rows,
            None => DataFrame::new(self.state().clone(), held_out_rows(model)?),
        };
        let settings = call.settings.as_ref();
        match call.function.as_str() {
            "confusion_matrix" => confusion_matrix(model, rows, settings),
            "roc_curve" => roc_curve(model, rows, settings),
            _ => global_explain(model, rows),
        }
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
    /// Refuses a function hearth does not have, and settings a function does not take.
    fn check(&self) -> Result<()> {
        let Some(function) = ml_function(&self.function) else {
            let functions: Vec<String> = ML_FUNCTIONS.iter().map(MlFunction::call_name).collect();
            return Err(plan_error(format!(
                "{} is not a table function{}; hearth has {}",
                self.name,
                did_you_mean(&self.name, functions.iter().map(String::as_str)),
                functions.join(", ")
            )));
        };
        if self.query.is_some() && !function.takes_rows {
            return Err(plan_error(format!("{} takes no rows: {}", self.name, function.syntax)));
        }
        if self.settings.is_some() && function.settings.is_none() {
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
        Ok(())
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
pub(crate) fn planner(catalog: ModelCatalog) -> Arc<dyn RelationPlanner> {
    Arc::new(MlRelationPlanner::new(catalog))
}
