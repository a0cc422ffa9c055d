//! Barrier functions of a driver program on a fleet. A fleet's executors know hearth's own functions; one
//! that a program registered (a [`FnBarrier`](super::FnBarrier), a
//! `HorovodRunner` main function) exists only in that program. So its
//! stage's plan names the program — its path, arguments, working directory and SHA-256 — and each task runs in
//! a copy of the program that the executor starts with the task's rows, as Spark's executors run a
//! PySpark job's functions in Python workers they start. The copy runs `main` as the driver did until it
//! registers the task's function, then runs the task and exits: the same program on every rank, as
//! `torchrun` and `horovodrun` start it. Until then sessions it connects are embedded ones, and running
//! another barrier stage is an error that says to register functions first.
//!
//! An executor runs a driver program only from a directory its operator allowed ([`allow_programs`]: `hearth
//! executor --allow-programs DIR…`), so a plan naming any other file — `/bin/sh`, say — runs nothing; its
//! host must then hold the same build of the program at the same path (one machine, a shared file system, or
//! a copy). Or its operator lets it run the programs drivers ship
//! ([`run_shipped_programs`](super::shipped::run_shipped_programs): `--run-shipped-programs`), and it fetches
//! a build it lacks from the stage's driver, by its SHA-256 ([`shipped`](super::shipped)).

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::BufWriter;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex, OnceLock};
use std::time::{Duration, SystemTime};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::ipc::reader::{FileReader, StreamReader};
use datafusion::arrow::ipc::writer::{FileWriter, StreamWriter};
use datafusion::error::{DataFusionError, Result};
use hearth_common::host::host_name;
use serde::{Deserialize, Serialize};

use super::context::Joining;
use super::gpus::GpuLease;
use super::shipped::{identify, runs_shipped_programs, shipped_copy};
use super::spec::BarrierSpec;
pub use super::spec::ProgramRef;
use super::spec::{reason, task_error};
use super::{BarrierFunction, BarrierTaskContext};
use crate::ballista::{SECRET_ENV, SECRET_FILE_ENV, SECRET_JOB_ENV};
use crate::error::HearthError;

/// The directories whose programs this process runs as barrier tasks' workers (none until
/// [`allow_programs`] is called).
static ALLOWED_PROGRAMS: OnceLock<Vec<PathBuf>> = OnceLock::new();

/// Lets this process — a fleet's executor — run driver programs that lie under `dirs` (resolved, symbolic
/// links and all), and no others; once a process.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// hearth_exec::barrier::program::allow_programs(vec![dir.path().to_path_buf()]).unwrap();
/// assert!(hearth_exec::barrier::program::allow_programs(vec![]).is_err(), "set once");
/// ```
pub fn allow_programs(dirs: Vec<PathBuf>) -> std::result::Result<(), HearthError> {
    let resolved = dirs
        .iter()
        .map(|dir| match fs::canonicalize(dir) {
            Ok(resolved) if resolved.is_dir() => Ok(resolved),
            Ok(_) => Err(HearthError::invalid_param(
                "executor",
                "--allow-programs",
                format!("{} is not a directory", dir.display()),
            )),
            Err(e) => {
                Err(HearthError::invalid_param("executor", "--allow-programs", dir.display().to_string()).caused_by(e))
            }
        })
        .collect::<std::result::Result<Vec<_>, _>>()?;
    ALLOWED_PROGRAMS
        .set(resolved)
        .map_err(|_| HearthError::invalid_param("executor", "--allow-programs", "the allowed programs are set once"))
}

/// The environment variable that makes a program a barrier task's worker: the directory holding the task.
const TASK_DIR_ENV: &str = "HEARTH_BARRIER_TASK";

/// How often an executor looks whether its worker ended or its stage was cancelled.
const POLL: Duration = Duration::from_millis(20);

/// What an executor hands its worker besides the rows.
#[derive(Debug, Serialize, Deserialize)]
struct WorkerTask {
    spec: BarrierSpec,
    /// The task's place among its host's tasks (see [`Joining`]).
    position: usize,
    /// The CUDA device the executor leased for the task.
    gpu: Option<usize>,
}

