//! `ml_roc_curve(state, thresholds)` and `ml_confusion(state)`: an evaluation aggregate's state as a list of
//! rows — the ROC curve's counts per threshold, the confusion matrix's weight per (label, prediction) pair —
//! which a plan unnests into a table (`ML.ROC_CURVE`, `ML.CONFUSION_MATRIX`). The plots of
//! `hearth-display` draw the same numbers from the same states.
//!
//! ```sql
//! SELECT r.* FROM (
//!   SELECT unnest(ml_roc_curve(ml_binary_state(probability_of_1, label, 1.0), [0.25, 0.5, 0.75])) AS r
//!   FROM scored)
//! ```

use std::sync::{Arc, LazyLock};

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Float64Builder, ListBuilder, StructBuilder};
use datafusion::arrow::datatypes::{DataType, Field, Fields};
use datafusion::common::plan_err;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, Documentation, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use hearth_exec::udf::ML_DOC_SECTION;
use hearth_exec::udf::args::{as_f64_list, constant};
use hearth_stats::evaluation::{BinaryState, MulticlassState};

/// The bins of the ROC curve when no thresholds are given: about a hundred thresholds, each the lowest of a
/// run of distinct scores (Spark's down-sampling).
pub const ROC_BINS: usize = 100;

/// The columns of `ml_roc_curve`'s rows.
pub const ROC_COLUMNS: [&str; 5] = [
    "threshold",
    "true_positives",
    "false_positives",
    "true_negatives",
    "false_negatives",
];

/// The columns of `ml_confusion`'s rows.
pub const CONFUSION_COLUMNS: [&str; 3] = ["label", "prediction", "weight"];

/// Which table of a state a [`StateRowsUdf`] reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StateTable {
    /// `ml_roc_curve(binary_state, thresholds)`: [`ROC_COLUMNS`] per threshold, highest first; an empty list
    /// of thresholds takes [`ROC_BINS`] from the scores.
    RocCurve,
    /// `ml_confusion(multiclass_state)`: [`CONFUSION_COLUMNS`] per pair seen, by label then prediction.
    Confusion,
}

impl StateTable {
    fn name(self) -> &'static str {
        match self {
            StateTable::RocCurve => "ml_roc_curve",
            StateTable::Confusion => "ml_confusion",
        }
    }

    fn columns(self) -> &'static [&'static str] {
        match self {
            StateTable::RocCurve => &ROC_COLUMNS,
            StateTable::Confusion => &CONFUSION_COLUMNS,
        }
    }

    fn fields(self) -> Fields {
        self.columns()
            .iter()
            .map(|name| Field::new(*name, DataType::Float64, true))
            .collect()
    }
}

/// A scalar function from an evaluation state's bytes to a list of rows (structs of numbers).
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct StateRowsUdf {
    table: StateTable,
    signature: Signature,
}

impl StateRowsUdf {
    /// The function reading `table`.
    pub fn new(table: StateTable) -> Self {
        let arguments = match table {
            StateTable::RocCurve => 2,
            StateTable::Confusion => 1,
        };
        Self {
            table,
            signature: Signature::any(arguments, Volatility::Immutable),
        }
    }
}

/// `ml_roc_curve` and `ml_confusion`, built once.
pub(crate) static STATE_ROWS: LazyLock<[Arc<ScalarUDF>; 2]> = LazyLock::new(|| {
    [StateTable::RocCurve, StateTable::Confusion].map(|table| Arc::new(ScalarUDF::from(StateRowsUdf::new(table))))
});

/// The SQL documentation of `ml_roc_curve`.
static ROC_CURVE_DOCS: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        ML_DOC_SECTION,
        "The ROC curve's counts of a binary evaluation state (`ml_binary_state`), as a `List` of structs \
         `{threshold, true_positives, false_positives, true_negatives, false_negatives}` (all `Float64`, the counts \
         as weights of rows), one per threshold; `unnest` makes it a table (`ML.ROC_CURVE`). A row is predicted \
         positive when its score is at least the threshold. A null state gives null; a threshold outside `[0, 1]` \
         fails the query.",
        "ml_roc_curve(binary_state, thresholds)",
    )
    .with_argument("binary_state", "The `Binary` bytes `ml_binary_state` returned.")
    .with_argument(
        "thresholds",
        "The thresholds, a numeric list constant, in the order the rows come in. An empty list (`[]`) takes them \
         from the scores instead, highest first: every distinct score or, from 200 of them on, the lowest score \
         of each run of ⌊n/100⌋ scores (100 to 199 groups: Spark's down-sampling).",
    )
    .with_sql_example(
        "```sql\nSELECT ml_roc_curve(state, [0.25, 0.5, 0.75]) AS curve\n\
         FROM (SELECT ml_binary_state(probability, label, 1.0) AS state FROM scored)\n```",
    )
    .build()
});

