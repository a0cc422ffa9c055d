//! Tokens that prove the fleet's secret without revealing it. A client never sends the secret: it sends a
//! token, `hearth-token/2/ADDRESS/SERVICE/EXPIRES/NONCE/PROOF`, where PROOF is an HMAC-SHA256 under the
//! secret of everything before it:
//!
//! - ADDRESS, the address the client connects from: a server admits a token only on connections from it, so a
//!   token read off the wire or out of a file is worth nothing from any other machine. Loopback addresses
//!   count as one (`loopback`): they are all this machine.
//! - SERVICE, what it is for ([`Service`]): `api`, the scheduler's REST routes; `grpc`, the fleet's gRPC
//!   ports. A server tells them apart by the route asked, and refuses a token for the other service.
//! - EXPIRES, when it stops being admitted (seconds since 1970), at most [`MAX_VALID_FOR`] ahead; a server
//!   remembers the nonces of the tokens it admitted until then and admits each on one connection only
//!   ([`ReplayMemory`]): a token is made for one call, and a copy is refused. Only the scheduler serves
//!   `api`, so an `api` token admits one connection in the whole fleet; a `grpc` token made for a tool one on
//!   each gRPC port it reaches (the token names no port: a scheduler behind a port mapping keeps working).
//!   Or `connection`:
//!   the token of one of Ballista's gRPC channels
//!   ([`channel_token`](super::ClusterSecret::channel_token)), which proves the secret for the connections of
//!   that channel as Spark's per-connection handshake does. Ballista builds its channels with a fixed user
//!   agent that tonic presents again on each reconnection, so these tokens cannot expire nor admit one
//!   connection only without stranding an executor after a network blip or a scheduler restart; they are
//!   made in a fleet process's memory for one channel and are never written, printed or logged.
//! - NONCE, fresh random bits.
//!
//! A cluster-mode job's driver holds only its job's key ([`for_job`](super::ClusterSecret::for_job)); its
//! tokens end in the job's id (`…/PROOF/JOB`) and prove that key, and a port that checks one learns it speaks
//! with that job ([`Principal::Job`]), to admit it only for the job's own business (the scheduler: only while
//! the job runs).
//!
//! ```
//! use std::net::{IpAddr, Ipv4Addr};
//! use std::time::Duration;
//! use hearth_exec::ballista::{ClusterSecret, Presented, Service, TokenRefusal};
//!
//! let secret = ClusterSecret::parse("0123456789abcdef0123456789abcdef").unwrap();
//! let token = secret.token("127.0.0.1:50050", Service::Api, Duration::from_secs(300));
//! assert!(!token.contains(secret.expose()));
//! let bearer = format!("Bearer {token}");
//! let here = IpAddr::V4(Ipv4Addr::LOCALHOST);
//! assert!(secret.check(Presented::bearer(&bearer), here, Service::Api).is_ok());
//! let refusal = secret.check(Presented::bearer(&bearer), here, Service::Grpc).unwrap_err();
//! assert!(matches!(refusal, TokenRefusal::OtherService { .. }));
//! let elsewhere = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 7));
//! let refusal = secret.check(Presented::bearer(&bearer), elsewhere, Service::Api).unwrap_err();
//! assert!(matches!(refusal, TokenRefusal::Elsewhere { .. }));
//! ```

mod replay;

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, ToSocketAddrs};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hearth_collective::JobSecret;
use hearth_common::host::address_towards;

pub use self::replay::ReplayMemory;
use super::keys::{equal_in_constant_time, hmac_hex, job_key};

/// What every token starts with, whatever its version.
const FAMILY: &str = "hearth-token/";
/// What every token of this version starts with.
const PREFIX: &str = "hearth-token/2/";
/// What the proof covers besides the token's fields.
const DOMAIN: &str = "hearth fleet token v2";
/// How a token names any loopback address.
const LOOPBACK: &str = "loopback";
/// The EXPIRES of a channel's token, which lasts as long as the channel's connections.
const FOR_THE_CONNECTION: &str = "connection";

