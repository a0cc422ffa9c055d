//! hearth's main job: a credit-risk model on the German Credit data, from CSV to metrics.
//!
//! Reads `datasets/german_credit/credit-g.csv`, splits it 80/20, and fits one pipeline on the training rows:
//! StringIndexer → OneHotEncoder → VectorAssembler → StandardScaler with Spark MLlib's semantics, then an
//! MLP trained on two workers through the barrier stage (one trainer per partition, gradients averaged with
//! allreduce). It evaluates the fitted pipeline on the test rows and saves it, model included.
//!
//! ```text
//! ./dev run                      # or: ./dev cargo run --example german_credit [-- OUTPUT_DIR]
//! HEARTH_MASTER=local[4] ./dev run
//! HEARTH_CREDIT_CSV=s3://bucket/credit-g.csv ./dev run     # the data elsewhere: a path or an object store
//! ```

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use hearth::datasets::german_credit;
use hearth::prelude::*;
use prettytable::format::consts::FORMAT_NO_LINESEP_WITH_TITLE;
use prettytable::{Row, Table, row};

#[tokio::main]
async fn main() -> ExitCode {
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<()> {
    let master = std::env::var("HEARTH_MASTER").unwrap_or_else(|_| "local[2]".to_string());
    let session = Session::builder().with_default_features().connect(&master).await?;
    let input = std::env::var_os("HEARTH_CREDIT_CSV").map_or_else(german_credit::csv_path, PathBuf::from);
    let credit = session.read_csv(&input, &CsvOptions::new()).await?;
    let parts = credit.random_split(&[0.8, 0.2], 42)?;
    let (train, test) = (&parts[0], &parts[1]);
    let rows = train.clone().count().await?;

    let started = Instant::now();
    let pipeline = german_credit::preprocessing().stage(german_credit::classifier());
    let model = pipeline.fit(train).await?;
    println!(
        "Fitted a {}-stage pipeline on {rows} training rows of german_credit ({master}) in {:.2} s\n",
        model.stages().len(),
        started.elapsed().as_secs_f64()
    );
    print_stages(&model);
    let classifier: &ClassificationModel = model.last_stage().ok_or_else(|| {
        HearthError::invalid_data(
            "german_credit",
            "features",
            "the pipeline's last stage is not a classification model",
        )
    })?;
    print_history(classifier);
    print_ranks(classifier);
    print_metrics(&model.transform(test)?).await?;

    let out = std::env::args()
        .nth(1)
        .map_or_else(|| std::env::temp_dir().join("hearth-german-credit"), PathBuf::from);
    model.write().overwrite().save(&out)?;
    println!("\nSaved the fitted pipeline, model included, to {}", out.display());
    Ok(())
}

fn print_history(model: &ClassificationModel) {
    let mut table = titled(row!["epoch", "loss", "accuracy", "learning rate", "seconds"]);
    let history = model.history();
    for stats in history
        .iter()
        .filter(|s| s.epoch <= 3 || s.epoch % 5 == 0 || s.epoch == history.len())
    {
        table.add_row(row![
            stats.epoch,
            format!("{:.4}", stats.loss),
            stats.accuracy.map_or("-".to_string(), |a| format!("{a:.4}")),
            format!("{:.0e}", stats.learning_rate),
            format!("{:.3}", stats.seconds)
        ]);
    }
    println!("\nTraining history (averaged over both workers' rows)");
    table.printstd();
}

fn print_ranks(model: &ClassificationModel) {
    let mut table = titled(row!["rank", "host", "device", "rows", "steps", "seconds"]);
    for rank in &model.summary().ranks {
        table.add_row(row![
            rank.rank,
            rank.host,
            rank.device,
            rank.rows,
            rank.steps,
            format!("{:.2}", rank.seconds)
        ]);
    }
    println!("\nPer-rank training stats");
    table.printstd();
}

async fn print_metrics(scored: &DataFrame) -> Result<()> {
    let multiclass = MulticlassClassificationEvaluator::new();
    let state = multiclass.state(scored).await?;
    let rows = scored.clone().count().await?;
    let mut table = titled(row!["metric", "value"]);
    for metric in ["f1", "accuracy", "weightedPrecision", "weightedRecall"] {
        let value = multiclass.clone().metric_name(metric).metric(&state)?;
        table.add_row(row![metric, format!("{value:.4}")]);
    }
    for metric in ["areaUnderROC", "areaUnderPR"] {
        let value = BinaryClassificationEvaluator::new()
            .metric_name(metric)
            .evaluate(scored)
            .await?;
        table.add_row(row![metric, format!("{value:.4}")]);
    }
    println!("\nEvaluation on the {rows} test rows");
    table.printstd();
    Ok(())
}

fn print_stages(model: &PipelineModel) {
    let mut table = titled(row!["#", "stage", "uid", "fitted state"]);
    for (i, stage) in model.stages().iter().enumerate() {
        table.add_row(row![i, stage.class(), stage.uid(), stage.describe()]);
    }
    table.printstd();
}

/// A table with a title row and no lines between rows.
fn titled(titles: Row) -> Table {
    let mut table = Table::new();
    table.set_format(*FORMAT_NO_LINESEP_WITH_TITLE);
    table.set_titles(titles);
    table
}
