//! /api/pulse through the real server on the shipped routes.yaml, its upstreams served from
//! fixtures/market by a local server: success, second source, upstream down, malformed and
//! empty answers, the unpaid 402, the demo twin, and the shared upstream cache.

use crate::support;
use support::market;

use market::Mode;
use serde_json::Value;
use support::server::{get_json, EVM_PAY_TO, NO_FACILITATOR};

async fn demo_with(up: &market::MarketUpstreams, down: &[&str]) -> (u16, Value) {
    let cfg = market::shipped_config(up, down, NO_FACILITATOR, EVM_PAY_TO);
    let server = support::server::start(cfg).await;
    let (status, _, body) = get_json(&server.url("/api/demo/pulse")).await;
    server.shutdown().await;
    (status, body)
}

#[tokio::test]
async fn pulse_demo_answers_from_coinbase() {
    let up = market::start().await;
    let (status, env) = demo_with(&up, &[]).await;
    assert_eq!(status, 200, "{env}");
    assert_eq!(env["demo"], true);
    assert_eq!(env["sample_status"], 200, "{env}");
    let b = &env["sample"];
    assert_eq!(b["source"], "pulse");
    assert_eq!(b["dataSource"], "coinbase_exchange");
    assert_eq!(b["BTC"]["priceUsd"], 97012.35);
    // (97012.35 - 95243.12) / 95243.12 * 100 = 1.8576…
    assert_eq!(b["BTC"]["change24hPct"], 1.858);
    assert_eq!(b["BTC"]["momentum"], "up");
    assert_eq!(b["BTC"]["high24hUsd"], 97544.0);
    // (3421.70 - 3428.97) / 3428.97 = -0.212 % → inside the ±0.5 band
    assert_eq!(b["ETH"]["momentum"], "flat");
    // (241.33 - 248.67) / 248.67 = -2.952 %
    assert_eq!(b["SOL"]["change24hPct"], -2.952);
    assert_eq!(b["SOL"]["momentum"], "down");
    assert_eq!(b["overall"]["up"], 1);
    assert_eq!(b["overall"]["down"], 1);
    assert_eq!(b["overall"]["flat"], 1);
    assert!(b["asOf"].as_str().unwrap().ends_with('Z'));
    assert_eq!(
        b["asOf"], b["dataTakenAt"],
        "asOf is when the data was taken"
    );
    assert!(b["methodology"].as_str().unwrap().contains("flat"));
    assert_eq!(
        up.hits("coinbase_exchange"),
        3,
        "one stats request per asset"
    );
    assert_eq!(up.hits("coingecko"), 0);
}

#[tokio::test]
async fn coingecko_is_the_second_source() {
    let up = market::start().await;
    up.set("coinbase_exchange", Mode::Status(503));
    let (_, env) = demo_with(&up, &[]).await;
    assert_eq!(env["sample_status"], 200, "{env}");
    let b = &env["sample"];
    assert_eq!(b["dataSource"], "coingecko");
    assert_eq!(b["BTC"]["priceUsd"], 96988.0);
    assert_eq!(
        b["BTC"]["high24hUsd"],
        Value::Null,
        "CoinGecko has no 24h high"
    );
    assert_eq!(b["SOL"]["momentum"], "down");
    assert_eq!(up.hits("coingecko"), 1);

    // Coinbase unreachable (closed port) works the same way.
    let up = market::start().await;
    let (_, env) = demo_with(&up, &["coinbase_exchange"]).await;
    assert_eq!(env["sample"]["dataSource"], "coingecko", "{env}");
}

#[tokio::test]
async fn both_sources_down_is_503_naming_them() {
    let up = market::start().await;
    up.set("coingecko", Mode::Status(429));
    let (status, b) = demo_with(&up, &["coinbase_exchange"]).await;
    assert_eq!(status, 503, "{b}");
    assert_eq!(b["demo"], true, "{b}");
    assert_eq!(b["error"], "upstream_unavailable");
    assert_eq!(b["upstream"], "coinbase_exchange, coingecko");
    assert!(
        b["message"].as_str().unwrap().contains("not charged"),
        "{b}"
    );
}

