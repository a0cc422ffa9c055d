//! `HorovodRunner` (Databricks' runner of Horovod jobs on Spark barrier mode) over hearth's barrier stage:
//! for people who write their own training loop in Rust with tch. `run` starts `np` tasks at once, each
//! calling the main function with a [`Horovod`] handle (rank, size, local rank, allreduce, broadcast,
//! allgather of tensors, [`DistributedOptimizer`](hearth_torch::horovod::DistributedOptimizer)), and returns rank
//! 0's return value. `np < 0` runs `-np` ranks as threads of the driver alone, for debugging, as
//! HorovodRunner's `np=-1` does.
//!
//! ```
//! # tokio::runtime::Builder::new_multi_thread().build().unwrap().block_on(async {
//! use hearth_training::horovod_runner::HorovodRunner;
//! use hearth_exec::session::Session;
//! use hearth_training::functions::DefaultFeatures;
//!
//! let session = Session::builder().with_default_features().local(2);
//! // Every rank contributes its rank; rank 0 returns the sum it allreduced.
//! let sum: f32 = HorovodRunner::new(2)
//!     .run(&session, "sum_of_ranks", |hvd| {
//!         let mine = tch::Tensor::from_slice(&[hvd.rank() as f32]);
//!         Ok(hvd.allreduce_sum(&mine)?.double_value(&[0]) as f32)
//!     })
//!     .await
//!     .unwrap();
//! assert_eq!(sum, 1.0);
//! // The same function on the driver alone, as two threads.
//! let local: f32 = HorovodRunner::new(-2)
//!     .run(&session, "sum_of_ranks", |hvd| Ok(hvd.allreduce_sum(&tch::Tensor::from_slice(&[1.0f32]))?.double_value(&[0]) as f32))
//!     .await
//!     .unwrap();
//! assert_eq!(local, 2.0);
//! # });
//! ```

use std::sync::Arc;
use std::time::Duration;

use datafusion::arrow::array::{Array, AsArray, BinaryArray, RecordBatch, UInt64Array};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, UInt64Type};
use datafusion::error::DataFusionError;
use hearth_collective::LocalWorld;
use hearth_exec::barrier::{BarrierOptions, BarrierStage, FnBarrier, register_function};
use hearth_exec::error::{HearthError, Result};
use hearth_exec::session::Session;
use hearth_torch::horovod::{Horovod, HorovodError};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// What a main function may fail with.
pub type MainError = Box<dyn std::error::Error + Send + Sync>;

/// Runs a training function on `np` ranks at once. See the [module](self) documentation.
#[derive(Clone, Debug)]
pub struct HorovodRunner {
    np: i32,
    options: BarrierOptions,
}

impl HorovodRunner {
    /// `np` ranks as barrier tasks of the session (`np > 0`), or `-np` ranks on the driver alone (`np < 0`).
    pub fn new(np: i32) -> Self {
        Self {
            np,
            options: BarrierOptions {
                workers: np.unsigned_abs() as usize,
                max_attempts: 1,
                ..BarrierOptions::default()
            },
        }
    }

