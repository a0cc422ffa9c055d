//! hearth's `ML.` table functions as declared (each in its own file of `ml_table/`, beside its plan), listed in
//! [`ML_FUNCTIONS`]: the planner refuses a function or a setting that is not there, and the guide's reference
//! page is written from it ([`ml_functions_reference`]).

use std::fmt::Write;

/// One `ML.` table function: how a query calls it and what it gives.
#[derive(Debug, Clone, Copy)]
pub struct MlFunction {
    /// The name after `ML.`, lower case (`predict`).
    pub name: &'static str,
    /// How a query calls it, brackets around what may be left out.
    pub syntax: &'static str,
    /// Whether it reads rows after its model (`(SELECT …)` or `TABLE name`).
    pub takes_rows: bool,
    /// The settings it takes after its rows (`STRUCT(0.6 AS threshold)`), when it takes any.
    pub settings: Option<&'static str>,
    /// What it gives: its rows and columns, and which rows it reads without rows given.
    pub gives: &'static str,
}

impl MlFunction {
    /// The call's name in messages and pages (`ML.PREDICT`).
    pub fn call_name(&self) -> String {
        format!("ML.{}", self.name.to_ascii_uppercase())
    }
}

/// Every `ML.` table function, in the order the guide presents them. `rows` is `(SELECT …)` or `TABLE name`.
pub const ML_FUNCTIONS: &[MlFunction] = &crate::ml_table::DECLARATIONS;

/// The `ML.` table functions as a Markdown page, from [`ML_FUNCTIONS`].
///
/// ```
/// let page = hearth_sql::ml_functions_reference();
/// assert!(page.contains("| `ML.PREDICT(MODEL m, rows)` |"));
/// ```
pub fn ml_functions_reference() -> String {
    let mut page = String::from(
        "# `ML.` table functions\n\n\
         <!-- Written from ML_FUNCTIONS (the declarations in engine/sql/src/ml_table/) by `hearth_sql::ml_functions_reference`; \
         a test fails when this page differs from it: `HEARTH_BLESS_DOCS=1 ./dev test docs_reference` rewrites \
         it. -->\n\n\
         BigQuery ML's table functions over a model of the catalog, usable in any `FROM`. `MODEL m` names the \
         model; `rows` is `(SELECT …)` or `TABLE name`. A function hearth does not have, or rows or settings a \
         function does not take, are refused by name.\n\n\
         | call | settings | gives |\n|---|---|---|\n",
    );
    for function in ML_FUNCTIONS {
        let _ = writeln!(
            page,
            "| `{}` | {} | {} |",
            function.syntax,
            function.settings.unwrap_or("none"),
            function.gives
        );
    }
    page
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_syntax_calls_its_own_function() {
        for function in ML_FUNCTIONS {
            assert!(
                function
                    .syntax
                    .starts_with(&format!("{}(MODEL m", function.call_name()))
            );
            assert_eq!(
                function.syntax.contains("settings"),
                function.settings.is_some(),
                "{}",
                function.name
            );
        }
    }
}
