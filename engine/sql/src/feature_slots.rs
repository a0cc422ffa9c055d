//! What each slot of a model's features vector is, traced back to the training query's columns through the
//! automatic preprocessing: a number column (with the mean and standard deviation it was standardized by) or
//! one category of a string column. `ML.CENTROIDS` and `ML.WEIGHTS` report in these columns' units.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, Fields};
use datafusion::common::ScalarValue;
use datafusion::common::scalar::ScalarStructBuilder;
use hearth_exec::error::Result;
use hearth_preprocessing::feature::{OneHotEncoderModel, StandardScalerModel, StringIndexerModel, VectorAssembler};
use hearth_preprocessing::stage::Transformer;

use super::catalog::CatalogModel;
use super::preprocessing::{NUMBERS, SCALED_NUMBERS, index_column, one_hot_column};

/// What a slot of a model's features vector is.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Slot {
    /// A number column, standardized with this mean and standard deviation (0 and 1 when it was not).
    Number { feature: String, mean: f64, std: f64 },
    /// One category of a string column.
    Category { feature: String, category: String },
}

/// The `width` slots of a model's features vector, named after the query's columns when the automatic
/// preprocessing made it, after the `TRANSFORM`'s outputs when one did (BigQuery's processed inputs); when
/// they cannot be traced, `features[0]`, `features[1]`, ….
pub(crate) fn slots(model: &CatalogModel, width: usize) -> Vec<Slot> {
    let generic = || {
        (0..width)
            .map(|i| Slot::Number {
                feature: format!("features[{i}]"),
                mean: 0.0,
                std: 1.0,
            })
            .collect()
    };
    if model.entry.transform.is_some() {
        let slots = transform_slots(model);
        return if slots.len() == width { slots } else { generic() };
    }
    let stages = model.pipeline.stages();
    let find =
        |predicate: &dyn Fn(&dyn Transformer) -> bool| stages.iter().find(|stage| predicate(stage.as_ref())).cloned();
    let mut slots = Vec::with_capacity(width);
    for output in &model.entry.features {
        if output == NUMBERS || output == SCALED_NUMBERS {
            let Some(assembler) = find(&|s| {
                s.downcast_ref::<VectorAssembler>()
                    .is_some_and(|a| a.get_output_col() == NUMBERS)
            }) else {
                return generic();
            };
            let columns = assembler
                .downcast_ref::<VectorAssembler>()
                .map_or(&[][..], |a| a.get_input_cols());
            let scaler = find(&|s| {
                s.downcast_ref::<StandardScalerModel>()
                    .is_some_and(|m| m.get_output_col() == SCALED_NUMBERS)
            });
            let scaler = scaler.as_ref().and_then(|s| s.downcast_ref::<StandardScalerModel>());
            for (i, column) in columns.iter().enumerate() {
                let (mean, std) = match (output == SCALED_NUMBERS, scaler) {
                    (true, Some(scaler)) => (scaler.mean()[i], scaler.std()[i]),
                    _ => (0.0, 1.0),
                };
                slots.push(Slot::Number {
                    feature: column.clone(),
                    mean,
                    std,
                });
            }
            continue;
        }
        let Some(column) = model.entry.inputs.iter().find(|c| one_hot_column(c) == *output) else {
            return generic();
        };
        let index = index_column(column);
        let labels = find(&|s| {
            s.downcast_ref::<StringIndexerModel>()
                .is_some_and(|m| m.get_output_cols().contains(&index))
        });
        let labels = labels
            .as_ref()
            .and_then(|s| s.downcast_ref::<StringIndexerModel>())
            .map(|m| m.labels()[0].clone());
        let encoder = find(&|s| {
            s.downcast_ref::<OneHotEncoderModel>()
                .is_some_and(|m| m.get_output_cols().contains(output))
        });
        let (Some(labels), Some(encoder)) = (labels, encoder) else {
            return generic();
        };
        let slot_count = encoder
            .downcast_ref::<OneHotEncoderModel>()
            .map_or(0, |e| e.output_widths()[0]);
        for i in 0..slot_count {
            slots.push(Slot::Category {
                feature: column.clone(),
                category: labels.get(i).cloned().unwrap_or_else(|| "(unseen)".to_string()),
            });
        }
    }
    if slots.len() == width { slots } else { generic() }
}

/// The slots of a `TRANSFORM` model's features, output by output: a one-hot output's categories (named by the
/// indexer before it), a vector output's `name[0]`, `name[1]`, …, and a number output itself. They are in the
/// transform's units: the model was fitted on them.
fn transform_slots(model: &CatalogModel) -> Vec<Slot> {
    let stages = model.pipeline.stages();
    let mut slots = Vec::new();
    for output in &model.entry.features {
        if let Some(categories) = one_hot_categories(stages, output) {
            slots.extend(categories.into_iter().map(|category| Slot::Category {
                feature: output.clone(),
                category,
            }));
            continue;
        }
        let number = |feature: String| Slot::Number {
            feature,
            mean: 0.0,
            std: 1.0,
        };
        match output_width(stages, output, 0) {
            1 => slots.push(number(output.clone())),
            width => slots.extend((0..width).map(|i| number(format!("{output}[{i}]")))),
        }
    }
    slots
}

