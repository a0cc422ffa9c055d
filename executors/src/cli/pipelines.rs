//! `hearth fit` and `hearth transform`: pipelines defined in JSON, fitted and applied to CSV files.

use std::path::Path;

use datafusion::arrow::util::pretty::pretty_format_batches;
use hearth_engine::prelude::*;

use super::CommandResult;

/// `hearth fit`: fits the pipeline in `pipeline` (a JSON file) on the CSV file `data`, saves it to `model`.
pub async fn fit(master: &str, pipeline: &Path, data: &Path, model: &Path) -> CommandResult {
    let session = Session::connect(master).await?;
    let pipeline = Pipeline::load(pipeline)?;
    let df = session.read_csv(data, &CsvOptions::new()).await?;
    let fitted = pipeline.fit(&df).await?;
    fitted.save(model)?;
    println!(
        "fitted {} stages on {} ({master}); saved to {}",
        fitted.stages().len(),
        data.display(),
        model.display()
    );
    Ok(())
}

/// `hearth transform`: applies the saved model in `model` to the CSV file `data` and prints `rows` rows.
pub async fn transform(master: &str, model: &Path, data: &Path, rows: usize) -> CommandResult {
    let session = Session::connect(master).await?;
    let model = PipelineModel::load(model)?;
    let df = session.read_csv(data, &CsvOptions::new()).await?;
    let batches = model.transform(&df)?.limit(0, Some(rows))?.collect().await?;
    println!("{}", pretty_format_batches(&batches)?);
    Ok(())
}
