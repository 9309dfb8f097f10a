//! /mcp's framing through the real server, no payment stack: what a malformed, foreign or
//! unsupported request gets, and the free methods. Paid calls are in tests/it/mcp_pay.rs.

use crate::support;

use serde_json::{json, Value};
use support::server::*;

const ROUTES: &str = r#"routes:
  - path: /api/echo
    methods: [GET]
    price_usd: "0.01"
    summary: Echo things
    description: Answers a fixed body.
    pipeline: paid_static
    input:
      - { name: url, type: string, required: true, format: uri, max_length: 2048, description: A URL, example: "https://example.com/" }
    demo:
      input: { url: "https://example.com/" }
      ttl_s: 600
      describe: an echo
  - path: /api/ping
    methods: [GET]
    summary: Free ping
    pipeline: ping
"#;

async fn post(
    url: &str,
    body: &str,
    headers: &[(&str, &str)],
) -> (u16, reqwest::header::HeaderMap, Value) {
    let mut req = client()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_string());
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = req.send().await.expect("request");
    let status = resp.status().as_u16();
    let h = resp.headers().clone();
    let text = resp.text().await.unwrap_or_default();
    (
        status,
        h,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

#[tokio::test]
async fn mcp_answers_the_free_methods_and_refuses_what_it_must() {
    let fac = fake_facilitator().await;
    let yaml = format!("{}{ROUTES}", service_yaml(&fac.url, 30, 10, &[]));
    let (_dir, srv) = serve_yaml(&yaml, &[("paid_static", PAID_STATIC), ("ping", PING)]).await;
    let mcp = srv.url("/mcp");

    let (s, _, b) = post(
        &mcp,
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#,
        &[],
    )
    .await;
    assert_eq!(s, 200);
    assert_eq!(b["id"], 1);
    assert_eq!(b["result"]["protocolVersion"], "2025-06-18");
    assert!(b["result"]["capabilities"]["tools"].is_object());
    let (s, _, b) = post(
        &mcp,
        r#"{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2099-01-01"}}"#,
        &[],
    )
    .await;
    assert_eq!(
        (s, b["result"]["protocolVersion"].clone()),
        (200, json!("2025-11-25"))
    );

    let (s, _, b) = post(
        &mcp,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        &[],
    )
    .await;
    assert_eq!((s, b), (202, json!("")));
    let (s, _, b) = post(
        &mcp,
        r#"{"jsonrpc":"2.0","id":"p","method":"ping"}"#,
        &[("mcp-protocol-version", "2025-11-25")],
    )
    .await;
    assert_eq!((s, b["result"].clone()), (200, json!({})));

    let (_, _, b) = post(
        &mcp,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#,
        &[],
    )
    .await;
    let names: Vec<&str> = b["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(
        names,
        ["echo", "echo_demo"],
        "paid routes and their demo twins, no free route"
    );

    // An unpaid call: the PaymentRequired as the tool result; the fake facilitator sees nothing.
    let (_, _, b) = post(
        &mcp,
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":{"url":"https://example.com/"}}}"#,
        &[],
    )
    .await;
    assert_eq!(b["result"]["isError"], true);
    assert_eq!(b["result"]["structuredContent"]["x402Version"], 2);
    assert_eq!(
        b["result"]["structuredContent"]["resource"]["url"],
        "mcp://api.paycall.test/tools/echo"
    );
    // The extension binding only when advertised.
    let (_, _, b) = post(
        &mcp,
        r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":{},"_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"org.x402/payment":{}}}}}}"#,
        &[],
    )
    .await;
    assert_eq!(b["result"]["resultType"], "payment_required");
    assert_eq!(b["result"]["paymentRequired"]["x402Version"], 2);

    // JSON-RPC errors, never a panic.
    let code = |b: &Value| b["error"]["code"].as_i64();
    let (s, _, b) = post(&mcp, "{not json", &[]).await;
    assert_eq!((s, code(&b)), (400, Some(-32700)));
    let (s, _, b) = post(&mcp, r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#, &[]).await;
    assert_eq!((s, code(&b)), (400, Some(-32600)));
    let (s, _, b) = post(
        &mcp,
        r#"{"jsonrpc":"2.0","id":6,"method":"resources/list"}"#,
        &[],
    )
    .await;
    assert_eq!(
        (s, code(&b), b["id"].clone()),
        (200, Some(-32601), json!(6))
    );
    let (_, _, b) = post(
        &mcp,
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"nope"}}"#,
        &[],
    )
    .await;
    assert_eq!(code(&b), Some(-32602));
    let (_, _, b) = post(&mcp, r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"echo","arguments":[1]}}"#, &[]).await;
    assert_eq!(code(&b), Some(-32602));

    // Origin, revision header, methods, size.
    let (s, _, _) = post(
        &mcp,
        r#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#,
        &[("origin", "https://evil.example")],
    )
    .await;
    assert_eq!(s, 403);
    let (s, _, _) = post(
        &mcp,
        r#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#,
        &[("origin", "http://localhost:6274")],
    )
    .await;
    assert_eq!(s, 200);
    let (s, _, _) = post(
        &mcp,
        r#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#,
        &[("mcp-protocol-version", "1999-01-01")],
    )
    .await;
    assert_eq!(s, 400);
    let r = client().get(&mcp).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 405);
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":10,"method":"ping","params":{{"x":"{}"}}}}"#,
        "a".repeat(2_000_000)
    );
    let (s, _, b) = post(&mcp, &big, &[]).await;
    assert_eq!((s, code(&b)), (413, Some(-32600)));
    assert_eq!(
        fac.payment_hits.load(std::sync::atomic::Ordering::SeqCst),
        0
    );
}
