//! End-to-end payments for /api/http and /api/fetch with the SHIPPED routes.yaml and pipelines:
//! a real local chain with the test USDC at Base's USDC address, the official x402 facilitator
//! and the official client (tests/e2e), a local upstream on 127.0.0.1 and canaries on 127.0.0.2.
//!
//! Every billing rule is checked against what the facilitator saw: a charged call settles once
//! and moves exactly the price on-chain; a not-charged outcome never reaches /settle.

use crate::support;
use support::server::decode_b64_json;
use support::shipped::paycall_for;
use support::{stack, upstream};

use serde_json::Value;
use std::time::Duration;

use stack::LocalStack;

/// paycall with the shipped config, pointed at the stack's facilitator and payTo, allowed to
/// reach 127.0.0.1 only.
use support::server::enc;

use support::server::send_signed;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_and_fetch_are_paid_for_real_and_settle_once() {
    let stack = LocalStack::start();
    let canary = upstream::canary("127.0.0.2").await;
    let up = upstream::start(&canary.url()).await;
    let paycall = paycall_for(&stack).await;

    // Unpaid: 402 with the challenge; the facilitator sees nothing.
    let url = paycall.url(&format!("/api/http?url={}", enc(&up.url("/hello"))));
    let r = support::server::client().get(&url).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 402);
    assert_eq!(r.headers()["cache-control"], "no-store");
    let challenge = decode_b64_json(r.headers()["payment-required"].to_str().unwrap());
    assert_eq!(challenge["x402Version"], 2);
    assert_eq!(challenge["accepts"][0]["amount"], "10000");
    assert_eq!(challenge["accepts"][0]["payTo"], stack.pay_to);
    assert_eq!(
        challenge["accepts"][1]["network"], "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp",
        "the local facilitator settles Solana too (tests/it/solana_pay.rs pays it)"
    );
    assert_eq!(
        challenge["resource"]["url"],
        "https://paycall.example.com/api/http"
    );
    assert!(challenge["extensions"]["bazaar"]["info"]["input"]["queryParams"]["url"].is_string());
    assert_eq!(up.total(), 0, "an unpaid request does no work");
    assert_eq!(stack.verify_calls() + stack.settle_calls(), 0);

    // Paid /api/http with the official client.
    let paid = stack.pay_async(&url, "GET", None).await;
    assert_eq!(paid.status, 200, "{:?}", paid.body);
    let b = &paid.body;
    assert_eq!(b["ok"], true);
    assert_eq!(b["status"], 200);
    assert_eq!(b["body"], "hello");
    assert_eq!(b["bodyEncoding"], "text");
    assert_eq!(b["method"], "GET");
    assert_eq!(b["truncated"], false);
    assert_eq!(b["bytesRead"], 5);
    assert_eq!(b["source"], "http");
    assert_eq!(b["priced"]["amountAtomic"], "10000");
    assert_eq!(b["priced"]["amountUsd"], "0.01");
    assert_eq!(b["priced"]["network"], "base");
    assert_eq!(b["priced"]["payTo"], stack.pay_to);
    assert!(b["asOf"].as_str().unwrap().ends_with('Z'));
    let receipt = paid.payment_response.as_ref().expect("PAYMENT-RESPONSE");
    assert_eq!(receipt["success"], true);
    assert!(receipt["transaction"].as_str().unwrap().starts_with("0x"));
    assert_eq!(paid.buyer_spent(), 10_000, "buyer paid exactly the price");
    assert_eq!(
        paid.pay_to_received(),
        10_000,
        "payTo received exactly the price"
    );
    assert_eq!(stack.settle_calls(), 1);
    assert_eq!(stack.usdc_balance(&stack.pay_to), paid.pay_to_after);

    // Paid POST /api/http with a JSON body forwarded upstream.
    stack.reset_calls();
    let post_url = paycall.url("/api/http");
    let body = serde_json::json!({
        "url": up.url("/echo"),
        "method": "POST",
        "headers": {"x-request-id": "abc", "content-type": "application/json"},
        "body": {"k": "v"}
    })
    .to_string();
    let paid = stack.pay_async(&post_url, "POST", Some(&body)).await;
    assert_eq!(paid.status, 200, "{:?}", paid.body);
    let echoed: Value = serde_json::from_str(paid.body["body"].as_str().unwrap()).unwrap();
    assert_eq!(echoed["method"], "POST");
    assert_eq!(echoed["body"], r#"{"k":"v"}"#);
    assert_eq!(echoed["headers"]["x-request-id"], "abc");
    assert!(echoed["headers"].get("cookie").is_none());
    assert_eq!(paid.buyer_spent(), 10_000);
    assert_eq!(stack.settle_calls(), 1);

    // Paid /api/fetch: the article as markdown, boilerplate gone.
    stack.reset_calls();
    let furl = paycall.url(&format!("/api/fetch?url={}", enc(&up.url("/article"))));
    let paid = stack.pay_async(&furl, "GET", None).await;
    assert_eq!(paid.status, 200, "{:?}", paid.body);
    let b = &paid.body;
    assert_eq!(b["format"], "markdown");
    let content = b["content"].as_str().unwrap();
    assert!(
        content.contains("The harbour was quiet that morning"),
        "{content}"
    );
    assert!(
        content.contains("the whole village came down to the water"),
        "{content}"
    );
    assert!(!content.contains("Copyright footer"), "{content}");
    assert_eq!(b["source"], "fetch");
    assert_eq!(b["priced"]["amountAtomic"], "20000");
    assert_eq!(paid.buyer_spent(), 20_000);
    assert_eq!(paid.pay_to_received(), 20_000);
    assert_eq!(stack.settle_calls(), 1);
    assert_eq!(canary.hits(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn not_charged_outcomes_never_settle() {
    let stack = LocalStack::start();
    let canary = upstream::canary("127.0.0.2").await;
    let up = upstream::start(&canary.url()).await;
    let paycall = paycall_for(&stack).await;
    let buyer_start = stack.usdc_balance(&stack.buyer);

    // One signed payment for /api/fetch, replayed against failing inputs: it stays unspent.
    let base = paycall.url("/api/fetch");
    let signed = stack
        .sign_only_async(
            &format!("{base}?url={}", enc(&up.url("/hello"))),
            "GET",
            None,
        )
        .await;
    let sig = signed.payment_signature.clone();

    // Bad input: 400 before any facilitator call.
    stack.reset_calls();
    for q in ["", "?url=notaurl", "?url=ftp%3A%2F%2Fexample.com%2F"] {
        let (s, _, b) = send_signed(&format!("{base}{q}"), &sig).await;
        assert_eq!(s, 400, "{q}: {b}");
        assert!(b["error"].is_string() && b["message"].is_string(), "{b}");
    }
    assert_eq!(
        stack.verify_calls(),
        0,
        "bad input never reaches the facilitator"
    );

    // Undecodable payment header: 400, no facilitator call.
    let (s, _, b) = send_signed(
        &format!("{base}?url={}", enc(&up.url("/hello"))),
        "%%%not-base64",
    )
    .await;
    assert_eq!(s, 400, "{b}");
    assert_eq!(b["error"], "invalid_payment_header");
    assert_eq!(stack.verify_calls(), 0);

    // Tampered offer (amount): 402 "No matching payment requirements", no facilitator call.
    let mut tampered = signed.payload.clone();
    tampered["accepted"]["amount"] = Value::String("1".into());
    let t = {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(tampered.to_string())
    };
    let (s, h, _) = send_signed(&format!("{base}?url={}", enc(&up.url("/hello"))), &t).await;
    assert_eq!(s, 402);
    let pr = decode_b64_json(h["payment-required"].to_str().unwrap());
    assert_eq!(pr["error"], "No matching payment requirements");
    assert_eq!(stack.verify_calls(), 0);

    // Failures after verify: blocked targets, redirects to refused addresses, upstream errors,
    // unsupported types, oversize bodies, timeouts. Verified, never settled.
    let cases: Vec<(String, u16, &str)> = vec![
        ("http://127.0.0.2/".to_string(), 400, "blocked_target"),
        ("http://2130706434/".to_string(), 400, "blocked_target"),
        (
            "http://[::ffff:127.0.0.2]/".to_string(),
            400,
            "blocked_target",
        ),
        (
            "http://169.254.169.254/latest/meta-data/".to_string(),
            400,
            "blocked_target",
        ),
        ("http://localhost./".to_string(), 400, "blocked_target"),
        (up.url("/to-canary"), 400, "blocked_target"),
        (up.url("/missing"), 502, "upstream_status"),
        (up.url("/server-error"), 502, "upstream_status"),
        (up.url("/png"), 415, "unsupported_content_type"),
        (up.url("/sized?n=200001"), 413, "upstream_too_large"),
        (up.url("/redirect/4"), 502, "too_many_redirects"),
        ("http://127.0.0.1:9/".to_string(), 502, "connect_failed"),
    ];
    // A payment pays for one call: each case signs its own (the ledger binds a payment to its
    // route, method and input).
    let mut verifies = 0;
    let mut failing_sig = None;
    for (target, status, code) in &cases {
        let url = format!("{base}?url={}", enc(target));
        let one = stack
            .sign_only_async(&url, "GET", None)
            .await
            .payment_signature;
        let (s, h, b) = send_signed(&url, &one).await;
        assert_eq!(
            (s, b["error"].as_str().unwrap_or("")),
            (*status, *code),
            "{target}: {b}"
        );
        assert!(
            h.get("payment-response").is_none(),
            "{target}: no receipt on a failure"
        );
        if *code != "blocked_target" || target.starts_with("http://127.0.0.1:") {
            verifies += 1;
        }
        if *code == "upstream_status" && failing_sig.is_none() {
            failing_sig = Some((url, one));
        }
    }
    // The timeout edge: the fetch cap is 8 s.
    let slow = format!("{base}?url={}", enc(&up.url("/slow?ms=20000")));
    let slow_sig = stack
        .sign_only_async(&slow, "GET", None)
        .await
        .payment_signature;
    let (s, _, b) = send_signed(&slow, &slow_sig).await;
    assert_eq!(
        (s, b["error"].as_str().unwrap()),
        (504, "upstream_timeout"),
        "{b}"
    );
    verifies += 1;

    // Refusals by the URL's spelling answer before the facilitator; the others after verify.
    assert_eq!(stack.verify_calls(), cases.len() + 1 - 5);
    assert_eq!(verifies, cases.len() + 1 - 5);

    // A payment presented for another input: refused before the facilitator.
    let (failing_url, failing) = failing_sig.expect("an upstream_status case");
    let (s, _, b) = send_signed(&format!("{base}?url={}", enc(&up.url("/hello"))), &failing).await;
    assert_eq!(
        (s, b["error"].as_str().unwrap()),
        (409, "payment_bound_elsewhere"),
        "{b}"
    );
    assert_eq!(
        stack.verify_calls(),
        verifies,
        "no verify for a mismatched payment"
    );

    // Replaying a failing call is capped: the default 3 attempts, then 429 with no verify.
    for _ in 0..2 {
        let (s, _, b) = send_signed(&failing_url, &failing).await;
        assert_eq!(
            (s, b["error"].as_str().unwrap()),
            (502, "upstream_status"),
            "{b}"
        );
        verifies += 1;
    }
    let (s, _, b) = send_signed(&failing_url, &failing).await;
    assert_eq!(
        (s, b["error"].as_str().unwrap()),
        (429, "payment_attempts_exhausted"),
        "{b}"
    );
    assert_eq!(stack.verify_calls(), verifies);
    assert_eq!(stack.settle_calls(), 0, "no not-charged outcome settles");
    assert_eq!(canary.hits(), 0, "the canary was never reached");
    assert_eq!(
        stack.usdc_balance(&stack.buyer),
        buyer_start,
        "nothing moved on-chain"
    );

    // The first signature, used for the call it was signed for, is charged once.
    let hello = format!("{base}?url={}", enc(&up.url("/hello")));
    let (s, h, b) = send_signed(&hello, &sig).await;
    assert_eq!(s, 200, "{b}");
    let receipt = decode_b64_json(h["payment-response"].to_str().unwrap());
    assert_eq!(receipt["success"], true);
    assert_eq!(stack.settle_calls(), 1);
    assert_eq!(stack.usdc_balance(&stack.buyer), buyer_start - 20_000);

    // Repeated after settlement (a client that lost the answer): the kept answer and receipt,
    // no second verify or settle.
    let verifies_now = stack.verify_calls();
    let (s2, h2, b2) = send_signed(&hello, &sig).await;
    assert_eq!(s2, 200, "{b2}");
    assert_eq!(b2, b, "the same answer");
    assert_eq!(
        h2["payment-response"], h["payment-response"],
        "the same receipt"
    );
    assert_eq!(stack.verify_calls(), verifies_now);
    assert_eq!(stack.settle_calls(), 1);
    assert_eq!(stack.usdc_balance(&stack.buyer), buyer_start - 20_000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settlement_failures_withhold_pending_resumes_and_duplicates_are_served_once() {
    let stack = LocalStack::start();
    let canary = upstream::canary("127.0.0.2").await;
    let up = upstream::start(&canary.url()).await;
    let paycall = paycall_for(&stack).await;
    let target = |p: &str| paycall.url(&format!("/api/http?url={}", enc(&up.url(p))));
    let buyer_start = stack.usdc_balance(&stack.buyer);

    // Settlement refused: the answer is withheld, 402 with a failure receipt.
    let sig = stack
        .sign_only_async(&target("/cookie"), "GET", None)
        .await
        .payment_signature;
    stack.set_mode("normal", "fail");
    let (s, h, b) = send_signed(&target("/cookie"), &sig).await;
    assert_eq!(s, 402, "{b}");
    assert_eq!(b["error"], "settlement_failed");
    assert!(
        !b.to_string().contains("with cookie"),
        "paid content withheld: {b}"
    );
    let receipt = decode_b64_json(h["payment-response"].to_str().unwrap());
    assert_eq!(receipt["success"], false);
    assert_eq!(stack.usdc_balance(&stack.buyer), buyer_start);

    // Settlement pending: 503 + Retry-After, never a fresh 402; the same signature later gets
    // the kept answer without redoing the work.
    stack.set_mode("normal", "pending");
    let sig = stack
        .sign_only_async(&target("/cookie"), "GET", None)
        .await
        .payment_signature;
    let hits_before = up.total();
    let (s, h, b) = send_signed(&target("/cookie"), &sig).await;
    assert_eq!(s, 503, "{b}");
    assert_eq!(b["error"], "settlement_pending");
    assert!(h.get("retry-after").is_some());
    assert!(h.get("payment-required").is_none(), "no fresh challenge");
    assert!(!b.to_string().contains("with cookie"));
    assert_eq!(up.total(), hits_before + 1);
    stack.set_mode("normal", "normal");
    let (s, h, b) = send_signed(&target("/cookie"), &sig).await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["body"], "with cookie");
    assert!(
        b["headers"].get("set-cookie").is_none(),
        "Set-Cookie removed"
    );
    assert_eq!(b["headers"]["x-upstream"], "yes");
    assert_eq!(
        up.total(),
        hits_before + 1,
        "the kept answer is served, the work is not redone"
    );
    let receipt = decode_b64_json(h["payment-response"].to_str().unwrap());
    assert_eq!(receipt["success"], true);
    assert_eq!(stack.usdc_balance(&stack.buyer), buyer_start - 10_000);

    // The same payment five times at once: served once, the others get 409.
    stack.reset_calls();
    let sig = stack
        .sign_only_async(&target("/slow?ms=1500"), "GET", None)
        .await
        .payment_signature;
    let url = target("/slow?ms=1500");
    let tasks: Vec<_> = (0..5)
        .map(|_| {
            let (u, s) = (url.clone(), sig.clone());
            tokio::spawn(async move { send_signed(&u, &s).await.0 })
        })
        .collect();
    let mut statuses = Vec::new();
    for t in tasks {
        statuses.push(t.await.unwrap());
    }
    statuses.sort();
    assert_eq!(statuses, vec![200, 409, 409, 409, 409], "{statuses:?}");
    assert_eq!(up.hits.slow.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert_eq!(stack.settle_calls(), 1);
    assert_eq!(stack.usdc_balance(&stack.buyer), buyer_start - 20_000);

    // Facilitator down or hanging at verify: 502 / 504 with no work done.
    let hits_before = up.total();
    let sig = stack
        .sign_only_async(&target("/hello"), "GET", None)
        .await
        .payment_signature;
    stack.set_mode("down", "normal");
    let (s, _, b) = send_signed(&target("/hello"), &sig).await;
    assert_eq!(s, 502, "{b}");
    stack.set_mode("unavailable", "normal");
    let (s, _, b) = send_signed(&target("/hello"), &sig).await;
    assert!(s == 502 || s == 402, "{s} {b}");
    stack.set_mode("hang", "normal");
    let started = std::time::Instant::now();
    let (s, _, b) = send_signed(&target("/hello"), &sig).await;
    assert_eq!(s, 504, "{b}");
    assert!(started.elapsed() < Duration::from_secs(19));
    assert_eq!(
        up.total(),
        hits_before,
        "no work without a verified payment"
    );
    stack.set_mode("normal", "normal");
    assert_eq!(stack.usdc_balance(&stack.buyer), buyer_start - 20_000);
}

/// The ledger's release rule: a kept reply leaves only on proof of payment. A payer who cancels
/// the authorization after a "pending" answer gets a 402, not the content (the facilitator's
/// "authorization is used or canceled" is not proof); a payment made for one route is refused
/// on another of the same price before any facilitator call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pending_payment_is_released_only_on_proof_of_transfer() {
    let stack = LocalStack::start();
    let canary = upstream::canary("127.0.0.2").await;
    let up = upstream::start(&canary.url()).await;
    let paycall = paycall_for(&stack).await;
    let buyer_start = stack.usdc_balance(&stack.buyer);
    let target = paycall.url(&format!("/api/http?url={}", enc(&up.url("/cookie"))));

    stack.set_mode("normal", "pending");
    let signed = stack.sign_only_async(&target, "GET", None).await;
    let (s, _, b) = send_signed(&target, &signed.payment_signature).await;
    assert_eq!(
        (s, b["error"].as_str()),
        (503, Some("settlement_pending")),
        "{b}"
    );

    // The payer cancels the authorization on chain, then repeats the request.
    let nonce = signed.payload["payload"]["authorization"]["nonce"]
        .as_str()
        .unwrap()
        .to_string();
    stack.cancel_authorization(&nonce);
    stack.set_mode("normal", "normal");
    let (s, _, b) = send_signed(&target, &signed.payment_signature).await;
    assert_eq!(
        (s, b["error"].as_str()),
        (402, Some("settlement_failed")),
        "{b}"
    );
    assert!(
        !b.to_string().contains("with cookie"),
        "content withheld: {b}"
    );
    assert_eq!(
        stack.usdc_balance(&stack.buyer),
        buyer_start,
        "nothing moved"
    );
    // And it stays refused.
    let (s, _, b) = send_signed(&target, &signed.payment_signature).await;
    assert!(s == 402 || s == 409 || s == 429, "{s} {b}");
    assert!(!b.to_string().contains("with cookie"), "{b}");

    // A /api/fetch payment (0.02) presented to /api/pdf (0.02): refused before verify.
    let fetch = paycall.url(&format!("/api/fetch?url={}", enc(&up.url("/hello"))));
    let sig = stack
        .sign_only_async(&fetch, "GET", None)
        .await
        .payment_signature;
    stack.reset_calls();
    let pdf = paycall.url(&format!("/api/pdf?url={}", enc(&up.url("/hello"))));
    let (s, _, b) = send_signed(&pdf, &sig).await;
    assert_eq!(
        (s, b["error"].as_str()),
        (400, Some("invalid_payment")),
        "{b}"
    );
    assert_eq!(stack.verify_calls(), 0);
    assert_eq!(stack.settle_calls(), 0);
}

/// A verified payment's work, settlement and ledger row finish even if the client hangs up; the
/// client that lost the answer repeats the same request and gets it, settled once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_hangs_up_is_still_settled_and_can_fetch_its_answer() {
    let stack = LocalStack::start();
    let canary = upstream::canary("127.0.0.2").await;
    let up = upstream::start(&canary.url()).await;
    let paycall = paycall_for(&stack).await;
    let buyer_start = stack.usdc_balance(&stack.buyer);
    let target = paycall.url(&format!("/api/http?url={}", enc(&up.url("/slow?ms=1500"))));
    let sig = stack
        .sign_only_async(&target, "GET", None)
        .await
        .payment_signature;
    stack.reset_calls();
    // The client gives up after 300 ms, long before the upstream answers.
    let gave_up = support::server::client()
        .get(&target)
        .header("PAYMENT-SIGNATURE", &sig)
        .timeout(Duration::from_millis(300))
        .send()
        .await;
    assert!(gave_up.is_err(), "the client hung up");
    let started = std::time::Instant::now();
    while stack.settle_calls() == 0 || stack.usdc_balance(&stack.buyer) == buyer_start {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the settlement never happened after the hang-up"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(stack.usdc_balance(&stack.buyer), buyer_start - 10_000);
    // The same request again: the kept answer with its receipt, no new work, no second settle.
    // The transfer can land a moment before the ledger row is released: a client told 409
    // `payment_in_flight` repeats after Retry-After, as the answer says (bounded).
    let started = std::time::Instant::now();
    let (s, h, b) = loop {
        let (s, h, b) = send_signed(&target, &sig).await;
        if s != 409 || started.elapsed() > Duration::from_secs(20) {
            break (s, h, b);
        }
        assert_eq!(b["error"], "payment_in_flight", "{b}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(s, 200, "{b}");
    assert!(h.get("payment-response").is_some());
    assert_eq!(up.hits.slow.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert_eq!(stack.settle_calls(), 1);
    assert_eq!(stack.usdc_balance(&stack.buyer), buyer_start - 10_000);
}
