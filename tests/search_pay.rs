//! /api/search paid for real with the SHIPPED routes.yaml and pipeline: a local chain, the
//! official facilitator and client (tests/e2e), the mock search provider (fixtures/search/),
//! result pages on 127.0.0.1 and a canary on 127.0.0.2.
//!
//! Billing rules, each checked against what the facilitator saw: charged (settled once, the
//! price moved on-chain) when at least one result comes back, even with failed pages; never
//! settled for 400 (before the facilitator is even asked), 404 no results, and 503 provider
//! unavailable / unconfigured / rate-limited / erroring.

#[path = "support/search.rs"]
mod search_support;
#[path = "support/server.rs"]
mod server_support;
#[path = "support/stack.rs"]
mod stack;
#[path = "support/upstream.rs"]
mod upstream;

use serde_json::{json, Value};
use std::path::Path;

use paycall::config;
use paycall::server;
use search_support::{BRAVE_KEY, SERPER_KEY};
use stack::LocalStack;

const SOL_PLACEHOLDER: &str = "11111111111111111111111111111111";

/// paycall with the shipped config, pointed at the stack and at the mock provider (`base` for
/// brave and serper, `searxng` for searxng); the search route's caps replaced by `caps`.
async fn paycall_for(
    stack: &LocalStack,
    base: &str,
    searxng: &str,
    caps: Value,
) -> server_support::TestServer {
    let routes = Path::new(env!("CARGO_MANIFEST_DIR")).join("routes.yaml");
    let fac = stack.facilitator_url.clone();
    let rpc = stack.rpc_url.clone();
    let pay_to = stack.pay_to.clone();
    let (b, s) = (base.to_string(), searxng.to_string());
    let env = move |k: &str| -> Option<String> {
        match k {
            "PAYCALL_FACILITATOR_URL" => Some(fac.clone()),
            "PAYCALL_EVM_PAY_TO" => Some(pay_to.clone()),
            "PAYCALL_SOLANA_PAY_TO" => Some(SOL_PLACEHOLDER.into()),
            "PAYCALL_ALLOW_CIDRS" => Some("127.0.0.1/32".into()),
            "PAYCALL_LEDGER_URL" => Some("sqlite::memory:".into()),
            "PAYCALL_UPSTREAM_BASE_RPC" => Some(rpc.clone()),
            "PAYCALL_UPSTREAM_BRAVE" | "PAYCALL_UPSTREAM_SERPER" => Some(b.clone()),
            "PAYCALL_UPSTREAM_SEARXNG" => Some(s.clone()),
            _ => None,
        }
    };
    let mut cfg = config::load_with_env(&routes, &env).unwrap_or_else(|e| panic!("{e}"));
    let route = cfg.routes.iter_mut().find(|r| r.name == "search").unwrap();
    route.caps.get_mut("search").unwrap().0 = caps;
    let services = server::services::build(&cfg).expect("services");
    let app = server::build_app(cfg, services).unwrap_or_else(|e| panic!("{e}"));
    server_support::start_app(app).await
}

use server_support::enc;

use server_support::send_signed;

fn decode_b64_json(v: &str) -> Value {
    use base64::Engine;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(v.trim())
        .expect("base64");
    serde_json::from_slice(&bytes).expect("json")
}

