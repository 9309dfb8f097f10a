//! Proves the local payment stack end to end before paycall takes part: real payments by the
//! official client (pay.mjs) to the official @x402/express seller (seller.mjs), settled on anvil
//! by the official facilitator, checked on-chain; replay refusal; a facilitator fault that must
//! move no money; and that dropping the stack leaves no anvil behind.
//!
//! Needs `scripts/setup.sh` to have run (node + tests/e2e/node_modules); fails loudly otherwise.

use crate::support;
use support::stack;

use serde_json::Value;
use stack::{is_anvil, LocalStack};
use std::time::{Duration, Instant};

/// "$0.005" in 6-decimal USDC.
const PRICE: u128 = 5_000;

fn is_tx_hash(v: &Value) -> bool {
    v.as_str().is_some_and(|s| {
        s.len() == 66 && s.starts_with("0x") && s[2..].bytes().all(|b| b.is_ascii_hexdigit())
    })
}

#[test]
fn real_payment_replay_and_settle_fault() {
    let started = Instant::now();
    let stack = LocalStack::start();
    println!("stack ready in {:?}", started.elapsed());

    let supported = stack.supported();
    let kinds = supported["kinds"]
        .as_array()
        .expect("supported.kinds is an array");
    assert!(
        kinds.iter().any(|k| k["x402Version"] == 2
            && k["scheme"] == "exact"
            && k["network"] == "eip155:8453"),
        "facilitator does not list exact v2 on eip155:8453: {supported}"
    );
    assert!(
        supported["signers"]["eip155:*"]
            .as_array()
            .is_some_and(|s| !s.is_empty()),
        "facilitator lists no EVM signer: {supported}"
    );

    let seller = stack.start_seller("$0.005");
    let paid_url = format!("{}/paid", seller.url);

    // 1. A real payment.
    stack.reset_calls();
    let buyer_before = stack.usdc_balance(&stack.buyer);
    let pay_to_before = stack.usdc_balance(&stack.pay_to);
    let t = Instant::now();
    let paid = stack.pay(&paid_url, "GET", None);
    println!(
        "one payment (pay.mjs wall time, node start included): {:?}",
        t.elapsed()
    );
    assert_eq!(paid.status, 200, "paid request failed: {}", paid.raw);
    assert_eq!(paid.body["paid"], true, "seller body: {}", paid.body);
    let receipt = paid
        .payment_response
        .clone()
        .expect("no PAYMENT-RESPONSE on the paid reply");
    assert_eq!(receipt["success"], true, "PAYMENT-RESPONSE: {receipt}");
    assert_eq!(receipt["network"], "eip155:8453");
    assert!(
        is_tx_hash(&receipt["transaction"]),
        "PAYMENT-RESPONSE has no tx hash: {receipt}"
    );
    assert_eq!(
        receipt["payer"].as_str().map(str::to_lowercase),
        Some(stack.buyer.to_lowercase())
    );
    // the client's view and our own eth_call agree, and the tx really landed
    assert_eq!(paid.buyer_spent(), PRICE as i128);
    assert_eq!(paid.pay_to_received(), PRICE as i128);
    assert_eq!(stack.usdc_balance(&stack.buyer), buyer_before - PRICE);
    assert_eq!(stack.usdc_balance(&stack.pay_to), pay_to_before + PRICE);
    let tx_receipt = stack.rpc(
        "eth_getTransactionReceipt",
        serde_json::json!([receipt["transaction"]]),
    );
    assert_eq!(
        tx_receipt["status"], "0x1",
        "settlement tx receipt: {tx_receipt}"
    );
    assert_eq!(stack.verify_calls(), 1);
    assert_eq!(stack.settle_calls(), 1);
    let calls = stack.calls();
    let settle = calls.iter().find(|c| c["endpoint"] == "/settle").unwrap();
    assert_eq!(settle["status"], 200);
    assert_eq!(settle["response"]["transaction"], receipt["transaction"]);
    assert_eq!(settle["body"]["paymentRequirements"]["amount"], "5000");

    // 2. A POST with a body goes through the same way.
    let posted = stack.pay(&paid_url, "POST", Some(r#"{"hello":"world"}"#));
    assert_eq!(posted.status, 200, "{}", posted.raw);
    assert_eq!(posted.body["echo"]["hello"], "world");
    assert_eq!(posted.buyer_spent(), PRICE as i128);

    // 3. One signature, sent twice: the first pays, the replay is refused by verify.
    stack.reset_calls();
    let signed = stack.sign_only(&paid_url, "GET", None);
    assert_eq!(signed.payment_required["x402Version"], 2);
    assert_eq!(
        signed.payload["accepted"]["asset"]
            .as_str()
            .map(str::to_lowercase),
        Some(stack.usdc.to_lowercase())
    );
    assert!(
        stack.calls().is_empty(),
        "sign_only must not reach the facilitator"
    );
    let first = stack.send_signed(&paid_url, "GET", None, &signed.payment_signature);
    assert_eq!(first.status, 200, "{}", first.raw);
    assert_eq!(first.buyer_spent(), PRICE as i128);
    let replay = stack.send_signed(&paid_url, "GET", None, &signed.payment_signature);
    assert_eq!(replay.status, 402, "replay was not refused: {}", replay.raw);
    assert_eq!(replay.buyer_spent(), 0);
    assert_eq!(replay.pay_to_received(), 0);
    let calls = stack.calls();
    let last_verify = calls
        .iter()
        .rev()
        .find(|c| c["endpoint"] == "/verify")
        .unwrap();
    assert_eq!(last_verify["response"]["isValid"], false);
    assert_eq!(
        last_verify["response"]["invalidReason"],
        "invalid_exact_evm_nonce_already_used"
    );
    assert_eq!(
        stack.settle_calls(),
        1,
        "the replay must never reach /settle"
    );

    // 4. Settlement fault: the facilitator says success:false without touching the chain.
    stack.reset_calls();
    stack.set_mode("normal", "fail");
    let buyer_before = stack.usdc_balance(&stack.buyer);
    let failed = stack.pay(&paid_url, "GET", None);
    assert_ne!(
        failed.status, 200,
        "a failed settlement must not be served: {}",
        failed.raw
    );
    assert_eq!(failed.buyer_spent(), 0);
    assert_eq!(stack.usdc_balance(&stack.buyer), buyer_before);
    let calls = stack.calls();
    let settle = calls
        .iter()
        .find(|c| c["endpoint"] == "/settle")
        .expect("settle was not called");
    assert_eq!(settle["mode"], "fail");
    assert_eq!(settle["response"]["errorReason"], "unexpected_settle_error");
    stack.set_mode("normal", "normal");
    let again = stack.pay(&paid_url, "GET", None);
    assert_eq!(again.status, 200, "back to normal: {}", again.raw);
}

#[test]
fn fault_modes_are_validated_and_minting_works() {
    let stack = LocalStack::start();
    let spare = stack.state["spareAccounts"][0]["address"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(stack.usdc_balance(&spare), 0);
    let tx = stack.mint(&spare, 1_234);
    assert!(is_tx_hash(&Value::String(tx)));
    assert_eq!(stack.usdc_balance(&spare), 1_234);

    let url = format!("{}/_mode", stack.facilitator_url);
    let (status, body) =
        stack::http_request("POST", &url, Some(r#"{"settle":"sometimes"}"#)).unwrap();
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("settle mode must be one of"), "{body}");
    let (status, _) = stack::http_request("POST", &url, Some("not json")).unwrap();
    assert_eq!(status, 400);
    stack.set_mode("garbage", "pending");
    let (_, mode) = stack::http_request("GET", &url, None).unwrap();
    let mode: Value = serde_json::from_str(&mode).unwrap();
    assert_eq!(mode["verify"], "garbage");
    assert_eq!(mode["settle"], "pending");

    // In garbage mode /verify answers 200 with a body that is not JSON.
    let verify_url = format!("{}/verify", stack.facilitator_url);
    let (status, body) = stack::http_request("POST", &verify_url, Some("{}")).unwrap();
    assert_eq!(status, 200);
    assert!(
        serde_json::from_str::<Value>(&body).is_err(),
        "garbage mode sent JSON: {body}"
    );

    // Back to normal: a body without paymentPayload is a 400, as the official example answers,
    // and every call is recorded with what was answered.
    stack.set_mode("normal", "normal");
    let (status, body) =
        stack::http_request("POST", &verify_url, Some(r#"{"x402Version":2}"#)).unwrap();
    assert_eq!(status, 400, "{body}");
    let calls = stack.calls();
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!(calls[0]["mode"], "garbage");
    assert_eq!(calls[1]["status"], 400);
    assert_eq!(calls[1]["body"]["x402Version"], 2);
    stack.reset_calls();
    assert!(stack.calls().is_empty());
}

#[test]
fn dropping_the_stack_stops_anvil() {
    let stack = LocalStack::start();
    let pid = stack.anvil_pid().expect("state has the anvil pid");
    assert!(
        is_anvil(pid),
        "anvil {pid} is not running while the stack is up"
    );
    let rpc_url = stack.rpc_url.clone();
    drop(stack);
    let deadline = Instant::now() + Duration::from_secs(5);
    while is_anvil(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!is_anvil(pid), "anvil {pid} survived the stack's drop");
    assert!(
        stack::http_request("POST", &rpc_url, Some("{}")).is_err(),
        "something still answers on {rpc_url}"
    );
}

/// In a current-thread runtime the blocking client calls would starve an in-process server, so
/// they refuse with a pointer to the async twin, and the twin works.
#[tokio::test]
async fn async_twins_work_and_blocking_calls_refuse_current_thread_runtime() {
    let stack = LocalStack::start();
    let seller = stack.start_seller("$0.01");
    let url = format!("{}/paid", seller.url);

    let refused = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        stack.pay(&url, "GET", None)
    }));
    let message = refused.expect_err("pay() must refuse a current-thread runtime");
    let message = message
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert!(
        message.contains("pay_async"),
        "unhelpful refusal: {message}"
    );
    assert_eq!(
        stack.settle_calls(),
        0,
        "the refused call must not have paid"
    );

    let paid = stack.pay_async(&url, "GET", None).await;
    assert_eq!(paid.status, 200, "{}", paid.raw);
    assert_eq!(paid.buyer_spent(), 10_000);
    let signed = stack.sign_only_async(&url, "GET", None).await;
    let sent = stack
        .send_signed_async(&url, "GET", None, &signed.payment_signature)
        .await;
    assert_eq!(sent.status, 200, "{}", sent.raw);
    assert_eq!(sent.pay_to_received(), 10_000);
    assert_eq!(stack.settle_calls(), 2);
}
