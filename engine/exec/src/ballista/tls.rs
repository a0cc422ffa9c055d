//! TLS for the fleet's control plane, as Spark's `spark.ssl.*` and Ray's `RAY_USE_TLS`: the scheduler's port,
//! each executor's task and Arrow Flight ports, and every client of them (executors, drivers, the `hearth`
//! program's REST calls) speak TLS with the operator's certificates, and each side proves itself to the other
//! (mutual TLS: a connection without a certificate the fleet's authority signed is refused before a byte of
//! gRPC). With TLS on, no plan, job secret or data crosses the network in clear, and training jobs encrypt
//! their collective frames as well.
//!
//! A TLS directory holds `ca.pem` (the authority every side trusts), `cert.pem` (this side's certificate,
//! signed by it, naming each host the fleet runs on) and `key.pem` (its private key, readable by its owner
//! alone). It is found in `HEARTH_TLS_DIR`, else the program's default (the `hearth` program's is the copy
//! that `hearth cluster start --tls-dir` keeps in the fleet's state directory).
//!
//! ```no_run
//! use hearth_exec::ballista::FleetTls;
//!
//! let tls = FleetTls::read(std::path::Path::new("/etc/hearth/tls")).unwrap();
//! let server = tls.server_config().unwrap(); // what the scheduler and executors listen with
//! assert!(server.alpn_protocols.contains(&b"h2".to_vec()));
//! ```

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use ballista_core::utils::{GrpcClientConfig, create_grpc_client_endpoint};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tonic::transport::{Certificate, ClientTlsConfig, Endpoint, Identity};

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
    dir: PathBuf,
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
    /// Reads and checks `dir`'s `ca.pem`, `cert.pem` and `key.pem`; an error names the file and what is
    /// wrong with it (missing, not PEM, no certificate, a key others can read).
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
        let tls = Self {
            dir: dir.clone(),
            ca: read(CA_FILE)?,
            cert: read(CERT_FILE)?,
            key: read(KEY_FILE)?,
        };
        tls.authorities()?;
        tls.chain()?;
        tls.private_key()?;
        Ok(tls)
    }

    /// The directory `HEARTH_TLS_DIR` names, read; none when it is unset.
    pub fn from_env() -> Result<Option<Self>> {
        match std::env::var_os(TLS_DIR_ENV) {
            Some(dir) if !dir.is_empty() => Self::read(Path::new(&dir)).map(Some),
            _ => Ok(None),
        }
    }

    /// Makes `dir` where [`FleetTls::find`] looks when the environment names none (a program's default: the
    /// `hearth` program's is its fleet's state directory). Only the first call counts.
    pub fn use_default_dir(dir: PathBuf) {
        let _ = DEFAULT_DIR.set(dir);
    }

    /// The TLS this process speaks to the fleet: `HEARTH_TLS_DIR`'s, else the default directory's when it
    /// holds a certificate, else none (plain TCP).
    pub fn find() -> Result<Option<Self>> {
        if let Some(tls) = Self::from_env()? {
            return Ok(Some(tls));
        }
        match DEFAULT_DIR.get() {
            Some(dir) if dir.join(CERT_FILE).exists() => Self::read(dir).map(Some),
            _ => Ok(None),
        }
    }

    /// The directory the material was read from (handed to the processes this one starts).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// What a server of the fleet listens with: its certificate, clients' certificates required and checked
    /// against the authority, HTTP/2 (gRPC) and HTTP/1.1 (REST) offered.
    pub fn server_config(&self) -> Result<Arc<rustls::ServerConfig>> {
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
        self.certificates(CA_FILE, &self.ca)
    }

    fn chain(&self) -> Result<Vec<CertificateDer<'static>>> {
        self.certificates(CERT_FILE, &self.cert)
    }

    fn certificates(&self, name: &str, pem: &[u8]) -> Result<Vec<CertificateDer<'static>>> {
        let file = self.dir.join(name);
        let certificates = CertificateDer::pem_slice_iter(pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| HearthError::persistence(&file, "not PEM TLS certificates").caused_by(e))?;
        match certificates.is_empty() {
            true => Err(HearthError::persistence(file, "holds no PEM certificate")),
            false => Ok(certificates),
        }
    }

    fn private_key(&self) -> Result<PrivateKeyDer<'static>> {
        PrivateKeyDer::from_pem_slice(&self.key)
            .map_err(|e| HearthError::persistence(self.dir.join(KEY_FILE), "no PEM private key").caused_by(e))
    }
}
