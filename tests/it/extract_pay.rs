//! /api/extract paid for real with the SHIPPED routes.yaml and pipelines: a local chain, the
//! official x402 facilitator and client (tests/e2e), a local page server on 127.0.0.1.
//!
//! Billing rule under test: charged for any 200; with fields, charged only if at least one
//! matched — a 422 no_fields_matched is verified but never settled. Bad input (bad_fields,
//! bad_html, html over 200,000 bytes, missing input) is refused before the facilitator is asked.
//! The demo twin answers the fixed sample page for free.

use crate::support;
use support::shipped::paycall_for;
use support::stack;

use serde_json::{json, Value};
use support::extract::pages;
use support::server::enc;

use paycall::server;
use stack::LocalStack;

async fn send(method: &str, url: &str, sig: &str, body: Option<String>) -> (u16, bool, Value) {
    let (status, h, body) = support::server::send_signed_with(method, url, sig, body).await;
    (status, h.contains_key("payment-response"), body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extract_is_charged_only_when_it_delivers() {
    let stack = LocalStack::start();
    let site = pages().await;
    let paycall = paycall_for(&stack).await;
    let buyer_start = stack.usdc_balance(&stack.buyer);
    let get = |fields: &Value| {
        paycall.url(&format!(
            "/api/extract?url={}&fields={}",
            enc(&site.url("/article")),
            enc(&fields.to_string())
        ))
    };

    // Unpaid: 402 with the challenge at the route's price; nothing fetched, nothing verified.
    let r = support::server::client()
        .get(paycall.url("/api/extract"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 402);
    let challenge: Value = {
        use base64::Engine;
        let raw = r.headers()["payment-required"]
            .to_str()
            .unwrap()
            .to_string();
        serde_json::from_slice(
            &base64::engine::general_purpose::STANDARD
                .decode(raw)
                .unwrap(),
        )
        .unwrap()
    };
    assert_eq!(challenge["accepts"][0]["amount"], "15000");
    assert_eq!(stack.verify_calls() + stack.settle_calls(), 0);

    // Charged: GET with fields, one of two matches.
    let fields = json!({"heading": "h1", "nothing": ".nope"});
    let paid = stack.pay_async(&get(&fields), "GET", None).await;
    assert_eq!(paid.status, 200, "{:?}", paid.body);
    let b = &paid.body;
    assert_eq!(b["fields"]["heading"], "Tide Tables for the Northern Coast");
    assert_eq!(b["fieldErrors"], json!({"nothing": "no_match"}));
    assert_eq!(
        (b["matchedFields"].as_u64(), b["requestedFields"].as_u64()),
        (Some(1), Some(2))
    );
    assert_eq!(b["source"], "extract");
    assert_eq!(b["priced"]["amountAtomic"], "15000");
    assert_eq!(b["priced"]["amountUsd"], "0.015");
    assert_eq!(paid.payment_response.as_ref().unwrap()["success"], true);
    assert_eq!(paid.buyer_spent(), 15_000, "buyer paid exactly the price");
    assert_eq!(paid.pay_to_received(), 15_000);
    assert_eq!(stack.settle_calls(), 1);

    // Charged: POST with the caller's html (nothing fetched), no fields.
    stack.reset_calls();
    let body =
        json!({"url": "https://example.com/mine", "html": "<title>Mine</title><a href='/x'>x</a>"})
            .to_string();
    let paid = stack
        .pay_async(&paycall.url("/api/extract"), "POST", Some(&body))
        .await;
    assert_eq!(paid.status, 200, "{:?}", paid.body);
    assert_eq!(paid.body["title"], "Mine");
    assert_eq!(
        paid.body["links"],
        json!([{"href": "https://example.com/x", "text": "x"}])
    );
    assert_eq!(paid.buyer_spent(), 15_000);
    assert_eq!(stack.settle_calls(), 1);

    // Not charged: failing inputs leave their payments unspent.
    let buyer_mid = stack.usdc_balance(&stack.buyer);
    let sig = stack
        .sign_only_async(&get(&json!({"a": "h1"})), "GET", None)
        .await
        .payment_signature;
    stack.reset_calls();
    let post = paycall.url("/api/extract");
    let big = format!("<p>{}</p>", " ".repeat(200_000));
    // Refused before the facilitator: missing input, bad fields, bad html, html too large.
    let early: Vec<(&str, String, Option<String>, u16, &str)> = vec![
        (
            "GET",
            paycall.url("/api/extract"),
            None,
            400,
            "missing_parameter",
        ),
        (
            "GET",
            get(&json!({"a": {"selector": "p", "limit": 99, "all": true}})),
            None,
            400,
            "bad_fields",
        ),
        (
            "GET",
            get(&json!({"a": "p".repeat(301)})),
            None,
            400,
            "bad_fields",
        ),
        (
            "POST",
            post.clone(),
            Some(json!({"html": "no markup"}).to_string()),
            400,
            "bad_html",
        ),
        (
            "POST",
            post.clone(),
            Some(json!({"html": big}).to_string()),
            413,
            "html_too_large",
        ),
        (
            "GET",
            paycall.url(&format!("/api/extract?url={}", enc("http://127.0.0.2/"))),
            None,
            400,
            "blocked_target",
        ),
    ];
    for (m, u, body, status, code) in &early {
        let (s, receipt, b) = send(m, u, &sig, body.clone()).await;
        assert_eq!(
            (s, b["error"].as_str().unwrap_or("")),
            (*status, *code),
            "{u}: {b}"
        );
        assert!(!receipt);
    }
    assert_eq!(
        stack.verify_calls(),
        0,
        "bad input never reaches the facilitator"
    );

    // After verification: no field matched (422), not HTML (415), upstream failure (502).
    let late: Vec<(String, u16, &str)> = vec![
        (
            get(&json!({"a": ".nope", "b": {"selector": "h1", "attr": "data-x"}})),
            422,
            "no_fields_matched",
        ),
        (
            paycall.url(&format!("/api/extract?url={}", enc(&site.url("/json")))),
            415,
            "unsupported_content_type",
        ),
        (
            paycall.url(&format!("/api/extract?url={}", enc(&site.url("/missing")))),
            502,
            "upstream_status",
        ),
        (
            paycall.url(&format!(
                "/api/extract?url={}&fields={}",
                enc(&site.url("/deep?n=300")),
                enc(r#"{"p":"p"}"#)
            )),
            422,
            "no_fields_matched",
        ),
    ];
    // A payment pays for one call (the ledger binds it to its input): one signature each.
    let mut late_sigs = Vec::new();
    for (u, status, code) in &late {
        let one = stack
            .sign_only_async(u, "GET", None)
            .await
            .payment_signature;
        let (s, receipt, b) = send("GET", u, &one, None).await;
        late_sigs.push(one);
        assert_eq!(
            (s, b["error"].as_str().unwrap_or("")),
            (*status, *code),
            "{u}: {b}"
        );
        assert!(!receipt, "no receipt on a failure");
    }
    let (_, _, b) = send("GET", &late[0].0, &late_sigs[0], None).await;
    assert_eq!(
        b["fieldErrors"],
        json!({"a": "no_match", "b": "attr_missing"})
    );
    assert_eq!(stack.verify_calls(), late.len() + 1, "these were verified");
    assert_eq!(
        stack.settle_calls(),
        0,
        "a not-charged outcome never settles"
    );
    assert_eq!(
        stack.usdc_balance(&stack.buyer),
        buyer_mid,
        "nothing moved on-chain"
    );

    // The signature made for a call that matches is charged once.
    let (s, receipt, b) = send("GET", &get(&json!({"a": "h1"})), &sig, None).await;
    assert_eq!(s, 200, "{b}");
    assert!(receipt);
    assert_eq!(stack.settle_calls(), 1);
    assert_eq!(stack.usdc_balance(&stack.buyer), buyer_mid - 15_000);
    assert_eq!(stack.usdc_balance(&stack.buyer), buyer_start - 45_000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_twin_reads_the_fixed_sample_page_for_free() {
    let fac = support::server::fake_facilitator().await;
    let cfg = support::server::shipped_config_on(&fac.url);
    let services = server::services::build(&cfg).expect("services");
    let app = server::build_app(cfg, services).unwrap_or_else(|e| panic!("{e}"));
    let paycall = support::server::start_app(app).await;
    let (s, _, b) = support::server::get_json(&paycall.url("/api/demo/extract")).await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["demo"], true);
    assert_eq!(b["sample_status"], 200);
    let sample = &b["sample"];
    assert_eq!(sample["title"], "A Walker's Guide to the Old Harbour");
    assert_eq!(
        sample["fields"],
        json!({
            "headline": "A Walker's Guide to the Old Harbour",
            "price": "12.50",
            "sections": ["The Lighthouse Loop", "The Market Steps"],
            "firstLink": "https://paycall.example.com/samples/walks/lighthouse.html"
        })
    );
    assert_eq!(sample["matchedFields"], 4);
    assert_eq!(sample["jsonLd"][0]["author"]["name"], "Mara Quay");
    assert_eq!(
        sample["images"][0]["src"],
        "https://paycall.example.com/img/harbour-cover.jpg"
    );
    assert_eq!(
        fac.payment_hits.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "the demo never reaches the facilitator"
    );
    // Discovery lists the route with its inputs and errors.
    let (_, _, api) = support::server::get_json(&paycall.url("/openapi.json")).await;
    let get = &api["paths"]["/api/extract"]["get"];
    let names: Vec<&str> = get["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["url", "fields", "html"]);
    for status in ["400", "402", "413", "415", "422", "502", "504"] {
        assert!(
            get["responses"][status].is_object(),
            "GET documents {status}"
        );
    }
    assert!(get["responses"]["422"]["description"]
        .as_str()
        .unwrap()
        .contains("fieldErrors"));
    let post = &api["paths"]["/api/extract"]["post"];
    assert!(
        post["requestBody"]["content"]["application/json"]["schema"]["properties"]["html"]
            .is_object()
    );
    assert!(get["description"].as_str().unwrap().contains("og:title"));
    let llms = support::server::get_text(&paycall.url("/llms.txt")).await;
    assert!(llms.contains("/api/extract"), "{llms}");
    let try_line = llms
        .lines()
        .find(|l| l.contains("Try") && l.contains("/api/extract?"))
        .expect("a curl line for /api/extract");
    assert!(
        try_line.contains("fields=") && !try_line.contains("html="),
        "the curl example uses the parameters' examples, not the whole sample page: {try_line}"
    );
}
