//! Discovery and information routes, generated from the Config and the built chains (nothing
//! here is written per route):
//!
//! - `GET /.well-known/x402`: x402scan's version-1 list of paid resources;
//! - `GET /openapi.json`: OpenAPI 3.1 with `x-payment-info` per paid operation (what x402scan
//!   reads today), the 402 and every error status the route's stages declare;
//! - `GET /llms.txt`: the llmstxt.org summary for agents, with a curl line per paid route;
//! - `GET /status`: uptime, route readiness (each stage's `readiness()`) and whether the
//!   facilitator answers `GET /supported` (3 s timeout, result cached 30 s so /status cannot be
//!   used to hammer the facilitator). `ok` means "this service can take paid calls": the
//!   config loaded (it did, or nothing would answer) and the facilitator answers. Routes that
//!   cannot serve (a missing browser, no search key) do not make it false: they are listed under
//!   `degraded` with the reason (`availability::check`), and answer 503 before any challenge.
//!   The HTTP status is 200 either way (it is a report, not a load-balancer probe).
//!
//! The three documents are built when the filter is built and again when a route's availability
//! changes (`availability::check`: such a route is marked unavailable in each); /status is
//! computed per call. Billing per route comes from `reference::Billing` (the bill rule and the
//! stages' billing cases), the same source as the behaviour.
//! Every answer goes through `respond::to_response` (CORS) with `Cache-Control: public,
//! max-age=60`.

use bytes::Bytes;
use http::{HeaderValue, Method, StatusCode};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};
use warp::filters::BoxedFilter;
use warp::Filter;

use super::{demo, respond, App, RouteEntry};
use crate::config::{Config, ParamSpec, ParamType, RouteSpec};
use crate::pipeline::exchange::new_request_id;
use crate::pipeline::{now_iso, Reply};

pub const WELL_KNOWN_PATH: &str = "/.well-known/x402";
pub const OPENAPI_PATH: &str = "/openapi.json";
pub const LLMS_PATH: &str = "/llms.txt";
pub const STATUS_PATH: &str = "/status";

/// The OpenAPI security scheme every paid operation names.
const SECURITY_SCHEME: &str = "x402";
const CACHE_CONTROL: &str = "public, max-age=60";
/// How long a facilitator check is reused.
pub const FACILITATOR_CHECK_TTL: Duration = Duration::from_secs(30);
/// Deadline of one facilitator check.
pub const FACILITATOR_TIMEOUT: Duration = Duration::from_secs(3);
/// Largest /supported answer read.
const SUPPORTED_MAX_BYTES: usize = 256 * 1024;

/// The served documents, serialised once.
pub struct Documents {
    pub well_known: Bytes,
    pub openapi: Bytes,
    pub llms: Bytes,
}

impl Documents {
    pub fn build(app: &App) -> Documents {
        let to_bytes = |v: &Value| Bytes::from(serde_json::to_vec_pretty(v).unwrap_or_default());
        Documents {
            well_known: to_bytes(&well_known(app)),
            openapi: to_bytes(&openapi(app)),
            llms: Bytes::from(llms_txt(app)),
        }
    }
}

/// The documents, rebuilt when a route's availability changes (a browser found, a circuit
/// closed): discovery marks unavailable routes, and must not keep saying so after they recover.
pub struct DocCache {
    current: std::sync::Mutex<(Vec<Option<String>>, Arc<Documents>)>,
}

impl DocCache {
    pub fn new(app: &App) -> DocCache {
        DocCache {
            current: std::sync::Mutex::new((
                availability_key(app),
                Arc::new(Documents::build(app)),
            )),
        }
    }

    pub fn get(&self, app: &App) -> Arc<Documents> {
        let key = availability_key(app);
        let Ok(mut current) = self.current.lock() else {
            return Arc::new(Documents::build(app));
        };
        if current.0 != key {
            *current = (key, Arc::new(Documents::build(app)));
        }
        current.1.clone()
    }
}

fn availability_key(app: &App) -> Vec<Option<String>> {
    app.routes
        .iter()
        .map(|r| super::availability::check(app, r).err())
        .collect()
}

pub fn filter(app: Arc<App>) -> BoxedFilter<(warp::reply::Response,)> {
    let docs = Arc::new(DocCache::new(&app));
    let probe = Arc::new(FacilitatorProbe::new(&app.config));
    warp::path::full()
        .and(warp::method())
        .and_then(move |full: warp::path::FullPath, method: Method| {
            let app = app.clone();
            let docs = docs.clone();
            let probe = probe.clone();
            async move {
                let path = full.as_str();
                if ![WELL_KNOWN_PATH, OPENAPI_PATH, LLMS_PATH, STATUS_PATH].contains(&path) {
                    return Err(warp::reject::not_found());
                }
                let reply = answer(&app, &docs.get(&app), &probe, path, &method).await;
                let mut resp = respond::to_response(reply, &new_request_id());
                if method == Method::HEAD {
                    *resp.body_mut() = Default::default();
                }
                Ok::<_, warp::Rejection>(resp)
            }
        })
        .boxed()
}

