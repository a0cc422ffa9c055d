//! The driver's side of a full-batch fit: the rows narrowed to features, label and weight, one barrier stage of
//! [`FULL_BATCH_FUNCTION`](super::FULL_BATCH_FUNCTION), and the fit rank 0 returned, with the rows the ranks read.

use datafusion::arrow::datatypes::DataType;
use datafusion::logical_expr::{cast, ident};
use datafusion::prelude::DataFrame;
use hearth_exec::barrier::{BarrierOptions, BarrierStage};
use hearth_exec::error::{HearthError, Result};
use hearth_exec::vector::vector_dim;
use hearth_preprocessing::stage::input_field;

use super::function::{FULL_BATCH_FUNCTION, FullBatchArgs, FullBatchFit, FullBatchModel, read_fit, read_rows};

/// The label column of the prepared rows.
const LABEL: &str = "__full_batch_label";
/// The weight column of the prepared rows.
const WEIGHT: &str = "__full_batch_weight";

/// The columns a full-batch estimator reads, and the ranks fitting together.
pub(crate) struct Inputs<'a> {
    pub(crate) uid: &'a str,
    pub(crate) features_col: &'a str,
    pub(crate) label_col: &'a str,
    pub(crate) weight_col: Option<&'a str>,
    pub(crate) workers: usize,
}

/// A fit and the rows it was fitted on (over every rank).
pub(crate) struct Fitted<T> {
    pub(crate) fit: T,
    pub(crate) rows: u64,
}

/// Fits `settings` on `df` over `inputs.workers` ranks; `T` is the fit `settings` make.
pub(crate) async fn fit_full_batch<T: TryFrom<FullBatchFit>>(
    df: &DataFrame,
    inputs: &Inputs<'_>,
    settings: FullBatchModel,
) -> Result<Fitted<T>> {
    let features = input_field(inputs.uid, df, inputs.features_col)?;
    if vector_dim(features.data_type()).is_none() {
        return Err(HearthError::schema(
            inputs.uid,
            inputs.features_col,
            format!("must be a vector column, got {}", features.data_type()),
        ));
    }
    let mut columns = vec![
        ident(inputs.features_col),
        numeric(df, inputs, inputs.label_col)?.alias(LABEL),
    ];
    if let Some(weight) = inputs.weight_col {
        columns.push(numeric(df, inputs, weight)?.alias(WEIGHT));
    }
    let rows = df.clone().select(columns)?;
    let args = FullBatchArgs {
        settings,
        features_col: inputs.features_col.to_string(),
        label_col: LABEL.to_string(),
        weight_col: inputs.weight_col.map(|_| WEIGHT.to_string()),
    };
    let json = serde_json::to_string(&args)
        .map_err(|e| HearthError::barrier(FULL_BATCH_FUNCTION, "cannot write the fit's arguments").caused_by(e))?;
    let options = BarrierOptions {
        workers: inputs.workers,
        ..BarrierOptions::default()
    };
    let batches = BarrierStage::new(FULL_BATCH_FUNCTION, json)
        .options(options)
        .run(&rows)
        .await?;
    let fit = T::try_from(read_fit(&batches)?)
        .map_err(|_| HearthError::invalid_data(inputs.uid, inputs.label_col, "the fit returned another model"))?;
    Ok(Fitted {
        fit,
        rows: read_rows(&batches),
    })
}

/// Checks the params the linear estimators share, as Spark checks them: `regParam` at least 0,
/// `elasticNetParam` in [0, 1], `tol` at least 0, and at least one rank.
pub(crate) fn check_params(
    uid: &str,
    (reg_param, elastic_net_param, tol): (f64, f64, f64),
    workers: usize,
) -> Result<()> {
    let why = if reg_param.is_nan() || reg_param < 0.0 {
        Some(("regParam", format!("must be at least 0, got {reg_param}")))
    } else if !(0.0..=1.0).contains(&elastic_net_param) {
        Some(("elasticNetParam", format!("must be in [0, 1], got {elastic_net_param}")))
    } else if tol.is_nan() || tol < 0.0 {
        Some(("tol", format!("must be at least 0, got {tol}")))
    } else if workers == 0 {
        Some(("workers", "must be at least 1".to_string()))
    } else {
        None
    };
    match why {
        Some((param, why)) => Err(HearthError::invalid_param(uid, param, why)),
        None => Ok(()),
    }
}

/// `column` as `Float64`, or an error naming it when it is not numeric.
fn numeric(df: &DataFrame, inputs: &Inputs<'_>, column: &str) -> Result<datafusion::prelude::Expr> {
    let field = input_field(inputs.uid, df, column)?;
    if !field.data_type().is_numeric() {
        return Err(HearthError::schema(
            inputs.uid,
            column,
            format!("must be numeric, got {}", field.data_type()),
        ));
    }
    Ok(cast(ident(column), DataType::Float64))
}
