//! Sessions and masters: where a pipeline runs.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr};
use std::str::FromStr;
use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::datasource::MemTable;
use datafusion::prelude::{DataFrame, SessionConfig, SessionContext};

use ballista_core::extension::SessionConfigExt;
use datafusion::execution::session_state::SessionStateBuilder;

use crate::error::{HearthError, Result};
use crate::exchange::HearthQueryPlanner;
use crate::functions;

/// Where a session runs, in Spark's master URL syntax.
///
/// | master | runs |
/// |---|---|
/// | `local` | one process, one partition per core |
/// | `local[N]` | one process, `N` partitions |
/// | `local[*]` | as `local` |
/// | `standalone[N]` | a Ballista scheduler and one executor with `N` task slots in this process |
/// | `df://host:port` | the Ballista scheduler at `host:port` (`hearth scheduler`) and its executors |
///
/// ```
/// use hearth_engine::session::Master;
/// assert_eq!("local[2]".parse::<Master>().unwrap(), Master::Local { partitions: 2 });
/// assert_eq!("standalone[3]".parse::<Master>().unwrap(), Master::Standalone { partitions: 3 });
/// assert_eq!(
///     "df://10.0.0.5:50050".parse::<Master>().unwrap(),
///     Master::Remote { host: "10.0.0.5".into(), port: 50050 }
/// );
/// assert!("local[0]".parse::<Master>().is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Master {
    /// Embedded DataFusion with this many target partitions.
    Local {
        /// DataFusion's `target_partitions`: the parallelism of scans, aggregates and repartitions.
        partitions: usize,
    },
    /// Ballista's standalone cluster in this process: plans go through Ballista's scheduler and codecs.
    Standalone {
        /// Task slots of the one executor, and the target partitions.
        partitions: usize,
    },
    /// A remote Ballista scheduler.
    Remote {
        /// Its host.
        host: String,
        /// Its port.
        port: u16,
    },
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// `N` of `prefix[N]` (`prefix` and `prefix[*]` mean the cores).
fn bracketed(master: &str, prefix: &str) -> Option<std::result::Result<usize, ()>> {
    if master == prefix || master == format!("{prefix}[*]") {
        return Some(Ok(cores()));
    }
    let n = master.strip_prefix(prefix)?.strip_prefix('[')?.strip_suffix(']')?;
    Some(n.parse::<usize>().ok().filter(|&n| n > 0).ok_or(()))
}

impl FromStr for Master {
    type Err = HearthError;

    fn from_str(master: &str) -> Result<Self> {
        let error = |message: &str| HearthError::Master {
            master: master.to_string(),
            message: message.to_string(),
        };
        let trimmed = master.trim();
        if let Some(partitions) = bracketed(trimmed, "local") {
            let partitions =
                partitions.map_err(|_| error("expected local[N] with N a positive whole number, or local[*]"))?;
            return Ok(Master::Local { partitions });
        }
        if let Some(partitions) = bracketed(trimmed, "standalone") {
            let partitions = partitions
                .map_err(|_| error("expected standalone[N] with N a positive whole number, or standalone[*]"))?;
            return Ok(Master::Standalone { partitions });
        }
        if let Some(address) = trimmed.strip_prefix("df://") {
            let address = address.trim_end_matches('/');
            let (host, port) = match address.rsplit_once(':') {
                Some((host, port)) => (
                    host,
                    port.parse::<u16>()
                        .map_err(|_| error("the port must be a number from 1 to 65535"))?,
                ),
                None => (address, crate::ballista::DEFAULT_SCHEDULER_PORT),
            };
            if host.is_empty() {
                return Err(error("expected df://host:port"));
            }
            return Ok(Master::Remote {
                host: host.to_string(),
                port,
            });
        }
        Err(error(
            "unknown master; expected local[N], standalone[N] or df://host:port",
        ))
    }
}

impl fmt::Display for Master {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Master::Local { partitions } => write!(f, "local[{partitions}]"),
            Master::Standalone { partitions } => write!(f, "standalone[{partitions}]"),
            Master::Remote { host, port } => write!(f, "df://{host}:{port}"),
        }
    }
}

