//! Solana paid for real, with the SHIPPED routes.yaml and pipelines: the stack's Solana leg (a
//! Solana JSON-RPC over litesvm with the real SPL Token and ATA programs and USDC's mainnet mint),
//! the official @x402/svm facilitator scheme in the same facilitator as the EVM one, and the
//! official client paying paycall's Solana offer. Every check reads both token balances from the
//! Solana RPC and the facilitator's call trace.

use crate::support;
use support::server::decode_b64_json;
use support::shipped;
use support::{stack, upstream};

use serde_json::{json, Value};

use paycall::config;
use stack::{LocalStack, PayOptions};
use support::server::{enc, send_signed};

const SOLANA: &str = "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp";

/// paycall with the shipped config, paid to the stack's EVM and Solana payTo, through the
/// stack's facilitator, allowed to reach 127.0.0.1 only.
async fn paycall_for(stack: &LocalStack) -> support::server::TestServer {
    paycall_with(stack, |_| {}).await.0
}

/// The same, with the loaded config changed first (e.g. a shorter settle timeout), and the
/// server's services (its ledger and on-chain confirmer, for the upkeep).
async fn paycall_with(
    stack: &LocalStack,
    tweak: impl FnOnce(&mut config::Config),
) -> (support::server::TestServer, paycall::pipeline::Services) {
    let vars = shipped::vars(
        stack,
        &[
            ("PAYCALL_SOLANA_PAY_TO", stack.solana("payTo")),
            ("PAYCALL_UPSTREAM_SOLANA_RPC", stack.solana("rpcUrl")),
        ],
    );
    let mut cfg = shipped::config(&shipped::routes_yaml(), vars);
    tweak(&mut cfg);
    shipped::start(cfg).await
}

/// Both Solana token balances (buyer, payTo), read from the RPC.
fn balances(stack: &LocalStack) -> (u128, u128) {
    (
        stack.solana_token_balance(&stack.solana("buyerTokenAccount")),
        stack.solana_token_balance(&stack.solana("payToTokenAccount")),
    )
}