impl ProgramRef {
    /// This process's program, naming `schema` as the function's output.
    pub(crate) fn of_this_process(schema: &SchemaRef) -> Result<Self> {
        static THIS: OnceLock<std::result::Result<(PathBuf, u64, String), String>> = OnceLock::new();
        let (path, size, sha256) = THIS
            .get_or_init(|| {
                let path = std::env::current_exe().map_err(|e| format!("this program's path: {e}"))?;
                let (size, sha256) = identify(&path).map_err(|e| format!("{}: {e}", path.display()))?;
                Ok((path, size, sha256))
            })
            .clone()
            .map_err(DataFusionError::Execution)?;
        let args = std::env::args_os()
            .skip(1)
            .enumerate()
            .map(|(i, arg)| {
                arg.into_string().map_err(|arg| {
                    DataFusionError::Execution(format!(
                        "argument {} of this program ({arg:?}) is not UTF-8, so a fleet's executors cannot \
                         start the program with it",
                        i + 1
                    ))
                })
            })
            .collect::<Result<_>>()?;
        Ok(Self {
            path,
            args,
            dir: std::env::current_dir().ok(),
            size,
            sha256,
            schema: encode_schema(schema)?,
        })
    }

    /// The function's output schema.
    pub(crate) fn schema(&self) -> Result<SchemaRef> {
        let bytes = STANDARD
            .decode(&self.schema)
            .map_err(|e| DataFusionError::Internal(format!("the plan's function schema is not base64: {e}")))?;
        Ok(StreamReader::try_new(bytes.as_slice(), None)?.schema())
    }
}

fn encode_schema(schema: &SchemaRef) -> Result<String> {
    let mut bytes = Vec::new();
    StreamWriter::try_new(&mut bytes, schema)?.finish()?;
    Ok(STANDARD.encode(bytes))
}

/// A file as last hashed: its path, modification time and size.
type FileKey = (PathBuf, SystemTime, u64);

/// The file to run for `program`: under a directory its operator allowed, and this host's copy of the
/// driver's build (files already hashed are remembered).
fn check_program(program: &ProgramRef, function: &str) -> Result<PathBuf> {
    static HASHED: LazyLock<Mutex<HashMap<FileKey, String>>> = LazyLock::new(Default::default);
    let unusable = |why: String| {
        DataFusionError::Execution(format!(
            "barrier function {function:?} is in the driver program {}, which host {} cannot run: {why}; put the \
             driver's build at that path on every executor host (one machine, a shared file system, or a copy)",
            program.path.display(),
            host_name()
        ))
    };
    let path = fs::canonicalize(&program.path).map_err(|e| unusable(e.to_string()))?;
    refuse_unless_allowed(&path, program, function)?;
    let another_build = || unusable("the file here is another build than the driver's".into());
    let metadata = fs::metadata(&path).map_err(|e| unusable(e.to_string()))?;
    if metadata.len() != program.size {
        return Err(another_build());
    }
    let key = (
        path.clone(),
        metadata.modified().map_err(|e| unusable(e.to_string()))?,
        metadata.len(),
    );
    let known = HASHED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .get(&key)
        .cloned();
    let sha256 = match known {
        Some(sha256) => sha256,
        None => {
            let (_, sha256) = identify(&path).map_err(|e| unusable(e.to_string()))?;
            HASHED
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .insert(key, sha256.clone());
            sha256
        }
    };
    match sha256 == program.sha256 {
        true => Ok(path),
        false => Err(another_build()),
    }
}

