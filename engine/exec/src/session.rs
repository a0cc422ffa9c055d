//! Sessions: a DataFusion context with hearth's functions, planner and codecs, configured for its master.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use ballista_core::extension::SessionConfigExt;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::datasource::MemTable;
use datafusion::execution::SessionState;
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::optimizer::{Optimizer, OptimizerRule};
use datafusion::prelude::{DataFrame, SessionConfig, SessionContext};

use crate::ballista::{ClusterSecret, FleetAccess};
use crate::codec::{FLEET_MESSAGE_BYTES, HearthLogicalCodec, HearthPhysicalCodec};
use crate::driver_job::{DriverJob, JOB_ID_ENV};
use crate::error::{HearthError, Result};
use crate::exchange::HearthQueryPlanner;
use crate::extension::{Extensions, SessionExtension};
use crate::master::{Master, SessionInfo, cores};
use crate::object_stores::{StoreRegistry, StoreSettings};
use crate::read::{CsvOptions, LocatedCsvFactory, Reader};

/// hearth's session state for a Ballista scheduler, executor or client: DataFusion's defaults, hearth's SQL
/// functions (the core's and those of `extensions`) and query planner, hearth's codecs (with the extensions'
/// bound functions), and the object stores of `config`'s [`StoreSettings`], configured by `config`.
///
/// ```
/// use datafusion::execution::FunctionRegistry;
/// use datafusion::prelude::SessionConfig;
/// use ballista_core::extension::SessionConfigExt;
/// use hearth_exec::extension::Extensions;
///
/// let state = hearth_exec::session::hearth_state(SessionConfig::new_with_ballista(), &Extensions::default());
/// assert!(state.udf("ml_row_uniform").is_ok());
/// ```
pub fn hearth_state(config: SessionConfig, extensions: &Extensions) -> SessionState {
    let config = config
        .with_ballista_physical_extension_codec(Arc::new(HearthPhysicalCodec::new(extensions)))
        .with_ballista_logical_extension_codec(Arc::new(HearthLogicalCodec::new(extensions)))
        .with_ballista_grpc_client_max_message_size(FLEET_MESSAGE_BYTES)
        .with_extension(Arc::new(extensions.clone()));
    let state = SessionStateBuilder::new()
        .with_default_features()
        .with_runtime_env(StoreRegistry::runtime_for(&config))
        .with_config(config)
        .with_query_planner(Arc::new(HearthQueryPlanner))
        .with_optimizer_rules(optimizer_rules())
        .build();
    let ctx = SessionContext::new_with_state(state);
    extensions.register_functions(&ctx);
    ctx.state()
}

/// DataFusion's logical optimizer rules but the two that move struct field accesses (`get_field`) towards
/// the scan: on a plan whose relation is aliased twice (`SubqueryAlias` over a projection over another) they
/// extract a classifier's `get_field(scores, …)` below both aliases and leave columns that are both qualified
/// and not (`"#0".cat` and `cat`), which fails the plan.
fn optimizer_rules() -> Vec<Arc<dyn OptimizerRule + Send + Sync>> {
    const LEFT_OUT: [&str; 2] = ["extract_leaf_expressions", "push_down_leaf_projections"];
    Optimizer::new()
        .rules
        .into_iter()
        .filter(|rule| !LEFT_OUT.contains(&rule.name()))
        .collect()
}

/// What a session is built with: its [`SessionExtension`]s, listed in code where the session is made, as
/// DataFusion's `SessionStateBuilder` lists its features. `hearth_training::DefaultFeatures` adds
/// preprocessing's and training's (`with_default_features()`), `hearth_sql::ModelsFeature` the model catalog
/// (`with_models(dir)`); a session built without an extension has none of what it adds.
///
/// ```
/// use datafusion::execution::FunctionRegistry;
/// use hearth_exec::session::Session;
///
/// let session = Session::builder().build("local[2]").unwrap();
/// assert_eq!(session.partitions(), 2);
/// assert!(session.context().udf("ml_row_uniform").is_ok()); // the core's own function
/// assert!(Session::builder().build("standalone[2]").is_err()); // a fleet is reached with connect(..).await
/// ```
#[derive(Debug, Clone, Default)]
pub struct SessionBuilder {
    extensions: Extensions,
}

impl SessionBuilder {
    /// The builder with `extension` too (replacing one of the same name).
    pub fn with_extension(mut self, extension: Arc<dyn SessionExtension>) -> Self {
        self.extensions = self.extensions.with(extension);
        self
    }