/// How long a token made for one call is admitted: [`bearer_for`](super::ClusterSecret::bearer_for)'s, and
/// `hearth cluster token`'s by default.
pub const DEFAULT_VALID_FOR: Duration = Duration::from_secs(5 * 60);
/// The longest a token may be admitted for.
pub const MAX_VALID_FOR: Duration = Duration::from_secs(60 * 60);
/// How far two machines' clocks may differ: an expired token is admitted this much longer.
pub const CLOCK_SKEW: Duration = Duration::from_secs(60);

/// The service a token is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Service {
    /// The scheduler's REST routes (`/hearth/…`, Ballista's `/api/…`).
    Api,
    /// The fleet's gRPC ports: the scheduler's, and each executor's task and Flight ports.
    Grpc,
}

impl Service {
    /// How tokens name it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Api => "api",
            Self::Grpc => "grpc",
        }
    }

    /// The service named `name` ([`Service::name`]).
    pub fn parse(name: &str) -> Option<Self> {
        [Self::Api, Self::Grpc]
            .into_iter()
            .find(|service| service.name() == name)
    }
}

/// Who a request's token speaks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Principal {
    /// A holder of the fleet's secret: its processes, the operator's commands.
    Member,
    /// The driver of the cluster-mode job with this id.
    Job(String),
}

/// What an admitted token proved: whom it speaks for, and, when it expires, the nonce a server must not
/// admit again on another connection ([`ReplayMemory`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Admitted {
    /// Whom the token speaks for.
    pub principal: Principal,
    /// The token's nonce and until when it is admitted; none for a channel's token.
    pub once: Option<SingleUse>,
}

/// What a server remembers of an expiring token it admitted ([`ReplayMemory`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SingleUse {
    /// The token's nonce.
    pub nonce: String,
    /// Until when it is admitted: its expiry plus the clock skew, in seconds since 1970.
    pub until: u64,
}

/// The headers a request presents a token in.
#[derive(Debug, Clone, Copy, Default)]
pub struct Presented<'a> {
    /// The `authorization` header (`Bearer TOKEN`).
    pub authorization: Option<&'a str>,
    /// The `user-agent` header, whose first word is a channel's token.
    pub user_agent: Option<&'a str>,
}

impl<'a> Presented<'a> {
    /// A token in an `authorization` header `value`.
    pub fn bearer(value: &'a str) -> Self {
        Self {
            authorization: Some(value),
            user_agent: None,
        }
    }

    /// The token these headers present, if any: the bearer's, else the user agent's first word.
    fn token(&self) -> Option<&'a str> {
        let bearer = (self.authorization.and_then(|a| a.split_once(' ')))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim());
        [bearer, self.user_agent.and_then(|agent| agent.split(' ').next())]
            .into_iter()
            .flatten()
            .find(|token| token.starts_with(FAMILY))
    }
}

/// Why a request's token was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenRefusal {
    /// It carried no token.
    Missing,
    /// Its token is of another version of hearth's tokens.
    OtherVersion,
    /// Its token is malformed, or its proof does not hold: it was not made with the secret.
    Forged,
    /// Its token was made for connections from another address.
    Elsewhere {
        /// The address the token names.
        named: String,
        /// The address the connection came from.
        peer: IpAddr,
    },
    /// Its token is for another service.
    OtherService {
        /// The service the token names.
        named: Service,
        /// The service that was asked.
        asked: Service,
    },
    /// Its token expired this many seconds ago.
    Expired(u64),
    /// Its token says it is admitted for longer than [`MAX_VALID_FOR`].
    TooLong,
    /// Its token was admitted before, on another connection.
    Replayed,
    /// Its token is a job's, and that job has ended.
    JobEnded(String),
}

impl fmt::Display for TokenRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Missing => f.write_str("it did not present the cluster secret"),
            Self::OtherVersion => f.write_str(
                "its token is of another hearth version's kind (this one's start with hearth-token/2/): make a new one",
            ),
            Self::Forged => f.write_str("its token does not prove the cluster secret"),
            Self::Elsewhere { named, peer } => write!(
                f,
                "its token was made for connections from {named}, not {peer} (read off the wire, or an address \
                 translated between them)"
            ),
            Self::OtherService { named, asked } => {
                write!(f, "its token is for the {} service, not {}", named.name(), asked.name())
            }
            Self::Expired(seconds) => write!(f, "its token expired {seconds} s ago: make a new one"),
            Self::TooLong => write!(
                f,
                "its token says it is valid for longer than {} s",
                MAX_VALID_FOR.as_secs()
            ),
            Self::Replayed => f.write_str(
                "its token was used before, on another connection: each token admits one (make a new one per call)",
            ),
            Self::JobEnded(job) => write!(f, "its token is job {job}'s, which has ended"),
        }
    }
}

