//! `hearth sql`: statements from a file, from `-e`, or typed at a prompt with history, each result printed
//! as it completes. A script is parsed whole first, so a syntax error runs nothing; the first failing
//! statement stops a script. On a terminal, a statement that takes a while shows what it is doing (the
//! rows produced so far, the epochs of a model being trained); piped output shows nothing but results.

use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use datafusion::arrow::array::RecordBatch;
use futures::StreamExt;
use hearth_display::CatalogPlots;
use hearth_sql::{DataRoots, ModelsFeature, SqlSessionExt, Statement, parse_statements};
use hearth_training::prelude::*;
use hearth_training::train::epoch_line;
use hearth_training::train::{EpochStats, TrainingProgress};
use indicatif::{ProgressBar, ProgressStyle};
use rustyline::DefaultEditor;
use rustyline::error::ReadlineError;

use super::failed::Failed;
use super::output::{Format, write};
use super::{CommandResult, cache_dir};

/// `hearth sql`'s arguments.
#[derive(Debug, Args)]
pub struct SqlArgs {
    /// A file of statements separated by `;` (`-` reads standard input). Without a file or -e, a prompt on a
    /// terminal, standard input otherwise.
    file: Option<PathBuf>,
    /// Statements to run instead of a file.
    #[arg(short = 'e', long = "execute", conflicts_with = "file")]
    execute: Option<String>,
    /// The model catalog's directory.
    #[arg(long, env = "HEARTH_MODELS", default_value = "models")]
    models: PathBuf,
    /// How results print.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// Save each model's plots here as SVG after `CREATE MODEL`: training curves, and on its held-out rows
    /// the confusion matrix and (two classes) ROC and precision-recall curves.
    #[arg(long, value_name = "DIR")]
    plots: Option<PathBuf>,
    /// Confine the statements' files to these directories and URL prefixes (`s3://bucket/data/`): a statement
    /// that reads or writes a file elsewhere is refused before it runs, and so is a model catalog elsewhere.
    /// A fleet's scheduler runs cluster-mode jobs so.
    #[arg(long = "data-roots", num_args = 1.., value_name = "DIR|URL")]
    data_roots: Vec<String>,
    /// With --data-roots, directories refused even under a root unless a root inside them holds the file
    /// (a fleet refuses its state directory so).
    #[arg(long = "data-deny", num_args = 1.., value_name = "DIR", requires = "data_roots")]
    data_deny: Vec<PathBuf>,
}

/// Where a statement's results go: printed in `format`, and models' plots saved into `plots`.
#[derive(Clone, Copy, Debug)]
struct Output<'a> {
    format: Format,
    plots: Option<&'a Path>,
}

/// `hearth sql`.
pub async fn run(master: &str, args: SqlArgs) -> CommandResult {
    let terminal = std::io::stderr().is_terminal();
    let progress = terminal.then(|| Arc::new(Progress::default()));
    let mut session = Session::builder()
        .with_default_features()
        .with_models(&args.models)
        .connect(master)
        .await?;
    if !args.data_roots.is_empty() {
        let roots = DataRoots::new(&args.data_roots)?.denying(&args.data_deny);
        roots.check(&args.models.display().to_string(), "the model catalog (--models)")?;
        session = session.with_data_roots(roots);
    }
    if let Some(progress) = &progress {
        session = session.with_progress(Arc::clone(progress) as Arc<dyn TrainingProgress>);
    }
    let output = Output {
        format: args.format,
        plots: args.plots.as_deref(),
    };
    let script = match (&args.execute, &args.file) {
        (Some(statements), _) => statements.clone(),
        (None, Some(file)) if file.as_os_str() != "-" => {
            std::fs::read_to_string(file).map_err(|e| Failed::file(file, e))?
        }
        (None, None) if std::io::stdin().is_terminal() => {
            return prompt(&session, output, progress.as_deref()).await;
        }
        _ => {
            let mut text = String::new();
            std::io::stdin().read_to_string(&mut text)?;
            text
        }
    };
    for statement in parse_statements(&script)? {
        run_statement(&session, &statement, output, progress.as_deref()).await?;
    }
    Ok(())
}