    /// The extensions listed so far.
    pub fn extensions(&self) -> &Extensions {
        &self.extensions
    }

    /// An embedded session for a `local` master URL (see [`Master`]); Ballista masters need
    /// [`connect`](Self::connect).
    pub fn build(self, master: &str) -> Result<Session> {
        match master.parse()? {
            Master::Local { partitions } => Ok(self.local(partitions)),
            other => Err(HearthError::master(
                other.to_string(),
                "a Ballista master starts or reaches a scheduler: use Session::builder().connect(master).await",
            )),
        }
    }

    /// An embedded session with `partitions` partitions, `local[partitions]`.
    pub fn local(self, partitions: usize) -> Session {
        Session::local(partitions, self.extensions)
    }

    /// A session for any master: embedded for `local`, a Ballista cluster started in this process for
    /// `standalone`, the scheduler at the address for `df://`.
    ///
    /// In a copy of a driver program that a fleet's executor started for a barrier task (see
    /// [`barrier::program`](crate::barrier::program)), every master gives an embedded `local[1]` session:
    /// the copy only prepares what its function needs.
    pub async fn connect(self, master: &str) -> Result<Session> {
        Session::connect(master, self.extensions).await
    }
}

/// A hearth session: a DataFusion context with hearth's functions registered, configured for its master.
/// Made by a [`SessionBuilder`] ([`Session::builder`]).
///
/// ```
/// # tokio_test_block(async {
/// use hearth_exec::session::Session;
///
/// let session = Session::builder().build("local[2]").unwrap();
/// let df = session.context().sql("SELECT ml_row_uniform(7, 1.5) AS u").await.unwrap();
/// assert_eq!(df.count().await.unwrap(), 1);
/// # });
/// # fn tokio_test_block(f: impl std::future::Future<Output = ()>) {
/// #     tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
/// # }
/// ```
#[derive(Clone)]
pub struct Session {
    master: Master,
    ctx: SessionContext,
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("master", &self.master)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// A builder of a session, to list its extensions in.
    pub fn builder() -> SessionBuilder {
        SessionBuilder::default()
    }

    /// A session for any master, with `extensions` (see [`SessionBuilder::connect`]).
    async fn connect(master: &str, extensions: Extensions) -> Result<Self> {
        let master: Master = master.parse()?;
        if crate::barrier::program::in_barrier_worker() {
            return Ok(Self::local(1, extensions));
        }
        match &master {
            Master::Local { partitions } => Ok(Self::local(*partitions, extensions)),
            Master::Standalone { partitions } => {
                let info = SessionInfo::new(master.clone(), None);
                // Its servers admit only this process: a secret made here, never written anywhere, goes with
                // every request to them.
                let secret = ClusterSecret::generate();
                let access = FleetAccess {
                    secret: Some(secret.clone()),
                    tls: None,
                };
                let config = ballista_config(*partitions).with_ballista_standalone_parallelism(*partitions);
                let state = hearth_state(access.present_in(config.with_extension(Arc::new(info))), &extensions);
                let (ctx, url) = crate::ballista::start_standalone(state, secret)
                    .await
                    // DataFusion's message already says what failed ("cannot reach the scheduler at …"); its
                    // kind prefix ("Invalid or Unsupported Configuration") would only mislead.
                    .map_err(|e| HearthError::master(master.to_string(), e.message()))?;
                Ok(Self::with_scheduler(master, ctx, url))
            }
            Master::Remote { host, port } => {
                let info = SessionInfo::new(master.clone(), None);
                let mut config = ballista_config(cores())
                    .with_ballista_job_name(&app_name())
                    .with_extension(Arc::new(info));
                // The fleet's secret, when there is one, goes with every request to it, over TLS when the
                // fleet speaks it.
                let access = FleetAccess::find().map_err(|e| {
                    HearthError::master(master.to_string(), "finding the fleet's secret and TLS").caused_by(e)
                })?;
                config = access.present_in(config);
                let mut state = SessionStateBuilder::new_from_existing(hearth_state(config, &extensions));
                // A driver `hearth submit` started in cluster mode runs its queries in a Ballista session
                // named after its job, so the scheduler knows which queries `hearth job kill` cancels.
                if let Ok(job) = std::env::var(JOB_ID_ENV) {
                    state = state.with_session_id(job);
                }
                let (ctx, url) = crate::ballista::connect_remote(host, *port, state.build())
                    .await
                    // DataFusion's message already says what failed ("cannot reach the scheduler at …"); its
                    // kind prefix ("Invalid or Unsupported Configuration") would only mislead.
                    .map_err(|e| HearthError::master(master.to_string(), e.message()))?;
                Ok(Self::with_scheduler(master, ctx, url))
            }
        }
    }

