//! # hearth-exec
//!
//! hearth's execution core, which names no stage and no trainer:
//!
//! - [`Session`](session::Session)s on three [masters](master::Master) (`local[N]`, `standalone[N]`,
//!   `df://host:port`), CSV, Parquet and image [reading](read) from files and [object stores](object_stores) ([`images`]), [writing](write), Spark's
//!   `randomSplit` and `repartition(n)` ([`frame`]), in-memory [caching](cache).
//! - The [barrier stage](barrier): one task per partition, all at once, running a registered barrier
//!   function; on [Ballista](ballista) through hearth's [codecs](codec).
//! - [Extensions](extension): what the crates above add to a session built with them
//!   ([`Session::builder`](session::Session::builder)) — SQL functions, barrier functions, planners and catalogs
//!   — and the [`UdfCodec`](extension::UdfCodec)s of functions that carry their data.
//!
//! ```
//! # tokio::runtime::Builder::new_multi_thread().build().unwrap().block_on(async {
//! use hearth_exec::frame::DataFrameExt;
//! use hearth_exec::session::Session;
//!
//! let session = Session::builder().local(2);
//! let df = session.context().sql("SELECT * FROM generate_series(1, 1000) AS t(x)").await.unwrap();
//! let [train, test] = <[_; 2]>::try_from(df.random_split(&[0.8, 0.2], 42).unwrap()).unwrap();
//! let rows = train.count().await.unwrap() + test.count().await.unwrap();
//! assert_eq!(rows, 1000);
//! # });
//! ```

// No function over 80 lines in the library (clippy.toml); tests, examples and benchmarks are exempt.
#![warn(clippy::too_many_lines)]

pub mod attribute;
pub mod ballista;
pub mod barrier;
pub mod cache;
pub mod codec;
pub mod driver_job;
pub mod error;
pub mod exchange;
pub mod extension;
pub mod frame;
pub mod images;
pub mod master;
pub mod object_stores;
mod physical_stage;
pub mod read;
pub mod session;
pub mod udf;
pub mod vector;
pub mod write;
