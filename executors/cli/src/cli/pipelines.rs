//! `hearth fit`, `hearth transform` and `hearth fit-transform`: pipelines defined in JSON, fitted on CSV or
//! Parquet files and applied to them — the rows printed, or all of them written out as Spark's
//! `DataFrameWriter` writes them.

use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Args;
use datafusion::arrow::util::pretty::pretty_format_batches;
use hearth_exec::write::{FrameWriter, OutputFormat, SaveMode, Written};
use hearth_preprocessing::pipeline::refuse_existing;
use hearth_training::prelude::*;

use super::CommandResult;

/// Where and how `transform` and `fit-transform` write their rows.
#[derive(Debug, Args)]
pub struct OutputArgs {
    /// Write every row to this directory (part files and a `_SUCCESS` marker, as Spark writes) instead of
    /// printing the first ones.
    #[arg(long)]
    output: Option<PathBuf>,
    /// The files to write: parquet, csv (a vector column `v` becomes number columns `v_0`, `v_1`, …) or json.
    #[arg(long, default_value = "parquet")]
    format: OutputFormat,
    /// Where the output exists already: error, overwrite, append or ignore (Spark's write.mode).
    #[arg(long, default_value = "error")]
    mode: SaveMode,
    /// Parquet's codec: snappy (Spark's default), zstd(LEVEL), lz4_raw, gzip(LEVEL) or uncompressed.
    #[arg(long, default_value = "snappy")]
    compression: String,
    /// The columns to keep, comma-separated (default: every column, the input's and each stage's, as Spark's
    /// transform keeps them), e.g. --select features,label.
    #[arg(long, value_delimiter = ',')]
    select: Vec<String>,
}

impl OutputArgs {
    fn writer(&self) -> FrameWriter {
        FrameWriter::new(self.format)
            .mode(self.mode)
            .compression(&self.compression)
    }

    /// The transformed rows' columns to write.
    fn selected(&self, df: DataFrame) -> Result<DataFrame> {
        if self.select.is_empty() {
            return Ok(df);
        }
        let columns: Vec<&str> = self.select.iter().map(String::as_str).collect();
        Ok(df.select_columns(&columns)?)
    }
}

/// Reads `data`: Parquet when it ends in `.parquet` or is a directory of Parquet files, CSV with a header
/// otherwise.
async fn read_input(session: &Session, data: &Path) -> Result<DataFrame> {
    if is_parquet(data) {
        session.read_parquet(data).await
    } else {
        session.read_csv(data, &CsvOptions::new()).await
    }
}

fn is_parquet(data: &Path) -> bool {
    let parquet = |path: &Path| path.extension().is_some_and(|e| e.eq_ignore_ascii_case("parquet"));
    parquet(data)
        || (data.is_dir()
            && std::fs::read_dir(data).is_ok_and(|entries| entries.flatten().any(|entry| parquet(&entry.path()))))
}

/// Saves `fitted` to `model`, replacing what is there only when `overwrite`.
fn save_model(fitted: &PipelineModel, model: &Path, overwrite: bool) -> Result<()> {
    match overwrite {
        true => fitted.write().overwrite().save(model),
        false => fitted.save(model),
    }
}

/// `hearth fit`: fits the pipeline in `pipeline` (a JSON file) on `data`, saves it to `model` (an existing
/// model replaced only when `overwrite`, refused before fitting otherwise).
pub async fn fit(master: &str, pipeline: &Path, data: &Path, model: &Path, overwrite: bool) -> CommandResult {
    let session = Session::builder().with_default_features().connect(master).await?;
    let pipeline = Pipeline::load(pipeline)?;
    if !overwrite {
        refuse_existing(model)?;
    }
    let df = read_input(&session, data).await?;
    let fitted = pipeline.fit(&df).await?;
    save_model(&fitted, model, overwrite)?;
    println!(
        "fitted {} stages on {} ({master}); saved to {}",
        fitted.stages().len(),
        data.display(),
        model.display()
    );
    Ok(())
}

/// `hearth transform`: applies the saved model in `model` to `data`; prints `rows` rows, or writes them all.
pub async fn transform(master: &str, model: &Path, data: &Path, rows: usize, output: &OutputArgs) -> CommandResult {
    let started = Instant::now();
    let session = Session::builder().with_default_features().connect(master).await?;
    let model = PipelineModel::load(model)?;
    let df = read_input(&session, data).await?;
    let transformed = model.transform(&df)?;
    match &output.output {
        Some(out) => {
            let written = output.writer().save(output.selected(transformed)?, out).await?;
            report(&written, out, output, started);
        }
        None => {
            let batches = transformed.limit(0, Some(rows))?.collect().await?;
            println!("{}", pretty_format_batches(&batches)?);
        }
    }
    Ok(())
}

/// `hearth fit-transform`: fits the pipeline in `pipeline` on `data`, saves it to `model` and writes the rows
/// it makes of `data`, reading the file once.
pub async fn fit_transform(
    master: &str,
    pipeline: &Path,
    data: &Path,
    model: &Path,
    overwrite: bool,
    output: &OutputArgs,
) -> CommandResult {
    let Some(out) = &output.output else {
        return Err("fit-transform writes its rows: name where with --output DIR".into());
    };
    let started = Instant::now();
    let session = Session::builder().with_default_features().connect(master).await?;
    let pipeline = Pipeline::load(pipeline)?;
    if !overwrite {
        refuse_existing(model)?;
    }
    let df = read_input(&session, data).await?;
    let (fitted, transformed) = pipeline.fit_transform(&df).await?;
    save_model(&fitted, model, overwrite)?;
    println!(
        "fitted {} stages on {} ({master}) in {:.2} s; saved to {}",
        fitted.stages().len(),
        data.display(),
        started.elapsed().as_secs_f64(),
        model.display()
    );
    let written = output.writer().save(output.selected(transformed)?, out).await?;
    report(&written, out, output, started);
    Ok(())
}

/// Says what a write left.
fn report(written: &Written, out: &Path, output: &OutputArgs, started: Instant) {
    if written.ignored {
        println!("{} exists; left as it was (--mode ignore)", out.display());
        return;
    }
    let codec = match output.format {
        OutputFormat::Parquet => format!("parquet, {}", output.compression),
        format => format.to_string(),
    };
    println!(
        "wrote {} rows to {} ({} files, {:.1} MiB, {codec}) in {:.2} s",
        written.rows,
        out.display(),
        written.files.len(),
        written.bytes as f64 / (1 << 20) as f64,
        started.elapsed().as_secs_f64()
    );
}
