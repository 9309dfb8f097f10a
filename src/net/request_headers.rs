//! The request headers a caller may send upstream through /api/http, by exact name, and the
//! check that turns the caller's JSON object into outbound headers.

use http::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

/// Request headers a caller may set on /api/http (docs/decisions.md#outbound: no Cookie, no hop-by-hop, no
/// Host), by exact name: nothing else passes, `x-*` names included. Left out on purpose: the
/// headers upstreams believe about the client or the path a proxy took (`X-Forwarded-*`,
/// `X-Real-IP`, `X-Client-IP`, `X-Originating-IP`, `X-Cluster-Client-IP`, `Forwarded`, `Via`,
/// `X-Original-URL`, `X-Rewrite-URL`, `X-HTTP-Method-Override`, …), which spoof the client or
/// bypass an upstream's access rules. The credential-style names are there so a caller can
/// reach keyed APIs; none of them follows a redirect to another origin (see net::client).
/// Documented in docs/http.md and in every answer's `methodology.requestHeaders`.
pub const HEADER_ALLOWLIST: &[&str] = &[
    // content negotiation and conditional requests
    "accept",
    "accept-language",
    "cache-control",
    "content-language",
    "content-type",
    "if-match",
    "if-modified-since",
    "if-none-match",
    "if-range",
    "if-unmodified-since",
    "pragma",
    "range",
    // what the caller says about itself
    "origin",
    "referer",
    "user-agent",
    "x-requested-with",
    "x-request-id",
    "idempotency-key",
    // credentials of common APIs
    "authorization",
    "x-api-key",
    "x-auth-token",
    "x-csrf-token",
    "x-goog-api-key",
    "x-amz-date",
    "x-amz-content-sha256",
    "x-amz-security-token",
];
pub const MAX_HEADERS: usize = 32;
pub const MAX_HEADER_VALUE: usize = 4096;

/// Checks and converts the caller's outbound headers (a JSON object of strings).
pub fn outbound_headers(value: Option<&Value>) -> Result<HeaderMap, String> {
    let mut out = HeaderMap::new();
    let Some(value) = value else { return Ok(out) };
    let Value::Object(map) = value else {
        return Err("headers must be a JSON object of name → string value".into());
    };
    if map.len() > MAX_HEADERS {
        return Err(format!("at most {MAX_HEADERS} headers"));
    }
    for (name, v) in map {
        let lname = name.to_ascii_lowercase();
        if !HEADER_ALLOWLIST.contains(&lname.as_str()) {
            return Err(format!(
                "header `{name}` is not allowed; allowed: {}",
                HEADER_ALLOWLIST.join(", ")
            ));
        }
        let Value::String(s) = v else {
            return Err(format!("header `{name}` must have a string value"));
        };
        if s.len() > MAX_HEADER_VALUE {
            return Err(format!(
                "header `{name}` is longer than {MAX_HEADER_VALUE} bytes"
            ));
        }
        let hn = HeaderName::from_bytes(lname.as_bytes())
            .map_err(|_| format!("`{name}` is not a valid header name"))?;
        let hv = HeaderValue::from_str(s)
            .map_err(|_| format!("header `{name}` has characters not allowed in a header value"))?;
        out.insert(hn, hv);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::outbound_headers;
    use serde_json::json;

    #[test]
    fn header_allowlist() {
        assert!(outbound_headers(Some(&json!({"Accept": "text/html", "X-Api-Key": "k"}))).is_ok());
        assert!(outbound_headers(Some(&json!({"X-Goog-Api-Key": "k", "If-Range": "x"}))).is_ok());
        for bad in [
            // they speak for the client or for a proxy: spoofing and access-rule bypasses
            "x-client-ip",
            "x-originating-ip",
            "x-cluster-client-ip",
            "x-remote-ip",
            "x-remote-addr",
            "x-true-client-ip",
            "true-client-ip",
            "x-original-url",
            "x-rewrite-url",
            "x-http-method-override",
            "x-forwarded-host",
            "x-real-ip",
            "forwarded",
            "via",
            "x-anything-else",
            "cookie",
            "Host",
            "connection",
            "transfer-encoding",
            "x-forwarded-for",
            "proxy-authorization",
            "te",
            "upgrade",
        ] {
            assert!(
                outbound_headers(Some(&json!({ bad: "v" }))).is_err(),
                "{bad}"
            );
        }
        assert!(outbound_headers(Some(&json!({"accept": 1}))).is_err());
        assert!(outbound_headers(Some(&json!({"accept": "a\r\nb"}))).is_err());
        assert!(outbound_headers(Some(&json!(["accept"]))).is_err());
        let many: serde_json::Map<String, serde_json::Value> =
            (0..33).map(|i| (format!("x-h{i}"), json!("v"))).collect();
        let err = outbound_headers(Some(&serde_json::Value::Object(many))).unwrap_err();
        assert!(err.contains("at most"), "{err}");
    }
}