async fn answer(
    app: &App,
    docs: &Documents,
    probe: &FacilitatorProbe,
    path: &str,
    method: &Method,
) -> Reply {
    if *method == Method::OPTIONS {
        return respond::cors_preflight();
    }
    if !matches!(*method, Method::GET | Method::HEAD) {
        return Reply::error(
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
            format!("{path} answers GET only"),
        )
        .with_header("allow", "GET, HEAD, OPTIONS");
    }
    let (body, content_type) = match path {
        WELL_KNOWN_PATH => (docs.well_known.clone(), "application/json"),
        OPENAPI_PATH => (docs.openapi.clone(), "application/json"),
        LLMS_PATH => (docs.llms.clone(), "text/markdown; charset=utf-8"),
        _ => {
            let v = status(app, probe).await;
            (
                Bytes::from(serde_json::to_vec_pretty(&v).unwrap_or_default()),
                "application/json",
            )
        }
    };
    let mut reply = Reply {
        status: StatusCode::OK,
        headers: Default::default(),
        body,
    };
    reply.headers.insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static(content_type),
    );
    reply.headers.insert(
        http::header::CACHE_CONTROL,
        HeaderValue::from_static(CACHE_CONTROL),
    );
    reply
}

/// The canonical origin, without a trailing slash.
fn origin(config: &Config) -> String {
    config
        .service
        .base_url
        .as_str()
        .trim_end_matches('/')
        .to_string()
}

fn paid_routes(app: &App) -> impl Iterator<Item = &RouteEntry> {
    app.routes.iter().filter(|r| r.spec.is_paid())
}

fn reads_body(m: &Method) -> bool {
    crate::pipeline::input::reads_body(m)
}

/// "GET, POST"
fn methods_list(spec: &RouteSpec) -> String {
    spec.methods
        .iter()
        .map(Method::as_str)
        .collect::<Vec<_>>()
        .join(", ")
}

fn networks_text(app: &App) -> String {
    super::availability::offered(app)
        .iter()
        .map(|(_, a)| format!("{} ({})", a.network, a.name))
        .collect::<Vec<_>>()
        .join(", ")
}

fn how_to_pay(app: &App) -> String {
    format!(
        "Paid routes use x402 version 2, scheme exact, in USDC on {}. 1) Call the route without \
         payment: it answers 402 with a PAYMENT-REQUIRED header (base64 JSON listing the accepted \
         payments: network, asset, amount in atomic units, payTo). 2) Sign one of them with an x402 \
         client (on Base an EIP-3009 transferWithAuthorization). 3) Repeat the same request with \
         the PAYMENT-SIGNATURE header; the 200 answer carries PAYMENT-RESPONSE, the settlement \
         receipt. {} A route that cannot work now answers 503 with Retry-After instead of 402. \
         No API key, no signup. Every paid route has a free sample at GET /api/demo/<name>.",
        networks_text(app),
        super::reference::service_billing(app)
    )
}

// ---------------------------------------------------------------------------------------------
// /.well-known/x402

/// x402scan's version-1 document: absolute URLs for GET routes, "METHOD /path" for the others.
pub fn well_known(app: &App) -> Value {
    let base = origin(&app.config);
    let mut resources = Vec::new();
    for r in paid_routes(app) {
        for m in &r.spec.methods {
            if *m == Method::GET {
                resources.push(format!("{base}{}", r.spec.path));
            } else {
                resources.push(format!("{m} {}", r.spec.path));
            }
        }
    }
    let unavailable: Vec<Value> = paid_routes(app)
        .filter_map(|r| {
            super::availability::check(app, r)
                .err()
                .map(|reason| json!({ "path": r.spec.path, "reason": reason }))
        })
        .collect();
    json!({
        "version": 1,
        "resources": resources,
        // Listed routes that cannot work now: they answer 503 with Retry-After, not 402.
        "unavailable": unavailable,
        "instructions": format!(
            "{} The full catalogue with parameters is at {base}{OPENAPI_PATH} and {base}{LLMS_PATH}. \
             The same routes are paid MCP tools at {base}{}.",
            how_to_pay(app),
            crate::mcp::PATH
        ),
        "mcp": format!("{base}{}", crate::mcp::PATH),
    })
}

// ---------------------------------------------------------------------------------------------
// /openapi.json

fn operation_id(prefix: &str, name: &str) -> String {
    let clean: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("{prefix}_{clean}")
}

/// A JSON number without a spurious ".0" for whole bounds.
fn number(f: f64) -> Value {
    if f.fract() == 0.0 && f.abs() < 9e15 {
        json!(f as i64)
    } else {
        json!(f)
    }
}