/// Signs a payment for exactly this call and sends it: the ledger binds a payment to the call
/// it was first presented for, so each failing call below pays with its own signature.
async fn send_fresh(
    stack: &LocalStack,
    url: &str,
) -> (u16, reqwest::header::HeaderMap, serde_json::Value) {
    let sig = stack
        .sign_only_async(url, "GET", None)
        .await
        .payment_signature;
    send_signed(url, &sig).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_is_charged_when_results_come_back_and_never_otherwise() {
    let stack = LocalStack::start();
    let canary = upstream::canary("127.0.0.2").await;
    let up = upstream::start(&canary.url()).await;
    let mock = search_support::start().await;
    mock.scenario(
        "mixed",
        &[up.url("/article"), canary.url(), up.url("/missing")],
    );
    mock.scenario("allfail", &[up.url("/missing"), canary.url()]);
    let paycall = paycall_for(
        &stack,
        &mock.base,
        &mock.searxng_base,
        json!({"provider": "brave", "api_key": BRAVE_KEY}),
    )
    .await;
    let base = paycall.url("/api/search");
    let buyer_start = stack.usdc_balance(&stack.buyer);

    // Unpaid: 402 at the route's price; no provider call, no facilitator call.
    let r = server_support::client()
        .get(format!("{base}?q=mixed"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 402);
    let challenge = decode_b64_json(r.headers()["payment-required"].to_str().unwrap());
    assert_eq!(challenge["accepts"][0]["amount"], "30000");
    assert_eq!(
        challenge["resource"]["url"],
        "https://paycall.example.com/api/search"
    );
    let qp = &challenge["extensions"]["bazaar"]["info"]["input"]["queryParams"];
    assert!(qp["q"].is_string(), "{challenge}");
    assert_eq!(mock.count(), 0);
    assert_eq!(stack.verify_calls() + stack.settle_calls(), 0);

    // Charged: results came back though one page is refused and one is missing.
    let paid = stack
        .pay_async(&format!("{base}?q={}&n=3", enc("mixed x402")), "GET", None)
        .await;
    assert_eq!(paid.status, 200, "{:?}", paid.body);
    let b = &paid.body;
    assert_eq!(b["provider"], "brave");
    assert_eq!(b["resultCount"], 3);
    assert_eq!(b["fetchedOk"], 1);
    assert_eq!(b["results"][1]["error"]["code"], "blocked_target");
    assert_eq!(b["source"], "search");
    assert_eq!(b["priced"]["amountAtomic"], "30000");
    assert_eq!(b["priced"]["amountUsd"], "0.03");
    assert_eq!(paid.payment_response.as_ref().unwrap()["success"], true);
    assert_eq!(paid.buyer_spent(), 30_000, "buyer paid exactly the price");
    assert_eq!(paid.pay_to_received(), 30_000);
    assert_eq!(stack.settle_calls(), 1);

    // Every page failed but results came back: still a search answer, charged.
    stack.reset_calls();
    let paid = stack
        .pay_async(&format!("{base}?q=allfail"), "GET", None)
        .await;
    assert_eq!(paid.status, 200, "{:?}", paid.body);
    assert_eq!(paid.body["fetchedOk"], 0);
    assert_eq!(paid.buyer_spent(), 30_000);
    assert_eq!(stack.settle_calls(), 1);
    let spent_so_far = 60_000u128;

    // Not charged. One signature replayed against every failing case stays unspent.
    let sig = stack
        .sign_only_async(&format!("{base}?q=mixed"), "GET", None)
        .await
        .payment_signature;
    stack.reset_calls();

    // 400: answered before the facilitator is asked; the provider never called.
    mock.clear();
    let long = "q".repeat(301);
    for q in [
        "".to_string(),
        format!("?q={long}"),
        "?q=mixed&n=0".into(),
        "?q=mixed&n=6".into(),
        "?q=mixed&freshness=hour".into(),
    ] {
        let (s, h, b) = send_signed(&format!("{base}{q}"), &sig).await;
        assert_eq!(s, 400, "{q}: {b}");
        assert!(b["error"].is_string() && b["message"].is_string(), "{b}");
        assert!(h.get("payment-response").is_none());
    }
    assert_eq!(
        stack.verify_calls(),
        0,
        "bad input never reaches the facilitator"
    );
    assert_eq!(mock.count(), 0, "bad input never reaches the provider");

    // 404 and 503s from this provider: verified, never settled.
    let mut verified = 0;
    for (q, status, code) in [
        ("none", 404, "no_results"),
        ("ratelimit", 503, "provider_rate_limited"),
        ("boom", 503, "provider_error"),
        ("invalid", 400, "rejected_by_provider"),
    ] {
        let (s, h, b) = send_fresh(&stack, &format!("{base}?q={q}")).await;
        assert_eq!(
            (s, b["error"].as_str().unwrap_or("")),
            (status, code),
            "{q}: {b}"
        );
        assert!(b["message"].as_str().unwrap().contains("brave"), "{b}");
        assert!(h.get("payment-response").is_none(), "{q}: no receipt");
        verified += 1;
    }
    paycall.shutdown().await;

    // Unsupported option for the configured provider (searxng has no country): 400 before the
    // facilitator.
    let sx = paycall_for(
        &stack,
        &mock.base,
        &mock.searxng_base,
        json!({"provider": "searxng"}),
    )
    .await;
    let (s, _, b) = send_signed(&sx.url("/api/search?q=mixed&country=us"), &sig).await;
    assert_eq!(
        (s, b["error"].as_str()),
        (400, Some("unsupported_parameter")),
        "{b}"
    );
    assert!(b["message"].as_str().unwrap().contains("searxng"));
    sx.shutdown().await;

    // Unconfigured (no key) and unreachable providers.
    let unconfigured = paycall_for(
        &stack,
        &mock.base,
        &mock.searxng_base,
        json!({"provider": "serper", "api_key_env": "PAYCALL_TEST_SEARCH_KEY_NEVER_SET"}),
    )
    .await;
    // A route that cannot work asks for no payment: 503 with Retry-After before the gate,
    // the payment never verified (docs/decisions.md#order-of-checks).
    let (s, h, b) = send_signed(&unconfigured.url("/api/search?q=mixed"), &sig).await;
    assert_eq!(
        (s, b["error"].as_str()),
        (503, Some("route_unavailable")),
        "{b}"
    );
    assert!(
        b["reason"]
            .as_str()
            .unwrap()
            .contains("PAYCALL_TEST_SEARCH_KEY_NEVER_SET"),
        "{b}"
    );
    assert_eq!(h["retry-after"], "60");
    unconfigured.shutdown().await;
    let down = paycall_for(
        &stack,
        "http://127.0.0.1:9",
        "http://127.0.0.1:9",
        json!({"provider": "serper", "api_key": SERPER_KEY}),
    )
    .await;
    let (s, _, b) = send_signed(&down.url("/api/search?q=mixed"), &sig).await;
    assert_eq!(
        (s, b["error"].as_str()),
        (503, Some("provider_unavailable")),
        "{b}"
    );
    verified += 1;
    down.shutdown().await;

    assert_eq!(stack.verify_calls(), verified);
    assert_eq!(stack.settle_calls(), 0, "no not-charged outcome settles");
    assert_eq!(canary.hits(), 0, "the canary was never reached");
    assert_eq!(
        stack.usdc_balance(&stack.buyer),
        buyer_start - spent_so_far,
        "nothing moved on-chain for the failures"
    );
}
