//! Driver programs shipped to the executors that lack them. An executor whose operator lets it run shipped
//! programs ([`run_shipped_programs`]: `hearth executor --run-shipped-programs`) fetches a stage's driver
//! program from the stage's coordinator on the driver's host — over a link that proves the job's secret, so
//! only the stage's own tasks get it, encrypted where the job's frames are — checks its SHA-256 against the
//! plan's, and keeps it by that hash in its work directory: each build crosses the network once per executor.
//! A fleet whose executors may run shipped programs runs whatever code its drivers send, as a Spark or Ray
//! cluster runs its jobs' code: its secret is then the whole of its protection.

use std::collections::HashSet;
use std::fs::{self, File};
use std::io::{self, Read};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{LazyLock, Mutex, OnceLock};
use std::time::Duration;

use datafusion::error::{DataFusionError, Result};
use hearth_collective::fetch_program;
use hearth_common::host::host_name;
use sha2::{Digest, Sha256};

use super::spec::{BarrierSpec, ProgramRef};
use crate::error::HearthError;

/// Where this executor keeps the programs it fetched, once it may run them.
static SHIPPED: OnceLock<PathBuf> = OnceLock::new();

/// The least time a task gives the fetch of its program (a large build over a slow link).
const LEAST_FETCH_TIME: Duration = Duration::from_secs(120);

/// Lets this process — a fleet's executor — run the driver programs its stages' drivers ship, keeping them
/// in `dir` (created, this user's alone); once a process.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// hearth_exec::barrier::shipped::run_shipped_programs(dir.path().join("programs")).unwrap();
/// assert!(hearth_exec::barrier::shipped::run_shipped_programs(dir.path().join("again")).is_err(), "set once");
/// ```
pub fn run_shipped_programs(dir: PathBuf) -> std::result::Result<(), HearthError> {
    let dir = private_programs_dir(&dir)?;
    SHIPPED
        .set(dir)
        .map_err(|dir| HearthError::persistence(dir, "shipped programs are already kept elsewhere"))
}

/// The folder `dir` for shipped programs, created if it is not there (at start, or again after something
/// removed it), resolved, and checked to be this user's alone.
fn private_programs_dir(dir: &Path) -> std::result::Result<PathBuf, HearthError> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| HearthError::persistence(dir, "creating the folder for shipped programs").caused_by(e))?;
    let dir = fs::canonicalize(dir)
        .map_err(|e| HearthError::persistence(dir, "resolving the folder for shipped programs").caused_by(e))?;
    // A folder made earlier by someone else, or open to others, could hold a planted program.
    let metadata = fs::metadata(&dir)
        .map_err(|e| HearthError::persistence(&dir, "reading the folder for shipped programs").caused_by(e))?;
    // SAFETY: getuid has no preconditions and cannot fail.
    let me = unsafe { libc::getuid() };
    if metadata.uid() != me || metadata.mode() & 0o077 != 0 {
        return Err(HearthError::persistence(
            &dir,
            "the folder for shipped programs must be this user's alone (mode 700): another user could plant a \
             program in it",
        ));
    }
    Ok(dir)
}

