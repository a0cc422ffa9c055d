//! What hearth's fronts need of gRPC to answer a call themselves or to rewrite one before passing it on:
//! status codes, an error answer, and request bodies of one uncompressed message.

use axum::extract::Request;
use axum::http::header;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use bytes::{BufMut, Bytes, BytesMut};
use hearth_exec::codec::FLEET_MESSAGE_BYTES;
use prost::Message;

/// gRPC's status INVALID_ARGUMENT.
pub(crate) const INVALID_ARGUMENT: u8 = 3;
/// gRPC's status PERMISSION_DENIED.
pub(crate) const PERMISSION_DENIED: u8 = 7;
/// gRPC's status RESOURCE_EXHAUSTED.
pub(crate) const RESOURCE_EXHAUSTED: u8 = 8;
/// gRPC's status UNAVAILABLE.
pub(crate) const UNAVAILABLE: u8 = 14;
/// gRPC's status UNAUTHENTICATED.
pub(crate) const UNAUTHENTICATED: u8 = 16;

/// A gRPC message's prefix: a compression flag and the message's length.
pub(crate) const FRAME_PREFIX: usize = 5;

/// A gRPC error with `status` (tonic's `Code` as a number) and `message`: trailers-only headers on an empty
/// 200 response, as gRPC carries an error that comes before any answer.
pub(crate) fn grpc_error(status: u8, message: &str) -> Response {
    // gRPC percent-encodes its message (anything outside printable ASCII, and `%` itself).
    let encoded: String = (message.bytes())
        .map(|b| match b {
            b' '..=b'~' if b != b'%' => char::from(b).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    let message = header::HeaderValue::from_str(&encoded)
        .unwrap_or_else(|_| header::HeaderValue::from_static("refused (the reason is not printable)"));
    let mut response = axum::body::Body::empty().into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/grpc"),
    );
    headers.insert("grpc-status", header::HeaderValue::from(u16::from(status)));
    headers.insert("grpc-message", message);
    response
}

/// The one uncompressed message in a gRPC request body, if it is one.
pub(crate) fn message(body: &Bytes) -> Option<Bytes> {
    let (prefix, rest) = body.split_at_checked(FRAME_PREFIX)?;
    let length = u32::from_be_bytes([prefix[1], prefix[2], prefix[3], prefix[4]]) as usize;
    (prefix[0] == 0 && rest.len() == length).then(|| body.slice(FRAME_PREFIX..))
}

/// `message` as a gRPC request body.
pub(crate) fn framed(message: &impl Message) -> Bytes {
    let length = message.encoded_len();
    let mut body = BytesMut::with_capacity(FRAME_PREFIX + length);
    body.put_u8(0);
    body.put_u32(u32::try_from(length).unwrap_or(u32::MAX));
    message.encode(&mut body).expect("the buffer holds the whole message");
    body.freeze()
}

/// The head and whole body of `request`, or the refusal of a body larger than the fleet's messages
/// ([`FLEET_MESSAGE_BYTES`]); `what` names the call in that refusal.
pub(crate) async fn read_whole(request: Request, what: &str) -> Result<(Parts, Bytes), Response> {
    let (head, body) = request.into_parts();
    let body = axum::body::to_bytes(body, FLEET_MESSAGE_BYTES + FRAME_PREFIX)
        .await
        .map_err(|_| grpc_error(RESOURCE_EXHAUSTED, &format!("{what} larger than the fleet's messages")))?;
    Ok((head, body))
}

/// `head` with `body` in place of the body it came with.
pub(crate) fn with_body(mut head: Parts, body: Bytes) -> Request {
    head.headers.remove(header::CONTENT_LENGTH);
    Request::from_parts(head, axum::body::Body::from(body))
}

#[cfg(test)]
mod tests {
    use ballista_core::serde::protobuf::GetJobStatusParams;

    use super::*;

    #[test]
    fn a_framed_message_reads_back_and_other_bodies_are_not_one_message() {
        let body = framed(&GetJobStatusParams {
            job_id: "a1b2c3d".into(),
        });
        assert_eq!(
            GetJobStatusParams::decode(message(&body).unwrap()).unwrap().job_id,
            "a1b2c3d"
        );
        for other in [&b""[..], b"\x01\0\0\0\0", b"\0\0\0\0\x09abc"] {
            assert!(message(&Bytes::copy_from_slice(other)).is_none(), "{other:?}");
        }
    }
}