/// Makes tokens of one key for this machine's calls to one server: the address this machine reaches the
/// server from is found once ([`ClusterSecret::tokens_for`](super::ClusterSecret::tokens_for)).
///
/// ```
/// use std::time::Duration;
/// use hearth_exec::ballista::{ClusterSecret, Service};
///
/// let secret = ClusterSecret::parse("0123456789abcdef0123456789abcdef").unwrap();
/// let tokens = secret.tokens_for("127.0.0.1:50050");
/// let token = tokens.token(Service::Api, Duration::from_secs(60));
/// assert!(token.starts_with("hearth-token/2/loopback/api/"));
/// assert_ne!(tokens.token(Service::Api, Duration::from_secs(60)), token, "each has a fresh nonce");
/// ```
#[derive(Clone)]
pub struct TokenMaker {
    key: String,
    job: Option<String>,
    /// How the tokens name the address this machine connects from.
    from: String,
}

impl fmt::Debug for TokenMaker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TokenMaker(from {})", self.from)
    }
}

impl TokenMaker {
    /// A maker of tokens proving `key` (the key of job `job`, when given) for this machine's calls to `server`
    /// (`host:port`, or a URL's authority).
    pub(super) fn new(key: &str, job: Option<&str>, server: &str) -> Self {
        let found = server.to_socket_addrs().ok().and_then(|mut addresses| addresses.next());
        let from = found.and_then(address_towards).unwrap_or_else(|| {
            log::warn!("no route to {server}: its tokens name no address, and it will refuse them");
            IpAddr::V4(Ipv4Addr::UNSPECIFIED)
        });
        Self {
            key: key.to_string(),
            job: job.map(str::to_string),
            from: named(from),
        }
    }

    /// A new token for `service`, admitted on one connection for `valid_for` (at most [`MAX_VALID_FOR`]).
    pub fn token(&self, service: Service, valid_for: Duration) -> String {
        self.token_until(service, SystemTime::now() + valid_for.min(MAX_VALID_FOR))
    }

    /// A new token for `service`, admitted on one connection until `expires` (a server refuses one that
    /// expires more than [`MAX_VALID_FOR`] ahead of its clock).
    pub fn token_until(&self, service: Service, expires: SystemTime) -> String {
        self.make(service, &unix_seconds(expires).to_string())
    }

    /// A new token for one of Ballista's gRPC channels: admitted on that channel's connections for as long
    /// as they last (the module's documentation says why it has no expiry).
    pub fn channel_token(&self) -> String {
        self.make(Service::Grpc, FOR_THE_CONNECTION)
    }

    /// The value of an `authorization` header for one REST call (a [`Service::Api`] token valid for
    /// [`DEFAULT_VALID_FOR`]).
    pub fn bearer(&self) -> String {
        format!("Bearer {}", self.token(Service::Api, DEFAULT_VALID_FOR))
    }

    fn make(&self, service: Service, expires: &str) -> String {
        let nonce = &JobSecret::generate().to_hex()[..32];
        let fields = format!("{}/{}/{expires}/{nonce}", self.from, service.name());
        let proof = hmac_hex(&self.key, &format!("{DOMAIN}\n{fields}"));
        match &self.job {
            None => format!("{PREFIX}{fields}/{proof}"),
            Some(job) => format!("{PREFIX}{fields}/{proof}/{job}"),
        }
    }
}

