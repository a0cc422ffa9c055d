//! The driver's side of a barrier stage: the gang check, the exact repartition, the rendezvous, the run,
//! and whole-stage retries.

use std::fmt;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ballista_core::extension::SessionConfigExt;
use datafusion::arrow::array::RecordBatch;
use datafusion::prelude::DataFrame;
use hearth_collective::{Coordinator, FrameProtection, JobSecret, Upload, UploadRule};
use serde::{Deserialize, Serialize};

use super::checkpoints::{StageCheckpoints, StageIdentity};
use super::program::{ProgramRef, worker_function};
use super::spec::DerivedSecret;
use super::{BarrierExec, BarrierOptions, BarrierSpec, ResumePoint, function, is_user_function};
use crate::ballista::ClusterSecret;
use crate::driver_job::{DriverJob, default_checkpoint_dir};
use crate::error::{HearthError, Result};
use crate::frame::exact_repartition;
use crate::master::{Master, SessionInfo};
use crate::object_stores::StoreSettings;
use crate::physical_stage::run_over;

/// A barrier stage to run from the driver: `workers` tasks of a registered function over a data frame's
/// rows, redistributed into exactly `workers` partitions (see the [module](super) example). A failed run is
/// retried as a whole, up to `max_attempts` runs, each retry resuming from the last bytes a task sent the
/// driver.
#[derive(Clone, Debug)]
pub struct BarrierStage {
    function: String,
    args: String,
    options: BarrierOptions,
    on_upload: Option<UploadObserver>,
    upload_rule: Option<UploadRule>,
}

/// Called on the driver with each new upload of a running stage (a checkpoint after an epoch).
#[derive(Clone)]
struct UploadObserver(Arc<dyn Fn(&Upload) + Send + Sync>);

impl fmt::Debug for UploadObserver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("UploadObserver")
    }
}

/// How often a running stage looks for new uploads to pass on.
const UPLOAD_POLL: Duration = Duration::from_millis(200);

/// One run of a barrier stage, as the driver saw it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AttemptReport {
    /// 1 for the first run.
    pub attempt: usize,
    /// The epoch of the bytes it resumed from (0 when it started afresh).
    pub resumed_from_epoch: usize,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// Why it failed; none when it succeeded.
    pub error: Option<String>,
}

/// What a barrier stage returned: every task's rows, and every run it took.
#[derive(Debug)]
pub struct StageRun {
    /// Every task's rows (one batch per task, in partition order) from the run that succeeded.
    pub batches: Vec<RecordBatch>,
    /// Each run of the stage; the last one succeeded.
    pub attempts: Vec<AttemptReport>,
}

/// Fails fast, naming both numbers, when the session has fewer task slots than a stage of `workers` tasks.
pub async fn check_slots(info: &SessionInfo, workers: usize) -> Result<()> {
    let slots = info.task_slots().await?;
    if workers > slots {
        return Err(HearthError::Gang {
            workers,
            slots,
            master: info.master().to_string(),
        });
    }
    Ok(())
}

/// Fails fast, naming both numbers, when a stage of `workers` tasks that each hold a GPU could never run
/// at once in the session; a task holds one GPU at most.
pub(crate) async fn check_gpus(info: &SessionInfo, workers: usize, gpus_per_task: usize) -> Result<()> {
    match gpus_per_task {
        0 => return Ok(()),
        1 => {}
        _ => {
            return Err(HearthError::invalid_param(
                "barrier stage",
                "gpus_per_task",
                format!("a task holds one GPU at most, got {gpus_per_task}"),
            ));
        }
    }
    let found = info.gpu_slots().await?;
    if workers > found {
        // Tasks of a session in this process see this process's GPUs: say why there are none.
        let why = match (found, info.runs_tasks_here(), super::local_gpus()) {
            (0, true, Err(why)) => format!(" ({why})"),
            _ => String::new(),
        };
        return Err(HearthError::GangGpus {
            gpus: workers,
            workers,
            found,
            why,
            master: info.master().to_string(),
        });
    }
    Ok(())
}

impl BarrierStage {
    /// A stage running the function registered as `function` with argument string `args`, with
    /// [`BarrierOptions`]' defaults.
    pub fn new(function: impl Into<String>, args: impl Into<String>) -> Self {
        Self {
            function: function.into(),
            args: args.into(),
            options: BarrierOptions::default(),
            on_upload: None,
            upload_rule: None,
        }
    }

