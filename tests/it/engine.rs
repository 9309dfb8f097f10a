//! The engine through the real server: chain-building errors located at file:line, and the
//! common HTTP behaviour of every route (success stamp, 405, 404, CORS preflight, 413, 400,
//! 500 on a stage panic, graceful shutdown).

use crate::support;

use std::time::Duration;
use support::server::*;

fn routes(extra: &str) -> String {
    format!(
        "{}routes:\n{extra}",
        service_yaml(NO_FACILITATOR, 30, 10, &[])
    )
}

const FREE: &str = r#"  - path: /api/ping
    methods: [GET]
    summary: Liveness
    pipeline: ping
    input:
      - name: n
        type: integer
        minimum: 1
        maximum: 5
        default: 1
        description: How many pongs
  - path: /api/echo
    methods: [POST]
    summary: Echo
    pipeline: ping
    max_request_bytes: 200
    input:
      - name: text
        type: string
        required: true
        max_length: 50
        description: Some text
  - path: /api/slow
    methods: [GET]
    summary: Slow answer
    pipeline: slow
  - path: /api/buggy
    methods: [GET]
    summary: A stage with a bug
    pipeline: buggy
"#;

const PING: &str =
    "name: ping\nstages:\n  - stage: static_reply\n    with:\n      body: { pong: true }\n";
const SLOW: &str = "name: slow\nstages:\n  - stage: static_reply\n    with:\n      body: { slow: true }\n      delay_ms: 800\n";
const BUGGY: &str = "name: buggy\nstages:\n  - stage: panic\n";

/// The single error whose message contains `needle`, with the text of the line it points at.
fn located(dir: &ConfigDir, needle: &str) -> (paycall::config::ConfigError, String) {
    let err = match load(dir) {
        Ok(cfg) => match build(cfg) {
            Ok(_) => panic!("config accepted; expected an error with `{needle}`"),
            Err(e) => e,
        },
        Err(e) => e,
    };
    let e = err
        .0
        .iter()
        .find(|e| e.message.contains(needle))
        .unwrap_or_else(|| panic!("no error with `{needle}` in:\n{err}"))
        .clone();
    let line = dir.line_of(&e.file, e.line);
    assert!(!e.hint.is_empty(), "every error says what to do: {e}");
    (e, line)
}

const PAID_ROUTE: &str = r#"  - path: /api/paid
    methods: [GET]
    price_usd: "0.01"
    summary: Paid
    pipeline: p
"#;

#[test]
fn unknown_stage_is_located_in_the_pipeline_file() {
    let dir = write_config(
        &routes("  - path: /api/x\n    methods: [GET]\n    summary: x\n    pipeline: p\n"),
        &[("p", "name: p\nstages:\n  - stage: static_replyy\n")],
    );
    let (e, line) = located(&dir, "unknown stage `static_replyy`");
    assert_eq!(e.file, dir.pipeline_path("p"));
    assert!(line.contains("stage: static_replyy"), "{line}");
    assert!(
        e.hint.contains("static_reply"),
        "hint lists the registered stages: {e}"
    );
}

#[test]
fn bad_stage_parameters_are_located_at_their_with_block() {
    let dir = write_config(
        &routes("  - path: /api/x\n    methods: [GET]\n    summary: x\n    pipeline: p\n"),
        &[(
            "p",
            "name: p\nstages:\n  - stage: static_reply\n    with: { status: 200, bodyy: 1 }\n",
        )],
    );
    let (e, line) = located(&dir, "bad parameters");
    assert!(e.message.contains("bodyy"), "{e}");
    assert!(line.contains("bodyy"), "{line}");
}

#[test]
fn settle_before_bill_is_refused() {
    let dir = write_config(
        &routes(PAID_ROUTE),
        &[(
            "p",
            "name: p\nstages:\n  - stage: payment_gate\n  - stage: static_reply\n  - stage: settle\n  - stage: bill\n",
        )],
    );
    let (e, line) = located(&dir, "needs `bill`");
    assert!(e.message.contains("settle"), "{e}");
    assert!(line.contains("stage: settle"), "{line}");
}

