//! /api/gas and /api/portfolio through the real server, their JSON-RPC upstreams served from
//! fixtures/market/rpc (eth_call answers only calldata that viem encoded independently):
//! success, the backup RPC, upstream down, malformed and empty answers, the address rule
//! (400 before payment), the risk flags, and the demo twins on the shipped config.

use crate::support;
use support::market;
use support::market::{close, demo_failure, demo_with};

use market::Mode;
use serde_json::Value;
use support::server::{get_json, EVM_PAY_TO};

const DEMO_ADDRESS: &str = "0xd8dA6BF26964aF9D7eEd9e03E53415D37aA96045";
/// Listed in the RPC fixtures with contract code on Base, nonce 0 and nothing held.
const FRESH_CONTRACT: &str = "0x1111111111111111111111111111111111111111";
const ETH_USD: f64 = 3421.70;
const BTC_USD: f64 = 97012.35;

fn usd(gas: f64, fee_wei: f64, extra_wei: f64) -> f64 {
    (gas * fee_wei + extra_wei) / 1e18 * ETH_USD
}

#[tokio::test]
async fn gas_demo_tiers_costs_and_l1_fee() {
    let up = market::start().await;
    let env = demo_with(&up, &[], "gas").await;
    assert_eq!(env["sample_status"], 200, "{env}");
    let b = &env["sample"];
    assert_eq!(b["source"], "gas");
    assert_eq!(b["ethPriceUsd"], ETH_USD);

    // Base: fixture base fees 4.90M … 5.10M wei; per-block 10/50/90th priority fees whose
    // medians are 1100, 1,075,000 and 7,000,000 wei (see scripts/gen_rpc_fixtures.cjs).
    let base = &b["base"];
    assert_eq!(base["chainId"], 8453);
    assert_eq!(base["latestBlock"], 38512340u64 + 19);
    assert!(close(&base["nextBaseFeeGwei"], 0.0051, 1e-12), "{base}");
    assert!(close(&base["baseFeeGwei"], 0.00509, 1e-12), "{base}");
    assert_eq!(base["blocksSampled"], 20);
    let std = &base["tiers"]["standard"];
    assert!(close(&std["maxPriorityFeeGwei"], 0.001075, 1e-12), "{std}");
    assert!(close(&std["expectedFeeGwei"], 0.006175, 1e-12), "{std}");
    assert!(close(&std["maxFeeGwei"], 0.011275, 1e-12), "{std}");
    assert!(close(
        &base["tiers"]["slow"]["maxPriorityFeeGwei"],
        0.0000011,
        1e-12
    ));
    assert!(close(
        &base["tiers"]["fast"]["maxPriorityFeeGwei"],
        0.007,
        1e-12
    ));
    // Costs include the L1 data fee upper bound (61,234,567,890 / 123,456,789,012 wei).
    let plain = usd(21_000.0, 6_175_000.0, 61_234_567_890.0);
    assert!(
        close(&std["plainTransferUsd"], plain, 1e-6),
        "{std} vs {plain}"
    );
    let erc20 = usd(65_000.0, 6_175_000.0, 123_456_789_012.0);
    assert!(
        close(&std["erc20TransferUsd"], erc20, 1e-6),
        "{std} vs {erc20}"
    );
    let l1 = &base["l1DataFee"];
    assert_eq!(l1["plainTransferWei"], "61234567890");
    assert!(close(&l1["l1BaseFeeGwei"], 3.512345678, 1e-12), "{l1}");
    assert!(close(
        &l1["erc20TransferUsd"],
        usd(0.0, 0.0, 123_456_789_012.0),
        1e-6
    ));

    // Ethereum: next base fee 10 gwei; tiers 0.021 / 0.115 / 2.2 gwei; no L1 component.
    let eth = &b["ethereum"];
    assert_eq!(eth["chainId"], 1);
    assert!(close(&eth["nextBaseFeeGwei"], 10.0, 1e-12));
    assert!(close(
        &eth["tiers"]["slow"]["maxPriorityFeeGwei"],
        0.021,
        1e-12
    ));
    assert!(close(
        &eth["tiers"]["standard"]["maxPriorityFeeGwei"],
        0.115,
        1e-12
    ));
    assert!(close(&eth["tiers"]["fast"]["maxFeeGwei"], 22.2, 1e-12));
    assert!(close(
        &eth["tiers"]["fast"]["plainTransferUsd"],
        usd(21_000.0, 12.2e9, 0.0),
        1e-6
    ));
    assert_eq!(eth["l1DataFee"], Value::Null);
    assert_eq!(b["dataSource"]["base"], "base_rpc");
    assert_eq!(b["dataSource"]["ethereum"], "eth_rpc");
    // The JSON-RPC requests were well formed.
    let calls = up.bodies("eth_rpc");
    let fh = calls
        .iter()
        .find(|c| c["method"] == "eth_feeHistory")
        .expect("feeHistory asked");
    assert_eq!(fh["params"][0], "0x14");
    assert_eq!(fh["params"][2], serde_json::json!([10.0, 50.0, 90.0]));
}

