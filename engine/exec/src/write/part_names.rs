//! Part files named as Spark names them, whichever writer wrote them: `part-00000-<write id>.<codec>.parquet`,
//! `part-00000-<write id>.csv`, `part-00000-<write id>.json` — one write id for the files of one write (so
//! that appends never clash with earlier files). hearth's own Parquet writer numbers the files by partition;
//! DataFusion's writers deal batches to their files in turn, and keep their numbering.

use std::fs;
use std::io;
use std::path::Path;

use super::SUCCESS_FILE;

/// A name for one write's files that a later write into the same directory (`append`) does not repeat.
pub(super) fn write_id() -> String {
    hearth_common::ids::unique_id()
}

/// The name of part `part` of write `write_id`, its `suffix` being what follows the id (`.snappy.parquet`).
pub(super) fn part_name(part: usize, write_id: &str, suffix: &str) -> String {
    format!("part-{part:05}-{write_id}{suffix}")
}

/// What follows the write id in a Parquet part file's name compressed with `codec` (Spark's names:
/// `snappy` → `.snappy.parquet`, `zstd(3)` → `.zstd.parquet`).
pub(super) fn parquet_suffix(codec: &str) -> String {
    let codec = codec.split('(').next().unwrap_or(codec).to_ascii_lowercase();
    format!(".{codec}.parquet")
}

/// Renames the files another writer left in `dir` (all but the `_SUCCESS` marker) to Spark's part names with
/// `suffix`, in the order of the number that writer put last in each name (`…_3.csv`); returns how many.
pub(super) fn rename_parts(dir: &Path, suffix: &str) -> io::Result<usize> {
    let mut written: Vec<(Option<u64>, String)> = Vec::new();
    for entry in fs::read_dir(dir)? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        if name != SUCCESS_FILE {
            written.push((partition_of(&name), name));
        }
    }
    written.sort();
    let write_id = write_id();
    for (part, (_, name)) in written.iter().enumerate() {
        fs::rename(dir.join(name), dir.join(part_name(part, &write_id, suffix)))?;
    }
    Ok(written.len())
}

/// The file number at the end of a written file's stem (`…_12.parquet` → 12), if there is one.
fn partition_of(name: &str) -> Option<u64> {
    let stem = name.split('.').next()?;
    stem.rsplit_once('_')?.1.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_writers_files_get_spark_names_in_their_order() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["abc_10.csv", "abc_2.csv", "abc_0.csv", SUCCESS_FILE] {
            fs::write(dir.path().join(name), name).unwrap();
        }
        assert_eq!(rename_parts(dir.path(), ".csv").unwrap(), 3);
        let mut names: Vec<String> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names.len(), 4);
        assert_eq!(names[0], SUCCESS_FILE, "the marker keeps its name");
        names.remove(0);
        let id = names[0].trim_start_matches("part-00000-").trim_end_matches(".csv");
        for (part, held) in ["abc_0.csv", "abc_2.csv", "abc_10.csv"].iter().enumerate() {
            let name = part_name(part, id, ".csv");
            assert_eq!(fs::read_to_string(dir.path().join(&name)).unwrap(), *held, "{name}");
        }
    }
}
