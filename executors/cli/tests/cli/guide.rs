//! The SQL the README and the guide show, run as a reader runs it: each page's `sql` blocks in order as one
//! `hearth sql` script from the repository's root, which must succeed and print every table the page shows
//! right after a block (their columns: a trained model's figures depend on the machine's kernels). A block
//! with lines left out (`…`) is an excerpt of an example script: that script runs in its place.

use std::path::Path;

use crate::common::{hearth, repository, shown};

/// The pages with SQL, and whether a page reads the `credit` table another page creates.
const PAGES: [(&str, bool); 3] = [
    ("README.md", false),
    ("docs/src/sql.md", false),
    ("docs/src/sql-linear-models.md", true),
];

/// What creates the `credit` table the SQL chapter's pages read.
const CREDIT: &str = "CREATE EXTERNAL TABLE credit STORED AS CSV LOCATION 'datasets/german_credit/credit-g.csv' \
                      OPTIONS ('format.has_header' 'true');\n";

/// The fenced blocks of `page`, in order: each one's language and text.
fn blocks(page: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut lines = page.lines();
    while let Some(line) = lines.next() {
        if let Some(language) = line.trim_end().strip_prefix("```") {
            let block: Vec<&str> = lines.by_ref().take_while(|line| line.trim_end() != "```").collect();
            found.push((language.to_string(), block.join("\n")));
        }
    }
    found
}

/// `block` itself, or the example script it is an excerpt of when it leaves lines out (`…`).
fn runnable(block: &str) -> String {
    if !block.contains('…') {
        return block.to_string();
    }
    let kept: Vec<&str> = block
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.contains('…'))
        .collect();
    let examples = std::fs::read_dir(repository().join("examples")).unwrap();
    let scripts = examples
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "sql"));
    scripts
        .map(|path| std::fs::read_to_string(path).unwrap())
        .find(|script| {
            let lines: Vec<&str> = script.lines().map(str::trim).collect();
            kept.iter().all(|line| lines.contains(line))
        })
        .unwrap_or_else(|| panic!("a block leaves lines out but is no excerpt of an example script:\n{block}"))
}

/// The column names of each table `text` shows: the row after a table's opening border.
fn table_columns(text: &str) -> Vec<Vec<String>> {
    let lines: Vec<&str> = text.lines().collect();
    (0..lines.len().saturating_sub(1))
        .filter(|&at| lines[at].starts_with("+-") && lines[at + 1].starts_with('|'))
        .filter(|&at| at == 0 || !lines[at - 1].starts_with('|'))
        .map(|at| columns(lines[at + 1]))
        .collect()
}

/// The cells of a table row, trimmed.
fn columns(row: &str) -> Vec<String> {
    row.trim()
        .trim_matches('|')
        .split('|')
        .map(|cell| cell.trim().to_string())
        .collect()
}

#[test]
fn the_sql_of_the_readme_and_the_guide_runs_and_prints_the_tables_shown() {
    let models = tempfile::tempdir().unwrap();
    for (page, needs_credit) in PAGES {
        let text = std::fs::read_to_string(repository().join(page)).unwrap();
        let mut script = String::from(if needs_credit { CREDIT } else { "" });
        let mut shown_tables = Vec::new();
        let mut after_sql = false;
        for (language, block) in blocks(&text) {
            match language.as_str() {
                "sql" => {
                    let block = runnable(&block);
                    script.push_str(&block);
                    script.push_str(if block.trim_end().ends_with(';') { "\n" } else { ";\n" });
                }
                "text" if after_sql => shown_tables.extend(table_columns(&block)),
                _ => {}
            }
            after_sql = language == "sql";
        }
        let file = models
            .path()
            .join(Path::new(page).file_name().unwrap())
            .with_extension("sql");
        std::fs::write(&file, &script).unwrap();
        let out = hearth()
            .args(["sql", "--models"])
            .arg(models.path().join("models"))
            .arg(&file)
            .current_dir(repository())
            .output()
            .unwrap();
        assert!(out.status.success(), "{page}'s SQL:\n{script}\n{}", shown(&out));
        let printed = String::from_utf8_lossy(&out.stdout).to_string();
        let printed_tables = table_columns(&printed);
        for columns in shown_tables {
            assert!(
                printed_tables.contains(&columns),
                "{page} shows a table of columns {columns:?} that its SQL does not print; it printed:\n{printed}"
            );
        }
    }
}