    /// Calls `observer` on the driver with each new upload the tasks send while the stage runs (as a
    /// checkpoint reaches the driver after each epoch), for progress reports.
    pub fn on_upload(mut self, observer: Arc<dyn Fn(&Upload) + Send + Sync>) -> Self {
        self.on_upload = Some(UploadObserver(observer));
        self
    }

    /// Keeps only the uploads `rule` allows (a trainer's checkpoints: rank 0's, up to its last epoch); by
    /// default every task's upload is kept.
    pub fn keep_uploads(mut self, rule: UploadRule) -> Self {
        self.upload_rule = Some(rule);
        self
    }

    /// All the settings at once.
    pub fn options(mut self, options: BarrierOptions) -> Self {
        self.options = options;
        self
    }

    /// How many tasks run at once (one per partition).
    pub fn workers(mut self, workers: usize) -> Self {
        self.options.workers = workers;
        self
    }

    /// Runs of the whole stage before giving up.
    pub fn max_attempts(mut self, attempts: usize) -> Self {
        self.options.max_attempts = attempts;
        self
    }

    /// The longest any one collective may take before every task fails.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.options.timeout = timeout;
        self
    }

    /// GPUs each task needs (0 or 1).
    pub fn gpus_per_task(mut self, gpus: usize) -> Self {
        self.options.gpus_per_task = gpus;
        self
    }

    /// How long the driver waits for all tasks to register before failing the stage, naming who is missing.
    pub fn rendezvous_timeout(mut self, timeout: Duration) -> Self {
        self.options.rendezvous_timeout = timeout;
        self
    }

    /// The bytes of its partition each task may hold in memory; beyond them a task spills its rows to disk
    /// (see [`BarrierInput`](super::BarrierInput)).
    pub fn memory_budget(mut self, bytes: u64) -> Self {
        self.options.memory_budget = Some(bytes);
        self
    }

    /// How the links between tasks protect their frames: encrypted (default) or integrity-checked alone.
    pub fn frame_protection(mut self, protection: FrameProtection) -> Self {
        self.options.frame_protection = protection;
        self
    }

    /// Runs the stage over `df` and returns every task's rows.
    pub async fn run(&self, df: &DataFrame) -> Result<Vec<RecordBatch>> {
        Ok(self.run_reporting(df).await?.batches)
    }

    /// Runs the stage over `df`, retrying a failed run as a whole, and returns the rows with a report of
    /// every run. Errors no retry could change (too few slots, a bad parameter) end it at once.
    pub async fn run_reporting(&self, df: &DataFrame) -> Result<StageRun> {
        if let Some(serving) = worker_function() {
            return Err(HearthError::barrier(
                &self.function,
                format!(
                    "this process is a copy of the driver program that an executor started for a task of barrier \
                     function {serving:?}, and it reached this stage before registering that function: on a \
                     fleet, register a program's barrier functions before it runs any stage"
                ),
            ));
        }
        let attempts = self.options.max_attempts.max(1);
        let mut reports = Vec::new();
        let (mut checkpoints, mut resume) = self.checkpoints(df).await?;
        for attempt in 1..=attempts {
            let started = Instant::now();
            let resumed_from_epoch = resume.as_ref().map_or(0, |r| r.epoch);
            let mut coordinator = None;
            let result = self
                .execute(df, resume.clone(), &mut coordinator, checkpoints.as_mut())
                .await;
            let mut report = AttemptReport {
                attempt,
                resumed_from_epoch,
                seconds: started.elapsed().as_secs_f64(),
                error: None,
            };
            match result {
                Ok(batches) => {
                    reports.push(report);
                    return Ok(StageRun {
                        batches,
                        attempts: reports,
                    });
                }
                Err(e)
                    if matches!(
                        e.root(),
                        HearthError::Gang { .. } | HearthError::GangGpus { .. } | HearthError::InvalidParam { .. }
                    ) =>
                {
                    return Err(e);
                }
                Err(e) => {
                    if let Some(upload) = coordinator.as_ref().and_then(Coordinator::latest_upload) {
                        resume = Some(ResumePoint {
                            epoch: upload.epoch,
                            bytes: upload.bytes,
                        });
                    }
                    let next = match (attempt < attempts, &resume) {
                        (false, _) => String::new(),
                        (true, Some(point)) => format!("; retrying from the checkpoint of epoch {}", point.epoch),
                        (true, None) => "; retrying from the start".to_string(),
                    };
                    log::warn!(
                        "barrier stage {}: attempt {attempt} of {attempts} failed: {e}{next}",
                        self.function
                    );
                    report.error = Some(e.to_string());
                    reports.push(report);
                }
            }
        }
        Err(HearthError::barrier(&self.function, failed_every_time(&reports)))
    }

    /// Where this stage's checkpoints are kept, when its options or `$HEARTH_CHECKPOINT_DIR` name a
    /// directory — under the driver's job (see [`driver_job`](crate::driver_job)) — and the last one a run of
    /// the job kept there, to resume from.
    async fn checkpoints(&self, df: &DataFrame) -> Result<(Option<StageCheckpoints>, Option<ResumePoint>)> {
        let Some(dir) = self.options.checkpoint_dir.clone().or_else(default_checkpoint_dir) else {
            return Ok((None, None));
        };
        let config = df.task_ctx().session_config().clone();
        let job = DriverJob::of(&config);
        let settings = StoreSettings::of(&config);
        let input = df.logical_plan().display_indent().to_string();
        let identity = StageIdentity {
            function: &self.function,
            arguments: &self.args,
            input: &input,
        };
        let mut kept = StageCheckpoints::open(&dir, &job, identity, &settings).await?;
        if job.first_checkpoints() {
            log::warn!(
                "this driver runs as job {}: its stages' checkpoints go to {dir}/{}/; a run of the job again \
                 resumes them (hearth job resume, HEARTH_JOB_ID or Session::resume_job)",
                job.id,
                job.id
            );
        }
        let resume = kept.latest().await?;
        if let Some(point) = &resume {
            log::warn!(
                "barrier stage {}: resuming from the checkpoint of epoch {} in {}",
                self.function,
                point.epoch,
                kept.location()
            );
        }
        Ok((Some(kept), resume))
    }

    /// This program, for a fleet's executors to run the stage's function in, when the function is the
    /// program's own and `master` is a fleet.
    async fn program(&self, master: &Master) -> Result<Option<ProgramRef>> {
        if !matches!(master, Master::Remote { .. }) || !is_user_function(&self.function) {
            return Ok(None);
        }
        let schema = function(&self.function)?.schema(&self.args)?;
        let program = tokio::task::spawn_blocking(move || ProgramRef::of_this_process(&schema))
            .await
            .map_err(|e| HearthError::barrier(&self.function, "identifying this program").caused_by(e))??;
        Ok(Some(program))
    }

    /// One run: the rendezvous (kept in `coordinator`, which holds what the tasks sent the driver), the
    /// exact repartition, and the plan, collected here or submitted to the cluster.
    async fn execute(
        &self,
        df: &DataFrame,
        resume: Option<ResumePoint>,
        coordinator: &mut Option<Coordinator>,
        checkpoints: Option<&mut StageCheckpoints>,
    ) -> Result<Vec<RecordBatch>> {
        let info = SessionInfo::of(df);
        let workers = self.options.workers;
        if workers == 0 {
            return Err(HearthError::invalid_param(
                format!("barrier stage {}", self.function),
                "workers",
                "must be at least 1",
            ));
        }
        check_slots(&info, workers).await?;
        check_gpus(&info, workers, self.options.gpus_per_task).await?;
        let program = self.program(info.master()).await?;
        // On a fleet that speaks TLS, the job's frames between ranks are encrypted as well.
        let protection = match df.task_ctx().session_config().ballista_use_tls() {
            true => FrameProtection::Encryption,
            false => self.options.frame_protection,
        };
        let (started, spec) = self.start_rendezvous(&info, protection, resume, program)?;
        let started = coordinator.insert(started);
        let running = run_stage(df, spec);
        match (&self.on_upload, checkpoints) {
            (None, None) => running.await,
            (observer, checkpoints) => {
                let watcher = UploadWatcher {
                    coordinator: started,
                    observer: observer.as_ref(),
                    checkpoints,
                    seen: None,
                };
                watcher.watch(running).await
            }
        }
    }

    /// The rendezvous of a new run, listening on the driver's host, and the stage's spec that names it.
    fn start_rendezvous(
        &self,
        info: &SessionInfo,
        protection: FrameProtection,
        resume: Option<ResumePoint>,
        program: Option<ProgramRef>,
    ) -> Result<(Coordinator, BarrierSpec)> {
        let workers = self.options.workers;
        let (secret, secret_from) = stage_secret(info)?;
        let secret = secret.with_protection(protection);
        let job = format!("job-{}", &JobSecret::generate().to_hex()[..12]);
        let coordinator = Coordinator::start(
            SocketAddr::new(info.driver_host(), 0),
            workers,
            secret.clone(),
            self.options.rendezvous_timeout,
        )
        .map_err(|e| HearthError::barrier(&job, "starting the rendezvous").caused_by(e))?;
        if let Some(rule) = self.upload_rule {
            coordinator.keep_uploads(rule);
        }
        // Executors that lack the driver's build fetch it from the coordinator (see `shipped`).
        if let Some(program) = &program {
            coordinator.offer_program(program.path.clone(), program.sha256.clone());
        }
        let spec = BarrierSpec {
            function: self.function.clone(),
            args: self.args.clone(),
            world_size: workers,
            coordinator: coordinator.address(),
            secret: match secret_from {
                Some(_) => String::new(),
                None => secret.to_hex(),
            },
            secret_from,
            timeout_secs: self.options.timeout.as_secs_f64(),
            job,
            resume,
            gpus_per_task: self.options.gpus_per_task,
            frame_protection: protection,
            program,
            memory_budget: self.options.memory_budget,
        };
        Ok((coordinator, spec))
    }
}