/// Whom a request presenting `presented`, on a connection from `peer`, for `service`, speaks for at `now`
/// (seconds since 1970): a token of the fleet's secret `secret`, or of a job's key derived from it, made for
/// `peer`'s address and `service`, not expired.
pub(super) fn verify(
    secret: &str,
    presented: Presented<'_>,
    peer: IpAddr,
    service: Service,
    now: u64,
) -> Result<Admitted, TokenRefusal> {
    let token = presented.token().ok_or(TokenRefusal::Missing)?;
    let fields = token.strip_prefix(PREFIX).ok_or(TokenRefusal::OtherVersion)?;
    let parts: Vec<&str> = fields.split('/').collect();
    let (fields, job) = match parts.len() {
        5 => (&parts[..], None),
        6 => (&parts[..5], Some(parts[5])),
        _ => return Err(TokenRefusal::Forged),
    };
    let &[address, named_service, expires, nonce, presented_proof] = fields else {
        return Err(TokenRefusal::Forged);
    };
    let (key, principal) = match job {
        None => (secret.to_string(), Principal::Member),
        Some(job) => (job_key(secret, job), Principal::Job(job.to_string())),
    };
    let proven = format!("{DOMAIN}\n{address}/{named_service}/{expires}/{nonce}");
    if !equal_in_constant_time(presented_proof.as_bytes(), hmac_hex(&key, &proven).as_bytes()) {
        return Err(TokenRefusal::Forged);
    }
    if address != named(peer) {
        return Err(TokenRefusal::Elsewhere {
            named: address.to_string(),
            peer,
        });
    }
    let named_service = Service::parse(named_service).ok_or(TokenRefusal::Forged)?;
    if named_service != service {
        return Err(TokenRefusal::OtherService {
            named: named_service,
            asked: service,
        });
    }
    let once = match expires {
        FOR_THE_CONNECTION if service == Service::Grpc => None,
        expires => Some(SingleUse {
            nonce: nonce.to_string(),
            until: admitted_until(expires, now)?,
        }),
    };
    Ok(Admitted { principal, once })
}

/// Until when (seconds since 1970) a token that `expires` is admitted at `now`: its expiry plus the clock
/// skew, if that is still ahead and not beyond the longest validity.
fn admitted_until(expires: &str, now: u64) -> Result<u64, TokenRefusal> {
    let expires: u64 = expires.parse().map_err(|_| TokenRefusal::Forged)?;
    let skew = CLOCK_SKEW.as_secs();
    if expires > now + MAX_VALID_FOR.as_secs() + skew {
        return Err(TokenRefusal::TooLong);
    }
    match expires + skew >= now {
        true => Ok(expires + skew),
        false => Err(TokenRefusal::Expired(now - expires)),
    }
}

/// `time` in whole seconds since 1970.
pub(super) fn unix_seconds(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).map_or(0, |since| since.as_secs())
}

/// How a token names `address`: any loopback address as one, IPv4-mapped IPv6 as IPv4.
fn named(address: IpAddr) -> String {
    let address = address.to_canonical();
    match address.is_loopback() {
        true => LOOPBACK.to_string(),
        false => address.to_string(),
    }
}