/// The SQL documentation of `ml_confusion`.
static CONFUSION_DOCS: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        ML_DOC_SECTION,
        "The confusion matrix of a multiclass evaluation state (`ml_multiclass_state`), as a `List` of structs \
         `{label, prediction, weight}` (all `Float64`), one per (label, prediction) pair the rows hold, by label \
         then prediction; `unnest` makes it a table (`ML.CONFUSION_MATRIX`). A null state gives null.",
        "ml_confusion(multiclass_state)",
    )
    .with_argument("multiclass_state", "The `Binary` bytes `ml_multiclass_state` returned.")
    .with_sql_example(
        "```sql\nSELECT ml_confusion(state) AS matrix\n\
         FROM (SELECT ml_multiclass_state(label, prediction, 1.0) AS state FROM scored)\n```",
    )
    .build()
});

/// The function reading `table`, as registered.
pub fn state_rows(table: StateTable) -> Arc<ScalarUDF> {
    Arc::clone(&STATE_ROWS[usize::from(table == StateTable::Confusion)])
}

impl StateRowsUdf {
    fn failed(&self, message: impl std::fmt::Display) -> DataFusionError {
        DataFusionError::Execution(format!("{}: {message}", self.table.name()))
    }

    /// The rows of one state.
    fn rows(&self, bytes: &[u8], thresholds: &[f64]) -> Result<Vec<Vec<f64>>> {
        Ok(match self.table {
            StateTable::RocCurve => {
                let state = BinaryState::from_bytes(bytes).map_err(|e| self.failed(e))?;
                let given = (!thresholds.is_empty()).then_some(thresholds);
                state
                    .threshold_counts(ROC_BINS, given)
                    .into_iter()
                    .map(|c| {
                        vec![
                            c.threshold,
                            c.true_positives,
                            c.false_positives,
                            c.true_negatives,
                            c.false_negatives,
                        ]
                    })
                    .collect()
            }
            StateTable::Confusion => MulticlassState::from_bytes(bytes)
                .map_err(|e| self.failed(e))?
                .confusion()
                .into_iter()
                .map(|(label, prediction, weight)| vec![label as f64, prediction as f64, weight])
                .collect(),
        })
    }
}

impl ScalarUDFImpl for StateRowsUdf {
    fn name(&self) -> &str {
        self.table.name()
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        if !matches!(
            arg_types[0],
            DataType::Binary | DataType::LargeBinary | DataType::BinaryView
        ) {
            return plan_err!(
                "{}: the state must be an ml_*_state aggregate's bytes, got {}",
                self.table.name(),
                arg_types[0]
            );
        }
        let row = DataType::Struct(self.table.fields());
        Ok(DataType::List(Arc::new(Field::new("item", row, true))))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let name = self.table.name();
        let thresholds = match self.table {
            StateTable::RocCurve => as_f64_list(name, &constant(name, &args.args, 1, "thresholds")?, "thresholds")?,
            StateTable::Confusion => Vec::new(),
        };
        if let Some(bad) = thresholds.iter().find(|t| !(0.0..=1.0).contains(*t)) {
            return Err(self.failed(format!("a threshold must lie in [0, 1], got {bad}")));
        }
        let states = args.args[0].to_array(args.number_rows)?;
        let states = datafusion::arrow::compute::cast(&states, &DataType::Binary)?;
        let states = states.as_binary::<i32>();
        let fields = self.table.fields();
        let builders = fields.iter().map(|_| Box::new(Float64Builder::new()) as _).collect();
        let mut lists = ListBuilder::new(StructBuilder::new(fields.clone(), builders));
        for row in 0..states.len() {
            if states.is_null(row) {
                lists.append(false);
                continue;
            }
            for values in self.rows(states.value(row), &thresholds)? {
                let entry = lists.values();
                for (index, value) in values.into_iter().enumerate() {
                    entry
                        .field_builder::<Float64Builder>(index)
                        .ok_or_else(|| self.failed("a row's field is not a number"))?
                        .append_value(value);
                }
                entry.append(true);
            }
            lists.append(true);
        }
        let array: ArrayRef = Arc::new(lists.finish());
        Ok(ColumnarValue::Array(array))
    }

    fn documentation(&self) -> Option<&Documentation> {
        let docs: &LazyLock<Documentation> = match self.table {
            StateTable::RocCurve => &ROC_CURVE_DOCS,
            StateTable::Confusion => &CONFUSION_DOCS,
        };
        Some(docs)
    }
}