/// What a stage that failed every attempt says: each attempt, the epoch it started from and its error.
fn failed_every_time(reports: &[AttemptReport]) -> String {
    let lines: Vec<String> = reports
        .iter()
        .map(|a| {
            format!(
                "attempt {} (from epoch {}): {}",
                a.attempt,
                a.resumed_from_epoch,
                a.error.as_deref().unwrap_or("ok")
            )
        })
        .collect();
    format!("failed {} times:\n  {}", reports.len(), lines.join("\n  "))
}

/// A new stage's job secret, and where the executors derive it from: from the key this driver holds (the
/// fleet's secret or its job's) and a fresh nonce when the session reaches a remote fleet with a secret, so
/// the plan carries none; else a fresh random secret, which the plan carries (embedded sessions, and fleets
/// without a secret).
fn stage_secret(info: &SessionInfo) -> Result<(JobSecret, Option<DerivedSecret>)> {
    let key = match info.master() {
        Master::Remote { .. } => ClusterSecret::find()?,
        Master::Local { .. } | Master::Standalone { .. } => None,
    };
    Ok(match key {
        Some(key) => {
            let (secret, derived) = DerivedSecret::new_from(&key);
            (secret, Some(derived))
        }
        None => (JobSecret::generate(), None),
    })
}

/// Runs the barrier stage `spec` over `df`, exactly repartitioned: collected here, or submitted to the
/// session's cluster (where the exact repartition becomes Ballista's shuffle stage).
async fn run_stage(df: &DataFrame, spec: BarrierSpec) -> Result<Vec<RecordBatch>> {
    let partitioned = exact_repartition(df, spec.world_size);
    run_over(partitioned, |input| Ok(Arc::new(BarrierExec::try_new(input, spec)?))).await
}

