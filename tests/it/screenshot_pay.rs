//! /api/screenshot paid for real with the SHIPPED routes.yaml and pipelines: a local chain,
//! the official x402 facilitator and client (tests/e2e), the real chromium, pages on 127.0.0.1
//! (the only allowed address) and a canary on 127.0.0.2.
//!
//! Billing: an image returned is charged once (whatever the page's own status); bad input,
//! refused targets, navigation failures never settle. Also: the demo twin with a fixed page.

use crate::support;
use support::shipped::paycall_for;
use support::shipped::send_fresh;
use support::{pages, stack, upstream};

use std::path::Path;

use stack::LocalStack;

use support::server::enc;

use support::server::send_signed;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn screenshots_are_paid_for_real_and_failures_never_settle() {
    let stack = LocalStack::start();
    let canary = upstream::canary("127.0.0.2").await;
    let pages = pages::start(canary.addr).await;
    let paycall = paycall_for(&stack).await;
    let base = paycall.url("/api/screenshot");

    // Unpaid: 402 at the route's price; nothing rendered, nothing asked of the facilitator.
    let r = support::server::client()
        .get(format!("{base}?url={}", enc(&pages.url("/plain"))))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 402);
    assert_eq!(pages.hits(), 0);
    assert_eq!(stack.verify_calls() + stack.settle_calls(), 0);

    // Paid: the image, charged exactly the price, settled once.
    let url = format!(
        "{base}?url={}&width=640&height=480",
        enc(&pages.url("/missing"))
    );
    let paid = stack.pay_async(&url, "GET", None).await;
    assert_eq!(paid.status, 200, "{:?}", paid.body);
    let b = &paid.body;
    assert_eq!(b["mimeType"], "image/png");
    assert_eq!(
        b["pageStatus"], 404,
        "billed whatever the page's own status"
    );
    assert_eq!(
        (b["width"].as_u64(), b["height"].as_u64()),
        (Some(640), Some(480))
    );
    let png = pages::decode_image(b["imageBase64"].as_str().unwrap());
    assert_eq!(pages::png_size(&png), (640, 480));
    assert_eq!(b["priced"]["amountAtomic"], "20000");
    assert_eq!(paid.payment_response.as_ref().unwrap()["success"], true);
    assert_eq!(paid.buyer_spent(), 20_000);
    assert_eq!(paid.pay_to_received(), 20_000);
    assert_eq!(stack.settle_calls(), 1);

    // Not charged: one signature replayed against failing inputs stays unspent.
    stack.reset_calls();
    let buyer_start = stack.usdc_balance(&stack.buyer);
    let signed = stack
        .sign_only_async(
            &format!("{base}?url={}", enc(&pages.url("/plain"))),
            "GET",
            None,
        )
        .await;
    let sig = signed.payment_signature.clone();
    // Bad parameters and refused spellings: 400 before the facilitator.
    for q in [
        format!("?url={}&width=2000", enc(&pages.url("/plain"))),
        format!("?url={}&format=gif", enc(&pages.url("/plain"))),
        "?url=http%3A%2F%2F127.0.0.2%2F".to_string(),
        String::new(),
    ] {
        let (s, h, b) = send_signed(&format!("{base}{q}"), &sig).await;
        assert_eq!(s, 400, "{q}: {b}");
        assert!(h.get("payment-response").is_none());
    }
    assert_eq!(
        stack.verify_calls(),
        0,
        "bad input never reaches the facilitator"
    );
    // After verification: a redirect to the refused canary (400) and an unreachable page (502).
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    for (target, status, code) in [
        (pages.url("/redirect"), 400, "blocked_target"),
        (
            format!("http://127.0.0.1:{closed}/"),
            502,
            "navigation_failed",
        ),
    ] {
        let (s, h, b) = send_fresh(&stack, &format!("{base}?url={}", enc(&target))).await;
        assert_eq!(
            (s, b["error"].as_str().unwrap_or("")),
            (status, code),
            "{target}: {b}"
        );
        assert!(h.get("payment-response").is_none());
    }
    assert_eq!(stack.verify_calls(), 2);
    assert_eq!(stack.settle_calls(), 0, "no not-charged outcome settles");
    assert_eq!(canary.hits(), 0);
    assert_eq!(
        stack.usdc_balance(&stack.buyer),
        buyer_start,
        "nothing moved on-chain"
    );

    // The same signature on a page that renders: charged once.
    let (s, h, b) = send_signed(&format!("{base}?url={}", enc(&pages.url("/plain"))), &sig).await;
    assert_eq!(s, 200, "{b}");
    assert!(h.get("payment-response").is_some());
    assert_eq!(b["title"], "Plain page");
    assert_eq!(stack.settle_calls(), 1);
    assert_eq!(stack.usdc_balance(&stack.buyer), buyer_start - 20_000);

    paycall.shutdown().await;
}

/// The demo twin runs the route's own chain on its fixed input, free and never settled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_twin_renders_its_fixed_page_for_free() {
    let canary = upstream::canary("127.0.0.2").await;
    let pages = pages::start(canary.addr).await;
    let fac = support::server::fake_facilitator().await;
    let fixed = pages.url("/plain");
    let yaml = format!(
        r#"{service}guard:
  allow_cidrs: ["127.0.0.1/32"]
routes:
  - path: /api/screenshot
    methods: [GET]
    price_usd: "0.02"
    summary: Headless-browser render returned as base64 image
    pipeline: screenshot
    input:
      - {{ name: url, type: string, required: true, format: uri, max_length: 2048 }}
      - {{ name: width, type: integer, default: 1280, minimum: 320, maximum: 1920 }}
      - {{ name: height, type: integer, default: 800, minimum: 240, maximum: 2000 }}
      - {{ name: fullPage, type: boolean, default: false }}
      - {{ name: format, type: string, default: png, enum: [png, jpeg] }}
      - {{ name: delayMs, type: integer, default: 0, minimum: 0, maximum: 3000 }}
    demo:
      input: {{ url: "{fixed}", width: 480, height: 320 }}
      ttl_s: 600
      describe: a fixed local page
"#,
        service = support::server::service_yaml(&fac.url, 30, 10, &[])
    );
    let shipped = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("pipelines/screenshot.yaml"),
    )
    .unwrap();
    let (_dir, server) = support::server::serve_yaml(&yaml, &[("screenshot", &shipped)]).await;
    let (s, _, b) = support::server::get_json(&server.url("/api/demo/screenshot")).await;
    assert_eq!(s, 200, "{b}");
    let text = b.to_string();
    assert!(text.contains("Plain page"), "{text}");
    assert!(text.contains("image/png"), "{text}");
    assert_eq!(
        fac.payment_hits.load(std::sync::atomic::Ordering::SeqCst),
        0
    );
    // Kept: a second demo call is the same sample, no second render.
    let hits = pages.hits();
    let (s, _, _) = support::server::get_json(&server.url("/api/demo/screenshot")).await;
    assert_eq!(s, 200);
    assert_eq!(pages.hits(), hits);
    server.shutdown().await;
}
