//! Sessions and masters: where a pipeline runs.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr};
use std::str::FromStr;
use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::datasource::MemTable;
use datafusion::prelude::{DataFrame, SessionConfig, SessionContext};

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
///
/// ```
/// use hearth_engine::session::Master;
/// assert_eq!("local[2]".parse::<Master>().unwrap(), Master::Local { partitions: 2 });
/// assert!("local[0]".parse::<Master>().is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Master {
    /// Embedded DataFusion with this many target partitions.
    Local {
        /// DataFusion's `target_partitions`: the parallelism of scans, aggregates and repartitions.
        partitions: usize,
    },
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

impl FromStr for Master {
    type Err = HearthError;

    fn from_str(master: &str) -> Result<Self> {
        let error = |message: &str| HearthError::Master {
            master: master.to_string(),
            message: message.to_string(),
        };
        let trimmed = master.trim();
        if trimmed == "local" || trimmed == "local[*]" {
            return Ok(Master::Local { partitions: cores() });
        }
        if let Some(n) = trimmed.strip_prefix("local[").and_then(|rest| rest.strip_suffix(']')) {
            return match n.parse::<usize>() {
                Ok(partitions) if partitions > 0 => Ok(Master::Local { partitions }),
                _ => Err(error("expected local[N] with N a positive whole number, or local[*]")),
            };
        }
        if trimmed.starts_with("standalone") || trimmed.starts_with("df://") {
            return Err(error("Ballista masters are not part of this build yet; use local[N]"));
        }
        Err(error("unknown master; expected local, local[N] or local[*]"))
    }
}

impl fmt::Display for Master {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Master::Local { partitions } => write!(f, "local[{partitions}]"),
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
    /// A session for a master URL (see [`Master`]).
    pub fn new(master: &str) -> Result<Self> {
        Ok(Self::with_master(master.parse()?))
    }

    /// A session for a parsed master.
    pub fn with_master(master: Master) -> Self {
        let Master::Local { partitions } = master;
        let info = SessionInfo {
            master: master.clone(),
            driver_host: IpAddr::V4(Ipv4Addr::LOCALHOST),
        };
        let config = SessionConfig::new()
            .with_target_partitions(partitions)
            .with_information_schema(true)
            .with_extension(Arc::new(info));
        let state = SessionStateBuilder::new()
            .with_config(config)
            .with_default_features()
            .with_query_planner(Arc::new(HearthQueryPlanner))
            .build();
        let ctx = SessionContext::new_with_state(state);
        functions::register_all(&ctx);
        Self { master, ctx }
    }

    /// An embedded session with `partitions` partitions, `local[partitions]`.
    pub fn local(partitions: usize) -> Self {
        Self::with_master(Master::Local {
            partitions: partitions.max(1),
        })
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
/// assert_eq!(SessionInfo::of(&df).task_slots(), 3);
/// # });
/// ```
#[derive(Clone, Debug)]
pub struct SessionInfo {
    master: Master,
    driver_host: IpAddr,
}

impl SessionInfo {
    /// The session of `df`; a data frame from a plain DataFusion context counts as `local[target_partitions]`.
    pub fn of(df: &DataFrame) -> Self {
        let ctx = df.task_ctx();
        let config = ctx.session_config();
        config
            .get_extension::<SessionInfo>()
            .map(|info| SessionInfo::clone(&info))
            .unwrap_or_else(|| SessionInfo {
                master: Master::Local {
                    partitions: config.target_partitions(),
                },
                driver_host: IpAddr::V4(Ipv4Addr::LOCALHOST),
            })
    }

    /// The master.
    pub fn master(&self) -> &Master {
        &self.master
    }

    /// How many tasks can run at once: a barrier stage may have at most this many.
    pub fn task_slots(&self) -> usize {
        match self.master {
            Master::Local { partitions } => partitions,
        }
    }

    /// The address the driver's rendezvous listens on.
    pub fn driver_host(&self) -> IpAddr {
        self.driver_host
    }
}
