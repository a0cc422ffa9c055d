//! hearth's main job: the preprocessing half of a credit-risk pipeline on the German Credit data.
//!
//! Reads `datasets/german_credit/credit-g.csv`, fits StringIndexer → OneHotEncoder → VectorAssembler →
//! StandardScaler with Spark MLlib's semantics, prints the fitted state and the first transformed rows as
//! tables, and saves the fitted pipeline as JSON.
//!
//! ```text
//! ./dev run                      # or: cargo run --example german_credit [-- OUTPUT_DIR]
//! HEARTH_MASTER=local[4] ./dev run
//! ```

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use datafusion::arrow::array::{AsArray, RecordBatch};
use datafusion::arrow::datatypes::{Float32Type, Float64Type};
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::logical_expr::ident;
use hearth::datasets::german_credit::{self, NUMERIC};
use hearth::prelude::*;
use prettytable::{Table, row};

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
    let session = Session::new(&master)?;
    let credit = session.read_csv(german_credit::csv_path(), &CsvOptions::new()).await?;

    let started = Instant::now();
    let (model, transformed) = german_credit::preprocessing().fit_transform(&credit).await?;
    let fitted_in = started.elapsed();
    let rows = transformed.clone().count().await?;
    println!(
        "Fitted a {}-stage pipeline on {rows} rows of german_credit ({master}) in {:.0} ms\n",
        model.stages().len(),
        fitted_in.as_secs_f64() * 1e3
    );

    print_stages(&model);
    print_labels(&model);
    print_scaler(&model);
    print_rows(transformed).await?;

    let out = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("hearth-german-credit-pipeline"));
    model.save(&out)?;
    println!(
        "Saved the fitted pipeline to {}",
        out.join(hearth::engine::pipeline::PIPELINE_FILE).display()
    );
    Ok(())
}

fn print_stages(model: &PipelineModel) {
    let mut table = Table::new();
    table.set_titles(row!["#", "stage", "uid", "fitted state"]);
    for (i, stage) in model.stages().iter().enumerate() {
        let (class, uid, state) = match stage {
            FittedStage::StringIndexerModel(m) => (
                "StringIndexerModel",
                m.uid(),
                format!(
                    "{} columns, {} labels",
                    m.labels().len(),
                    m.labels().iter().map(Vec::len).sum::<usize>()
                ),
            ),
            FittedStage::OneHotEncoderModel(m) => (
                "OneHotEncoderModel",
                m.uid(),
                format!("vector widths {:?}", m.output_widths()),
            ),
            FittedStage::VectorAssembler(m) => (
                "VectorAssembler",
                m.uid(),
                format!("{} input columns", m.get_input_cols().len()),
            ),
            FittedStage::StandardScalerModel(m) => (
                "StandardScalerModel",
                m.uid(),
                format!("{} slots, mean and std", m.std().len()),
            ),
        };
        table.add_row(row![i, class, uid, state]);
    }
    table.printstd();
}

fn print_labels(model: &PipelineModel) {
    let mut table = Table::new();
    table.set_titles(row!["column", "labels (index 0, 1, …)"]);
    for stage in model.stages() {
        if let FittedStage::StringIndexerModel(m) = stage {
            for (column, labels) in m.get_input_cols().iter().zip(m.labels()) {
                table.add_row(row![column, labels.join(" | ")]);
            }
        }
    }
    println!("\nStringIndexer labels, most frequent first");
    table.printstd();
}

fn print_scaler(model: &PipelineModel) {
    let Some(FittedStage::StandardScalerModel(scaler)) = model.stages().last() else {
        return;
    };
    let numeric_start = scaler.std().len() - NUMERIC.len();
    let mut table = Table::new();
    table.set_titles(row!["slot", "column", "mean", "std"]);
    for (k, column) in NUMERIC.iter().enumerate() {
        let slot = numeric_start + k;
        table.add_row(row![
            slot,
            column,
            format!("{:.4}", scaler.mean()[slot]),
            format!("{:.4}", scaler.std()[slot])
        ]);
    }
    println!("\nStandardScaler (withMean, withStd): the numeric slots");
    table.printstd();
}

async fn print_rows(transformed: DataFrame) -> Result<()> {
    let batches: Vec<RecordBatch> = transformed
        .select(vec![
            ident("class"),
            ident("label"),
            ident("purpose"),
            ident("purpose_idx"),
            ident("features"),
        ])?
        .limit(0, Some(5))?
        .collect()
        .await?;
    let mut table = Table::new();
    table.set_titles(row![
        "class",
        "label",
        "purpose",
        "purpose_idx",
        "features (first 6 of the vector)"
    ]);
    let options = FormatOptions::default();
    for batch in &batches {
        let text = |i: usize| ArrayFormatter::try_new(batch.column(i).as_ref(), &options);
        let (class, purpose) = (text(0)?, text(2)?);
        let label = batch.column(1).as_primitive::<Float64Type>();
        let purpose_idx = batch.column(3).as_primitive::<Float64Type>();
        let features = batch.column(4).as_fixed_size_list();
        for r in 0..batch.num_rows() {
            let vector = features.value(r);
            let values = vector.as_primitive::<Float32Type>();
            let shown: Vec<String> = values.values().iter().take(6).map(|v| format!("{v:.3}")).collect();
            table.add_row(row![
                class.value(r),
                label.value(r),
                purpose.value(r),
                purpose_idx.value(r),
                format!("[{}, … ({} slots)]", shown.join(", "), values.len())
            ]);
        }
    }
    println!("\nFirst rows of the transformed data");
    table.printstd();
    Ok(())
}
