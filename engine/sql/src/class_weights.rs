//! The loss weight of each class a `CREATE MODEL` asks for, by class index: `class_weights` as given (by
//! index, or by label in the order the label's indexer gave the labels), or `auto_class_weights = TRUE`'s
//! balanced weights — a class weighs the training rows over (classes × the class's rows), as BigQuery ML and
//! scikit-learn's `class_weight = 'balanced'` weigh them, so every class weighs as much in the loss.
//!
//! With 700 rows labelled `good` and 300 `bad`, `good` weighs 1000 / (2 × 700) ≈ 0.714 and `bad`
//! 1000 / (2 × 300) ≈ 1.667.

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::{DataType, Float64Type, Int64Type};
use datafusion::functions_aggregate::expr_fn::count;
use datafusion::logical_expr::{cast, ident, lit};
use datafusion::prelude::DataFrame;
use hearth_exec::error::Result;

use super::error::invalid_option;
use super::options::{ClassWeights, ModelOptions};

/// Each class's weight by class index, or `None` when the statement weighs none. `label` is the training
/// rows' label column as written; `labels` its values in class order when the label is indexed.
pub(crate) async fn class_weights(
    options: &ModelOptions,
    train: &DataFrame,
    label: &str,
    labels: Option<&[String]>,
) -> Result<Option<Vec<f64>>> {
    let option = match options.class_weights {
        Some(ClassWeights::Balanced) => "auto_class_weights",
        _ => "class_weights",
    };
    if options.class_weights.is_some() && !options.model_type.is_classifier() {
        return Err(invalid_option(option, "a regressor has no classes"));
    }
    match (&options.class_weights, labels) {
        (None, _) => Ok(None),
        (Some(ClassWeights::ByIndex(weights)), _) => Ok(Some(weights.clone())),
        (Some(ClassWeights::ByLabel(pairs)), Some(labels)) => {
            if let Some((name, _)) = pairs.iter().find(|(name, _)| !labels.contains(name)) {
                return Err(invalid_option(
                    option,
                    format!("the label has no value {name:?} (it has {labels:?})"),
                ));
            }
            Ok(Some(
                labels
                    .iter()
                    .map(|l| pairs.iter().find(|(name, _)| name == l).map_or(1.0, |(_, w)| *w))
                    .collect(),
            ))
        }
        (Some(ClassWeights::ByLabel(_)), None) => Err(invalid_option(
            option,
            "weights by label need a string label; give them by class index",
        )),
        (Some(ClassWeights::Balanced), labels) => balanced(train, label, labels).await.map(Some),
    }
}

/// The balanced weights of the classes of `train`'s `label`, by class index.
async fn balanced(train: &DataFrame, label: &str, labels: Option<&[String]>) -> Result<Vec<f64>> {
    let counts = class_counts(train, label, labels).await?;
    let total: f64 = counts.iter().map(|(_, rows)| rows).sum();
    let classes = counts.len() as f64;
    let known = labels.map_or(0, <[String]>::len);
    let width = counts.iter().map(|(index, _)| index + 1).fold(known, usize::max);
    let mut weights = vec![1.0; width];
    for (index, rows) in counts {
        weights[index] = total / (classes * rows);
    }
    Ok(weights)
}

/// Each class index of `train`'s `label` and its rows, nulls left out: a value's position in `labels` when
/// the label is indexed, else the value itself.
async fn class_counts(train: &DataFrame, label: &str, labels: Option<&[String]>) -> Result<Vec<(usize, f64)>> {
    let value = match labels {
        Some(_) => cast(ident(label), DataType::Utf8),
        None => cast(ident(label), DataType::Float64),
    };
    let batches = train
        .clone()
        .filter(ident(label).is_not_null())?
        .aggregate(vec![value.alias("value")], vec![count(lit(1)).alias("rows")])?
        .collect()
        .await?;
    let mut counts = Vec::new();
    for batch in &batches {
        let rows = batch.column(1).as_primitive::<Int64Type>();
        for row in 0..batch.num_rows() {
            let index = class_index(batch.column(0), row, label, labels)?;
            counts.push((index, rows.value(row) as f64));
        }
    }
    Ok(counts)
}

/// The class index of row `row` of `values`; an error naming the value when it is none.
fn class_index(values: &dyn Array, row: usize, label: &str, labels: Option<&[String]>) -> Result<usize> {
    let (index, value) = match labels {
        Some(labels) => {
            let value = values.as_string::<i32>().value(row);
            (labels.iter().position(|l| l == value), format!("{value:?}"))
        }
        None => {
            let value = values.as_primitive::<Float64Type>().value(row);
            let whole = value.fract() == 0.0 && (0.0..u32::MAX as f64).contains(&value);
            (whole.then_some(value as usize), value.to_string())
        }
    };
    index.ok_or_else(|| {
        invalid_option(
            "auto_class_weights",
            format!("label {label} has the value {value}, which is no class (a whole number ≥ 0 or one of the indexed labels)"),
        )
    })
}
