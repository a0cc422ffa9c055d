//! How a process reaches the fleet: the secret it presents ([`ClusterSecret`]) and the TLS it speaks
//! ([`FleetTls`]), both on every Ballista channel, Flight fetch and REST call it makes.
//!
//! ```
//! use hearth_exec::ballista::{ClusterSecret, FleetAccess};
//!
//! let access = FleetAccess { secret: Some(ClusterSecret::parse("0123456789abcdef0123456789abcdef").unwrap()), tls: None };
//! assert!(access.endpoint_override().is_some());
//! assert_eq!(access.environment()[0].0, "HEARTH_SECRET");
//! ```

use ballista_core::extension::{EndpointOverrideFn, SessionConfigExt};
use datafusion::prelude::SessionConfig;

use super::secret::{ClusterSecret, SECRET_ENV, SECRET_JOB_ENV};
use super::tls::{FleetTls, TLS_DIR_ENV};
use crate::error::Result;

/// The secret and the TLS a process reaches the fleet with (either may be absent).
#[derive(Clone, Debug, Default)]
pub struct FleetAccess {
    /// The fleet's secret, presented with every request.
    pub secret: Option<ClusterSecret>,
    /// The fleet's TLS, spoken on every connection.
    pub tls: Option<FleetTls>,
}

impl FleetAccess {
    /// What this process has: [`ClusterSecret::find`]'s secret and [`FleetTls::find`]'s TLS.
    pub fn find() -> Result<Self> {
        Ok(Self {
            secret: ClusterSecret::find()?,
            tls: FleetTls::find()?,
        })
    }

    /// What a Ballista channel needs to reach the fleet: TLS when there is TLS, and when there is a secret a
    /// token of it for the channel's server in its user agent (Ballista gives some of its clients no other way
    /// to add a header); none for neither.
    pub fn endpoint_override(&self) -> Option<EndpointOverrideFn> {
        if self.secret.is_none() && self.tls.is_none() {
            return None;
        }
        let secret = self.secret.clone();
        let tls = self.tls.clone();
        Some(std::sync::Arc::new(move |endpoint: tonic::transport::Endpoint| {
            let endpoint = match &tls {
                Some(tls) => tls.secure(endpoint)?,
                None => endpoint,
            };
            Ok(match &secret {
                Some(secret) => {
                    let server = endpoint.uri().authority().map_or("", |a| a.as_str());
                    let token = secret.channel_token(server);
                    endpoint.user_agent(token)?
                }
                None => endpoint,
            })
        }))
    }

    /// `config` reaching the fleet: every channel it opens (to the scheduler, to executors' Flight servers)
    /// through [`FleetAccess::endpoint_override`], over TLS when there is TLS.
    pub fn present_in(&self, mut config: SessionConfig) -> SessionConfig {
        if let Some(endpoint) = self.endpoint_override() {
            config = config.with_ballista_override_create_grpc_client_endpoint(endpoint);
        }
        config.with_ballista_use_tls(self.tls.is_some())
    }

    /// This access for cluster-mode job `job`'s driver: its job's key in place of the fleet's secret.
    pub fn for_job(&self, job: &str) -> Self {
        Self {
            secret: self.secret.as_ref().map(|secret| secret.for_job(job)),
            tls: self.tls.clone(),
        }
    }

    /// The variables that hand this access to a process this one starts (its environment, never its command
    /// line, which other users can read).
    pub fn environment(&self) -> Vec<(&'static str, String)> {
        let secret = self.secret.iter().map(|s| (SECRET_ENV, s.expose().to_string()));
        let job = (self.secret.iter()).filter_map(|s| Some((SECRET_JOB_ENV, s.job()?.to_string())));
        let tls = self.tls.iter().map(|t| (TLS_DIR_ENV, t.dir().display().to_string()));
        secret.chain(job).chain(tls).collect()
    }
}
