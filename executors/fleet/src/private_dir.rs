//! The folders a fleet's processes keep their state in — an executor's work directory (shuffle files, spilled
//! rows), the scheduler's jobs' folders — this user's alone: made mode 700 when missing, refused when another
//! user owns them or can write them.

use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::Path;

use crate::error::{FleetError, Result};

/// Makes `dir` (mode 700) when it is missing; an error naming it as `what` when it is someone else's or
/// writable by others.
pub(crate) fn own_private_dir(dir: &Path, what: &str) -> Result<()> {
    let refused = |why: String| FleetError::Stopped(format!("{what} {}: {why}", dir.display()));
    if !dir.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| refused(format!("cannot make it: {e}")))?;
    }
    let metadata = std::fs::metadata(dir).map_err(|e| refused(format!("cannot read it: {e}")))?;
    if !metadata.is_dir() {
        return Err(refused("it is not a directory".to_string()));
    }
    let me = nix::unistd::geteuid().as_raw();
    if metadata.uid() != me {
        return Err(refused(format!(
            "it belongs to user {}, not to this one ({me}): what it holds would be theirs to read and replace",
            metadata.uid()
        )));
    }
    let mode = metadata.mode() & 0o777;
    if mode & 0o022 != 0 {
        return Err(refused(format!(
            "other users can write it (mode {mode:o}), and so replace the files it holds; `chmod 700` it"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn a_work_directory_is_made_private_and_one_others_can_write_is_refused() {
        let parent = tempfile::tempdir().unwrap();
        let made = parent.path().join("made").join("work");
        own_private_dir(&made, "the work directory").unwrap();
        let mode = |dir: &Path| std::fs::metadata(dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&made), 0o700);

        let open = parent.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let refused = own_private_dir(&open, "the work directory").unwrap_err().to_string();
        assert!(
            refused.contains("the work directory") && refused.contains("mode 777") && refused.contains("chmod 700"),
            "{refused}"
        );
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).unwrap();
        own_private_dir(&open, "the work directory").unwrap();
    }
}
