//! Running on Apache Ballista: hearth's physical codec, the in-process standalone cluster, connecting to a
//! remote scheduler, and submitting a barrier stage as a physical plan.
//!
//! Data frame queries go to the scheduler as logical plans (Ballista's own path; hearth's SQL functions
//! travel by name and are registered on the scheduler and every executor). A barrier stage goes as a
//! physical plan: the driver plans it, its exact repartition becomes a hash shuffle — a stage boundary, so
//! the barrier's stage has exactly one partition per rank — and [`HearthPhysicalCodec`] carries the
//! [`BarrierExec`](crate::barrier::BarrierExec) to the executors.

mod cluster;
mod codec;

pub use cluster::{DEFAULT_SCHEDULER_PORT, hearth_state, submit_physical};
pub(crate) use cluster::{connect_remote, start_standalone, task_slots};
pub use codec::{HearthLogicalCodec, HearthPhysicalCodec};
