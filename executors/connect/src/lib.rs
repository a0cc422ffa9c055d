//! hearth's Spark Connect server: a PySpark client that changes `.master("local[2]")` to
//! `.remote("sc://host:15002")` runs its DataFrame code on hearth — each relation planned onto DataFusion on the
//! server's master, results streamed back as Arrow.
//!
//! The protocol's messages come from the Apache Spark project's `apache-spark-connect-proto` crate; this crate
//! is the service side: the RPCs ([`routes`](crate) and [`rpcs`](crate)), client sessions, the translation of
//! relations and expressions ([`plan`]), Spark's types ([`types`]), `show()`'s text ([`show`]) and Spark's
//! errors ([`ConnectError`]).
//!
//! ```no_run
//! # async fn serve() -> Result<(), hearth_connect::ConnectError> {
//! use hearth_connect::{ConnectOptions, ConnectServer};
//!
//! let server = ConnectServer::start(ConnectOptions::new("127.0.0.1:15002".parse().unwrap(), "local[2]")).await?;
//! println!("serving sc://localhost:{}", server.address().port());
//! server.wait().await
//! # }
//! ```

// No function over 80 lines in the library (clippy.toml).
#![warn(clippy::too_many_lines)]

mod analyze;
mod auth;
mod config;
mod errors;
mod execute;
mod ml;
mod models;
mod persist;
pub mod plan;
mod results;
mod routes;
mod rpcs;
mod server;
mod sessions;
pub mod show;
pub mod types;
mod write;

pub use analyze::SPARK_VERSION;
pub use auth::Token;
pub use config::SessionConfig;
pub use errors::{ConnectError, Result};
pub use server::{ConnectOptions, ConnectServer, DEFAULT_PORT};