    /// The longest any collective may wait on a peer before every rank fails (default: the barrier stage's).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.options.timeout = timeout;
        self
    }

    /// Runs of the whole job before giving up (default 1: a main function keeps no checkpoints of its own).
    pub fn max_attempts(mut self, attempts: usize) -> Self {
        self.options.max_attempts = attempts;
        self
    }

    /// Runs `main` on every rank and returns rank 0's result. The function is registered as a barrier
    /// function called `name` in this process, which is where `local[N]` and `standalone[N]` sessions run
    /// their tasks. A rank's error fails the job: on the driver alone (`np < 0`) its own error is reported
    /// first; as barrier tasks, the first task error to reach the driver (the failing rank's, or a peer's
    /// naming it).
    pub async fn run<T, F>(&self, session: &Session, name: &str, main: F) -> Result<T>
    where
        T: Serialize + DeserializeOwned + Send + 'static,
        F: Fn(&mut Horovod<'_>) -> std::result::Result<T, MainError> + Send + Sync + 'static,
    {
        match self.np {
            0 => Err(HearthError::invalid_param(
                "HorovodRunner",
                "np",
                "must not be 0: a positive number of tasks, or a negative number of ranks on the driver",
            )),
            np if np < 0 => self.on_driver(name, main).await,
            _ => self.as_barrier_stage(session, name, main).await,
        }
    }

    /// `-np` ranks as threads of this process over an in-process ring.
    async fn on_driver<T, F>(&self, name: &str, main: F) -> Result<T>
    where
        T: Send + 'static,
        F: Fn(&mut Horovod<'_>) -> std::result::Result<T, MainError> + Send + Sync + 'static,
    {
        let (ranks, timeout) = (self.options.workers, self.options.timeout);
        let job = format!("HorovodRunner {name}");
        let outcomes = tokio::task::spawn_blocking(move || {
            LocalWorld::new(ranks)
                .timeout(timeout)
                .run(|mut comm| main(&mut Horovod::new(&mut comm)))
        })
        .await
        .map_err(|e| HearthError::barrier(&job, "a rank panicked").caused_by(e))?
        .map_err(|e| HearthError::barrier(&job, "running its ranks").caused_by(e))?;
        let mut first = None;
        // A rank's own failure first; the collective errors it caused on its peers after it.
        let (mut causes, mut consequences) = (Vec::new(), Vec::new());
        for (rank, outcome) in outcomes.into_iter().enumerate() {
            match outcome {
                Ok(value) if rank == 0 => first = Some(value),
                Ok(_) => {}
                Err(e) if matches!(e.downcast_ref(), Some(HorovodError::Collective(_))) => {
                    consequences.push(format!("rank {rank}: {e}"));
                }
                Err(e) => causes.push(format!("rank {rank}: {e}")),
            }
        }
        if !causes.is_empty() || !consequences.is_empty() {
            causes.extend(consequences);
            return Err(HearthError::barrier(job, causes.join("; then ")));
        }
        first.ok_or_else(|| HearthError::barrier(job, "no rank ran"))
    }

    /// `np` barrier tasks of the session, rank 0's result serialised into its output row.
    async fn as_barrier_stage<T, F>(&self, session: &Session, name: &str, main: F) -> Result<T>
    where
        T: Serialize + DeserializeOwned + Send + 'static,
        F: Fn(&mut Horovod<'_>) -> std::result::Result<T, MainError> + Send + Sync + 'static,
    {
        let schema = result_schema();
        let out = Arc::clone(&schema);
        register_function(FnBarrier::new(name, schema, move |context, _rows| {
            let rank = context.rank();
            let result = main(&mut Horovod::new(context.communicator()))
                .map_err(|e| DataFusionError::Execution(format!("the main function failed: {e}")))?;
            let bytes = match rank {
                0 => Some(serde_json::to_vec(&result).map_err(|e| {
                    DataFusionError::Execution(format!("rank 0's result cannot be written as JSON: {e}"))
                })?),
                _ => None,
            };
            Ok(RecordBatch::try_new(
                Arc::clone(&out),
                vec![
                    Arc::new(UInt64Array::from(vec![rank as u64])),
                    Arc::new(BinaryArray::from(vec![bytes.as_deref()])),
                ],
            )?)
        }));
        let tasks: Vec<String> = (0..self.np).map(|task| format!("({task})")).collect();
        let input = session
            .context()
            .sql(&format!("SELECT * FROM (VALUES {}) AS t(task)", tasks.join(", ")))
            .await?;
        let batches = BarrierStage::new(name, "")
            .options(self.options.clone())
            .run(&input)
            .await?;
        for batch in &batches {
            let (ranks, results) = (
                batch.column(0).as_primitive::<UInt64Type>(),
                batch.column(1).as_binary::<i32>(),
            );
            if let Some(row) = (0..batch.num_rows()).find(|&row| ranks.value(row) == 0 && results.is_valid(row)) {
                return serde_json::from_slice(results.value(row)).map_err(|e| {
                    HearthError::barrier(format!("HorovodRunner {name}"), "rank 0's result is unreadable").caused_by(e)
                });
            }
        }
        Err(HearthError::barrier(
            format!("HorovodRunner {name}"),
            "rank 0 returned no result",
        ))
    }
}

/// Each task's row: its rank and, for rank 0, the main function's result as JSON.
fn result_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("rank", DataType::UInt64, false),
        Field::new("result", DataType::Binary, true),
    ]))
}
