//! Object stores: files at `s3://` (or Hadoop's `s3a://`), `gs://`, `az://`, `abfs://`, `abfss://`, `http://`
//! and `https://` URLs, read and written through the `object_store` crate on every master.
//!
//! Every session's runtime holds a [`StoreRegistry`], which opens the store a URL names the first time it is
//! asked for it — on the driver, on a fleet's scheduler (which lists a table's files to plan its scan) and on
//! each executor (which reads its own byte ranges of them). Two things open a store:
//!
//! - the job's [`StoreSettings`], session options that travel with its queries to the scheduler and into
//!   every task (`hearth_stores.*`): where an S3-compatible store answers (MinIO, Ceph, …) and how. The driver
//!   takes them from its environment (`AWS_ENDPOINT_URL`, `AWS_REGION`, `AWS_ALLOW_HTTP`).
//! - each process's own environment, for everything else and for every credential, as DataFusion's command
//!   line and the stores' own tools read it: `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, an instance's or a
//!   pod's role; `GOOGLE_SERVICE_ACCOUNT` / `GOOGLE_APPLICATION_CREDENTIALS`; `AZURE_STORAGE_ACCOUNT_NAME`,
//!   `AZURE_STORAGE_ACCOUNT_KEY`, …. A credential never travels in a plan or a query's settings.
//!
//! A plain `http://` server is read as it is, without credentials.
//!
//! ```
//! use datafusion::prelude::SessionConfig;
//! use hearth_exec::object_stores::StoreSettings;
//!
//! let settings = StoreSettings {
//!     s3_endpoint: Some("http://10.0.0.5:9000".into()),
//!     s3_allow_http: true,
//!     ..StoreSettings::default()
//! };
//! let config = SessionConfig::new().with_option_extension(settings.clone());
//! // What a query carries to the scheduler and its tasks: the settings, under their full names.
//! let sent: Vec<_> = config.options().entries().into_iter().filter(|e| e.key.starts_with("hearth_stores.")).collect();
//! let mut received = SessionConfig::new().with_option_extension(StoreSettings::default());
//! for entry in sent.iter().filter(|entry| entry.value.is_some()) {
//!     received.options_mut().set(&entry.key, entry.value.as_deref().unwrap()).unwrap();
//! }
//! assert_eq!(StoreSettings::of(&received), settings);
//! ```

use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use datafusion::common::config::{ConfigEntry, ConfigExtension, ExtensionOptions};
use datafusion::datasource::listing::ListingTableUrl;
use datafusion::error::DataFusionError;
use datafusion::execution::cache::cache_manager::{CacheManager, CacheManagerConfig};
use datafusion::execution::object_store::{DefaultObjectStoreRegistry, ObjectStoreRegistry};
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::prelude::{SessionConfig, SessionContext};
use object_store::ObjectStore;
use object_store::aws::AmazonS3Builder;
use object_store::azure::MicrosoftAzureBuilder;
use object_store::gcp::GoogleCloudStorageBuilder;
use object_store::http::HttpBuilder;
use url::Url;

use crate::error::{HearthError, Result};

/// How a job's S3-compatible stores are reached, carried with its queries to the scheduler and every task
/// as the session options `hearth_stores.s3_endpoint`, `hearth_stores.s3_region` and
/// `hearth_stores.s3_allow_http`. Unset, each process reads its own environment. Never a credential.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoreSettings {
    /// The S3 API's endpoint, for a store other than AWS's own (`http://minio:9000`).
    pub s3_endpoint: Option<String>,
    /// The S3 region (`us-east-1`).
    pub s3_region: Option<String>,
    /// Whether the endpoint may be plain HTTP.
    pub s3_allow_http: bool,
}

/// The option names, without [`StoreSettings::PREFIX`].
const ENDPOINT: &str = "s3_endpoint";
const REGION: &str = "s3_region";
const ALLOW_HTTP: &str = "s3_allow_http";

