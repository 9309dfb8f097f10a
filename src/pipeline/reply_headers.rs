//! The headers every answer carries, whoever builds it: CORS on every answer (so browsers can
//! pay: the challenge and receipt headers are exposed), cache control for 402s and client
//! errors, and the CORS preflight's 204. Kept beside `Reply` so the payment gate can finish its
//! ready-made 402s without reaching up into the server.

use http::{HeaderMap, HeaderValue, StatusCode};

use super::Reply;

pub const EXPOSE_HEADERS: &str =
    "PAYMENT-REQUIRED, PAYMENT-RESPONSE, X-Request-Id, Retry-After, Server-Timing";
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

/// The headers every answer carries (CORS, no-store on 402s and client errors), added to a
/// reply's own: done once for a ready-made answer (the gate's unpaid 402), per request for the
/// others (`server::respond::to_response`).
pub fn common_headers(status: StatusCode, headers: &mut HeaderMap) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_not_stored_unless_the_reply_says_how() {
        let mut h = HeaderMap::new();
        common_headers(StatusCode::BAD_REQUEST, &mut h);
        assert_eq!(h["cache-control"], "no-store");
        assert_eq!(h["access-control-allow-origin"], "*");
        let mut h = HeaderMap::new();
        h.insert("cache-control", HeaderValue::from_static("max-age=5"));
        common_headers(StatusCode::TOO_MANY_REQUESTS, &mut h);
        assert_eq!(h["cache-control"], "max-age=5");
        common_headers(StatusCode::PAYMENT_REQUIRED, &mut h);
        assert_eq!(h["cache-control"], "no-store", "a 402 is never stored");
        let mut h = HeaderMap::new();
        common_headers(StatusCode::OK, &mut h);
        assert!(!h.contains_key("cache-control"));
    }
}
