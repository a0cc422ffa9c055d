//! `StringIndexer`: maps string (or numeric) labels to indices ordered by frequency or alphabet.

use std::cmp::Ordering;

use datafusion::arrow::array::{AsArray, RecordBatch};
use datafusion::arrow::datatypes::Int64Type;
use datafusion::logical_expr::{Expr, ident, lit};
use datafusion::prelude::DataFrame;
use hearth_common::params::{HandleInvalid, StringOrderType, new_uid};
use hearth_exec::error::{HearthError, Result};
use hearth_exec::udf::args::string_list_literal;
use serde::{Deserialize, Serialize};

mod label_counts;
mod label_keys;
mod spark_string;
mod string_index;

pub(crate) use label_counts::LABEL_COUNTS;
pub use label_counts::LabelCountsUdaf;
use spark_string::is_indexable;
pub(crate) use string_index::STRING_INDEX;
pub use string_index::StringIndexUdf;

use crate::stage::{
    Estimator, Transformer, check_column_pairs, column_pair_setters, ensure_new_column, input_field, serde_stage,
};

/// Spark's `StringIndexer`, single- or multi-column: fitting counts every distinct non-null label (numbers
/// cast to strings as Spark casts them: `1` → `"1"`, `1.0` → `"1.0"`), then orders the labels by
/// `string_order_type` (default `frequencyDesc`; frequency ties break alphabetically ascending in both
/// frequency orders). Index 0 is the first label.
///
/// `handle_invalid` applies to nulls and labels not seen in fitting: `error` (default) fails naming the
/// column and value, `skip` drops the row (if any indexed column is invalid), `keep` maps them to index
/// `len(labels)`, and the output metadata gains an `__unknown` label. Unlike Spark, which fits an empty
/// label list, fitting a column with no non-null value is an error.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use hearth_exec::session::Session;
/// use hearth_preprocessing::functions::PreprocessingFeature;
/// use hearth_preprocessing::{feature::StringIndexer, stage::Estimator};
/// let session = Session::builder().with_preprocessing().local(1);
/// let df = session.context().sql("SELECT * FROM (VALUES ('b'), ('a'), ('b'), ('a'), ('c')) AS t(x)").await.unwrap();
/// let model = StringIndexer::new().input_col("x").output_col("i").fit(&df).await.unwrap();
/// assert_eq!(model.labels()[0], ["a", "b", "c"]);
/// # });
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct StringIndexer {
    uid: String,
    input_cols: Vec<String>,
    output_cols: Vec<String>,
    handle_invalid: HandleInvalid,
    string_order_type: StringOrderType,
}

impl Default for StringIndexer {
    fn default() -> Self {
        Self::new()
    }
}

impl StringIndexer {
    /// An indexer with Spark's defaults.
    pub fn new() -> Self {
        Self {
            uid: new_uid("StringIndexer"),
            input_cols: Vec::new(),
            output_cols: Vec::new(),
            handle_invalid: HandleInvalid::Error,
            string_order_type: StringOrderType::FrequencyDesc,
        }
    }

    column_pair_setters!();

    /// What to do with nulls and unseen labels.
    pub fn handle_invalid(mut self, handle_invalid: HandleInvalid) -> Self {
        self.handle_invalid = handle_invalid;
        self
    }

    /// How labels are ordered.
    pub fn string_order_type(mut self, order: StringOrderType) -> Self {
        self.string_order_type = order;
        self
    }
}

impl StringIndexer {
    /// The input and output columns.
    pub fn columns(&self) -> (&[String], &[String]) {
        (&self.input_cols, &self.output_cols)
    }

    /// Takes `other`'s columns into this indexer when both index alike (the same `handle_invalid` and order):
    /// one multi-column indexer fits in one query what two would fit in two, with the same labels.
    pub fn absorb(&mut self, other: &StringIndexer) -> bool {
        let alike = self.handle_invalid == other.handle_invalid && self.string_order_type == other.string_order_type;
        if alike {
            self.input_cols.extend(other.input_cols.iter().cloned());
            self.output_cols.extend(other.output_cols.iter().cloned());
        }
        alike
    }
}

/// Orders `(label, count)` pairs as Spark's `StringIndexer` does.
fn order_labels(mut counts: Vec<(String, i64)>, order: StringOrderType) -> Vec<String> {
    // Java compares strings by UTF-16 code units.
    let java_cmp = |a: &str, b: &str| a.encode_utf16().cmp(b.encode_utf16());
    counts.sort_by(|(a, ca), (b, cb)| -> Ordering {
        match order {
            StringOrderType::FrequencyDesc => cb.cmp(ca).then_with(|| java_cmp(a, b)),
            StringOrderType::FrequencyAsc => ca.cmp(cb).then_with(|| java_cmp(a, b)),
            StringOrderType::AlphabetDesc => java_cmp(b, a),
            StringOrderType::AlphabetAsc => java_cmp(a, b),
        }
    });
    counts.into_iter().map(|(label, _)| label).collect()
}

/// `(label, count)` pairs from column `i` of the `ml_label_counts` result row.
fn read_counts(batch: &RecordBatch, i: usize) -> Vec<(String, i64)> {
    let summary = batch.column(i).as_struct();
    let labels = summary.column(0).as_list::<i32>().value(0);
    let counts = summary.column(1).as_list::<i32>().value(0);
    labels
        .as_string::<i32>()
        .iter()
        .zip(counts.as_primitive::<Int64Type>().iter())
        .filter_map(|(l, c)| Some((l?.to_string(), c?)))
        .collect()
}

impl Estimator for StringIndexer {
    type Model = StringIndexerModel;

