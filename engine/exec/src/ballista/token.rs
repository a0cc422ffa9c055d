//! Tokens that prove the fleet's secret without revealing it. A client never sends the secret: each connection
//! (and each REST client) carries a token, `hearth-token/1/ADDRESS/NONCE/PROOF`, where PROOF is an
//! HMAC-SHA256 under the secret of the address the client connects from and a fresh random nonce. A server
//! admits a request only when the proof holds and the address is the one the connection comes from, so a
//! token read off the wire or out of a log is worth nothing from any other machine; computing one for another
//! address takes the secret. Loopback addresses count as one ("loopback"): they are all this machine. A
//! cluster-mode job's driver holds only its job's key ([`ClusterSecret::for_job`]); its tokens end in the job's
//! id (`…/PROOF/JOB`) and prove that key, and a port that checks one learns it speaks with that job
//! ([`Principal::Job`]), to admit it only for the job's own business.
//!
//! ```
//! use std::net::{IpAddr, Ipv4Addr};
//! use hearth_exec::ballista::{ClusterSecret, TokenRefusal};
//!
//! let secret = ClusterSecret::parse("0123456789abcdef0123456789abcdef").unwrap();
//! let token = secret.token_for("127.0.0.1:50050");
//! assert!(!token.contains(secret.expose()));
//! let loopback = IpAddr::V4(Ipv4Addr::LOCALHOST);
//! assert!(secret.check(None, Some(&format!("{token} tonic/0.14")), loopback).is_ok());
//! let elsewhere = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 7));
//! assert!(matches!(secret.check(Some(&format!("Bearer {token}")), None, elsewhere), Err(TokenRefusal::Elsewhere { .. })));
//! ```

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, ToSocketAddrs};

use hearth_collective::JobSecret;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use super::secret::{ClusterSecret, equal_in_constant_time};
use crate::host::address_towards;

/// What every token starts with (its version is the `1`).
const PREFIX: &str = "hearth-token/1/";
/// What the proof covers besides the address and the nonce.
const DOMAIN: &str = "hearth fleet token v1";
/// How a token names any loopback address.
const LOOPBACK: &str = "loopback";

/// Who a request's token speaks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Principal {
    /// A holder of the fleet's secret: its processes, the operator's commands.
    Member,
    /// The driver of the cluster-mode job with this id.
    Job(String),
}

/// Why a request's token was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenRefusal {
    /// It carried no token.
    Missing,
    /// Its token is malformed, or its proof does not hold: it was not made with the secret.
    Forged,
    /// Its token was made for connections from another address.
    Elsewhere {
        /// The address the token names.
        named: String,
        /// The address the connection came from.
        peer: IpAddr,
    },
}

impl fmt::Display for TokenRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Missing => f.write_str("it did not present the cluster secret"),
            Self::Forged => f.write_str("its token does not prove the cluster secret"),
            Self::Elsewhere { named, peer } => write!(
                f,
                "its token was made for connections from {named}, not {peer} (read off the wire, or an address \
                 translated between them)"
            ),
        }
    }
}

impl ClusterSecret {
    /// A new token for this machine's connections to `server` (`host:port`, or a URL's authority): it names
    /// the address this machine reaches the server from.
    pub fn token_for(&self, server: &str) -> String {
        let from = server
            .to_socket_addrs()
            .ok()
            .and_then(|mut addresses| addresses.next())
            .and_then(address_towards)
            .unwrap_or_else(|| {
                log::warn!("no route to {server}: its token names no address, and it will refuse it");
                IpAddr::V4(Ipv4Addr::UNSPECIFIED)
            });
        let address = named(from);
        let nonce = &JobSecret::generate().to_hex()[..32];
        let proof = proof(self.expose(), &address, nonce);
        match self.job() {
            None => format!("{PREFIX}{address}/{nonce}/{proof}"),
            Some(job) => format!("{PREFIX}{address}/{nonce}/{proof}/{job}"),
        }
    }

    /// The value of an `authorization` header for a request to `server` ([`ClusterSecret::token_for`]).
    pub fn bearer_for(&self, server: &str) -> String {
        format!("Bearer {}", self.token_for(server))
    }

