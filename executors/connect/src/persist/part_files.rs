//! The part files of a folder Spark's jobs write: `part-00000-<uuid>-c000.<ext>` beside a `_SUCCESS` marker.

use std::fs;
use std::path::{Path, PathBuf};

use crate::errors::{ConnectError, Result};

/// Writes `folder` (which must not exist yet) with one part file of `bytes` and the `_SUCCESS` marker.
pub(crate) fn write(folder: &Path, extension: &str, bytes: &[u8]) -> Result<()> {
    let failed = |e: std::io::Error| ConnectError::Execution(format!("writing {}: {e}", folder.display()));
    fs::create_dir_all(folder).map_err(failed)?;
    fs::write(folder.join(name(0, extension)), bytes).map_err(failed)?;
    fs::write(folder.join("_SUCCESS"), b"").map_err(failed)
}

/// The name Spark gives part file `index` of one write.
pub(crate) fn name(index: usize, extension: &str) -> String {
    format!("part-{index:05}-{}-c000.{extension}", uuid::Uuid::new_v4())
}

/// The part files of `folder` in name order, leaving out `_SUCCESS` and hidden files (Spark's `.crc`s).
pub(crate) fn list(folder: &Path) -> Result<Vec<PathBuf>> {
    let entries = fs::read_dir(folder).map_err(|e| {
        ConnectError::IllegalArgument(format!(
            "[PATH_NOT_FOUND] Path does not exist: {}: {e}",
            folder.display()
        ))
    })?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| {
            path.is_file()
                && path
                    .file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| !n.starts_with(['_', '.']))
        })
        .collect();
    files.sort();
    Ok(files)
}