/// A successful Solana receipt: the network, the payer, and a base58 transaction signature that
/// the RPC reports as landed without error.
fn assert_solana_receipt(stack: &LocalStack, receipt: &Value) {
    assert_eq!(receipt["success"], true, "{receipt}");
    assert_eq!(receipt["network"], SOLANA, "{receipt}");
    assert_eq!(receipt["payer"], stack.solana("buyer"), "{receipt}");
    let tx = receipt["transaction"].as_str().expect("transaction");
    assert!(
        (64..=88).contains(&tx.len()) && bs58::decode(tx).into_vec().map(|b| b.len()) == Ok(64),
        "a Solana signature: {tx}"
    );
    let st = stack.solana_rpc("getSignatureStatuses", json!([[tx]]));
    let status = &st["result"]["value"][0];
    assert!(status.is_object(), "the transaction is on chain: {st}");
    assert_eq!(status["err"], Value::Null, "{st}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn solana_offers_are_paid_for_real_on_http_fetch_and_extract() {
    let stack = LocalStack::start();
    let canary = upstream::canary("127.0.0.2").await;
    let up = upstream::start(&canary.url()).await;
    let paycall = paycall_for(&stack).await;
    let sol = PayOptions::solana();

    // The challenge offers both networks; Solana with the facilitator's fee payer.
    let url = paycall.url(&format!("/api/http?url={}", enc(&up.url("/hello"))));
    let r = support::server::client().get(&url).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 402);
    let challenge = decode_b64_json(r.headers()["payment-required"].to_str().unwrap());
    let accepts = challenge["accepts"].as_array().unwrap();
    assert_eq!(accepts.len(), 2, "{challenge}");
    let offer = accepts.iter().find(|a| a["network"] == SOLANA).unwrap();
    assert_eq!(offer["payTo"], stack.solana("payTo"));
    assert_eq!(
        offer["asset"],
        "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v"
    );
    assert_eq!(offer["amount"], "10000");
    assert_eq!(offer["extra"]["feePayer"], stack.solana("feePayer"));

    // GET /api/http, paid on Solana.
    let start = balances(&stack);
    let paid = stack.try_pay_async(&url, "GET", None, &sol).await.unwrap();
    assert_eq!(paid.status, 200, "{:?}", paid.body);
    assert_eq!(paid.body["body"], "hello");
    // (`priced` names the route's first offer, Base, see docs/decisions.md#answer-shape: the receipt names the network.)
    assert_eq!(paid.body["priced"]["amountAtomic"], "10000");
    assert_solana_receipt(&stack, paid.payment_response.as_ref().expect("receipt"));
    assert_eq!(paid.buyer_spent(), 10_000, "buyer paid exactly the price");
    assert_eq!(
        paid.pay_to_received(),
        10_000,
        "payTo got exactly the price"
    );
    assert_eq!(balances(&stack), (start.0 - 10_000, start.1 + 10_000));
    assert_eq!(stack.settle_calls(), 1);
    let settled = &stack.calls()[1];
    assert_eq!(settled["endpoint"], "/settle");
    assert_eq!(settled["body"]["paymentRequirements"]["network"], SOLANA);

    // GET /api/fetch (20000).
    stack.reset_calls();
    let furl = paycall.url(&format!("/api/fetch?url={}", enc(&up.url("/article"))));
    let before = balances(&stack);
    let paid = stack.try_pay_async(&furl, "GET", None, &sol).await.unwrap();
    assert_eq!(paid.status, 200, "{:?}", paid.body);
    assert!(paid.body["content"]
        .as_str()
        .unwrap()
        .contains("The harbour was quiet that morning"));
    assert_solana_receipt(&stack, paid.payment_response.as_ref().expect("receipt"));
    assert_eq!(balances(&stack), (before.0 - 20_000, before.1 + 20_000));
    assert_eq!(stack.settle_calls(), 1);

    // POST /api/extract with the caller's html (15000): nothing fetched.
    stack.reset_calls();
    let before = balances(&stack);
    let body =
        json!({"url": "https://example.com/mine", "html": "<title>Mine</title><a href='/x'>x</a>"})
            .to_string();
    let paid = stack
        .try_pay_async(&paycall.url("/api/extract"), "POST", Some(&body), &sol)
        .await
        .unwrap();
    assert_eq!(paid.status, 200, "{:?}", paid.body);
    assert_eq!(paid.body["title"], "Mine");
    assert_solana_receipt(&stack, paid.payment_response.as_ref().expect("receipt"));
    assert_eq!(balances(&stack), (before.0 - 15_000, before.1 + 15_000));
    assert_eq!(stack.settle_calls(), 1);

    assert_eq!(
        balances(&stack),
        (start.0 - 45_000, start.1 + 45_000),
        "three calls, three prices, nothing else moved"
    );
    assert_eq!(canary.hits(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn solana_not_charged_replays_and_a_payer_without_funds() {
    let stack = LocalStack::start();
    let canary = upstream::canary("127.0.0.2").await;
    let up = upstream::start(&canary.url()).await;
    let paycall = paycall_for(&stack).await;
    let sol = PayOptions::solana();
    let target = |p: &str| paycall.url(&format!("/api/http?url={}", enc(&up.url(p))));
    let start = balances(&stack);

    // Not charged: a redirect to a blocked address is refused after verify, never settled.
    let url = target("/to-canary");
    let signed = stack.sign_only_with_async(&url, "GET", None, &sol).await;
    assert_eq!(signed.payload["accepted"]["network"], SOLANA);
    let (s, h, b) = send_signed(&url, &signed.payment_signature).await;
    assert_eq!(
        (s, b["error"].as_str().unwrap_or("")),
        (400, "blocked_target"),
        "{b}"
    );
    assert!(h.get("payment-response").is_none());
    // Straight at a blocked address: refused before the facilitator.
    let blocked = paycall.url(&format!("/api/http?url={}", enc("http://127.0.0.2/")));
    let one = stack
        .sign_only_with_async(&blocked, "GET", None, &sol)
        .await;
    let (s, _, b) = send_signed(&blocked, &one.payment_signature).await;
    assert_eq!(
        (s, b["error"].as_str().unwrap_or("")),
        (400, "blocked_target"),
        "{b}"
    );
    assert_eq!(
        stack.verify_calls(),
        1,
        "only the redirect case reached verify"
    );
    assert_eq!(
        stack.settle_calls(),
        0,
        "a not-charged outcome never settles"
    );
    assert_eq!(balances(&stack), start, "nothing moved on chain");
    assert_eq!(canary.hits(), 0);

    // The same Solana payment five times at once: served once, the others 409; one settlement.
    stack.reset_calls();
    let url = target("/slow?ms=1500");
    let sig = stack
        .sign_only_with_async(&url, "GET", None, &sol)
        .await
        .payment_signature;
    let hits = up.total();
    let tasks: Vec<_> = (0..5)
        .map(|_| {
            let (u, s) = (url.clone(), sig.clone());
            tokio::spawn(async move { send_signed(&u, &s).await })
        })
        .collect();
    let mut answers = Vec::new();
    for t in tasks {
        answers.push(t.await.unwrap());
    }
    let mut statuses: Vec<u16> = answers.iter().map(|a| a.0).collect();
    statuses.sort();
    assert_eq!(statuses, vec![200, 409, 409, 409, 409], "{statuses:?}");
    for (s, _, b) in &answers {
        if *s == 409 {
            assert_eq!(b["error"], "payment_in_flight", "{b}");
        }
    }
    let (_, h, first) = answers.iter().find(|a| a.0 == 200).unwrap().clone();
    let receipt = receipt_of(&h);
    assert_solana_receipt(&stack, &receipt);
    assert_eq!(up.total(), hits + 1, "the work ran once");
    assert_eq!(stack.settle_calls(), 1);
    assert_eq!(balances(&stack), (start.0 - 10_000, start.1 + 10_000));

    // Replayed after settlement: the kept reply and receipt, no second verify or settlement.
    let verifies = stack.verify_calls();
    let (s, h2, again) = send_signed(&url, &sig).await;
    assert_eq!(s, 200, "{again}");
    assert_eq!(again, first, "the same answer");
    assert_eq!(
        h2["payment-response"], h["payment-response"],
        "the same receipt"
    );
    assert_eq!(stack.verify_calls(), verifies);
    assert_eq!(stack.settle_calls(), 1);
    assert_eq!(up.total(), hits + 1, "the work is not redone");
    assert_eq!(balances(&stack), (start.0 - 10_000, start.1 + 10_000));

    // A payer without funds (a token account holding 0): a clear 402, nothing served.
    stack.reset_calls();
    let poor = PayOptions {
        key: Some(stack.solana("poorBuyerKey")),
        ..PayOptions::solana()
    };
    let hits = up.total();
    let before = balances(&stack);
    let refused = stack
        .try_pay_async(&target("/hello"), "GET", None, &poor)
        .await
        .unwrap();
    assert_eq!(refused.status, 402, "{:?}", refused.body);
    let reason = refused.body["error"].as_str().unwrap_or_default();
    assert!(
        reason.starts_with("invalid_exact_svm"),
        "the facilitator's reason: {:?}",
        refused.body
    );
    let message = refused.body["message"].as_str().unwrap_or_default();
    assert!(message.contains("refused the payment"), "{message}");
    assert!(refused.payment_response.is_none(), "no receipt");
    assert!(
        refused.body.get("body").is_none(),
        "nothing served: {:?}",
        refused.body
    );
    assert_eq!(up.total(), hits, "no work for a refused payment");
    assert_eq!(stack.verify_calls(), 1);
    assert_eq!(stack.settle_calls(), 0);
    assert_eq!(balances(&stack), before);
    assert_eq!(
        stack.solana_token_balance(&stack.solana("poorBuyer")),
        0,
        "(an owner address is not a token account)"
    );
}

/// Polls (bounded) until the Solana balances differ from `from`.
async fn balances_moved(stack: &LocalStack, from: (u128, u128)) -> (u128, u128) {
    let started = std::time::Instant::now();
    loop {
        let now = balances(stack);
        if now != from {
            return now;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "the transfer never landed; the facilitator saw: {:#}",
            serde_json::Value::Array(stack.calls())
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// Signs a Solana payment for exactly `url` and sends it with the facilitator in a mode that
/// leaves the settlement in doubt: a 503. The signature, for the retry, and the headers.
async fn into_doubt(stack: &LocalStack, url: &str) -> (String, reqwest::header::HeaderMap) {
    let sig = stack
        .sign_only_with_async(url, "GET", None, &PayOptions::solana())
        .await
        .payment_signature;
    let (s, h, b) = send_signed(url, &sig).await;
    assert_eq!(s, 503, "{b}");
    (sig, h)
}

/// The PAYMENT-RESPONSE header of an answer, decoded.
fn receipt_of(h: &reqwest::header::HeaderMap) -> Value {
    decode_b64_json(h["payment-response"].to_str().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_solana_settlement_in_doubt_is_confirmed_on_chain() {
    let stack = LocalStack::start();
    let canary = upstream::canary("127.0.0.2").await;
    let up = upstream::start(&canary.url()).await;
    // The facilitator's answer can outlast our settle timeout while its transaction lands.
    let (paycall, services) = paycall_with(&stack, |cfg| {
        cfg.payment.facilitator.settle_timeout = std::time::Duration::from_secs(2)
    })
    .await;
    let sol = PayOptions::solana();
    let target = |p: &str| paycall.url(&format!("/api/http?url={}", enc(&up.url(p))));
    let start = balances(&stack);

    // 1. Settled on chain, but the facilitator's answer came too late: 503, money in doubt.
    stack.set_slow_ms(6_000);
    stack.set_mode("normal", "slow");
    stack.reset_calls();
    let url = target("/hello");
    let (sig, h) = into_doubt(&stack, &url).await;
    assert!(h.get("retry-after").is_some(), "{h:?}");
    assert!(h.get("payment-response").is_none());
    let moved = balances_moved(&stack, start).await;
    assert_eq!(moved, (start.0 - 10_000, start.1 + 10_000));
    stack.set_mode("normal", "normal");

    // The same PAYMENT-SIGNATURE again: the transfer is found on chain (the payer's
    // transactions, searched by message) and the kept reply released — never refused as
    // "nothing was charged", never settled a second time, the work not redone.
    let hits = up.total();
    let (s, h, b) = send_signed(&url, &sig).await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["body"], "hello", "{b}");
    let receipt = receipt_of(&h);
    assert_solana_receipt(&stack, &receipt);
    assert_eq!(
        stack.settle_calls(),
        1,
        "confirmed on chain, not settled again"
    );
    assert_eq!(up.total(), hits, "the kept reply, not new work");
    assert_eq!(balances(&stack), moved, "paid once");
    let (s, h2, again) = send_signed(&url, &sig).await;
    assert_eq!((s, &again), (200, &b), "the same kept answer");
    assert_eq!(h2["payment-response"], h["payment-response"]);
    assert_eq!(stack.settle_calls(), 1);

    // 1b. The same doubt resolved by the ledger's upkeep (as after a crash) from the row alone:
    //     the kept reply gets its receipt, the buyer's retry is answered from it.
    stack.reset_calls();
    stack.set_mode("normal", "slow");
    let url = target("/hello?upkeep=1");
    let (sig, _) = into_doubt(&stack, &url).await;
    let moved_1b = balances_moved(&stack, moved).await;
    assert_eq!(moved_1b, (moved.0 - 10_000, moved.1 + 10_000));
    stack.set_mode("normal", "normal");
    let ledger = services.need::<paycall::payment::ledger::Ledger>().unwrap();
    let confirmer = services
        .need::<paycall::payment::confirm::Confirmer>()
        .unwrap();
    let pass = paycall::payment::upkeep::pass(&ledger, &confirmer)
        .await
        .unwrap();
    assert_eq!((pass.settled, pass.failed), (1, 0), "{pass:?}");
    let hits = up.total();
    let (s, h, b) = send_signed(&url, &sig).await;
    assert_eq!(s, 200, "{b}");
    assert_solana_receipt(&stack, &receipt_of(&h));
    assert_eq!(stack.settle_calls(), 1);
    assert_eq!(up.total(), hits, "the kept reply");
    let moved = moved_1b;

    // 2. "Pending" with nothing broadcast: the retry finds nothing on chain and settles it
    //    now — content once, money once.
    stack.reset_calls();
    stack.set_mode("normal", "pending");
    let url = target("/json");
    let (sig, _) = into_doubt(&stack, &url).await;
    assert_eq!(balances(&stack), moved, "nothing moved yet");
    stack.set_mode("normal", "normal");
    let (s, h, b) = send_signed(&url, &sig).await;
    assert_eq!(s, 200, "{b}");
    assert_solana_receipt(&stack, &receipt_of(&h));
    let trace: Vec<Value> = stack
        .calls()
        .iter()
        .map(|c| json!([c["endpoint"], c["mode"], c["response"]]))
        .collect();
    // The client asks once more on a pending answer; the retry's settlement is the only success.
    let settled: Vec<&Value> = trace
        .iter()
        .filter(|c| c[0] == "/settle" && c[2]["success"] == true)
        .collect();
    assert_eq!(
        settled.len(),
        1,
        "one settlement moved the money: {trace:#?}"
    );
    let paid_twice = (moved.0 - 10_000, moved.1 + 10_000);
    assert_eq!(balances(&stack), paid_twice);

    // 3. "Pending", then another payment lands and the first one's blockhash expires: its
    //    transaction can never land. The retry is refused with a 402, nothing served or moved.
    stack.reset_calls();
    stack.set_mode("normal", "pending");
    let url = target("/hello?late=1");
    let (sig, _) = into_doubt(&stack, &url).await;
    stack.set_mode("normal", "normal");
    let other = target("/json?other=1");
    let paid = stack
        .try_pay_async(&other, "GET", None, &sol)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(paid.status, 200, "{:?}", paid.body);
    let after_other = (paid_twice.0 - 10_000, paid_twice.1 + 10_000);
    assert_eq!(balances(&stack), after_other);
    let hits = up.total();
    let (s, _, b) = send_signed(&url, &sig).await;
    assert_eq!(s, 402, "{b}");
    assert!(b.get("body").is_none(), "nothing served: {b}");
    assert_eq!(up.total(), hits, "no new work");
    assert_eq!(balances(&stack), after_other, "nothing moved");
}