#[test]
fn work_stage_after_bill_is_refused() {
    let dir = write_config(
        &routes("  - path: /api/x\n    methods: [GET]\n    summary: x\n    pipeline: p\n"),
        &[(
            "p",
            "name: p\nstages:\n  - stage: bill\n  - stage: static_reply\n",
        )],
    );
    let (e, line) = located(&dir, "after a finishing stage");
    assert_eq!(e.line, 4, "the stage after bill: {e}");
    assert!(line.contains("stage: static_reply"), "{line}");
}

#[test]
fn paid_route_without_payment_gate_is_refused_at_its_pipeline_line() {
    let dir = write_config(
        &routes(PAID_ROUTE),
        &[(
            "p",
            "name: p\nstages:\n  - stage: static_reply\n  - stage: bill\n  - stage: settle\n",
        )],
    );
    let (e, line) = located(&dir, "lacks payment_gate");
    assert_eq!(e.file, dir.routes);
    assert!(line.trim() == "pipeline: p", "{line}");
}

#[test]
fn caps_for_a_stage_outside_the_pipeline_are_refused() {
    let dir = write_config(
        &routes(
            "  - path: /api/x\n    methods: [GET]\n    summary: x\n    pipeline: ping\n    caps:\n      fetch: { max_bytes: 10 }\n",
        ),
        &[("ping", PING)],
    );
    let (e, line) = located(&dir, "has caps for `fetch`");
    assert_eq!(e.file, dir.routes);
    assert!(line.contains("fetch: { max_bytes: 10 }"), "{line}");
}

#[test]
fn invalid_demo_input_is_refused_at_startup() {
    let dir = write_config(
        &routes(
            r#"  - path: /api/paid
    methods: [GET]
    price_usd: "0.01"
    summary: Paid
    pipeline: p
    input:
      - name: n
        type: integer
        maximum: 5
        description: a small number
    demo:
      input: { n: 50 }
      ttl_s: 60
      describe: n = 50
"#,
        ),
        &[(
            "p",
            "name: p\nstages:\n  - stage: payment_gate\n  - stage: static_reply\n  - stage: bill\n  - stage: settle\n",
        )],
    );
    let (e, line) = located(&dir, "demo input of /api/paid");
    assert!(e.message.contains("at most 5"), "{e}");
    assert!(line.contains("input: { n: 50 }"), "{line}");
}

async fn free_server() -> (ConfigDir, TestServer) {
    serve_yaml(
        &routes(FREE),
        &[("ping", PING), ("slow", SLOW), ("buggy", BUGGY)],
    )
    .await
}

#[tokio::test]
async fn free_route_answers_200_with_source_and_as_of() {
    let (_dir, server) = free_server().await;
    let (status, headers, body) = get_json(&server.url("/api/ping?n=2")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["pong"], true);
    assert_eq!(body["source"], "ping");
    assert!(
        body.get("priced").is_none(),
        "a free route has no priced block"
    );
    let as_of = body["asOf"].as_str().expect("asOf");
    assert!(
        chrono::DateTime::parse_from_rfc3339(as_of).is_ok(),
        "asOf is ISO 8601: {as_of}"
    );
    assert_eq!(headers["access-control-allow-origin"], "*");
    assert!(headers.contains_key("x-request-id"));
    server.shutdown().await;
}