/// Whether `sha256` is a SHA-256 as hex: 64 lowercase hex digits, and so a file name of the cache alone.
fn is_sha256(sha256: &str) -> bool {
    sha256.len() == 64 && sha256.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Whether this process runs shipped programs.
pub(super) fn runs_shipped_programs() -> bool {
    SHIPPED.get().is_some()
}

/// This executor's copy of `program`, fetched from the coordinator of `spec` unless it holds that build.
pub(super) fn shipped_copy(spec: &BarrierSpec, program: &ProgramRef) -> Result<PathBuf> {
    let Some(dir) = SHIPPED.get() else {
        return Err(DataFusionError::Execution(
            "this executor runs no shipped program".into(),
        ));
    };
    let failed = |why: String| {
        DataFusionError::Execution(format!(
            "barrier stage {} ({}): fetching the driver program {} from the driver at {} to host {}: {why}",
            spec.job,
            spec.function,
            program.path.display(),
            spec.coordinator,
            host_name()
        ))
    };
    if !is_sha256(&program.sha256) {
        return Err(failed(format!(
            "the plan names it by {:?}, which is no SHA-256",
            program.sha256
        )));
    }
    let kept = dir.join(&program.sha256);
    // One fetch at a time on this executor: a task that waited finds the build its predecessor kept.
    static FETCHING: Mutex<()> = Mutex::new(());
    let _turn = FETCHING.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if is_kept(&kept, program).map_err(|e| failed(e.to_string()))? {
        return Ok(kept);
    }
    let secret = spec.job_secret().map_err(failed)?;
    // Ballista's task server removes job data on request: should the folder be gone, it is made again.
    private_programs_dir(dir).map_err(|e| failed(e.to_string()))?;
    let mut file = tempfile::NamedTempFile::new_in(dir).map_err(|e| failed(e.to_string()))?;
    let time = Duration::from_secs_f64(spec.timeout_secs).max(LEAST_FETCH_TIME);
    fetch_program(
        spec.coordinator,
        &secret,
        &program.sha256,
        program.size,
        file.as_file_mut(),
        time,
    )
    .map_err(|e| failed(e.to_string()))?;
    let (size, sha256) = identify(file.path()).map_err(|e| failed(e.to_string()))?;
    if (size, sha256.as_str()) != (program.size, program.sha256.as_str()) {
        return Err(failed(format!(
            "it arrived as {size} bytes with SHA-256 {sha256}, not the plan's {} bytes with {}",
            program.size, program.sha256
        )));
    }
    fs::set_permissions(file.path(), fs::Permissions::from_mode(0o700)).map_err(|e| failed(e.to_string()))?;
    file.persist(&kept).map_err(|e| failed(e.error.to_string()))?;
    verified().insert(kept.clone());
    log::info!(
        "fetched the driver program {} ({size} bytes) from the driver of barrier stage {}",
        program.path.display(),
        spec.job
    );
    Ok(kept)
}

/// The kept files this process hashed (or fetched and hashed) itself.
fn verified() -> std::sync::MutexGuard<'static, HashSet<PathBuf>> {
    static VERIFIED: LazyLock<Mutex<HashSet<PathBuf>>> = LazyLock::new(Mutex::default);
    VERIFIED.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Whether `kept` holds `program`'s build: hashed the first time this process uses it.
fn is_kept(kept: &Path, program: &ProgramRef) -> io::Result<bool> {
    if !kept.is_file() {
        return Ok(false);
    }
    if verified().contains(kept) {
        return Ok(true);
    }
    let (size, sha256) = identify(kept)?;
    let same = size == program.size && sha256 == program.sha256;
    if same {
        verified().insert(kept.to_path_buf());
    }
    Ok(same)
}

/// The size and SHA-256 of the file at `path`.
pub(super) fn identify(path: &Path) -> io::Result<(u64, String)> {
    let mut file = File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 20];
    let mut size = 0u64;
    loop {
        let read = file.read(&mut buffer)?;
        if read == 0 {
            break;
        }
        size += read as u64;
        hasher.update(&buffer[..read]);
    }
    let sha256 = hasher.finalize().iter().map(|b| format!("{b:02x}")).collect();
    Ok((size, sha256))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_removed_programs_folder_is_made_again_and_one_open_to_others_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let programs = dir.path().join("work.programs");
        let made = private_programs_dir(&programs).unwrap();
        fs::remove_dir(&made).unwrap();
        assert_eq!(private_programs_dir(&programs).unwrap(), made);
        assert_eq!(fs::metadata(&made).unwrap().mode() & 0o777, 0o700);
        fs::set_permissions(&made, fs::Permissions::from_mode(0o777)).unwrap();
        let refused = private_programs_dir(&programs).unwrap_err().to_string();
        assert!(refused.contains("this user's alone"), "{refused}");
    }
}
