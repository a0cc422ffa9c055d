//! The guide's page of `CREATE MODEL` options, written from the options table so that it cannot fall behind
//! it (a test compares the page in `docs/` with this).

use std::fmt::Write;

use super::table::{Models, OptionSpec, Read, Scale, Tunable, option_table};

/// The `CREATE MODEL` options as a Markdown page: each option, what it takes, the model types that take it and
/// how `num_trials` may tune it, in the table's order.
///
/// ```
/// let page = hearth_sql::create_model_options_reference();
/// assert!(page.contains("| `max_rank_memory_mb` |"));
/// ```
pub fn create_model_options_reference() -> String {
    let mut page = String::from(
        "# `CREATE MODEL` options\n\n\
         <!-- Written from the options table (engine/sql/src/options/table.rs) by \
         `hearth_sql::create_model_options_reference`; a test fails when this page differs from it: \
         `HEARTH_BLESS_DOCS=1 ./dev test docs_reference` rewrites it. -->\n\n\
         Every option `OPTIONS (…)` takes, in the order the options table declares them. An option a model type \
         does not take is refused by name, with the reason.\n\n\
         | option | takes | model types | tuned by `num_trials` |\n|---|---|---|---|\n",
    );
    for spec in option_table() {
        let _ = writeln!(
            page,
            "| `{}` | {} | {} | {} |",
            spec.name,
            spec.takes.replace('|', "\\|"),
            models(spec),
            tunable(spec.tunable)
        );
    }
    page
}

fn models(spec: &OptionSpec) -> &'static str {
    match (spec.read, spec.models) {
        (Read::Tuning, _) => "every model type (the tuning)",
        (_, Models::Labelled) => "every model with a label",
        (_, Models::MiniBatch) => "the networks; the linear models under `optimize_strategy = 'MINI_BATCH'`",
        (_, Models::Linear) => "`linear_reg`, `logistic_reg`",
        (_, Models::Exact) => "`linear_reg`, `logistic_reg` solved exactly",
        (_, Models::Penalized) => "the networks and the linear models",
        (_, Models::KMeans) => "`kmeans`",
        (_, Models::Every) => "every model type",
    }
}

fn tunable(tunable: Tunable) -> &'static str {
    match tunable {
        Tunable::No => "no",
        Tunable::Range(Scale::Linear) => "`HPARAM_RANGE` (uniform) or `HPARAM_CANDIDATES`",
        Tunable::Range(Scale::Log) => "`HPARAM_RANGE` (uniform in the logarithm) or `HPARAM_CANDIDATES`",
        Tunable::Range(Scale::Whole) => "`HPARAM_RANGE` (whole numbers) or `HPARAM_CANDIDATES`",
        Tunable::Candidates => "`HPARAM_CANDIDATES`",
    }
}
