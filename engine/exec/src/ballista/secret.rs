//! The fleet's shared secret, as Spark's `spark.authenticate.secret` and Ray's cluster token: every port of
//! the fleet refuses a request that does not prove it, so an executor without it cannot register and a client
//! without it cannot submit a job or read one. The secret itself never crosses the wire: requests carry a
//! token made from it for the connection's address (see [`token`](super::token)), as `authorization: Bearer
//! <token>` (REST) or, where Ballista gives no way to add a header, in the user agent of a gRPC channel.
//!
//! It is found in `HEARTH_SECRET`, or in the file `HEARTH_SECRET_FILE` names, which must be readable by its
//! owner alone; else in the program's default file (the `hearth` program's is the `secret` that `hearth
//! cluster start` writes into the fleet's state directory).
//!
//! ```
//! use hearth_exec::ballista::ClusterSecret;
//!
//! let dir = tempfile::tempdir().unwrap();
//! let file = dir.path().join("secret");
//! let secret = ClusterSecret::create(&file).unwrap();
//! assert_eq!(ClusterSecret::read(&file).unwrap(), secret);
//! ```

use std::fmt;
use std::net::IpAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

use hearth_collective::JobSecret;
use hearth_common::files::write_private_file_whole;

use super::token::{self, Admitted, Presented, Service, TokenMaker, TokenRefusal, unix_seconds};
use crate::error::{HearthError, Result};

/// The environment variable that holds the secret itself.
pub const SECRET_ENV: &str = "HEARTH_SECRET";
/// The environment variable that names the job `HEARTH_SECRET` is the key of, for a cluster-mode job's driver.
pub const SECRET_JOB_ENV: &str = "HEARTH_SECRET_JOB";
/// The environment variable that names a file holding the secret.
pub const SECRET_FILE_ENV: &str = "HEARTH_SECRET_FILE";

/// The shortest secret accepted: 128 bits in hexadecimal.
const SHORTEST: usize = 32;

/// Where [`ClusterSecret::find`] looks when the environment names no secret.
static DEFAULT_FILE: OnceLock<PathBuf> = OnceLock::new();

/// What [`ClusterSecret::find`] finds first: the secret a daemon of the fleet was started with.
static IN_PROCESS: OnceLock<ClusterSecret> = OnceLock::new();

/// The fleet's shared secret, or a key derived from it for one cluster-mode job
/// ([`ClusterSecret::for_job`]), which the fleet's ports admit only for that job's own business.
#[derive(Clone, PartialEq, Eq)]
pub struct ClusterSecret {
    key: String,
    /// The job the key is scoped to (none: the fleet's secret itself).
    job: Option<String>,
}

impl fmt::Debug for ClusterSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ClusterSecret(…)")
    }
}

impl ClusterSecret {
    /// A new random secret, written to `file` readable by its owner alone (what `hearth cluster start` does).
    pub fn create(file: &Path) -> Result<Self> {
        let secret = Self::generate();
        write_private_file_whole(file, format!("{}\n", secret.key).as_bytes())
            .map_err(|e| HearthError::persistence(file, "writing the cluster secret").caused_by(e))?;
        Ok(secret)
    }

    /// The secret in `file`, which must be readable by its owner alone.
    pub fn read(file: &Path) -> Result<Self> {
        let metadata = std::fs::metadata(file)
            .map_err(|e| HearthError::persistence(file, "reading the cluster secret").caused_by(e))?;
        owner_only(file, &metadata, "the cluster secret")?;
        let text = std::fs::read_to_string(file)
            .map_err(|e| HearthError::persistence(file, "reading the cluster secret").caused_by(e))?;
        let text = text.trim();
        match well_formed(text) {
            true => Ok(Self::member(text.to_string())),
            false => Err(HearthError::persistence(file, malformed())),
        }
    }

    /// The secret given as text, as `HEARTH_SECRET` gives it (an error names that variable).
    pub fn parse(text: &str) -> Result<Self> {
        match well_formed(text) {
            true => Ok(Self::member(text.to_string())),
            false => Err(HearthError::invalid_param(
                "the fleet's access",
                SECRET_ENV,
                malformed(),
            )),
        }
    }

    /// A new random secret, held in this process only (what a `standalone[N]` session's servers check).
    ///
    /// ```
    /// use hearth_exec::ballista::ClusterSecret;
    /// assert_ne!(ClusterSecret::generate().expose(), ClusterSecret::generate().expose());
    /// ```
    pub fn generate() -> Self {
        Self::member(JobSecret::generate().to_hex())
    }

    fn member(key: String) -> Self {
        Self { key, job: None }
    }

    /// The key of cluster-mode job `job`, derived from this (the fleet's) secret: an HMAC-SHA256 of the job's
    /// id. The scheduler hands it to the job's driver instead of the fleet's secret; every port derives it
    /// again to check the job's tokens, and admits them only for what the job may do (its own records, its
    /// queries, results from executors — not registering executors, launching tasks, or other jobs).
    pub fn for_job(&self, job: &str) -> Self {
        Self {
            key: super::keys::job_key(&self.key, job),
            job: Some(job.to_string()),
        }
    }

