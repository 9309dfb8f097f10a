//! The SQLite ledger across a crash, with the real binary, the real chain and the official
//! facilitator: a paycall SIGKILLed while its settlement is in flight, restarted on the same
//! file, serves the kept reply to the same PAYMENT-SIGNATURE once the transfer is confirmed on
//! chain — with exactly one settlement in the facilitator's trace; a payment-identifier retry
//! after a restart gets the first reply byte for byte; `paycall ledger` totals equal what
//! reached payTo on chain.

use crate::support;
use support::server::decode_b64_json;
use support::{binary, stack, upstream};

use base64::Engine;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

use stack::LocalStack;
use support::server::enc;

use support::binary::send_paid as send;

fn with_identifier(payload: &Value, id: &str) -> String {
    let mut p = payload.clone();
    p["extensions"]["payment-identifier"] = json!({"info": {"required": false, "id": id}});
    base64::engine::general_purpose::STANDARD.encode(p.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_mid_settlement_and_restarts_never_lose_or_double_a_payment() {
    let stack = LocalStack::start();
    let canary = upstream::canary("127.0.0.2").await;
    let up = upstream::start(&canary.url()).await;
    // The real binary on its own port and SQLite file, restarted on the same file below.
    let mut paycall = binary::Paycall::new(&stack);
    paycall
        .extra_env
        .push(("PAYCALL_INSTANCE".into(), "crash-test".into()));
    paycall.start();
    let buyer_start = stack.usdc_balance(&stack.buyer);
    let pay_to_start = stack.usdc_balance(&stack.pay_to);
    let target = paycall.url(&format!("/api/http?url={}", enc(&up.url("/hello"))));

    // 1. SIGKILL while the facilitator holds /settle (it has settled on chain meanwhile).
    stack.set_slow_ms(8_000);
    stack.set_mode("normal", "slow");
    stack.reset_calls();
    let sig = stack
        .sign_only_async(&target, "GET", None)
        .await
        .payment_signature;
    let in_flight = {
        let (t, s) = (target.clone(), sig.clone());
        tokio::spawn(async move {
            support::server::client()
                .get(&t)
                .header("PAYMENT-SIGNATURE", s)
                .timeout(Duration::from_secs(60))
                .send()
                .await
                .map(|r| r.status().as_u16())
        })
    };
    stack.settle_reached().await;
    paycall.kill();
    assert!(
        in_flight.await.unwrap().is_err(),
        "the killed server gave no answer"
    );
    let started = Instant::now();
    while stack.usdc_balance(&stack.buyer) == buyer_start {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the transfer never landed"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(up.total(), 1, "the work was done once");

    // 2. Restart on the same file; the buyer repeats the same PAYMENT-SIGNATURE.
    stack.set_mode("normal", "normal");
    paycall.start();
    let (s, receipt, body) = send(&target, &sig).await;
    let b: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(s, 200, "{b}\n{}", paycall.log_text());
    assert_eq!(b["body"], "hello");
    let receipt = decode_b64_json(&receipt.expect("PAYMENT-RESPONSE on the kept reply"));
    assert_eq!(receipt["success"], true, "{receipt}");
    assert!(
        receipt["transaction"]
            .as_str()
            .is_some_and(|t| t.len() == 66),
        "{receipt}"
    );
    assert_eq!(
        stack.settle_calls(),
        1,
        "confirmed on chain, not settled again"
    );
    assert_eq!(up.total(), 1, "the kept reply, not new work");
    assert_eq!(stack.usdc_balance(&stack.buyer), buyer_start - 10_000);
    assert_eq!(stack.usdc_balance(&stack.pay_to), pay_to_start + 10_000);
    // Asked again: the same kept answer, still one settlement.
    let (s, _, body2) = send(&target, &sig).await;
    assert_eq!(s, 200);
    assert_eq!(body2, body);
    assert_eq!(stack.settle_calls(), 1);

    // 3. payment-identifier: the first reply byte for byte after a crash and a restart.
    stack.reset_calls();
    let pid_target = paycall.url(&format!("/api/http?url={}", enc(&up.url("/json"))));
    let signed = stack.sign_only_async(&pid_target, "GET", None).await;
    let first = with_identifier(&signed.payload, "crash-test-0123456789abcdef");
    let (s1, r1, b1) = send(&pid_target, &first).await;
    assert_eq!(s1, 200, "{}", String::from_utf8_lossy(&b1));
    assert_eq!(stack.settle_calls(), 1);
    paycall.kill();
    paycall.start();
    let (s2, r2, b2) = send(&pid_target, &first).await;
    assert_eq!(
        (s2, &r2, &b2),
        (s1, &r1, &b1),
        "byte for byte, receipt included"
    );
    assert_eq!(stack.settle_calls(), 1, "no second settlement");
    assert_eq!(stack.verify_calls(), 1, "no second verify");
    // The same id with another payment: 409, before any facilitator call.
    let other = stack.sign_only_async(&pid_target, "GET", None).await;
    let clash = with_identifier(&other.payload, "crash-test-0123456789abcdef");
    let (s3, _, b3) = send(&pid_target, &clash).await;
    let b3: Value = serde_json::from_slice(&b3).unwrap();
    assert_eq!(
        (s3, b3["error"].as_str()),
        (409, Some("payment_identifier_conflict")),
        "{b3}"
    );
    assert_eq!(stack.verify_calls(), 1);
    // A malformed id: 400 before any facilitator call.
    let bad = with_identifier(&other.payload, "short");
    let (s4, _, b4) = send(&pid_target, &bad).await;
    let b4: Value = serde_json::from_slice(&b4).unwrap();
    assert_eq!(
        (s4, b4["error"].as_str()),
        (400, Some("invalid_payment_identifier")),
        "{b4}"
    );
    assert_eq!(stack.verify_calls(), 1);

    // 4. The operator's view equals the chain.
    paycall.kill();
    let report = paycall.ledger_json();
    let total: u128 = report["totals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["atomic"].as_str().unwrap().parse::<u128>().unwrap())
        .sum();
    assert_eq!(
        total as i128,
        stack.usdc_balance(&stack.pay_to) as i128 - pay_to_start as i128,
        "{report}"
    );
    assert_eq!(report["states"]["settled"], 2, "{report}");
    assert_eq!(canary.hits(), 0);
}
