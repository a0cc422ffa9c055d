//! hearth's trainer as a barrier function: each task turns its rows into a shard (and validation rows
//! into another) and runs the ml trainer; rank 0 sends the driver a checkpoint after every epoch and returns
//! the model; a retried stage resumes from the last checkpoint. A task whose partition was spilled beyond
//! its memory budget writes its shards to files beside the spill and trains from them as streams.

use std::cell::RefCell;
use std::sync::atomic::Ordering;
use std::sync::{Arc, LazyLock};

use datafusion::arrow::array::{Array, BinaryArray, Float64Array, RecordBatch, StringArray, UInt64Array};
use datafusion::arrow::compute::{filter_record_batch, not, prep_null_mask_filter};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::error::{DataFusionError, Result};
use hearth_exec::barrier::{
    BarrierFunction, BarrierInput, BarrierTaskContext, SPILL_BATCH_ROWS, canonical_order, register_builtin,
};
use hearth_torch::artifact::ModelArtifact;
use hearth_torch::data::{HeldBytes, Shard, ShardFileWriter, StreamedShard};
use hearth_torch::train::{Checkpoint, DeviceChoice, RankData, RankReport, RankTrainer, TrainOptions};
use serde::{Deserialize, Serialize};

/// The name of hearth's trainer as a barrier function.
pub const TRAIN_FUNCTION: &str = "hearth.train";

/// Makes hearth's barrier functions (the trainer) runnable in this process; a session or executor built with
/// training's extension calls this when it registers training's SQL functions. A function already registered
/// under the same name (a replacement of the user's) stays.
pub fn register_barrier_functions() {
    register_builtin(TrainFunction);
}

/// What the trainer's tasks are told: the options and the columns.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrainArgs {
    /// Model, loss, optimizer, epochs, …
    pub options: TrainOptions,
    /// The vector column of features.
    pub features_col: String,
    /// The numeric label column.
    pub label_col: String,
    /// A boolean column marking validation rows, which are not trained on.
    #[serde(default)]
    pub validation_col: Option<String>,
    /// A numeric column of sample weights (Spark's `weightCol`).
    #[serde(default)]
    pub weight_col: Option<String>,
}

/// The rows each training task returns: its report, and on rank 0 the trained model.
static SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
    Arc::new(Schema::new(vec![
        Field::new("rank", DataType::UInt64, false),
        Field::new("host", DataType::Utf8, false),
        Field::new("device", DataType::Utf8, false),
        Field::new("rows", DataType::UInt64, false),
        Field::new("steps", DataType::UInt64, false),
        Field::new("seconds", DataType::Float64, false),
        Field::new("report", DataType::Utf8, false),
        Field::new("model", DataType::Binary, true),
    ]))
});

/// The barrier function registered as [`TRAIN_FUNCTION`]; its argument string is [`TrainArgs`] as JSON.
#[derive(Debug, Default)]
pub struct TrainFunction;

fn failed(message: impl ToString) -> DataFusionError {
    DataFusionError::Execution(message.to_string())
}

impl BarrierFunction for TrainFunction {
    fn name(&self) -> &str {
        TRAIN_FUNCTION
    }

    fn schema(&self, _args: &str) -> Result<SchemaRef> {
        Ok(Arc::clone(&SCHEMA))
    }

    fn run(&self, context: &mut BarrierTaskContext, args: &str, input: Vec<RecordBatch>) -> Result<RecordBatch> {
        self.run_input(context, args, BarrierInput::from_batches(input)?)
    }

