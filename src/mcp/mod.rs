//! `/mcp`: every paid route as a paid MCP tool, over MCP's streamable HTTP transport
//! (revisions 2025-06-18 and 2025-11-25), stateless: each POSTed JSON-RPC request gets one
//! `application/json` answer; no session, no SSE stream (GET answers 405, as the transport
//! allows).
//!
//! - `initialize`, `ping`, `tools/list` and the `*_demo` tools are free;
//! - `tools/call` of a paid tool runs the route's own chain (input rules, guard, caps, bill,
//!   settle) through the same payment gate and ledger as HTTP: the `PaymentPayload` object in
//!   `params._meta["x402/payment"]` is what PAYMENT-SIGNATURE carries on HTTP (x402's MCP
//!   transport, tool-result binding; the `org.x402/payment` extension binding when the request
//!   advertises it). See `tools` for the catalogue, the result mapping and the tools'
//!   `resource.url`, and docs/mcp.md for what a client sees.
//!
//! `protocol` (framing) and `tools` (catalogue, results) are pure; this file is the thin warp
//! filter and the call into the chain.

pub mod protocol;
pub mod tools;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, StatusCode};
use serde_json::{json, Map, Value};
use std::net::SocketAddr;
use std::sync::Arc;
use warp::filters::BoxedFilter;
use warp::Filter;

use crate::payment::gate::{SoldAs, HEADER_SIGNATURE};
use crate::pipeline::exchange::new_request_id;
use crate::pipeline::reply_headers::cors_preflight;
use crate::pipeline::{self, Exchange, Reply};
use crate::server::{self, respond, App};
use crate::x402::codec::encode_header;
use protocol::{Message, RpcError};

pub const PATH: &str = "/mcp";

/// Room for the payment payload and the JSON-RPC envelope on top of a route's own input.
const ENVELOPE_BYTES: usize = 32 * 1024;

/// The `_meta` key a paid call carries its `PaymentPayload` in.
pub const META_PAYMENT: &str = "x402/payment";

pub fn filter(app: Arc<App>) -> BoxedFilter<(warp::reply::Response,)> {
    let cap = app
        .routes
        .iter()
        .map(|r| r.spec.max_request_bytes)
        .max()
        .unwrap_or(64_000)
        + ENVELOPE_BYTES;
    warp::path("mcp")
        .and(warp::path::end())
        .and(warp::method())
        .and(warp::header::headers_cloned())
        .and(warp::addr::remote())
        .and(warp::body::stream())
        .then(
            move |method: Method, headers: HeaderMap, remote: Option<SocketAddr>, body| {
                let app = app.clone();
                async move {
                    let body = if method == Method::POST {
                        server::read_capped(body, cap).await
                    } else {
                        Ok(Bytes::new())
                    };
                    let reply = answer(app, method, headers, remote, body).await;
                    respond::to_response(reply, &new_request_id())
                }
            },
        )
        .boxed()
}

fn rpc_reply(status: StatusCode, body: &Value) -> Reply {
    Reply::json(status, body).with_header("cache-control", "no-store")
}

