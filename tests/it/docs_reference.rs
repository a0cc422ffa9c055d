//! The guide's reference pages are written from the code: a page that differs from what the code writes
//! fails here, naming it. `HEARTH_BLESS_DOCS=1` rewrites the pages instead.

use std::path::Path;
use std::process::Command;

use hearth::prelude::{DefaultFeatures, Session};

use crate::fleet::hearth_program;

/// Compares the page at `relative` (from the project's root) with `written`, or rewrites it when blessing.
fn check_page(relative: &str, written: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(relative);
    if std::env::var_os("HEARTH_BLESS_DOCS").is_some() {
        std::fs::write(&path, written).unwrap();
        return;
    }
    let current = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        current == written,
        "{relative} is stale: the code now writes it otherwise (run `HEARTH_BLESS_DOCS=1 ./dev test docs_reference` \
         and commit the page)\n--- written by the code ---\n{written}"
    );
}

#[test]
fn the_create_model_options_page_is_written_from_the_options_table() {
    check_page(
        "docs/src/reference/create-model-options.md",
        &hearth::sql::create_model_options_reference(),
    );
}

#[test]
fn the_ml_functions_page_is_written_from_the_table_of_ml_functions() {
    check_page(
        "docs/src/reference/ml-functions.md",
        &hearth::sql::ml_functions_reference(),
    );
}

#[test]
fn the_stage_classes_page_is_written_from_the_stage_registry() {
    check_page(
        "docs/src/reference/stage-classes.md",
        // Training's classes are registered by a session built with training.
        &{
            Session::builder().with_default_features().local(1);
            hearth::preprocessing::pipeline::stage_classes_reference()
        },
    );
}

#[test]
fn the_sql_functions_page_is_written_from_each_functions_documentation() {
    check_page(
        "docs/src/reference/sql-functions.md",
        &hearth::preprocessing::functions::sql_functions_reference(
            &Session::builder().with_default_features().local(1),
        ),
    );
}

/// `hearth ARGS… --help`, in an environment without hearth's variables (clap shows an option's variable's
/// value beside it).
fn help(args: &[String]) -> String {
    let mut command = Command::new(hearth_program());
    command.env_clear().args(args).arg("--help");
    for kept in ["LD_LIBRARY_PATH", "PATH", "HOME"] {
        if let Some(value) = std::env::var_os(kept) {
            command.env(kept, value);
        }
    }
    let output = command.output().unwrap();
    assert!(output.status.success(), "hearth {args:?} --help failed: {output:?}");
    String::from_utf8(output.stdout).unwrap()
}

/// The subcommands a help text lists (`help` aside).
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|line| *line != "Commands:")
        .skip(1)
        .take_while(|line| line.starts_with("  "))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}

/// The help of `hearth ARGS…` and of each of its subcommands, depth first, as sections of the page.
fn command_sections(args: Vec<String>, page: &mut String) {
    let text = help(&args);
    let heading = "#".repeat((args.len() + 2).min(6));
    page.push_str(&format!(
        "{heading} `hearth{}`\n\n```text\n{}```\n\n",
        args.iter().map(|a| format!(" {a}")).collect::<String>(),
        text
    ));
    for sub in subcommands(&text) {
        let mut deeper = args.clone();
        deeper.push(sub);
        command_sections(deeper, page);
    }
}

#[test]
fn the_command_line_page_is_written_from_the_programs_help() {
    let mut page = String::from(
        "# The `hearth` program\n\n<!-- Written from `hearth … --help` by the test \
         docs_reference::the_command_line_page_is_written_from_the_programs_help; it fails when this page \
         differs: `HEARTH_BLESS_DOCS=1 ./dev test docs_reference` rewrites it. -->\n\n\
         Every command and its options, as `--help` prints them. [The command line](../command-line.md) says \
         how they are used together.\n\n",
    );
    command_sections(Vec::new(), &mut page);
    check_page("docs/src/reference/command-line.md", &format!("{}\n", page.trim_end()));
}

/// The tables the SQL functions' examples read; vectors as hearth makes them (`ml_vector_assemble`).
const EXAMPLE_TABLES: [&str; 6] = [
    "CREATE TABLE points AS SELECT ml_vector_assemble('error', x, x * 0.5) AS features \
     FROM (VALUES (0.0), (1.0), (4.0), (6.0)) AS v(x)",
    "CREATE TABLE scored AS SELECT label, prediction, ml_vector_assemble('error', 1.0 - p, p) AS probability, \
     ml_vector_assemble('error', -p, p) AS \"rawPrediction\" \
     FROM (VALUES (0.0, 0.0, 0.2), (1.0, 1.0, 0.9), (1.0, 0.0, 0.4), (0.0, 1.0, 0.6)) AS v(label, prediction, p)",
    "CREATE TABLE clustered AS SELECT prediction, ml_vector_assemble('error', x, x * 0.5) AS features, \
     prediction AS label FROM (VALUES (0, 0.0), (0, 1.0), (1, 4.0), (1, 6.0)) AS v(prediction, x)",
    "CREATE TABLE t AS SELECT ml_vector_assemble('error', duration, age) AS features, duration, age FROM credit",
    "CREATE TABLE assembled AS SELECT ml_vector_assemble('error', duration, credit_amount, age) AS features FROM credit",
    "CREATE TABLE indexed AS SELECT ml_string_index(purpose, ['radio/tv', 'new car'], 'keep') AS purpose_idx FROM credit",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_sql_functions_example_runs() {
    use hearth::prelude::*;

    let session = Session::builder().with_default_features().local(2);
    let csv = hearth::datasets::german_credit::csv_path();
    session
        .sql(&format!(
            "CREATE EXTERNAL TABLE credit STORED AS CSV LOCATION '{}' OPTIONS ('format.has_header' 'true')",
            csv.display()
        ))
        .await
        .unwrap();
    for table in EXAMPLE_TABLES {
        session.sql(table).await.unwrap_or_else(|e| panic!("{table}: {e}"));
    }
    let state = session.context().state();
    let scalars = state.scalar_functions().values().filter_map(|f| f.documentation());
    let aggregates = state.aggregate_functions().values().filter_map(|f| f.documentation());
    let examples: Vec<String> = scalars
        .chain(aggregates)
        .filter_map(|documentation| documentation.sql_example.clone())
        .filter(|example| example.contains("ml_"))
        .collect();
    assert!(examples.len() >= 20, "{} examples", examples.len());
    let mut failures = Vec::new();
    for example in examples {
        let query = example.trim_start_matches("```sql").trim_end_matches("```").trim();
        let outcome = match session.sql(query).await {
            Ok(frame) => frame.collect().await.map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        match outcome {
            Ok(batches)
                if batches
                    .iter()
                    .map(datafusion::arrow::array::RecordBatch::num_rows)
                    .sum::<usize>()
                    > 0 => {}
            Ok(_) => failures.push(format!("{query}: no rows")),
            Err(e) => failures.push(format!("{query}: {e}")),
        }
    }
    assert!(failures.is_empty(), "examples that fail:\n{}", failures.join("\n"));
}
