//! Turning a Reply into the HTTP response: request id, CORS on every answer (so browsers can
//! pay: the challenge and receipt headers are exposed), cache control for 402s.

use http::{HeaderValue, StatusCode};
use warp::reply::Response;

use crate::pipeline::Reply;

pub const EXPOSE_HEADERS: &str = "PAYMENT-REQUIRED, PAYMENT-RESPONSE, X-Request-Id, Retry-After";
pub const ALLOW_HEADERS: &str = "PAYMENT-SIGNATURE, Content-Type, Accept, X-Request-Id";
pub const ALLOW_METHODS: &str = "GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS";

/// The 204 answer to a CORS preflight (docs/decisions.md#cors).
pub fn cors_preflight() -> Reply {
    let mut r = Reply {
        status: StatusCode::NO_CONTENT,
        headers: Default::default(),
        body: Default::default(),
    };
    r.headers.insert(
        "access-control-allow-methods",
        HeaderValue::from_static(ALLOW_METHODS),
    );
    r.headers.insert(
        "access-control-allow-headers",
        HeaderValue::from_static(ALLOW_HEADERS),
    );
    r.headers
        .insert("access-control-max-age", HeaderValue::from_static("600"));
    r
}

pub fn to_response(reply: Reply, request_id: &str) -> Response {
    let Reply {
        status,
        mut headers,
        body,
    } = reply;
    common_headers(status, &mut headers);
    ready_response(status, headers, body, request_id)
}

/// The headers every answer carries (CORS, no-store on 402s and client errors), added to a
/// reply's own: done once for a ready-made answer (the gate's unpaid 402), per request for the
/// others.
pub fn common_headers(status: StatusCode, headers: &mut http::HeaderMap) {
    headers.insert("access-control-allow-origin", HeaderValue::from_static("*"));
    headers.insert(
        "access-control-expose-headers",
        HeaderValue::from_static(EXPOSE_HEADERS),
    );
    if status == StatusCode::PAYMENT_REQUIRED
        || !headers.contains_key(http::header::CACHE_CONTROL) && status.is_client_error()
    {
        headers.insert(
            http::header::CACHE_CONTROL,
            HeaderValue::from_static("no-store"),
        );
    }
}

/// The response of a reply whose common headers are already in `headers`: only the request id
/// is added.
pub fn ready_response(
    status: StatusCode,
    mut headers: http::HeaderMap,
    body: bytes::Bytes,
    request_id: &str,
) -> Response {
    if let Ok(v) = HeaderValue::from_str(request_id) {
        headers.insert("x-request-id", v);
    }
    let mut resp = Response::new(body.into());
    *resp.status_mut() = status;
    *resp.headers_mut() = headers;
    resp
}