    /// Whom a request with these headers, on a connection from `peer`, speaks for: a token of this (the
    /// fleet's) secret, or of a job's key derived from it, made for `peer`'s address.
    pub fn check(
        &self,
        authorization: Option<&str>,
        user_agent: Option<&str>,
        peer: IpAddr,
    ) -> Result<Principal, TokenRefusal> {
        let bearer = (authorization.and_then(|a| a.split_once(' ')))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim());
        let presented = [bearer, user_agent.and_then(|agent| agent.split(' ').next())]
            .into_iter()
            .flatten()
            .find_map(|token| token.strip_prefix(PREFIX))
            .ok_or(TokenRefusal::Missing)?;
        let mut parts = presented.split('/');
        let (Some(address), Some(nonce), Some(presented_proof), job, None) =
            (parts.next(), parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(TokenRefusal::Forged);
        };
        let (key, principal) = match job {
            None => (self.expose().to_string(), Principal::Member),
            Some(job) => (job_key(self.expose(), job), Principal::Job(job.to_string())),
        };
        if !equal_in_constant_time(presented_proof.as_bytes(), proof(&key, address, nonce).as_bytes()) {
            return Err(TokenRefusal::Forged);
        }
        match address == named(peer) {
            true => Ok(principal),
            false => Err(TokenRefusal::Elsewhere {
                named: address.to_string(),
                peer,
            }),
        }
    }
}

/// The HMAC-SHA256 under `key` of `message`, in hexadecimal.
fn hmac_hex(key: &str, message: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(key.as_bytes()).expect("HMAC takes keys of any length");
    mac.update(message.as_bytes());
    mac.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect()
}

/// A token's proof: the HMAC under `key` of `address` and `nonce`.
fn proof(key: &str, address: &str, nonce: &str) -> String {
    hmac_hex(key, &format!("{DOMAIN}\n{address}\n{nonce}"))
}

/// The key of cluster-mode job `job` under the fleet's secret `secret`.
pub(super) fn job_key(secret: &str, job: &str) -> String {
    hmac_hex(secret, &format!("hearth job key v1\n{job}"))
}

/// A training stage's job secret under `key` for the stage's `nonce` (64 hex digits).
pub(super) fn training_key(key: &str, nonce: &str) -> String {
    hmac_hex(key, &format!("hearth training secret v1\n{nonce}"))
}

/// How a token names `address`: any loopback address as one, IPv4-mapped IPv6 as IPv4.
fn named(address: IpAddr) -> String {
    let address = address.to_canonical();
    match address.is_loopback() {
        true => LOOPBACK.to_string(),
        false => address.to_string(),
    }
}

/// The `host:port` of a URL or URI (`http://host:port/path` → `host:port`), for [`ClusterSecret::token_for`].
pub(crate) fn authority(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    rest.split('/').next().unwrap_or(rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret() -> ClusterSecret {
        ClusterSecret::parse("0123456789abcdef0123456789abcdef").unwrap()
    }

    #[test]
    fn a_token_is_admitted_from_its_address_only_and_only_with_its_proof() {
        let secret = secret();
        let loopback = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));
        let token = secret.token_for("127.0.0.1:9");
        assert!(
            secret.check(None, Some(&token), loopback).is_ok(),
            "all of loopback is this machine"
        );
        assert_eq!(secret.check(None, None, loopback), Err(TokenRefusal::Missing));
        assert_eq!(
            secret.check(Some(&format!("Bearer {}", secret.expose())), None, loopback),
            Err(TokenRefusal::Missing)
        );
        let other = ClusterSecret::parse("fedcba9876543210fedcba9876543210").unwrap();
        assert_eq!(other.check(None, Some(&token), loopback), Err(TokenRefusal::Forged));
        let moved = token.replace("/loopback/", "/192.0.2.7/");
        assert_eq!(
            secret.check(None, Some(&moved), "192.0.2.7".parse().unwrap()),
            Err(TokenRefusal::Forged)
        );
        assert!(matches!(
            secret.check(None, Some(&token), "192.0.2.7".parse().unwrap()),
            Err(TokenRefusal::Elsewhere { .. })
        ));
        assert_ne!(secret.token_for("127.0.0.1:9"), token, "each token has a fresh nonce");
    }

    #[test]
    fn a_jobs_token_speaks_for_that_job_only() {
        let secret = secret();
        let loopback = IpAddr::V4(Ipv4Addr::LOCALHOST);
        let job = secret.for_job("driver-1");
        assert_ne!(job.expose(), secret.expose());
        let token = job.token_for("127.0.0.1:9");
        assert_eq!(
            secret.check(None, Some(&token), loopback),
            Ok(Principal::Job("driver-1".into()))
        );
        let renamed = token.replace("/driver-1", "/driver-2");
        assert_eq!(
            secret.check(None, Some(&renamed), loopback),
            Err(TokenRefusal::Forged),
            "another job's name"
        );
        let unscoped = token.trim_end_matches("/driver-1");
        assert_eq!(
            secret.check(None, Some(unscoped), loopback),
            Err(TokenRefusal::Forged),
            "a member's"
        );
    }

    #[test]
    fn urls_give_their_authority() {
        assert_eq!(authority("http://10.0.0.5:50050/hearth/jobs"), "10.0.0.5:50050");
        assert_eq!(authority("10.0.0.5:50050"), "10.0.0.5:50050");
        assert_eq!(authority("https://127.0.0.1:1/"), "127.0.0.1:1");
    }
}
