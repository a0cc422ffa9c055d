//! Roles in the fleet's TLS, as Kubernetes gives each component a certificate of its own: `hearth cluster
//! certs` issues one for the scheduler, one for the executors and one for clients (drivers and the `hearth`
//! program), each naming its role in its subject's organizational unit (`hearth-scheduler`,
//! `hearth-executor`, `hearth-client`), and every server admits only the roles that have business on its
//! port. An executor's task port, where plans are launched, admits the scheduler alone: a client's
//! certificate that leaks launches nothing. A fleet given one certificate that names no role (an operator's
//! own) keeps the older rule: whoever holds it is every role.
//!
//! ```
//! use hearth_exec::ballista::{FleetPort, Role};
//!
//! assert_eq!(FleetPort::ExecutorTasks.callers(), &[Role::Scheduler]);
//! assert_eq!(Role::Executor.unit(), "hearth-executor");
//! assert_eq!(Role::from_unit("hearth-client"), Some(Role::Client));
//! ```

use std::fmt;
use std::sync::Arc;

use rustls::client::danger::HandshakeSignatureValid;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{CertificateError, DigitallySignedStruct, DistinguishedName, OtherError, SignatureScheme};
use serde::Serialize;

/// Who holds a certificate of the fleet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The scheduler: serves its port to executors and clients, and calls executors' task ports.
    Scheduler,
    /// An executor: serves its task and Flight ports, and calls the scheduler and other executors' Flight.
    Executor,
    /// A driver or the `hearth` program: calls the scheduler and executors' Flight, serves nothing.
    Client,
}

impl Role {
    /// Every role, in the order `hearth cluster certs` writes them.
    pub const ALL: [Role; 3] = [Role::Scheduler, Role::Executor, Role::Client];

    /// The role's name, which is also the subdirectory of a TLS directory holding its certificate.
    pub fn name(self) -> &'static str {
        match self {
            Role::Scheduler => "scheduler",
            Role::Executor => "executor",
            Role::Client => "client",
        }
    }

    /// The organizational unit a certificate for this role names in its subject.
    pub fn unit(self) -> &'static str {
        match self {
            Role::Scheduler => "hearth-scheduler",
            Role::Executor => "hearth-executor",
            Role::Client => "hearth-client",
        }
    }

    /// The role an organizational unit names; none for any other text.
    pub fn from_unit(unit: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|role| role.unit() == unit)
    }

    /// Whether a certificate for this role serves a port (and so needs the fleet's host names).
    pub fn serves(self) -> bool {
        self != Role::Client
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A port of the fleet, and the roles that may call it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FleetPort {
    /// The scheduler's one port (gRPC and REST): executors register and report, clients submit and ask.
    Scheduler,
    /// An executor's task port: the scheduler launches, cancels and cleans up tasks.
    ExecutorTasks,
    /// An executor's Arrow Flight port: other executors read shuffle files, clients read results.
    ExecutorFlight,
}

impl FleetPort {
    /// The roles whose certificates this port admits.
    pub fn callers(self) -> &'static [Role] {
        match self {
            FleetPort::Scheduler | FleetPort::ExecutorFlight => &[Role::Executor, Role::Client],
            FleetPort::ExecutorTasks => &[Role::Scheduler],
        }
    }

    fn described(self) -> &'static str {
        match self {
            FleetPort::Scheduler => "the scheduler's port",
            FleetPort::ExecutorTasks => "an executor's task port",
            FleetPort::ExecutorFlight => "an executor's Flight port",
        }
    }
}

/// What a certificate says about its holder.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CertificateFacts {
    /// The role its subject names; none for a certificate that names no hearth role.
    pub role: Option<Role>,
    /// The last moment it is valid, in seconds since the Unix epoch.
    pub expires_at: i64,
    /// The same moment as text (`Nov 27 00:00:00 2027 +00:00`).
    pub expires: String,
}

