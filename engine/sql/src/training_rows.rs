//! What a `CREATE MODEL`'s training rows must hold before anything trains, as BigQuery ML asks: a
//! classifier's label two classes or more (Spark only warns, and trains a model that knows one answer),
//! k-means at least `num_clusters` distinct rows. Each check reads at most a few distinct values.

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::DataType;
use datafusion::logical_expr::{cast, ident};
use datafusion::prelude::DataFrame;
use hearth_exec::error::{HearthError, Result};

use super::error::{CREATE_MODEL, invalid_option};
use super::options::ModelOptions;

/// Refuses training rows the model cannot learn from: `train` are the training rows, `inputs` the columns
/// the preprocessing reads.
pub(super) async fn check_training_rows(train: &DataFrame, options: &ModelOptions, inputs: &[String]) -> Result<()> {
    if options.model_type.is_classifier() {
        check_classes(train, &options.label).await
    } else if !options.model_type.is_network() {
        check_distinct_rows(train, inputs, options.num_clusters).await
    } else {
        Ok(())
    }
}

/// A classifier's label must hold two classes or more among the training rows (nulls aside).
async fn check_classes(train: &DataFrame, label: &str) -> Result<()> {
    let classes = train
        .clone()
        .filter(ident(label).is_not_null())?
        .select(vec![cast(ident(label), DataType::Utf8).alias("class")])?
        .distinct()?
        .limit(0, Some(2))?
        .collect()
        .await?;
    let values: Vec<String> = classes
        .iter()
        .flat_map(|batch| {
            let column = batch.column(0).as_string::<i32>();
            (0..column.len())
                .map(|i| column.value(i).to_string())
                .collect::<Vec<_>>()
        })
        .collect();
    match values.as_slice() {
        [one] => Err(HearthError::invalid_data(
            CREATE_MODEL,
            label,
            format!(
                "every training row's label is {one:?}: a classifier needs two classes or more (train on rows \
                 that hold another class, or a regressor)"
            ),
        )),
        _ => Ok(()),
    }
}

/// k-means needs `num_clusters` distinct rows of its inputs to place that many centres.
async fn check_distinct_rows(train: &DataFrame, inputs: &[String], clusters: usize) -> Result<()> {
    let distinct = train
        .clone()
        .select(inputs.iter().map(ident).collect::<Vec<_>>())?
        .distinct()?
        .limit(0, Some(clusters))?
        .count()
        .await?;
    if distinct < clusters {
        return Err(invalid_option(
            "num_clusters",
            format!(
                "the training rows hold {distinct} distinct rows of {}, fewer than num_clusters = {clusters}",
                inputs.join(", ")
            ),
        ));
    }
    Ok(())
}
