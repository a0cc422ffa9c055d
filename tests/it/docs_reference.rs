//! The guide's reference pages are written from the code: a page that differs from what the code writes
//! fails here, naming it. `HEARTH_BLESS_DOCS=1` rewrites the pages instead.

use std::path::Path;
use std::process::Command;

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
