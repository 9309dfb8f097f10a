//! `fetch`: one guarded outbound request to the vetted target (needs `target`).
//!
//! Every DNS answer and redirect hop is judged by the guard; no cookies, no environment
//! proxies, a byte cap while streaming and one overall deadline. Cap policy (docs/decisions.md#billing): a
//! declared Content-Length over the cap is 413 (not charged); a body streamed past the cap is
//! cut and marked truncated (`over_cap: truncate`), or refused with 413 (`over_cap: reject`).
//!
//! Parameters:
//! - `max_bytes`, `timeout_ms`, `max_redirects`: the route's caps.
//! - `over_cap`: `truncate` (default) or `reject`.
//! - `upstream_status`: `report` (any status continues, /api/http) or `fail` (non-2xx → 502).
//! - `method_param`, `headers_param`, `body_param`: input parameters carrying the caller's
//!   method, outbound headers (allowlisted names only) and body (sent when the upstream method
//!   is POST, PUT or PATCH, whatever the method of the call to us; a JSON value is stringified
//!   and sent as application/json).
//! - `accept`: the Accept header sent when the caller gives none.
//! - `skip_if_param`: when the input carries this parameter, nothing is fetched and the stage
//!   provides no `fetched` artefact (/api/extract with the caller's own `html`).

use async_trait::async_trait;
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, StatusCode};
use serde::Deserialize;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

use crate::net::request_headers::outbound_headers;
use crate::net::{FetchLimits, FetchRequest, Fetched, GuardedClient, OverCap};
use crate::pipeline::{
    params, Artefact, BuildCtx, Exchange, Flow, Phase, Reply, Stage, StageFactory,
};

pub const FACTORY: StageFactory = StageFactory {
    name: "fetch",
    phase: Phase::Work,
    payment: false,
    needs: &[Artefact::of::<url::Url>("target")],
    gives: &[
        Artefact::of::<Fetched>("fetched"),
        Artefact::of::<FetchLimits>("fetch_limits"),
    ],
    doc: "guarded outbound HTTP request: DNS and redirects re-checked, byte cap, deadline, no cookies",
    errors: &[
        (400, "Bad method or outbound headers, or a redirect/DNS answer to a refused target"),
        (413, "The upstream body is larger than the cap"),
        (502, "Upstream unreachable, failing, or too many redirects"),
        (504, "The upstream did not answer in time"),
    ],
    build,
};

#[derive(Deserialize, Clone, Copy, PartialEq)]
#[serde(rename_all = "snake_case")]
enum CapMode {
    Truncate,
    Reject,
}

#[derive(Deserialize, Clone, Copy, PartialEq)]
#[serde(rename_all = "snake_case")]
enum StatusMode {
    Report,
    Fail,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    max_bytes: usize,
    timeout_ms: u64,
    #[serde(default = "default_redirects")]
    max_redirects: u32,
    #[serde(default = "default_cap_mode")]
    over_cap: CapMode,
    #[serde(default = "default_status_mode")]
    upstream_status: StatusMode,
    #[serde(default)]
    method_param: Option<String>,
    #[serde(default)]
    headers_param: Option<String>,
    #[serde(default)]
    body_param: Option<String>,
    #[serde(default)]
    accept: Option<String>,
    #[serde(default)]
    skip_if_param: Option<String>,
}

fn default_redirects() -> u32 {
    3
}
fn default_cap_mode() -> CapMode {
    CapMode::Truncate
}
fn default_status_mode() -> StatusMode {
    StatusMode::Fail
}

struct Fetch {
    p: Params,
    client: Arc<GuardedClient>,
}

