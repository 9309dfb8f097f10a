//! Demo twins through the real server: the 2.3 envelope, one chain run for a crowd of
//! concurrent requests, sample reuse, failed samples, unknown names, the per-client rate limit
//! and who counts as the client (X-Forwarded-For only from trusted proxies), and that a demo
//! never reaches the facilitator.

use crate::support;

use serde_json::{json, Value};
use std::sync::atomic::Ordering;
use support::server::*;

const ROUTES: &str = r#"routes:
  - path: /api/echo
    methods: [GET, POST]
    price_usd: "0.01"
    summary: Echo
    pipeline: paid_static
    input:
      - name: url
        type: string
        required: true
        format: uri
        description: A URL
      - name: n
        type: integer
        default: 3
        description: How many
    demo:
      input: { url: "https://example.com/" }
      ttl_s: 600
      describe: https://example.com/ with n = 3
  - path: /api/counted
    methods: [GET]
    price_usd: "0.005"
    summary: Counts its runs
    pipeline: counted
    demo:
      ttl_s: 600
      describe: no input
  - path: /api/broken
    methods: [GET]
    price_usd: "0.02"
    summary: Upstream down
    pipeline: broken
    demo:
      ttl_s: 3600
      describe: no input
  - path: /api/flaky
    methods: [GET]
    price_usd: "0.01"
    summary: Works once, then its upstream fails
    pipeline: flaky
    demo:
      ttl_s: 1
      describe: no input
  - path: /api/nodemo
    methods: [GET]
    price_usd: "0.01"
    summary: No demo block
    pipeline: paid_static
  - path: /api/ping
    methods: [GET]
    summary: Free
    pipeline: ping
"#;

const COUNTED: &str = "name: counted\nstages:\n  - stage: payment_gate\n  - stage: count\n    with: { counter: COUNTER, delay_ms: 300 }\n  - stage: bill\n  - stage: settle\n";
const BROKEN: &str = "name: broken\nstages:\n  - stage: payment_gate\n  - stage: static_reply\n    with: { status: 502, body: { error: upstream_error, message: the upstream failed } }\n  - stage: bill\n  - stage: settle\n";
const FLAKY: &str = "name: flaky\nstages:\n  - stage: payment_gate\n  - stage: count\n    with: { counter: FLAKY, fail_after: 1 }\n  - stage: bill\n  - stage: settle\n";
const PING: &str = "name: ping\nstages:\n  - stage: static_reply\n";

async fn start_demo(
    counter: &str,
    facilitator: &str,
    per_minute: u32,
    burst: u32,
    trusted: &[&str],
) -> (ConfigDir, TestServer) {
    let yaml = format!(
        "{}{}",
        service_yaml(facilitator, per_minute, burst, trusted),
        ROUTES
    );
    let counted = COUNTED.replace("COUNTER", counter);
    let flaky = FLAKY.replace("FLAKY", &format!("{counter}-flaky"));
    serve_yaml(
        &yaml,
        &[
            ("paid_static", PAID_STATIC),
            ("counted", &counted),
            ("broken", BROKEN),
            ("flaky", &flaky),
            ("ping", PING),
        ],
    )
    .await
}

