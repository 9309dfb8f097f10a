//! Turning a Reply into the warp response: the common headers (`pipeline::reply_headers`) and
//! the request id.

use http::{HeaderValue, StatusCode};
use warp::reply::Response;

use crate::pipeline::reply_headers::common_headers;
use crate::pipeline::Reply;

pub fn to_response(reply: Reply, request_id: &str) -> Response {
    let Reply {
        status,
        mut headers,
        body,
    } = reply;
    common_headers(status, &mut headers);
    ready_response(status, headers, body, request_id)
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