fn build(ctx: &BuildCtx<'_>, p: Value) -> Result<Arc<dyn Stage>, String> {
    let p: Params = params(p)?;
    for name in [
        &p.method_param,
        &p.headers_param,
        &p.body_param,
        &p.skip_if_param,
    ]
    .into_iter()
    .flatten()
    {
        if ctx.route.param(name).is_none() {
            return Err(format!("the route has no input parameter `{name}`"));
        }
    }
    if p.max_bytes == 0 || p.timeout_ms == 0 {
        return Err("max_bytes and timeout_ms must be positive".into());
    }
    if p.max_redirects > 20 {
        return Err("max_redirects above 20 is not allowed".into());
    }
    Ok(Arc::new(Fetch {
        p,
        client: ctx.services.need::<GuardedClient>()?,
    }))
}

impl Fetch {
    fn request_parts(
        &self,
        input: &serde_json::Map<String, Value>,
    ) -> Result<(Method, HeaderMap, Option<Bytes>), (&'static str, String)> {
        let method = match self
            .p
            .method_param
            .as_ref()
            .and_then(|n| input.get(n))
            .and_then(Value::as_str)
        {
            None => Method::GET,
            Some(m) => match m.to_ascii_uppercase().as_str() {
                "GET" => Method::GET,
                "POST" => Method::POST,
                "HEAD" => Method::HEAD,
                "PUT" => Method::PUT,
                "PATCH" => Method::PATCH,
                "DELETE" => Method::DELETE,
                other => {
                    return Err((
                        "invalid_parameter",
                        format!("method `{other}` is not supported"),
                    ))
                }
            },
        };
        let mut headers =
            outbound_headers(self.p.headers_param.as_ref().and_then(|n| input.get(n)))
                .map_err(|m| ("bad_headers", m))?;
        let sends_body = matches!(method, Method::POST | Method::PUT | Method::PATCH);
        let body = match self.p.body_param.as_ref().and_then(|n| input.get(n)) {
            Some(v) if sends_body => Some(match v {
                Value::String(s) => Bytes::from(s.clone()),
                other => {
                    headers
                        .entry(http::header::CONTENT_TYPE)
                        .or_insert(HeaderValue::from_static("application/json"));
                    Bytes::from(other.to_string())
                }
            }),
            _ => None,
        };
        if !headers.contains_key(http::header::ACCEPT) {
            let accept = self.p.accept.as_deref().unwrap_or(
                "text/html,application/xhtml+xml,text/markdown;q=0.9,text/plain;q=0.9,application/json;q=0.9,*/*;q=0.5",
            );
            if let Ok(v) = HeaderValue::from_str(accept) {
                headers.insert(http::header::ACCEPT, v);
            }
        }
        Ok((method, headers, body))
    }
}

#[async_trait]
impl Stage for Fetch {
    fn billing_cases(&self) -> Vec<crate::pipeline::BillingCase> {
        use crate::pipeline::BillingCase;
        let upstream = match self.p.upstream_status {
            StatusMode::Report => BillingCase {
                case: "upstream_error_status",
                status: 200,
                what: "an upstream answer with an error status (a 404, a 500) is delivered in a 200 record".into(),
            },
            StatusMode::Fail => BillingCase {
                case: "upstream_error_status",
                status: 502,
                what: "an upstream answer with an error status (a 404, a 500) is a 502 upstream_status error".into(),
            },
        };
        let over_cap = match self.p.over_cap {
            CapMode::Truncate => BillingCase {
                case: "body_over_cap",
                status: 200,
                what: format!(
                    "a body streamed past the {}-byte cap is cut there and returned with truncated: true (one declared larger is a 413)",
                    self.p.max_bytes
                ),
            },
            CapMode::Reject => BillingCase {
                case: "body_over_cap",
                status: 413,
                what: format!("a body larger than {} bytes is a 413", self.p.max_bytes),
            },
        };
        vec![upstream, over_cap]
    }

    fn check_input(&self, input: &serde_json::Map<String, Value>) -> Result<(), Reply> {
        if crate::pipeline::input::skips(self.p.skip_if_param.as_deref(), input) {
            return Ok(());
        }
        self.request_parts(input)
            .map(|_| ())
            .map_err(|(code, msg)| Reply::error(StatusCode::BAD_REQUEST, code, msg))
    }

