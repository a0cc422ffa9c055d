//! What a fleet has, read from its scheduler's REST API: Ballista's executors and jobs (`/api/…`) and
//! hearth's record of each executor's resources (`/hearth/executors`: slots, memory, GPUs).

use std::error::Error as _;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::{Method, StatusCode};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::access::FleetAccess;
use super::secret::ClusterSecret;
use super::token::TokenMaker;
use crate::error::RestError;

/// The route of hearth's scheduler that lists (GET) and records (POST) executors' resources.
pub const EXECUTORS_ROUTE: &str = "/hearth/executors";

/// Executors that sent no report for this long are not counted (hearth's executors report every 5 s).
pub const ALIVE: Duration = Duration::from_secs(30);

/// Executors Ballista lists with no heartbeat for this long are not counted (Ballista's own executors beat
/// every 60 s).
const BALLISTA_ALIVE: Duration = Duration::from_secs(90);

/// A GPU an executor offers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuInfo {
    /// The CUDA device index on its host.
    pub index: usize,
    /// Its name, as the driver reports it.
    pub name: String,
    /// Its memory in bytes.
    pub memory_bytes: u64,
}

/// What an executor offers the fleet, as it reports it to hearth's scheduler.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecutorResources {
    /// Ballista's executor id.
    pub executor_id: String,
    /// The host its services listen on.
    pub host: String,
    /// Task slots (Ballista's vcores).
    pub slots: usize,
    /// Slots its running tasks leave free (filled in by the scheduler).
    #[serde(default)]
    pub free_slots: Option<usize>,
    /// The host's memory in bytes.
    pub memory_bytes: u64,
    /// The GPUs it gives tasks.
    pub gpus: Vec<GpuInfo>,
    /// GPUs its running tasks hold (filled in by the scheduler).
    #[serde(default)]
    pub busy_gpus: usize,
    /// When it last reported (milliseconds since the Unix epoch).
    pub last_seen_ms: u64,
    /// When its TLS certificate expires (seconds since the Unix epoch); none without TLS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificate_expires_at: Option<i64>,
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Whether something last seen at `last_seen_ms` reported within [`ALIVE`].
pub fn alive(last_seen_ms: u64) -> bool {
    seen_within(last_seen_ms, ALIVE)
}

fn seen_within(last_seen_ms: u64, window: Duration) -> bool {
    now_ms().saturating_sub(last_seen_ms) < window.as_millis() as u64
}

/// A client of a scheduler's REST API over HTTP (HTTPS when [`FleetTls::find`](super::FleetTls::find) finds the fleet's TLS): JSON in and out, a connection within 3 seconds and an
/// answer within 10, and errors that name the scheduler, the request and what went wrong.
///
/// ```
/// let rest = hearth_exec::ballista::SchedulerRest::new("127.0.0.1:50050").unwrap();
/// assert_eq!(rest.url(), "http://127.0.0.1:50050");
/// ```
#[derive(Clone, Debug)]
pub struct SchedulerRest {
    url: String,
    client: reqwest::Client,
    /// What makes each request's new token ([`TokenMaker::bearer`]), of [`ClusterSecret::find`]'s secret
    /// unless told otherwise.
    tokens: Option<TokenMaker>,
}

impl SchedulerRest {
    /// A client of the scheduler at `scheduler` (`host:port`, `df://host:port` or an `http://` URL) with
    /// the secret and TLS this process finds ([`FleetAccess::find`]).
    pub fn new(scheduler: &str) -> Result<Self, RestError> {
        let access = FleetAccess::find()
            .map_err(|e| RestError::new(scheduler, "connecting", None, "finding the fleet's access").caused_by(e))?;
        Self::with_access(scheduler, &access)
    }

