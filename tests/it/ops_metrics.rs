//! /metrics on the admin listener, scraped around real calls with the SHIPPED routes.yaml and the
//! local payment stack (chain, official facilitator and client, as tests/it/http_fetch_pay.rs): a
//! paid call, a call refused by the guard after verify, and demo calls move the counters by
//! exactly what they should, and nothing else that they should not.

use crate::support;
use support::server::scrape;
use support::shipped;
use support::{stack, upstream};

use paycall::ops::reload::Live;
use paycall::server;
use stack::LocalStack;
use std::collections::BTreeMap;
use std::sync::Arc;
use support::server::{client, enc, send_signed};

type Scrape = BTreeMap<String, f64>;

/// How much each series moved between two scrapes (series that did not move are left out).
fn moved(before: &Scrape, after: &Scrape) -> BTreeMap<String, f64> {
    after
        .iter()
        .filter(|(k, _)| {
            !k.contains("_bucket")
                && !k.contains("_sum")
                && !k.starts_with("paycall_metrics_scrapes")
                && !k.starts_with("paycall_paid_calls_in_flight")
                // /supported is refreshed in the background (at start, and while the local
                // facilitator names no Solana feePayer): when it lands is not ours to count.
                && !k.contains(r#"endpoint="supported""#)
        })
        .filter_map(|(k, v)| {
            let d = v - before.get(k).copied().unwrap_or(0.0);
            (d != 0.0).then(|| (k.clone(), d))
        })
        .collect()
}

fn expect(pairs: &[(&str, f64)]) -> BTreeMap<String, f64> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paid_a_refused_and_a_demo_call_move_the_counters_exactly() {
    let stack = LocalStack::start();
    let canary = upstream::canary("127.0.0.2").await;
    let up = upstream::start(&canary.url()).await;

    let cfg = shipped::config(&shipped::routes_yaml(), shipped::vars(&stack, &[]));
    let services = server::services::build(&cfg).expect("services");
    let app = server::build_app(cfg, services).unwrap_or_else(|e| panic!("{e}"));
    let live = Live::new(Arc::new(app), None);
    let srv = support::server::start_live(live).await;
    let (base, admin) = (srv.base.clone(), srv.admin.clone());

    // 1. A paid call, charged: the official client's unpaid probe (a 402 challenge), then the
    //    paid request (verify, settle), 10000 atomic units of USDC on Base.
    // The startup warm-up asks the facilitator's /supported in the background: let it land
    // first (bounded), so it is not counted as part of the paid call.
    let warm = "paycall_facilitator_request_seconds_count{endpoint=\"supported\"}";
    let started = std::time::Instant::now();
    while scrape(&admin).await.get(warm).copied().unwrap_or(0.0) < 1.0 {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(15),
            "no /supported warm-up"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let m0 = scrape(&admin).await;
    let url = format!("{base}/api/http?url={}", enc(&up.url("/hello")));
    let paid = stack.pay_async(&url, "GET", None).await;
    assert_eq!(paid.status, 200, "{:?}", paid.body);
    let m1 = scrape(&admin).await;
    assert_eq!(
        moved(&m0, &m1),
        expect(&[
            (
                r#"paycall_http_requests_total{method="GET",route="/api/http",status="402"}"#,
                1.0
            ),
            (
                r#"paycall_http_requests_total{method="GET",route="/api/http",status="200"}"#,
                1.0
            ),
            (
                r#"paycall_payment_required_total{kind="challenge",route="/api/http"}"#,
                1.0
            ),
            (
                r#"paycall_paid_calls_total{outcome="charged",route="/api/http"}"#,
                1.0
            ),
            (
                r#"paycall_revenue_atomic_total{network="eip155:8453",route="/api/http"}"#,
                10000.0
            ),
            (
                r#"paycall_facilitator_request_seconds_count{endpoint="verify"}"#,
                1.0
            ),
            (
                r#"paycall_facilitator_request_seconds_count{endpoint="settle"}"#,
                1.0
            ),
            // The same exchanges per facilitator (the single form's is named `default`).
            (
                r#"paycall_facilitator_exchange_seconds_count{endpoint="verify",facilitator="default"}"#,
                1.0
            ),
            (
                r#"paycall_facilitator_exchange_seconds_count{endpoint="settle",facilitator="default"}"#,
                1.0
            ),
        ])
    );

    // 2. Refused calls. A literal refused address is bad input: 400 before the facilitator.
    //    A redirect to one is found after verify: not charged, never settled.
    let blocked = format!("{base}/api/http?url={}", enc("http://127.0.0.2/"));
    let redirected = format!("{base}/api/http?url={}", enc(&up.url("/to-canary")));
    let sig_blocked = stack.sign_only_async(&blocked, "GET", None).await;
    let sig_redirected = stack.sign_only_async(&redirected, "GET", None).await;
    let m1 = scrape(&admin).await;
    let (s, _, b) = send_signed(&blocked, &sig_blocked.payment_signature).await;
    assert_eq!(s, 400, "{b}");
    assert_eq!(b["error"], "blocked_target");
    let m2 = scrape(&admin).await;
    assert_eq!(
        moved(&m1, &m2),
        expect(&[
            (
                r#"paycall_http_requests_total{method="GET",route="/api/http",status="400"}"#,
                1.0
            ),
            (
                r#"paycall_guard_refusals_total{reason="blocked_target"}"#,
                1.0
            ),
        ])
    );
    let (s, _, b) = send_signed(&redirected, &sig_redirected.payment_signature).await;
    assert_eq!(s, 400, "{b}");
    assert_eq!(b["error"], "blocked_target");
    let m2b = scrape(&admin).await;
    assert_eq!(
        moved(&m2, &m2b),
        expect(&[
            (
                r#"paycall_http_requests_total{method="GET",route="/api/http",status="400"}"#,
                1.0
            ),
            (
                r#"paycall_paid_calls_total{outcome="not_charged",route="/api/http"}"#,
                1.0
            ),
            (
                r#"paycall_guard_refusals_total{reason="blocked_target"}"#,
                1.0
            ),
            (
                r#"paycall_facilitator_request_seconds_count{endpoint="verify"}"#,
                1.0
            ),
            (
                r#"paycall_facilitator_exchange_seconds_count{endpoint="verify",facilitator="default"}"#,
                1.0
            ),
        ])
    );
    let m2 = m2b;
    assert_eq!(canary.hits(), 0);

    // 3. Demo calls: the first produces the sample (miss), the second is served from it (hit);
    //    no payment series moves.
    let d1 = client()
        .get(format!("{base}/api/demo/http"))
        .send()
        .await
        .unwrap()
        .status()
        .as_u16();
    let d2 = client()
        .get(format!("{base}/api/demo/http"))
        .send()
        .await
        .unwrap()
        .status()
        .as_u16();
    assert_eq!(d1, d2);
    let m3 = scrape(&admin).await;
    let d = d1.to_string();
    let key = format!(
        r#"paycall_http_requests_total{{method="GET",route="/api/demo/http",status="{d}"}}"#
    );
    assert_eq!(
        moved(&m2, &m3),
        expect(&[
            (key.as_str(), 2.0),
            (
                r#"paycall_demo_samples_total{result="miss",route="http"}"#,
                1.0
            ),
            (
                r#"paycall_demo_samples_total{result="hit",route="http"}"#,
                1.0
            ),
        ])
    );

    srv.shutdown(std::time::Duration::from_secs(30)).await;
}