impl StoreSettings {
    /// The settings a driver gives its jobs: from its environment's `AWS_ENDPOINT_URL` (or `AWS_ENDPOINT`),
    /// `AWS_REGION` (or `AWS_DEFAULT_REGION`) and `AWS_ALLOW_HTTP`.
    pub fn from_env() -> Self {
        let variable = |names: &[&str]| {
            names
                .iter()
                .find_map(|name| std::env::var(name).ok().filter(|value| !value.trim().is_empty()))
        };
        Self {
            s3_endpoint: variable(&["AWS_ENDPOINT_URL", "AWS_ENDPOINT"]),
            s3_region: variable(&["AWS_REGION", "AWS_DEFAULT_REGION"]),
            s3_allow_http: variable(&["AWS_ALLOW_HTTP"]).is_some_and(|value| value.eq_ignore_ascii_case("true")),
        }
    }

    /// The settings `config` carries (none set where it carries none).
    pub fn of(config: &SessionConfig) -> Self {
        config
            .options()
            .extensions
            .get::<StoreSettings>()
            .cloned()
            .unwrap_or_default()
    }
}

impl ConfigExtension for StoreSettings {
    const PREFIX: &'static str = "hearth_stores";
}

// Written out rather than with DataFusion's `extensions_options!`, whose entries drop the prefix: Ballista
// sends a query's settings as `entries()` and sets them again by name on the scheduler and in each task, so
// an option reaches them only under its full name.
impl ExtensionOptions for StoreSettings {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }

    fn cloned(&self) -> Box<dyn ExtensionOptions> {
        Box::new(self.clone())
    }

    fn set(&mut self, key: &str, value: &str) -> datafusion::error::Result<()> {
        let text = || Some(value.trim().to_string()).filter(|value| !value.is_empty());
        match key {
            ENDPOINT => self.s3_endpoint = text(),
            REGION => self.s3_region = text(),
            ALLOW_HTTP => {
                self.s3_allow_http = value.trim().parse().map_err(|_| {
                    DataFusionError::Configuration(format!(
                        "{}.{ALLOW_HTTP} is true or false, not {value:?}",
                        Self::PREFIX
                    ))
                })?;
            }
            other => {
                return Err(DataFusionError::Configuration(format!(
                    "no option {}.{other}: the store settings are {ENDPOINT}, {REGION} and {ALLOW_HTTP}",
                    Self::PREFIX
                )));
            }
        }
        Ok(())
    }

    fn entries(&self) -> Vec<ConfigEntry> {
        let entry = |name: &str, value: Option<String>, description: &'static str| ConfigEntry {
            key: format!("{}.{name}", Self::PREFIX),
            value,
            description,
        };
        vec![
            entry(ENDPOINT, self.s3_endpoint.clone(), "the S3 API's endpoint"),
            entry(REGION, self.s3_region.clone(), "the S3 region"),
            entry(
                ALLOW_HTTP,
                Some(self.s3_allow_http.to_string()),
                "whether the S3 endpoint may be plain HTTP",
            ),
        ]
    }
}

/// Whether `location` is a URL of a store other than the local file system (`scheme://…`).
pub fn is_remote(location: &str) -> bool {
    match location.split_once("://") {
        Some((scheme, _)) => {
            !scheme.eq_ignore_ascii_case("file")
                && !scheme.is_empty()
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        }
        None => false,
    }
}

/// Opens the store of `url` (its bucket, container or host) with `settings` over the process's environment;
/// an error names the URL and what is wrong.
pub fn open(url: &Url, settings: &StoreSettings) -> Result<Arc<dyn ObjectStore>> {
    let scheme = url.scheme().to_ascii_lowercase();
    let location = url.as_str();
    let opening = |e: object_store::Error| {
        HearthError::persistence(
            location,
            format!("opening its {scheme} store (from the job's store settings and this process's environment)"),
        )
        .caused_by(e)
    };
    let store: Arc<dyn ObjectStore> = match scheme.as_str() {
        "s3" | "s3a" => {
            let mut s3 = AmazonS3Builder::from_env().with_url(location);
            if let Some(endpoint) = &settings.s3_endpoint {
                s3 = s3.with_endpoint(endpoint);
            }
            if let Some(region) = &settings.s3_region {
                s3 = s3.with_region(region);
            }
            if settings.s3_allow_http {
                s3 = s3.with_allow_http(true);
            }
            Arc::new(s3.build().map_err(opening)?)
        }
        "gs" => Arc::new(
            GoogleCloudStorageBuilder::from_env()
                .with_url(location)
                .build()
                .map_err(opening)?,
        ),
        "az" | "azure" | "abfs" | "abfss" | "adl" => Arc::new(
            MicrosoftAzureBuilder::from_env()
                .with_url(location)
                .build()
                .map_err(opening)?,
        ),
        "http" | "https" => {
            let client = object_store::ClientOptions::new().with_allow_http(scheme == "http");
            let root = format!(
                "{scheme}://{}",
                &url[url::Position::BeforeHost..url::Position::AfterPort]
            );
            let http = HttpBuilder::new().with_url(root).with_client_options(client);
            Arc::new(http.build().map_err(opening)?)
        }
        other => {
            return Err(HearthError::persistence(
                location,
                format!(
                    "no object store for {other}:// URLs: hearth reads s3://, s3a://, gs://, az://, abfs://, \
                     abfss://, http:// and https:// (or a local path)"
                ),
            ));
        }
    };
    Ok(store)
}