#[tokio::test]
async fn wrong_method_is_405_json_with_allow() {
    let (_dir, server) = free_server().await;
    let resp = client()
        .delete(server.url("/api/ping"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 405);
    assert_eq!(resp.headers()["allow"], "GET, OPTIONS");
    let body: serde_json::Value = json_of(resp).await;
    assert_eq!(body["error"], "method_not_allowed");
    assert!(body["message"].as_str().unwrap().contains("GET"));
    server.shutdown().await;
}

#[tokio::test]
async fn unknown_path_is_404_json() {
    let (_dir, server) = free_server().await;
    let (status, headers, body) = get_json(&server.url("/api/nothing-here")).await;
    assert_eq!(status, 404);
    assert_eq!(body["error"], "not_found");
    assert!(body["message"].as_str().unwrap().contains("/openapi.json"));
    assert_eq!(headers["content-type"], "application/json");
    server.shutdown().await;
}

#[tokio::test]
async fn cors_preflight_is_204_with_allow_and_expose_headers() {
    let (_dir, server) = free_server().await;
    for path in ["/api/ping", "/api/demo/x", "/openapi.json", "/nowhere"] {
        let resp = client()
            .request(reqwest::Method::OPTIONS, server.url(path))
            .header("origin", "https://agent.example")
            .header("access-control-request-method", "GET")
            .header("access-control-request-headers", "payment-signature")
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), 204, "{path}");
        let h = resp.headers();
        assert_eq!(h["access-control-allow-origin"], "*", "{path}");
        let allow = h["access-control-allow-headers"].to_str().unwrap();
        assert!(allow.contains("PAYMENT-SIGNATURE"), "{path}: {allow}");
        let expose = h["access-control-expose-headers"].to_str().unwrap();
        assert!(
            expose.contains("PAYMENT-REQUIRED") && expose.contains("PAYMENT-RESPONSE"),
            "{path}: {expose}"
        );
        assert!(h["access-control-allow-methods"]
            .to_str()
            .unwrap()
            .contains("POST"));
    }
    server.shutdown().await;
}

#[tokio::test]
async fn body_over_the_route_cap_is_413_json() {
    let (_dir, server) = free_server().await;
    // over /api/echo's 200 bytes, under the server's largest cap
    let body = format!("{{\"text\": \"{}\"}}", "a".repeat(300));
    let resp = client()
        .post(server.url("/api/echo"))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 413);
    let v: serde_json::Value = json_of(resp).await;
    assert_eq!(v["error"], "request_too_large");
    assert!(v["message"].as_str().unwrap().contains("200 bytes"));
    // over every cap: refused while reading
    let resp = client()
        .post(server.url("/api/echo"))
        .body(vec![b' '; 200_000])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 413);
    // exactly at a valid small body: fine
    let resp = client()
        .post(server.url("/api/echo"))
        .body(r#"{"text": "hi"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    server.shutdown().await;
}

#[tokio::test]
async fn bad_input_is_400_json() {
    let (_dir, server) = free_server().await;
    for (url, code, words) in [
        ("/api/ping?n=9", "invalid_parameter", "at most 5"),
        ("/api/ping?n=two", "invalid_parameter", "integer"),
    ] {
        let (status, _, body) = get_json(&server.url(url)).await;
        assert_eq!(status, 400, "{url}: {body}");
        assert_eq!(body["error"], code, "{url}");
        assert!(
            body["message"].as_str().unwrap().contains(words),
            "{url}: {body}"
        );
    }
    let resp = client()
        .post(server.url("/api/echo"))
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 400);
    let v: serde_json::Value = json_of(resp).await;
    assert_eq!(v["error"], "invalid_body");
    let resp = client()
        .post(server.url("/api/echo"))
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 400);
    let v: serde_json::Value = json_of(resp).await;
    assert_eq!(v["error"], "missing_parameter");
    assert!(v["message"].as_str().unwrap().contains("text"));
    server.shutdown().await;
}

#[tokio::test]
async fn a_panicking_stage_answers_500_json_and_the_server_lives_on() {
    let (_dir, server) = free_server().await;
    let (status, _, body) = get_json(&server.url("/api/buggy")).await;
    assert_eq!(status, 500);
    assert_eq!(body["error"], "internal_error");
    let (status, _, _) = get_json(&server.url("/api/ping")).await;
    assert_eq!(status, 200, "the next request is served");
    server.shutdown().await;
}

#[tokio::test]
async fn graceful_shutdown_lets_the_in_flight_request_finish() {
    let (_dir, mut server) = free_server().await;
    let url = server.url("/api/slow");
    let in_flight = tokio::spawn(async move { client().get(url).send().await });
    // the request is inside its 800 ms stage when the shutdown starts
    tokio::time::sleep(Duration::from_millis(250)).await;
    server.begin_shutdown();
    let resp = in_flight
        .await
        .unwrap()
        .expect("the in-flight request gets its answer");
    assert_eq!(resp.status().as_u16(), 200);
    let body: serde_json::Value = json_of(resp).await;
    assert_eq!(body["slow"], true);
    let addr = server.addr;
    server.shutdown().await;
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "no new connections after shutdown"
    );
}