    /// Trains on the partition held in memory, or, when it was spilled beyond the rank's memory budget, on
    /// its rows streamed from disk through a shuffle buffer.
    fn run_input(&self, context: &mut BarrierTaskContext, args: &str, input: BarrierInput) -> Result<RecordBatch> {
        let mut args: TrainArgs =
            serde_json::from_str(args).map_err(|e| failed(format!("unreadable arguments: {e}")))?;
        // `auto` without a GPU trains on the CPU, and the Ranks table says so.
        let fell_back = args.options.settings.device == DeviceChoice::Auto && context.gpu().is_none();
        args.options.settings.device = rank_device(&args.options.settings.device, context.gpu());
        let (input_peak, spilled) = (input.peak_bytes(), input.is_spilled());
        let rows = match input.is_spilled() {
            false => RowsOfRank::held(input.into_batches()?, &args)?,
            true => RowsOfRank::streamed(&input, &args)?,
        };
        let (shard, validation) = (rows.training(), rows.validation());
        let resume = context
            .resume()
            .map(|point| Checkpoint::from_bytes(&point.bytes))
            .transpose()
            .map_err(|e| failed(format!("the checkpoint to resume from is unreadable: {e}")))?;
        let driver = context.driver_channel();
        let cancelled = Arc::clone(context.cancelled());
        // A driver that cannot take a checkpoint is gone: training for it would be wasted, so the rank stops.
        let driver_lost = RefCell::new(None);
        let send_checkpoint = |checkpoint: &Checkpoint| {
            let sent = match checkpoint.to_bytes() {
                Ok(bytes) => driver.send(checkpoint.epoch, &bytes).map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            };
            if let Err(e) = sent {
                *driver_lost.borrow_mut() = Some(format!("the checkpoint of epoch {}: {e}", checkpoint.epoch));
                cancelled.store(true, Ordering::Relaxed);
            }
        };
        let mut trainer = RankTrainer::new(shard, &args.options)
            .resume(resume.as_ref())
            .cancel_flag(&cancelled)
            .on_epoch(send_checkpoint);
        if let Some(validation) = validation {
            trainer = trainer.validation(validation);
        }
        let mut outcome = trainer
            .run(context.communicator())
            .map_err(|e| match driver_lost.take() {
                Some(lost) => failed(format!("the driver is gone: it did not take {lost}")),
                None => failed(e),
            })?;
        if fell_back {
            outcome.report.device = format!("{} (auto: no GPU)", outcome.report.device);
        }
        outcome.report.peak_bytes = outcome.report.peak_bytes.max(input_peak as u64);
        // Rows read back from the spill count as streamed, even where a whole-partition buffer then held them.
        outcome.report.streamed |= spilled;
        let model = match outcome.tensors {
            Some(tensors) => Some(
                ModelArtifact::new(args.options.clone(), tensors, outcome.report.history.clone())
                    .to_bytes()
                    .map_err(failed)?,
            ),
            None => None,
        };
        report_batch(&outcome.report, model)
    }
}

/// A rank's training and validation rows: held in memory, or in shard files on its disk.
enum RowsOfRank {
    Held(Shard, Option<Shard>),
    Streamed(StreamedShard, Option<StreamedShard>),
}

/// Rows per chunk of a streamed rank's shard files.
const CHUNK_ROWS: usize = 8192;

impl RowsOfRank {
    /// The partition's rows in memory: its columns in canonical order, split into training and validation.
    fn held(input: Vec<RecordBatch>, args: &TrainArgs) -> Result<Self> {
        let rows = canonical_order(&input, &args.columns())?;
        drop(input);
        let (training, validation) = split_validation(rows, args.validation_col.as_deref())?;
        let shard = args.shard_of(training.as_slice())?;
        let validation = validation
            .as_ref()
            .map(|rows| args.shard_of(std::slice::from_ref(rows)))
            .transpose()?;
        Ok(Self::Held(shard, validation))
    }

    /// The spilled partition's rows, read once in canonical order into a training and a validation shard file
    /// beside the spill, a chunk at a time; the shuffle buffer holds `shuffle_buffer_rows`, else what a quarter
    /// of the memory budget holds.
    fn streamed(input: &BarrierInput, args: &TrainArgs) -> Result<Self> {
        let dir = input
            .spill_dir()
            .ok_or_else(|| failed("a spilled partition without its folder"))?;
        let mut training = ShardFileWriter::new(dir.join("training.arrow"), CHUNK_ROWS);
        let mut validation = ShardFileWriter::new(dir.join("validation.arrow"), CHUNK_ROWS);
        let mut dim = 0;
        for batch in input.canonical_batches(SPILL_BATCH_ROWS)? {
            let (train, held_out) = split_validation(Some(batch?), args.validation_col.as_deref())?;
            if let Some(rows) = train {
                let shard = args.shard_of(std::slice::from_ref(&rows))?;
                dim = dim.max(shard.dim());
                training.push(&shard).map_err(failed)?;
            }
            if let Some(rows) = held_out {
                validation
                    .push(&args.shard_of(std::slice::from_ref(&rows))?)
                    .map_err(failed)?;
            }
        }
        let settings = &args.options.settings;
        let row_bytes = (dim + 2) * size_of::<f32>();
        let buffer_rows = settings.shuffle_buffer_rows.unwrap_or_else(|| {
            let budget = input.budget().unwrap_or(usize::MAX);
            (budget / 4 / row_bytes).max(settings.batch_size)
        });
        let held = HeldBytes::default();
        let training = StreamedShard::new(training.finish().map_err(failed)?, buffer_rows, held.clone());
        let validation = match args.validation_col {
            Some(_) => Some(StreamedShard::new(
                validation.finish().map_err(failed)?,
                buffer_rows,
                held,
            )),
            None => None,
        };
        Ok(Self::Streamed(training, validation))
    }