/// A session runtime's object stores: the local file system, and each remote store [`open`]ed with the
/// job's settings the first time a URL of it is asked for.
///
/// ```
/// use datafusion::execution::object_store::ObjectStoreRegistry;
/// use hearth_exec::object_stores::{StoreRegistry, StoreSettings};
///
/// let registry = StoreRegistry::new(StoreSettings::default());
/// let url = url::Url::parse("http://127.0.0.1:9/data/x.csv").unwrap();
/// let first = registry.get_store(&url).unwrap();
/// let again = registry.get_store(&url::Url::parse("http://127.0.0.1:9/other.csv").unwrap()).unwrap();
/// assert!(std::sync::Arc::ptr_eq(&first, &again), "one store per host");
/// assert!(registry.get_store(&url::Url::parse("ftp://host/x").unwrap()).is_err());
/// ```
#[derive(Debug)]
pub struct StoreRegistry {
    settings: StoreSettings,
    /// The local file system's store.
    local: DefaultObjectStoreRegistry,
    /// Remote stores by the URL before their path, user part included: DataFusion's registry drops it, and
    /// two Azure containers of one account (`abfss://a@acct…`, `abfss://b@acct…`) would share a store.
    remote: Mutex<HashMap<String, Arc<dyn ObjectStore>>>,
}

/// The key of `url`'s store: the URL before its path.
fn store_key(url: &Url) -> String {
    url[..url::Position::BeforePath].to_string()
}

impl StoreRegistry {
    /// A registry that opens stores with `settings`.
    pub fn new(settings: StoreSettings) -> Self {
        Self {
            settings,
            local: DefaultObjectStoreRegistry::new(),
            remote: Mutex::default(),
        }
    }

    /// A runtime with DataFusion's defaults and a registry of the stores of `config`'s [`StoreSettings`] —
    /// but no cache of directory listings: a path is listed each time it is read, as Spark lists it, so a
    /// read after a write (an append, an overwrite) sees the files that are there now.
    pub fn runtime_for(config: &SessionConfig) -> Arc<RuntimeEnv> {
        let caches = CacheManagerConfig::default().with_list_files_cache_limit(0);
        let default = RuntimeEnv::default();
        Arc::new(RuntimeEnv {
            object_store_registry: Arc::new(Self::new(StoreSettings::of(config))),
            cache_manager: CacheManager::try_new(&caches).unwrap_or_else(|_| Arc::clone(&default.cache_manager)),
            ..default
        })
    }
}

impl ObjectStoreRegistry for StoreRegistry {
    fn register_store(&self, url: &Url, store: Arc<dyn ObjectStore>) -> Option<Arc<dyn ObjectStore>> {
        if !is_remote(url.as_str()) {
            return self.local.register_store(url, store);
        }
        self.stores().insert(store_key(url), store)
    }

    fn deregister_store(&self, url: &Url) -> datafusion::error::Result<Arc<dyn ObjectStore>> {
        if !is_remote(url.as_str()) {
            return self.local.deregister_store(url);
        }
        (self.stores().remove(&store_key(url)))
            .ok_or_else(|| DataFusionError::Execution(format!("no store was registered for {url}")))
    }