/// The `host:port` of a URL or URI (`http://host:port/path` → `host:port`), for [`TokenMaker`].
pub(crate) fn authority(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    rest.split('/').next().unwrap_or(rest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ballista::ClusterSecret;

    fn secret() -> ClusterSecret {
        ClusterSecret::parse("0123456789abcdef0123456789abcdef").unwrap()
    }

    fn agent(token: &str) -> Presented<'_> {
        Presented {
            authorization: None,
            user_agent: Some(token),
        }
    }

    /// A connection from `peer`.
    fn from(peer: [u8; 4]) -> IpAddr {
        IpAddr::from(peer)
    }

    const LOOPBACK_2: [u8; 4] = [127, 0, 0, 2];

    #[test]
    fn a_token_is_admitted_from_its_address_only_and_only_with_its_proof() {
        let secret = secret();
        let token = secret.channel_token("127.0.0.1:9");
        let admitted = secret.check(agent(&token), from(LOOPBACK_2), Service::Grpc);
        assert_eq!(
            admitted.map(|a| a.once),
            Ok(None),
            "all of loopback is this machine; a channel's token lasts its connections"
        );
        let check = |presented, at| secret.check(presented, at, Service::Grpc);
        assert_eq!(
            check(Presented::default(), from(LOOPBACK_2)),
            Err(TokenRefusal::Missing)
        );
        let bare = format!("Bearer {}", secret.expose());
        assert_eq!(
            check(Presented::bearer(&bare), from(LOOPBACK_2)),
            Err(TokenRefusal::Missing)
        );
        let other = ClusterSecret::parse("fedcba9876543210fedcba9876543210").unwrap();
        let forged = other.check(agent(&token), from(LOOPBACK_2), Service::Grpc);
        assert_eq!(forged, Err(TokenRefusal::Forged));
        let moved = token.replace("/loopback/", "/192.0.2.7/");
        assert_eq!(check(agent(&moved), from([192, 0, 2, 7])), Err(TokenRefusal::Forged));
        assert!(matches!(
            check(agent(&token), from([192, 0, 2, 7])),
            Err(TokenRefusal::Elsewhere { .. })
        ));
        assert_ne!(
            secret.channel_token("127.0.0.1:9"),
            token,
            "each token has a fresh nonce"
        );
        let older = token.replace("hearth-token/2/", "hearth-token/1/");
        assert_eq!(check(agent(&older), from(LOOPBACK_2)), Err(TokenRefusal::OtherVersion));
    }

    #[test]
    fn a_token_is_for_its_service_and_until_it_expires() {
        let secret = secret();
        let token = secret.token("127.0.0.1:9", Service::Api, Duration::from_secs(60));
        let bearer = format!("Bearer {token}");
        let now = unix_seconds(SystemTime::now());
        let check = |service, at| {
            verify(
                secret.expose(),
                Presented::bearer(&bearer),
                from(LOOPBACK_2),
                service,
                at,
            )
        };
        let SingleUse { nonce, until } = check(Service::Api, now).unwrap().once.unwrap();
        assert!(token.contains(&nonce));
        let expected = now + 60..=now + 61 + CLOCK_SKEW.as_secs();
        assert!(expected.contains(&until), "{until} at {now}");
        assert!(check(Service::Api, until).is_ok(), "within the clock skew");
        assert!(matches!(check(Service::Api, until + 1), Err(TokenRefusal::Expired(_))));
        let other_service = TokenRefusal::OtherService {
            named: Service::Api,
            asked: Service::Grpc,
        };
        assert_eq!(check(Service::Grpc, now), Err(other_service));
        let channel = secret.channel_token("127.0.0.1:9");
        let as_api = secret.check(agent(&channel), from(LOOPBACK_2), Service::Api);
        assert!(matches!(as_api, Err(TokenRefusal::OtherService { .. })), "{as_api:?}");
        let capped = secret.token("127.0.0.1:9", Service::Api, Duration::from_secs(10 * 3600));
        let capped = format!("Bearer {capped}");
        let admitted = secret.check(Presented::bearer(&capped), from(LOOPBACK_2), Service::Api);
        let until = admitted.unwrap().once.unwrap().until;
        let longest = now + 1 + (MAX_VALID_FOR + CLOCK_SKEW).as_secs();
        assert!(until <= longest, "validity is capped");
        let stretched = bearer.replace(&format!("/api/{}/", until_of(&token)), "/api/99999999999/");
        let stretched = secret.check(Presented::bearer(&stretched), from(LOOPBACK_2), Service::Api);
        assert_eq!(stretched, Err(TokenRefusal::Forged), "the proof covers the expiry");
    }

    /// The EXPIRES field of `token`.
    fn until_of(token: &str) -> &str {
        token.split('/').nth(4).unwrap()
    }

    #[test]
    fn a_jobs_token_speaks_for_that_job_only() {
        let secret = secret();
        let job = secret.for_job("driver-1");
        assert_ne!(job.expose(), secret.expose());
        let token = job.channel_token("127.0.0.1:9");
        let check = |token| secret.check(agent(token), from(LOOPBACK_2), Service::Grpc);
        assert_eq!(
            check(&token).map(|a| a.principal),
            Ok(Principal::Job("driver-1".into()))
        );
        let renamed = token.replace("/driver-1", "/driver-2");
        assert_eq!(check(&renamed), Err(TokenRefusal::Forged), "another job's name");
        let unscoped = token.trim_end_matches("/driver-1");
        assert_eq!(check(unscoped), Err(TokenRefusal::Forged), "a member's");
    }

    #[test]
    fn urls_give_their_authority() {
        assert_eq!(authority("http://10.0.0.5:50050/hearth/jobs"), "10.0.0.5:50050");
        assert_eq!(authority("10.0.0.5:50050"), "10.0.0.5:50050");
        assert_eq!(authority("https://127.0.0.1:1/"), "127.0.0.1:1");
    }
}
