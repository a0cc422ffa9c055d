//! Client sessions: each `session_id` a PySpark client chooses gets its own hearth session (its temporary views
//! and tables), its own Spark configuration and its running operations, until `ReleaseSession` or an idle
//! timeout ends it.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use datafusion::catalog::MemoryCatalogProviderList;
use datafusion::execution::session_state::SessionStateBuilder;
use futures::future::AbortHandle;
use hearth_exec::session::Session;

use crate::config::SessionConfig;
use crate::errors::{ConnectError, Result};
use crate::models::ModelCache;

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// An operation that is running: what `Interrupt` finds it by, and how it is stopped.
struct Operation {
    tags: Vec<String>,
    abort: AbortHandle,
}

/// One client's session on the server.
pub(crate) struct ClientSession {
    /// The id the client chose.
    pub(crate) client_id: String,
    /// The id this server gave it, echoed in every response so the client notices a restarted server.
    pub(crate) server_id: String,
    /// Where its plans run: a hearth session on the server's master with tables of its own.
    pub(crate) hearth: Session,
    /// Its fitted `pyspark.ml` models.
    pub(crate) models: ModelCache,
    config: Mutex<SessionConfig>,
    last_used: Mutex<Instant>,
    operations: Mutex<HashMap<String, Operation>>,
}

impl ClientSession {
    /// The session's configuration, for reading or changing.
    pub(crate) fn config(&self) -> MutexGuard<'_, SessionConfig> {
        lock(&self.config)
    }

    /// Keeps `abort` as operation `id`'s handle (with its `tags`) while it runs.
    pub(crate) fn track(&self, id: &str, tags: Vec<String>, abort: AbortHandle) {
        lock(&self.operations).insert(id.to_owned(), Operation { tags, abort });
    }

    /// Forgets operation `id` once it has ended.
    pub(crate) fn finished(&self, id: &str) {
        lock(&self.operations).remove(id);
    }

    /// Stops the running operations `which` selects; their ids.
    pub(crate) fn interrupt(&self, which: impl Fn(&str, &[String]) -> bool) -> Vec<String> {
        let mut operations = lock(&self.operations);
        let ids: Vec<String> = operations
            .iter()
            .filter(|(id, op)| which(id, &op.tags))
            .map(|(id, _)| id.clone())
            .collect();
        for id in &ids {
            if let Some(operation) = operations.remove(id) {
                operation.abort.abort();
            }
        }
        ids
    }

    fn idle_for(&self) -> Duration {
        lock(&self.last_used).elapsed()
    }
}

/// The server's client sessions.
pub(crate) struct Sessions {
    base: Session,
    idle_timeout: Duration,
    open: Mutex<HashMap<String, Arc<ClientSession>>>,
    closed: Mutex<HashSet<String>>,
}

impl Sessions {
    /// Sessions on `base`'s master, each ended after `idle_timeout` without a request.
    pub(crate) fn new(base: Session, idle_timeout: Duration) -> Self {
        Self {
            base,
            idle_timeout,
            open: Mutex::default(),
            closed: Mutex::default(),
        }
    }

    /// The session `client_id` names, made on its first request. A released session's id is refused, as is
    /// a request that saw another server session (`observed`) than this one: Spark's `INVALID_HANDLE.*`.
    pub(crate) fn get(&self, client_id: &str, observed: Option<&str>) -> Result<Arc<ClientSession>> {
        if uuid::Uuid::parse_str(client_id).is_err() {
            return Err(ConnectError::Handle {
                error_class: "INVALID_HANDLE.FORMAT",
                message: format!("The handle {client_id} is invalid: a session id must be a UUID."),
            });
        }
        if lock(&self.closed).contains(client_id) {
            return Err(ConnectError::Handle {
                error_class: "INVALID_HANDLE.SESSION_CLOSED",
                message: format!("The handle {client_id} is invalid: the session was closed."),
            });
        }
        let session = Arc::clone(lock(&self.open).entry(client_id.to_owned()).or_insert_with(|| {
            Arc::new(ClientSession {
                client_id: client_id.to_owned(),
                server_id: uuid::Uuid::new_v4().to_string(),
                hearth: isolated(&self.base),
                models: ModelCache::default(),
                config: Mutex::default(),
                last_used: Mutex::new(Instant::now()),
                operations: Mutex::default(),
            })
        }));
        if let Some(observed) = observed
            && observed != session.server_id
        {
            return Err(ConnectError::Handle {
                error_class: "INVALID_HANDLE.SESSION_CHANGED",
                message: format!(
                    "The handle {client_id} is invalid: the existing session changed (the server restarted)."
                ),
            });
        }
        *lock(&session.last_used) = Instant::now();
        Ok(session)
    }

    /// Ends session `client_id`: its operations stop and its tables go; its server id, when it was open.
    pub(crate) fn release(&self, client_id: &str) -> Option<String> {
        lock(&self.closed).insert(client_id.to_owned());
        let session = lock(&self.open).remove(client_id)?;
        session.interrupt(|_, _| true);
        Some(session.server_id.clone())
    }

    /// Ends the sessions idle for longer than the timeout.
    pub(crate) fn release_idle(&self) {
        let idle: Vec<String> = (lock(&self.open).values())
            .filter(|s| s.idle_for() > self.idle_timeout && lock(&s.operations).is_empty())
            .map(|s| s.client_id.clone())
            .collect();
        for id in idle {
            log::info!("Spark Connect session {id} released after {:?} idle", self.idle_timeout);
            self.release(&id);
        }
    }
}

/// A session on `base`'s master and configuration with an empty catalog of its own.
fn isolated(base: &Session) -> Session {
    let state = base.context().state();
    let config = state.config().clone().with_create_default_catalog_and_schema(true);
    let state = SessionStateBuilder::new_from_existing(state)
        .with_config(config)
        .with_catalog_list(Arc::new(MemoryCatalogProviderList::new()))
        .build();
    base.clone().with_state(state)
}