#[tokio::test]
async fn gas_backup_rpc_and_failures() {
    // Base primary down → the backup answers.
    let up = market::start().await;
    let env = demo_with(&up, &["base_rpc"], "gas").await;
    assert_eq!(env["sample_status"], 200, "{env}");
    assert_eq!(env["sample"]["dataSource"]["base"], "base_rpc_backup");

    // Both Ethereum RPCs down → 503 naming both, not charged.
    let up = market::start().await;
    let (status, b) = demo_failure(&up, &["eth_rpc", "eth_rpc_backup"], "gas").await;
    assert_eq!(status, 503, "{b}");
    assert_eq!(b["upstream"], "eth_rpc, eth_rpc_backup");
    assert!(b["message"].as_str().unwrap().contains("not charged"));

    // Malformed JSON from both Base RPCs → 502.
    let up = market::start().await;
    up.set("base_rpc", Mode::Malformed);
    up.set("base_rpc_backup", Mode::Malformed);
    let (status, b) = demo_failure(&up, &[], "gas").await;
    assert_eq!(status, 502, "{b}");
    assert_eq!(b["error"], "upstream_error");

    // Empty results (null) → 502 saying so.
    let up = market::start().await;
    up.set("eth_rpc", Mode::Empty);
    up.set("eth_rpc_backup", Mode::Empty);
    let (status, b) = demo_failure(&up, &[], "gas").await;
    assert_eq!(status, 502, "{b}");
    assert!(b["message"].as_str().unwrap().contains("no result"));

    // No price source → 503 naming the price upstreams.
    let up = market::start().await;
    let (status, b) = demo_failure(&up, &["coinbase_exchange", "coingecko"], "gas").await;
    assert_eq!(status, 503, "{b}");
    assert_eq!(b["upstream"], "coinbase_exchange, coingecko");
}

#[tokio::test]
async fn portfolio_demo_values_holdings_and_risk() {
    let up = market::start().await;
    let env = demo_with(&up, &[], "portfolio").await;
    assert_eq!(env["sample_status"], 200, "{env}");
    let b = &env["sample"];
    assert_eq!(b["source"], "portfolio");
    assert_eq!(b["address"], DEMO_ADDRESS);
    let base = &b["networks"]["base"];
    assert_eq!(base["native"]["balance"], "0.42");
    assert!(close(&base["native"]["valueUsd"], 0.42 * ETH_USD, 0.006));
    assert_eq!(base["transactionCount"], 57);
    assert_eq!(base["isContract"], false);
    let tokens = base["tokens"].as_array().unwrap();
    assert_eq!(tokens[0]["symbol"], "USDC");
    assert_eq!(tokens[0]["balance"], "1234.56");
    assert_eq!(tokens[0]["valueUsd"], 1234.56);
    assert_eq!(
        tokens[1]["balance"],
        Value::Null,
        "USDbC's call failed inside Multicall3: no balance, not zero"
    );
    assert_eq!(tokens[2]["balance"], "25.5");
    assert_eq!(tokens[3]["balance"], "0.75");
    assert_eq!(tokens[4]["balance"], "0");
    let eth = &b["networks"]["ethereum"];
    assert_eq!(eth["native"]["balance"], "3.5");
    assert_eq!(eth["transactionCount"], 1234);
    let wbtc = &eth["tokens"][4];
    assert_eq!(wbtc["symbol"], "WBTC");
    assert_eq!(wbtc["balance"], "0.05");
    assert!(close(&wbtc["valueUsd"], 0.05 * BTC_USD, 0.006));

    let total = (0.42 + 3.5 + 0.75 + 1.2) * ETH_USD + 1234.56 + 25.5 + 5000.0 + 0.05 * BTC_USD;
    assert!(
        close(&b["totalUsd"], total, 0.011),
        "{} vs {total}",
        b["totalUsd"]
    );
    assert_eq!(b["holdings"][0]["symbol"], "ETH");
    let eth_share = 3.92 * ETH_USD / total * 100.0;
    assert!(close(&b["risk"]["largestSharePct"], eth_share, 0.006));
    let stable = (1234.56 + 25.5 + 5000.0) / total * 100.0;
    assert!(close(&b["risk"]["stablecoinSharePct"], stable, 0.006));
    assert_eq!(b["risk"]["flags"], serde_json::json!([]));
    assert_eq!(b["risk"]["transactionCountTotal"], 1291);
    assert!(b["methodology"]
        .as_str()
        .unwrap()
        .contains("high_concentration"));
    // One Multicall3 aggregate3 per network: the token balances were batched.
    let multicalls = up
        .bodies("base_rpc")
        .iter()
        .filter(|c| c["method"] == "eth_call")
        .count();
    assert_eq!(multicalls, 1);
}

