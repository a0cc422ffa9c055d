//! The preprocessing a `CREATE MODEL` fits before its estimator: the `TRANSFORM` clause's stages or, without
//! one, BigQuery ML's automatic preprocessing — numbers and booleans assembled and standardized, strings
//! indexed (unseen values kept) and one-hot encoded, vectors as they are.

use datafusion::arrow::datatypes::DataType;
use datafusion::prelude::DataFrame;
use hearth_common::params::HandleInvalid;
use hearth_exec::error::{HearthError, Result};
use hearth_exec::vector::vector_dim;
use hearth_preprocessing::feature::{OneHotEncoder, StandardScaler, StringIndexer, VectorAssembler};

use super::error::CREATE_MODEL;
use super::options::ModelOptions;
use super::parser::CreateModel;
use super::transform::{TransformPlan, plan_transform};

/// The column the pipeline's assembled features go to.
pub(super) const FEATURES: &str = "__features";
/// The column marking the held-out rows a model validates on every epoch (`early_stop`).
pub(super) const HELD_OUT: &str = "__held_out";
/// The automatic preprocessing's assembled numbers, and the same standardized.
pub(super) const NUMBERS: &str = "__numbers";
pub(super) const SCALED_NUMBERS: &str = "__numbers_scaled";

/// The automatic preprocessing's one-hot vector of string column `name`.
pub(super) fn one_hot_column(name: &str) -> String {
    format!("__{name}_vector")
}

/// The automatic preprocessing's index of string column `name`.
pub(super) fn index_column(name: &str) -> String {
    format!("__{name}_index")
}

/// The statement's preprocessing of `input`: its `TRANSFORM`, or the automatic one.
pub(super) fn plan_preprocessing(
    create: &CreateModel,
    input: &DataFrame,
    options: &ModelOptions,
) -> Result<TransformPlan> {
    match &create.transform {
        Some(items) => plan_transform(items, input),
        None => automatic_transform(input, options),
    }
}

/// Without a TRANSFORM: every column but the label (and the split column) is a feature — numbers and
/// booleans assembled and standardized (unless `standardize_features = FALSE`), strings indexed (unseen values
/// kept) and one-hot encoded, vectors as they are.
fn automatic_transform(input: &DataFrame, options: &ModelOptions) -> Result<TransformPlan> {
    let (mut numbers, mut stages, mut outputs, mut inputs) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for field in input.schema().fields() {
        let name = field.name();
        if *name == options.label || Some(name) == options.data_split_col.as_ref() {
            continue;
        }
        inputs.push(name.clone());
        let data_type = field.data_type();
        if vector_dim(data_type).is_some() {
            outputs.push(name.clone());
        } else if data_type.is_numeric() || data_type == &DataType::Boolean {
            numbers.push(name.clone());
        } else if matches!(data_type, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View) {
            let (index, vector) = (index_column(name), one_hot_column(name));
            stages.push(
                StringIndexer::new()
                    .input_col(name)
                    .output_col(&index)
                    .handle_invalid(HandleInvalid::Keep)
                    .into(),
            );
            stages.push(OneHotEncoder::new().input_col(&index).output_col(&vector).into());
            outputs.push(vector);
        } else {
            return Err(HearthError::schema(
                CREATE_MODEL,
                name,
                format!("a {data_type} column cannot be a feature; leave it out or convert it in TRANSFORM"),
            ));
        }
    }
    if !numbers.is_empty() {
        stages.push(VectorAssembler::new().input_cols(numbers).output_col(NUMBERS).into());
        if options.standardize_features {
            stages.push(
                StandardScaler::new()
                    .input_col(NUMBERS)
                    .output_col(SCALED_NUMBERS)
                    .with_mean(true)
                    .into(),
            );
            outputs.insert(0, SCALED_NUMBERS.to_string());
        } else {
            outputs.insert(0, NUMBERS.to_string());
        }
    }
    Ok(TransformPlan {
        stages,
        outputs,
        inputs,
    })
}
