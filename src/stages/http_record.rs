//! `http_record`: the upstream answer as /api/http's JSON record (docs/routes/http.md; needs `fetched`).
//!
//! Header names lower-cased, Set-Cookie and hop-by-hop headers removed, repeated headers
//! joined with ", "; a textual UTF-8 body is returned as text, anything else as base64.
//! Parameters: none.

use async_trait::async_trait;
use base64::Engine;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::sync::Arc;

use crate::net::request_headers::HEADER_ALLOWLIST;
use crate::net::{FetchLimits, Fetched};
use crate::pipeline::{params, Artefact, BuildCtx, Exchange, Flow, Phase, Stage, StageFactory};

pub const FACTORY: StageFactory = StageFactory {
    name: "http_record",
    phase: Phase::Work,
    payment: false,
    needs: &[
        Artefact::of::<Fetched>("fetched"),
        Artefact::of::<FetchLimits>("fetch_limits"),
    ],
    gives: &[],
    doc: "the upstream status, headers and body as a JSON record",
    errors: &[],
    build,
};

const HOP_BY_HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "proxy-connection",
    "te",
    "trailer",
    "trailers",
    "transfer-encoding",
    "upgrade",
    "set-cookie",
    "set-cookie2",
];

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {}

struct HttpRecord;

fn build(_ctx: &BuildCtx<'_>, p: Value) -> Result<Arc<dyn Stage>, String> {
    let _: Params = params(p)?;
    Ok(Arc::new(HttpRecord))
}

/// How the record was made, for the caller: the route's limits (as its fetch applies them,
/// null when it has none), the request-header allowlist and the rules of the record.
fn methodology(limits: Option<&FetchLimits>, max_request_bytes: usize) -> Value {
    json!({
        "maxResponseBytes": limits.map(|l| l.max_bytes),
        "maxRequestBytes": max_request_bytes,
        "timeoutMs": limits.map(|l| l.timeout_ms),
        "maxRedirects": limits.map(|l| l.max_redirects),
        "schemes": ["http", "https"],
        "blocked": "private, loopback, link-local, CGNAT, multicast, reserved and cloud-metadata addresses, checked on every DNS answer and redirect hop",
        "cookies": "never sent; Set-Cookie removed from the reply",
        "requestHeaders": format!(
            "only these names: {}; on a redirect to another origin only {} are kept",
            HEADER_ALLOWLIST.join(", "),
            crate::net::client::CROSS_ORIGIN_HEADERS.join(", ")
        ),
        "responseHeaders": "lower-case names; Set-Cookie and hop-by-hop headers removed; repeated headers joined with \", \"",
        "bodyEncoding": "text when the content is textual UTF-8, else base64",
        "truncation": "a body streamed past the cap is cut there (truncated: true); a declared Content-Length over the cap is refused with 413",
        "billing": "charged whenever the upstream answered, whatever its status; transport failures (502/504) and refusals are not charged",
    })
}

/// True for content types whose bytes are meant to be read as text.
pub fn is_textual(content_type: &str) -> bool {
    let ct = content_type.to_ascii_lowercase();
    let essence = ct.split(';').next().unwrap_or("").trim();
    essence.starts_with("text/")
        || essence.ends_with("+json")
        || essence.ends_with("+xml")
        || matches!(
            essence,
            "application/json"
                | "application/xml"
                | "application/javascript"
                | "application/x-javascript"
                | "application/ecmascript"
                | "application/x-www-form-urlencoded"
                | "application/graphql"
                | "image/svg+xml"
                | ""
        )
}

pub fn record_headers(headers: &http::HeaderMap) -> Map<String, Value> {
    let mut out: Map<String, Value> = Map::new();
    for (name, value) in headers {
        let n = name.as_str().to_ascii_lowercase();
        if HOP_BY_HOP.contains(&n.as_str()) {
            continue;
        }
        let v = String::from_utf8_lossy(value.as_bytes()).into_owned();
        match out.get_mut(&n) {
            Some(Value::String(prev)) => {
                prev.push_str(", ");
                prev.push_str(&v);
            }
            _ => {
                out.insert(n, Value::String(v));
            }
        }
    }
    out
}

#[async_trait]
impl Stage for HttpRecord {
    async fn run(&self, ex: &mut Exchange) -> Flow {
        let Some(f) = ex.slots.take::<Fetched>() else {
            return ex.fail_internal("nothing fetched");
        };
        let r = &f.response;
        let content_type = r.content_type().unwrap_or("").to_string();
        let (body, encoding) = match std::str::from_utf8(&r.body) {
            Ok(s) if is_textual(&content_type) => (s.to_string(), "text"),
            // A cut may split a multi-byte character: keep the valid prefix as text.
            Err(e) if is_textual(&content_type) && r.truncated && e.error_len().is_none() => (
                String::from_utf8_lossy(&r.body[..e.valid_up_to()]).into_owned(),
                "text",
            ),
            _ => (
                base64::engine::general_purpose::STANDARD.encode(&r.body),
                "base64",
            ),
        };
        let record = json!({
            "ok": r.status.is_success(),
            "status": r.status.as_u16(),
            "headers": record_headers(&r.headers),
            "body": body,
            "bodyEncoding": encoding,
            "contentType": content_type,
            "elapsedMs": ex.elapsed_ms(),
            "requestedUrl": f.requested.as_str(),
            "finalUrl": r.final_url.as_str(),
            "method": f.method.as_str(),
            "truncated": r.truncated,
            "bytesRead": r.bytes_read,
            "redirects": r.redirects.iter().map(|u| u.as_str()).collect::<Vec<_>>(),
            "methodology": methodology(ex.slots.get::<FetchLimits>(), ex.route.max_request_bytes),
        });
        ex.respond_ok(record)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_cleaned_and_joined() {
        let mut h = http::HeaderMap::new();
        h.append("Set-Cookie", "a=1".parse().unwrap());
        h.append("Connection", "keep-alive".parse().unwrap());
        h.append("Transfer-Encoding", "chunked".parse().unwrap());
        h.append("Vary", "Accept".parse().unwrap());
        h.append("Vary", "Origin".parse().unwrap());
        h.append("Content-Type", "text/plain".parse().unwrap());
        let m = record_headers(&h);
        assert!(!m.contains_key("set-cookie"));
        assert!(!m.contains_key("connection"));
        assert!(!m.contains_key("transfer-encoding"));
        assert_eq!(m["vary"], "Accept, Origin");
        assert_eq!(m["content-type"], "text/plain");
    }

    #[test]
    fn textual_types() {
        assert!(is_textual("text/html; charset=utf-8"));
        assert!(is_textual("application/ld+json"));
        assert!(is_textual("application/json"));
        assert!(!is_textual("image/png"));
        assert!(!is_textual("application/octet-stream"));
    }
}
