//! /api/x402-check and /api/bazaar-check paid for real with the SHIPPED routes.yaml and
//! pipelines: local chain + official facilitator + official client (tests/support/stack.rs), the
//! zoo of x402 endpoints and the local discovery index (tests/support/audit_zoo.rs).
//!
//! - Billing: a report (the target's 5xx included) settles once; 400, 502 (unreachable, too many
//!   redirects, host unreachable, discovery_unavailable) and 504 never reach /settle.
//! - Dogfood: paycall's x402-check of its own paid routes passes every check, and its
//!   bazaar-check of itself against an index listing its routes says `fully_indexed`.
//!
//! paycall's canonical base_url is https://127.0.0.1:<its port>: the probes reach it over plain
//! http because 127.0.0.1 is on the operator allowlist (see docs/audit.md, "transport").

mod support;
use support::stack;

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use paycall::config;
use paycall::server;
use stack::LocalStack;

use support::shipped::SOL_PLACEHOLDER;
/// Every paid route of the shipped routes.yaml: the dogfood audits cover them all, so a new
/// route whose challenge an auditor would fault fails here.
fn paid_paths() -> Vec<String> {
    let routes = Path::new(env!("CARGO_MANIFEST_DIR")).join("routes.yaml");
    let env = |k: &str| match k {
        "PAYCALL_EVM_PAY_TO" => Some("0x1111111111111111111111111111111111111111".to_string()),
        "PAYCALL_SOLANA_PAY_TO" => Some(SOL_PLACEHOLDER.to_string()),
        "PAYCALL_LEDGER_URL" => Some("sqlite::memory:".to_string()),
        "PAYCALL_UPSTREAM_BASE_RPC" => Some("http://127.0.0.1:9/".into()),
        _ => None,
    };
    let cfg = config::load_with_env(&routes, &env).unwrap_or_else(|e| panic!("{e}"));
    let paths: Vec<String> = cfg
        .routes
        .iter()
        .filter(|r| r.is_paid())
        .map(|r| r.path.clone())
        .collect();
    assert!(paths.len() >= 4, "{paths:?}");
    paths
}

struct Paycall {
    base: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Paycall {
    fn url(&self, p: &str) -> String {
        format!("{}{p}", self.base)
    }
}

fn set_search_key() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    // Set once, to the same value, before any server of this test binary reads it.
    ONCE.call_once(|| std::env::set_var("BRAVE_API_KEY", "audit-test-key"));
}

/// paycall with the shipped config on `listener`, its canonical base_url naming that port.
async fn paycall_with(
    stack: &LocalStack,
    index: &str,
    listener: tokio::net::TcpListener,
) -> Paycall {
    let routes = Path::new(env!("CARGO_MANIFEST_DIR")).join("routes.yaml");
    paycall_from(&routes, stack, &stack.facilitator_url, index, listener).await
}