    async fn fit(&self, df: &DataFrame) -> Result<StringIndexerModel> {
        check_column_pairs(&self.uid, &self.input_cols, &self.output_cols)?;
        for column in &self.input_cols {
            let field = input_field(&self.uid, df, column)?;
            if !is_indexable(field.data_type()) {
                return Err(HearthError::schema(
                    &self.uid,
                    column,
                    format!("has type {}; string or numeric columns only", field.data_type()),
                ));
            }
        }
        let aggregates: Vec<Expr> = self
            .input_cols
            .iter()
            .enumerate()
            .map(|(i, c)| LABEL_COUNTS.call(vec![ident(c)]).alias(format!("labels_{i}")))
            .collect();
        let batches = df.clone().aggregate(vec![], aggregates)?.collect().await?;
        let batch = batches.iter().find(|b| b.num_rows() > 0).ok_or_else(|| {
            HearthError::invalid_data(&self.uid, &self.input_cols[0], "the fitting query returned no row")
        })?;
        let mut labels = Vec::with_capacity(self.input_cols.len());
        for (i, column) in self.input_cols.iter().enumerate() {
            let counts = read_counts(batch, i);
            if counts.is_empty() {
                return Err(HearthError::invalid_data(
                    &self.uid,
                    column,
                    "no labels to index: the input has no non-null values in this column",
                ));
            }
            labels.push(order_labels(counts, self.string_order_type));
        }
        Ok(StringIndexerModel {
            uid: self.uid.clone(),
            input_cols: self.input_cols.clone(),
            output_cols: self.output_cols.clone(),
            handle_invalid: self.handle_invalid,
            labels,
        })
    }
}

crate::stage_class!(estimator StringIndexer);
crate::stage_example!(
    StringIndexer,
    StringIndexer::new().input_col("text").output_col("text_index")
);

/// A fitted [`StringIndexer`]: the ordered labels of each input column (Spark's `labelsArray`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StringIndexerModel {
    uid: String,
    input_cols: Vec<String>,
    output_cols: Vec<String>,
    handle_invalid: HandleInvalid,
    labels: Vec<Vec<String>>,
}

impl StringIndexerModel {
    /// The labels of each input column, index `i` of each list being label `i`.
    pub fn labels(&self) -> &[Vec<String>] {
        &self.labels
    }

    /// The indexed columns.
    pub fn get_input_cols(&self) -> &[String] {
        &self.input_cols
    }

    /// The index columns added.
    pub fn get_output_cols(&self) -> &[String] {
        &self.output_cols
    }

    /// A copy that treats invalid values differently (Spark lets a fitted model's `handleInvalid` change).
    pub fn with_handle_invalid(mut self, handle_invalid: HandleInvalid) -> Self {
        self.handle_invalid = handle_invalid;
        self
    }
}

impl Transformer for StringIndexerModel {
    fn transform(&self, df: &DataFrame) -> Result<DataFrame> {
        check_column_pairs(&self.uid, &self.input_cols, &self.output_cols)?;
        // As Spark: an input column missing at transform time is skipped.
        let present: Vec<usize> = (0..self.input_cols.len())
            .filter(|&i| df.schema().field_with_unqualified_name(&self.input_cols[i]).is_ok())
            .collect();
        let mut out = df.clone();
        let mut valid: Option<Expr> = None;
        for &i in &present {
            let (input, output, labels) = (&self.input_cols[i], &self.output_cols[i], &self.labels[i]);
            ensure_new_column(&self.uid, &out, output)?;
            let mode = match self.handle_invalid {
                HandleInvalid::Skip => HandleInvalid::Keep,
                other => other,
            };
            let index = STRING_INDEX.call(vec![ident(input), lit(string_list_literal(labels)), lit(mode.as_str())]);
            out = out.with_column(output, index)?;
            let known = ident(output).lt(lit(labels.len() as f64));
            valid = Some(match valid {
                Some(v) => v.and(known),
                None => known,
            });
        }
        if self.handle_invalid == HandleInvalid::Skip
            && let Some(predicate) = valid
        {
            out = out.filter(predicate)?;
        }
        Ok(out)
    }
}

crate::stage_class!(transformer StringIndexerModel);

impl StringIndexer {
    /// What [`Stage::describe`] says.
    fn summary(&self) -> String {
        format!(
            "{} columns, {:?}, handleInvalid={}",
            self.input_cols.len(),
            self.string_order_type,
            self.handle_invalid
        )
    }
}

serde_stage!(StringIndexer, "StringIndexer", summary);

impl StringIndexerModel {
    /// What [`Stage::describe`] says.
    fn summary(&self) -> String {
        format!(
            "{} columns, {} labels",
            self.labels.len(),
            self.labels.iter().map(Vec::len).sum::<usize>()
        )
    }
}

serde_stage!(StringIndexerModel, "StringIndexerModel", summary);

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(pairs: &[(&str, i64)]) -> Vec<(String, i64)> {
        pairs.iter().map(|(l, c)| (l.to_string(), *c)).collect()
    }

    #[test]
    fn frequency_ties_break_alphabetically_in_both_directions() {
        let data = counts(&[("b", 2), ("a", 2), ("c", 1)]);
        assert_eq!(
            order_labels(data.clone(), StringOrderType::FrequencyDesc),
            ["a", "b", "c"]
        );
        assert_eq!(order_labels(data, StringOrderType::FrequencyAsc), ["c", "a", "b"]);
    }

    #[test]
    fn numeric_labels_sort_as_strings() {
        let data = counts(&[("10", 1), ("2", 1), ("1", 1)]);
        assert_eq!(
            order_labels(data.clone(), StringOrderType::AlphabetAsc),
            ["1", "10", "2"]
        );
        assert_eq!(order_labels(data, StringOrderType::AlphabetDesc), ["2", "10", "1"]);
    }
}
