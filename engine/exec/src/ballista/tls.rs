//! TLS for the fleet's control plane, as Spark's `spark.ssl.*` and Ray's `RAY_USE_TLS`: the scheduler's port,
//! each executor's task and Arrow Flight ports, and every client of them (executors, drivers, the `hearth`
//! program's REST calls) speak TLS with the operator's certificates, and each side proves itself to the other
//! (mutual TLS: a connection without a certificate the fleet's authority signed is refused before a byte of
//! gRPC). With TLS on, no plan, job secret or data crosses the network in clear, and training jobs encrypt
//! their collective frames as well.
//!
//! A side's TLS directory holds `ca.pem` (the authority every side trusts), `cert.pem` (this side's
//! certificate, signed by it, naming each host the fleet runs on) and `key.pem` (its private key, readable by
//! its owner alone). `hearth cluster certs` writes one per [`Role`] — `scheduler/`, `executor/` and
//! `client/` under the directory it is given — and each process reads its own role's
//! ([`FleetTls::read_as`]); a directory with one `cert.pem` of no role serves every role. It is found in
//! `HEARTH_TLS_DIR`, else the program's default (the `hearth` program's is the copy that `hearth cluster start
//! --tls-dir` keeps in the fleet's state directory).
//!
//! ```no_run
//! use hearth_exec::ballista::{FleetPort, FleetTls, Role};
//!
//! let tls = FleetTls::read_as(std::path::Path::new("/etc/hearth/tls"), Role::Executor).unwrap();
//! let tasks = tls.server_config(FleetPort::ExecutorTasks).unwrap(); // admits the scheduler's certificate alone
//! assert!(tasks.alpn_protocols.contains(&b"h2".to_vec()));
//! ```

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use ballista_core::utils::{GrpcClientConfig, create_grpc_client_endpoint};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tonic::transport::{Certificate, ClientTlsConfig, Endpoint, Identity};

use super::roles::{CertificateFacts, FleetPort, Role, role_check};
use super::secret::owner_only;
use crate::error::{HearthError, Result};

/// The environment variable that names the TLS directory.
pub const TLS_DIR_ENV: &str = "HEARTH_TLS_DIR";
/// The authority's certificate(s), in a TLS directory.
pub const CA_FILE: &str = "ca.pem";
/// This side's certificate chain, in a TLS directory.
pub const CERT_FILE: &str = "cert.pem";
/// This side's private key, in a TLS directory.
pub const KEY_FILE: &str = "key.pem";

/// Where [`FleetTls::find`] looks when the environment names no directory.
static DEFAULT_DIR: OnceLock<PathBuf> = OnceLock::new();

/// The fleet's TLS material, read from a TLS directory and checked.
#[derive(Clone)]
pub struct FleetTls {
    /// The directory it was found from: a side's, or one holding a directory per role.
    found_in: PathBuf,
    dir: PathBuf,
    facts: CertificateFacts,
    ca: Vec<u8>,
    cert: Vec<u8>,
    key: Vec<u8>,
}

impl fmt::Debug for FleetTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FleetTls({})", self.dir.display())
    }
}

impl FleetTls {
    /// Reads `role`'s TLS from `dir`: its `role` subdirectory when that holds a certificate (the layout
    /// `hearth cluster certs` writes), else `dir` itself; refused when the certificate names another role.
    pub fn read_as(dir: &Path, role: Role) -> Result<Self> {
        let own = dir.join(role.name());
        let mut tls = match (own.join(CERT_FILE).exists(), dir.join(CERT_FILE).exists()) {
            (true, _) => Self::read(&own)?,
            (false, true) => Self::read(dir)?,
            (false, false) => {
                let message = format!(
                    "holds no {role} certificate: neither {role}/{CERT_FILE} (as `hearth cluster certs` writes them) nor {CERT_FILE}"
                );
                return Err(HearthError::persistence(dir, message));
            }
        };
        if let Some(named) = tls.facts.role.filter(|named| *named != role) {
            let message = format!(
                "is the {named}'s certificate, and the {role} needs its own (`hearth cluster certs` writes one per role, each in its own directory)"
            );
            return Err(HearthError::persistence(tls.dir.join(CERT_FILE), message));
        }
        tls.found_in = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        Ok(tls)
    }