/// Runs one statement, prints its rows and saves the plots of a model it trained.
async fn run_statement(
    session: &Session,
    statement: &Statement,
    output: Output<'_>,
    progress: Option<&Progress>,
) -> CommandResult {
    if let Some(progress) = progress {
        progress.start(&headline(statement));
    }
    let result = match session.execute(statement).await {
        Ok(rows) => collect(rows, progress).await,
        Err(e) => Err(e),
    };
    if let Some(progress) = progress {
        progress.finish();
    }
    write(&mut std::io::stdout().lock(), output.format, &result?)?;
    std::io::stdout().flush()?;
    if let (Statement::CreateModel(create), Some(dir)) = (statement, output.plots) {
        for file in session.models()?.get(&create.name)?.save_plots(session, dir).await? {
            eprintln!("saved {}", file.display());
        }
    }
    Ok(())
}

/// A statement's rows, counted on the progress line as they arrive.
async fn collect(rows: DataFrame, progress: Option<&Progress>) -> Result<Vec<RecordBatch>> {
    let mut stream = rows.execute_stream().await?;
    let (mut batches, mut count) = (Vec::new(), 0usize);
    while let Some(batch) = stream.next().await {
        let batch = batch?;
        count += batch.num_rows();
        if let Some(progress) = progress {
            progress.message(&format!("{count} rows"));
        }
        batches.push(batch);
    }
    Ok(batches)
}

/// A statement's first line, cut to fit a progress line.
fn headline(statement: &Statement) -> String {
    let text = statement.to_string();
    let line = text.lines().next().unwrap_or_default();
    line.chars().take(60).collect()
}

/// The interactive prompt: lines gather until a `;` ends a statement; errors print and the prompt goes on.
async fn prompt(session: &Session, output: Output<'_>, progress: Option<&Progress>) -> CommandResult {
    let mut editor = DefaultEditor::new()?;
    let history = history_file();
    if let Some(file) = &history {
        let _ = editor.load_history(file);
    }
    let mut buffer = String::new();
    loop {
        let line = match editor.readline(if buffer.is_empty() { "hearth> " } else { "     -> " }) {
            Ok(line) => line,
            Err(ReadlineError::Interrupted) => {
                buffer.clear();
                continue;
            }
            Err(ReadlineError::Eof) => break,
            Err(e) => return Err(e.into()),
        };
        buffer.push_str(&line);
        buffer.push('\n');
        if !line.trim_end().ends_with(';') {
            continue;
        }
        let _ = editor.add_history_entry(buffer.trim_end());
        let script = std::mem::take(&mut buffer);
        match parse_statements(&script) {
            Ok(statements) => {
                for statement in statements {
                    if let Err(e) = run_statement(session, &statement, output, progress).await {
                        eprintln!("error: {e}");
                        break;
                    }
                }
            }
            Err(e) => eprintln!("error: {e}"),
        }
    }
    if let Some(file) = &history {
        if let Some(dir) = file.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let _ = editor.save_history(file);
    }
    Ok(())
}

/// Where the prompt's history lives: `sql_history` in hearth's cache directory.
fn history_file() -> Option<PathBuf> {
    Some(cache_dir()?.join("sql_history"))
}

/// A spinner on standard error while a statement runs, showing the epochs of a model being trained.
#[derive(Debug, Default)]
struct Progress {
    bar: std::sync::Mutex<Option<ProgressBar>>,
}

impl Progress {
    fn start(&self, what: &str) {
        let bar = ProgressBar::new_spinner();
        bar.set_style(
            ProgressStyle::with_template("{spinner} {elapsed:>4} {prefix} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        bar.set_prefix(what.to_string());
        bar.enable_steady_tick(Duration::from_millis(120));
        *self.bar.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(bar);
    }

    fn message(&self, text: &str) {
        if let Some(bar) = &*self.bar.lock().unwrap_or_else(std::sync::PoisonError::into_inner) {
            bar.set_message(text.to_string());
        }
    }

    fn finish(&self) {
        if let Some(bar) = self
            .bar
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
        {
            bar.finish_and_clear();
        }
    }
}

impl TrainingProgress for Progress {
    fn epoch(&self, _model: &str, stats: &EpochStats, epochs: usize) {
        self.message(&epoch_line(stats, epochs));
    }
}
