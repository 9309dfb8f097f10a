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

#[path = "support/server.rs"]
mod server_support;
#[path = "support/stack.rs"]
mod stack;
#[path = "support/audit_zoo.rs"]
mod zoo;

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use paycall::config;
use paycall::server;
use stack::LocalStack;

const SOL_PLACEHOLDER: &str = "11111111111111111111111111111111";
const PAID_PATHS: &[&str] = &[
    "/api/http",
    "/api/fetch",
    "/api/x402-check",
    "/api/bazaar-check",
];

struct Paycall {
    base: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Paycall {
    fn url(&self, p: &str) -> String {
        format!("{}{p}", self.base)
    }
}

/// paycall with the shipped config on `listener`, its canonical base_url naming that port.
async fn paycall_with(
    stack: &LocalStack,
    index: &str,
    listener: tokio::net::TcpListener,
) -> Paycall {
    let port = listener.local_addr().unwrap().port();
    let routes = Path::new(env!("CARGO_MANIFEST_DIR")).join("routes.yaml");
    let env: BTreeMap<String, String> = [
        ("PAYCALL_FACILITATOR_URL", stack.facilitator_url.clone()),
        ("PAYCALL_EVM_PAY_TO", stack.pay_to.clone()),
        ("PAYCALL_SOLANA_PAY_TO", SOL_PLACEHOLDER.into()),
        ("PAYCALL_ALLOW_CIDRS", "127.0.0.1/32".into()),
        ("PAYCALL_BASE_URL", format!("https://127.0.0.1:{port}")),
        ("PAYCALL_UPSTREAM_BASE_RPC", stack.rpc_url.clone()),
        ("PAYCALL_UPSTREAM_ETH_RPC", stack.rpc_url.clone()),
        ("PAYCALL_UPSTREAM_CDP_DISCOVERY", index.to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let cfg =
        config::load_with_env(&routes, &|k| env.get(k).cloned()).unwrap_or_else(|e| panic!("{e}"));
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

fn enc(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

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
    let zoo = zoo::start_zoo(None).await;
    let index = zoo::start_index(BTreeMap::new()).await;
    let mut pc = paycall_with(&stack, &index.url(), bind().await).await;
    let check = |target: &str| pc.url(&format!("/api/x402-check?url={}", enc(target)));

    // Unpaid: 402 whatever the input; nothing is probed.
    let r = server_support::client()
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
    for path in PAID_PATHS {
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
    let items = PAID_PATHS
        .iter()
        .map(|p| {
            zoo::index_item(
                &format!("https://127.0.0.1:{port}{p}"),
                &stack.pay_to,
                "eip155:8453",
            )
        })
        .collect::<Vec<_>>();
    let index = zoo::start_index(BTreeMap::from([(stack.pay_to.clone(), items)])).await;
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
    index.set(zoo::INDEX_DOWN);
    stack.reset_calls();
    let r = stack.pay_async(&bc(&me), "GET", None).await;
    assert_eq!(r.status, 502, "{:?}", r.body);
    assert_eq!(r.body["error"], "discovery_unavailable");
    assert_eq!(stack.settle_calls(), 0);
    assert_eq!(r.buyer_spent(), 0);
    index.set(zoo::INDEX_OK);

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
    assert_eq!(rep["summary"]["routesListed"], PAID_PATHS.len());
    assert_eq!(rep["summary"]["routesProbed"], PAID_PATHS.len());
    assert_eq!(rep["summary"]["indexed"], PAID_PATHS.len());
    assert_eq!(rep["summary"]["notIndexed"], 0);
    assert_eq!(rep["summary"]["indexedOnBase"], PAID_PATHS.len());
    assert_eq!(rep["summary"]["fail"], 0, "{rep:#}");
    assert_eq!(
        rep["index"]["payTos"][0]["indexedTotalForPayTo"],
        PAID_PATHS.len()
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
    drop(pc.stop.take());
}
