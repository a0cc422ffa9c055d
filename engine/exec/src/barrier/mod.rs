//! Barrier stages: all partitions of a stage run at once, one task per partition, and talk to each other —
//! Spark's barrier execution mode, which hearth trains with.
//!
//! A [`BarrierFunction`] is the code every task runs; it gets a [`BarrierTaskContext`] (rank, world size,
//! peers, `barrier`, `all_gather`, and the ring [`Communicator`](hearth_collective::Communicator) for
//! allreduce) and its partition's rows. Functions are registered by name ([`register_function`]) in every
//! process that runs tasks, as SQL functions are, so a plan names its function and travels to executors as
//! plain data. hearth's trainer is one such function (`hearth.train`, registered by `hearth-training`).
//!
//! On the driver, [`BarrierStage`] checks that the session has a task slot for every rank, repartitions the
//! rows into exactly that many partitions, hosts the rendezvous, and runs the stage ([`BarrierExec`]); a
//! failed run is retried as a whole, every task of the retry seeing the last bytes a task sent the driver
//! ([`BarrierTaskContext::resume`]). [`BarrierOptions`] holds every setting. On a fleet, the executors run
//! a function the driver program registered itself in copies of that program ([`program`]).
//!
//! ```
//! # tokio::runtime::Builder::new_multi_thread().build().unwrap().block_on(async {
//! use std::sync::Arc;
//! use datafusion::arrow::array::{RecordBatch, UInt64Array};
//! use datafusion::arrow::datatypes::{DataType, Field, Schema};
//! use hearth_exec::barrier::{BarrierStage, FnBarrier, register_function};
//! use hearth_exec::session::Session;
//!
//! // Each task counts its rows; the ranks allgather the counts, so every task sees the total.
//! let schema = Arc::new(Schema::new(vec![Field::new("total", DataType::UInt64, false)]));
//! let out = Arc::clone(&schema);
//! register_function(FnBarrier::new("count_rows", schema, move |ctx, batches| {
//!     let mine: u64 = batches.iter().map(|b| b.num_rows() as u64).sum();
//!     let all = ctx.all_gather(&mine.to_le_bytes())?;
//!     let total: u64 = all.iter().map(|b| u64::from_le_bytes(b[..8].try_into().unwrap())).sum();
//!     Ok(RecordBatch::try_new(Arc::clone(&out), vec![Arc::new(UInt64Array::from(vec![total]))])?)
//! }));
//!
//! let session = Session::builder().local(2);
//! let df = session.context().sql("SELECT * FROM generate_series(1, 100) AS t(x)").await.unwrap();
//! let rows = BarrierStage::new("count_rows", "").workers(2).run(&df).await.unwrap();
//! assert_eq!(rows.len(), 2);
//! # });
//! ```

mod allocator;
pub mod checkpoints;
mod context;
mod cuda_driver;
mod exec;
mod function;
mod gpus;
mod input;
mod options;
pub mod program;
mod row_order;
pub mod shipped;
mod spec;
mod stage;
mod task_thread;

pub use context::{BarrierTaskContext, DriverChannel, ResumePoint};
pub use cuda_driver::{CudaDriverError, detect_gpus, driver_gpus};
pub use exec::BarrierExec;
pub(crate) use function::is_user_function;
pub use function::register_builtin;
pub use function::{BarrierFunction, FnBarrier, function, register_function};
pub use gpus::{GpuLease, TrainerGpus, count_trainer_gpus_with, local_gpus, offer_gpus, offered_gpus};
pub use input::{BarrierInput, SPILL_BATCH_ROWS};
pub use options::BarrierOptions;
pub use row_order::{canonical_order, canonical_positions, pick_columns, row_hashes};
pub use spec::BarrierSpec;
pub use stage::{AttemptReport, BarrierStage, StageRun, check_slots};
