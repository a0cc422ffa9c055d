//! The SQL functions of the preprocessing side: the transforms of fitted stages (scalar functions taking the
//! fitted state as literal arguments) and the aggregates that fit them. All are registered by name in every
//! [`Session`] and executor built with them ([`PreprocessingFunctions`], a [`SessionExtension`]:
//! [`PreprocessingFeature::with_preprocessing`]), so they are callable from SQL and resolve on any executor. Each function lives with its
//! stage (`ml_string_index` and `ml_label_counts` in [`feature::string_indexer`](crate::feature::string_indexer),
//! …); this module only lists them.
//!
//! Each function documents itself (DataFusion's [`Documentation`], from `documentation()`), and the guide's
//! page of them is written from that ([`sql_functions_reference`]).
//!
//! [`Session`]: hearth_exec::session::Session

use std::fmt::Write;
use std::sync::Arc;

use datafusion::logical_expr::{AggregateUDF, Documentation, ScalarUDF};
use datafusion::prelude::SessionContext;
use hearth_exec::extension::SessionExtension;
use hearth_exec::session::{Session, SessionBuilder};

use crate::clustering::{KMEANS_ASSIGN, KMEANS_COST, KMEANS_SUMS};
use crate::evaluation::{EVALUATION_STATES, METRIC, SILHOUETTE, SILHOUETTE_STATS, STATE_ROWS};
use crate::feature::one_hot_encoder::ONE_HOT;
use crate::feature::standard_scaler::{ASSEMBLED_SUMMARY, SCALED_ASSEMBLE, STANDARD_SCALE, VECTOR_SUMMARY};
use crate::feature::string_indexer::{LABEL_COUNTS, STRING_INDEX};
use crate::feature::vector_assembler::VECTOR_ASSEMBLE;

/// Registers the preprocessing side's SQL functions in `ctx` (the feature stages', k-means' and the
/// evaluators'), so SQL can call them by name.
///
/// ```
/// use datafusion::execution::FunctionRegistry;
///
/// let ctx = datafusion::prelude::SessionContext::new();
/// hearth_preprocessing::functions::register_all(&ctx);
/// assert!(ctx.udf("ml_string_index").is_ok());
/// ```
pub fn register_all(ctx: &SessionContext) {
    let scalars: [&Arc<ScalarUDF>; 9] = [
        &VECTOR_ASSEMBLE,
        &STANDARD_SCALE,
        &SCALED_ASSEMBLE,
        &STRING_INDEX,
        &ONE_HOT,
        &METRIC,
        &KMEANS_ASSIGN,
        &KMEANS_COST,
        &SILHOUETTE,
    ];
    for udf in scalars.into_iter().chain(STATE_ROWS.iter()) {
        ctx.register_udf(ScalarUDF::clone(udf));
    }
    let aggregates: [&Arc<AggregateUDF>; 5] = [
        &VECTOR_SUMMARY,
        &ASSEMBLED_SUMMARY,
        &LABEL_COUNTS,
        &KMEANS_SUMS,
        &SILHOUETTE_STATS,
    ];
    for udaf in aggregates.into_iter().chain(EVALUATION_STATES.iter()) {
        ctx.register_udaf(AggregateUDF::clone(udaf));
    }
}

/// The preprocessing side's SQL functions as a session's extension ([`register_all`] in every context).
#[derive(Debug, Clone, Copy, Default)]
pub struct PreprocessingFunctions;

impl SessionExtension for PreprocessingFunctions {
    fn name(&self) -> &str {
        "hearth_preprocessing::functions"
    }

    fn register_functions(&self, ctx: &SessionContext) {
        register_all(ctx);
    }
}

/// Lists the preprocessing side's functions in a [`SessionBuilder`]: what a program that preprocesses without
/// training builds its sessions with.
///
/// ```
/// use datafusion::execution::FunctionRegistry;
/// use hearth_preprocessing::prelude::*;
///
/// let session = Session::builder().with_preprocessing().local(1);
/// assert!(session.context().udf("ml_string_index").is_ok());
/// assert!(Session::builder().local(1).context().udf("ml_string_index").is_err());
/// ```
pub trait PreprocessingFeature {
    /// The builder with [`PreprocessingFunctions`].
    fn with_preprocessing(self) -> Self;
}

