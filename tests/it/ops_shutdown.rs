//! Graceful shutdown with the real binary, the real chain and the official facilitator: SIGTERM
//! while a paid call's settlement is held by the facilitator → new connections are refused at
//! once, the call is settled (one /settle in the facilitator's trace, the money moved once),
//! answered 200 with its receipt, its ledger row is final, and the process exits within
//! `service.shutdown_grace_s`. The same after a live reload (SIGHUP with a new price) that
//! happened while the call was in flight: the call finishes on the old price.

use crate::support;
use support::server::decode_b64_json;
use support::{binary, stack, upstream};

use serde_json::Value;
use std::time::{Duration, Instant};

use binary::Paycall;
use stack::LocalStack;
use support::server::enc;

/// How long the facilitator holds each /settle answer (it settles on chain first).
const SETTLE_HOLD_MS: u64 = 4_000;

/// `service.shutdown_grace_s` of the configuration the binary runs.
fn grace_of(paycall: &Paycall) -> Duration {
    let text = std::fs::read_to_string(paycall.routes()).unwrap();
    let secs = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("shutdown_grace_s:"))
        .and_then(|v| v.split('#').next()?.trim().parse::<u64>().ok())
        .expect("routes.yaml sets service.shutdown_grace_s");
    Duration::from_secs(secs)
}

/// The amount of the first offer in an unpaid 402 of `url`.
async fn offered_amount(url: &str) -> String {
    let r = support::server::client().get(url).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 402);
    let v: Value = serde_json::from_slice(&r.bytes().await.unwrap()).unwrap();
    v["accepts"][0]["amount"].as_str().unwrap().to_string()
}

/// What the buyer got for its paid request.
struct Answer {
    status: u16,
    receipt: Option<Value>,
    body: Value,
}

fn paid_request(url: String, sig: String) -> tokio::task::JoinHandle<Answer> {
    tokio::spawn(async move {
        let (status, receipt, body) = support::binary::send_paid(&url, &sig).await;
        Answer {
            status,
            receipt: receipt.as_deref().map(decode_b64_json),
            body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        }
    })
}

/// Polls (bounded) until a new TCP connection to `port` is refused.
async fn refuses_connections(port: u16) -> Duration {
    let started = Instant::now();
    loop {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_err()
        {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "new connections still accepted 3 s after SIGTERM"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// SIGTERM with the paid call in flight, then everything the shutdown owes that call.
async fn terminate_and_check(
    stack: &LocalStack,
    paycall: &mut Paycall,
    in_flight: tokio::task::JoinHandle<Answer>,
    price_atomic: u128,
    buyer_start: u128,
    pay_to_start: u128,
) {
    let grace = grace_of(paycall);
    let sent = Instant::now();
    paycall.signal(libc::SIGTERM);
    refuses_connections(paycall.port).await;
    assert!(
        !in_flight.is_finished(),
        "the call was still in flight when new connections were refused (raise SETTLE_HOLD_MS if not)"
    );
    let a = in_flight.await.unwrap();
    assert_eq!(a.status, 200, "{}\n{}", a.body, paycall.log_text());
    assert_eq!(a.body["body"], "hello", "{}", a.body);
    let receipt = a.receipt.expect("PAYMENT-RESPONSE on the answer");
    assert_eq!(receipt["success"], true, "{receipt}");
    let exit = tokio::task::block_in_place(|| paycall.wait_exit(grace + Duration::from_secs(30)));
    let took = sent.elapsed();
    let exit = exit.unwrap_or_else(|| {
        panic!(
            "paycall still running {took:?} after SIGTERM:\n{}",
            paycall.log_text()
        )
    });
    assert!(exit.success(), "{exit}\n{}", paycall.log_text());
    assert!(
        took <= grace,
        "paycall exited {took:?} after SIGTERM, beyond shutdown_grace_s ({grace:?}):\n{}",
        paycall.log_text()
    );
    assert!(paycall.log_text().contains("paycall stopped"));
    assert_eq!(stack.settle_calls(), 1, "one settlement in the trace");
    assert_eq!(stack.usdc_balance(&stack.buyer), buyer_start - price_atomic);
    assert_eq!(
        stack.usdc_balance(&stack.pay_to),
        pay_to_start + price_atomic
    );
    // The row was finished before the exit: settled, nothing pending for the upkeep.
    let report = paycall.ledger_json();
    assert_eq!(report["states"]["settled"], 1, "{report}");
    assert!(
        report["states"]["settling"].is_null() || report["states"]["settling"] == 0,
        "{report}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_settles_and_answers_the_paid_call_in_flight_then_exits() {
    let stack = LocalStack::start();
    let canary = upstream::canary("127.0.0.2").await;
    let up = upstream::start(&canary.url()).await;

    // 1. A plain SIGTERM.
    let mut paycall = Paycall::new(&stack);
    paycall.start();
    let target = paycall.url(&format!("/api/http?url={}", enc(&up.url("/hello"))));
    let buyer_start = stack.usdc_balance(&stack.buyer);
    let pay_to_start = stack.usdc_balance(&stack.pay_to);
    stack.set_slow_ms(SETTLE_HOLD_MS);
    stack.set_mode("normal", "slow");
    stack.reset_calls();
    let sig = stack
        .sign_only_async(&target, "GET", None)
        .await
        .payment_signature;
    let in_flight = paid_request(target.clone(), sig);
    stack.settle_reached().await;
    terminate_and_check(
        &stack,
        &mut paycall,
        in_flight,
        10_000,
        buyer_start,
        pay_to_start,
    )
    .await;
    assert_eq!(up.total(), 1, "the work was done once");

    // 2. A live reload (new price) while the call is in flight, then SIGTERM: the call finishes
    // on the price it was signed for, the new price is in the next 402, and the shutdown still
    // waits for the call that started on the old configuration.
    let mut paycall = Paycall::new(&stack);
    paycall.start();
    let target = paycall.url(&format!("/api/http?url={}", enc(&up.url("/hello"))));
    assert_eq!(offered_amount(&target).await, "10000");
    let buyer_start = stack.usdc_balance(&stack.buyer);
    let pay_to_start = stack.usdc_balance(&stack.pay_to);
    stack.reset_calls();
    let sig = stack
        .sign_only_async(&target, "GET", None)
        .await
        .payment_signature;
    let in_flight = paid_request(target.clone(), sig);
    stack.settle_reached().await;
    let routes = std::fs::read_to_string(paycall.routes()).unwrap();
    let first_price = "price_usd: \"0.01\"";
    assert!(routes.contains(first_price));
    std::fs::write(
        paycall.routes(),
        routes.replacen(first_price, "price_usd: \"0.02\"", 1),
    )
    .unwrap();
    paycall.signal(libc::SIGHUP);
    let started = Instant::now();
    while offered_amount(&target).await != "20000" {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the reloaded price is not in the 402:\n{}",
            paycall.log_text()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!in_flight.is_finished());
    terminate_and_check(
        &stack,
        &mut paycall,
        in_flight,
        10_000,
        buyer_start,
        pay_to_start,
    )
    .await;
    assert_eq!(up.total(), 2);
    assert_eq!(canary.hits(), 0);
    stack.set_mode("normal", "normal");
}