    /// The job secret of a training stage whose plan names `nonce`: an HMAC-SHA256 of it under this key. The
    /// driver derives it from the key it holds, each executor again from the fleet's secret (through
    /// [`ClusterSecret::for_job`] when the driver held a job's key), so no plan carries the secret its ranks
    /// prove.
    ///
    /// ```
    /// use hearth_exec::ballista::ClusterSecret;
    ///
    /// let fleet = ClusterSecret::parse("0123456789abcdef0123456789abcdef").unwrap();
    /// let driver = fleet.for_job("job-7"); // what a cluster-mode driver holds
    /// assert_eq!(driver.training_secret("nonce"), fleet.for_job("job-7").training_secret("nonce"));
    /// assert_ne!(driver.training_secret("nonce"), fleet.training_secret("nonce"));
    /// ```
    pub fn training_secret(&self, nonce: &str) -> JobSecret {
        let hex = super::keys::training_key(&self.key, nonce);
        JobSecret::from_hex(&hex).expect("an HMAC-SHA256 is 64 hexadecimal digits")
    }

    /// A maker of tokens of this key for this machine's calls to `server` (`host:port`, or a URL's
    /// authority): see [`token`](super::token).
    pub fn tokens_for(&self, server: &str) -> TokenMaker {
        TokenMaker::new(&self.key, self.job(), server)
    }

    /// A new token for this machine's calls to `server` of `service`, admitted on one connection for
    /// `valid_for` (at most an hour): [`TokenMaker::token`].
    pub fn token(&self, server: &str, service: Service, valid_for: Duration) -> String {
        self.tokens_for(server).token(service, valid_for)
    }

    /// A new token for one of Ballista's gRPC channels to `server`: [`TokenMaker::channel_token`].
    pub fn channel_token(&self, server: &str) -> String {
        self.tokens_for(server).channel_token()
    }

    /// Whom a request presenting `presented`, on a connection from `peer`, for `service`, speaks for: a token
    /// of this (the fleet's) secret, or of a job's key derived from it, made for `peer`'s address and for
    /// `service`, not expired. The caller keeps the replays out ([`ReplayMemory`](super::ReplayMemory)) and
    /// the ended jobs.
    pub fn check(&self, presented: Presented<'_>, peer: IpAddr, service: Service) -> Result<Admitted, TokenRefusal> {
        token::verify(&self.key, presented, peer, service, unix_seconds(SystemTime::now()))
    }

    /// The job this key is scoped to; none for the fleet's secret itself.
    pub fn job(&self) -> Option<&str> {
        self.job.as_deref()
    }

    /// The secret from `HEARTH_SECRET` (a job's key when `HEARTH_SECRET_JOB` names the job), or from the file
    /// `HEARTH_SECRET_FILE` names; `None` when neither is set.
    pub fn from_env() -> Result<Option<Self>> {
        if let Ok(text) = std::env::var(SECRET_ENV) {
            let secret = Self::parse(text.trim())?;
            return Ok(Some(Self {
                job: std::env::var(SECRET_JOB_ENV).ok(),
                ..secret
            }));
        }
        match std::env::var_os(SECRET_FILE_ENV) {
            Some(file) => Self::read(Path::new(&file)).map(Some),
            None => Ok(None),
        }
    }

    /// Sets where [`ClusterSecret::find`] looks when the environment names no secret (once a process).
    pub fn use_default_file(file: PathBuf) {
        let _ = DEFAULT_FILE.set(file);
    }

    /// Makes `secret` what [`ClusterSecret::find`] finds first in this process: the secret a scheduler or
    /// executor was started with (`--secret-file` included), from which its tasks derive their job secrets.
    /// Only the first call counts.
    pub fn use_in_process(secret: ClusterSecret) {
        let _ = IN_PROCESS.set(secret);
    }

    /// The secret this process was started with ([`ClusterSecret::use_in_process`]), else the one in the
    /// environment ([`ClusterSecret::from_env`]), else the default file's if it exists; `None` when there is
    /// none — a fleet without a secret.
    pub fn find() -> Result<Option<Self>> {
        if let Some(secret) = IN_PROCESS.get() {
            return Ok(Some(secret.clone()));
        }
        if let Some(secret) = Self::from_env()? {
            return Ok(Some(secret));
        }
        match DEFAULT_FILE.get() {
            Some(file) if file.exists() => Self::read(file).map(Some),
            _ => Ok(None),
        }
    }

    /// The secret itself, to hand to a process this one starts (through its environment, never its command
    /// line, which other users can read).
    pub fn expose(&self) -> &str {
        &self.key
    }
}

/// Whether `text` can be a cluster secret: at least [`SHORTEST`] letters and digits.
fn well_formed(text: &str) -> bool {
    text.len() >= SHORTEST && text.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// What is wrong with a text that is not [`well_formed`].
fn malformed() -> String {
    format!("a cluster secret is at least {SHORTEST} letters and digits, without spaces")
}

/// An error unless `file`, with `metadata`, is readable by its owner alone; `what` names what it holds.
pub(super) fn owner_only(file: &Path, metadata: &std::fs::Metadata, what: &str) -> Result<()> {
    let mode = metadata.permissions().mode() & 0o777;
    match mode & 0o077 {
        0 => Ok(()),
        _ => Err(HearthError::persistence(
            file,
            format!("{what} is readable by others (mode {mode:03o}); `chmod 600` it"),
        )),
    }
}
