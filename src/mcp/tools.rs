//! The tool catalogue, generated from routes.yaml like /openapi.json and the bazaar blocks
//! (one schema source: `discovery::param_schema`), and the mapping of a route's finished reply
//! to an MCP tool result. Pure: no I/O.
//!
//! - every paid route is a paid tool named after the route (`fetch`, `extract`, …);
//! - every paid route with a `demo:` block also has a free twin `<name>_demo` (no arguments);
//! - a tool is called the way the route is: POST (a JSON body) when the route takes POST, else
//!   its first method with the arguments as its query parameters would be, validated by the
//!   route's own input rules.
//!
//! **`resource.url` of a tool** (the `resource` in its PaymentRequired, and what a payment that
//! echoes a resource must name): `mcp://<host of base_url>/tools/<tool name>`, e.g.
//! `mcp://paycall.example.com/tools/fetch`. One URL per tool, stable across releases (the tool
//! name is the route's name), distinct from the route's https URL so an indexer never mistakes
//! one door for the other; the bazaar block adds `toolName` as the MCP bazaar extension asks.

use http::{Method, StatusCode};
use serde_json::{json, Map, Value};

use crate::config::{Config, ParamType, RouteSpec};
use crate::pipeline::Reply;
use crate::server::discovery::param_schema;
use crate::server::{App, RouteEntry};
use crate::x402::codec::decode_header;

/// Suffix of a demo twin's tool name.
pub const DEMO_SUFFIX: &str = "_demo";

/// What a tool name resolves to.
pub enum Target<'a> {
    Paid(usize, &'a RouteEntry),
    Demo(&'a RouteEntry),
}

/// The route a tool name names.
pub fn find<'a>(app: &'a App, name: &str) -> Option<Target<'a>> {
    if let Some(base) = name.strip_suffix(DEMO_SUFFIX) {
        if let Some(e) = app
            .routes
            .iter()
            .find(|r| r.spec.name == base && r.spec.is_paid() && r.spec.demo.is_some())
        {
            return Some(Target::Demo(e));
        }
    }
    app.routes
        .iter()
        .enumerate()
        .find(|(_, r)| r.spec.is_paid() && r.spec.name == name)
        .map(|(i, r)| Target::Paid(i, r))
}

/// The method a tool call runs the route with.
pub fn tool_method(spec: &RouteSpec) -> Method {
    if spec.methods.contains(&Method::POST) {
        Method::POST
    } else {
        spec.methods.first().cloned().unwrap_or(Method::GET)
    }
}

/// The tool's `inputSchema`: the route's parameters as JSON values (objects as objects, not
/// as JSON text), the same schemas /openapi.json gives a JSON body.
pub fn input_schema(spec: &RouteSpec) -> Value {
    let body = crate::pipeline::input::reads_body(&tool_method(spec));
    let params = spec
        .input
        .iter()
        .filter(|p| body || !(p.name == "body" && p.ty == ParamType::Any));
    let mut props = Map::new();
    let mut required = Vec::new();
    for p in params {
        props.insert(p.name.clone(), param_schema(p, false));
        if p.required {
            required.push(json!(p.name));
        }
    }
    let mut s = json!({ "type": "object", "properties": props });
    if !required.is_empty() {
        s["required"] = Value::Array(required);
    }
    s
}

/// An `outputSchema` from the route's output example: the example's top-level fields with
/// their JSON types (each may also be null, numbers are numbers), plus the fields every answer
/// carries. Loose on purpose: MCP clients validate every successful result against it, and an
/// example shows one answer, not every one.
pub fn output_schema(spec: &RouteSpec) -> Option<Value> {
    let Value::Object(example) = spec.output_example.as_ref()? else {
        return None;
    };
    let mut props = Map::new();
    for (k, v) in example {
        let t = match v {
            Value::Null => continue,
            Value::Bool(_) => "boolean",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        };
        props.insert(k.clone(), json!({ "type": [t, "null"] }));
    }
    props.insert("source".into(), json!({ "type": "string" }));
    props.insert("asOf".into(), json!({ "type": "string" }));
    if spec.is_paid() {
        props.insert("priced".into(), json!({ "type": "object" }));
    }
    Some(json!({ "type": "object", "properties": props }))
}

