//! Discovery routes through the real server, checked against the config they are generated
//! from: /.well-known/x402, /openapi.json, /llms.txt and /status (with a local fake facilitator,
//! with nothing listening, and with one that never answers).

use crate::support;

use paycall::config::{Config, ParamType};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::time::{Duration, Instant};
use support::server::*;

const ROUTES: &str = r#"routes:
  - path: /api/echo
    methods: [GET, POST]
    price_usd: "0.01"
    summary: Echo things
    description: Answers a fixed body; stands for a real paid route in discovery tests.
    pipeline: paid_static
    tags: [echo, test]
    input:
      - name: url
        type: string
        required: true
        format: uri
        max_length: 2048
        description: Absolute http(s) URL
        example: https://example.com/
      - name: n
        type: integer
        minimum: 1
        maximum: 5
        default: 3
        description: How many
      - name: mode
        type: string
        enum: [fast, full]
        case_insensitive: true
        default: fast
        description: Mode
      - name: fields
        type: object
        max_length: 16000
        description: Field spec
      - name: tag
        type: string
        pattern: "^[a-z]+$"
        min_length: 2
        max_length: 20
        description: A tag
      - name: ratio
        type: number
        minimum: 0.5
        maximum: 2.5
        description: A ratio
      - name: body
        type: any
        description: Anything
    demo:
      input: { url: "https://example.com/", fields: { title: h1 } }
      ttl_s: 600
      describe: https://example.com/ with a title field
    output_example: { ok: true, echoed: "https://example.com/" }
  - path: /api/render
    methods: [GET]
    price_usd: "0.005"
    summary: Needs a browser
    pipeline: render
    demo:
      ttl_s: 60
      describe: nothing
  - path: /api/push
    methods: [POST]
    price_usd: "0.02"
    summary: Post only
    pipeline: paid_static
    input:
      - name: text
        type: string
        required: true
        max_length: 100
        description: Some text
        example: hello
  - path: /api/ping
    methods: [GET]
    summary: Free ping
    pipeline: ping
"#;

const RENDER: &str = "name: render\nstages:\n  - stage: payment_gate\n  - stage: unready\n    with: { reason: chromium missing }\n  - stage: count\n    with: { counter: discovery-render }\n  - stage: bill\n  - stage: settle\n";

async fn start_with(facilitator: &str) -> (ConfigDir, Config, TestServer) {
    let yaml = format!("{}{ROUTES}", service_yaml(facilitator, 30, 10, &[]));
    let dir = write_config(
        &yaml,
        &[
            ("paid_static", PAID_STATIC),
            ("render", RENDER),
            ("ping", PING),
        ],
    );
    let config = load(&dir).unwrap_or_else(|e| panic!("{e}"));
    let server = start(config.clone()).await;
    (dir, config, server)
}

async fn get_text(url: &str) -> (u16, reqwest::header::HeaderMap, String) {
    let resp = client().get(url).send().await.expect("request");
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    (status, headers, resp.text().await.expect("body"))
}

fn assert_discovery_headers(h: &reqwest::header::HeaderMap, what: &str) {
    assert_eq!(h["cache-control"], "public, max-age=60", "{what}");
    assert_eq!(h["access-control-allow-origin"], "*", "{what}");
    assert!(
        h["access-control-expose-headers"]
            .to_str()
            .unwrap()
            .contains("PAYMENT-REQUIRED"),
        "{what}"
    );
}

