//! Full-batch fits as a barrier function: each task turns its rows into a shard and runs the same fit, the
//! ranks summing every pass's totals with an allgather (added in rank order, so every rank takes the same steps);
//! rank 0 returns the fitted model.

use std::sync::atomic::Ordering;
use std::sync::{Arc, LazyLock};

use datafusion::arrow::array::{Array, AsArray, RecordBatch, StringArray, UInt64Array};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, UInt64Type};
use datafusion::error::{DataFusionError, Result};
use hearth_exec::barrier::{BarrierFunction, BarrierTaskContext};
use hearth_optim::glm::{
    FitError, LinearFit, LinearSettings, LogisticFit, LogisticSettings, Reduce, Shard, fit_linear, fit_logistic,
};
use hearth_optim::perceptron::{MlpFit, MlpSettings, fit_mlp};
use serde::{Deserialize, Serialize};

use super::shard::{ShardColumns, shard_of};

/// The name of the full-batch fits' barrier function.
pub const FULL_BATCH_FUNCTION: &str = "hearth.full_batch";

/// Which model a fit solves, with its settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FullBatchModel {
    /// Spark's `LogisticRegression`.
    Logistic(LogisticSettings),
    /// Spark's `LinearRegression`.
    Linear(LinearSettings),
    /// Spark's `MultilayerPerceptronClassifier`.
    Perceptron(MlpSettings),
}

/// A fitted model, as rank 0 returns it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FullBatchFit {
    /// A logistic fit.
    Logistic(LogisticFit),
    /// A linear fit.
    Linear(LinearFit),
    /// A perceptron's fit.
    Perceptron(MlpFit),
}

/// The fit of one kind of model out of a [`FullBatchFit`], refused when it is another kind.
macro_rules! fit_of_variant {
    ($($variant:ident => $fit:ty),*) => {$(
        impl TryFrom<FullBatchFit> for $fit {
            type Error = FullBatchFit;

            fn try_from(fit: FullBatchFit) -> std::result::Result<Self, FullBatchFit> {
                match fit {
                    FullBatchFit::$variant(fit) => Ok(fit),
                    other => Err(other),
                }
            }
        }
    )*};
}

fit_of_variant!(Logistic => LogisticFit, Linear => LinearFit, Perceptron => MlpFit);

/// What the fit's tasks are told: the model and the columns of the prepared rows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FullBatchArgs {
    /// The model and its settings.
    pub settings: FullBatchModel,
    /// The vector column of features.
    pub features_col: String,
    /// The `Float64` label column.
    pub label_col: String,
    /// A `Float64` column of row weights.
    pub weight_col: Option<String>,
}

/// The rows each task returns: its rank and rows, and on rank 0 the fit as JSON.
static SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
    Arc::new(Schema::new(vec![
        Field::new("rank", DataType::UInt64, false),
        Field::new("rows", DataType::UInt64, false),
        Field::new("fit", DataType::Utf8, true),
    ]))
});

/// The barrier function registered as [`FULL_BATCH_FUNCTION`]; its argument string is [`FullBatchArgs`] as JSON.
#[derive(Debug, Default)]
pub struct FullBatchFunction;

impl BarrierFunction for FullBatchFunction {
    fn name(&self) -> &str {
        FULL_BATCH_FUNCTION
    }

    fn schema(&self, _args: &str) -> Result<SchemaRef> {
        Ok(Arc::clone(&SCHEMA))
    }

    fn run(&self, context: &mut BarrierTaskContext, args: &str, input: Vec<RecordBatch>) -> Result<RecordBatch> {
        let args: FullBatchArgs = serde_json::from_str(args)
            .map_err(|e| DataFusionError::Execution(format!("{FULL_BATCH_FUNCTION}: unreadable arguments: {e}")))?;
        let rank = context.rank();
        let columns = ShardColumns {
            features_col: &args.features_col,
            label_col: &args.label_col,
            weight_col: args.weight_col.as_deref(),
        };
        let shard = shard_of(&columns, &input).map_err(|e| e.context(format!("rank {rank}")))?;
        let mut ranks = RankSums { context };
        let shard = with_agreed_width(shard, &mut ranks)?;
        let fit = match &args.settings {
            FullBatchModel::Logistic(settings) => {
                fit_logistic(&shard, settings, &mut ranks).map(FullBatchFit::Logistic)
            }
            FullBatchModel::Linear(settings) => fit_linear(&shard, settings, &mut ranks).map(FullBatchFit::Linear),
            FullBatchModel::Perceptron(settings) => fit_mlp(&shard, settings, &mut ranks).map(FullBatchFit::Perceptron),
        };
        let fit = fit.map_err(|e| match e {
            FitError::Ranks(e) => e,
            e => DataFusionError::Execution(format!("rank {rank}: {e}")),
        })?;
        let json = (rank == 0)
            .then(|| serde_json::to_string(&fit))
            .transpose()
            .map_err(|e| DataFusionError::Execution(format!("{FULL_BATCH_FUNCTION}: {e}")))?;
        Ok(RecordBatch::try_new(
            Arc::clone(&SCHEMA),
            vec![
                Arc::new(UInt64Array::from(vec![rank as u64])),
                Arc::new(UInt64Array::from(vec![shard.rows() as u64])),
                Arc::new(StringArray::from(vec![json])),
            ],
        )?)
    }
}