    async fn run(&self, ex: &mut Exchange) -> Flow {
        // Left even when nothing is fetched here: the record describes the limits of the route.
        ex.slots.put(FetchLimits {
            max_bytes: self.p.max_bytes,
            timeout_ms: self.p.timeout_ms,
            max_redirects: self.p.max_redirects,
        });
        // An earlier stage already has the document (own_file: a demo reading the service's
        // own sample from disk), or the input says there is nothing to fetch (POST html).
        if crate::pipeline::input::skips(self.p.skip_if_param.as_deref(), &ex.input)
            || ex.slots.get::<Fetched>().is_some()
        {
            return Flow::Continue;
        }
        let Some(url) = ex.target.clone() else {
            return ex.fail_internal("no target");
        };
        let (method, headers, body) = match self.request_parts(&ex.input) {
            Ok(parts) => parts,
            Err((code, msg)) => return ex.fail(StatusCode::BAD_REQUEST, code, msg),
        };
        let req = FetchRequest {
            url: url.clone(),
            method: method.clone(),
            headers,
            body,
            max_redirects: self.p.max_redirects,
            max_bytes: self.p.max_bytes,
            timeout: Duration::from_millis(self.p.timeout_ms),
            over_cap: match self.p.over_cap {
                CapMode::Truncate => OverCap::Truncate,
                CapMode::Reject => OverCap::Reject,
            },
        };
        let response = match self.client.fetch(req).await {
            Ok(r) => r,
            Err(e) => {
                let status = StatusCode::from_u16(e.status()).unwrap_or(StatusCode::BAD_GATEWAY);
                return ex.fail(status, e.code(), e.to_string());
            }
        };
        // A declared size over the cap is refused, not truncated (docs/decisions.md#billing).
        let declared = response
            .headers
            .get(http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok());
        if let Some(d) = declared {
            if d > self.p.max_bytes as u64 && method != Method::HEAD {
                return ex.fail(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "upstream_too_large",
                    format!(
                        "the upstream declared a body of {d} bytes, over the limit of {} bytes",
                        self.p.max_bytes
                    ),
                );
            }
        }
        if self.p.upstream_status == StatusMode::Fail && !response.status.is_success() {
            let code = response.status.as_u16();
            return ex.fail(
                StatusCode::BAD_GATEWAY,
                "upstream_status",
                format!("the upstream answered HTTP {code}; nothing was charged"),
            );
        }
        ex.slots.put(Fetched {
            requested: url,
            method,
            response,
        });
        Flow::Continue
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::chain::with_shipped_route;
    use serde_json::json;

    fn build_error(p: Value) -> String {
        with_shipped_route("/api/http", |ctx| build(ctx, p).err().unwrap_or_default())
    }

    #[test]
    fn caps_are_required_positive_and_bounded() {
        assert!(build_error(json!({"timeout_ms": 1000})).contains("missing field `max_bytes`"));
        assert!(
            build_error(json!({"max_bytes": 0, "timeout_ms": 1000})).contains("must be positive")
        );
        assert!(
            build_error(json!({"max_bytes": 10, "timeout_ms": 1000, "max_redirects": 21}))
                .contains("above 20")
        );
        assert!(
            build_error(json!({"max_bytes": 10, "timeout_ms": 1000, "over_cap": "drop"}))
                .contains("unknown variant")
        );
        assert!(
            build_error(json!({"max_bytes": 10, "timeout_ms": 1000, "method_param": "verb"}))
                .contains("no input parameter `verb`")
        );
        let ok = json!({"max_bytes": 10, "timeout_ms": 1000, "method_param": "method",
            "headers_param": "headers", "body_param": "body"});
        assert!(build_error(ok).contains("service"));
    }
}
