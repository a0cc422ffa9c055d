//! Spark's functions and operators by the names a PySpark client sends (`==`, `and`, `isNull`, `count`, `avg`,
//! `when`, …) as DataFusion expressions with Spark's semantics where the two differ (`/` is always a
//! fractional division), and Spark's column names for them. A name Spark shares with DataFusion's registry
//! (`abs`, `sqrt`, `lower`, `concat`, …) calls DataFusion's function.

use datafusion::arrow::datatypes::DataType;
use datafusion::execution::SessionState;
use datafusion::functions_aggregate::expr_fn as aggregate;
use datafusion::logical_expr::{BinaryExpr, Expr, ExprFunctionExt, Operator, cast, lit, when};

use crate::errors::{ConnectError, Result};
use crate::plan::named::Named;

/// The call of Spark function `name` on `arguments` (`distinct` for `count(DISTINCT x)`).
pub(crate) fn call(state: &SessionState, name: &str, arguments: Vec<Named>, distinct: bool) -> Result<Named> {
    if let Some(operator) = binary_operator(name) {
        let [left, right] = two(name, arguments)?;
        let symbol = operator_symbol(name, operator);
        let label = format!("({} {symbol} {})", left.name, right.name);
        let (left, right) = match name {
            "/" => (fractional(left.expr), fractional(right.expr)),
            _ => (left.expr, right.expr),
        };
        return Ok(Named::new(
            Expr::BinaryExpr(BinaryExpr::new(Box::new(left), operator, Box::new(right))),
            label,
        ));
    }
    if let Some(named) = unary(name, &arguments)? {
        return Ok(named);
    }
    if let Some(named) = aggregate_call(name, &arguments, distinct)? {
        return Ok(named);
    }
    match name {
        "when" => return case_when(arguments),
        "in" => {
            let mut arguments = arguments.into_iter();
            let value = arguments.next().ok_or_else(|| arity(name, 2))?;
            let items: Vec<Named> = arguments.collect();
            let label = format!("({} IN ({}))", value.name, names(&items));
            return Ok(Named::new(
                value.expr.in_list(items.into_iter().map(|i| i.expr).collect(), false),
                label,
            ));
        }
        _ => {}
    }
    let label = format!("{name}({})", names(&arguments));
    let exprs: Vec<Expr> = arguments.into_iter().map(|a| a.expr).collect();
    let lower = name.to_ascii_lowercase();
    if let Some(function) = state.scalar_functions().get(&lower) {
        return Ok(Named::new(function.call(exprs), label));
    }
    if let Some(function) = state.aggregate_functions().get(&lower) {
        let expr = function.call(exprs);
        let expr = if distinct { expr.distinct().build()? } else { expr };
        return Ok(Named::new(expr, label));
    }
    Err(ConnectError::Analysis {
        error_class: "UNRESOLVED_ROUTINE",
        message: format!(
            "Cannot resolve routine `{name}`: hearth's Spark Connect server has no function of that name."
        ),
    })
}

fn binary_operator(name: &str) -> Option<Operator> {
    Some(match name {
        "==" => Operator::Eq,
        "!=" => Operator::NotEq,
        "<" => Operator::Lt,
        "<=" => Operator::LtEq,
        ">" => Operator::Gt,
        ">=" => Operator::GtEq,
        "<=>" => Operator::IsNotDistinctFrom,
        "+" => Operator::Plus,
        "-" => Operator::Minus,
        "*" => Operator::Multiply,
        "/" => Operator::Divide,
        "%" => Operator::Modulo,
        "and" => Operator::And,
        "or" => Operator::Or,
        "&" => Operator::BitwiseAnd,
        "|" => Operator::BitwiseOr,
        "^" => Operator::BitwiseXor,
        _ => return None,
    })
}

/// The operator as Spark prints it in a column's name.
fn operator_symbol(name: &str, operator: Operator) -> String {
    match name {
        "==" => "=".into(),
        "and" => "AND".into(),
        "or" => "OR".into(),
        _ => operator.to_string(),
    }
}

/// Spark divides as doubles whatever the operands' types (decimals stay decimals).
fn fractional(expr: Expr) -> Expr {
    cast(expr, DataType::Float64)
}