/// The tool's resource URL (see the module doc).
pub fn resource_url(config: &Config, tool: &str) -> String {
    let base = &config.service.base_url;
    let host = base.host_str().unwrap_or("localhost");
    match base.port() {
        Some(p) => format!("mcp://{host}:{p}/tools/{tool}"),
        None => format!("mcp://{host}/tools/{tool}"),
    }
}

/// An example `arguments` object: the demo input, else the parameters' examples.
pub fn example_arguments(spec: &RouteSpec) -> Map<String, Value> {
    if let Some(d) = &spec.demo {
        if !d.input.is_empty() {
            return d.input.clone();
        }
    }
    spec.input
        .iter()
        .filter_map(|p| p.example.clone().map(|x| (p.name.clone(), x)))
        .collect()
}

/// The `bazaar` extension of a paid tool (`input.type: "mcp"`), with the schema that
/// validates it (bazaar spec, MCP tools).
pub fn bazaar(spec: &RouteSpec) -> Value {
    let mut input = json!({
        "type": "mcp",
        "toolName": spec.name,
        "description": spec.summary,
        "transport": "streamable-http",
        "inputSchema": input_schema(spec),
    });
    let example = example_arguments(spec);
    if !example.is_empty() {
        input["example"] = Value::Object(example);
    }
    let mut info = json!({ "input": input });
    if let Some(x) = &spec.output_example {
        info["output"] = json!({ "type": "json", "example": x });
    }
    json!({
        "info": info,
        "schema": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "input": {
                    "type": "object",
                    "properties": {
                        "type": { "type": "string", "const": "mcp" },
                        "toolName": { "type": "string", "const": spec.name },
                        "description": { "type": "string" },
                        "transport": { "type": "string", "enum": ["streamable-http", "sse"] },
                        "inputSchema": { "type": "object" },
                        "example": { "type": "object" },
                    },
                    "required": ["type", "toolName", "inputSchema"],
                    "additionalProperties": false,
                },
                "output": {
                    "type": "object",
                    "properties": { "type": { "type": "string" }, "example": {} },
                    "required": ["type"],
                },
            },
            "required": ["input"],
        },
    })
}

/// Every tool, paid ones in routes.yaml order, then the free demo twins.
pub fn list(app: &App) -> Vec<Value> {
    let mut tools = Vec::new();
    for e in app.routes.iter().filter(|r| r.spec.is_paid()) {
        tools.push(paid_tool(&app.config, e));
    }
    for e in crate::server::demo::demo_routes(app) {
        tools.push(demo_tool(&app.config, e));
    }
    tools
}

fn usd(spec: &RouteSpec) -> String {
    spec.price
        .as_ref()
        .map(|p| p.usd.clone())
        .unwrap_or_default()
}

fn paid_tool(config: &Config, e: &RouteEntry) -> Value {
    let spec = &e.spec;
    let mut description = if spec.description.is_empty() {
        spec.summary.clone()
    } else {
        spec.description.clone()
    };
    description.push_str(&format!(
        " Paid: ${} in USDC per call with x402 (call it once to get the payment requirements, \
         then again with the signed payment in _meta[\"x402/payment\"]); not charged when it fails.",
        usd(spec)
    ));
    if spec.demo.is_some() {
        description.push_str(&format!(
            " A free sample on a fixed input: {}{DEMO_SUFFIX}.",
            spec.name
        ));
    }
    let mut tool = json!({
        "name": spec.name,
        "title": spec.summary,
        "description": description,
        "inputSchema": input_schema(spec),
        "annotations": { "title": spec.summary, "openWorldHint": true },
        "_meta": {
            "x402/price": {
                "usd": usd(spec),
                "priced": e.priced.as_deref().cloned().unwrap_or(Value::Null),
                "accepts": config.payment.accepts.iter().zip(spec.price.iter().flat_map(|p| &p.atomic)).map(|(a, amount)| json!({
                    "scheme": "exact",
                    "network": a.network,
                    "asset": a.asset,
                    "amount": amount,
                    "payTo": a.pay_to,
                })).collect::<Vec<_>>(),
            },
            "x402/resource": resource_url(config, &spec.name),
            "paycall/route": spec.path,
        },
    });
    if let Some(s) = output_schema(spec) {
        tool["outputSchema"] = s;
    }
    tool
}