/// An error unless `path`, `program`'s file resolved, lies under a directory this executor's operator allowed.
fn refuse_unless_allowed(path: &Path, program: &ProgramRef, function: &str) -> Result<()> {
    let allowed = ALLOWED_PROGRAMS.get().map_or(&[][..], Vec::as_slice);
    if allowed.iter().any(|dir| path.starts_with(dir)) {
        return Ok(());
    }
    let rule = match allowed {
        [] => "it was allowed none".to_string(),
        dirs => format!(
            "it was allowed {}",
            dirs.iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    Err(DataFusionError::Execution(format!(
        "barrier function {function:?} is in the driver program {}, which the executor on host {} does not run: \
         an executor runs driver programs only from the directories its operator allowed with `hearth executor \
         --allow-programs DIR…` (or `hearth cluster start --allow-programs DIR…`), or those its drivers ship \
         when started with --run-shipped-programs, and {rule}",
        program.path.display(),
        host_name()
    )))
}

/// A task's directory on the executor's host, removed with everything in it when dropped.
struct TaskDir(PathBuf);

impl TaskDir {
    fn create(job: &str) -> Result<Self> {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let name = format!(
            "hearth-{job}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let path = std::env::temp_dir().join(name);
        // Its task file holds the job's secret: this user's alone.
        fs::DirBuilder::new()
            .mode(0o700)
            .create(&path)
            .map_err(|e| DataFusionError::Execution(format!("{}: {e}", path.display())))?;
        Ok(Self(path))
    }
}

impl Drop for TaskDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

const TASK_FILE: &str = "task.json";
const INPUT_FILE: &str = "input.arrow";
const OUTPUT_FILE: &str = "output.arrow";
const ERROR_FILE: &str = "error.txt";
const LOG_FILE: &str = "program.log";

fn write_batches(path: &Path, schema: &SchemaRef, batches: &[RecordBatch]) -> Result<()> {
    let partial = path.with_extension("partial");
    let mut writer = FileWriter::try_new(BufWriter::new(File::create(&partial)?), schema)?;
    for batch in batches {
        writer.write(batch)?;
    }
    writer.finish()?;
    drop(writer);
    fs::rename(&partial, path)?;
    Ok(())
}

fn read_batches(path: &Path) -> Result<Vec<RecordBatch>> {
    let reader = FileReader::try_new(File::open(path)?, None)?;
    Ok(reader.collect::<std::result::Result<_, _>>()?)
}

/// The file of `program` this host runs: its own (see [`check_program`]), else one fetched from the driver
/// where this executor runs shipped programs.
fn program_to_run(spec: &BarrierSpec, program: &ProgramRef) -> Result<PathBuf> {
    match check_program(program, &spec.function) {
        Ok(path) => Ok(path),
        Err(here) if runs_shipped_programs() => shipped_copy(spec, program).map_err(|fetching| {
            DataFusionError::Execution(format!(
                "{} (and this host's own file: {})",
                reason(&fetching),
                reason(&here)
            ))
        }),
        Err(e) => Err(e),
    }
}

/// Runs one task of `spec` in a copy of the driver program: on the executor's blocking thread, until the
/// copy exits or the stage is cancelled (which kills it).
pub(crate) fn run_in_program(
    spec: &BarrierSpec,
    program: &ProgramRef,
    joining: Joining,
    input_schema: &SchemaRef,
    batches: Vec<RecordBatch>,
) -> Result<RecordBatch> {
    let path = program_to_run(spec, program)?;
    let dir = TaskDir::create(&spec.job)?;
    write_batches(&dir.0.join(INPUT_FILE), input_schema, &batches)?;
    drop(batches);
    // The copy gets none of the fleet's credentials: it is handed the job's secret itself, in its task
    // directory, which only this user reads.
    let task = WorkerTask {
        spec: spec
            .with_secret_resolved()
            .map_err(|why| task_error(spec, "a task", "starting", &why))?,
        position: joining.position,
        gpu: joining.gpu.as_ref().map(GpuLease::index),
    };
    fs::write(
        dir.0.join(TASK_FILE),
        serde_json::to_vec(&task).map_err(|e| DataFusionError::External(e.into()))?,
    )?;
    let log = File::create(dir.0.join(LOG_FILE))?;
    let working_dir = program
        .dir
        .as_ref()
        .filter(|dir| dir.is_dir())
        .cloned()
        .unwrap_or_else(std::env::temp_dir);
    // The copy's sessions are embedded ones: it gets none of the fleet's credentials.
    let mut child = Command::new(&path)
        .args(&program.args)
        .current_dir(working_dir)
        .env_remove(SECRET_ENV)
        .env_remove(SECRET_FILE_ENV)
        .env_remove(SECRET_JOB_ENV)
        .env(TASK_DIR_ENV, &dir.0)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
        .map_err(|e| {
            DataFusionError::Execution(format!(
                "barrier stage {}: starting the driver program {} on host {}: {e}",
                spec.job,
                program.path.display(),
                host_name()
            ))
        })?;
    let status = wait_or_kill(&mut child, &joining.cancelled)?;
    // What the copy printed goes to this executor's log, as horovodrun shows each rank's output.
    let log = fs::read_to_string(dir.0.join(LOG_FILE)).unwrap_or_default();
    for line in log.lines() {
        log::info!(
            "barrier stage {} ({}), task {}: {line}",
            spec.job,
            spec.function,
            task.position
        );
    }
    let output = dir.0.join(OUTPUT_FILE);
    if output.exists() {
        return read_batches(&output)?.into_iter().next().ok_or_else(|| {
            DataFusionError::Execution(format!("barrier stage {}: the program's task wrote no rows", spec.job))
        });
    }
    if let Ok(message) = fs::read_to_string(dir.0.join(ERROR_FILE)) {
        return Err(DataFusionError::Execution(message));
    }
    let tail: Vec<&str> = log.lines().rev().take(20).collect();
    let tail: Vec<&str> = tail.into_iter().rev().collect();
    Err(DataFusionError::Execution(format!(
        "barrier stage {} ({}): the driver program {} on host {} ended ({status}) without running the task: it \
         must register the function as the driver did (with the same arguments); its output ended with:\n{}",
        spec.job,
        spec.function,
        program.path.display(),
        host_name(),
        tail.join("\n")
    )))
}

fn wait_or_kill(child: &mut std::process::Child, cancelled: &Arc<AtomicBool>) -> Result<ExitStatus> {
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(status);
        }
        if cancelled.load(Ordering::Relaxed) {
            let _ = child.kill();
            let status = child.wait()?;
            return Err(DataFusionError::Execution(format!(
                "the stage was cancelled; its driver program's task was stopped ({status})"
            )));
        }
        std::thread::sleep(POLL);
    }
}

/// The task this process was started for, when an executor started it as a barrier task's worker.
fn worker_task() -> Option<&'static std::result::Result<(PathBuf, WorkerTask), HearthError>> {
    static TASK: OnceLock<Option<std::result::Result<(PathBuf, WorkerTask), HearthError>>> = OnceLock::new();
    TASK.get_or_init(|| {
        let dir = PathBuf::from(std::env::var_os(TASK_DIR_ENV)?);
        let file = dir.join(TASK_FILE);
        let task = fs::read(&file)
            .map_err(|e| HearthError::persistence(&file, "reading the barrier task").caused_by(e))
            .and_then(|bytes| {
                serde_json::from_slice(&bytes)
                    .map_err(|e| HearthError::persistence(&file, "not a barrier task").caused_by(e))
            });
        Some(task.map(|task| (dir, task)))
    })
    .as_ref()
}