/// A hearth session: a DataFusion context with hearth's functions registered, configured for its master.
///
/// ```
/// # tokio_test_block(async {
/// use hearth_engine::session::Session;
///
/// let session = Session::new("local[2]").unwrap();
/// let df = session.sql("SELECT ml_one_hot(1.0, 3, true, 'error') AS v").await.unwrap();
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
    /// An embedded session for a `local` master URL (see [`Master`]); Ballista masters need
    /// [`Session::connect`].
    pub fn new(master: &str) -> Result<Self> {
        match master.parse()? {
            Master::Local { partitions } => Ok(Self::local(partitions)),
            other => Err(HearthError::Master {
                master: other.to_string(),
                message: "a Ballista master starts or reaches a scheduler: use Session::connect(master).await"
                    .to_string(),
            }),
        }
    }

    /// A session for any master: embedded for `local`, a Ballista cluster started in this process for
    /// `standalone`, the scheduler at the address for `df://`.
    pub async fn connect(master: &str) -> Result<Self> {
        let master: Master = master.parse()?;
        let failed = |e: datafusion::error::DataFusionError| HearthError::Master {
            master: master.to_string(),
            message: e.message().into_owned(),
        };
        match &master {
            Master::Local { partitions } => Ok(Self::local(*partitions)),
            Master::Standalone { partitions } => {
                let info = SessionInfo::new(master.clone(), None);
                let config = ballista_config(*partitions).with_ballista_standalone_parallelism(*partitions);
                let (ctx, url) = crate::ballista::start_standalone(config.with_extension(Arc::new(info)))
                    .await
                    .map_err(failed)?;
                Ok(Self::with_scheduler(master, ctx, url))
            }
            Master::Remote { host, port } => {
                let info = SessionInfo::new(master.clone(), None);
                let config = ballista_config(cores()).with_extension(Arc::new(info));
                let (ctx, url) = crate::ballista::connect_remote(host, *port, config)
                    .await
                    .map_err(failed)?;
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
        Self {
            master,
            ctx: SessionContext::new_with_state(state),
        }
    }

    /// An embedded session with `partitions` partitions, `local[partitions]`.
    pub fn local(partitions: usize) -> Self {
        let master = Master::Local {
            partitions: partitions.max(1),
        };
        let config = SessionConfig::new()
            .with_target_partitions(partitions.max(1))
            .with_information_schema(true)
            .with_extension(Arc::new(SessionInfo::new(master.clone(), None)));
        let state = SessionStateBuilder::new()
            .with_config(config)
            .with_default_features()
            .with_query_planner(Arc::new(HearthQueryPlanner))
            .build();
        let ctx = SessionContext::new_with_state(state);
        functions::register_all(&ctx);
        Self { master, ctx }
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

    /// Runs SQL (hearth's `ml_*` functions included).
    pub async fn sql(&self, query: &str) -> Result<DataFrame> {
        Ok(self.ctx.sql(query).await?)
    }

    /// Makes `df` queryable from SQL as `name`.
    pub fn register(&self, name: &str, df: &DataFrame) -> Result<()> {
        self.ctx.register_table(name, df.clone().into_view())?;
        Ok(())
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
    /// let df = hearth_engine::session::Session::local(2).read_batches(schema, vec![batch]).unwrap();
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

/// What hearth knows about the session a data frame belongs to: its master, its task slots, and where the
/// driver accepts barrier tasks. It rides in the DataFusion config, so any data frame can tell.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use hearth_engine::session::{Session, SessionInfo};
/// let df = Session::local(3).sql("SELECT 1").await.unwrap();
/// assert_eq!(SessionInfo::of(&df).task_slots().await.unwrap(), 3);
/// # });
/// ```
#[derive(Clone, Debug)]
pub struct SessionInfo {
    master: Master,
    scheduler: Option<String>,
    driver_host: IpAddr,
}

impl SessionInfo {
    fn new(master: Master, scheduler: Option<String>) -> Self {
        let driver_host = match std::env::var("HEARTH_DRIVER_HOST").ok().and_then(|h| h.parse().ok()) {
            Some(host) => host,
            None => match &master {
                Master::Remote { host, port } => driver_address_towards(host, *port),
                _ => IpAddr::V4(Ipv4Addr::LOCALHOST),
            },
        };
        Self {
            master,
            scheduler,
            driver_host,
        }
    }

    /// The session of `df`; a data frame from a plain DataFusion context counts as `local[target_partitions]`.
    pub fn of(df: &DataFrame) -> Self {
        let ctx = df.task_ctx();
        let config = ctx.session_config();
        config
            .get_extension::<SessionInfo>()
            .map(|info| SessionInfo::clone(&info))
            .unwrap_or_else(|| {
                SessionInfo::new(
                    Master::Local {
                        partitions: config.target_partitions(),
                    },
                    None,
                )
            })
    }

    /// The master.
    pub fn master(&self) -> &Master {
        &self.master
    }

    /// The Ballista scheduler's URL (`http://host:port`), for Ballista masters.
    pub fn scheduler(&self) -> Option<&str> {
        self.scheduler.as_deref()
    }

    /// How many tasks can run at once: a barrier stage may have at most this many. A remote cluster is
    /// asked (the live executors' vcores).
    pub async fn task_slots(&self) -> Result<usize> {
        match (&self.master, &self.scheduler) {
            (Master::Local { partitions } | Master::Standalone { partitions }, _) => Ok(*partitions),
            (Master::Remote { .. }, Some(url)) => crate::ballista::task_slots(url).await.map_err(HearthError::from),
            (Master::Remote { .. }, None) => Ok(0),
        }
    }

    /// The address the driver's rendezvous listens on: loopback for masters in this process, the
    /// interface that routes to the scheduler for a remote one, or `HEARTH_DRIVER_HOST`.
    pub fn driver_host(&self) -> IpAddr {
        self.driver_host
    }
}

/// This machine's address on the route to `host:port` (loopback when it cannot be found).
fn driver_address_towards(host: &str, port: u16) -> IpAddr {
    use std::net::ToSocketAddrs;
    (host, port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut addresses| addresses.next())
        .and_then(crate::host::address_towards)
        .unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST))
}

/// The configuration of a Ballista client session with `partitions` target partitions.
fn ballista_config(partitions: usize) -> SessionConfig {
    SessionConfig::new_with_ballista()
        .with_target_partitions(partitions)
        .with_information_schema(true)
}
