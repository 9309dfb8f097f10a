//! /api/funding and /api/signals through the real server on the shipped routes.yaml, upstreams
//! served from fixtures/market: success, the second funding source, upstream down, malformed
//! and empty answers, bad input before any upstream call, and the demo twins.

use crate::support;
use support::market;
use support::market::{close, demo_failure, demo_with};

use market::Mode;
use support::server::EVM_PAY_TO;

#[tokio::test]
async fn funding_from_okx() {
    let up = market::start().await;
    let env = demo_with(&up, &[], "funding").await;
    assert_eq!(env["sample_status"], 200, "{env}");
    let b = &env["sample"];
    assert_eq!(b["source"], "funding");
    assert_eq!(b["venue"], "okx");
    let btc = &b["BTC"];
    assert_eq!(btc["instrument"], "BTC-USDT-SWAP");
    assert_eq!(btc["rate"], 0.0000812245513218);
    assert_eq!(btc["intervalHours"], 8.0);
    // 0.0000812245513218 × 1095 intervals a year × 100
    assert!(close(&btc["annualizedPct"], 8.8941, 1e-4), "{btc}");
    assert_eq!(btc["nextFundingTime"], "2026-11-24T00:00:00.000Z");
    assert_eq!(btc["payer"], "longs");
    assert_eq!(b["SOL"]["payer"], "shorts");
    assert!(close(&b["ETH"]["annualizedPct"], 10.95, 1e-9));
    assert_eq!(up.hits("okx"), 3);
    assert_eq!(up.hits("hyperliquid"), 0);
}

#[tokio::test]
async fn hyperliquid_is_the_second_funding_source() {
    for mode in [Mode::Status(503), Mode::Malformed, Mode::Empty] {
        let up = market::start().await;
        up.set("okx", mode.clone());
        let env = demo_with(&up, &[], "funding").await;
        assert_eq!(env["sample_status"], 200, "{mode:?}: {env}");
        let b = &env["sample"];
        assert_eq!(b["venue"], "hyperliquid");
        assert_eq!(b["BTC"]["intervalHours"], 1.0);
        assert_eq!(b["BTC"]["instrument"], "BTC-PERP");
        // 0.0000125 per hour = 0.0001 per 8 h; × 8760 × 100 = 10.95 %
        assert!(close(&b["BTC"]["rate8h"], 0.0001, 1e-12), "{b}");
        assert!(close(&b["BTC"]["annualizedPct"], 10.95, 1e-9), "{b}");
        assert_eq!(b["SOL"]["payer"], "shorts");
        assert_eq!(
            up.bodies("hyperliquid")[0]["type"],
            "metaAndAssetCtxs",
            "asked Hyperliquid the right question"
        );
    }
}

#[tokio::test]
async fn funding_fails_not_charged_when_both_sources_fail() {
    // OKX unreachable, Hyperliquid answering garbage: worth a retry, so 503 (docs/market.md).
    let up = market::start().await;
    up.set("hyperliquid", Mode::Empty);
    let (status, b) = demo_failure(&up, &["okx"], "funding").await;
    assert_eq!(status, 503, "{b}");
    assert_eq!(b["error"], "upstream_unavailable");
    assert_eq!(b["upstream"], "okx, hyperliquid");
    assert!(b["message"].as_str().unwrap().contains("not charged"));

    // Both answering garbage: 502.
    let up = market::start().await;
    up.set("okx", Mode::Malformed);
    up.set("hyperliquid", Mode::Empty);
    let (status, b) = demo_failure(&up, &[], "funding").await;
    assert_eq!(status, 502, "{b}");
    assert_eq!(b["error"], "upstream_error");

    let up = market::start().await;
    let (status, b) = demo_failure(&up, &["okx", "hyperliquid"], "funding").await;
    assert_eq!(status, 503, "{b}");
    assert_eq!(b["error"], "upstream_unavailable");
}