/// The JSON Schema of one parameter; `in_query` for the form it takes in a query string.
pub fn param_schema(p: &ParamSpec, in_query: bool) -> Value {
    let mut s = Map::new();
    let ty = match p.ty {
        ParamType::Any if in_query => Some("string"),
        ParamType::Any => None,
        t => Some(t.json_name()),
    };
    if let Some(t) = ty {
        s.insert("type".into(), json!(t));
    }
    if let Some(v) = p.minimum {
        s.insert("minimum".into(), number(v));
    }
    if let Some(v) = p.maximum {
        s.insert("maximum".into(), number(v));
    }
    let stringy = matches!(p.ty, ParamType::String) || (in_query && p.ty == ParamType::Any);
    if stringy {
        if let Some(v) = p.min_length {
            s.insert("minLength".into(), json!(v));
        }
        if let Some(v) = p.max_length {
            s.insert("maxLength".into(), json!(v));
        }
    }
    if let Some(re) = &p.pattern {
        s.insert("pattern".into(), json!(re.as_str()));
    }
    if let Some(e) = &p.enumeration {
        s.insert("enum".into(), Value::Array(e.clone()));
    }
    if let Some(d) = &p.default {
        s.insert("default".into(), d.clone());
    }
    if let Some(f) = &p.format {
        s.insert("format".into(), json!(f));
    }
    if let Some(x) = &p.example {
        s.insert("examples".into(), json!([x]));
    }
    if !p.description.is_empty() {
        s.insert("description".into(), json!(param_description(p, in_query)));
    }
    Value::Object(s)
}

fn param_description(p: &ParamSpec, in_query: bool) -> String {
    let mut d = p.description.clone();
    if p.case_insensitive && p.enumeration.is_some() {
        d.push_str(" (case-insensitive)");
    }
    if p.ty == ParamType::Object && in_query {
        match p.max_length {
            Some(n) => {
                let _ = write!(d, " (a JSON object as text, at most {n} characters)");
            }
            None => d.push_str(" (a JSON object as text)"),
        }
    }
    d
}

fn query_parameter(p: &ParamSpec) -> Value {
    let mut o = Map::new();
    o.insert("name".into(), json!(p.name));
    o.insert("in".into(), json!("query"));
    o.insert("required".into(), json!(p.required));
    o.insert("description".into(), json!(param_description(p, true)));
    if p.ty == ParamType::Object {
        // An object travels as JSON text in the query: OpenAPI's `content` form says so.
        let mut inner = param_schema(p, false);
        if let Value::Object(m) = &mut inner {
            m.remove("description");
            m.remove("examples");
        }
        // OpenAPI 3.1 allows `example` beside `schema` only: with `content`, the example
        // belongs to the media type, as the JSON value itself (validators reject it beside
        // `content`).
        let mut media = json!({ "schema": inner });
        if let Some(x) = &p.example {
            media["example"] = match x {
                Value::String(s) => serde_json::from_str(s).unwrap_or_else(|_| x.clone()),
                v => v.clone(),
            };
        }
        o.insert("content".into(), json!({ "application/json": media }));
        return Value::Object(o);
    } else {
        // description and example live on the parameter itself
        let mut schema = param_schema(p, true);
        if let Value::Object(m) = &mut schema {
            m.remove("description");
            m.remove("examples");
        }
        o.insert("schema".into(), schema);
    }
    if let Some(x) = &p.example {
        o.insert("example".into(), x.clone());
    }
    Value::Object(o)
}

fn body_schema(spec: &RouteSpec) -> Value {
    let mut props = Map::new();
    for p in &spec.input {
        props.insert(p.name.clone(), param_schema(p, false));
    }
    let required: Vec<&str> = spec
        .input
        .iter()
        .filter(|p| p.required)
        .map(|p| p.name.as_str())
        .collect();
    let mut s = json!({ "type": "object", "properties": props });
    if !required.is_empty() {
        s["required"] = json!(required);
    }
    s
}

fn error_response(description: String) -> Value {
    json!({
        "description": description,
        "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } },
    })
}

/// Error statuses of a route: inputs (400, 413) for all, then whatever its stages declare.
pub(crate) fn error_statuses(entry: &RouteEntry, method: &Method) -> BTreeMap<u16, Vec<String>> {
    let mut out: BTreeMap<u16, Vec<String>> = BTreeMap::new();
    out.entry(400)
        .or_default()
        .push("missing or bad input: the message names the parameter and the rule it broke".into());
    out.entry(413).or_default().push(if reads_body(method) {
        format!(
            "request body larger than {} bytes",
            entry.spec.max_request_bytes
        )
    } else {
        "request too large".to_string()
    });
    for (status, whats) in entry.chain.error_statuses() {
        let list = out.entry(status).or_default();
        for w in whats {
            if !list.iter().any(|x| x == w) {
                list.push(w.to_string());
            }
        }
    }
    if entry.spec.is_paid() {
        out.entry(503).or_default().push(
            "the route cannot work now (route_unavailable, before any challenge; Retry-After)"
                .into(),
        );
    }
    out
}

fn sample_200(entry: &RouteEntry, stamp_time: &str) -> Option<Value> {
    let mut ex = match entry.spec.output_example.clone()? {
        Value::Object(m) => m,
        other => {
            let mut m = Map::new();
            m.insert("result".into(), other);
            m
        }
    };
    ex.insert("source".into(), json!(entry.spec.name));
    if let Some(p) = &entry.priced {
        ex.insert("priced".into(), (**p).clone());
    }
    ex.insert("asOf".into(), json!(stamp_time));
    Some(Value::Object(ex))
}