/// Whether this process is a copy of a driver program that an executor started for a barrier task.
pub fn in_barrier_worker() -> bool {
    worker_task().is_some()
}

/// In a barrier task's worker, the function it was started for.
pub(crate) fn worker_function() -> Option<String> {
    match worker_task()? {
        Ok((_, task)) => Some(task.spec.function.clone()),
        Err(e) => Some(format!("(unreadable task: {e})")),
    }
}

/// In a barrier task's worker, runs the task when `function` is the one it was started for, and ends the
/// process; otherwise returns at once.
pub(crate) fn serve_if_worker(function: &dyn BarrierFunction) {
    let Some(found) = worker_task() else {
        return;
    };
    let (dir, task) = match found {
        Ok((dir, task)) => (dir, task),
        Err(e) => {
            eprintln!("hearth barrier task: {e}");
            std::process::exit(2);
        }
    };
    if task.spec.function != function.name() {
        return;
    }
    let written =
        serve(dir, task, function).and_then(|batch| write_batches(&dir.join(OUTPUT_FILE), &batch.schema(), &[batch]));
    match written {
        Ok(()) => std::process::exit(0),
        // The executor passes the message on as its task's error (without DataFusion's kind prefix).
        Err(e) => {
            let _ = fs::write(dir.join(ERROR_FILE), reason(&e));
            std::process::exit(1);
        }
    }
}