    /// Reads and checks `dir`'s `ca.pem`, `cert.pem` and `key.pem`; an error names the file and what is
    /// wrong with it (missing, not PEM, no certificate, expired, a key others can read).
    pub fn read(dir: &Path) -> Result<Self> {
        // Kept whole, so processes started elsewhere (a driver in its job's directory) find it too.
        let dir = &std::fs::canonicalize(dir)
            .map_err(|e| HearthError::persistence(dir, "reading the TLS directory").caused_by(e))?;
        let read = |name: &str| {
            let file = dir.join(name);
            std::fs::read(&file).map_err(|e| HearthError::persistence(file, "reading it for TLS").caused_by(e))
        };
        let key_file = dir.join(KEY_FILE);
        if let Ok(metadata) = std::fs::metadata(&key_file) {
            owner_only(&key_file, &metadata, "the TLS key")?;
        }
        let cert = read(CERT_FILE)?;
        let chain = certificates(&dir.join(CERT_FILE), &cert)?;
        let facts = CertificateFacts::of(&chain[0]).map_err(|e| HearthError::persistence(dir.join(CERT_FILE), e))?;
        let now = i64::try_from(super::now_ms() / 1000).unwrap_or(i64::MAX);
        if facts.expires_at < now {
            let message = format!(
                "expired {} (make new certificates with `hearth cluster certs`)",
                facts.expires
            );
            return Err(HearthError::persistence(dir.join(CERT_FILE), message));
        }
        let tls = Self {
            found_in: dir.clone(),
            dir: dir.clone(),
            facts,
            ca: read(CA_FILE)?,
            cert,
            key: read(KEY_FILE)?,
        };
        tls.authorities()?;
        tls.private_key()?;
        Ok(tls)
    }

    /// `role`'s TLS in the directory `HEARTH_TLS_DIR` names; none when it is unset.
    pub fn from_env(role: Role) -> Result<Option<Self>> {
        match std::env::var_os(TLS_DIR_ENV) {
            Some(dir) if !dir.is_empty() => Self::read_as(Path::new(&dir), role).map(Some),
            _ => Ok(None),
        }
    }

    /// Makes `dir` where [`FleetTls::find`] looks when the environment names none (a program's default: the
    /// `hearth` program's is its fleet's state directory). Only the first call counts.
    pub fn use_default_dir(dir: PathBuf) {
        let _ = DEFAULT_DIR.set(dir);
    }

    /// The TLS this process speaks to the fleet as a client: `HEARTH_TLS_DIR`'s, else the default
    /// directory's when it holds a certificate, else none (plain TCP).
    pub fn find() -> Result<Option<Self>> {
        if let Some(tls) = Self::from_env(Role::Client)? {
            return Ok(Some(tls));
        }
        match DEFAULT_DIR.get() {
            Some(dir)
                if [dir.join(CERT_FILE), dir.join(Role::Client.name()).join(CERT_FILE)]
                    .iter()
                    .any(|f| f.exists()) =>
            {
                Self::read_as(dir, Role::Client).map(Some)
            }
            _ => Ok(None),
        }
    }

    /// The same fleet's TLS for `role` (the scheduler's drivers are clients): from the directory this was
    /// found in, else — when that is this side's own role directory — from the one beside it.
    pub fn as_role(&self, role: Role) -> Result<Self> {
        let found = Self::read_as(&self.found_in, role);
        let in_own_role_dir = (self.facts.role).is_some_and(|own| self.found_in.ends_with(own.name()));
        match (found, self.found_in.parent()) {
            (Err(_), Some(parent)) if in_own_role_dir => Self::read_as(parent, role),
            (found, _) => found,
        }
    }

    /// The directory it was found in: this side's, or the one holding a directory per role.
    pub fn root(&self) -> &Path {
        &self.found_in
    }

    /// The directory this side's material was read from (handed to the processes this one starts as the
    /// same role).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// This side's certificate: its role and expiry.
    pub fn certificate(&self) -> &CertificateFacts {
        &self.facts
    }

