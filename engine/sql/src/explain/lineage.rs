//! Which of the training query's columns each slot of a model's features vector comes from, traced through
//! the fitted preprocessing by the stages' input and output columns: an assembler's slots are its inputs'
//! slots in order, a scaler's are its input's slot by slot, and every other stage's output (an index, a
//! one-hot vector, a SQL expression) comes from all of its inputs together.

use std::collections::{BTreeSet, HashMap};

use datafusion::prelude::DataFrame;
use hearth_exec::error::{HearthError, Result};
use hearth_exec::vector::vector_dim;
use hearth_preprocessing::pipeline::PipelineModel;
use hearth_preprocessing::stage::Transformer;
use serde_json::Value;

/// Per column, the source columns of each of its slots.
type Lineage = HashMap<String, Vec<BTreeSet<String>>>;

/// The sources of each slot of `features`, the vector the last stage of `pipeline` reads, for rows like
/// `input`: one name per slot (several joined with `, ` where a slot mixes columns).
pub(crate) fn slot_sources(pipeline: &PipelineModel, input: &DataFrame, features: &str) -> Result<Vec<String>> {
    let mut lineage: Lineage = HashMap::new();
    for field in input.schema().fields() {
        let width = vector_dim(field.data_type()).unwrap_or(1);
        lineage.insert(
            field.name().clone(),
            vec![BTreeSet::from([field.name().clone()]); width],
        );
    }
    let preprocessing = &pipeline.stages()[..pipeline.stages().len().saturating_sub(1)];
    let mut df = input.clone();
    for stage in preprocessing {
        let next = stage.transform(&df)?;
        for (inputs, output) in column_pairs(stage.as_ref(), &df)? {
            let width = next
                .schema()
                .field_with_unqualified_name(&output)
                .map_or(1, |f| vector_dim(f.data_type()).unwrap_or(1));
            let sources = |column: &String| lineage.get(column).cloned().unwrap_or_default();
            let slots = match stage.class() {
                "VectorAssembler" => inputs.iter().flat_map(sources).collect(),
                "StandardScalerModel" => sources(&inputs[0]),
                _ => vec![inputs.iter().flat_map(sources).flatten().collect(); width],
            };
            lineage.insert(output, slots);
        }
        df = next;
    }
    let slots = lineage.remove(features).ok_or_else(|| {
        HearthError::invalid_data(
            "explanations",
            features,
            "the preprocessing does not make the features column",
        )
    })?;
    Ok(slots
        .into_iter()
        .map(|sources| sources.into_iter().collect::<Vec<_>>().join(", "))
        .collect())
}

/// A stage's (inputs, output) pairs, from its parameters: `inputCol`/`outputCol`, `inputCols`/`outputCols`
/// pairwise (an assembler's `inputCols` all make its `outputCol`), or a `SqlColumns` stage's expressions and
/// the columns they read.
fn column_pairs(stage: &dyn Transformer, df: &DataFrame) -> Result<Vec<(Vec<String>, String)>> {
    let params = stage.params()?;
    let text = |key: &str| params.get(key).and_then(Value::as_str).map(str::to_string);
    let list = |key: &str| -> Option<Vec<String>> {
        params
            .get(key)?
            .as_array()?
            .iter()
            .map(|v| v.as_str().map(str::to_string))
            .collect()
    };
    if let Some(columns) = params.get("columns").and_then(Value::as_array) {
        let mut pairs = Vec::new();
        for column in columns {
            let (Some(name), Some(expression)) = (
                column.get("name").and_then(Value::as_str),
                column.get("expression").and_then(Value::as_str),
            ) else {
                continue;
            };
            let read = df
                .parse_sql_expr(expression)?
                .column_refs()
                .into_iter()
                .map(|c| c.name.clone())
                .collect();
            pairs.push((read, name.to_string()));
        }
        return Ok(pairs);
    }
    Ok(
        match (
            text("inputCol"),
            text("outputCol"),
            list("inputCols"),
            list("outputCols"),
        ) {
            (Some(input), Some(output), _, _) => vec![(vec![input], output)],
            (_, Some(output), Some(inputs), _) => vec![(inputs, output)],
            (_, _, Some(inputs), Some(outputs)) => inputs.into_iter().zip(outputs).map(|(i, o)| (vec![i], o)).collect(),
            _ => Vec::new(),
        },
    )
}