/// One HTTP request on /mcp.
pub async fn answer(
    app: Arc<App>,
    method: Method,
    headers: HeaderMap,
    remote: Option<SocketAddr>,
    body: Result<Bytes, Reply>,
) -> Reply {
    let ours: Vec<String> = [
        Some(&app.config.service.base_url),
        app.config.service.backup_url.as_ref(),
    ]
    .into_iter()
    .flatten()
    .map(|u| u.origin().ascii_serialization())
    .collect();
    let origin = headers.get("origin").and_then(|v| v.to_str().ok());
    if !protocol::origin_allowed(origin, &ours) {
        let e = RpcError::new(
            Value::Null,
            protocol::INVALID_REQUEST,
            "this Origin may not call /mcp (DNS-rebinding defence); call it from a server-side client",
        );
        return rpc_reply(StatusCode::FORBIDDEN, &e.to_json());
    }
    if method == Method::OPTIONS {
        let mut r = cors_preflight();
        r.headers.insert(
            "access-control-allow-headers",
            HeaderValue::from_static(
                "Content-Type, Accept, Mcp-Protocol-Version, Mcp-Session-Id, Last-Event-ID",
            ),
        );
        r.headers.insert(
            "access-control-allow-methods",
            HeaderValue::from_static("POST, OPTIONS"),
        );
        return r;
    }
    if method != Method::POST {
        // No server-initiated stream: the transport lets a server answer GET with 405.
        return Reply::error(
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
            "/mcp takes POSTed JSON-RPC messages (MCP streamable HTTP, stateless JSON answers)",
        )
        .with_header("allow", "POST, OPTIONS");
    }
    let version = headers
        .get("mcp-protocol-version")
        .and_then(|v| v.to_str().ok());
    if !protocol::header_revision_ok(version) {
        let e = RpcError::new(
            Value::Null,
            protocol::INVALID_REQUEST,
            format!(
                "unsupported MCP-Protocol-Version {}; this server speaks {}",
                version.unwrap_or_default(),
                protocol::REVISIONS.join(", ")
            ),
        );
        return rpc_reply(StatusCode::BAD_REQUEST, &e.to_json());
    }
    let body = match body {
        Ok(b) => b,
        Err(r) => {
            let e = RpcError::new(
                Value::Null,
                protocol::INVALID_REQUEST,
                "the JSON-RPC message is larger than this server accepts",
            );
            return rpc_reply(r.status, &e.to_json());
        }
    };
    match protocol::parse(&body) {
        Err(e) => rpc_reply(StatusCode::BAD_REQUEST, &e.to_json()),
        Ok(Message::Notification { .. }) | Ok(Message::Response) => Reply {
            status: StatusCode::ACCEPTED,
            headers: HeaderMap::new(),
            body: Bytes::new(),
        },
        Ok(Message::Request { id, method, params }) => {
            let out = match dispatch(&app, &method, params, &headers, remote).await {
                Ok(result) => protocol::result(&id, result),
                Err((code, message)) => RpcError::new(id, code, message).to_json(),
            };
            rpc_reply(StatusCode::OK, &out)
        }
    }
}

type Outcome = Result<Value, (i64, String)>;

async fn dispatch(
    app: &Arc<App>,
    method: &str,
    params: Map<String, Value>,
    headers: &HeaderMap,
    remote: Option<SocketAddr>,
) -> Outcome {
    match method {
        "initialize" => Ok(initialize(app, &params)),
        "ping" => Ok(json!({})),
        "tools/list" => Ok(json!({ "tools": tools::list(app) })),
        "tools/call" => call(app, params, headers, remote).await,
        other => Err((
            protocol::METHOD_NOT_FOUND,
            format!("method not found: {other}"),
        )),
    }
}

fn initialize(app: &App, params: &Map<String, Value>) -> Value {
    let requested = params.get("protocolVersion").and_then(Value::as_str);
    let c = &app.config;
    json!({
        "protocolVersion": protocol::negotiate(requested),
        "capabilities": { "tools": { "listChanged": false } },
        "serverInfo": {
            "name": c.service.name,
            "title": c.service.name,
            "version": c.service.version,
        },
        "instructions": format!(
            "{} Paid tools are priced per call in USDC (x402 v2): call one without payment to \
             get an isError result whose structuredContent is the x402 PaymentRequired; sign one \
             of its `accepts` and call again with the PaymentPayload object in \
             params._meta[\"x402/payment\"]. The answer carries the settlement receipt in \
             result._meta[\"x402/payment-response\"]. A failed call is not charged. Tools named \
             *_demo are free samples on a fixed input.",
            c.service.description
        ),
    })
}