/// What passes a running stage's uploads on: to the observer (progress), and to the stage's checkpoints.
struct UploadWatcher<'a> {
    coordinator: &'a Coordinator,
    observer: Option<&'a UploadObserver>,
    checkpoints: Option<&'a mut StageCheckpoints>,
    /// The epoch of the last upload passed on.
    seen: Option<usize>,
}

impl UploadWatcher<'_> {
    /// Awaits `running`, passing each new upload the coordinator receives on while it runs, and the last one
    /// when it ends.
    async fn watch(mut self, running: impl Future<Output = Result<Vec<RecordBatch>>>) -> Result<Vec<RecordBatch>> {
        tokio::pin!(running);
        let mut ticks = tokio::time::interval(UPLOAD_POLL);
        loop {
            tokio::select! {
                result = &mut running => {
                    self.pass_on().await;
                    return result;
                }
                _ = ticks.tick() => self.pass_on().await,
            }
        }
    }

    /// Passes the latest upload on, if it is new. A checkpoint that cannot be written is said, not fatal:
    /// the stage goes on, and the next epoch's is tried.
    async fn pass_on(&mut self) {
        let Some(upload) = self.coordinator.latest_upload() else {
            return;
        };
        if self.seen == Some(upload.epoch) {
            return;
        }
        self.seen = Some(upload.epoch);
        if let Some(observer) = self.observer {
            (observer.0)(&upload);
        }
        if let Some(checkpoints) = self.checkpoints.as_deref_mut() {
            match checkpoints.keep(&upload).await {
                Ok(()) => log::info!(
                    target: "hearth::training",
                    "checkpoint of epoch {} kept in {}",
                    upload.epoch,
                    checkpoints.location()
                ),
                Err(e) => log::warn!("the checkpoint of epoch {}: {e}", upload.epoch),
            }
        }
    }
}