fn demo_tool(config: &Config, e: &RouteEntry) -> Value {
    let spec = &e.spec;
    let describe = spec
        .demo
        .as_ref()
        .map(|d| d.describe.as_str())
        .unwrap_or_default();
    json!({
        "name": format!("{}{DEMO_SUFFIX}", spec.name),
        "title": format!("Free sample: {}", spec.summary),
        "description": format!(
            "Free, no payment: runs the paid tool `{}` on a fixed input ({describe}) and returns \
             its answer in a sample envelope (samples are reused for a while; rate limited per \
             client). Use `{}` itself for your own input.",
            spec.name, spec.name
        ),
        "inputSchema": { "type": "object", "properties": {}, "additionalProperties": false },
        "annotations": { "readOnlyHint": true, "openWorldHint": true },
        "_meta": {
            "paycall/demoOf": spec.name,
            "x402/resource": resource_url(config, &spec.name),
        },
    })
}

/// A route's finished reply as an MCP tool result.
///
/// - a 402 carrying a challenge: the tool-result binding (`isError`, the `PaymentRequired` in
///   `structuredContent` and as JSON text), or, when the request advertised the
///   `org.x402/payment` extension, `{resultType: "payment_required", paymentRequired}`;
/// - anything else: the body as `structuredContent` (when an object) and as text, `isError`
///   unless 2xx; a `PAYMENT-RESPONSE` receipt (success or a settlement failure) in
///   `_meta["x402/payment-response"]`; on an error the HTTP status and Retry-After in
///   `_meta` too. A failed settlement's answer is the payment error only (settle withheld
///   the output).
pub fn result_of(reply: &Reply, extension: bool) -> Value {
    let header = |n: &str| reply.headers.get(n).and_then(|v| v.to_str().ok());
    if reply.status == StatusCode::PAYMENT_REQUIRED {
        if let Some(pr) = header("payment-required").and_then(|h| decode_header(h).ok()) {
            if extension {
                return json!({ "resultType": "payment_required", "paymentRequired": pr });
            }
            return json!({
                "isError": true,
                "structuredContent": pr,
                "content": [ { "type": "text", "text": pr.to_string() } ],
            });
        }
    }
    let body = reply
        .body_json()
        .unwrap_or_else(|| Value::String(String::from_utf8_lossy(&reply.body).into_owned()));
    let text = match &body {
        Value::String(s) => s.clone(),
        v => v.to_string(),
    };
    let mut out = Map::new();
    out.insert("content".into(), json!([{ "type": "text", "text": text }]));
    if body.is_object() {
        out.insert("structuredContent".into(), body);
    }
    let ok = reply.status.is_success();
    out.insert("isError".into(), json!(!ok));
    let mut meta = Map::new();
    if let Some(receipt) = header("payment-response").and_then(|h| decode_header(h).ok()) {
        meta.insert("x402/payment-response".into(), receipt);
    }
    if !ok {
        meta.insert("paycall/status".into(), json!(reply.status.as_u16()));
        if let Some(s) = header("retry-after").and_then(|s| s.parse::<u64>().ok()) {
            meta.insert("paycall/retryAfter".into(), json!(s));
        }
    }
    if !meta.is_empty() {
        out.insert("_meta".into(), Value::Object(meta));
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::x402::codec::encode_header;

    fn shipped() -> Config {
        let routes = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("routes.yaml");
        let env = |k: &str| match k {
            "PAYCALL_EVM_PAY_TO" => Some("0xdF1D7b5C056D78F5aA14138a5695f7FF6F7aCFf3".into()),
            "PAYCALL_SOLANA_PAY_TO" => Some("FYA23SLFVpETuY13UnwTDJA9W6ipiL1sKXd6XJUhViA1".into()),
            _ => None,
        };
        crate::config::load_with_env(&routes, &env).expect("shipped config loads")
    }

    fn route<'a>(c: &'a Config, name: &str) -> &'a RouteSpec {
        c.routes.iter().find(|r| r.name == name).expect("route")
    }

    #[test]
    fn a_tool_takes_the_routes_parameters_as_json() {
        let c = shipped();
        let fetch = route(&c, "fetch");
        assert_eq!(tool_method(fetch), Method::GET);
        let s = input_schema(fetch);
        assert_eq!(s["type"], "object");
        assert_eq!(s["required"], json!(["url"]));
        assert_eq!(s["properties"]["url"]["type"], "string");
        // /api/http takes POST: its object and any-typed parameters are JSON values.
        let http = route(&c, "http");
        assert_eq!(tool_method(http), Method::POST);
        let s = input_schema(http);
        assert_eq!(s["properties"]["headers"]["type"], "object");
        assert!(s["properties"]["body"].is_object());
        assert!(s["properties"]["body"].get("type").is_none());
    }

    #[test]
    fn output_schemas_are_loose_and_carry_the_stamped_fields() {
        let c = shipped();
        let s = output_schema(route(&c, "fetch")).expect("fetch has an output example");
        assert_eq!(s["type"], "object");
        assert_eq!(s["properties"]["url"]["type"], json!(["string", "null"]));
        assert_eq!(s["properties"]["status"]["type"], json!(["number", "null"]));
        assert!(s["properties"]["priced"].is_object());
        assert!(s.get("required").is_none());
    }

    #[test]
    fn a_tools_resource_url_is_stable_and_names_the_tool() {
        let c = shipped();
        assert_eq!(
            resource_url(&c, "fetch"),
            "mcp://paycall.example.com/tools/fetch"
        );
        let b = bazaar(route(&c, "fetch"));
        assert_eq!(b["info"]["input"]["type"], "mcp");
        assert_eq!(b["info"]["input"]["toolName"], "fetch");
        assert_eq!(
            b["info"]["input"]["inputSchema"],
            input_schema(route(&c, "fetch"))
        );
        assert!(b["info"]["input"]["example"]["url"].is_string());
    }

    #[test]
    fn an_unpaid_call_becomes_the_tool_result_binding_or_the_extension_one() {
        let pr =
            json!({"x402Version": 2, "error": "Payment required", "accepts": [{"amount": "1"}]});
        let reply = Reply::json(StatusCode::PAYMENT_REQUIRED, &json!({"message": "pay"}))
            .with_header("payment-required", &encode_header(&pr));
        let r = result_of(&reply, false);
        assert_eq!(r["isError"], true);
        assert_eq!(r["structuredContent"], pr);
        let text: Value = serde_json::from_str(r["content"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(
            text, pr,
            "the text and the structured content hold the same data"
        );
        let r = result_of(&reply, true);
        assert_eq!(
            r,
            json!({"resultType": "payment_required", "paymentRequired": pr})
        );
    }

    #[test]
    fn answers_keep_their_receipt_and_errors_their_status() {
        let receipt = json!({"success": true, "transaction": "0xab", "network": "eip155:8453"});
        let ok = Reply::json(StatusCode::OK, &json!({"ok": true}))
            .with_header("payment-response", &encode_header(&receipt));
        let r = result_of(&ok, false);
        assert_eq!(r["isError"], false);
        assert_eq!(r["structuredContent"], json!({"ok": true}));
        assert_eq!(r["_meta"]["x402/payment-response"], receipt);
        assert!(r["_meta"].get("paycall/status").is_none());

        let failed = Reply::error(StatusCode::BAD_GATEWAY, "upstream_failed", "down")
            .with_header("retry-after", "5");
        let r = result_of(&failed, false);
        assert_eq!(r["isError"], true);
        assert_eq!(r["structuredContent"]["error"], "upstream_failed");
        assert_eq!(r["_meta"]["paycall/status"], 502);
        assert_eq!(r["_meta"]["paycall/retryAfter"], 5);
        assert!(r["_meta"].get("x402/payment-response").is_none());

        // A settlement failure: a 402 without a challenge, the payment error and its receipt.
        let bad = json!({"success": false, "errorReason": "x", "transaction": ""});
        let r = result_of(
            &Reply::error(
                StatusCode::PAYMENT_REQUIRED,
                "settlement_failed",
                "withheld",
            )
            .with_header("payment-response", &encode_header(&bad)),
            false,
        );
        assert_eq!(r["isError"], true);
        assert_eq!(r["structuredContent"]["error"], "settlement_failed");
        assert_eq!(r["_meta"]["x402/payment-response"], bad);
    }
}