fn payment_info(app: &App, spec: &RouteSpec) -> Option<Value> {
    let price = spec.price.as_ref()?;
    let offered = super::availability::offered(app);
    let accepts: Vec<Value> = offered
        .iter()
        .filter_map(|(i, a)| {
            price.atomic.get(*i).map(|atomic| {
                json!({
                    "network": a.network,
                    "asset": a.asset,
                    "payTo": a.pay_to,
                    "amount": atomic,
                    "decimals": a.decimals,
                })
            })
        })
        .collect();
    let networks: Vec<&str> = offered.iter().map(|(_, a)| a.network.as_str()).collect();
    Some(json!({
        // x402scan reads `pricingMode` beside `price` (docs/DISCOVERY.md there).
        "pricingMode": "fixed",
        "price": { "mode": "fixed", "currency": "USD", "amount": price.usd },
        "protocols": [ { "x402": {
            "version": 2,
            "scheme": "exact",
            "networks": networks,
            "accepts": accepts,
        } } ],
    }))
}

fn operation(app: &App, entry: &RouteEntry, method: &Method, stamp_time: &str) -> Value {
    let spec = &entry.spec;
    let base = origin(&app.config);
    let mut op = Map::new();
    op.insert(
        "operationId".into(),
        json!(operation_id(
            &method.as_str().to_ascii_lowercase(),
            &spec.name
        )),
    );
    op.insert("summary".into(), json!(spec.summary));
    let mut description = spec.description.clone();
    if let Some(price) = &spec.price {
        let _ = write!(
            description,
            "\n\nPrice: ${} per call (x402 v2). {}",
            price.usd,
            super::reference::Billing::of(entry).sentence()
        );
        if spec.demo.is_some() {
            let _ = write!(
                description,
                " Free sample: GET {base}/api/demo/{}.",
                spec.name
            );
        }
    }
    op.insert("description".into(), json!(description));
    if !spec.tags.is_empty() {
        op.insert("tags".into(), json!(spec.tags));
    }
    if reads_body(method) {
        let mut media = json!({ "schema": body_schema(spec) });
        if let Some(d) = &spec.demo {
            media["example"] = Value::Object(d.input.clone());
        }
        op.insert(
            "requestBody".into(),
            json!({
                "required": spec.input.iter().any(|p| p.required),
                "content": { "application/json": media },
            }),
        );
    } else if !spec.input.is_empty() {
        op.insert(
            "parameters".into(),
            Value::Array(spec.input.iter().map(query_parameter).collect()),
        );
    }
    let mut responses = Map::new();
    let mut ok_schema = json!({
        "type": "object",
        "properties": {
            "source": { "type": "string", "description": "the route's name" },
            "asOf": { "type": "string", "format": "date-time", "description": "when the answer was made (UTC)" },
        },
        "required": ["source", "asOf"],
    });
    if spec.is_paid() {
        ok_schema["properties"]["priced"] = json!({ "$ref": "#/components/schemas/Priced" });
    }
    let mut ok_media = json!({ "schema": ok_schema });
    if let Some(example) = sample_200(entry, stamp_time) {
        ok_media["example"] = example;
    }
    let ok_description = if spec.is_paid() {
        "Success, charged. The body also carries source (route name), priced (what was paid) and \
         asOf (UTC time); the PAYMENT-RESPONSE header holds the settlement receipt."
    } else {
        "Success. The body also carries source (route name) and asOf (UTC time)."
    };
    responses.insert(
        "200".into(),
        json!({
            "description": ok_description,
            "content": { "application/json": ok_media },
        }),
    );
    if spec.is_paid() {
        responses.insert(
            "402".into(),
            json!({
                "description": "Payment required: no valid payment was attached. The \
                    PAYMENT-REQUIRED header holds the challenge (base64 JSON: x402Version 2, \
                    resource, accepts with scheme exact, network, amount in atomic units, asset, \
                    payTo). Sign one option and repeat the request with PAYMENT-SIGNATURE.",
                "headers": { "PAYMENT-REQUIRED": {
                    "description": "base64-encoded JSON payment challenge (x402 v2)",
                    "schema": { "type": "string" },
                } },
            }),
        );
    }
    for (status, whats) in error_statuses(entry, method) {
        if status == 402 && spec.is_paid() {
            // Documented above with its header; the stages' 402s are the same challenge.
            continue;
        }
        let mut d = whats.join("; ");
        if spec.is_paid() {
            d.push_str(" (not charged)");
        }
        responses.insert(status.to_string(), error_response(d));
    }
    op.insert("responses".into(), Value::Object(responses));
    if spec.is_paid() {
        op.insert(
            "x-billing".into(),
            super::reference::Billing::of(entry).to_json(),
        );
        if let Err(reason) = super::availability::check(app, entry) {
            op.insert(
                "x-unavailable".into(),
                json!({ "reason": reason, "retryAfterSeconds": super::availability::RETRY_AFTER_S }),
            );
        }
    }
    if let Some(info) = payment_info(app, spec) {
        op.insert("x-payment-info".into(), info);
        // Indexers read the payment as the operation's auth (x402scan: `security` +
        // `components.securitySchemes`).
        op.insert("security".into(), json!([{ SECURITY_SCHEME: [] }]));
    }
    Value::Object(op)
}

