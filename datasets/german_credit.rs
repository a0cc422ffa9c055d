//! The UCI Statlog German Credit data (`german_credit/credit-g.csv`, 1,000 rows): its columns, and the
//! preprocessing pipeline hearth's main job fits on it.
//!
//! ```
//! use hearth::datasets::german_credit;
//! assert_eq!(german_credit::CATEGORICAL.len() + german_credit::NUMERIC.len() + 1, 21);
//! ```

use std::path::PathBuf;

use hearth_training::prelude::{
    HandleInvalid, MlpClassifier, OneHotEncoder, Pipeline, StandardScaler, StringIndexer, VectorAssembler,
};

/// The 13 categorical (string) columns.
pub const CATEGORICAL: [&str; 13] = [
    "checking_status",
    "credit_history",
    "purpose",
    "savings_status",
    "employment",
    "personal_status",
    "other_parties",
    "property_magnitude",
    "other_payment_plans",
    "housing",
    "job",
    "own_telephone",
    "foreign_worker",
];

/// The 7 integer columns.
pub const NUMERIC: [&str; 7] = [
    "duration",
    "credit_amount",
    "installment_commitment",
    "residence_since",
    "age",
    "existing_credits",
    "num_dependents",
];

/// The class column: `good` (700) or `bad` (300).
pub const LABEL: &str = "class";

/// The CSV file shipped in the repository.
pub fn csv_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("datasets/german_credit/credit-g.csv")
}

/// The main job written in SQL: `examples/german_credit.sql` (its CSV path is relative to the repository).
pub fn sql_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/german_credit.sql")
}

/// The main job's classifier: an MLP with hidden layers 32 and 16 and dropout 0.1, trained on two workers for
/// 20 epochs of 32-row batches with seed 7.
pub fn classifier() -> MlpClassifier {
    MlpClassifier::new()
        .hidden_layers([32, 16])
        .dropout(0.1)
        .workers(2)
        .epochs(20)
        .batch_size(32)
        .seed(7)
}

/// The main job's preprocessing: `class` indexed into `label`; every categorical column indexed (unseen
/// labels kept) and one-hot encoded; the encodings and the numeric columns assembled into `raw_features`,
/// then centred and scaled into `features`.
pub fn preprocessing() -> Pipeline {
    let indexed: Vec<String> = CATEGORICAL.iter().map(|c| format!("{c}_idx")).collect();
    let encoded: Vec<String> = CATEGORICAL.iter().map(|c| format!("{c}_vec")).collect();
    let assembled: Vec<String> = encoded.iter().cloned().chain(NUMERIC.map(String::from)).collect();
    Pipeline::new()
        .stage(StringIndexer::new().input_col(LABEL).output_col("label"))
        .stage(
            StringIndexer::new()
                .input_cols(CATEGORICAL)
                .output_cols(indexed.clone())
                .handle_invalid(HandleInvalid::Keep),
        )
        .stage(OneHotEncoder::new().input_cols(indexed).output_cols(encoded))
        .stage(VectorAssembler::new().input_cols(assembled).output_col("raw_features"))
        .stage(
            StandardScaler::new()
                .input_col("raw_features")
                .output_col("features")
                .with_mean(true),
        )
}