    /// A client of the scheduler at `scheduler` presenting `access`'s secret, over HTTPS with its
    /// certificate when it has TLS.
    pub fn with_access(scheduler: &str, access: &FleetAccess) -> Result<Self, RestError> {
        let address = scheduler.trim_end_matches('/');
        let url = match address.strip_prefix("df://") {
            Some(host_port) => format!("http://{host_port}"),
            None if address.contains("://") => address.to_string(),
            None => format!("http://{address}"),
        };
        let url = match (&access.tls, url.strip_prefix("http://")) {
            (Some(_), Some(rest)) => format!("https://{rest}"),
            _ => url,
        };
        let failed = |message: &str| RestError::new(&url, "connecting", None, message);
        if !url.starts_with("http://") && !url.starts_with("https://") {
            return Err(failed("hearth talks to schedulers over http:// or https://"));
        }
        let mut builder = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(3))
            .timeout(Duration::from_secs(10));
        if let Some(tls) = &access.tls {
            builder = tls
                .rest_client(builder)
                .map_err(|e| failed("its TLS").caused_by(e))?
                .tls_info(true);
        }
        let client = builder
            .build()
            .map_err(|e| failed("building the HTTP client").caused_by(e))?;
        Ok(Self {
            url,
            client,
            tokens: None,
        }
        .with_secret(access.secret.clone()))
    }

    /// The same client presenting `secret` (or none) instead.
    pub fn with_secret(self, secret: Option<ClusterSecret>) -> Self {
        let tokens = secret.map(|secret| secret.tokens_for(super::authority(&self.url)));
        Self { tokens, ..self }
    }

    /// The scheduler's base URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// `GET path`, its answer read as JSON.
    pub async fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T, RestError> {
        let body = self.send(Method::GET, path, None::<&()>).await?;
        self.json(&Method::GET, path, &body)
    }

    /// `POST path` with `body` as JSON, its answer read as JSON.
    pub async fn post<B: Serialize, T: DeserializeOwned>(&self, path: &str, body: &B) -> Result<T, RestError> {
        let answer = self.send(Method::POST, path, Some(body)).await?;
        self.json(&Method::POST, path, &answer)
    }

    /// The certificate (DER) the scheduler presents over HTTPS; none over HTTP.
    pub async fn server_certificate(&self) -> Result<Option<Vec<u8>>, RestError> {
        let path = "/api/version";
        let response = self.request(Method::GET, path, None::<&()>).await?;
        let info = response.extensions().get::<reqwest::tls::TlsInfo>();
        Ok(info
            .and_then(reqwest::tls::TlsInfo::peer_certificate)
            .map(<[u8]>::to_vec))
    }

    async fn request<B: Serialize>(
        &self,
        method: Method,
        path: &str,
        body: Option<&B>,
    ) -> Result<reqwest::Response, RestError> {
        let mut request = self
            .client
            .request(method.clone(), format!("{}{path}", self.url))
            .header("Accept", "application/json");
        if let Some(tokens) = &self.tokens {
            request = request.header("Authorization", tokens.bearer());
        }
        if let Some(body) = body {
            request = request.json(body);
        }
        request
            .send()
            .await
            .map_err(|e| self.failed(&method, path, None, unreachable(&e)))
    }

    async fn send<B: Serialize>(&self, method: Method, path: &str, body: Option<&B>) -> Result<String, RestError> {
        let response = self.request(method.clone(), path, body).await?;
        let status = response.status();
        let text = response.text().await.map_err(|e| {
            self.failed(&method, path, Some(status), "reading the answer")
                .caused_by(e)
        })?;
        if !status.is_success() {
            return Err(self.failed(&method, path, Some(status), format!("{status}: {}", text.trim())));
        }
        Ok(text)
    }

    fn json<T: DeserializeOwned>(&self, method: &Method, path: &str, body: &str) -> Result<T, RestError> {
        serde_json::from_str(body).map_err(|e| {
            let start: String = body.chars().take(200).collect();
            self.failed(method, path, None, format!("not the JSON expected ({e}): {start}"))
        })
    }

    fn failed(&self, method: &Method, path: &str, status: Option<StatusCode>, message: impl ToString) -> RestError {
        RestError::new(
            &self.url,
            format!("{method} {path}"),
            status.map(|s| s.as_u16()),
            message.to_string(),
        )
    }
}

/// Why a request got no answer, in words: refused, timed out, or the chain of causes.
fn unreachable(error: &reqwest::Error) -> String {
    if error.is_connect() {
        let mut cause = error.source();
        let mut innermost = None;
        while let Some(c) = cause {
            innermost = Some(c.to_string());
            cause = c.source();
        }
        return format!(
            "nothing answers there ({}); is the scheduler running?",
            innermost.unwrap_or_else(|| error.to_string())
        );
    }
    if error.is_timeout() {
        return "no answer in time".to_string();
    }
    error.to_string()
}

/// One executor as Ballista's REST API lists it.
#[derive(Debug, Deserialize)]
struct BallistaExecutor {
    #[serde(default)]
    last_seen: Option<u64>,
    specification: Specification,
}

#[derive(Debug, Deserialize)]
struct Specification {
    vcores: u64,
}

/// The task slots (vcores) of the live executors registered with the scheduler at `scheduler`.
pub(crate) async fn task_slots(scheduler: &str) -> Result<usize, RestError> {
    let executors: Vec<BallistaExecutor> = SchedulerRest::new(scheduler)?.get("/api/executors").await?;
    Ok(executors
        .iter()
        .filter(|e| e.last_seen.is_none_or(|seen| seen_within(seen, BALLISTA_ALIVE)))
        .map(|e| e.specification.vcores as usize)
        .sum())
}

/// The live executors' resources, as hearth's scheduler recorded them; none from a plain Ballista
/// scheduler, which keeps no such record.
pub async fn fleet_resources(scheduler: &str) -> Result<Vec<ExecutorResources>, RestError> {
    match SchedulerRest::new(scheduler)?
        .get::<Vec<ExecutorResources>>(EXECUTORS_ROUTE)
        .await
    {
        Ok(executors) => Ok(executors.into_iter().filter(|e| alive(e.last_seen_ms)).collect()),
        Err(e) if e.is_not_found() => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}