fn demo_operation(app: &App, entry: &RouteEntry) -> Value {
    let spec = &entry.spec;
    let demo = spec.demo.as_ref();
    let describe = demo.map(|d| d.describe.as_str()).unwrap_or_default();
    let ttl = demo
        .map(|d| demo::human_duration(d.ttl))
        .unwrap_or_default();
    json!({
        "operationId": operation_id("demo", &spec.name),
        "summary": format!("Free sample of {}: {}", spec.path, spec.summary),
        "description": format!(
            "Runs {} on a fixed input ({describe}) without payment and wraps the answer in an \
             envelope. Samples are reused for up to {ttl}. Rate limited per client ({} per minute, \
             burst {}).",
            spec.path, app.config.demo.per_minute, app.config.demo.burst
        ),
        "tags": ["demo"],
        "responses": {
            "200": {
                "description": "The demo envelope; sample is the route's normal answer on the fixed input.",
                "content": { "application/json": { "schema": { "$ref": "#/components/schemas/DemoEnvelope" } } },
            },
            "429": {
                "description": "Too many demo requests from this client; see Retry-After (seconds).",
                "headers": { "Retry-After": { "schema": { "type": "integer" } } },
                "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } },
            },
        },
    })
}

/// The OpenAPI 3.1.0 document.
pub fn openapi(app: &App) -> Value {
    let config = &app.config;
    let stamp_time = now_iso();
    let mut servers = vec![json!({ "url": origin(config), "description": "canonical" })];
    if let Some(b) = &config.service.backup_url {
        servers.push(json!({
            "url": b.as_str().trim_end_matches('/'),
            "description": "backup: serves the same routes",
        }));
    }
    let mut paths = Map::new();
    for entry in &app.routes {
        let mut item = Map::new();
        for m in &entry.spec.methods {
            item.insert(
                m.as_str().to_ascii_lowercase(),
                operation(app, entry, m, &stamp_time),
            );
        }
        paths.insert(entry.spec.path.clone(), Value::Object(item));
    }
    for entry in demo::demo_routes(app) {
        paths.insert(
            format!("/api/demo/{}", entry.spec.name),
            json!({ "get": demo_operation(app, entry) }),
        );
    }
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": config.service.name,
            "version": config.service.version,
            "description": config.service.description,
            "x-guidance": how_to_pay(app),
        },
        "servers": servers,
        "x-discovery": { "llmsTxtUrl": format!("{}{LLMS_PATH}", origin(config)) },
        "paths": paths,
        "components": {
          "securitySchemes": { SECURITY_SCHEME: {
            "type": "apiKey",
            "in": "header",
            "name": "PAYMENT-SIGNATURE",
            "description": "x402 v2: the base64 JSON payment payload signed for one offer of the \
                route's 402 challenge (PAYMENT-REQUIRED header). No account, no key.",
          } },
          "schemas": {
            "Error": {
                "type": "object",
                "required": ["error", "message"],
                "properties": {
                    "error": { "type": "string", "description": "machine-readable code" },
                    "message": { "type": "string", "description": "what went wrong and what to do" },
                },
            },
            "Priced": {
                "type": "object",
                "properties": {
                    "amountUsd": { "type": "string" },
                    "amountAtomic": { "type": "string" },
                    "asset": { "type": "string" },
                    "network": { "type": "string" },
                    "payTo": { "type": "string" },
                },
            },
            "DemoEnvelope": {
                "type": "object",
                "required": ["demo", "note", "paid_endpoint", "price", "fixed_input", "sample_status", "sample"],
                "properties": {
                    "demo": { "type": "boolean", "const": true },
                    "note": { "type": "string" },
                    "paid_endpoint": { "type": "string", "format": "uri" },
                    "price": { "type": "string" },
                    "fixed_input": { "type": "string" },
                    "sample_status": { "type": "integer" },
                    "sample": { "type": "object" },
                },
            },
        } },
    })
}

// ---------------------------------------------------------------------------------------------
// /llms.txt

fn param_line(p: &ParamSpec) -> String {
    let mut facts = vec![p.ty.json_name().to_string()];
    facts.push(if p.required { "required" } else { "optional" }.into());
    facts.extend(param_rules(p));
    let desc = if p.description.is_empty() {
        String::new()
    } else {
        format!(": {}", p.description)
    };
    format!("`{}` ({}){desc}", p.name, facts.join(", "))
}

