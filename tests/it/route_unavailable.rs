//! A paid route that cannot work now asks for no payment: the shipped config without a search
//! key answers /api/search with 503 + Retry-After before any challenge (unpaid, HEAD, plain
//! OPTIONS, and with a payment attached, which never reaches the facilitator), and says so in
//! /status, /openapi.json, /llms.txt and /.well-known/x402. Routes that can work keep their 402.

use crate::support;

use std::sync::atomic::Ordering;
use support::server::*;

#[tokio::test]
async fn a_route_without_its_provider_key_answers_503_before_any_challenge() {
    if std::env::var_os("BRAVE_API_KEY").is_some() {
        panic!("this test needs BRAVE_API_KEY unset (the shipped search provider is Brave)");
    }
    let fac = fake_facilitator().await;
    let config = shipped_config_on(&fac.url);
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
    let llms = get_text(&server.url("/llms.txt")).await;
    let search = llms_entry(&llms, "/api/search").expect("search in llms.txt");
    assert!(search.contains("Unavailable now"), "{search}");
    server.shutdown().await;
}

/// The shipped config on a fake facilitator, with startup's network verdicts `checks` recorded
/// under `leave_out` (what `paycall serve` does before it listens).
async fn with_networks_left_out(left_out: &[&str]) -> (FakeFacilitator, TestServer) {
    use paycall::payment::readiness::{NetworkCheck, Readiness};
    let fac = fake_facilitator().await;
    let config = shipped_config_on(&fac.url);
    let checks = config
        .payment
        .accepts
        .iter()
        .map(|a| NetworkCheck {
            network: a.network.clone(),
            name: a.name.clone(),
            pay_to: a.pay_to.clone(),
            facilitator: if left_out.contains(&a.name.as_str()) {
                "not_listed"
            } else {
                "listed"
            },
            fee_payer: None,
            token_account: None,
            problem: left_out
                .contains(&a.name.as_str())
                .then(|| "the facilitator does not list it".to_string()),
            warning: None,
        })
        .collect();
    let app = build(config).unwrap_or_else(|e| panic!("{e}"));
    app.services
        .get::<Readiness>()
        .expect("readiness service")
        .record(checks, paycall::config::UnsupportedNetwork::LeaveOut);
    let server = start_app(app).await;
    (fac, server)
}

#[tokio::test]
async fn discovery_lists_the_networks_offered_and_none_left_means_503() {
    // Solana left out: discovery offers Base only.
    let (_fac, server) = with_networks_left_out(&["solana"]).await;
    let (_, _, openapi) = get_json(&server.url("/openapi.json")).await;
    let x402 = &openapi["paths"]["/api/http"]["get"]["x-payment-info"]["protocols"][0]["x402"];
    assert_eq!(
        x402["networks"],
        serde_json::json!(["eip155:8453"]),
        "{x402}"
    );
    assert_eq!(x402["accepts"].as_array().unwrap().len(), 1, "{x402}");
    let llms = client()
        .get(server.url("/llms.txt"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        !llms.contains("solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"),
        "{llms}"
    );
    let r = client()
        .get(server.url("/api/http?url=https://example.com/"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 402);
    server.shutdown().await;

    // No network the facilitator settles: no paid route can be paid, none asks to be.
    let (fac, server) = with_networks_left_out(&["base", "solana"]).await;
    let r = client()
        .get(server.url("/api/http?url=https://example.com/"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 503);
    assert_eq!(r.headers()["retry-after"], "60");
    let b = json_of(r).await;
    assert!(
        b["reason"]
            .as_str()
            .unwrap()
            .contains("none of the offered networks"),
        "{b}"
    );
    let (_, _, status) = get_json(&server.url("/status")).await;
    assert_eq!(status["degraded"].as_array().unwrap().len(), 14, "{status}");
    assert_eq!(fac.payment_hits.load(Ordering::SeqCst), 0);
    server.shutdown().await;
}
