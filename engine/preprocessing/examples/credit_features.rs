//! Spark MLlib's preprocessing with no libtorch: the German Credit data's label and categorical columns
//! indexed, one-hot encoded, assembled with numeric ones and scaled, and the fitted pipeline saved as JSON.
//! It builds and runs where libtorch was never installed:
//!
//! ```text
//! cargo run -p hearth-preprocessing --example credit_features [-- OUTPUT_DIR]
//! ```

use std::path::PathBuf;
use std::process::ExitCode;

use hearth_preprocessing::prelude::*;

/// The categorical columns indexed and one-hot encoded.
const CATEGORICAL: [&str; 4] = ["checking_status", "credit_history", "purpose", "savings_status"];
/// The numeric columns assembled beside them.
const NUMERIC: [&str; 3] = ["duration", "credit_amount", "age"];

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
    let session = Session::builder().with_preprocessing().local(2);
    let csv = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../datasets/german_credit/credit-g.csv");
    let credit = session.read_csv(&csv, &CsvOptions::new()).await?;
    let indexed = CATEGORICAL.map(|c| format!("{c}_idx"));
    let encoded = CATEGORICAL.map(|c| format!("{c}_vec"));
    let assembled = encoded.iter().cloned().chain(NUMERIC.map(String::from));
    let model = Pipeline::new()
        .stage(StringIndexer::new().input_col("class").output_col("label"))
        .stage(
            StringIndexer::new()
                .input_cols(CATEGORICAL)
                .output_cols(indexed.clone())
                .handle_invalid(HandleInvalid::Keep),
        )
        .stage(OneHotEncoder::new().input_cols(indexed).output_cols(encoded.clone()))
        .stage(VectorAssembler::new().input_cols(assembled).output_col("raw_features"))
        .stage(
            StandardScaler::new()
                .input_col("raw_features")
                .output_col("features")
                .with_mean(true),
        )
        .fit(&credit)
        .await?;
    println!("Fitted on {} rows of german_credit:", credit.clone().count().await?);
    for (i, stage) in model.stages().iter().enumerate() {
        println!("  {i}  {:<20} {}", stage.class(), stage.describe());
    }
    let features = model
        .transform(&credit)?
        .select_columns(&["class", "label", "features"])?;
    features.show_limit(3).await?;
    let out = std::env::args()
        .nth(1)
        .map_or_else(|| std::env::temp_dir().join("hearth-credit-features"), PathBuf::from);
    model.write().overwrite().save(&out)?;
    println!("Saved the fitted pipeline to {}", out.display());
    Ok(())
}