/// A parameter's rules in words (bounds, lengths, enum, pattern, default), as input validation
/// applies them.
pub fn param_rules(p: &ParamSpec) -> Vec<String> {
    let mut facts = Vec::new();
    if p.format.as_deref() == Some("uri") {
        facts.push("absolute http(s) URL".to_string());
    }
    match (p.minimum, p.maximum) {
        (Some(lo), Some(hi)) => facts.push(format!("{} to {}", number(lo), number(hi))),
        (Some(lo), None) => facts.push(format!("at least {}", number(lo))),
        (None, Some(hi)) => facts.push(format!("at most {}", number(hi))),
        _ => {}
    }
    if let Some(n) = p.max_length {
        facts.push(format!("at most {n} characters"));
    }
    if let Some(n) = p.min_length {
        facts.push(format!("at least {n} characters"));
    }
    if let Some(e) = &p.enumeration {
        let list: Vec<String> = e
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| v.to_string())
            })
            .collect();
        facts.push(format!("one of {}", list.join("/")));
    }
    if let Some(re) = &p.pattern {
        facts.push(format!("pattern `{}`", re.as_str()));
    }
    if let Some(d) = &p.default {
        facts.push(format!(
            "default {}",
            d.as_str()
                .map(str::to_string)
                .unwrap_or_else(|| d.to_string())
        ));
    }
    if p.case_insensitive && p.enumeration.is_some() {
        facts.push("any case".into());
    }
    facts
}

/// The input a curl example uses: the demo input, else the parameters' examples. A demo input
/// too long for a readable command line (a whole sample page as `html`) gives way to the
/// parameters' examples when there are any.
fn example_input(spec: &RouteSpec) -> Map<String, Value> {
    const READABLE: usize = 600;
    if let Some(d) = &spec.demo {
        let long = Value::Object(d.input.clone()).to_string().len() > READABLE;
        if !long || spec.input.iter().all(|p| p.example.is_none()) {
            return d.input.clone();
        }
    }
    spec.input
        .iter()
        .filter_map(|p| p.example.clone().map(|x| (p.name.clone(), x)))
        .collect()
}