#[tokio::test]
async fn well_known_lists_exactly_the_paid_routes() {
    let (_d, config, server) = start_with(NO_FACILITATOR).await;
    let (status, h, doc) = get_json(&server.url("/.well-known/x402")).await;
    assert_eq!(status, 200);
    assert_discovery_headers(&h, "well-known");
    assert_eq!(doc["version"], 1);
    let listed: BTreeSet<String> = doc["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    let mut expected = BTreeSet::new();
    for r in config.routes.iter().filter(|r| r.is_paid()) {
        for m in &r.methods {
            expected.insert(if *m == http::Method::GET {
                format!("https://api.paycall.test{}", r.path)
            } else {
                format!("{m} {}", r.path)
            });
        }
    }
    assert_eq!(listed, expected);
    assert!(listed.contains("POST /api/push") && listed.contains("POST /api/echo"));
    assert!(
        !listed.iter().any(|r| r.contains("ping")),
        "free routes are not listed"
    );
    let how = doc["instructions"].as_str().unwrap();
    assert!(
        how.contains("402") && how.contains("PAYMENT-SIGNATURE"),
        "{how}"
    );
    server.shutdown().await;
}

/// Follows a local `#/components/...` reference.
fn resolve<'a>(doc: &'a Value, v: &'a Value) -> &'a Value {
    match v.get("$ref").and_then(Value::as_str) {
        Some(r) => {
            let ptr = r.strip_prefix('#').expect("local ref");
            doc.pointer(ptr)
                .unwrap_or_else(|| panic!("dangling $ref {r}"))
        }
        None => v,
    }
}

fn num(v: Option<f64>) -> Value {
    match v {
        Some(f) if f.fract() == 0.0 => json!(f as i64),
        Some(f) => json!(f),
        None => Value::Null,
    }
}

#[tokio::test]
async fn openapi_documents_every_route_method_parameter_and_price() {
    let (_d, config, server) = start_with(NO_FACILITATOR).await;
    let (status, h, doc) = get_json(&server.url("/openapi.json")).await;
    assert_eq!(status, 200);
    assert_discovery_headers(&h, "openapi");
    assert_eq!(doc["openapi"], "3.1.0");
    assert_eq!(doc["info"]["title"], "paycall-test");
    assert_eq!(doc["info"]["version"], "1.0.0");
    let guidance = doc["info"]["x-guidance"].as_str().unwrap();
    assert!(guidance.contains("402") && guidance.contains("PAYMENT-SIGNATURE"));
    let servers: Vec<&str> = doc["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["url"].as_str().unwrap())
        .collect();
    assert_eq!(
        servers,
        vec!["https://api.paycall.test", "https://backup.paycall.test"]
    );

    let mut op_ids = BTreeSet::new();
    for route in &config.routes {
        let item = &doc["paths"][&route.path];
        assert!(item.is_object(), "{} missing", route.path);
        for m in &route.methods {
            let op = &item[m.as_str().to_ascii_lowercase()];
            let what = format!("{m} {}", route.path);
            assert!(op.is_object(), "{what} missing");
            assert!(
                op_ids.insert(op["operationId"].as_str().unwrap().to_string()),
                "{what}: duplicate operationId"
            );
            assert_eq!(op["summary"], route.summary.as_str(), "{what}");

            // inputs
            if paycall::pipeline::input::reads_body(m) {
                let media = &op["requestBody"]["content"]["application/json"];
                let schema = &media["schema"];
                assert_eq!(schema["type"], "object", "{what}");
                for p in &route.input {
                    let s = &schema["properties"][&p.name];
                    assert!(s.is_object(), "{what}: body field {}", p.name);
                    if p.ty != ParamType::Any {
                        assert_eq!(s["type"], p.ty.json_name(), "{what}: {}", p.name);
                    }
                }
                let required: BTreeSet<&str> = schema["required"]
                    .as_array()
                    .map(|a| a.iter().map(|v| v.as_str().unwrap()).collect())
                    .unwrap_or_default();
                let want: BTreeSet<&str> = route
                    .input
                    .iter()
                    .filter(|p| p.required)
                    .map(|p| p.name.as_str())
                    .collect();
                assert_eq!(required, want, "{what}");
                assert!(op.get("parameters").is_none(), "{what}");
            } else {
                let params = op["parameters"].as_array().cloned().unwrap_or_default();
                assert_eq!(params.len(), route.input.len(), "{what}");
                for p in &route.input {
                    let q = params
                        .iter()
                        .find(|q| q["name"] == p.name.as_str())
                        .unwrap_or_else(|| panic!("{what}: parameter {} missing", p.name));
                    assert_eq!(q["in"], "query");
                    assert_eq!(q["required"], p.required, "{what}: {}", p.name);
                    let s = if p.ty == ParamType::Object {
                        assert!(q.get("schema").is_none());
                        &q["content"]["application/json"]["schema"]
                    } else {
                        &q["schema"]
                    };
                    let expected_type = match p.ty {
                        ParamType::Any => "string",
                        t => t.json_name(),
                    };
                    assert_eq!(s["type"], expected_type, "{what}: {}", p.name);
                    assert_eq!(
                        s.get("minimum").cloned().unwrap_or(Value::Null),
                        num(p.minimum)
                    );
                    assert_eq!(
                        s.get("maximum").cloned().unwrap_or(Value::Null),
                        num(p.maximum)
                    );
                    if p.ty == ParamType::String {
                        assert_eq!(
                            s.get("maxLength").and_then(Value::as_u64),
                            p.max_length.map(|n| n as u64),
                            "{what}: {}",
                            p.name
                        );
                        assert_eq!(
                            s.get("minLength").and_then(Value::as_u64),
                            p.min_length.map(|n| n as u64)
                        );
                    }
                    assert_eq!(
                        s.get("pattern").and_then(Value::as_str),
                        p.pattern.as_ref().map(|r| r.as_str())
                    );
                    assert_eq!(
                        s.get("enum").cloned(),
                        p.enumeration.clone().map(Value::Array)
                    );
                    assert_eq!(s.get("default").cloned(), p.default.clone());
                    assert_eq!(s.get("format").and_then(Value::as_str), p.format.as_deref());
                }
            }

            // responses
            let responses = &op["responses"];
            for code in ["200", "400", "413"] {
                assert!(responses[code].is_object(), "{what}: {code}");
            }
            for code in ["400", "413"] {
                let schema = resolve(
                    &doc,
                    &responses[code]["content"]["application/json"]["schema"],
                );
                assert_eq!(schema["required"], json!(["error", "message"]), "{what}");
            }
            let info = &op["x-payment-info"];
            if let Some(price) = &route.price {
                assert!(
                    responses["402"]["headers"]["PAYMENT-REQUIRED"].is_object(),
                    "{what}"
                );
                assert_eq!(
                    info["price"],
                    json!({"mode": "fixed", "currency": "USD", "amount": price.usd}),
                    "{what}"
                );
                let x402 = &info["protocols"][0]["x402"];
                assert_eq!(x402["version"], 2);
                let nets: Vec<&str> = config
                    .payment
                    .accepts
                    .iter()
                    .map(|a| a.network.as_str())
                    .collect();
                assert_eq!(x402["networks"], json!(nets));
                for (i, a) in config.payment.accepts.iter().enumerate() {
                    let acc = &x402["accepts"][i];
                    assert_eq!(acc["network"], a.network.as_str());
                    assert_eq!(acc["asset"], a.asset.as_str());
                    assert_eq!(acc["payTo"], a.pay_to.as_str());
                    assert_eq!(acc["amount"], price.atomic[i].as_str(), "{what}");
                }
                let example = &responses["200"]["content"]["application/json"]["example"];
                if route.output_example.is_some() {
                    assert_eq!(example["source"], route.name.as_str());
                    assert_eq!(example["priced"]["amountUsd"], price.usd.as_str());
                    assert!(example["asOf"].is_string());
                }
            } else {
                assert!(info.is_null(), "{what}: a free route has no x-payment-info");
                assert!(responses.get("402").is_none(), "{what}");
            }
        }
    }
    // stage-declared statuses: count (502, 504) and unready (503) on /api/render only
    let render = &doc["paths"]["/api/render"]["get"]["responses"];
    for code in ["502", "503", "504"] {
        assert!(render[code].is_object(), "render {code}");
    }
    // echo's only 502 is the payment gate's (facilitator unreachable), not a work stage's
    let echo502 = doc["paths"]["/api/echo"]["get"]["responses"]["502"]["description"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        echo502.contains("facilitator") && !echo502.contains("count"),
        "{echo502}"
    );
    // echo: objects in the query are JSON text, the POST example is the demo input
    let echo = &doc["paths"]["/api/echo"];
    let fields = echo["get"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "fields")
        .unwrap();
    assert!(fields["description"]
        .as_str()
        .unwrap()
        .contains("16000 characters"));
    assert_eq!(
        echo["post"]["requestBody"]["content"]["application/json"]["example"],
        json!({"url": "https://example.com/", "fields": {"title": "h1"}})
    );
    assert_eq!(
        doc["paths"]["/api/echo"]["get"]["parameters"][0]["example"],
        "https://example.com/"
    );
    // demo twins: free GET operations, only for paid routes with a demo
    for name in ["echo", "render"] {
        let op = &doc["paths"][format!("/api/demo/{name}")]["get"];
        assert!(op.is_object(), "demo {name}");
        assert!(op.get("x-payment-info").is_none());
        assert!(op["responses"]["429"].is_object());
        let env = resolve(
            &doc,
            &op["responses"]["200"]["content"]["application/json"]["schema"],
        );
        assert!(env["required"]
            .as_array()
            .unwrap()
            .contains(&json!("paid_endpoint")));
    }
    assert!(doc["paths"].get("/api/demo/push").is_none());
    assert!(doc["paths"].get("/api/demo/ping").is_none());
    server.shutdown().await;
}

#[tokio::test]
async fn llms_txt_has_how_to_pay_and_a_curl_line_per_paid_route() {
    let (_d, config, server) = start_with(NO_FACILITATOR).await;
    let (status, h, text) = get_text(&server.url("/llms.txt")).await;
    assert_eq!(status, 200);
    assert_discovery_headers(&h, "llms.txt");
    assert!(h["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/markdown"));
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("# paycall-test"));
    assert!(
        text.lines().any(|l| l.starts_with("> ")),
        "blockquote summary"
    );
    for section in [
        "## How to pay",
        "## Paid routes",
        "## Free demo twins",
        "## Discovery",
    ] {
        assert!(text.contains(section), "{section}");
    }
    for needle in [
        "402",
        "PAYMENT-REQUIRED",
        "PAYMENT-SIGNATURE",
        "PAYMENT-RESPONSE",
        "eip155:8453",
        EVM_PAY_TO,
    ] {
        assert!(text.contains(needle), "{needle}");
    }
    let curls: Vec<&str> = text.lines().filter(|l| l.contains("`curl ")).collect();
    let paid: Vec<_> = config.routes.iter().filter(|r| r.is_paid()).collect();
    assert_eq!(curls.len(), paid.len(), "{curls:#?}");
    for r in paid {
        let url = format!("https://api.paycall.test{}", r.path);
        assert!(
            curls.iter().any(|l| l.contains(&format!("'{url}"))),
            "no curl line for {}",
            r.path
        );
        let price = format!("${} per call", r.price.as_ref().unwrap().usd);
        assert!(
            text.lines()
                .any(|l| l.contains(&format!("[{}]", r.path)) && l.contains(&price)),
            "{} with its price",
            r.path
        );
    }
    let echo = curls.iter().find(|l| l.contains("/api/echo")).unwrap();
    assert!(
        echo.contains("url=https%3A%2F%2Fexample.com%2F")
            && echo.contains("fields=%7B%22title%22%3A%22h1%22%7D"),
        "GET with the demo input: {echo}"
    );
    let push = curls.iter().find(|l| l.contains("/api/push")).unwrap();
    assert!(
        push.contains("-X POST") && push.contains(r#"-d '{"text":"hello"}'"#),
        "{push}"
    );
    assert!(
        text.contains("`n` (integer, optional, 1 to 5, default 3)"),
        "parameters with bounds"
    );
    assert!(text.contains("https://api.paycall.test/api/demo/echo"));
    assert!(text.contains("https://api.paycall.test/openapi.json"));
    assert!(!text.contains("/api/demo/push"), "push has no demo");
    server.shutdown().await;
}

#[tokio::test]
async fn status_reports_facilitator_and_route_readiness_and_caches_the_check() {
    let fac = fake_facilitator().await;
    let (_d, _config, server) = start_with(&fac.url).await;
    let (status, h, doc) = get_json(&server.url("/status")).await;
    assert_eq!(status, 200);
    assert_discovery_headers(&h, "status");
    let f = &doc["facilitator"];
    assert_eq!(f["reachable"], true, "{doc}");
    assert_eq!(f["url"], fac.url.as_str());
    assert_eq!(
        f["networks"],
        json!(["eip155:8453", "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"])
    );
    assert!(f["latencyMs"].is_u64() && f["checkedAt"].is_string());
    assert!(f.get("error").is_none());
    assert_eq!(doc["service"], "paycall-test");
    assert_eq!(doc["version"], "1.0.0");
    assert!(doc["uptimeSeconds"].is_u64());
    assert!(chrono::DateTime::parse_from_rfc3339(doc["startedAt"].as_str().unwrap()).is_ok());
    let routes = doc["routes"].as_array().unwrap();
    assert_eq!(routes.len(), 4);
    let render = routes.iter().find(|r| r["name"] == "render").unwrap();
    assert_eq!(render["ready"], false);
    assert_eq!(render["reason"], "unready: chromium missing");
    assert_eq!(render["price"], "$0.005");
    assert_eq!(render["pipeline"], "render");
    let echo = routes.iter().find(|r| r["name"] == "echo").unwrap();
    assert_eq!(echo["ready"], true);
    assert!(echo.get("reason").is_none());
    let ping = routes.iter().find(|r| r["name"] == "ping").unwrap();
    assert_eq!(ping["price"], Value::Null);
    // A route that cannot serve does not stop the service taking paid calls: `ok` is about the
    // config and the facilitator, the route is listed under `degraded` with its reason.
    assert_eq!(doc["ok"], true, "{doc}");
    assert_eq!(
        doc["degraded"],
        json!([{"path": "/api/render", "name": "render", "reason": "unready: chromium missing"}])
    );
    // the check is reused: more /status calls do not reach the facilitator again
    for _ in 0..3 {
        let (_, _, again) = get_json(&server.url("/status")).await;
        assert_eq!(again["facilitator"]["checkedAt"], f["checkedAt"]);
    }
    // one check for /status, plus the server's startup warm-up of /supported (Solana feePayer)
    assert_eq!(fac.hits.load(std::sync::atomic::Ordering::SeqCst), 2);
    server.shutdown().await;
}

/// The README's own run: the shipped routes.yaml, no search key. Before, /status said
/// `ok: false` for it although every paid call could be taken.
#[tokio::test]
async fn status_is_ok_on_the_shipped_config_without_a_search_key() {
    let fac = fake_facilitator().await;
    let routes = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("routes.yaml");
    let fac_url = fac.url.clone();
    let env = move |k: &str| match k {
        "PAYCALL_EVM_PAY_TO" => Some(EVM_PAY_TO.to_string()),
        "PAYCALL_SOLANA_PAY_TO" => Some("FYA23SLFVpETuY13UnwTDJA9W6ipiL1sKXd6XJUhViA1".to_string()),
        "PAYCALL_LEDGER_URL" => Some("sqlite::memory:".to_string()),
        "PAYCALL_FACILITATOR_URL" => Some(fac_url.clone()),
        _ => None,
    };
    let config = paycall::config::load_with_env(&routes, &env).unwrap_or_else(|e| panic!("{e}"));
    let server = start(config).await;
    let (status, _, doc) = get_json(&server.url("/status")).await;
    server.shutdown().await;
    assert_eq!(status, 200);
    assert_eq!(doc["ok"], true, "{doc}");
    let degraded = doc["degraded"].as_array().expect("degraded is a list");
    for d in degraded {
        assert!(d["path"].is_string() && d["name"].is_string(), "{d}");
        assert!(!d["reason"].as_str().unwrap().is_empty(), "{d}");
        let route = doc["routes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["path"] == d["path"])
            .unwrap();
        assert_eq!(route["ready"], false, "{route}");
    }
    if std::env::var_os("BRAVE_API_KEY").is_none() {
        let search = degraded
            .iter()
            .find(|d| d["path"] == "/api/search")
            .unwrap_or_else(|| panic!("search listed as degraded: {doc}"));
        assert!(
            search["reason"].as_str().unwrap().contains("BRAVE_API_KEY"),
            "{search}"
        );
    }
}

#[tokio::test]
async fn status_says_unreachable_when_nothing_listens() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let (_d, _config, server) = start_with(&format!("http://127.0.0.1:{port}/")).await;
    let t = Instant::now();
    let (status, _, doc) = get_json(&server.url("/status")).await;
    let took = t.elapsed();
    assert_eq!(status, 200);
    assert_eq!(doc["facilitator"]["reachable"], false, "{doc}");
    assert_eq!(doc["facilitator"]["networks"], json!([]));
    assert!(doc["facilitator"]["error"]
        .as_str()
        .unwrap()
        .contains("connection"));
    assert_eq!(doc["ok"], false, "no facilitator, no paid calls");
    // a refused connection must not wait for the 3 s deadline
    assert!(took < Duration::from_secs(3), "took {took:?}");
    server.shutdown().await;
}

#[tokio::test]
async fn status_gives_up_on_a_silent_facilitator_at_its_deadline() {
    // accepts connections and never answers
    let (listener, addr) = support::net::listen().await;
    let hold = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = listener.accept().await {
            held.push(s);
        }
    });
    let (_d, _config, server) = start_with(&format!("http://{addr}/")).await;
    let t = Instant::now();
    let (status, _, doc) = get_json(&server.url("/status")).await;
    let took = t.elapsed();
    assert_eq!(status, 200);
    assert_eq!(doc["facilitator"]["reachable"], false);
    assert!(
        doc["facilitator"]["error"]
            .as_str()
            .unwrap()
            .contains("within 3 s"),
        "{doc}"
    );
    assert!(
        took < Duration::from_secs(6),
        "bounded by the 3 s deadline: {took:?}"
    );
    hold.abort();
    server.shutdown().await;
}

#[tokio::test]
async fn discovery_routes_answer_get_and_head_only() {
    let (_d, _config, server) = start_with(NO_FACILITATOR).await;
    for path in ["/.well-known/x402", "/openapi.json", "/llms.txt"] {
        let resp = client().post(server.url(path)).send().await.unwrap();
        assert_eq!(resp.status().as_u16(), 405, "{path}");
        assert_eq!(resp.headers()["allow"], "GET, HEAD, OPTIONS");
        let resp = client().head(server.url(path)).send().await.unwrap();
        assert_eq!(resp.status().as_u16(), 200, "{path}");
        assert!(resp.text().await.unwrap().is_empty());
    }
    server.shutdown().await;
}