    fn training(&self) -> RankData<'_> {
        match self {
            Self::Held(shard, _) => RankData::Held(shard),
            Self::Streamed(shard, _) => RankData::Streamed(shard),
        }
    }

    fn validation(&self) -> Option<RankData<'_>> {
        match self {
            Self::Held(_, validation) => validation.as_ref().map(RankData::Held),
            Self::Streamed(_, validation) => validation.as_ref().map(RankData::Streamed),
        }
    }
}

impl TrainArgs {
    /// The columns a rank reads, in the order their values hash in.
    fn columns(&self) -> Vec<&str> {
        let mut columns = vec![self.features_col.as_str(), self.label_col.as_str()];
        columns.extend(self.validation_col.as_deref());
        columns.extend(self.weight_col.as_deref());
        columns
    }

    /// `rows` as a shard: features, labels and, with a weight column, sample weights.
    fn shard_of(&self, rows: &[RecordBatch]) -> Result<Shard> {
        let shard = Shard::from_batches(rows, &self.features_col, &self.label_col);
        match &self.weight_col {
            Some(weight) => shard.and_then(|shard| shard.weighted_by(rows, weight)),
            None => shard,
        }
        .map_err(failed)
    }
}

/// The device a rank trains on: the GPU its task holds, when the stage asked for GPUs; otherwise the CPU
/// for `auto` (the fleet had too few GPUs for every rank to hold one) and what was asked for the rest.
fn rank_device(asked: &DeviceChoice, held: Option<usize>) -> DeviceChoice {
    match (held, asked) {
        (Some(gpu), _) => DeviceChoice::Cuda(Some(gpu)),
        (None, DeviceChoice::Auto) => DeviceChoice::Cpu,
        (None, asked) => asked.clone(),
    }
}

/// The training rows and, with a validation column, the validation rows (where it is true; a null counts as
/// training).
fn split_validation(
    rows: Option<RecordBatch>,
    column: Option<&str>,
) -> Result<(Option<RecordBatch>, Option<RecordBatch>)> {
    let (Some(rows), Some(column)) = (&rows, column) else {
        return Ok((rows, None));
    };
    let indicator = datafusion::common::cast::as_boolean_array(
        rows.column_by_name(column)
            .ok_or_else(|| failed(format!("column {column:?}: no such column")))?,
    )?;
    let validation = match indicator.nulls() {
        Some(_) => prep_null_mask_filter(indicator),
        None => indicator.clone(),
    };
    Ok((
        Some(filter_record_batch(rows, &not(&validation)?)?),
        Some(filter_record_batch(rows, &validation)?),
    ))
}

fn report_batch(report: &RankReport, model: Option<Vec<u8>>) -> Result<RecordBatch> {
    let json = serde_json::to_string(report).map_err(failed)?;
    Ok(RecordBatch::try_new(
        Arc::clone(&SCHEMA),
        vec![
            Arc::new(UInt64Array::from(vec![report.rank as u64])),
            Arc::new(StringArray::from(vec![report.host.clone()])),
            Arc::new(StringArray::from(vec![report.device.clone()])),
            Arc::new(UInt64Array::from(vec![report.rows as u64])),
            Arc::new(UInt64Array::from(vec![report.steps as u64])),
            Arc::new(Float64Array::from(vec![report.seconds])),
            Arc::new(StringArray::from(vec![json])),
            Arc::new(BinaryArray::from(vec![model.as_deref()])),
        ],
    )?)
}

/// Reads the training tasks' rows: every rank's report, in rank order, and the model from rank 0.
pub(crate) fn read_outcome(batches: &[RecordBatch]) -> Result<(Vec<RankReport>, ModelArtifact)> {
    let mut reports = Vec::new();
    let mut model = None;
    for batch in batches {
        let (Some(report), Some(bytes)) = (batch.column_by_name("report"), batch.column_by_name("model")) else {
            return Err(failed("training tasks returned rows without report and model columns"));
        };
        let report = datafusion::common::cast::as_string_array(report)?;
        let bytes = datafusion::common::cast::as_binary_array(bytes)?;
        for row in 0..batch.num_rows() {
            reports.push(serde_json::from_str::<RankReport>(report.value(row)).map_err(failed)?);
            if bytes.is_valid(row) {
                model = Some(ModelArtifact::from_bytes(bytes.value(row)).map_err(failed)?);
            }
        }
    }
    reports.sort_by_key(|r| r.rank);
    let model = model.ok_or_else(|| failed("rank 0 returned no model"))?;
    Ok((reports, model))
}