impl PreprocessingFeature for SessionBuilder {
    fn with_preprocessing(self) -> Self {
        self.with_extension(Arc::new(PreprocessingFunctions))
    }
}

/// hearth's SQL functions as a Markdown page: every `ml_` function `session` has, in name order, from its own
/// documentation.
///
/// ```
/// use hearth_preprocessing::prelude::*;
///
/// let page = hearth_preprocessing::functions::sql_functions_reference(&Session::builder().with_preprocessing().local(1));
/// assert!(page.contains("## `ml_string_index`"));
/// ```
pub fn sql_functions_reference(session: &Session) -> String {
    let mut page = String::from(
        "# SQL functions\n\n\
         <!-- Written from each function's documentation by `hearth_preprocessing::functions::sql_functions_reference`; \
         a test fails when this page differs from it: `HEARTH_BLESS_DOCS=1 ./dev test docs_reference` rewrites \
         it. -->\n\n\
         The functions hearth registers in every session and executor built with them (`with_preprocessing()`, \
         `with_default_features()`): the transforms of fitted stages (their \
         fitted state passed as literal arguments) and the aggregates that fit stages and evaluators. \
         `ML.PREDICT`, `Pipeline::fit` and the evaluators plan with them; a query may call them by name, but for \
         the two whose result's shape a list argument sets, which planning must read as a literal (a query's \
         `[…]` is not one; each says so).\n",
    );
    for (name, kind, documentation) in registered_ml_functions(session) {
        let _ = write!(page, "\n## `{name}`\n\n");
        match documentation {
            Some(documentation) => write_documentation(&mut page, kind, &documentation),
            None => {
                let _ = writeln!(page, "*{kind} function.*");
            }
        }
    }
    page
}

/// Every `ml_` function `session` has, in name order: its name, whether it is a scalar or an aggregate
/// function, and its documentation.
fn registered_ml_functions(session: &Session) -> Vec<(String, &'static str, Option<Documentation>)> {
    let state = session.context().state();
    let scalars =
        (state.scalar_functions().iter()).map(|(name, f)| (name.clone(), "Scalar", f.documentation().cloned()));
    let aggregates =
        (state.aggregate_functions().iter()).map(|(name, f)| (name.clone(), "Aggregate", f.documentation().cloned()));
    let mut functions: Vec<_> = scalars
        .chain(aggregates)
        .filter(|(name, ..)| name.starts_with("ml_"))
        .collect();
    functions.sort_by(|a, b| a.0.cmp(&b.0));
    functions
}

/// A function's description, syntax, arguments and example.
fn write_documentation(page: &mut String, kind: &str, documentation: &Documentation) {
    let _ = writeln!(
        page,
        "*{kind} function.* {}\n\n```sql\n{}\n```",
        documentation.description, documentation.syntax_example
    );
    if let Some(arguments) = &documentation.arguments {
        let _ = writeln!(page, "\n| argument | what |\n|---|---|");
        for (argument, what) in arguments {
            let _ = writeln!(
                page,
                "| `{argument}` | {} |",
                what.replace('|', "\\|").replace('\n', " ")
            );
        }
    }
    if let Some(example) = &documentation.sql_example {
        let _ = writeln!(page, "\nFor example:\n\n{example}");
    }
}

#[cfg(test)]
mod tests {
    use hearth_exec::session::Session;

    use super::PreprocessingFeature;

    #[test]
    fn every_ml_function_documents_itself() {
        let session = Session::builder().with_preprocessing().local(1);
        let undocumented: Vec<String> = super::registered_ml_functions(&session)
            .into_iter()
            .filter(|(_, _, documentation)| documentation.is_none())
            .map(|(name, ..)| name)
            .collect();
        assert!(undocumented.is_empty(), "no documentation: {undocumented:?}");
    }
}
