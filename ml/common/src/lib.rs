//! # hearth-common
//!
//! The helpers every hearth crate shares and none owns, with no DataFusion or Arrow beneath them:
//! Spark's parameter vocabulary ([`params`]), the closest [`names`] for "did you mean" errors, unique [`ids`],
//! this host's name and address ([`host`]), [`files`], which writes a directory whole — a model, a
//! pipeline, a frame's part files — so that a reader never meets one half-written, [`scratch`], the
//! directories of spilled rows that a killed process does not leave behind for good, and [`peers`]: whose
//! process on this machine is at the other end of a connection.
//!
//! ```
//! use hearth_common::files::{WholeDirError, write_dir_whole};
//!
//! let dest = std::env::temp_dir().join(format!("hearth-doc-common-{}", std::process::id()));
//! let written: Result<(), WholeDirError> = write_dir_whole(&dest, |dir| Ok(std::fs::write(dir.join("a.json"), "{}")?));
//! written.unwrap();
//! assert_eq!(std::fs::read_to_string(dest.join("a.json")).unwrap(), "{}");
//! # std::fs::remove_dir_all(&dest).unwrap();
//! ```

// No function over 80 lines in the library (clippy.toml); tests, examples and benchmarks are exempt.
#![warn(clippy::too_many_lines)]

pub mod appending;
pub mod files;
pub mod host;
pub mod ids;
pub mod names;
pub mod params;
pub mod peers;
pub mod scratch;