    /// A session on a Ballista cluster whose scheduler answers at `url`: the context's `SessionInfo` learns
    /// the URL.
    fn with_scheduler(master: Master, ctx: SessionContext, url: String) -> Self {
        let info = SessionInfo::new(master.clone(), Some(url));
        let state = ctx.state();
        let mut config = state.config().clone();
        config = config.with_extension(Arc::new(info));
        let state = SessionStateBuilder::new_from_existing(state)
            .with_config(config)
            .build();
        Self::with_context(master, SessionContext::new_with_state(state))
    }

    /// A session of `ctx`, with its extensions' session additions (the model catalog, its planner).
    fn with_context(master: Master, ctx: SessionContext) -> Self {
        Extensions::of(&ctx).extend_session(&ctx);
        Self { master, ctx }
    }

    /// An embedded session with `partitions` partitions, `local[partitions]`, and `extensions`.
    fn local(partitions: usize, extensions: Extensions) -> Self {
        let master = Master::Local {
            partitions: partitions.max(1),
        };
        let config = SessionConfig::new()
            .with_target_partitions(partitions.max(1))
            .with_information_schema(true)
            .with_option_extension(StoreSettings::from_env())
            .with_extension(Arc::new(SessionInfo::new(master.clone(), None)))
            .with_extension(Arc::new(extensions.clone()));
        let mut state = SessionStateBuilder::new()
            .with_runtime_env(StoreRegistry::runtime_for(&config))
            .with_config(config)
            .with_default_features()
            .with_query_planner(Arc::new(HearthQueryPlanner))
            .with_optimizer_rules(optimizer_rules())
            .build();
        // CSV tables made in SQL name the file and line of a row that fails to read.
        if let Some(inner) = state.table_factories().get("CSV").cloned() {
            let located = Arc::new(LocatedCsvFactory { inner });
            state.table_factories_mut().insert("CSV".to_string(), located);
        }
        let ctx = SessionContext::new_with_state(state);
        extensions.register_functions(&ctx);
        Self::with_context(master, ctx)
    }

    /// Whether plans run on a Ballista cluster.
    pub fn is_distributed(&self) -> bool {
        !matches!(self.master, Master::Local { .. })
    }

    /// The master this session runs on.
    pub fn master(&self) -> &Master {
        &self.master
    }

    /// How many partitions scans, aggregates and repartitions use.
    pub fn partitions(&self) -> usize {
        self.ctx.copied_config().target_partitions()
    }

    /// The underlying DataFusion context, for anything DataFusion offers.
    pub fn context(&self) -> &SessionContext {
        &self.ctx
    }