    fn get_store(&self, url: &Url) -> datafusion::error::Result<Arc<dyn ObjectStore>> {
        if !is_remote(url.as_str()) {
            return self.local.get_store(url);
        }
        if let Some(store) = self.stores().get(&store_key(url)) {
            return Ok(Arc::clone(store));
        }
        let store = open(url, &self.settings).map_err(DataFusionError::from)?;
        // Two tasks that open the same store at once both get a working one; the registry keeps the first.
        Ok(Arc::clone(self.stores().entry(store_key(url)).or_insert(store)))
    }
}

impl StoreRegistry {
    fn stores(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<dyn ObjectStore>>> {
        self.remote.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Makes sure the store of `location` (a URL that [`is_remote`]) is in `context`'s runtime — opened with the
/// session's store settings — so that a read names what is wrong with the store before DataFusion reads.
pub(crate) fn register(context: &SessionContext, location: &str) -> Result<()> {
    let url = ListingTableUrl::parse(location)
        .map_err(|e| HearthError::persistence(location, "not a URL hearth can read").caused_by(e))?;
    let runtime = context.runtime_env();
    if runtime.object_store(url.object_store()).is_ok() {
        return Ok(());
    }
    let store = open(url.as_ref(), &StoreSettings::of(&context.copied_config()))?;
    runtime.register_object_store(url.object_store().as_ref(), store);
    Ok(())
}

#[cfg(test)]
mod tests {
    use datafusion::execution::object_store::ObjectStoreUrl;

    use super::*;

    #[test]
    fn urls_of_stores_are_told_from_local_paths() {
        for remote in [
            "s3://bucket/x.csv",
            "S3A://b/dir/",
            "gs://b/x.parquet",
            "https://host/x.csv",
            "abfss://c@a/x",
        ] {
            assert!(is_remote(remote), "{remote}");
        }
        for local in [
            "data/x.csv",
            "/tmp/x.csv",
            "file:///tmp/x.csv",
            "://x",
            "a b://x",
            "C:\\data\\x.csv",
        ] {
            assert!(!is_remote(local), "{local}");
        }
    }

    #[test]
    fn a_store_is_registered_once_per_host_and_an_unknown_scheme_is_named() {
        let context = SessionContext::new();
        register(&context, "http://127.0.0.1:9/data/x.csv").unwrap();
        let url = ObjectStoreUrl::parse("http://127.0.0.1:9").unwrap();
        let first = context.runtime_env().object_store(&url).unwrap();
        register(&context, "http://127.0.0.1:9/other/y.csv").unwrap();
        assert!(Arc::ptr_eq(&first, &context.runtime_env().object_store(&url).unwrap()));
        let error = register(&context, "ftp://host/x.csv").unwrap_err().to_string();
        assert!(error.contains("no object store for ftp://"), "{error}");
    }

    #[test]
    fn settings_are_set_by_name_and_a_wrong_one_is_named() {
        let mut settings = StoreSettings::default();
        settings.set(ENDPOINT, " http://s3:9000 ").unwrap();
        settings.set(ALLOW_HTTP, "true").unwrap();
        assert_eq!(settings.s3_endpoint.as_deref(), Some("http://s3:9000"));
        assert!(settings.s3_allow_http);
        let error = settings.set(ALLOW_HTTP, "yes").unwrap_err().to_string();
        assert!(
            error.contains("hearth_stores.s3_allow_http is true or false"),
            "{error}"
        );
        let error = settings.set("s3_secret", "x").unwrap_err().to_string();
        assert!(error.contains("no option hearth_stores.s3_secret"), "{error}");
    }

    #[test]
    fn the_jobs_endpoint_is_the_one_an_s3_store_is_opened_at() {
        let settings = StoreSettings {
            s3_endpoint: Some("http://127.0.0.1:9".into()),
            s3_region: Some("eu-west-3".into()),
            s3_allow_http: true,
        };
        let store = open(&Url::parse("s3://bucket/x.csv").unwrap(), &settings).unwrap();
        let shown = format!("{store:?}");
        assert!(shown.contains("127.0.0.1:9") && shown.contains("eu-west-3"), "{shown}");
    }
}