#[tokio::test]
async fn signals_match_the_python_reference_on_the_fixture_candles() {
    let up = market::start().await;
    let env = demo_with(&up, &[], "signals").await;
    assert_eq!(env["sample_status"], 200, "{env}");
    let b = &env["sample"];
    assert_eq!(b["source"], "signals");
    assert_eq!(b["interval"], "1h");
    // Expected values: `python3 scripts/indicator_reference.py
    // fixtures/market/coinbase_exchange/products/<id>/candles.json` (independent Python).
    let btc = &b["BTC"];
    assert_eq!(btc["candles"], 300);
    assert_eq!(btc["lastClose"], 97012.35);
    assert_eq!(btc["lastCandleTime"], "2026-11-23T18:00:00.000Z");
    assert_eq!(btc["rsi14"], 52.93);
    assert!(close(&btc["macd"]["line"], 197.619765, 1e-6), "{btc}");
    assert!(close(&btc["macd"]["signal"], 210.482208, 1e-6), "{btc}");
    assert!(close(&btc["macd"]["histogram"], -12.862442, 1e-6), "{btc}");
    assert_eq!(btc["macd"]["direction"], "down");
    assert!(close(&btc["bollinger"]["upper"], 97903.143944, 1e-6));
    assert!(close(&btc["bollinger"]["middle"], 96860.51, 1e-6));
    assert!(close(&btc["bollinger"]["lower"], 95817.876056, 1e-6));
    assert_eq!(btc["bollinger"]["percentB"], 0.5728);
    assert_eq!(btc["funding"]["venue"], "okx");
    assert_eq!(b["ETH"]["rsi14"], 53.81);
    assert!(close(&b["ETH"]["macd"]["histogram"], 1.869441, 1e-6));
    assert_eq!(b["SOL"]["rsi14"], 59.94);
    assert_eq!(b["SOL"]["bollinger"]["percentB"], 0.7456);
    for a in ["BTC", "ETH", "SOL"] {
        let m = b[a]["momentum"].as_str().unwrap();
        assert!(["up", "down", "flat"].contains(&m));
    }
    assert_eq!(b["dataSource"]["candles"], "coinbase_exchange");
    let text = b.to_string().to_lowercase();
    assert!(!text.contains("buy") && !text.contains("sell"));
    // asOf: the older of the candle and funding snapshots, in the past.
    let as_of = chrono::DateTime::parse_from_rfc3339(b["asOf"].as_str().unwrap()).unwrap();
    assert!(as_of <= chrono::Utc::now());
    assert_eq!(
        up.hits("coinbase_exchange"),
        3,
        "one candles request per asset"
    );
}

#[tokio::test]
async fn signals_upstream_failures() {
    // Candles malformed → 502 naming coinbase_exchange.
    let up = market::start().await;
    up.set("coinbase_exchange", Mode::Malformed);
    let (status, b) = demo_failure(&up, &[], "signals").await;
    assert_eq!(status, 502, "{b}");
    assert_eq!(b["upstream"], "coinbase_exchange");

    // Empty candle list → 502, too little history.
    let up = market::start().await;
    let empty = market::fixtures().join("coinbase_exchange/_empty.json");
    assert!(empty.exists());
    up.set("coinbase_exchange", Mode::Empty);
    let (status, b) = demo_failure(&up, &[], "signals").await;
    assert_eq!(status, 502, "{b}");

    // Candles down → 503.
    let up = market::start().await;
    let (status, b) = demo_failure(&up, &["coinbase_exchange"], "signals").await;
    assert_eq!(status, 503, "{b}");
    assert_eq!(b["error"], "upstream_unavailable");

    // Funding from the second source still gives signals.
    let up = market::start().await;
    let env = demo_with(&up, &["okx"], "signals").await;
    assert_eq!(env["sample_status"], 200, "{env}");
    assert_eq!(env["sample"]["BTC"]["funding"]["venue"], "hyperliquid");
}

#[tokio::test]
async fn bad_interval_is_400_before_payment_and_upstreams() {
    let up = market::start().await;
    let fac = support::server::fake_facilitator().await;
    let cfg = market::shipped_config(&up, &[], &fac.url, EVM_PAY_TO);
    let server = support::server::start(cfg).await;
    let (status, body) =
        support::server::get_signed_json(&server.url("/api/signals?interval=2h")).await;
    assert_eq!(status, 400, "{body}");
    assert!(body["message"].as_str().unwrap().contains("interval"));
    assert_eq!(
        fac.payment_hits.load(std::sync::atomic::Ordering::SeqCst),
        0
    );
    assert_eq!(up.hits("coinbase_exchange") + up.hits("okx"), 0);
    server.shutdown().await;
}
