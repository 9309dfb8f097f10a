//! /api/search paid for real with the SHIPPED routes.yaml and pipeline: a local chain, the
//! official facilitator and client (tests/e2e), the mock search provider (fixtures/search/),
//! result pages on 127.0.0.1 and a canary on 127.0.0.2.
//!
//! Billing rules, each checked against what the facilitator saw: charged (settled once, the
//! price moved on-chain) when at least one result comes back, even with failed pages; never
//! settled for 400 (before the facilitator is even asked), 404 no results, and 503 provider
//! unavailable / unconfigured / rate-limited / erroring.

use crate::support;
use support::server::decode_b64_json;
use support::shipped;
use support::shipped::send_fresh;
use support::{stack, upstream};

use serde_json::{json, Value};

use stack::LocalStack;
use support::search::{BRAVE_KEY, SERPER_KEY};

/// paycall with the shipped config, pointed at the stack and at the mock provider (`base` for
/// brave and serper, `searxng` for searxng); the search route's caps replaced by `caps`.
async fn paycall_for(
    stack: &LocalStack,
    base: &str,
    searxng: &str,
    caps: Value,
) -> support::server::TestServer {
    let vars = shipped::vars(
        stack,
        &[
            ("PAYCALL_UPSTREAM_BRAVE", base.to_string()),
            ("PAYCALL_UPSTREAM_SERPER", base.to_string()),
            ("PAYCALL_UPSTREAM_SEARXNG", searxng.to_string()),
        ],
    );
    let mut cfg = shipped::config(&shipped::routes_yaml(), vars);
    let route = cfg.routes.iter_mut().find(|r| r.name == "search").unwrap();
    route.caps.get_mut("search").unwrap().0 = caps;
    shipped::start(cfg).await.0
}

use support::server::enc;

use support::server::send_signed;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_is_charged_when_results_come_back_and_never_otherwise() {
    let stack = LocalStack::start();
    let canary = upstream::canary("127.0.0.2").await;
    let up = upstream::start(&canary.url()).await;
    let mock = support::search::start().await;
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
    let r = support::server::client()
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
    let bad = [
        "".to_string(),
        format!("?q={long}"),
        "?q=mixed&n=0".into(),
        "?q=mixed&n=6".into(),
        "?q=mixed&freshness=hour".into(),
    ];
    stack.assert_refused_before_payment(&base, &bad, &sig).await;
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
