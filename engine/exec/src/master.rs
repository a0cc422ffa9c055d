//! Masters and what a data frame knows of its session: where it runs, how many task slots it has, and where
//! the driver accepts barrier tasks.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr};
use std::str::FromStr;

use datafusion::prelude::DataFrame;

use crate::error::{HearthError, Result};

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
/// use hearth_exec::master::Master;
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

/// The cores this process may use: what `local[*]` means.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
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
        let trimmed = master.trim();
        if let Some(partitions) = bracketed(trimmed, "local") {
            let partitions = partitions.map_err(|_| {
                HearthError::master(master, "expected local[N] with N a positive whole number, or local[*]")
            })?;
            return Ok(Master::Local { partitions });
        }
        if let Some(partitions) = bracketed(trimmed, "standalone") {
            let partitions = partitions.map_err(|_| {
                HearthError::master(
                    master,
                    "expected standalone[N] with N a positive whole number, or standalone[*]",
                )
            })?;
            return Ok(Master::Standalone { partitions });
        }
        if let Some(address) = trimmed.strip_prefix("df://") {
            let address = address.trim_end_matches('/');
            let (host, port) = match address.rsplit_once(':') {
                Some((host, port)) => (
                    host,
                    port.parse::<u16>()
                        .map_err(|_| HearthError::master(master, "the port must be a number from 1 to 65535"))?,
                ),
                None => (address, crate::ballista::DEFAULT_SCHEDULER_PORT),
            };
            if host.is_empty() {
                return Err(HearthError::master(master, "expected df://host:port"));
            }
            return Ok(Master::Remote {
                host: host.to_string(),
                port,
            });
        }
        Err(HearthError::master(
            master,
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

/// What hearth knows about the session a data frame belongs to: its master, its task slots, and where the
/// driver accepts barrier tasks. It rides in the DataFusion config, so any data frame can tell.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use hearth_exec::master::SessionInfo;
/// use hearth_exec::session::Session;
/// let df = Session::builder().local(3).context().sql("SELECT 1").await.unwrap();
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
    pub(crate) fn new(master: Master, scheduler: Option<String>) -> Self {
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
        config.get_extension::<SessionInfo>().map_or_else(
            || {
                SessionInfo::new(
                    Master::Local {
                        partitions: config.target_partitions(),
                    },
                    None,
                )
            },
            |info| SessionInfo::clone(&info),
        )
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
            (Master::Remote { .. }, Some(url)) => Ok(crate::ballista::task_slots(url).await?),
            (Master::Remote { .. }, None) => Ok(0),
        }
    }

    /// Whether the session's tasks run in this process (local and standalone masters), not on a fleet.
    pub fn runs_tasks_here(&self) -> bool {
        matches!(self.master, Master::Local { .. } | Master::Standalone { .. })
    }

    /// How many tasks holding a GPU each can run at once: as many as there are both task slots and GPUs —
    /// this process's for a master in it, each live executor's for a fleet.
    pub async fn gpu_slots(&self) -> Result<usize> {
        match (&self.master, &self.scheduler) {
            (Master::Local { partitions } | Master::Standalone { partitions }, _) => {
                Ok((*partitions).min(crate::barrier::offered_gpus().len()))
            }
            (Master::Remote { .. }, Some(url)) => Ok(crate::ballista::fleet_resources(url)
                .await?
                .iter()
                .map(|e| e.slots.min(e.gpus.len()))
                .sum()),
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
        .and_then(hearth_common::host::address_towards)
        .unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST))
}