/// One shell-safe curl command for a route.
pub fn curl_example(base: &str, spec: &RouteSpec) -> String {
    let input = example_input(spec);
    let url = format!("{base}{}", spec.path);
    if spec.methods.contains(&Method::GET) || !spec.methods.iter().any(reads_body) {
        let mut u = url::form_urlencoded::Serializer::new(String::new());
        for (k, v) in &input {
            let text = v
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| v.to_string());
            u.append_pair(k, &text);
        }
        let q = u.finish();
        let full = if q.is_empty() {
            url
        } else {
            format!("{url}?{q}")
        };
        let method = if spec.methods.contains(&Method::GET) {
            Method::GET
        } else {
            spec.methods.first().cloned().unwrap_or(Method::GET)
        };
        if method == Method::GET {
            format!("curl -i {}", shell_quote(&full))
        } else {
            format!("curl -i -X {method} {}", shell_quote(&full))
        }
    } else {
        let method = spec
            .methods
            .iter()
            .find(|m| reads_body(m))
            .cloned()
            .unwrap_or(Method::POST);
        let body = Value::Object(input).to_string();
        format!(
            "curl -i -X {method} {} -H 'content-type: application/json' -d {}",
            shell_quote(&url),
            shell_quote(&body)
        )
    }
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The llmstxt.org document.
pub fn llms_txt(app: &App) -> String {
    let config = &app.config;
    let base = origin(config);
    let mut t = String::new();
    let _ = writeln!(t, "# {}\n", config.service.name);
    let summary = if config.service.description.is_empty() {
        "Pay-per-call functions for software agents, paid with x402 v2.".to_string()
    } else {
        config.service.description.trim().replace('\n', " ")
    };
    let _ = writeln!(t, "> {summary}\n");
    let _ = writeln!(
        t,
        "Base URL: {base}{}. Version {}. Answers are JSON; errors are `{{\"error\": code, \"message\": text}}`, and an answer with an error status is never charged (each route's billing below).\n",
        config
            .service
            .backup_url
            .as_ref()
            .map(|b| format!(" (backup: {})", b.as_str().trim_end_matches('/')))
            .unwrap_or_default(),
        config.service.version
    );

    let _ = writeln!(t, "## How to pay\n");
    let _ = writeln!(t, "- No API key, no account: every call is paid on its own with x402 version 2 (scheme `exact`).");
    for (_, a) in super::availability::offered(app) {
        let _ = writeln!(
            t,
            "- Network `{}` ({}): asset `{}`, paid to `{}`.",
            a.network, a.name, a.asset, a.pay_to
        );
    }
    let _ = writeln!(t, "- 1. Call the route without payment: the answer is `402` with a `PAYMENT-REQUIRED` header (base64 JSON: x402Version 2, resource, accepts with network, amount in atomic units, asset, payTo).");
    let _ = writeln!(t, "- 2. Sign one of the accepted options with an x402 client (on Base: an EIP-3009 transferWithAuthorization for the exact amount).");
    let _ = writeln!(t, "- 3. Repeat the same request with the `PAYMENT-SIGNATURE` header. The `200` answer carries `PAYMENT-RESPONSE` (base64 JSON settlement receipt with the transaction hash).");
    let _ = writeln!(t, "- {}", super::reference::service_billing(app));
    let _ = writeln!(
        t,
        "- A route that cannot work now answers `503` with `Retry-After` instead of `402`: no payment is asked.\n"
    );

    let paid: Vec<&RouteEntry> = paid_routes(app).collect();
    if !paid.is_empty() {
        let _ = writeln!(t, "## Paid routes\n");
        for e in &paid {
            let s = &e.spec;
            let price = s.price.as_ref().map(|p| p.usd.as_str()).unwrap_or("");
            let _ = writeln!(
                t,
                "- [{}]({base}{}): ${price} per call; {}. {}",
                s.path,
                s.path,
                methods_list(s),
                s.summary
            );
            if let Err(reason) = super::availability::check(app, e) {
                let _ = writeln!(
                    t,
                    "  - Unavailable now ({reason}): answers 503 with Retry-After, no payment asked."
                );
            }
            if s.description != s.summary {
                let _ = writeln!(t, "  - {}", s.description.trim().replace('\n', " "));
            }
            let _ = writeln!(
                t,
                "  - Billing: {}",
                super::reference::Billing::of(e).sentence()
            );
            if s.input.is_empty() {
                let _ = writeln!(t, "  - Parameters: none.");
            } else {
                let join = |body: bool| {
                    s.methods
                        .iter()
                        .filter(|m| reads_body(m) == body)
                        .map(Method::as_str)
                        .collect::<Vec<_>>()
                        .join("/")
                };
                let (query, body) = (join(false), join(true));
                let where_ = match (query.is_empty(), body.is_empty()) {
                    (false, false) => {
                        format!("in the query string ({query}) or a JSON body ({body})")
                    }
                    (true, false) => format!("as a JSON body ({body})"),
                    _ => format!("in the query string ({query})"),
                };
                let list: Vec<String> = s.input.iter().map(param_line).collect();
                let _ = writeln!(t, "  - Parameters, {where_}: {}", list.join("; "));
            }
            let _ = writeln!(
                t,
                "  - Try (answers 402 until paid): `{}`",
                curl_example(&base, s)
            );
            if s.demo.is_some() {
                let _ = writeln!(t, "  - Free sample: {base}/api/demo/{}", s.name);
            }
        }
        t.push('\n');
    }

    let free: Vec<&RouteEntry> = app.routes.iter().filter(|r| !r.spec.is_paid()).collect();
    if !free.is_empty() {
        let _ = writeln!(t, "## Free routes\n");
        for e in free {
            let s = &e.spec;
            let _ = writeln!(
                t,
                "- [{}]({base}{}): {}. {}",
                s.path,
                s.path,
                methods_list(s),
                s.summary
            );
        }
        t.push('\n');
    }

    let demos: Vec<&RouteEntry> = demo::demo_routes(app).collect();
    if !demos.is_empty() {
        let _ = writeln!(t, "## Free demo twins\n");
        let _ = writeln!(
            t,
            "Each runs the paid route on a fixed input, free, and wraps the answer in `{{demo, note, paid_endpoint, price, fixed_input, sample_status, sample}}`. Limited to {} requests per minute per client (burst {}).\n",
            config.demo.per_minute, config.demo.burst
        );
        for e in demos {
            let s = &e.spec;
            let d = s.demo.as_ref().map(|d| d.describe.as_str()).unwrap_or("");
            let _ = writeln!(
                t,
                "- [/api/demo/{}]({base}/api/demo/{}): {} on {d}",
                s.name, s.name, s.path
            );
        }
        t.push('\n');
    }

    let _ = writeln!(t, "## Discovery\n");
    let _ = writeln!(
        t,
        "- [OpenAPI 3.1]({base}{OPENAPI_PATH}): every operation with its parameters, errors and `x-payment-info`"
    );
    let _ = writeln!(
        t,
        "- [x402 resource list]({base}{WELL_KNOWN_PATH}): the paid endpoints (x402scan format)"
    );
    let _ = writeln!(
        t,
        "- [MCP server]({base}{}): every paid route as a paid MCP tool (streamable HTTP; x402 in `_meta[\"x402/payment\"]`), free `*_demo` tools",
        crate::mcp::PATH
    );
    let _ = writeln!(
        t,
        "- [Status]({base}{STATUS_PATH}): `ok` when paid calls can be taken (facilitator reachable), routes that cannot serve under `degraded`"
    );
    t
}

// ---------------------------------------------------------------------------------------------
// /status

/// Checks the facilitator's `GET /supported`, one check at a time, result reused 30 s.
pub struct FacilitatorProbe {
    url: String,
    supported_url: String,
    client: Option<reqwest::Client>,
    build_error: Option<String>,
    last: tokio::sync::Mutex<Option<(Instant, Value)>>,
}

impl FacilitatorProbe {
    pub fn new(config: &Config) -> FacilitatorProbe {
        // reqwest is built without a default crypto provider; installing ring twice is harmless.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let url = config.payment.facilitator.url.to_string();
        let supported_url = format!("{}/supported", url.trim_end_matches('/'));
        let built = reqwest::Client::builder()
            .no_proxy()
            .timeout(FACILITATOR_TIMEOUT)
            .connect_timeout(FACILITATOR_TIMEOUT)
            .redirect(reqwest::redirect::Policy::limited(3))
            .user_agent(config.guard.user_agent.clone())
            .build();
        let (client, build_error) = match built {
            Ok(c) => (Some(c), None),
            Err(e) => (None, Some(format!("cannot build the HTTP client: {e}"))),
        };
        FacilitatorProbe {
            url,
            supported_url,
            client,
            build_error,
            last: tokio::sync::Mutex::new(None),
        }
    }

