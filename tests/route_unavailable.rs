//! A paid route that cannot work now asks for no payment: the shipped config without a search
//! key answers /api/search with 503 + Retry-After before any challenge (unpaid, HEAD, plain
//! OPTIONS, and with a payment attached, which never reaches the facilitator), and says so in
//! /status, /openapi.json, /llms.txt and /.well-known/x402. Routes that can work keep their 402.

#[path = "support/server.rs"]
mod server_support;

use server_support::*;
use std::sync::atomic::Ordering;

#[tokio::test]
async fn a_route_without_its_provider_key_answers_503_before_any_challenge() {
    if std::env::var_os("BRAVE_API_KEY").is_some() {
        panic!("this test needs BRAVE_API_KEY unset (the shipped search provider is Brave)");
    }
    let fac = fake_facilitator().await;
    let routes = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("routes.yaml");
    let fac_url = fac.url.clone();
    let env = move |k: &str| match k {
        "PAYCALL_FACILITATOR_URL" => Some(fac_url.clone()),
        other => test_env(other),
    };
    let config = paycall::config::load_with_env(&routes, &env).unwrap_or_else(|e| panic!("{e}"));
    let server = start(config).await;
    let c = client();
    let url = server.url("/api/search?q=x402");
    let before = fac.payment_hits.load(Ordering::SeqCst);

    for (method, paid) in [
        ("GET", false),
        ("HEAD", false),
        ("OPTIONS", false),
        ("GET", true),
    ] {
        let mut req = c.request(method.parse().unwrap(), &url);
        if paid {
            // Whatever it carries, it is not looked at: nothing is verified for this route now.
            req = req.header("payment-signature", "eyJ4NDAyVmVyc2lvbiI6Mn0=");
        }
        let r = req.send().await.unwrap();
        assert_eq!(r.status().as_u16(), 503, "{method} paid={paid}");
        assert_eq!(r.headers()["retry-after"], "60", "{method}");
        assert!(
            r.headers().get("payment-required").is_none(),
            "{method}: no challenge"
        );
        if method == "GET" {
            let b = json_of(r).await;
            assert_eq!(b["error"], "route_unavailable", "{b}");
            assert!(
                b["reason"].as_str().unwrap().contains("BRAVE_API_KEY"),
                "{b}"
            );
        }
    }
    assert_eq!(
        fac.payment_hits.load(Ordering::SeqCst),
        before,
        "no facilitator call"
    );

    // The same route as an MCP tool: no PaymentRequired, the same 503 reason, even with a
    // payment in `_meta` (never verified).
    for meta in ["", r#","_meta":{"x402/payment":{"x402Version":2}}"#] {
        let call = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"search","arguments":{{"q":"x402"}}{meta}}}}}"#
        );
        let r = c
            .post(server.url("/mcp"))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(call)
            .send()
            .await
            .unwrap();
        let b = json_of(r).await;
        assert_eq!(b["result"]["isError"], true, "{b}");
        assert_eq!(
            b["result"]["structuredContent"]["error"], "route_unavailable",
            "{b}"
        );
        assert!(b["result"]["structuredContent"]
            .get("x402Version")
            .is_none());
    }
    assert_eq!(
        fac.payment_hits.load(Ordering::SeqCst),
        before,
        "no facilitator call from MCP either"
    );

    // A route that can work still asks for its payment.
    let r = c
        .get(server.url("/api/http?url=https://example.com/"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 402);

    // /status and every discovery document say the same.
    let (_, _, status) = get_json(&server.url("/status")).await;
    assert!(
        status["degraded"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["path"] == "/api/search"),
        "{status}"
    );
    let (_, _, openapi) = get_json(&server.url("/openapi.json")).await;
    let op = &openapi["paths"]["/api/search"]["get"];
    assert!(
        op["x-unavailable"]["reason"]
            .as_str()
            .unwrap()
            .contains("BRAVE_API_KEY"),
        "{op}"
    );
    assert!(op["responses"]["503"].is_object(), "503 documented: {op}");
    assert!(openapi["paths"]["/api/http"]["get"]
        .get("x-unavailable")
        .is_none());
    let (_, _, well_known) = get_json(&server.url("/.well-known/x402")).await;
    assert!(
        well_known["unavailable"]
            .as_array()
            .unwrap()
            .iter()
            .any(|u| u["path"] == "/api/search"),
        "{well_known}"
    );
    let llms = c
        .get(server.url("/llms.txt"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let search = llms
        .split("- [/api/search]")
        .nth(1)
        .expect("search in llms.txt");
    let search = search.split("\n- [").next().unwrap();
    assert!(search.contains("Unavailable now"), "{search}");
    server.shutdown().await;
}
