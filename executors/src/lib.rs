//! hearth's fleet and its command line: the `hearth` program's scheduler, executors, cluster scripts,
//! submission and job commands, and `hearth sql`.

pub mod cli;
pub mod fleet;