    /// The cached check, or a fresh one when it is older than `FACILITATOR_CHECK_TTL`.
    /// Concurrent callers during a refresh wait for that one check.
    pub async fn check(&self) -> Value {
        let mut last = self.last.lock().await;
        if let Some((at, v)) = &*last {
            if at.elapsed() < FACILITATOR_CHECK_TTL {
                return v.clone();
            }
        }
        let v = self.probe().await;
        *last = Some((Instant::now(), v.clone()));
        v
    }

    async fn probe(&self) -> Value {
        let checked_at = now_iso();
        let started = Instant::now();
        let result = match &self.client {
            Some(c) => fetch_supported(c, &self.supported_url).await,
            None => Err(self.build_error.clone().unwrap_or_default()),
        };
        let latency = started.elapsed().as_millis() as u64;
        let mut v = json!({
            "url": self.url,
            "reachable": result.is_ok(),
            "checkedAt": checked_at,
            "latencyMs": latency,
        });
        match result {
            Ok(networks) => v["networks"] = json!(networks),
            Err(e) => {
                v["error"] = json!(e);
                v["networks"] = json!([]);
            }
        }
        v
    }
}

/// GET /supported → the v2 networks it lists.
async fn fetch_supported(client: &reqwest::Client, url: &str) -> Result<Vec<String>, String> {
    let mut resp = client.get(url).send().await.map_err(describe_error)?;
    if !resp.status().is_success() {
        return Err(format!(
            "GET /supported answered HTTP {}",
            resp.status().as_u16()
        ));
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(describe_error)? {
        if body.len() + chunk.len() > SUPPORTED_MAX_BYTES {
            return Err("GET /supported answered more than 256 KB".into());
        }
        body.extend_from_slice(&chunk);
    }
    let v: Value = serde_json::from_slice(&body)
        .map_err(|e| format!("GET /supported did not answer JSON: {e}"))?;
    let kinds = v["kinds"]
        .as_array()
        .ok_or("GET /supported has no kinds list")?;
    let mut networks: Vec<String> = Vec::new();
    for k in kinds {
        let v2 = k["x402Version"].as_u64().map(|n| n == 2).unwrap_or(true);
        if let (true, Some(n)) = (v2, k["network"].as_str()) {
            if !networks.iter().any(|x| x == n) {
                networks.push(n.to_string());
            }
        }
    }
    Ok(networks)
}

fn describe_error(e: reqwest::Error) -> String {
    if e.is_timeout() {
        format!("no answer within {} s", FACILITATOR_TIMEOUT.as_secs())
    } else if e.is_connect() {
        "connection failed".into()
    } else {
        format!("request failed: {e}")
    }
}

/// The /status document.
pub async fn status(app: &App, probe: &FacilitatorProbe) -> Value {
    let facilitator = probe.check().await;
    let uptime = app.started.elapsed();
    let started_at = chrono::Utc::now()
        - chrono::Duration::from_std(uptime).unwrap_or_else(|_| chrono::Duration::zero());
    let mut degraded: Vec<Value> = Vec::new();
    let routes: Vec<Value> = app
        .routes
        .iter()
        .map(|r| {
            let mut v = json!({
                "path": r.spec.path,
                "name": r.spec.name,
                "ready": true,
                "price": r.spec.price.as_ref().map(|p| format!("${}", p.usd)),
                "pipeline": r.spec.pipeline,
            });
            if let Err(reason) = super::availability::check(app, r) {
                v["ready"] = json!(false);
                v["reason"] = json!(reason);
                degraded.push(json!({
                    "path": r.spec.path,
                    "name": r.spec.name,
                    "reason": reason,
                }));
            }
            v
        })
        .collect();
    let pool = app
        .services
        .get::<crate::x402::facilitators::Facilitators>();
    // With several facilitators, paid calls can be taken while any one is healthy.
    let reachable = facilitator["reachable"].as_bool().unwrap_or(false)
        || pool
            .as_ref()
            .is_some_and(|p| p.len() > 1 && p.any_available());
    json!({
        // Paid calls need the config (loaded, or we would not be answering) and the
        // facilitator; a route that cannot serve is `degraded`, not the whole service.
        "ok": reachable,
        "degraded": degraded,
        "service": app.config.service.name,
        "version": app.config.service.version,
        "uptimeSeconds": uptime.as_secs(),
        "startedAt": started_at.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string(),
        "config": app.stamp.to_json(),
        "facilitator": facilitator,
        "facilitators": pool.map(|p| p.status()).unwrap_or_else(|| json!([])),
        "networks": crate::payment::readiness::status_of(app),
        "routes": routes,
    })
}
