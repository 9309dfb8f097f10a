//! Every limit of /api/http and /api/fetch at its edge, through the shipped config and a real
//! payment: response caps (exact size passes, one byte more streamed is cut and charged, one
//! byte more declared is 413 and not charged), redirect caps, the request-body cap, the URL
//! length cap, the outbound-header count.

use crate::support;
use support::shipped::paycall_for;
use support::{stack, upstream};

use serde_json::{json, Value};

use stack::LocalStack;

use support::server::enc;

async fn send(method: &str, url: &str, sig: &str, body: Option<String>) -> (u16, Value) {
    let (status, _, body) = support::server::send_signed_with(method, url, sig, body).await;
    (status, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_and_fetch_limits_at_their_edges() {
    let stack = LocalStack::start();
    let canary = upstream::canary("127.0.0.2").await;
    let up = upstream::start(&canary.url()).await;
    let paycall = paycall_for(&stack).await;
    let http = |target: &str| paycall.url(&format!("/api/http?url={}", enc(target)));
    let fetch = |target: &str| paycall.url(&format!("/api/fetch?url={}", enc(target)));
    let sign = |u: String| {
        let s = &stack;
        async move { s.sign_only_async(&u, "GET", None).await.payment_signature }
    };

    // /api/http response cap 384,000 bytes.
    stack.reset_calls();
    let (s, b) = send(
        "GET",
        &http(&up.url("/sized?n=384001")),
        &sign(http(&up.url("/sized?n=384001"))).await,
        None,
    )
    .await;
    assert_eq!(
        (s, b["error"].as_str()),
        (413, Some("upstream_too_large")),
        "declared one byte over"
    );
    assert_eq!(stack.settle_calls(), 0);
    let (s, b) = send(
        "GET",
        &http(&up.url("/redirect/4")),
        &sign(http(&up.url("/redirect/4"))).await,
        None,
    )
    .await;
    assert_eq!(
        (s, b["error"].as_str()),
        (502, Some("too_many_redirects")),
        "{b}"
    );
    assert_eq!(stack.settle_calls(), 0);
    let (s, b) = send(
        "GET",
        &http(&up.url("/sized?n=384000")),
        &sign(http(&up.url("/sized?n=384000"))).await,
        None,
    )
    .await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(
        (b["bytesRead"].as_u64(), b["truncated"].as_bool()),
        (Some(384_000), Some(false))
    );
    assert_eq!(stack.settle_calls(), 1);

    let chunked = upstream::chunked(384_001).await;
    let (s, b) = send("GET", &http(&chunked), &sign(http(&chunked)).await, None).await;
    assert_eq!(s, 200, "streamed past the cap: cut and charged");
    assert_eq!(
        (b["bytesRead"].as_u64(), b["truncated"].as_bool()),
        (Some(384_000), Some(true))
    );
    assert_eq!(b["body"].as_str().unwrap().len(), 384_000);

    let (s, b) = send(
        "GET",
        &http(&up.url("/redirect/3")),
        &sign(http(&up.url("/redirect/3"))).await,
        None,
    )
    .await;
    assert_eq!(s, 200, "three redirects are allowed: {b}");
    assert_eq!(b["body"], "hello");
    assert_eq!(b["redirects"].as_array().unwrap().len(), 3);

    // URL length 2048 (schema), outbound header count 32, request body 64,000 bytes.
    stack.reset_calls();
    let long = format!(
        "{}?q={}",
        up.url("/echo"),
        "a".repeat(2049 - up.url("/echo?q=").len())
    );
    assert_eq!(long.len(), 2049);
    let (s, b) = send("GET", &http(&long), &sign(http(&long)).await, None).await;
    assert_eq!(
        (s, b["error"].as_str()),
        (400, Some("invalid_parameter")),
        "{b}"
    );
    let headers: serde_json::Map<String, Value> =
        (0..33).map(|i| (format!("x-h{i}"), json!("v"))).collect();
    let post = paycall.url("/api/http");
    let body = json!({"url": up.url("/echo"), "method": "POST", "headers": headers}).to_string();
    let (s, b) = send("POST", &post, &sign(post.clone()).await, Some(body)).await;
    assert_eq!((s, b["error"].as_str()), (400, Some("bad_headers")), "{b}");
    let mk = |len: usize| {
        let skeleton = json!({"url": up.url("/echo"), "method": "POST", "body": ""}).to_string();
        let pad = len - skeleton.len();
        json!({"url": up.url("/echo"), "method": "POST", "body": "p".repeat(pad)}).to_string()
    };
    let over = mk(64_001);
    assert_eq!(over.len(), 64_001);
    let (s, b) = send("POST", &post, &sign(post.clone()).await, Some(over)).await;
    assert_eq!(
        (s, b["error"].as_str()),
        (413, Some("request_too_large")),
        "{b}"
    );
    assert_eq!(
        stack.verify_calls(),
        0,
        "input limits answer before the facilitator"
    );
    let exact = mk(64_000);
    let (s, b) = send("POST", &post, &sign(post.clone()).await, Some(exact)).await;
    assert_eq!(s, 200, "{b}");
    let echoed: Value = serde_json::from_str(b["body"].as_str().unwrap()).unwrap();
    let skeleton = json!({"url": up.url("/echo"), "method": "POST", "body": ""}).to_string();
    assert_eq!(
        echoed["body"].as_str().unwrap().len(),
        64_000 - skeleton.len(),
        "the whole body went upstream"
    );
    assert_eq!(stack.settle_calls(), 1);

    // /api/fetch: ~200 KB cap.
    stack.reset_calls();
    let (s, b) = send(
        "GET",
        &fetch(&up.url("/sized?n=200001")),
        &sign(fetch(&up.url("/sized?n=200001"))).await,
        None,
    )
    .await;
    assert_eq!(
        (s, b["error"].as_str()),
        (413, Some("upstream_too_large")),
        "{b}"
    );
    assert_eq!(stack.settle_calls(), 0);
    let chunked = upstream::chunked(200_001).await;
    let (s, b) = send("GET", &fetch(&chunked), &sign(fetch(&chunked)).await, None).await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(
        (b["bytesRead"].as_u64(), b["truncated"].as_bool()),
        (Some(200_000), Some(true))
    );
    assert_eq!(stack.settle_calls(), 1);

    // Issue 21: a page whose tree would outgrow the node budget (500 distinct formatting
    // elements reconstructed in ~48,000 paragraphs) is 413 html_too_complex, quickly, never
    // settled.
    let hostile = upstream::chunked_body(
        "text/html",
        paycall::doc::parse::adoption_agency_page(500, 199_997).into_bytes(),
    )
    .await;
    let sig = sign(fetch(&up.url("/hello"))).await;
    stack.reset_calls();
    let t = std::time::Instant::now();
    let (s, b) = send("GET", &fetch(&hostile), &sig, None).await;
    assert_eq!(
        (s, b["error"].as_str()),
        (413, Some("html_too_complex")),
        "{b}"
    );
    assert!(
        t.elapsed() < std::time::Duration::from_secs(8),
        "{:?}",
        t.elapsed()
    );
    assert_eq!(stack.settle_calls(), 0);
    assert_eq!(canary.hits(), 0);
}