#[tokio::test]
async fn envelope_wraps_the_routes_own_answer() {
    let fac = fake_facilitator().await;
    let (_d, server) = start_demo("envelope", &fac.url, 100, 100, &[]).await;
    let (status, h, v) = get_json(&server.url("/api/demo/echo")).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["demo"], true);
    assert_eq!(v["paid_endpoint"], "https://api.paycall.test/api/echo");
    assert_eq!(v["price"], "$0.01");
    assert_eq!(v["fixed_input"], "https://example.com/ with n = 3");
    assert_eq!(v["sample_status"], 200);
    let note = v["note"].as_str().unwrap();
    assert!(
        note.contains("https://api.paycall.test/api/echo") && note.contains("own input"),
        "{note}"
    );
    assert!(note.contains("10 minutes"), "{note}");
    let sample = &v["sample"];
    assert_eq!(sample["echoed"], true, "the route's chain ran");
    assert_eq!(sample["source"], "echo");
    assert_eq!(sample["priced"]["amountUsd"], "0.01");
    assert_eq!(sample["priced"]["amountAtomic"], "10000");
    assert_eq!(sample["priced"]["payTo"], EVM_PAY_TO);
    assert!(sample["asOf"].is_string());
    assert_eq!(h["cache-control"], "public, max-age=60");
    assert_eq!(h["access-control-allow-origin"], "*");
    // never charged, never at the facilitator: no verify or settle call (the server's startup
    // warm-up of /supported is the only request it may see)
    assert_eq!(fac.payment_hits.load(Ordering::SeqCst), 0);
    server.shutdown().await;
}

#[tokio::test]
async fn samples_are_reused_within_their_ttl() {
    let (_d, server) = start_demo("reuse", NO_FACILITATOR, 100, 100, &[]).await;
    let (_, _, a) = get_json(&server.url("/api/demo/echo")).await;
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    let (_, _, b) = get_json(&server.url("/api/demo/echo")).await;
    assert_eq!(a["sample"]["asOf"], b["sample"]["asOf"], "same sample");
    let (_, _, c) = get_json(&server.url("/api/demo/counted")).await;
    let (_, _, d) = get_json(&server.url("/api/demo/counted")).await;
    assert_eq!(c["sample"]["run"], 1);
    assert_eq!(d["sample"]["run"], 1);
    assert_eq!(runs("reuse"), 1);
    server.shutdown().await;
}

#[tokio::test]
async fn a_crowd_on_a_cold_demo_runs_the_chain_once() {
    let (_d, server) = start_demo("crowd", NO_FACILITATOR, 100, 100, &[]).await;
    let url = server.url("/api/demo/counted");
    let mut tasks = Vec::new();
    for _ in 0..20 {
        let url = url.clone();
        tasks.push(tokio::spawn(async move { get_json(&url).await }));
    }
    for t in tasks {
        let (status, _, v) = t.await.unwrap();
        assert_eq!(status, 200);
        assert_eq!(v["sample"]["run"], 1, "{v}");
    }
    assert_eq!(runs("crowd"), 1, "20 concurrent misses, one upstream run");
    server.shutdown().await;
}

#[tokio::test]
async fn a_failed_sample_is_answered_with_its_own_status_never_a_200_envelope() {
    let (_d, server) = start_demo("failed", NO_FACILITATOR, 100, 100, &[]).await;
    let (status, h, v) = get_json(&server.url("/api/demo/broken")).await;
    assert_eq!(status, 502, "the failure's own status: {v}");
    assert_eq!(v["error"], "upstream_error");
    assert_eq!(v["message"], "the upstream failed");
    assert_eq!(v["demo"], true);
    assert_eq!(v["paid_endpoint"], "https://api.paycall.test/api/broken");
    assert!(
        v.get("sample").is_none(),
        "no envelope around a failure: {v}"
    );
    assert_eq!(h["cache-control"], "no-store");
    assert_eq!(h["retry-after"], "30", "the failed sample is kept 30 s");
    server.shutdown().await;
}

#[tokio::test]
async fn a_failed_refresh_serves_the_last_good_sample() {
    let (_d, server) = start_demo("stale", NO_FACILITATOR, 100, 100, &[]).await;
    let (status, h, v) = get_json(&server.url("/api/demo/flaky")).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["sample"]["run"], 1);
    assert!(v.get("stale").is_none());
    assert_eq!(h["cache-control"], "public, max-age=60");
    // The 1 s sample expires; the refresh fails (run 2 answers 502).
    tokio::time::sleep(std::time::Duration::from_millis(1300)).await;
    let (status, h, v) = get_json(&server.url("/api/demo/flaky")).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["sample_status"], 200);
    assert_eq!(v["sample"]["run"], 1, "the last good sample");
    assert_eq!(v["stale"], true);
    assert!(
        v["note"].as_str().unwrap().contains("HTTP 502"),
        "{}",
        v["note"]
    );
    assert_eq!(h["cache-control"], "no-store");
    assert_eq!(runs("stale-flaky"), 2);
    server.shutdown().await;
}