async fn call(
    app: &Arc<App>,
    mut params: Map<String, Value>,
    headers: &HeaderMap,
    remote: Option<SocketAddr>,
) -> Outcome {
    let invalid = |m: String| Err((protocol::INVALID_PARAMS, m));
    let name = match params.get("name") {
        Some(Value::String(s)) => s.clone(),
        _ => return invalid("tools/call needs `name`, a string".into()),
    };
    let args = match params.remove("arguments") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m,
        Some(_) => return invalid("`arguments` must be an object".into()),
    };
    let extension = protocol::advertises_payment_extension(&params);
    let payment = params
        .get("_meta")
        .and_then(|m| m.get(META_PAYMENT))
        .cloned();
    match tools::find(app, &name) {
        None => invalid(format!("unknown tool: {name}")),
        Some(tools::Target::Demo(entry)) => {
            let reply =
                server::demo::handle(app, &entry.spec.name, &Method::GET, headers, remote).await;
            Ok(tools::result_of(&reply, false))
        }
        Some(tools::Target::Paid(index, _)) => {
            let reply = run_paid(app, index, args, payment, remote, headers).await;
            Ok(tools::result_of(&reply, extension))
        }
    }
}

/// Runs a paid route's chain for a tool call, exactly as `server::handle_route` does for an
/// HTTP request: the payment goes where the gate reads it (PAYMENT-SIGNATURE, base64 JSON),
/// the gate is told the tool's resource and bazaar block, and a call carrying a payment runs
/// detached so its settlement and ledger row finish even if the client hangs up.
async fn run_paid(
    app: &Arc<App>,
    index: usize,
    args: Map<String, Value>,
    payment: Option<Value>,
    remote: Option<SocketAddr>,
    headers: &HeaderMap,
) -> Reply {
    let entry = &app.routes[index];
    // A tool that cannot work now asks for no payment, as its HTTP route answers 503 before
    // any challenge (server::availability).
    if let Err(reason) = server::availability::check(app, entry) {
        return server::availability::unavailable_reply(&entry.spec.path, &reason);
    }
    let spec = entry.spec.clone();
    let method = tools::tool_method(&spec);
    let mut ex = Exchange::new(spec.clone(), entry.priced.clone(), method);
    ex.remote = remote;
    // Only the forwarding headers: the route's stages see the caller as an HTTP call would,
    // and no payment travels any other way than `_meta`.
    for name in ["x-forwarded-for", "forwarded", "x-real-ip", "user-agent"] {
        if let Some(v) = headers.get(name) {
            ex.headers.insert(name, v.clone());
        }
    }
    ex.headers.insert(
        http::header::ACCEPT,
        HeaderValue::from_static("application/json"),
    );
    let paid = payment.is_some();
    if let Some(p) = &payment {
        match HeaderValue::from_str(&encode_header(p)) {
            Ok(v) => {
                ex.headers.insert(HEADER_SIGNATURE, v);
            }
            Err(_) => {
                return Reply::error(
                    StatusCode::BAD_REQUEST,
                    "invalid_payment",
                    "_meta[\"x402/payment\"] could not be carried",
                )
            }
        }
    }
    let body = Value::Object(args.clone()).to_string();
    ex.body = Bytes::from(body.clone());
    if body.len() > spec.max_request_bytes {
        ex.input_error = Some(pipeline::input::too_large(spec.max_request_bytes));
    } else {
        match pipeline::input::validate_object(&spec, &args) {
            Ok(input) => ex.input = input,
            Err(r) => ex.input_error = Some(r),
        }
    }
    ex.slots.put(SoldAs {
        url: tools::resource_url(&app.config, &spec.name),
        bazaar: tools::bazaar(&spec),
    });
    if paid {
        let guard = app.paid_calls.enter();
        let app2 = app.clone();
        let task = tokio::spawn(async move {
            let _guard = guard;
            server::run_exchange(&app2.routes[index], &mut ex).await;
            ex
        });
        ex = match task.await {
            Ok(ex) => ex,
            Err(e) => {
                tracing::error!(error = %e, route = %spec.path, "paid MCP call task failed");
                return Reply::error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "internal_error",
                    "the tool failed unexpectedly; you were not charged",
                );
            }
        };
    } else {
        server::run_exchange(entry, &mut ex).await;
    }
    ex.reply.take().unwrap_or_else(|| {
        Reply::error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal_error",
            "no reply",
        )
    })
}
