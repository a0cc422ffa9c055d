//! The `hearth` program, run as a user runs it: a test binary of its own, which links none of hearth and
//! starts `hearth` processes — SQL and pipelines on the local master, and whole fleets on loopback.

mod cluster;
mod commands;
mod common;
mod connect_store;
mod faults;
mod guide;
mod hosts;
mod hosts_outputs;
mod lab;
mod object_stores;
mod procfs;
mod relay;
mod resume;
mod s3;
mod secret;
mod soak;
mod store_catalog;
mod store_outputs;
mod tls;
