//! /api/yield through the real server: DefiLlama's /pools served from fixtures/market (real
//! shape, every field the API sends), ranking and filters checked against an independent
//! Python ranking of the same fixture, bad filter values answered 400 before payment, the
//! upstream cache, and down/malformed/empty upstreams.

use crate::support;
use support::market;

use market::Mode;
use serde_json::Value;
use support::server::{get_json, EVM_PAY_TO, NO_FACILITATOR};

const INPUT: &str = r#"      - name: chain
        type: string
        max_length: 40
      - name: stablecoin
        type: boolean
      - name: minTvl
        type: number
      - name: limit
        type: integer
"#;

fn projects(b: &Value) -> Vec<String> {
    b["pools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["project"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn yield_demo_ranks_and_documents() {
    let up = market::start().await;
    let cfg = market::shipped_config(&up, &[], NO_FACILITATOR, EVM_PAY_TO);
    let server = support::server::start(cfg).await;
    let (status, _, env) = get_json(&server.url("/api/demo/yield")).await;
    server.shutdown().await;
    assert_eq!(status, 200);
    assert_eq!(env["sample_status"], 200, "{env}");
    let b = &env["sample"];
    assert_eq!(b["source"], "yield");
    assert_eq!(b["count"], 10);
    // The fixture lists 45 pools; 40 are at or above 10M USD; 38 survive the outlier and
    // implausible-APY rules (counted with Python on the fixture). Order from the independent Python ranking of
    // fixtures/market/defillama_yields/pools.json (min(apy, apyMean30d), else apyBase; then TVL).
    assert_eq!(b["universe"]["poolsListed"], 45);
    assert_eq!(b["universe"]["poolsAtOrAboveFloor"], 40);
    assert_eq!(b["matched"], 38);
    let top = projects(b);
    assert_eq!(
        &top[..5],
        &[
            "gmx-v2-perps",
            "morpho-blue",
            "lido",
            "compound-v3",
            "aave-v3"
        ]
    );
    let first = &b["pools"][0];
    assert_eq!(first["rank"], 1);
    assert_eq!(first["chain"], "Arbitrum");
    assert_eq!(first["sustainableApy"], 10.1257);
    for k in [
        "project",
        "chain",
        "symbol",
        "tvlUsd",
        "apy",
        "apyBase",
        "apyReward",
        "apyMean30d",
        "stablecoin",
        "ilRisk",
        "exposure",
        "prediction",
    ] {
        assert!(first.get(k).is_some(), "pool field {k} missing: {first}");
    }
    assert!(
        !top.contains(&"spike-farm".to_string()),
        "a reward spike does not reach the top"
    );
    assert!(!top.contains(&"odd-vault".to_string()));
    assert!(b["methodology"].as_str().unwrap().contains("apyMean30d"));
    assert_eq!(up.hits("defillama_yields"), 1);
}

async fn free_yield(up: &market::MarketUpstreams, down: &[&str], query: &str) -> (u16, Value) {
    let (_dir, cfg) = market::free_route_config(up, down, "yield", INPUT);
    let server = support::server::start(cfg).await;
    let (status, _, body) = get_json(&server.url(&format!("/api/yield{query}"))).await;
    server.shutdown().await;
    (status, body)
}

#[tokio::test]
async fn filters_chain_stablecoin_min_tvl_limit() {
    let up = market::start().await;
    let (s, b) = free_yield(&up, &[], "?chain=base&stablecoin=true&limit=3").await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["matched"], 7);
    assert_eq!(
        projects(&b),
        vec!["compound-v3", "fresh-lend", "spike-farm"]
    );
    // fresh-lend has no 30-day mean: ranked on apyBase (7.5), not on apy (13.5).
    assert_eq!(b["pools"][1]["apy"], 13.5);
    assert_eq!(b["pools"][1]["sustainableApy"], 7.5);
    assert_eq!(b["pools"][1]["apyMean30d"], Value::Null);
    // spike-farm: 311.2 % today, 5.1 % on average over 30 days.
    assert_eq!(b["pools"][2]["sustainableApy"], 5.1);
    assert_eq!(b["filters"]["chain"], "base");
    assert_eq!(b["filters"]["stablecoin"], true);
    for p in b["pools"].as_array().unwrap() {
        assert_eq!(p["chain"], "Base");
        assert_eq!(p["stablecoin"], true);
    }

    let (_, b) = free_yield(&up, &[], "?stablecoin=false&minTvl=1000000000&limit=100").await;
    for p in b["pools"].as_array().unwrap() {
        assert_eq!(p["stablecoin"], false);
        assert!(p["tvlUsd"].as_f64().unwrap() >= 1e9, "{p}");
    }
    assert!(b["count"].as_u64().unwrap() > 0);

    let (s, b) = free_yield(&up, &[], "?chain=Nowhere").await;
    assert_eq!(s, 200);
    assert_eq!(b["count"], 0);
}