/// As `paycall_with`, from a given routes.yaml and facilitator URL.
async fn paycall_from(
    routes: &Path,
    stack: &LocalStack,
    facilitator: &str,
    index: &str,
    listener: tokio::net::TcpListener,
) -> Paycall {
    let port = listener.local_addr().unwrap().port();
    // Every paid route able to work, so each asks to be paid: a route that cannot (search
    // without a provider key) answers 503 before any challenge. The audits only read the
    // challenges; no search is made. The search stage reads its key from the process.
    set_search_key();
    let env: BTreeMap<String, String> = [
        ("PAYCALL_FACILITATOR_URL", facilitator.to_string()),
        ("PAYCALL_EVM_PAY_TO", stack.pay_to.clone()),
        ("PAYCALL_SOLANA_PAY_TO", SOL_PLACEHOLDER.into()),
        ("PAYCALL_ALLOW_CIDRS", "127.0.0.1/32".into()),
        ("PAYCALL_LEDGER_URL", "sqlite::memory:".into()),
        ("PAYCALL_BASE_URL", format!("https://127.0.0.1:{port}")),
        ("PAYCALL_UPSTREAM_BASE_RPC", stack.rpc_url.clone()),
        ("PAYCALL_UPSTREAM_ETH_RPC", stack.rpc_url.clone()),
        ("PAYCALL_UPSTREAM_CDP_DISCOVERY", index.to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let cfg =
        config::load_with_env(routes, &|k| env.get(k).cloned()).unwrap_or_else(|e| panic!("{e}"));
    let services = server::services::build(&cfg).expect("services");
    let app = server::build_app(cfg, services).unwrap_or_else(|e| panic!("{e}"));
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(server::serve(Arc::new(app), listener, async move {
        let _ = rx.await;
    }));
    Paycall {
        base: format!("http://127.0.0.1:{port}"),
        stop: Some(tx),
    }
}

async fn bind() -> tokio::net::TcpListener {
    tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap()
}

use support::server::enc;

fn not_passing(report: &Value) -> Vec<Value> {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["level"] != "pass")
        .cloned()
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn x402_check_bills_reports_and_never_settles_failures_and_passes_on_itself() {
    let stack = LocalStack::start();
    let zoo = support::audit_zoo::start_zoo(None).await;
    let index = support::audit_zoo::start_index(BTreeMap::new()).await;
    let mut pc = paycall_with(&stack, &index.url(), bind().await).await;
    let check = |target: &str| pc.url(&format!("/api/x402-check?url={}", enc(target)));

    // Unpaid: 402 whatever the input; nothing is probed.
    let r = support::server::client()
        .get(check(&zoo.url("/500")))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 402);
    assert_eq!(zoo.total(), 0);

    // A 5xx target is a report: charged, settled once, the price moved on-chain.
    let paid = stack.pay_async(&check(&zoo.url("/500")), "GET", None).await;
    assert_eq!(paid.status, 200, "{:?}", paid.body);
    assert_eq!(paid.body["httpStatus"], 500);
    assert_eq!(paid.body["source"], "x402-check");
    assert_eq!(paid.body["priced"]["amountAtomic"], "10000");
    assert_eq!(stack.settle_calls(), 1);
    assert_eq!(paid.pay_to_received(), 10_000);
    assert_eq!(zoo.hits("/500"), 1, "exactly one probe");

    // Not charged: bad input (400, not even verified), unreachable, too many redirects (502),
    // timeout (504): the facilitator never sees /settle.
    for (url, status) in [
        (pc.url("/api/x402-check?method=GET"), 400),
        (check("http://10.1.2.3/x"), 400),
        (check("http://127.0.0.1:9/closed"), 502),
        (check(&zoo.url("/redirect/loop")), 502),
        (check(&zoo.url("/slow")), 504),
    ] {
        stack.reset_calls();
        let r = stack.pay_async(&url, "GET", None).await;
        assert_eq!(r.status, status, "{url}: {:?}", r.body);
        assert!(r.body["error"].is_string(), "{:?}", r.body);
        assert_eq!(stack.settle_calls(), 0, "{url} must not settle");
        assert_eq!(r.buyer_spent(), 0, "{url}: the buyer paid nothing");
        if status == 400 {
            assert_eq!(
                stack.verify_calls(),
                0,
                "{url}: bad input is refused before verify"
            );
        }
    }

    // Dogfood: paycall audits its own paid routes (paid call, real settlement) and passes.
    for path in &paid_paths() {
        stack.reset_calls();
        let r = stack.pay_async(&check(&pc.url(path)), "GET", None).await;
        assert_eq!(r.status, 200, "{path}: {:?}", r.body);
        let rep = &r.body;
        assert_eq!(rep["httpStatus"], 402, "{path}");
        assert_eq!(rep["validChallenge"], true, "{path}");
        assert_eq!(rep["challengeSource"], "v2_header", "{path}");
        assert_eq!(not_passing(rep), Vec::<Value>::new(), "{path}: {rep:#}");
        assert_eq!(rep["verdict"], "pass", "{path}");
        assert_eq!(
            rep["accepts"][0]["payTo"].as_str().unwrap().to_lowercase(),
            stack.pay_to.to_lowercase()
        );
        assert!(
            rep["payToTypes"]
                .as_array()
                .unwrap()
                .iter()
                .all(|t| t["type"] == "eoa"),
            "{rep:#}"
        );
        assert_eq!(rep["discovery"]["schemaValid"], true);
        assert_eq!(stack.settle_calls(), 1, "{path}");
    }
    // And its POST offer on /api/http.
    let r = stack
        .pay_async(
            &pc.url(&format!(
                "/api/x402-check?url={}&method=POST",
                enc(&pc.url("/api/http"))
            )),
            "GET",
            None,
        )
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(not_passing(&r.body), Vec::<Value>::new(), "{:#}", r.body);
    assert_eq!(r.body["discovery"]["method"], "POST");

    // The free demo twin audits the service's own /api/http (demo input `{base_url}/api/http`).
    let (s, _, demo) = support::server::get_json(&pc.url("/api/demo/x402-check")).await;
    assert_eq!(s, 200);
    assert_eq!(demo["sample_status"], 200, "{demo:#}");
    assert_eq!(
        demo["sample"]["url"],
        format!("{}/api/http", pc.url("").replace("http://", "https://"))
    );
    assert_eq!(demo["sample"]["verdict"], "pass", "{demo:#}");

    // The official @x402/express seller: a conformant v2 challenge by the reference SDK.
    let seller = stack.start_seller("$0.005");
    let r = stack
        .pay_async(
            &check(&format!("{}/paid", seller.url.trim_end_matches('/'))),
            "GET",
            None,
        )
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.body["x402Version"], 2, "{:#}", r.body);
    assert_eq!(r.body["challengeSource"], "v2_header");
    assert_eq!(r.body["validChallenge"], true, "{:#}", r.body);
    assert_eq!(r.body["accepts"][0]["amountAtomic"], "5000");
    assert_eq!(r.body["accepts"][0]["amountUsd"], "0.005");
    for id in [
        "amount",
        "eip712_domain",
        "asset",
        "network",
        "scheme",
        "x402_version",
        "v2_in_header",
    ] {
        let bad: Vec<Value> = not_passing(&r.body)
            .into_iter()
            .filter(|c| c["id"] == id)
            .collect();
        assert!(bad.is_empty(), "{id}: {bad:?}");
    }
    drop(pc.stop.take());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bazaar_check_of_itself_is_fully_indexed_and_failures_never_settle() {
    let stack = LocalStack::start();
    // The index lists paycall's paid routes, at paycall's own port, under its payTo.
    let listener = bind().await;
    let port = listener.local_addr().unwrap().port();
    let paid = paid_paths();
    let index = support::audit_zoo::start_index_of(port, &paid, &stack.pay_to).await;
    let mut pc = paycall_with(&stack, &index.url(), listener).await;
    let bc = |target: &str| pc.url(&format!("/api/bazaar-check?url={}", enc(target)));
    let me = format!("127.0.0.1:{port}");

    // Earn the payTo some USDC first, so the on-chain answers have something to find.
    let warm = stack
        .pay_async(
            &pc.url(&format!(
                "/api/x402-check?url={}",
                enc(&pc.url("/api/http"))
            )),
            "GET",
            None,
        )
        .await;
    assert_eq!(warm.status, 200);

    // Not charged: http-only input (400, never verified), host unreachable, index down (502).
    stack.reset_calls();
    let r = stack
        .pay_async(&bc(&format!("http://{me}")), "GET", None)
        .await;
    assert_eq!(r.status, 400, "{:?}", r.body);
    assert_eq!(r.body["error"], "https_only");
    assert_eq!(stack.verify_calls() + stack.settle_calls(), 0);

    // (The index is down before any search by this host was cached.)
    index.set(support::audit_zoo::INDEX_DOWN);
    stack.reset_calls();
    let r = stack.pay_async(&bc(&me), "GET", None).await;
    assert_eq!(r.status, 502, "{:?}", r.body);
    assert_eq!(r.body["error"], "discovery_unavailable");
    assert_eq!(stack.settle_calls(), 0);
    assert_eq!(r.buyer_spent(), 0);
    index.set(support::audit_zoo::INDEX_OK);

    stack.reset_calls();
    let r = stack.pay_async(&bc("127.0.0.1:9"), "GET", None).await;
    assert_eq!(r.status, 502, "{:?}", r.body);
    assert_eq!(r.body["error"], "host_unreachable");
    assert_eq!(stack.settle_calls(), 0);

    // Dogfood: fully indexed, billed once.
    stack.reset_calls();
    let r = stack.pay_async(&bc(&me), "GET", None).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let rep = &r.body;
    assert_eq!(rep["verdict"], "fully_indexed", "{rep:#}");
    assert_eq!(rep["source"], "bazaar-check");
    assert_eq!(rep["target"]["host"], "127.0.0.1");
    assert_eq!(rep["wellKnown"]["found"], true);
    assert_eq!(rep["summary"]["routesListed"], paid.len());
    assert_eq!(rep["summary"]["routesProbed"], paid.len());
    assert_eq!(rep["summary"]["indexed"], paid.len());
    assert_eq!(rep["summary"]["notIndexed"], 0);
    assert_eq!(rep["summary"]["indexedOnBase"], paid.len());
    assert_eq!(rep["summary"]["fail"], 0, "{rep:#}");
    assert_eq!(
        rep["index"]["payTos"][0]["indexedTotalForPayTo"],
        paid.len()
    );
    assert_eq!(rep["index"]["indexedNotListed"], serde_json::json!([]));
    for route in rep["routes"].as_array().unwrap() {
        assert_eq!(route["indexed"], true, "{route:#}");
        for p in route["probes"].as_array().unwrap() {
            assert_eq!(p["httpStatus"], 402, "{route:#}");
            assert_eq!(p["x402Version"], 2);
            assert_eq!(p["bazaar"]["present"], true);
            assert_eq!(p["bazaar"]["method"], p["method"]);
        }
    }
    let http_route = rep["routes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["url"].as_str().unwrap().ends_with("/api/http"))
        .unwrap();
    assert_eq!(http_route["methods"], serde_json::json!(["GET", "POST"]));
    // Both RPC upstreams are the local chain (chain id 8453, USDC at Base's address): the Base
    // answers are true, the Ethereum USDC contract does not exist there.
    let onchain = rep["onchain"].as_array().unwrap();
    let base: Vec<&Value> = onchain.iter().filter(|o| o["network"] == "base").collect();
    assert_eq!(base.len(), 2, "{onchain:#?}");
    assert!(base.iter().all(|o| o["value"] == true), "{onchain:#?}");
    assert!(onchain
        .iter()
        .filter(|o| o["network"] == "ethereum")
        .all(|o| o["value"] == false));
    assert!(rep["elapsedMs"].as_u64().unwrap() < 18_000);
    assert_eq!(stack.settle_calls(), 1);
    assert_eq!(r.pay_to_received(), 10_000);

    // The free demo twin: bazaar-check of the service's own origin, sample kept 10 minutes.
    stack.reset_calls();
    let (s, _, demo) = support::server::get_json(&pc.url("/api/demo/bazaar-check")).await;
    assert_eq!(s, 200);
    assert_eq!(demo["sample_status"], 200, "{demo:#}");
    assert_eq!(demo["sample"]["verdict"], "fully_indexed", "{demo:#}");
    assert!(
        demo["note"].as_str().unwrap().contains("10 minutes"),
        "{}",
        demo["note"]
    );
    assert_eq!(
        stack.verify_calls() + stack.settle_calls(),
        0,
        "demos never pay"
    );
    drop(pc.stop.take());
}

/// A pass-through to the facilitator that holds every /verify for `delay_ms` first: payment
/// verification made slow, everything else untouched.
async fn slow_verify_proxy(target: String, delay_ms: Arc<AtomicU64>) -> String {
    use warp::Filter;
    let client = support::server::client();
    let routes = support::net::any_request().then(
        move |m: warp::http::Method,
              p: warp::path::FullPath,
              q: String,
              h: warp::http::HeaderMap,
              b: bytes::Bytes| {
            let client = client.clone();
            let target = target.clone();
            let delay = delay_ms.clone();
            async move {
                if p.as_str().ends_with("/verify") {
                    tokio::time::sleep(Duration::from_millis(delay.load(Ordering::SeqCst))).await;
                }
                let mut url = format!("{}{}", target.trim_end_matches('/'), p.as_str());
                if !q.is_empty() {
                    url = format!("{url}?{q}");
                }
                let mut req = client.request(m, &url).body(b.to_vec());
                for (k, v) in h.iter() {
                    if k != "host" && k != "content-length" {
                        req = req.header(k, v);
                    }
                }
                let r = req.send().await.expect("facilitator answers");
                let status = r.status();
                let ct = r.headers().get("content-type").cloned();
                let body = r.bytes().await.unwrap_or_default();
                let mut out = warp::reply::Response::new(body.into());
                *out.status_mut() = status;
                if let Some(ct) = ct {
                    out.headers_mut().insert("content-type", ct);
                }
                out
            }
        },
    );
    let listener = bind().await;
    let addr = listener.local_addr().unwrap();
    tokio::spawn(warp::serve(routes).incoming(listener).run());
    format!("http://{addr}/")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bazaar_check_deadlines_count_from_arrival_when_verification_is_slow() {
    let stack = LocalStack::start();
    let delay = Arc::new(AtomicU64::new(0));
    let proxy = slow_verify_proxy(stack.facilitator_url.clone(), delay.clone()).await;
    // The shipped config with a verify timeout long enough for the slow case below.
    let dir = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let shipped = std::fs::read_to_string(root.join("routes.yaml")).unwrap();
    assert!(shipped.contains("verify_timeout_ms: 10000"));
    std::fs::write(
        dir.path().join("routes.yaml"),
        shipped.replace("verify_timeout_ms: 10000", "verify_timeout_ms: 30000"),
    )
    .unwrap();
    std::fs::create_dir(dir.path().join("pipelines")).unwrap();
    for e in std::fs::read_dir(root.join("pipelines")).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), dir.path().join("pipelines").join(e.file_name())).unwrap();
    }
    // Files the shipped pipelines serve (the PDF sample), relative to the config's directory.
    std::fs::create_dir(dir.path().join("static")).unwrap();
    for e in std::fs::read_dir(root.join("static")).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), dir.path().join("static").join(e.file_name())).unwrap();
    }
    let listener = bind().await;
    let port = listener.local_addr().unwrap().port();
    let index = support::audit_zoo::start_index_of(port, &paid_paths(), &stack.pay_to).await;
    let mut pc = paycall_from(
        &dir.path().join("routes.yaml"),
        &stack,
        &proxy,
        &index.url(),
        listener,
    )
    .await;
    let url = pc.url(&format!(
        "/api/bazaar-check?url={}",
        enc(&format!("127.0.0.1:{port}"))
    ));

    // Verification took 8 s: probes get 60% of the 10 s left (end ≈ 14 s after arrival,
    // not 12 s), the report still comes back before 18 s, and it is billed.
    delay.store(8_000, Ordering::SeqCst);
    stack.reset_calls();
    let r = stack.pay_async(&url, "GET", None).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let window = r.body["probeWindowMs"].as_u64().unwrap();
    assert!(
        (13_500..=15_000).contains(&window),
        "probe window {window} ms"
    );
    let elapsed = r.body["elapsedMs"].as_u64().unwrap();
    assert!((8_000..18_000).contains(&elapsed), "elapsed {elapsed} ms");
    assert_eq!(r.body["verdict"], "fully_indexed");
    assert_eq!(stack.settle_calls(), 1);

    // Verification took 16 s: under 3 s left → 502 too_little_time, never settled.
    delay.store(16_000, Ordering::SeqCst);
    stack.reset_calls();
    let r = stack.pay_async(&url, "GET", None).await;
    assert_eq!(r.status, 502, "{:?}", r.body);
    assert_eq!(r.body["error"], "too_little_time");
    assert_eq!(stack.verify_calls(), 1);
    assert_eq!(stack.settle_calls(), 0);
    assert_eq!(r.buyer_spent(), 0);
    drop(pc.stop.take());
}