    /// What a server of the fleet listens with on `port`: its certificate, clients' certificates required,
    /// checked against the authority and — when this side's certificate names a role — for a role `port`
    /// admits; HTTP/2 (gRPC) and HTTP/1.1 (REST) offered.
    pub fn server_config(&self, port: FleetPort) -> Result<Arc<rustls::ServerConfig>> {
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        for authority in self.authorities()? {
            roots.add(authority).map_err(|e| {
                HearthError::persistence(self.dir.join(CA_FILE), "cannot be trusted as the TLS authority").caused_by(e)
            })?;
        }
        let clients =
            rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), Arc::clone(&provider))
                .build()
                .map_err(|e| {
                    HearthError::persistence(self.dir.join(CA_FILE), "cannot check clients' TLS certificates")
                        .caused_by(e)
                })?;
        let clients = match self.facts.role {
            Some(_) => role_check(clients, port),
            None => clients,
        };
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| HearthError::persistence(&self.dir, "choosing the TLS protocol versions").caused_by(e))?
            .with_client_cert_verifier(clients)
            .with_single_cert(self.chain()?, self.private_key()?)
            .map_err(|e| {
                let message = format!("with {KEY_FILE}, cannot identify a TLS server");
                HearthError::persistence(self.dir.join(CERT_FILE), message).caused_by(e)
            })?;
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }

    /// This side's certificate and key, for a server whose clients prove themselves otherwise (a Spark
    /// Connect server's PySpark clients carry a token, not a certificate).
    pub fn identity(&self) -> Identity {
        Identity::from_pem(&self.cert, &self.key)
    }

    /// What a gRPC client of the fleet connects with: the authority to trust and this side's certificate.
    pub fn client_config(&self) -> ClientTlsConfig {
        ClientTlsConfig::new()
            .ca_certificate(Certificate::from_pem(&self.ca))
            .identity(Identity::from_pem(&self.cert, &self.key))
    }

    /// `endpoint` over TLS. Ballista builds its control-plane channels as `http://` (its TLS switch reaches
    /// only Flight clients), so such an endpoint is built again as `https://` with Ballista's default
    /// timeouts, keep-alives and windows (a session's own `ballista.client.*` settings do not reach it).
    pub fn secure(&self, endpoint: Endpoint) -> Result<Endpoint, tonic::transport::Error> {
        let endpoint = match endpoint.uri().scheme_str() {
            Some("https") => endpoint,
            _ => {
                let authority = endpoint.uri().authority().map(ToString::to_string).unwrap_or_default();
                create_grpc_client_endpoint(format!("https://{authority}"), Some(&GrpcClientConfig::default()))?
            }
        };
        endpoint.tls_config(self.client_config())
    }

    /// `builder` trusting the fleet's authority alone and presenting this side's certificate (for REST).
    pub fn rest_client(&self, builder: reqwest::ClientBuilder) -> Result<reqwest::ClientBuilder> {
        let authorities = reqwest::Certificate::from_pem_bundle(&self.ca)
            .map_err(|e| HearthError::persistence(self.dir.join(CA_FILE), "not PEM TLS certificates").caused_by(e))?;
        let mut identity = self.cert.clone();
        identity.extend_from_slice(b"\n");
        identity.extend_from_slice(&self.key);
        let identity = reqwest::Identity::from_pem(&identity).map_err(|e| {
            let message = format!("with {CERT_FILE}, cannot identify a TLS client");
            HearthError::persistence(self.dir.join(KEY_FILE), message).caused_by(e)
        })?;
        Ok(builder.tls_certs_only(authorities).identity(identity))
    }

    fn authorities(&self) -> Result<Vec<CertificateDer<'static>>> {
        certificates(&self.dir.join(CA_FILE), &self.ca)
    }

    fn chain(&self) -> Result<Vec<CertificateDer<'static>>> {
        certificates(&self.dir.join(CERT_FILE), &self.cert)
    }

    fn private_key(&self) -> Result<PrivateKeyDer<'static>> {
        PrivateKeyDer::from_pem_slice(&self.key)
            .map_err(|e| HearthError::persistence(self.dir.join(KEY_FILE), "no PEM private key").caused_by(e))
    }
}

/// The PEM certificates in `pem`, read from `file`: at least one.
fn certificates(file: &Path, pem: &[u8]) -> Result<Vec<CertificateDer<'static>>> {
    let certificates = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| HearthError::persistence(file, "not PEM TLS certificates").caused_by(e))?;
    match certificates.is_empty() {
        true => Err(HearthError::persistence(file, "holds no PEM certificate")),
        false => Ok(certificates),
    }
}