/// Joins the stage's ring and runs `function` over the task's rows; a failure names the stage, the task
/// and what it was doing.
fn serve(dir: &Path, task: &WorkerTask, function: &dyn BarrierFunction) -> Result<RecordBatch> {
    let spec = &task.spec;
    let batches =
        read_batches(&dir.join(INPUT_FILE)).map_err(|e| task_error(spec, "a task", "reading its rows", &e))?;
    let secret = spec
        .job_secret()
        .map_err(|why| task_error(spec, "a task", "starting", &why))?;
    let joining = Joining {
        position: task.position,
        resume: spec.resume.clone(),
        gpu: task.gpu.map(GpuLease::held_by_executor),
        cancelled: Arc::new(AtomicBool::new(false)),
    };
    let timeout = Duration::from_secs_f64(spec.timeout_secs.max(0.001));
    let mut context = BarrierTaskContext::join(spec.coordinator, secret, timeout, joining)
        .map_err(|e| task_error(spec, "a task", "joining", &e))?;
    let rank = context.rank();
    function
        .run(&mut context, &spec.args, batches)
        .map_err(|e| task_error(spec, &format!("rank {rank}"), "running", &reason(&e)))
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::datatypes::{DataType, Field, Schema};

    use super::*;

    fn program_at(path: &Path, schema: &SchemaRef) -> ProgramRef {
        let (size, sha256) = identify(path).unwrap();
        ProgramRef {
            path: path.to_path_buf(),
            args: vec![],
            dir: None,
            size,
            sha256,
            schema: encode_schema(schema).unwrap(),
        }
    }

    #[test]
    fn an_executor_runs_only_an_allowed_drivers_build_and_says_why_not() {
        let dir = std::env::temp_dir().join(format!("hearth-program-test-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("driver");
        fs::write(&path, b"build one").unwrap();
        let schema: SchemaRef = Arc::new(Schema::new(vec![Field::new("rank", DataType::UInt64, false)]));
        let program = program_at(&path, &schema);
        assert_eq!(program.schema().unwrap(), schema);
        // Until the executor's operator allows the program's directory, it runs nothing, and says so.
        let error = check_program(&program, "f").unwrap_err().to_string();
        assert!(
            error.contains("--allow-programs DIR") && error.contains("allowed none"),
            "{error}"
        );
        allow_programs(vec![dir.clone()]).unwrap();
        assert_eq!(check_program(&program, "f").unwrap(), fs::canonicalize(&path).unwrap());

        // A new modification time (the kernel's file clock ticks every few milliseconds), so not the hash kept.
        std::thread::sleep(Duration::from_millis(50));
        fs::write(&path, b"build two").unwrap();
        let error = check_program(&program, "f").unwrap_err().to_string();
        assert!(error.contains("another build") && error.contains("driver"), "{error}");
        fs::write(&path, b"a longer build").unwrap();
        let error = check_program(&program, "f").unwrap_err().to_string();
        assert!(
            error.contains("another build") && !error.contains("bytes"),
            "no sizes in errors: {error}"
        );
        fs::remove_dir_all(&dir).unwrap();
        let error = check_program(&program, "f").unwrap_err().to_string();
        assert!(
            error.contains("cannot run") && error.contains(&path.display().to_string()),
            "{error}"
        );
    }
}
