//! `ml_label_counts(column)`: how often each label occurs, the aggregate a `StringIndexer` is fitted with.

use std::mem::size_of;
use std::sync::{Arc, LazyLock};

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Int64Array, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Fields, Int64Type};
use datafusion::common::HashMap;
use datafusion::common::cast::as_list_array;
use datafusion::common::{ScalarValue, plan_err};
use datafusion::error::Result;
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{Accumulator, AggregateUDF, AggregateUDFImpl, Documentation, Signature, Volatility};
use hearth_exec::udf::ML_DOC_SECTION;
use hearth_exec::udf::list_state::{list_scalar, list_type, struct_scalar};

use super::label_keys::{KeyCounts, KeyKind, KeyedValues};
use super::spark_string::{is_indexable, spark_strings};

/// The SQL name.
pub const NAME: &str = "ml_label_counts";

/// Counts each distinct non-null label of a string or numeric column (numbers cast to strings as Spark does,
/// NaN not counted), returning `{labels: [..], counts: [..]}` in no particular order. Distributes as a
/// partial/final aggregate.
///
/// ```sql
/// SELECT ml_label_counts(purpose) FROM credit
/// ```
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct LabelCountsUdaf {
    signature: Signature,
}

impl Default for LabelCountsUdaf {
    fn default() -> Self {
        Self {
            signature: Signature::any(1, Volatility::Immutable),
        }
    }
}

fn output_fields() -> Fields {
    Fields::from(vec![
        Field::new("labels", list_type(DataType::Utf8), true),
        Field::new("counts", list_type(DataType::Int64), true),
    ])
}

/// `ml_label_counts`, built once.
pub(crate) static LABEL_COUNTS: LazyLock<Arc<AggregateUDF>> =
    LazyLock::new(|| Arc::new(AggregateUDF::from(LabelCountsUdaf::default())));

/// The SQL documentation of `ml_label_counts`.
static DOCS: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        ML_DOC_SECTION,
        "How often each distinct non-null label of a string, boolean or numeric column occurs (numbers and \
         booleans cast to strings as Spark casts them, NaN not counted): what `StringIndexer` is fitted with. \
         Returns a struct `{labels: List<Utf8>, counts: List<Int64>}`, the labels in no particular order; a column \
         of any other type fails planning.",
        "ml_label_counts(column)",
    )
    .with_argument(
        "column",
        "The string, boolean or numeric column whose labels are counted.",
    )
    .with_sql_example("```sql\nSELECT ml_label_counts(purpose) AS counts FROM credit\n```")
    .build()
});

impl AggregateUDFImpl for LabelCountsUdaf {
    fn name(&self) -> &str {
        NAME
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        if !is_indexable(&arg_types[0]) {
            return plan_err!(
                "StringIndexer: cannot index a column of type {}; string or numeric only",
                arg_types[0]
            );
        }
        Ok(DataType::Struct(output_fields()))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(vec![
            Arc::new(Field::new(
                format!("{}[labels]", args.name),
                list_type(DataType::Utf8),
                true,
            )),
            Arc::new(Field::new(
                format!("{}[counts]", args.name),
                list_type(DataType::Int64),
                true,
            )),
        ])
    }

    fn accumulator(&self, _args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        Ok(Box::<LabelCounts>::default())
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(&DOCS)
    }
}

/// Running label counts. Numbers and short strings are counted by key and turned into Spark's strings only
/// when the state is read, so a million values cost a million integer comparisons, not a million strings.
#[derive(Debug, Default)]
struct LabelCounts {
    counts: HashMap<String, i64>,
    keyed: KeyCounts,
    /// What the keys in `keyed` hold (one column, so one kind).
    kind: Option<KeyKind>,
}

impl LabelCounts {
    /// Moves the numeric counts into the string counts.
    fn flush(&mut self) {
        let Some(kind) = self.kind else { return };
        let keyed: Vec<(u64, i64)> = self.keyed.take().collect();
        for (key, count) in keyed {
            self.add(&kind.label(key), count);
        }
    }

    fn add(&mut self, label: &str, count: i64) {
        match self.counts.get_mut(label) {
            Some(c) => *c += count,
            None => {
                self.counts.insert(label.to_string(), count);
            }
        }
    }

    fn columns(&self) -> (ArrayRef, ArrayRef) {
        let labels: StringArray = self.counts.keys().map(Some).collect();
        let counts = Int64Array::from_iter_values(self.counts.values().copied());
        (Arc::new(labels), Arc::new(counts))
    }
}

impl Accumulator for LabelCounts {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        if let Some(keyed) = KeyedValues::of(&values[0]) {
            self.kind = Some(keyed.kind);
            self.keyed.add(&keyed);
            return Ok(());
        }
        for label in spark_strings(&values[0])?.iter().flatten() {
            self.add(label, 1);
        }
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let labels = as_list_array(&states[0])?;
        let counts = as_list_array(&states[1])?;
        for row in 0..labels.len() {
            if labels.is_null(row) {
                continue;
            }
            let row_labels = labels.value(row);
            let row_counts = counts.value(row);
            let row_labels = row_labels.as_string::<i32>();
            let row_counts = row_counts.as_primitive::<Int64Type>();
            for (label, count) in row_labels.iter().zip(row_counts.iter()) {
                if let (Some(label), Some(count)) = (label, count) {
                    self.add(label, count);
                }
            }
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        self.flush();
        let (labels, counts) = self.columns();
        Ok(vec![list_scalar(labels)?, list_scalar(counts)?])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        self.flush();
        let (labels, counts) = self.columns();
        let labels = list_scalar(labels)?.to_array()?;
        let counts = list_scalar(counts)?.to_array()?;
        struct_scalar(output_fields(), vec![labels, counts])
    }

    fn size(&self) -> usize {
        size_of::<Self>()
            + self
                .counts
                .keys()
                .map(|k| k.capacity() + size_of::<String>() + size_of::<i64>())
                .sum::<usize>()
            + self.keyed.len() * size_of::<(u64, i64)>()
    }
}