#[tokio::test]
async fn bad_filter_values_are_400_before_payment_and_upstream() {
    let up = market::start().await;
    let fac = support::server::fake_facilitator().await;
    let cfg = market::shipped_config(&up, &[], &fac.url, EVM_PAY_TO);
    let server = support::server::start(cfg).await;
    for (q, word) in [
        ("limit=0", "limit"),
        ("limit=101", "limit"),
        ("limit=ten", "limit"),
        ("minTvl=5", "minTvl"),
        ("minTvl=lots", "minTvl"),
        ("stablecoin=maybe", "stablecoin"),
        ("chain=%3Cscript%3E", "chain"),
        (
            "chain=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "chain",
        ),
    ] {
        let (status, body) =
            support::server::get_signed_json(&server.url(&format!("/api/yield?{q}"))).await;
        assert_eq!(status, 400, "{q}: {body}");
        assert!(
            body["message"].as_str().unwrap().contains(word),
            "{q}: {body}"
        );
    }
    assert_eq!(
        fac.payment_hits.load(std::sync::atomic::Ordering::SeqCst),
        0
    );
    assert_eq!(up.hits("defillama_yields"), 0);
    server.shutdown().await;
}

#[tokio::test]
async fn the_pool_list_is_cached_between_calls() {
    let up = market::start().await;
    let (_dir, cfg) = market::free_route_config(&up, &[], "yield", INPUT);
    let server = support::server::start(cfg).await;
    for q in ["", "?chain=Ethereum", "?limit=5"] {
        let (s, _, b) = get_json(&server.url(&format!("/api/yield{q}"))).await;
        assert_eq!(s, 200, "{b}");
    }
    assert_eq!(
        up.hits("defillama_yields"),
        1,
        "one upstream fetch for three calls"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn upstream_failures_are_not_charged_errors() {
    let up = market::start().await;
    let (s, b) = free_yield(&up, &["defillama_yields"], "").await;
    assert_eq!(s, 503, "{b}");
    assert_eq!(b["upstream"], "defillama_yields");

    let up = market::start().await;
    up.set("defillama_yields", Mode::Malformed);
    let (s, b) = free_yield(&up, &[], "").await;
    assert_eq!(s, 502, "{b}");
    assert!(b["message"].as_str().unwrap().contains("cannot read"));

    let up = market::start().await;
    up.set("defillama_yields", Mode::Empty);
    let (s, b) = free_yield(&up, &[], "").await;
    assert_eq!(s, 502, "{b}");
    assert!(b["message"].as_str().unwrap().contains("no pools"));

    let up = market::start().await;
    up.set("defillama_yields", Mode::Status(404));
    let (s, b) = free_yield(&up, &[], "").await;
    assert_eq!(s, 502, "{b}");
    assert!(b["message"].as_str().unwrap().contains("404"));
}