/// `shard`, given the features' width of the ranks that have rows when it has none (an empty partition has no
/// vector to read it from), so that every rank sums vectors of the same length.
fn with_agreed_width(shard: Shard, ranks: &mut RankSums) -> Result<Shard> {
    let mut width = [shard.dim() as f64];
    ranks.max(&mut width)?;
    if shard.rows() > 0 {
        return Ok(shard);
    }
    Shard::new(width[0] as usize, Vec::new(), Vec::new(), None)
        .map_err(|e| DataFusionError::Execution(format!("{FULL_BATCH_FUNCTION}: {e}")))
}

/// Sums across the stage's ranks: every rank's values gathered, added in rank order.
struct RankSums<'a> {
    context: &'a mut BarrierTaskContext,
}

impl RankSums<'_> {
    /// Every rank's values, in rank order; an error once the stage is cancelled (a killed job, a dropped
    /// query, a Spark Connect client's interrupt), so a long fit stops at its next step.
    fn gathered(&mut self, values: &[f64]) -> Result<Vec<Vec<f64>>> {
        if self.context.cancelled().load(Ordering::Relaxed) {
            return Err(DataFusionError::Execution(
                "the stage was cancelled; the fit stopped".into(),
            ));
        }
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let all = self.context.all_gather(&bytes)?;
        all.iter()
            .enumerate()
            .map(|(rank, bytes)| {
                if bytes.len() != size_of_val(values) {
                    return Err(DataFusionError::Execution(format!(
                        "rank {rank} sent {} bytes for {} values: the ranks are not fitting the same model",
                        bytes.len(),
                        values.len()
                    )));
                }
                Ok(bytes
                    .chunks_exact(8)
                    .map(|c| f64::from_le_bytes(c.try_into().unwrap_or_default()))
                    .collect())
            })
            .collect()
    }
}

impl Reduce for RankSums<'_> {
    type Error = DataFusionError;

    fn sum(&mut self, values: &mut [f64]) -> Result<()> {
        let all = self.gathered(values)?;
        for (i, value) in values.iter_mut().enumerate() {
            *value = all.iter().fold(0.0, |sum, rank| sum + rank[i]);
        }
        Ok(())
    }

    fn max(&mut self, values: &mut [f64]) -> Result<()> {
        let all = self.gathered(values)?;
        for (i, value) in values.iter_mut().enumerate() {
            *value = all.iter().fold(f64::NEG_INFINITY, |max, rank| max.max(rank[i]));
        }
        Ok(())
    }
}

/// The rows the stage's ranks fitted on, summed.
pub(crate) fn read_rows(batches: &[RecordBatch]) -> u64 {
    batches
        .iter()
        .filter_map(|batch| batch.column_by_name("rows")?.as_primitive_opt::<UInt64Type>().cloned())
        .map(|rows| rows.values().iter().sum::<u64>())
        .sum()
}

/// The fit rank 0 returned among the stage's rows.
pub(crate) fn read_fit(batches: &[RecordBatch]) -> Result<FullBatchFit> {
    let json = batches.iter().find_map(|batch| {
        let fits = batch.column_by_name("fit")?.as_string_opt::<i32>()?;
        (0..fits.len())
            .find(|i| fits.is_valid(*i))
            .map(|i| fits.value(i).to_string())
    });
    let json =
        json.ok_or_else(|| DataFusionError::Execution(format!("{FULL_BATCH_FUNCTION}: rank 0 returned no fit")))?;
    serde_json::from_str(&json).map_err(|e| DataFusionError::Execution(format!("{FULL_BATCH_FUNCTION}: {e}")))
}