impl CertificateFacts {
    /// Reads a DER certificate's role and expiry; an error says what is not a certificate.
    pub fn of(der: &[u8]) -> Result<Self, String> {
        let (_, certificate) =
            x509_parser::parse_x509_certificate(der).map_err(|e| format!("not an X.509 certificate: {e}"))?;
        let role = certificate
            .subject()
            .iter_organizational_unit()
            .filter_map(|unit| unit.as_str().ok())
            .find_map(Role::from_unit);
        let not_after = certificate.validity().not_after;
        Ok(Self {
            role,
            expires_at: not_after.timestamp(),
            expires: not_after.to_string(),
        })
    }

    /// Whole days from `now` (seconds since the epoch) until it expires; negative once it has.
    pub fn days_left(&self, now: i64) -> i64 {
        days_left(self.expires_at, now)
    }
}

/// Whole days from `now` until `expires_at` (both in seconds since the epoch); negative once past.
pub fn days_left(expires_at: i64, now: i64) -> i64 {
    (expires_at - now).div_euclid(86_400)
}

/// Checks a client's certificate chain with `chain`, then its role against what `port` admits.
pub(super) fn role_check(chain: Arc<dyn ClientCertVerifier>, port: FleetPort) -> Arc<dyn ClientCertVerifier> {
    Arc::new(RoleCheck { chain, port })
}

#[derive(Debug)]
struct RoleCheck {
    chain: Arc<dyn ClientCertVerifier>,
    port: FleetPort,
}

/// A certificate whose role may not call a port: what the server logs when it refuses the handshake.
struct RoleRefused {
    role: Option<Role>,
    port: FleetPort,
}

/// rustls shows the cause of a certificate refused for another reason than its own with `Debug`: this
/// makes that the sentence the server logs.
impl fmt::Debug for RoleRefused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for RoleRefused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let callers: Vec<&str> = self.port.callers().iter().map(|role| role.name()).collect();
        match self.role {
            Some(role) => write!(f, "a {role} certificate may not call {}", self.port.described()),
            None => write!(
                f,
                "a certificate naming no hearth role may not call {}",
                self.port.described()
            ),
        }?;
        write!(f, " (it admits {})", callers.join(" and "))
    }
}

impl std::error::Error for RoleRefused {}

impl ClientCertVerifier for RoleCheck {
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.chain.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        let verified = self.chain.verify_client_cert(end_entity, intermediates, now)?;
        let role = CertificateFacts::of(end_entity)
            .map_err(|_| rustls::Error::InvalidCertificate(CertificateError::BadEncoding))?
            .role;
        match role {
            Some(role) if self.port.callers().contains(&role) => Ok(verified),
            role => Err(rustls::Error::InvalidCertificate(CertificateError::Other(OtherError(
                Arc::new(RoleRefused { role, port: self.port }),
            )))),
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.chain.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.chain.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.chain.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_port_admits_the_roles_with_business_there() {
        assert!(!FleetPort::ExecutorTasks.callers().contains(&Role::Client));
        assert!(!FleetPort::ExecutorTasks.callers().contains(&Role::Executor));
        assert!(FleetPort::Scheduler.callers().contains(&Role::Client));
        assert!(FleetPort::ExecutorFlight.callers().contains(&Role::Executor));
        let refused = RoleRefused {
            role: Some(Role::Client),
            port: FleetPort::ExecutorTasks,
        };
        assert_eq!(
            refused.to_string(),
            "a client certificate may not call an executor's task port (it admits scheduler)"
        );
    }

    #[test]
    fn units_name_roles_and_nothing_else() {
        for role in Role::ALL {
            assert_eq!(Role::from_unit(role.unit()), Some(role));
        }
        assert_eq!(Role::from_unit("client"), None);
        assert_eq!(Role::from_unit("Engineering"), None);
    }

    #[test]
    fn days_left_round_down_and_go_negative() {
        let facts = CertificateFacts {
            role: None,
            expires_at: 10 * 86_400,
            expires: String::new(),
        };
        assert_eq!(facts.days_left(0), 10);
        assert_eq!(facts.days_left(86_400 + 1), 8);
        assert_eq!(facts.days_left(11 * 86_400), -1);
    }
}