#[tokio::test]
async fn one_source_unreachable_and_the_other_garbage_is_503_with_retry_after() {
    let up = market::start().await;
    up.set("coingecko", Mode::Malformed);
    let cfg = market::shipped_config(&up, &["coinbase_exchange"], NO_FACILITATOR, EVM_PAY_TO);
    let server = support::server::start(cfg).await;
    let (status, h, b) = get_json(&server.url("/api/demo/pulse")).await;
    server.shutdown().await;
    assert_eq!(status, 503, "{b}");
    assert_eq!(b["error"], "upstream_unavailable");
    assert_eq!(b["upstream"], "coinbase_exchange, coingecko");
    assert!(h.contains_key("retry-after"), "{h:?}");
}

#[tokio::test]
async fn malformed_and_empty_answers_are_502() {
    let up = market::start().await;
    up.set("coinbase_exchange", Mode::Malformed);
    up.set("coingecko", Mode::Malformed);
    let (status, b) = demo_with(&up, &[]).await;
    assert_eq!(status, 502, "{b}");
    assert_eq!(b["error"], "upstream_error");
    assert!(b["message"].as_str().unwrap().contains("cannot read"));

    let up = market::start().await;
    up.set("coinbase_exchange", Mode::Empty);
    up.set("coingecko", Mode::Empty);
    let (status, b) = demo_with(&up, &[]).await;
    assert_eq!(status, 502, "{b}");
    let msg = b["message"].as_str().unwrap();
    assert!(
        msg.contains("no last price") && msg.contains("no price for"),
        "{msg}"
    );

    // Only the first source empty: the second answers.
    let up = market::start().await;
    up.set("coinbase_exchange", Mode::Empty);
    let (_, env) = demo_with(&up, &[]).await;
    assert_eq!(env["sample"]["dataSource"], "coingecko", "{env}");
}

#[tokio::test]
async fn unpaid_pulse_is_402_without_upstream_work() {
    let up = market::start().await;
    let cfg = market::shipped_config(&up, &[], NO_FACILITATOR, EVM_PAY_TO);
    let server = support::server::start(cfg).await;
    let r = support::server::client()
        .get(server.url("/api/pulse"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 402);
    assert!(r.headers().get("payment-required").is_some());
    assert_eq!(up.hits("coinbase_exchange") + up.hits("coingecko"), 0);
    // The route is documented with its example.
    let (s, _, doc) = get_json(&server.url("/openapi.json")).await;
    assert_eq!(s, 200);
    let text = doc.to_string();
    assert!(text.contains("/api/pulse") && text.contains("rangePosition24h"));
    for path in [
        "/api/pulse",
        "/api/funding",
        "/api/signals",
        "/api/gas",
        "/api/portfolio",
        "/api/yield",
    ] {
        let op = &doc["paths"][path];
        assert!(op.is_object(), "{path} is in /openapi.json");
        let op_text = op.to_string();
        for status in ["\"402\"", "\"502\"", "\"503\""] {
            assert!(
                op_text.contains(status),
                "{path} documents {status}: {op_text}"
            );
        }
        assert!(
            op_text.contains("methodology"),
            "{path} shows its example: {op_text}"
        );
    }
    server.shutdown().await;
}

#[tokio::test]
async fn spot_answers_are_cached_for_the_route_ttl() {
    let up = market::start().await;
    let (_dir, cfg) = market::free_route_config(&up, &[], "pulse", "");
    let server = support::server::start(cfg).await;
    let (s1, _, a) = get_json(&server.url("/api/pulse")).await;
    let (s2, _, b) = get_json(&server.url("/api/pulse")).await;
    assert_eq!((s1, s2), (200, 200), "{a} {b}");
    assert_eq!(
        up.hits("coinbase_exchange"),
        3,
        "the second call is served from the cache"
    );
    assert_eq!(
        a["asOf"], b["asOf"],
        "both answers say when the data was taken"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_slow_first_source_times_out_into_the_second() {
    // Coinbase would answer after 8 s; the pipeline's timeout is 6 s, so the answer can only
    // come from CoinGecko (had the deadline not fired, Coinbase's answer would have been used).
    let up = market::start().await;
    up.set("coinbase_exchange", Mode::SlowMs(8_000));
    let (_, env) = demo_with(&up, &[]).await;
    assert_eq!(env["sample_status"], 200, "{env}");
    assert_eq!(env["sample"]["dataSource"], "coingecko");
}
