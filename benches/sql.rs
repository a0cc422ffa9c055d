//! Benchmark: the main job written in SQL (`examples/german_credit.sql`: CREATE EXTERNAL TABLE, CREATE MODEL
//! with its TRANSFORM, ML.EVALUATE) against the same job in Rust (read, split, one pipeline with the
//! classifier, save, evaluate), alternated in the same run on `local[2]`; and the SQL front end's own cost:
//! parsing the script, turning its TRANSFORM into stages, and planning its `ML.` queries.
//!
//! ```text
//! ./dev bench --bench sql
//! ```

use std::time::{Duration, Instant};

use hearth::datasets::german_credit;
use hearth::prelude::*;
use hearth::sql::{Statement, parse_statements, plan_transform};
use prettytable::{Table, row};

/// Alternated rounds of each job.
const ROUNDS: usize = 7;

/// The Rust main job: read, split, fit, save, evaluate.
async fn rust_job(dir: &std::path::Path) -> Result<f64> {
    let session = Session::builder().with_default_features().local(2);
    let credit = session.read_csv(german_credit::csv_path(), &CsvOptions::new()).await?;
    let parts = credit.random_split(&[0.8, 0.2], 42)?;
    let model = german_credit::preprocessing()
        .stage(german_credit::classifier())
        .fit(&parts[0])
        .await?;
    model.save(dir.join("rust"))?;
    let scored = model.transform(&parts[1])?;
    MulticlassClassificationEvaluator::new().evaluate(&scored).await
}

/// The SQL main job up to its ML.EVALUATE; also returns the time spent parsing the script.
async fn sql_job(dir: &std::path::Path) -> Result<(f64, Duration)> {
    let session = Session::builder()
        .with_default_features()
        .local(2)
        .with_models(dir.join("models"));
    let script = std::fs::read_to_string(german_credit::sql_path())
        .map_err(|e| HearthError::persistence(german_credit::sql_path(), "reading the SQL script").caused_by(e))?;
    let started = Instant::now();
    let statements = parse_statements(&script)?;
    let parsing = started.elapsed();
    let mut evaluation = Vec::new();
    for statement in &statements[..4] {
        evaluation = session.execute(statement).await?.collect().await?;
    }
    let f1 = datafusion::arrow::array::AsArray::as_primitive::<datafusion::arrow::datatypes::Float64Type>(
        evaluation[0].column(0),
    )
    .value(0);
    Ok((f1, parsing))
}

/// Seconds of the SQL front end's own work in the job, the rest being what the Rust job does too: parsing
/// the script, turning the TRANSFORM clause into stages, and planning the `ML.` queries into DataFusion
/// plans (model lookup included). Measured over a catalog that holds the model.
async fn front_end_seconds(dir: &std::path::Path) -> Result<f64> {
    let session = Session::builder()
        .with_default_features()
        .local(2)
        .with_models(dir.join("models"));
    let script = std::fs::read_to_string(german_credit::sql_path()).unwrap_or_default();
    session.execute(&parse_statements(&script)?[0]).await?;
    let input = session.sql("SELECT * FROM credit").await?;
    let started = Instant::now();
    let statements = parse_statements(&script)?;
    let Statement::CreateModel(create) = &statements[1] else {
        unreachable!("the script's second statement is CREATE MODEL")
    };
    plan_transform(create.transform.as_deref().unwrap_or_default(), &input)?;
    for statement in &statements[2..] {
        session.execute(statement).await?;
    }
    Ok(started.elapsed().as_secs_f64())
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

#[tokio::main]
async fn main() -> Result<()> {
    let dir = std::env::temp_dir().join(format!("hearth-bench-sql-{}", std::process::id()));
    let (mut rust, mut sql, mut parse) = (Vec::new(), Vec::new(), Vec::new());
    let (mut rust_f1, mut sql_f1) = (0.0, 0.0);
    for _ in 0..ROUNDS {
        let started = Instant::now();
        rust_f1 = rust_job(&dir).await?;
        rust.push(started.elapsed().as_secs_f64());
        let started = Instant::now();
        let (f1, parsing) = sql_job(&dir).await?;
        sql.push(started.elapsed().as_secs_f64());
        parse.push(parsing.as_secs_f64());
        sql_f1 = f1;
    }
    let front_end = front_end_seconds(&dir).await?;
    let _ = std::fs::remove_dir_all(&dir);
    let (rust_median, sql_median) = (median(rust.clone()), median(sql.clone()));
    let mut table = Table::new();
    table.set_titles(row!["job", "median s", "best s", "f1", "notes"]);
    table.add_row(row![
        "Rust main job",
        format!("{rust_median:.3}"),
        format!("{:.3}", rust.iter().copied().fold(f64::MAX, f64::min)),
        format!("{rust_f1:.4}"),
        "baseline: read, split, fit, save, evaluate"
    ]);
    table.add_row(row![
        "SQL main job",
        format!("{sql_median:.3}"),
        format!("{:.3}", sql.iter().copied().fold(f64::MAX, f64::min)),
        format!("{sql_f1:.4}"),
        "examples/german_credit.sql up to ML.EVALUATE (the model and held-out rows saved)"
    ]);
    println!("the main job, SQL against Rust, local[2], {ROUNDS} alternated rounds\n");
    table.printstd();
    let parse_median = median(parse);
    println!(
        "SQL over Rust: {:+.1} % of the job (median); parsing the script {:.2} ms; the SQL front end in all \
         (parsing, TRANSFORM into stages, planning the ML. queries) {:.1} ms = {:.2} % of the SQL job \
         (target ≤ 5 %)",
        (sql_median / rust_median - 1.0) * 100.0,
        parse_median * 1e3,
        front_end * 1e3,
        front_end / sql_median * 100.0
    );
    Ok(())
}
