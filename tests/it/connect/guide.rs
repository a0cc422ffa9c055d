//! The guide's Spark Connect chapter run as a reader runs it: its Python blocks, in order, as one PySpark
//! script against a server of hearth, which must print what the chapter shows after each block (numbers to
//! 1e-6 relative: the last digits of a fitted model's figures are the machine's).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use hearth::datasets::german_credit;

use super::{client_python, serve};
use crate::common::wait_within;

/// The chapter, from the project's root.
const CHAPTER: &str = "docs/src/spark-connect.md";

/// The fenced blocks of `page`, in order: each one's language and lines.
fn blocks(page: &str) -> Vec<(String, Vec<String>)> {
    let mut found = Vec::new();
    let mut lines = page.lines();
    while let Some(line) = lines.next() {
        if let Some(language) = line.trim_end().strip_prefix("```") {
            let block = lines.by_ref().take_while(|line| line.trim_end() != "```");
            found.push((language.to_string(), block.map(str::to_string).collect()));
        }
    }
    found
}

/// The chapter's script (its Python blocks from the first that imports, its paths under `dir`, its server
/// `url`) and the lines it shows after them.
fn script_and_shown(chapter: &str, url: &str, dir: &Path) -> (String, Vec<String>) {
    let (mut script, mut shown) = (String::new(), Vec::new());
    let mut after_python = false;
    for (language, lines) in blocks(chapter) {
        match language.as_str() {
            "python" if !script.is_empty() || lines.iter().any(|line| line.starts_with("from pyspark")) => {
                script.push_str(&lines.join("\n"));
                script.push('\n');
            }
            "text" if after_python => shown.extend(lines),
            _ => {}
        }
        after_python = language == "python";
    }
    let csv = german_credit::csv_path();
    let script = script
        .replace("sc://localhost:15002", url)
        .replace(
            "\"datasets/german_credit/credit-g.csv\"",
            &format!("{:?}", csv.display().to_string()),
        )
        .replace(
            "\"credit-model\"",
            &format!("{:?}", dir.join("credit-model").display().to_string()),
        )
        .replace(
            "\"credit-predictions\"",
            &format!("{:?}", dir.join("credit-predictions").display().to_string()),
        );
    (script, shown)
}

/// Whether `printed` says what `shown` does: the same words, and numbers within 1e-6 of each other relative.
fn same_line(shown: &str, printed: &str) -> bool {
    let words = |line: &str| -> Vec<String> {
        line.split(|c: char| c.is_whitespace() || "|[],'()".contains(c))
            .filter(|word| !word.is_empty())
            .map(str::to_string)
            .collect()
    };
    let (shown, printed) = (words(shown), words(printed));
    shown.len() == printed.len()
        && shown
            .iter()
            .zip(&printed)
            .all(|(a, b)| match (a.parse::<f64>(), b.parse::<f64>()) {
                (Ok(x), Ok(y)) => (x - y).abs() <= 1e-6 * x.abs().max(y.abs()).max(1e-12),
                _ => a == b,
            })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_spark_connect_chapters_python_prints_what_the_chapter_shows() {
    let server = serve("local[2]", None, Duration::from_secs(600)).await;
    let url = format!("sc://127.0.0.1:{}", server.address().port());
    let dir = tempfile::tempdir().unwrap();
    let chapter = std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(CHAPTER)).unwrap();
    let (script, shown) = script_and_shown(&chapter, &url, dir.path());
    assert!(
        shown.len() >= 20,
        "{CHAPTER} shows {} lines after its Python",
        shown.len()
    );
    let file = dir.path().join("chapter.py");
    std::fs::write(&file, &script).unwrap();
    let printed = tokio::task::spawn_blocking(move || {
        let output = dir.path().join("output.txt");
        let child = Command::new(client_python())
            .arg(&file)
            .current_dir(dir.path())
            .env_remove("SPARK_CONNECT_AUTHENTICATE_TOKEN")
            .env("PYTHONWARNINGS", "ignore")
            .stdout(std::fs::File::create(&output).unwrap())
            .stderr(std::fs::File::create(dir.path().join("errors.txt")).unwrap())
            .spawn()
            .expect("start the PySpark client");
        let status = wait_within(child, Duration::from_secs(180), CHAPTER);
        let errors = std::fs::read_to_string(dir.path().join("errors.txt")).unwrap();
        assert!(
            status.success(),
            "{CHAPTER}'s Python failed ({status}):\n{script}\n{errors}"
        );
        std::fs::read_to_string(output).unwrap()
    })
    .await
    .unwrap();
    let printed: Vec<&str> = printed.lines().collect();
    let mut next = 0;
    for line in shown.iter().filter(|line| !line.contains('…')) {
        let found = printed[next..].iter().position(|got| same_line(line, got));
        let at = found.unwrap_or_else(|| {
            panic!(
                "{CHAPTER} shows {line:?}, which its Python did not print (after line {next}); it printed:\n{}",
                printed.join("\n")
            )
        });
        next += at + 1;
    }
}
