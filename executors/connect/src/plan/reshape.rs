//! Relations that reshape one input's columns or rows: select, filter, sort, toDF, withColumns,
//! withColumnsRenamed, drop, dropDuplicates.

use datafusion::execution::SessionState;
use datafusion::logical_expr::utils::find_aggregate_exprs;
use datafusion::logical_expr::{Expr, col};
use datafusion::prelude::DataFrame;
use spark_connect_proto::expression::{Alias, ExprType, SortOrder};
use spark_connect_proto::{Drop, Expression};

use crate::errors::{ConnectError, Result};
use crate::plan::expressions::Resolver;

/// `select(…)`; a select of aggregates only (`select(mean("x"))`) aggregates the whole input, as Spark's.
pub(crate) fn project(df: DataFrame, expressions: &[Expression], state: &SessionState) -> Result<DataFrame> {
    let exprs = Resolver::new(df.schema(), state).projection(expressions)?;
    if !exprs.is_empty() && exprs.iter().all(|e| !find_aggregate_exprs([e]).is_empty()) {
        return Ok(df.aggregate(Vec::new(), exprs)?);
    }
    Ok(df.select(exprs)?)
}

/// `filter(condition)`.
pub(crate) fn filter(df: DataFrame, condition: &Expression, state: &SessionState) -> Result<DataFrame> {
    let predicate = Resolver::new(df.schema(), state).expr(condition)?;
    Ok(df.filter(predicate)?)
}

/// `orderBy(…)`.
pub(crate) fn sort(df: DataFrame, order: &[SortOrder], state: &SessionState) -> Result<DataFrame> {
    let resolver = Resolver::new(df.schema(), state);
    let keys = (order.iter())
        .map(|order| {
            let expression = Expression {
                expr_type: Some(ExprType::SortOrder(Box::new(order.clone()))),
                ..Default::default()
            };
            resolver.sort(&expression)
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(df.sort(keys)?)
}

/// `toDF(names…)`: every column renamed, in order.
pub(crate) fn to_df(df: DataFrame, names: &[String]) -> Result<DataFrame> {
    let width = df.schema().fields().len();
    if names.len() != width {
        return Err(ConnectError::IllegalArgument(format!(
            "toDF was given {} names for {width} columns",
            names.len()
        )));
    }
    let renamed: Vec<Expr> = (df.schema().columns().into_iter().zip(names))
        .map(|(column, name)| Expr::Column(column).alias(name))
        .collect();
    Ok(df.select(renamed)?)
}

/// `withColumn(s)`: each column added, or replaced when it exists.
pub(crate) fn with_columns(mut df: DataFrame, aliases: &[Alias], state: &SessionState) -> Result<DataFrame> {
    for alias in aliases {
        let [name] = alias.name.as_slice() else {
            return Err(ConnectError::Unsupported("withColumns with a multi-part name".into()));
        };
        let inner = alias
            .expr
            .as_deref()
            .ok_or_else(|| ConnectError::InvalidPlan("withColumn's expression is missing".into()))?;
        let expr = Resolver::new(df.schema(), state).expr(inner)?;
        df = df.with_column(name, expr)?;
    }
    Ok(df)
}

/// `withColumnRenamed(s)`.
pub(crate) fn renamed<'n>(mut df: DataFrame, pairs: impl Iterator<Item = (&'n str, &'n str)>) -> Result<DataFrame> {
    for (from, to) in pairs {
        df = df.with_column_renamed(from, to)?;
    }
    Ok(df)
}

/// `drop(…)`, by names or columns.
pub(crate) fn drop(df: DataFrame, drop: &Drop, state: &SessionState) -> Result<DataFrame> {
    let resolver = Resolver::new(df.schema(), state);
    let mut names: Vec<String> = drop.column_names.clone();
    for column in &drop.columns {
        if let Expr::Column(column) = resolver.expr(column)? {
            names.push(column.name);
        }
    }
    // By the columns themselves: DataFusion reads a name given as text as SQL, folding `rawPrediction` to
    // lower case.
    let columns: Vec<datafusion::common::Column> = (names.iter())
        .flat_map(|name| df.schema().columns_with_unqualified_name(name))
        .collect();
    Ok(df.drop_columns(&columns)?)
}

/// `dropDuplicates()` over every column, or over `columns` keeping the first row of each.
pub(crate) fn deduplicate(df: DataFrame, columns: &[String]) -> Result<DataFrame> {
    if columns.is_empty() {
        return Ok(df.distinct()?);
    }
    let keys: Vec<Expr> = columns.iter().map(|c| col(format!("\"{c}\""))).collect();
    let all: Vec<Expr> = df.schema().columns().into_iter().map(Expr::Column).collect();
    Ok(df.distinct_on(keys, all, None)?)
}
