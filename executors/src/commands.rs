//! What each `hearth` subcommand does.

use std::error::Error;

use datafusion::arrow::util::pretty::pretty_format_batches;
use hearth_engine::prelude::*;

/// A subcommand's outcome: its error is printed for the user.
pub type CommandResult = Result<(), Box<dyn Error>>;

/// `hearth fit`: fits the pipeline in `pipeline` (a JSON file) on the CSV file `data`, saves it to `model`.
pub async fn fit(master: &str, pipeline: &str, data: &str, model: &str) -> CommandResult {
    let session = Session::connect(master).await?;
    let pipeline = Pipeline::load(pipeline)?;
    let df = session.read_csv(data, &CsvOptions::new()).await?;
    let fitted = pipeline.fit(&df).await?;
    fitted.save(model)?;
    println!(
        "fitted {} stages on {data} ({master}); saved to {model}",
        fitted.stages().len()
    );
    Ok(())
}

/// `hearth transform`: applies the saved model in `model` to the CSV file `data` and prints `rows` rows.
pub async fn transform(master: &str, model: &str, data: &str, rows: usize) -> CommandResult {
    let session = Session::connect(master).await?;
    let model = PipelineModel::load(model)?;
    let df = session.read_csv(data, &CsvOptions::new()).await?;
    let batches = model.transform(&df)?.limit(0, Some(rows))?.collect().await?;
    println!("{}", pretty_format_batches(&batches)?);
    Ok(())
}
