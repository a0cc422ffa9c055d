//! Spark Connect expressions as DataFusion expressions over one input's schema, each with the name Spark gives
//! its column (`(a + 1)`, `count(1)`, `CAST(x AS DOUBLE)`), so `df.columns` reads as it does on Spark.

use datafusion::common::{Column, DFSchema};
use datafusion::execution::SessionState;
use datafusion::logical_expr::{Expr, SortExpr, cast, lit};
use datafusion::prelude::get_field;
use spark_connect_proto::Expression;
use spark_connect_proto::expression::ExprType;
use spark_connect_proto::expression::cast::CastToType;
use spark_connect_proto::expression::sort_order::{NullOrdering, SortDirection};

use crate::errors::{ConnectError, Result};
use crate::plan::functions;
use crate::plan::literals::{literal_name, scalar};
use crate::plan::named::Named;
use crate::types::{arrow_type, parse_type_name};

/// Resolves expressions against the schema of the relation they apply to.
pub(crate) struct Resolver<'a> {
    schema: &'a DFSchema,
    state: &'a SessionState,
}

impl<'a> Resolver<'a> {
    pub(crate) fn new(schema: &'a DFSchema, state: &'a SessionState) -> Self {
        Self { schema, state }
    }

    /// The expression, without its name.
    pub(crate) fn expr(&self, expression: &Expression) -> Result<Expr> {
        Ok(self.named(expression)?.expr)
    }

    /// A `select`'s list: each expression aliased to Spark's name, `*` expanded to the input's columns.
    pub(crate) fn projection(&self, expressions: &[Expression]) -> Result<Vec<Expr>> {
        let mut projected = Vec::with_capacity(expressions.len());
        for expression in expressions {
            if let Some(ExprType::UnresolvedStar(_)) = &expression.expr_type {
                projected.extend(self.schema.columns().into_iter().map(Expr::Column));
            } else {
                projected.push(self.named(expression)?.aliased());
            }
        }
        Ok(projected)
    }

    /// A sort key: a `SortOrder` with its direction and nulls, or any expression ascending (Spark's nulls
    /// first for ascending, last for descending).
    pub(crate) fn sort(&self, expression: &Expression) -> Result<SortExpr> {
        let Some(ExprType::SortOrder(order)) = &expression.expr_type else {
            return Ok(self.expr(expression)?.sort(true, true));
        };
        let child = order
            .child
            .as_deref()
            .ok_or_else(|| missing("a sort order's expression"))?;
        let ascending = order.direction != SortDirection::Descending as i32;
        let nulls_first = match NullOrdering::try_from(order.null_ordering) {
            Ok(NullOrdering::SortNullsFirst) => true,
            Ok(NullOrdering::SortNullsLast) => false,
            _ => ascending,
        };
        Ok(self.expr(child)?.sort(ascending, nulls_first))
    }

    /// The expression and Spark's name for it.
    pub(crate) fn named(&self, expression: &Expression) -> Result<Named> {
        let kind = (expression.expr_type.as_ref()).ok_or_else(|| missing("an expression's kind"))?;
        match kind {
            ExprType::Literal(literal) => {
                let value = scalar(literal)?;
                Ok(Named::new(lit(value.clone()), literal_name(&value)))
            }
            ExprType::UnresolvedAttribute(attribute) => {
                let own = attribute
                    .plan_id
                    .map(plan_qualifier)
                    .and_then(|q| self.find(Some(&q), &attribute.unparsed_identifier));
                match own {
                    Some(column) => Ok(Named::new(Expr::Column(column), attribute.unparsed_identifier.clone())),
                    None => self.column(&attribute.unparsed_identifier),
                }
            }
            ExprType::UnresolvedFunction(function) => {
                let arguments = (function.arguments.iter())
                    .map(|a| self.argument(a))
                    .collect::<Result<Vec<_>>>()?;
                functions::call(self.state, &function.function_name, arguments, function.is_distinct)
            }
            ExprType::CallFunction(function) => {
                let arguments = (function.arguments.iter())
                    .map(|a| self.argument(a))
                    .collect::<Result<Vec<_>>>()?;
                functions::call(self.state, &function.function_name, arguments, false)
            }
            ExprType::ExpressionString(text) => {
                let expr = self.state.create_logical_expr(&text.expression, self.schema)?;
                match expr {
                    Expr::Alias(alias) => Ok(Named::new(*alias.expr, alias.name)),
                    expr => Ok(Named::new(expr, text.expression.clone())),
                }
            }
            ExprType::Alias(alias) => {
                let inner = alias.expr.as_deref().ok_or_else(|| missing("an alias's expression"))?;
                let [name] = alias.name.as_slice() else {
                    return Err(ConnectError::Unsupported(
                        "an alias with several names (a multi-column alias)".into(),
                    ));
                };
                Ok(Named::new(self.expr(inner)?, name.clone()))
            }
            ExprType::Cast(to) => {
                let inner = self.named(to.expr.as_deref().ok_or_else(|| missing("a cast's expression"))?)?;
                let target = match &to.cast_to_type {
                    Some(CastToType::Type(data_type)) => arrow_type(data_type)?,
                    Some(CastToType::TypeStr(name)) => parse_type_name(name)?,
                    None => return Err(missing("a cast's type")),
                };
                let name = format!(
                    "CAST({} AS {})",
                    inner.name,
                    crate::types::spark_type_name(&target).to_uppercase()
                );
                Ok(Named::new(cast(inner.expr, target), name))
            }
            ExprType::UnresolvedStar(_) => Err(ConnectError::Unsupported(
                "`*` outside a select list or count(*)".into(),
            )),
            other => Err(ConnectError::Unsupported(format!(
                "the expression {}",
                expression_kind(other)
            ))),
        }
    }

