//! Running on Apache Ballista: the in-process standalone cluster, connecting to a remote scheduler,
//! submitting a physical plan, and what the fleet has (its executors' slots and GPUs, over REST). This is
//! plumbing: the state it runs with (hearth's functions, planner and codecs) comes from
//! [`session`](crate::session).
//!
//! Data frame queries go to the scheduler as logical plans (Ballista's own path; hearth's SQL functions
//! travel by name and are registered on the scheduler and every executor). A barrier stage goes as a
//! physical plan: the driver plans it, its exact repartition becomes a hash shuffle — a stage boundary, so
//! the barrier's stage has exactly one partition per rank — and [`HearthPhysicalCodec`](crate::codec::HearthPhysicalCodec)
//! carries the [`BarrierExec`](crate::barrier::BarrierExec) to the executors.

mod access;
mod cluster;
mod fleet;
mod keys;
mod roles;
mod secret;
mod standalone;
mod tls;
mod token;

pub use crate::error::RestError;
pub use access::FleetAccess;
pub(crate) use cluster::connect_remote;
pub use cluster::{DEFAULT_SCHEDULER_PORT, submit_physical};
pub(crate) use fleet::task_slots;
pub use fleet::{ALIVE, EXECUTORS_ROUTE, ExecutorResources, GpuInfo, SchedulerRest, alive, fleet_resources, now_ms};
pub use keys::equal_in_constant_time;
pub use roles::{CertificateFacts, FleetPort, Role, days_left};
pub use secret::{ClusterSecret, SECRET_ENV, SECRET_FILE_ENV, SECRET_JOB_ENV};
pub(crate) use standalone::start_standalone;
pub use tls::{CA_FILE, CERT_FILE, FleetTls, KEY_FILE, TLS_DIR_ENV};
pub(crate) use token::authority;
pub use token::{
    Admitted, CLOCK_SKEW, DEFAULT_VALID_FOR, MAX_VALID_FOR, Presented, Principal, ReplayMemory, Service, SingleUse,
    TokenMaker, TokenRefusal,
};
