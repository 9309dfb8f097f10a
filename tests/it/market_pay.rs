//! Real payments for the market routes on the SHIPPED config: a local chain with the test USDC,
//! the official x402 facilitator and client (tests/e2e), market upstreams from fixtures/market.
//! A successful answer settles once and moves exactly the price; an upstream failure (502/503)
//! is verified but never settled, and the buyer keeps the money.

use crate::support;
use support::{market, stack};

use market::Mode;
use serde_json::Value;
use stack::LocalStack;

async fn send_signed(url: &str, sig: &str) -> (u16, Value) {
    let resp = support::server::client()
        .get(url)
        .header("PAYMENT-SIGNATURE", sig)
        .send()
        .await
        .expect("request to paycall");
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap_or_default();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn market_routes_charge_only_for_answers() {
    let stack = LocalStack::start();
    let up = market::start().await;
    let cfg = market::shipped_config(&up, &[], &stack.facilitator_url, &stack.pay_to);
    let paycall = support::server::start(cfg).await;

    // Charged: /api/pulse answers 200 and settles exactly 0.005 USDC once.
    let paid = stack
        .pay_async(&paycall.url("/api/pulse"), "GET", None)
        .await;
    assert_eq!(paid.status, 200, "{:?}", paid.body);
    assert_eq!(paid.body["BTC"]["priceUsd"], 97012.35);
    assert_eq!(paid.body["source"], "pulse");
    assert_eq!(paid.body["priced"]["amountAtomic"], "5000");
    assert_eq!(paid.payment_response.as_ref().unwrap()["success"], true);
    assert_eq!(paid.buyer_spent(), 5_000);
    assert_eq!(paid.pay_to_received(), 5_000);
    assert_eq!(stack.settle_calls(), 1);

    // Charged: /api/portfolio for the demo address, 0.04 USDC.
    stack.reset_calls();
    let url = paycall.url("/api/portfolio?address=0xd8dA6BF26964aF9D7eEd9e03E53415D37aA96045");
    let paid = stack.pay_async(&url, "GET", None).await;
    assert_eq!(paid.status, 200, "{:?}", paid.body);
    assert_eq!(paid.body["networks"]["base"]["native"]["balance"], "0.42");
    assert_eq!(paid.buyer_spent(), 40_000);
    assert_eq!(stack.settle_calls(), 1);

    // Not charged: both funding sources down → 503, verified, never settled.
    up.set("okx", Mode::Status(503));
    up.set("hyperliquid", Mode::Status(503));
    let furl = paycall.url("/api/funding");
    let signed = stack.sign_only_async(&furl, "GET", None).await;
    let buyer_before = stack.usdc_balance(&stack.buyer);
    stack.reset_calls();
    let (s, b) = send_signed(&furl, &signed.payment_signature).await;
    assert_eq!(s, 503, "{b}");
    assert_eq!(b["error"], "upstream_unavailable");
    assert_eq!(b["upstream"], "okx, hyperliquid");
    assert!(b["message"].as_str().unwrap().contains("not charged"));
    assert_eq!(stack.verify_calls(), 1, "the payment was verified");
    assert_eq!(stack.settle_calls(), 0, "an upstream failure never settles");

    // Not charged: malformed candles → 502 on /api/signals (funding answers again), never settled.
    up.set("okx", Mode::Ok);
    up.set("coinbase_exchange", Mode::Malformed);
    let surl = paycall.url("/api/signals");
    let signed = stack.sign_only_async(&surl, "GET", None).await;
    stack.reset_calls();
    let (s, b) = send_signed(&surl, &signed.payment_signature).await;
    assert_eq!(s, 502, "{b}");
    assert_eq!(b["upstream"], "coinbase_exchange");
    assert_eq!(stack.settle_calls(), 0);

    // With OKX back a paid funding call settles once; the two failures cost the buyer nothing.
    stack.reset_calls();
    let (s, b) = send_signed(&furl, &signed_funding_again(&stack, &furl).await).await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(stack.settle_calls(), 1);
    assert_eq!(
        stack.usdc_balance(&stack.buyer),
        buyer_before - 10_000,
        "only the successful funding call was paid"
    );
    paycall.shutdown().await;
}

/// A fresh signature for the funding route (the earlier one was verified, not settled; signing
/// again keeps the test independent of the facilitator's replay bookkeeping).
async fn signed_funding_again(stack: &LocalStack, url: &str) -> String {
    stack
        .sign_only_async(url, "GET", None)
        .await
        .payment_signature
}