    /// A function's argument: `*` stands for every row (`count(*)` is Spark's `count(1)`).
    fn argument(&self, expression: &Expression) -> Result<Named> {
        match &expression.expr_type {
            Some(ExprType::UnresolvedStar(_)) => Ok(Named::new(lit(1i32), "1")),
            _ => self.named(expression),
        }
    }

    /// The column an identifier names: `name`, `` `a.b` ``, `alias.name` or `struct.field`, matched as Spark
    /// matches (exactly, else ignoring case when that is unambiguous).
    fn column(&self, identifier: &str) -> Result<Named> {
        let parts = identifier_parts(identifier);
        if let Some(column) = self.find(None, &parts.join(".")) {
            return Ok(Named::new(Expr::Column(column), parts.join(".")));
        }
        if let [qualifier, name] = parts.as_slice()
            && let Some(column) = self.find(Some(qualifier), name)
        {
            return Ok(Named::new(Expr::Column(column), name.clone()));
        }
        if let [first, fields @ ..] = parts.as_slice()
            && !fields.is_empty()
            && let Some(column) = self.find(None, first)
        {
            let expr = fields
                .iter()
                .fold(Expr::Column(column), |expr, field| get_field(expr, field.as_str()));
            return Ok(Named::new(expr, fields.last().cloned().unwrap_or_default()));
        }
        let available: Vec<String> = self.schema.fields().iter().map(|f| f.name().clone()).collect();
        Err(ConnectError::unresolved_column(identifier, &available))
    }

    /// The input's column `name` (under `qualifier` when given): an exact match, else the one match ignoring
    /// case.
    fn find(&self, qualifier: Option<&str>, name: &str) -> Option<Column> {
        let candidates: Vec<Column> = (self.schema.iter())
            .filter(|(q, _)| qualifier.is_none_or(|wanted| q.is_some_and(|q| q.table().eq_ignore_ascii_case(wanted))))
            .map(|(q, field)| Column::new(q.cloned(), field.name()))
            .collect();
        let exact: Vec<&Column> = candidates.iter().filter(|c| c.name == name).collect();
        if let [one] = exact.as_slice() {
            return Some((*one).clone());
        }
        let folded: Vec<&Column> = candidates
            .iter()
            .filter(|c| c.name.eq_ignore_ascii_case(name))
            .collect();
        match folded.as_slice() {
            [one] => Some((*one).clone()),
            _ => None,
        }
    }
}

/// The qualifier of the columns of the relation with client plan id `id`, by which `df["col"]` finds its own
/// side of a join.
pub(crate) fn plan_qualifier(id: i64) -> String {
    format!("#{id}")
}

/// An identifier's dot-separated parts, backquoted parts kept whole.
fn identifier_parts(identifier: &str) -> Vec<String> {
    let mut parts = vec![String::new()];
    let mut quoted = false;
    let mut chars = identifier.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '`' if quoted && chars.peek() == Some(&'`') => {
                chars.next();
                parts.last_mut().expect("parts is never empty").push('`');
            }
            '`' => quoted = !quoted,
            '.' if !quoted => parts.push(String::new()),
            c => parts.last_mut().expect("parts is never empty").push(c),
        }
    }
    parts
}

fn missing(what: &str) -> ConnectError {
    ConnectError::InvalidPlan(format!("{what} is missing"))
}

/// The Spark Connect name of an expression kind, for errors.
fn expression_kind(kind: &ExprType) -> &'static str {
    match kind {
        ExprType::UnresolvedRegex(_) => "colRegex",
        ExprType::SortOrder(_) => "sort order (asc/desc) outside a sort",
        ExprType::LambdaFunction(_) => "lambda function",
        ExprType::Window(_) => "window (over)",
        ExprType::UnresolvedExtractValue(_) => "extract value (col[...])",
        ExprType::UpdateFields(_) => "withField/dropFields",
        ExprType::CommonInlineUserDefinedFunction(_) => "Python UDF",
        ExprType::NamedArgumentExpression(_) => "named argument",
        ExprType::SubqueryExpression(_) => "subquery",
        _ => "of this kind",
    }
}
