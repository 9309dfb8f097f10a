//! `GET /openapi.json`: OpenAPI 3.1 with `x-payment-info` per paid operation (what x402scan
//! reads today), the 402 and every error status the route's stages declare; also the JSON
//! Schema of a parameter, which the MCP tools share.

use http::Method;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::{how_to_pay, number, origin, reads_body, LLMS_PATH};
use crate::config::{ParamSpec, ParamType, RouteSpec};
use crate::pipeline::now_iso;
use crate::server::{demo, App, RouteEntry};

/// The OpenAPI security scheme every paid operation names.
const SECURITY_SCHEME: &str = "x402";

fn operation_id(prefix: &str, name: &str) -> String {
    let clean: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("{prefix}_{clean}")
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
    let offered = crate::server::availability::offered(app);
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

/// One operation of a route: its identity and description, its input, its responses, and for
/// a paid route its billing, availability and payment.
fn operation(app: &App, entry: &RouteEntry, method: &Method, stamp_time: &str) -> Value {
    let spec = &entry.spec;
    let mut op = Map::new();
    op.insert(
        "operationId".into(),
        json!(operation_id(
            &method.as_str().to_ascii_lowercase(),
            &spec.name
        )),
    );
    op.insert("summary".into(), json!(spec.summary));
    op.insert(
        "description".into(),
        json!(operation_description(app, entry)),
    );
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
    op.insert(
        "responses".into(),
        Value::Object(responses(entry, method, stamp_time)),
    );
    if spec.is_paid() {
        op.insert(
            "x-billing".into(),
            crate::server::reference::Billing::of(entry).to_json(),
        );
        if let Err(reason) = crate::server::availability::check(app, entry) {
            op.insert(
                "x-unavailable".into(),
                json!({ "reason": reason, "retryAfterSeconds": crate::server::availability::RETRY_AFTER_S }),
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

/// The route's description, plus for a paid route its price, billing and free sample.
fn operation_description(app: &App, entry: &RouteEntry) -> String {
    let spec = &entry.spec;
    let mut description = spec.description.clone();
    if let Some(price) = &spec.price {
        let _ = write!(
            description,
            "\n\nPrice: ${} per call (x402 v2). {}",
            price.usd,
            crate::server::reference::Billing::of(entry).sentence()
        );
        if spec.demo.is_some() {
            let _ = write!(
                description,
                " Free sample: GET {}/api/demo/{}.",
                origin(&app.config),
                spec.name
            );
        }
    }
    description
}

/// An operation's responses: the 200 (with a sample), for a paid route the 402 with its
/// header, and every error status the route's stages declare for this method.
fn responses(entry: &RouteEntry, method: &Method, stamp_time: &str) -> Map<String, Value> {
    let spec = &entry.spec;
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
    responses
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
        "paths": paths(app, &stamp_time),
        "components": components(),
    })
}

/// `paths`: every route's operations, one per method, then the demo twins.
fn paths(app: &App, stamp_time: &str) -> Map<String, Value> {
    let mut paths = Map::new();
    for entry in &app.routes {
        let mut item = Map::new();
        for m in &entry.spec.methods {
            item.insert(
                m.as_str().to_ascii_lowercase(),
                operation(app, entry, m, stamp_time),
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
    paths
}

/// `components`: the x402 security scheme and the shared schemas (Error, Priced,
/// DemoEnvelope).
fn components() -> Value {
    json!({
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
        },
    })
}

#[cfg(test)]
mod tests {
    use super::super::test_param;
    use super::*;

    #[test]
    fn operation_ids_are_identifiers() {
        assert_eq!(operation_id("demo", "x402-check"), "demo_x402_check");
    }

    #[test]
    fn an_any_parameter_is_a_string_only_in_a_query() {
        let p = test_param("body", ParamType::Any);
        assert_eq!(param_schema(&p, true)["type"], "string");
        assert!(param_schema(&p, false).get("type").is_none());
    }

    #[test]
    fn an_object_in_a_query_is_described_as_json_text() {
        let mut p = test_param("headers", ParamType::Object);
        p.description = "Headers".into();
        p.max_length = Some(4000);
        assert_eq!(
            param_description(&p, true),
            "Headers (a JSON object as text, at most 4000 characters)"
        );
        assert_eq!(param_description(&p, false), "Headers");
    }
}