#[tokio::test]
async fn unknown_names_are_404_with_the_list_of_demos() {
    let (_d, server) = start_demo("unknown", NO_FACILITATOR, 100, 100, &[]).await;
    for name in ["nothing", "nodemo", "ping"] {
        let (status, _, v) = get_json(&server.url(&format!("/api/demo/{name}"))).await;
        assert_eq!(status, 404, "{name}");
        assert_eq!(v["error"], "unknown_demo");
        assert_eq!(v["demos"], json!(["echo", "counted", "broken", "flaky"]));
    }
    let resp = client()
        .post(server.url("/api/demo/echo"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 405);
    assert_eq!(resp.headers()["allow"], "GET, HEAD, OPTIONS");
    server.shutdown().await;
}

async fn demo_status(
    server: &TestServer,
    forwarded_for: Option<&str>,
) -> (u16, Option<String>, Value) {
    let mut req = client().get(server.url("/api/demo/echo"));
    if let Some(x) = forwarded_for {
        req = req.header("x-forwarded-for", x);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    let retry = resp
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_string());
    (status, retry, json_of(resp).await)
}

#[tokio::test]
async fn the_burst_is_followed_by_429_with_retry_after() {
    let (_d, server) = start_demo("burst", NO_FACILITATOR, 1, 3, &[]).await;
    for i in 0..3 {
        let (status, _, _) = demo_status(&server, None).await;
        assert_eq!(status, 200, "request {i} is within the burst");
    }
    let (status, retry, v) = demo_status(&server, None).await;
    assert_eq!(status, 429);
    assert_eq!(v["error"], "rate_limited");
    assert!(v["message"]
        .as_str()
        .unwrap()
        .contains("1 requests per minute"));
    let secs: u64 = retry.expect("Retry-After").parse().unwrap();
    assert!((1..=60).contains(&secs), "one request per minute: {secs}");
    server.shutdown().await;
}

#[tokio::test]
async fn forwarded_for_from_an_untrusted_socket_is_ignored() {
    let (_d, server) = start_demo("untrusted", NO_FACILITATOR, 1, 2, &[]).await;
    let mut statuses = Vec::new();
    for i in 0..3 {
        let (status, _, _) = demo_status(&server, Some(&format!("198.51.100.{i}"))).await;
        statuses.push(status);
    }
    assert_eq!(
        statuses,
        vec![200, 200, 429],
        "one client whatever the header says"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn forwarded_for_from_a_trusted_proxy_names_the_client() {
    let (_d, server) = start_demo("trusted", NO_FACILITATOR, 1, 2, &["127.0.0.1/32"]).await;
    for i in 0..4 {
        let (status, _, _) = demo_status(&server, Some(&format!("198.51.100.{i}"))).await;
        assert_eq!(status, 200, "client {i} has its own bucket");
    }
    // one client behind the proxy still runs out; spoofed hops to its left do not help
    let mut statuses = Vec::new();
    for i in 0..3 {
        let (status, _, _) = demo_status(&server, Some(&format!("10.9.9.{i}, 203.0.113.7"))).await;
        statuses.push(status);
    }
    assert_eq!(statuses, vec![200, 200, 429]);
    server.shutdown().await;
}

/// The shipped routes.yaml, with nothing reachable: no allowlist, no facilitator, a base_url
/// that resolves nowhere here. Demos whose input the service serves itself must still work.
fn shipped_offline() -> paycall::config::Config {
    shipped_offline_at(None)
}

/// As `shipped_offline`, with PAYCALL_BASE_URL set to `base` when given.
fn shipped_offline_at(base: Option<&str>) -> paycall::config::Config {
    let routes = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("routes.yaml");
    let env = |k: &str| match k {
        "PAYCALL_EVM_PAY_TO" => Some(EVM_PAY_TO.to_string()),
        "PAYCALL_SOLANA_PAY_TO" => Some("FYA23SLFVpETuY13UnwTDJA9W6ipiL1sKXd6XJUhViA1".to_string()),
        "PAYCALL_LEDGER_URL" => Some("sqlite::memory:".to_string()),
        "PAYCALL_FACILITATOR_URL" => Some(NO_FACILITATOR.to_string()),
        "PAYCALL_BASE_URL" => base.map(str::to_string),
        _ => None,
    };
    paycall::config::load_with_env(&routes, &env).unwrap_or_else(|e| panic!("{e}"))
}

#[tokio::test]
async fn http_and_fetch_demos_work_on_a_deployment_that_reaches_nothing() {
    let server = start(shipped_offline()).await;
    let (status, _, v) = get_json(&server.url("/api/demo/http")).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["sample_status"], 200, "{v}");
    let s = &v["sample"];
    assert_eq!(s["status"], 200, "{s}");
    assert_eq!(
        s["requestedUrl"],
        "https://paycall.example.com/samples/harbour-guide.html"
    );
    assert!(s["body"].as_str().unwrap().contains("Old Harbour"), "{s}");
    assert!(s["headers"]["content-type"]
        .as_str()
        .unwrap()
        .starts_with("text/html"));

    let (status, _, v) = get_json(&server.url("/api/demo/fetch")).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["sample_status"], 200, "{v}");
    let content = v["sample"]["content"].as_str().unwrap();
    assert!(content.contains("The Lighthouse Loop"), "{content}");

    // The page itself is served, and is what the demos read.
    let resp = client()
        .get(server.url("/samples/harbour-guide.html"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    assert!(resp.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/html"));
    let page = resp.text().await.unwrap();
    let on_disk = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("static/harbour-guide.html"),
    )
    .unwrap();
    assert_eq!(page, on_disk);
    server.shutdown().await;
}

/// The run command's deployment: the shipped routes.yaml on an `http://` base URL. bazaar-check
/// audits https origins only, so its demo twin (whose fixed input is this service's origin)
/// cannot run here: it is withdrawn (404 `demo_unavailable`, naming the fix), not listed, and
/// llms.txt's "Try" line for the paid route uses the parameter's example instead, which it
/// accepts. Before, both failed with `https_only` for every caller.
#[tokio::test]
async fn a_demo_its_own_route_refuses_here_is_withdrawn_and_the_try_line_uses_the_example() {
    let server = start(shipped_offline_at(Some("http://127.0.0.1:8402"))).await;

    let (status, _, v) = get_json(&server.url("/api/demo/bazaar-check")).await;
    assert_eq!(status, 404, "{v}");
    assert_eq!(v["error"], "demo_unavailable", "{v}");
    let message = v["message"].as_str().unwrap();
    assert!(message.contains("https origins only"), "{message}");
    assert!(message.contains("PAYCALL_BASE_URL"), "{message}");

    let (status, _, v) = get_json(&server.url("/api/demo/nope")).await;
    assert_eq!(status, 404);
    let listed: Vec<&str> = v["demos"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|d| d.as_str())
        .collect();
    assert!(!listed.contains(&"bazaar-check"), "{listed:?}");
    assert!(listed.contains(&"pulse"), "{listed:?}");

    let llms = get_text(&server.url("/llms.txt")).await;
    let section = llms_entry(&llms, "/api/bazaar-check").expect("llms.txt lists /api/bazaar-check");
    assert!(
        section.contains("/api/bazaar-check?url=paycall.example.com"),
        "{section}"
    );
    assert!(!section.contains("Free sample"), "{section}");
    assert!(!llms.contains("/api/demo/bazaar-check"), "{llms}");
    server.shutdown().await;
}