/// Spark's one-argument operators and string predicates.
fn unary(name: &str, arguments: &[Named]) -> Result<Option<Named>> {
    let one = |label: &str| -> Result<&Named> {
        match arguments {
            [argument] => Ok(argument),
            _ => Err(ConnectError::IllegalArgument(format!(
                "{label} takes one argument, {} given",
                arguments.len()
            ))),
        }
    };
    Ok(Some(match name {
        "not" => {
            let a = one(name)?;
            Named::new(Expr::Not(Box::new(a.expr.clone())), format!("(NOT {})", a.name))
        }
        "negative" => {
            let a = one(name)?;
            Named::new(Expr::Negative(Box::new(a.expr.clone())), format!("(- {})", a.name))
        }
        "isNull" | "isnull" => {
            let a = one(name)?;
            Named::new(a.expr.clone().is_null(), format!("({} IS NULL)", a.name))
        }
        "isNotNull" | "isnotnull" => {
            let a = one(name)?;
            Named::new(a.expr.clone().is_not_null(), format!("({} IS NOT NULL)", a.name))
        }
        "like" | "ilike" | "contains" | "startsWith" | "endsWith" | "rlike" => {
            let [a, b] = arguments else {
                return Err(arity(name, 2));
            };
            let label = format!("{name}({}, {})", a.name, b.name);
            let (value, pattern) = (a.expr.clone(), b.expr.clone());
            let expr = match name {
                "like" => value.like(pattern),
                "ilike" => value.ilike(pattern),
                "rlike" => datafusion::functions::expr_fn::regexp_like(value, pattern, None),
                "contains" => datafusion::functions::expr_fn::contains(value, pattern),
                "startsWith" => datafusion::functions::expr_fn::starts_with(value, pattern),
                _ => datafusion::functions::expr_fn::ends_with(value, pattern),
            };
            Named::new(expr, label)
        }
        _ => return Ok(None),
    }))
}

/// Spark's aggregate functions whose names or semantics differ from DataFusion's.
fn aggregate_call(name: &str, arguments: &[Named], distinct: bool) -> Result<Option<Named>> {
    let argument = match arguments {
        [argument] => argument,
        // first(x, ignorenulls) and last(x, ignorenulls): the client always sends the flag.
        [argument, ignore_nulls] if matches!(name, "first" | "last") => {
            if ignore_nulls.name != "false" {
                return Err(ConnectError::Unsupported(format!("{name}(…, ignorenulls=True)")));
            }
            argument
        }
        _ => return Ok(None),
    };
    let x = argument.expr.clone();
    let (expr, spark_name) = match name {
        "count" if distinct => (aggregate::count_distinct(x), "count(DISTINCT"),
        "count" => (aggregate::count(x), "count("),
        "sum" => (aggregate::sum(x), "sum("),
        "avg" | "mean" => (aggregate::avg(x), "avg("),
        "max" => (aggregate::max(x), "max("),
        "min" => (aggregate::min(x), "min("),
        "stddev" | "std" | "stddev_samp" => (aggregate::stddev(x), "stddev("),
        "stddev_pop" => (aggregate::stddev_pop(x), "stddev_pop("),
        "variance" | "var_samp" => (aggregate::var_sample(x), "variance("),
        "var_pop" => (aggregate::var_pop(x), "var_pop("),
        "first" => (aggregate::first_value(x, vec![]), "first("),
        "last" => (aggregate::last_value(x, vec![]), "last("),
        "collect_list" => (aggregate::array_agg(x), "collect_list("),
        "countDistinct" | "count_distinct" => (aggregate::count_distinct(x), "count(DISTINCT"),
        _ => return Ok(None),
    };
    let separator = if spark_name.ends_with('(') { "" } else { " " };
    Ok(Some(Named::new(
        expr,
        format!("{spark_name}{separator}{})", argument.name),
    )))
}

/// `when(c1, v1).when(c2, v2).otherwise(e)`: the client sends `when(c1, v1, c2, v2, e)`.
fn case_when(arguments: Vec<Named>) -> Result<Named> {
    if arguments.len() < 2 {
        return Err(arity("when", 2));
    }
    let mut label = "CASE".to_owned();
    let mut pairs = arguments.chunks(2);
    let mut otherwise = None;
    let mut case: Option<datafusion::logical_expr::conditional_expressions::CaseBuilder> = None;
    for pair in pairs.by_ref() {
        match pair {
            [condition, value] => {
                label.push_str(&format!(" WHEN {} THEN {}", condition.name, value.name));
                case = Some(match case {
                    None => when(condition.expr.clone(), value.expr.clone()),
                    Some(mut case) => case.when(condition.expr.clone(), value.expr.clone()),
                });
            }
            [value] => {
                label.push_str(&format!(" ELSE {}", value.name));
                otherwise = Some(value.expr.clone());
            }
            _ => {}
        }
    }
    label.push_str(" END");
    let mut case = case.ok_or_else(|| arity("when", 2))?;
    let expr = match otherwise {
        Some(value) => case.otherwise(value)?,
        None => case.otherwise(lit(datafusion::common::ScalarValue::Null))?,
    };
    Ok(Named::new(expr, label))
}

fn two(name: &str, arguments: Vec<Named>) -> Result<[Named; 2]> {
    <[Named; 2]>::try_from(arguments).map_err(|_| arity(name, 2))
}

fn arity(name: &str, wanted: usize) -> ConnectError {
    ConnectError::IllegalArgument(format!("the function {name} takes {wanted} arguments"))
}

fn names(arguments: &[Named]) -> String {
    arguments.iter().map(|a| a.name.as_str()).collect::<Vec<_>>().join(", ")
}
