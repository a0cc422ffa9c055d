//! Running DataFusion's statements for the SQL front end, and plans of literal rows.

use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{Float64Type, Schema};
use datafusion::common::ScalarValue;
use datafusion::logical_expr::{LogicalPlan, LogicalPlanBuilder};
use datafusion::prelude::DataFrame;
use datafusion::sql::parser::Statement as DFStatement;
use datafusion::sql::sqlparser::ast::{Query, Statement as SqlStatement};
use hearth_exec::error::Result;
use hearth_exec::session::Session;

use crate::data_roots::DataRoots;

/// Plans and runs one of DataFusion's statements in `session` — once its plan names no file outside the
/// session's [`DataRoots`], when it has them.
pub(super) async fn run_statement(session: &Session, statement: DFStatement) -> Result<DataFrame> {
    let ctx = session.context();
    let state = ctx.state();
    let plan = state.statement_to_plan(statement).await?;
    if let Some(roots) = state.config().get_extension::<DataRoots>() {
        roots.check_plan(&plan)?;
    }
    Ok(ctx.execute_logical_plan(plan).await?)
}

/// The rows of a query parsed from SQL.
pub(crate) async fn plan_query(session: &Session, query: &Query) -> Result<DataFrame> {
    let statement = DFStatement::Statement(Box::new(SqlStatement::Query(Box::new(query.clone()))));
    run_statement(session, statement).await
}

/// A data frame of literal rows.
pub(super) fn literal_frame(session: &Session, (schema, rows): (Schema, Vec<Vec<ScalarValue>>)) -> Result<DataFrame> {
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

/// The value of `column` in the one row `ML.EVALUATE` (of any model) gives.
pub(super) fn metric_value(rows: &[RecordBatch], column: &str) -> Option<f64> {
    let batch = rows.iter().find(|b| b.num_rows() > 0)?;
    let values = batch.column_by_name(column)?.as_primitive_opt::<Float64Type>()?;
    values.is_valid(0).then(|| values.value(0))
}
