//! SQL literals as the statements write them — `'text'`, `42`, `-0.5`, `TRUE`, `[a, b]` — read into Rust
//! values, and numbers written back as SQL. Every reader of `OPTIONS`, `HPARAM_…` and `TRANSFORM` parameters
//! goes through these and words its own error.
//!
//! ```text
//! string('adam') = Some("adam")    number(-1e-3) = Some(-0.001)    whole(3) = Some(3)    boolean(TRUE) = Some(true)
//! ```

use datafusion::sql::sqlparser::ast::{Expr, FunctionArg, FunctionArgExpr, FunctionArguments, UnaryOperator, Value};
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::parser::Parser;

/// A quoted string's text.
pub(crate) fn string(value: &Expr) -> Option<&str> {
    match value {
        Expr::Value(v) => match &v.value {
            Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) => Some(s),
            _ => None,
        },
        _ => None,
    }
}

/// A finite number, negative ones included.
pub(crate) fn number(value: &Expr) -> Option<f64> {
    let parsed = match value {
        Expr::Value(v) => match &v.value {
            Value::Number(n, _) => n.clone().parse::<f64>().ok(),
            _ => None,
        },
        Expr::UnaryOp {
            op: UnaryOperator::Minus,
            expr,
        } => number(expr).map(|n| -n),
        _ => None,
    };
    parsed.filter(|n| n.is_finite())
}

/// A whole number ≥ 0.
pub(crate) fn whole(value: &Expr) -> Option<u64> {
    number(value)
        .filter(|n| *n >= 0.0 && n.fract() == 0.0 && *n <= u64::MAX as f64)
        .map(|n| n as u64)
}

/// `TRUE` or `FALSE`.
pub(crate) fn boolean(value: &Expr) -> Option<bool> {
    match value {
        Expr::Value(v) => match &v.value {
            Value::Boolean(b) => Some(*b),
            _ => None,
        },
        _ => None,
    }
}

/// The items of `[a, b, …]`.
pub(crate) fn list(value: &Expr) -> Option<&[Expr]> {
    match value {
        Expr::Array(array) => Some(&array.elem),
        _ => None,
    }
}

/// The fields of `STRUCT(value AS name, …)`, by lower-case name; `None` for anything else.
pub(crate) fn struct_fields(value: &Expr) -> Option<Vec<(String, &Expr)>> {
    let Expr::Struct { values, .. } = value else {
        return None;
    };
    values
        .iter()
        .map(|field| match field {
            Expr::Named { expr, name } => Some((name.value.to_ascii_lowercase(), expr.as_ref())),
            _ => None,
        })
        .collect()
}

/// Numbers written `[a, b, …]` or `GENERATE_ARRAY(start, end, step)` (BigQuery's: from `start` by `step`
/// up to `end` inclusive); `None` for anything else.
pub(crate) fn number_array(value: &Expr) -> Option<Vec<f64>> {
    if let Some(items) = list(value) {
        return items.iter().map(number).collect();
    }
    let Expr::Function(function) = value else {
        return None;
    };
    let FunctionArguments::List(arguments) = &function.args else {
        return None;
    };
    let numbers: Option<Vec<f64>> = arguments
        .args
        .iter()
        .map(|arg| match arg {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(expr)) => number(expr),
            _ => None,
        })
        .collect();
    match (
        function.name.to_string().to_ascii_lowercase().as_str(),
        numbers?.as_slice(),
    ) {
        ("generate_array", &[start, end, step]) if step > 0.0 && end >= start => {
            let steps = ((end - start) / step + 1e-9).floor() as usize;
            // Rounded to 12 decimals: 0.1 + 2 × 0.1 is 0.3, as the SQL reads.
            Some(
                (0..=steps)
                    .map(|i| ((start + i as f64 * step) * 1e12).round() / 1e12)
                    .collect(),
            )
        }
        _ => None,
    }
}

/// `value` written as SQL: whole numbers as integers, others to six significant digits (what a person
/// would write, and read back in `ML.TRIAL_INFO`).
pub(crate) fn number_expr(value: f64) -> Expr {
    let text = if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{value:.0}")
    } else {
        let digits = (5 - value.abs().log10().floor() as i32).max(0) as usize;
        let rounded = format!("{value:.digits$}");
        rounded.trim_end_matches('0').trim_end_matches('.').to_string()
    };
    Parser::new(&GenericDialect {})
        .try_with_sql(&text)
        .and_then(|mut parser| parser.parse_expr())
        .unwrap_or_else(|_| unreachable!("a formatted number parses: {text}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expr(sql: &str) -> Expr {
        Parser::new(&GenericDialect {})
            .try_with_sql(sql)
            .unwrap()
            .parse_expr()
            .unwrap()
    }

    #[test]
    fn literals_read_as_written_and_nothing_else() {
        assert_eq!(string(&expr("'adam'")), Some("adam"));
        assert_eq!(string(&expr("adam")), None);
        assert_eq!(number(&expr("-1e-3")), Some(-0.001));
        assert_eq!(number(&expr("'1'")), None);
        assert_eq!(whole(&expr("3")), Some(3));
        assert_eq!(whole(&expr("3.5")), None);
        assert_eq!(whole(&expr("-3")), None);
        assert_eq!(boolean(&expr("TRUE")), Some(true));
        assert_eq!(list(&expr("[1, 2]")).map(<[Expr]>::len), Some(2));
        assert_eq!(number_array(&expr("[0.25, 0.5]")), Some(vec![0.25, 0.5]));
        assert_eq!(
            number_array(&expr("GENERATE_ARRAY(0.1, 0.5, 0.2)")),
            Some(vec![0.1, 0.3, 0.5])
        );
        assert_eq!(number_array(&expr("GENERATE_ARRAY(0.5, 0.4, 0.1)")), None);
        let settings = expr("STRUCT(0.4 AS threshold)");
        let fields = struct_fields(&settings).unwrap();
        assert_eq!((fields[0].0.as_str(), number(fields[0].1)), ("threshold", Some(0.4)));
        assert_eq!(number_expr(0.000123456789).to_string(), "0.000123457");
        assert_eq!(number_expr(64.0).to_string(), "64");
    }
}