async fn free_portfolio(
    up: &market::MarketUpstreams,
    down: &[&str],
    address: &str,
) -> (u16, Value) {
    let (_dir, cfg) = market::free_route_config(
        up,
        down,
        "portfolio",
        "      - name: address\n        type: string\n        required: true\n        pattern: \"^0x[a-fA-F0-9]{40}$\"\n",
    );
    let server = support::server::start(cfg).await;
    let (status, h, body) =
        get_json(&server.url(&format!("/api/portfolio?address={address}"))).await;
    server.shutdown().await;
    // An unavailable upstream is worth a retry, and the answer says when.
    if status == 503 {
        assert_eq!(h["retry-after"], "30", "{body}");
    }
    (status, body)
}

#[tokio::test]
async fn portfolio_flags_a_fresh_empty_contract() {
    let up = market::start().await;
    let (status, b) = free_portfolio(&up, &[], FRESH_CONTRACT).await;
    assert_eq!(status, 200, "{b}");
    assert_eq!(b["networks"]["base"]["isContract"], true);
    assert_eq!(b["networks"]["ethereum"]["isContract"], false);
    assert_eq!(b["totalUsd"], 0.0);
    assert_eq!(
        b["risk"]["flags"],
        serde_json::json!(["contract_wallet", "fresh_address", "empty"])
    );
}

#[tokio::test]
async fn portfolio_upstream_failures() {
    // An address whose calldata the fixtures do not know: Multicall3 "reverts" on both RPCs.
    let up = market::start().await;
    let (status, b) = free_portfolio(&up, &[], "0x2222222222222222222222222222222222222222").await;
    assert_eq!(status, 502, "{b}");
    assert!(
        b["message"].as_str().unwrap().contains("eth_call failed"),
        "{b}"
    );

    // Backup RPC used when the primary is down.
    let up = market::start().await;
    let (status, b) = free_portfolio(&up, &["eth_rpc"], DEMO_ADDRESS).await;
    assert_eq!(status, 200, "{b}");
    assert_eq!(b["dataSource"]["ethereum"], "eth_rpc_backup");

    // Both Base RPCs answer HTTP 500 → 503.
    let up = market::start().await;
    up.set("base_rpc", Mode::Status(500));
    up.set("base_rpc_backup", Mode::Status(500));
    let (status, b) = free_portfolio(&up, &[], DEMO_ADDRESS).await;
    assert_eq!(status, 503, "{b}");
    assert_eq!(b["upstream"], "base_rpc, base_rpc_backup");
}

#[tokio::test]
async fn bad_addresses_are_400_before_payment_and_upstreams() {
    let up = market::start().await;
    let fac = support::server::fake_facilitator().await;
    let cfg = market::shipped_config(&up, &[], &fac.url, EVM_PAY_TO);
    let server = support::server::start(cfg).await;
    for q in [
        "",
        "?address=0x123",
        "?address=d8dA6BF26964aF9D7eEd9e03E53415D37aA96045",
        "?address=0xd8dA6BF26964aF9D7eEd9e03E53415D37aA9604G",
        "?address=0xd8dA6BF26964aF9D7eEd9e03E53415D37aA960451",
    ] {
        let (status, body) =
            support::server::get_signed_json(&server.url(&format!("/api/portfolio{q}"))).await;
        assert_eq!(status, 400, "{q}: {body}");
        assert!(
            body["message"].as_str().unwrap().contains("address"),
            "{body}"
        );
    }
    // Unpaid, whatever the input: 402 (auditors probe without parameters).
    let r = support::server::client()
        .get(server.url("/api/portfolio"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 402);
    assert_eq!(
        fac.payment_hits.load(std::sync::atomic::Ordering::SeqCst),
        0
    );
    let hits: usize = market::UPSTREAMS.iter().map(|u| up.hits(u)).sum();
    assert_eq!(hits, 0, "no upstream was asked");
    server.shutdown().await;
}
