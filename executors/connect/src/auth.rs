//! The bearer token every RPC must carry: Spark Connect's `sc://host:port/;token=…` (or the client's
//! `SPARK_CONNECT_AUTHENTICATE_TOKEN`), sent as gRPC's `authorization: Bearer …` and compared in constant time.

use subtle::ConstantTimeEq;
use tonic::Status;
use tonic::codegen::http::HeaderMap;

/// The token a server asks of its clients, or none (a loopback server started without one).
///
/// ```
/// use hearth_connect::Token;
/// use tonic::codegen::http::HeaderMap;
///
/// let token = Token::new(Some("s3cret".into()));
/// let mut headers = HeaderMap::new();
/// assert!(token.check(&headers).is_err());
/// headers.insert("authorization", "Bearer s3cret".parse().unwrap());
/// assert!(token.check(&headers).is_ok());
/// assert!(Token::new(None).check(&HeaderMap::new()).is_ok());
/// ```
#[derive(Debug, Clone)]
pub struct Token {
    expected: Option<String>,
}

impl Token {
    /// A check for `expected`, or one that lets every call through when `None`.
    pub fn new(expected: Option<String>) -> Self {
        Self { expected }
    }

    /// Whether a token is asked.
    pub fn is_required(&self) -> bool {
        self.expected.is_some()
    }

    /// Ok when the call's `authorization` header carries the token (or none is asked); gRPC's
    /// UNAUTHENTICATED otherwise, which PySpark raises as `SparkConnectGrpcException`.
    pub fn check(&self, headers: &HeaderMap) -> Result<(), Status> {
        let Some(expected) = &self.expected else {
            return Ok(());
        };
        let given = headers.get("authorization").and_then(|value| value.to_str().ok());
        let Some(given) = given else {
            return Err(Status::unauthenticated(
                "this hearth Spark Connect server asks for a token: connect with sc://HOST:PORT/;token=TOKEN \
                 (or set SPARK_CONNECT_AUTHENTICATE_TOKEN)",
            ));
        };
        let bearer = given.strip_prefix("Bearer ").unwrap_or_default();
        if bool::from(bearer.as_bytes().ct_eq(expected.as_bytes())) {
            Ok(())
        } else {
            Err(Status::unauthenticated(
                "the token given is not this hearth Spark Connect server's",
            ))
        }
    }
}