/// The categories a one-hot encoder's `output` holds, one per slot, when a fitted encoder made it from an
/// indexed string column.
fn one_hot_categories(stages: &[Arc<dyn Transformer>], output: &str) -> Option<Vec<String>> {
    let (encoder, k) = stages.iter().find_map(|stage| {
        let encoder = stage.downcast_ref::<OneHotEncoderModel>()?;
        let k = encoder.get_output_cols().iter().position(|c| c == output)?;
        Some((encoder, k))
    })?;
    let index = encoder.get_input_cols().get(k)?;
    let labels = stages.iter().find_map(|stage| {
        let indexer = stage.downcast_ref::<StringIndexerModel>()?;
        let j = indexer.get_output_cols().iter().position(|c| c == index)?;
        indexer.labels().get(j).cloned()
    })?;
    let width = encoder.output_widths()[k];
    Some(
        (0..width)
            .map(|i| labels.get(i).cloned().unwrap_or_else(|| "(unseen)".to_string()))
            .collect(),
    )
}

/// How many slots `column` takes in the features vector: a fitted stage's vector output its width (an
/// assembler's, the sum of its inputs', `depth` assemblers down), any other column one.
fn output_width(stages: &[Arc<dyn Transformer>], column: &str, depth: usize) -> usize {
    if depth > stages.len() {
        return 1;
    }
    for stage in stages {
        if let Some(encoder) = stage.downcast_ref::<OneHotEncoderModel>()
            && let Some(k) = encoder.get_output_cols().iter().position(|c| c == column)
        {
            return encoder.output_widths()[k];
        }
        if let Some(scaler) = stage.downcast_ref::<StandardScalerModel>()
            && scaler.get_output_col() == column
        {
            return scaler.mean().len();
        }
        if let Some(assembler) = stage.downcast_ref::<VectorAssembler>()
            && assembler.get_output_col() == column
        {
            return (assembler.get_input_cols().iter())
                .map(|input| output_width(stages, input, depth + 1))
                .sum();
        }
    }
    1
}

/// A query column's share of a vector over the features' slots: a number column's one value, or a string
/// column's value for each category.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum ColumnValue {
    /// A number column's value, in its units.
    Number(f64),
    /// A string column's value per category, in the slots' order.
    Categories(Vec<(String, f64)>),
}

/// `values` (one per slot) gathered by the column each slot comes from, in slot order; `number` gives a number
/// slot's value in its column's units from the value, the column's mean and its standard deviation.
pub(crate) fn by_column(
    slots: &[Slot],
    values: &[f64],
    number: impl Fn(f64, f64, f64) -> f64,
) -> Vec<(String, ColumnValue)> {
    let mut columns: Vec<(String, ColumnValue)> = Vec::new();
    for (slot, &value) in slots.iter().zip(values) {
        match slot {
            Slot::Number { feature, mean, std } => {
                columns.push((feature.clone(), ColumnValue::Number(number(value, *mean, *std))));
            }
            Slot::Category { feature, category } => match columns.last_mut() {
                Some((last, ColumnValue::Categories(categories))) if last == feature => {
                    categories.push((category.clone(), value));
                }
                _ => columns.push((
                    feature.clone(),
                    ColumnValue::Categories(vec![(category.clone(), value)]),
                )),
            },
        }
    }
    columns
}

/// The type of a list of `{category, <value_field>}` structs.
pub(crate) fn category_list_type(value_field: &str) -> DataType {
    DataType::new_list(category_struct(value_field), true)
}

fn category_struct(value_field: &str) -> DataType {
    DataType::Struct(Fields::from(vec![
        Field::new("category", DataType::Utf8, false),
        Field::new(value_field, DataType::Float64, false),
    ]))
}

/// `categories` as a list of `{category, <value_field>}` structs.
pub(crate) fn category_list(categories: &[(String, f64)], value_field: &str) -> Result<ScalarValue> {
    let values = categories
        .iter()
        .map(|(name, value)| {
            ScalarStructBuilder::new()
                .with_scalar(
                    Field::new("category", DataType::Utf8, false),
                    ScalarValue::from(name.as_str()),
                )
                .with_scalar(
                    Field::new(value_field, DataType::Float64, false),
                    ScalarValue::Float64(Some(*value)),
                )
                .build()
        })
        .collect::<datafusion::common::Result<Vec<_>>>()?;
    Ok(ScalarValue::List(ScalarValue::new_list_nullable(
        &values,
        &category_struct(value_field),
    )))
}
