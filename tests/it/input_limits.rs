//! The query-string parameter cap through the real server: an unpaid request is answered 402
//! whatever its query (docs/decisions.md#order-of-checks), a paid one with too many parameters is a 400 before the
//! facilitator is asked anything, and a query at the cap is served as usual.

use crate::support;

use paycall::pipeline::input::MAX_QUERY_PARAMS;
use std::sync::atomic::Ordering;
use support::server::*;

const ROUTES: &str = r#"routes:
  - path: /api/echo
    methods: [GET]
    price_usd: "0.01"
    summary: Echo
    pipeline: paid_static
    input:
      - name: q
        type: string
        description: Anything
"#;

fn query(n: usize) -> String {
    (0..n)
        .map(|i| format!("k{i}=v"))
        .collect::<Vec<_>>()
        .join("&")
}

#[tokio::test]
async fn too_many_query_parameters_are_402_unpaid_and_400_paid() {
    let fac = fake_facilitator().await;
    let yaml = format!("{}{}", service_yaml(&fac.url, 100, 100, &[]), ROUTES);
    let (_d, server) = serve_yaml(&yaml, &[("paid_static", PAID_STATIC)]).await;

    let over = server.url(&format!("/api/echo?{}", query(MAX_QUERY_PARAMS + 1)));
    let resp = client().get(&over).send().await.unwrap();
    assert_eq!(
        resp.status().as_u16(),
        402,
        "an unpaid request gets the challenge"
    );
    assert!(resp.headers().contains_key("payment-required"));

    let (status, _, body) = send_signed(&over, &support::server::recorded_signature()).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"], "too_many_parameters");
    assert!(body["message"].as_str().unwrap().contains("64"), "{body}");
    assert_eq!(
        fac.payment_hits.load(Ordering::SeqCst),
        0,
        "nothing verified"
    );

    // At the cap the input is fine: the request goes on to the offer check (the recorded
    // payment is for another service, so it ends in a 402, not a 400).
    let at = server.url(&format!("/api/echo?{}", query(MAX_QUERY_PARAMS)));
    let (status, _, body) = send_signed(&at, &support::server::recorded_signature()).await;
    assert_ne!(status, 400, "{body}");
    server.shutdown().await;
}
