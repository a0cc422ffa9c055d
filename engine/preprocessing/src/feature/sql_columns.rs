//! `SqlColumns`: columns computed by SQL expressions over the input's columns — what a `CREATE MODEL …
//! TRANSFORM` clause's plain SQL expressions become (Spark's `SQLTransformer`, one expression per column).

use datafusion::prelude::DataFrame;
use hearth_common::params::new_uid;
use hearth_exec::error::{HearthError, Result};
use serde::{Deserialize, Serialize};

use crate::stage::{Transformer, ensure_new_column, serde_stage};

/// One output column: its name and the SQL expression that computes it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SqlColumn {
    /// The column added.
    pub name: String,
    /// A SQL expression over the input's columns, e.g. `duration * 2` or `CAST(age > 50 AS DOUBLE)`.
    pub expression: String,
}

/// Adds a column per SQL expression, each computed from the input's columns (not from each other).
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use hearth_preprocessing::prelude::*;
/// use hearth_preprocessing::feature::SqlColumns;
/// let session = Session::builder().with_preprocessing().local(1);
/// let df = session.context().sql("SELECT * FROM (VALUES (1.0, 2.0)) AS t(a, b)").await.unwrap();
/// let out = SqlColumns::new().column("ratio", "a / b").transform(&df).unwrap();
/// assert_eq!(out.schema().field_with_unqualified_name("ratio").unwrap().name(), "ratio");
/// # });
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SqlColumns {
    uid: String,
    columns: Vec<SqlColumn>,
}

impl Default for SqlColumns {
    fn default() -> Self {
        Self::new()
    }
}

impl SqlColumns {
    /// No columns yet.
    pub fn new() -> Self {
        Self {
            uid: new_uid("SqlColumns"),
            columns: Vec::new(),
        }
    }

    /// Adds the column `name` computed by `expression`.
    pub fn column(mut self, name: impl Into<String>, expression: impl Into<String>) -> Self {
        self.columns.push(SqlColumn {
            name: name.into(),
            expression: expression.into(),
        });
        self
    }

    /// The columns it adds.
    pub fn columns(&self) -> &[SqlColumn] {
        &self.columns
    }

    fn summary(&self) -> String {
        let names: Vec<&str> = self.columns.iter().map(|c| c.name.as_str()).collect();
        format!("{} expressions: {}", names.len(), names.join(", "))
    }
}

impl Transformer for SqlColumns {
    fn transform(&self, df: &DataFrame) -> Result<DataFrame> {
        let mut exprs = Vec::with_capacity(self.columns.len());
        for column in &self.columns {
            ensure_new_column(&self.uid, df, &column.name)?;
            let expr = df
                .parse_sql_expr(&column.expression)
                .map_err(|e| HearthError::schema(&self.uid, &column.name, &column.expression).caused_by(e))?;
            exprs.push((column.name.as_str(), expr));
        }
        let mut out = df.clone();
        for (name, expr) in exprs {
            out = out.with_column(name, expr)?;
        }
        Ok(out)
    }
}

crate::stage_class!(transformer SqlColumns);
crate::stage_example!(SqlColumns, SqlColumns::new().column("sum", "x + y"));

serde_stage!(SqlColumns, "SqlColumns", summary);
