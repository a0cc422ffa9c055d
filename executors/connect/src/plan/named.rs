//! An expression with the name Spark gives its column.

use datafusion::logical_expr::Expr;

/// An expression and the name Spark gives the column it makes.
#[derive(Debug, Clone)]
pub(crate) struct Named {
    /// The DataFusion expression.
    pub expr: Expr,
    /// Spark's name for it.
    pub name: String,
}

impl Named {
    pub(crate) fn new(expr: Expr, name: impl Into<String>) -> Self {
        Self {
            expr,
            name: name.into(),
        }
    }

    /// The expression as a column named as Spark names it.
    pub(crate) fn aliased(self) -> Expr {
        match self.expr {
            Expr::Column(column) if column.name == self.name => Expr::Column(column),
            expr => expr.alias(self.name),
        }
    }
}