    /// The session with `extension` kept in its configuration, where the crates above find what they keep
    /// per session (the model catalog, a training progress receiver) with
    /// [`SessionConfig::get_extension`].
    ///
    /// ```
    /// use std::sync::Arc;
    /// let session = hearth_exec::session::Session::builder().local(1).with_config_extension(Arc::new(7u32));
    /// assert_eq!(session.context().copied_config().get_extension::<u32>().as_deref(), Some(&7));
    /// ```
    pub fn with_config_extension<T: Send + Sync + 'static>(self, extension: Arc<T>) -> Self {
        let mut state = self.ctx.state();
        state.config_mut().set_extension(extension);
        self.with_state(state)
    }

    /// The session running as job `job`: its barrier stages keep their checkpoints under that name in their
    /// checkpoint directory ([`BarrierOptions::checkpoint_dir`](crate::barrier::BarrierOptions::checkpoint_dir)),
    /// and each resumes from the last one a run of the same job kept — as Ray Train's `Trainer.restore`
    /// resumes a run from its storage path. A driver that died is resumed by running it again as its job
    /// (the id its first run logged at its first checkpoint, or `hearth job resume ID` for a job a fleet
    /// started). Without it, a driver runs as `$HEARTH_JOB_ID`, else as a job of its own (`run-…`). A job's
    /// id names one run of it over its data: a stage resumes only from checkpoints of the same function,
    /// arguments and input plan, but new contents under the same paths are not seen — give a new run a new id.
    ///
    /// ```
    /// let _session = hearth_exec::session::Session::builder().local(1).resume_job("run-18ec1b22").unwrap();
    /// assert!(hearth_exec::session::Session::builder().local(1).resume_job("../x").is_err());
    /// ```
    pub fn resume_job(self, job: &str) -> Result<Self> {
        if !crate::driver_job::is_job_name(job) {
            return Err(HearthError::invalid_param(
                "session",
                "job",
                format!("{job:?} is not a job's id: {}", crate::driver_job::JOB_NAME_RULE),
            ));
        }
        Ok(self.with_config_extension(Arc::new(DriverJob::new(job.to_string()))))
    }

    /// The session on `state` (same master): for a crate above that replaces the state's planners.
    pub fn with_state(mut self, state: SessionState) -> Self {
        self.ctx = SessionContext::new_with_state(state);
        self
    }

    /// Makes `df` queryable from SQL as `name`.
    pub fn register(&self, name: &str, df: &DataFrame) -> Result<()> {
        self.ctx.register_table(name, df.clone().into_view())?;
        Ok(())
    }

    /// Reads a CSV file, or a directory of them: a local path, or an object store's URL (`s3://bucket/key.csv`,
    /// `gs://…`, `az://…`, `https://…`; see [`object_stores`](crate::object_stores) for the settings and
    /// credentials). On a fleet, each executor reads its own part of the files from the store.
    ///
    /// ```no_run
    /// # async fn demo() -> hearth_exec::error::Result<()> {
    /// use hearth_exec::{read::CsvOptions, session::Session};
    /// let df = Session::builder().local(2).read_csv("datasets/german_credit/credit-g.csv", &CsvOptions::new()).await?;
    /// # Ok(()) }
    /// ```
    pub async fn read_csv(&self, path: impl AsRef<Path>, options: &CsvOptions) -> Result<DataFrame> {
        Reader::new(&self.ctx, &self.master)
            .read_csv(path.as_ref(), options)
            .await
    }

    /// Reads a Parquet file, or a directory of them: a local path or an object store's URL, as
    /// [`read_csv`](Self::read_csv) reads.
    pub async fn read_parquet(&self, path: impl AsRef<Path>) -> Result<DataFrame> {
        Reader::new(&self.ctx, &self.master).read_parquet(path.as_ref()).await
    }

    /// A data frame over record batches held in memory, spread evenly over the session's partitions.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use datafusion::arrow::array::{Float64Array, RecordBatch};
    /// use datafusion::arrow::datatypes::{DataType, Field, Schema};
    ///
    /// let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::Float64, false)]));
    /// let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(Float64Array::from(vec![1.0, 2.0]))]).unwrap();
    /// let df = hearth_exec::session::Session::builder().local(2).read_batches(schema, vec![batch]).unwrap();
    /// ```
    pub fn read_batches(&self, schema: SchemaRef, batches: Vec<RecordBatch>) -> Result<DataFrame> {
        let partitions = self.partitions();
        let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
        let chunk = rows.div_ceil(partitions).clamp(1, 8192);
        let mut parts: Vec<Vec<RecordBatch>> = vec![Vec::new(); partitions];
        let mut next = 0;
        for batch in batches {
            let mut offset = 0;
            while offset < batch.num_rows() {
                let len = chunk.min(batch.num_rows() - offset);
                parts[next % partitions].push(batch.slice(offset, len));
                next += 1;
                offset += len;
            }
        }
        let table = MemTable::try_new(schema, parts)?;
        Ok(self.ctx.read_table(Arc::new(table))?)
    }
}

/// The environment variable that names a driver's job in the fleet (`hearth submit --name`, as Spark's
/// `spark.app.name`): the name Ballista's jobs carry. Without it, `hearth`.
pub const APP_NAME_ENV: &str = "HEARTH_APP_NAME";

/// The name of this driver's jobs on a fleet: `$HEARTH_APP_NAME`, else `hearth`.
fn app_name() -> String {
    std::env::var(APP_NAME_ENV)
        .ok()
        .filter(|name| !name.trim().is_empty())
        .unwrap_or_else(|| "hearth".to_string())
}

/// The configuration of a Ballista client session with `partitions` target partitions, and the store settings
/// of this driver's environment, which its queries carry to the scheduler and every task.
fn ballista_config(partitions: usize) -> SessionConfig {
    SessionConfig::new_with_ballista()
        .with_target_partitions(partitions)
        .with_information_schema(true)
        .with_option_extension(StoreSettings::from_env())
}
