//! /api/x402-check through the real server and the real stages against the zoo of local x402
//! endpoints (tests/support/audit_zoo.rs): each kind of seller mistake is reported with its
//! check id and level; transport failures are the route's not-charged statuses.
//!
//! The route runs here without its payment stages (a free copy of the pipeline, same stages and
//! caps except a short probe timeout) so that each case costs one request; billing with real
//! payments is in tests/audit_pay.rs.

use crate::support;

use serde_json::Value;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

use paycall::net::StaticResolver;
use paycall::server;
use support::server::{service_yaml, write_config, NO_FACILITATOR};

fn routes_yaml(rpc: &str) -> String {
    format!(
        r#"{}guard:
  allow_cidrs: [127.0.0.1/32]
upstreams:
  base_rpc: {rpc}
  eth_rpc: {rpc}
  cdp_discovery: http://127.0.0.1:9/
routes:
  - path: /api/x402-check
    methods: [GET]
    summary: x402-check without payment (test copy)
    pipeline: x402-check-free
    input:
      - name: url
        type: string
        required: true
        format: uri
        max_length: 2048
        description: endpoint
      - name: method
        type: string
        default: GET
        enum: [GET, POST]
        case_insensitive: true
        description: probe method
"#,
        service_yaml(NO_FACILITATOR, 100, 100, &[])
    )
}

const PIPELINE: &str = r#"name: x402-check-free
stages:
  - stage: url_guard
    with: { param: url }
  - stage: x402_check
    with:
      timeout_ms: 1500
      max_redirects: 3
      max_bytes: 65536
      rpcs: { "eip155:8453": base_rpc, "eip155:1": eth_rpc }
"#;

struct World {
    _dir: support::server::ConfigDir,
    server: support::server::TestServer,
    zoo: support::audit_zoo::Local,
    rpc: support::audit_zoo::Local,
}

async fn world() -> World {
    let zoo = support::audit_zoo::start_zoo(None).await;
    let rpc = support::audit_zoo::start_rpc().await;
    let dir = write_config(&routes_yaml(&rpc.base), &[("x402-check-free", PIPELINE)]);
    let cfg = support::server::load(&dir).unwrap_or_else(|e| panic!("{e}"));
    // A production-looking name for the zoo, to catch testnets in production.
    let resolver =
        StaticResolver::new().with("api.seller-prod.com", [IpAddr::V4(Ipv4Addr::LOCALHOST)]);
    let services = server::services::build_with_resolver(&cfg, Arc::new(resolver)).unwrap();
    let app = server::build_app(cfg, services).unwrap_or_else(|e| panic!("{e}"));
    let server = support::server::start_app(app).await;
    World {
        _dir: dir,
        server,
        zoo,
        rpc,
    }
}

use support::server::enc;

impl World {
    async fn check(&self, target: &str) -> (u16, Value) {
        self.check_m(target, "GET").await
    }
    async fn check_m(&self, target: &str, method: &str) -> (u16, Value) {
        let url = self.server.url(&format!(
            "/api/x402-check?url={}&method={method}",
            enc(target)
        ));
        let r = support::server::client().get(&url).send().await.unwrap();
        let status = r.status().as_u16();
        (status, support::server::json_of(r).await)
    }
    async fn zoo(&self, path: &str) -> Value {
        let (s, b) = self.check(&self.zoo.url(path)).await;
        assert_eq!(s, 200, "{path}: {b}");
        b
    }
}

/// The levels of every check with this id.
fn levels(report: &Value, id: &str) -> Vec<String> {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["id"] == id)
        .map(|c| c["level"].as_str().unwrap().to_string())
        .collect()
}

fn level(report: &Value, id: &str) -> String {
    let l = levels(report, id);
    assert!(!l.is_empty(), "no check `{id}` in {:#}", report["checks"]);
    // the worst one
    for want in ["fail", "warn", "pass"] {
        if l.iter().any(|x| x == want) {
            return want.into();
        }
    }
    unreachable!()
}

fn message(report: &Value, id: &str) -> String {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["id"] == id && c["level"] != "pass")
        .map(|c| {
            format!(
                "{} | fix: {}",
                c["message"].as_str().unwrap(),
                c["fix"].as_str().unwrap()
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_correct_v2_endpoint_passes_every_check() {
    let w = world().await;
    let r = w.zoo("/v2/ok").await;
    assert_eq!(r["source"], "x402-check");
    assert_eq!(r["httpStatus"], 402);
    assert_eq!(r["validChallenge"], true);
    assert_eq!(r["x402Version"], 2);
    assert_eq!(r["challengeSource"], "v2_header");
    let bad: Vec<&Value> = r["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["level"] != "pass")
        .collect();
    assert!(bad.is_empty(), "{bad:#?}");
    assert_eq!(r["verdict"], "pass");
    let a = &r["accepts"][0];
    assert_eq!(a["amountAtomic"], "10000");
    assert_eq!(a["amountUsd"], "0.01");
    assert_eq!(a["assetSymbol"], "USDC");
    assert_eq!(a["network"], "eip155:8453");
    assert_eq!(a["payTo"], support::audit_zoo::EOA);
    // payTo type on both EVM networks, by eth_getCode on the configured RPCs.
    let types = r["payToTypes"].as_array().unwrap();
    assert_eq!(types.len(), 2, "{types:?}");
    assert!(types.iter().all(|t| t["type"] == "eoa"), "{types:?}");
    let nets: Vec<&str> = types
        .iter()
        .map(|t| t["network"].as_str().unwrap())
        .collect();
    assert!(nets.contains(&"eip155:8453") && nets.contains(&"eip155:1"));
    assert_eq!(r["discovery"]["bazaar"], true);
    assert_eq!(r["discovery"]["method"], "GET");
    assert_eq!(r["discovery"]["methodEnum"], serde_json::json!(["GET"]));
    assert_eq!(r["discovery"]["schemaValid"], true);
    assert_eq!(level(&r, "pay_to_type"), "pass");
    assert!(r["methodology"]["timeoutMs"].is_number());
    // exactly one probe, with the method asked for, and no payment header
    assert_eq!(w.zoo.hits("/v2/ok"), 1);
    assert!(w.rpc.total() >= 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn versions_and_where_the_challenge_is_carried() {
    let w = world().await;
    let v1 = w.zoo("/v1/ok").await;
    assert_eq!(v1["x402Version"], 1);
    assert_eq!(v1["challengeSource"], "v1_body");
    assert_eq!(v1["validChallenge"], true);
    assert_eq!(level(&v1, "x402_version"), "warn");
    assert_eq!(v1["discovery"]["v1OutputSchema"], true);
    assert_eq!(v1["discovery"]["v1Discoverable"], true);
    assert_eq!(v1["accepts"][0]["amountUsd"], "0.005");
    assert_eq!(
        level(&v1, "network"),
        "pass",
        "v1 short names are fine in v1"
    );

    let dual = w.zoo("/v2/dual").await;
    assert_eq!(dual["challengeSource"], "dual");
    assert_eq!(dual["x402Version"], 2);
    assert_eq!(level(&dual, "v2_in_header"), "pass");

    let body_only = w.zoo("/v2/body-only").await;
    assert_eq!(body_only["challengeSource"], "v2_body_only");
    assert_eq!(body_only["validChallenge"], false);
    assert_eq!(level(&body_only, "v2_in_header"), "fail");
    assert!(message(&body_only, "v2_in_header").contains("PAYMENT-REQUIRED"));

    let b64 = w.zoo("/v2/bad-base64").await;
    assert_eq!(level(&b64, "challenge_decodable"), "fail");
    assert_eq!(b64["validChallenge"], false);
    assert_eq!(b64["verdict"], "fail");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offer_mistakes_are_named_with_their_fix() {
    let w = world().await;
    let d = w.zoo("/v2/dollars").await;
    assert_eq!(level(&d, "amount"), "fail");
    assert!(
        message(&d, "amount").contains("\"10000\""),
        "{}",
        message(&d, "amount")
    );
    assert_eq!(d["accepts"][0]["amountUsd"], Value::Null);

    let wrong = w.zoo("/v2/wrong-network-usdc").await;
    assert_eq!(level(&wrong, "asset"), "fail");
    assert!(
        message(&wrong, "asset").contains("Base Sepolia"),
        "{}",
        message(&wrong, "asset")
    );

    let name = w.zoo("/v2/sepolia-name").await;
    assert_eq!(level(&name, "eip712_domain"), "fail");
    assert!(message(&name, "eip712_domain").contains("USD Coin"));
    assert_eq!(level(&name, "asset"), "pass");

    let none = w.zoo("/v2/no-accepts").await;
    assert_eq!(level(&none, "accepts_nonempty"), "fail");
    assert_eq!(none["validChallenge"], false);

    let checksum = w.zoo("/v2/bad-checksum").await;
    assert_eq!(level(&checksum, "pay_to"), "fail");
    assert!(
        message(&checksum, "pay_to").contains(support::audit_zoo::EOA),
        "the fix names the checksummed form"
    );

    let contract = w.zoo("/v2/contract-payto").await;
    assert_eq!(level(&contract, "pay_to_type"), "warn");
    assert!(contract["payToTypes"]
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t["type"] == "contract"));

    let internal = w.zoo("/v2/internal-resource").await;
    assert_eq!(level(&internal, "https"), "fail");
    assert_eq!(level(&internal, "resource_url_public"), "fail");

    let cache = w.zoo("/v2/no-store-missing").await;
    assert_eq!(level(&cache, "cache_control"), "warn");
    assert_eq!(level(&cache, "cors_expose"), "warn");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery_metadata_and_testnets() {
    let w = world().await;
    let nb = w.zoo("/v2/no-bazaar").await;
    assert_eq!(level(&nb, "bazaar_present"), "warn");
    assert_eq!(nb["discovery"]["bazaar"], false);

    let bs = w.zoo("/v2/bad-schema").await;
    assert_eq!(level(&bs, "bazaar_schema"), "fail");
    assert_eq!(bs["discovery"]["schemaValid"], false);
    assert_eq!(level(&bs, "bazaar_method"), "fail");

    // The GET declaration probed with POST: the method does not match.
    let (s, post) = w.check_m(&w.zoo.url("/v2/ok"), "POST").await;
    assert_eq!(s, 200);
    assert_eq!(post["method"], "POST");
    assert_eq!(
        level(&post, "bazaar_method"),
        "pass",
        "the zoo narrows the method per request"
    );
    assert_eq!(
        w.zoo.requests().last().unwrap().body,
        "{}",
        "POST probes send {{}}"
    );

    // Testnet on a local host: fine; on a production-looking host: warned.
    let local = w.zoo("/v2/testnet").await;
    assert_eq!(level(&local, "testnet"), "pass");
    let port = w.zoo.addr.port();
    let (s, prod) = w
        .check(&format!("http://api.seller-prod.com:{port}/v2/testnet"))
        .await;
    assert_eq!(s, 200, "{prod}");
    assert_eq!(level(&prod, "testnet"), "warn");
    assert!(prod["accepts"][0]["testnet"].as_bool().unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn any_http_answer_is_a_report_transport_failures_are_errors() {
    let w = world().await;
    let e = w.zoo("/500").await;
    assert_eq!(e["httpStatus"], 500);
    assert_eq!(level(&e, "status_402"), "fail");
    assert_eq!(e["validChallenge"], false);

    let free = w.zoo("/200").await;
    assert_eq!(level(&free, "status_402"), "fail");
    assert!(message(&free, "status_402").contains("not paywalled"));

    let vf = w.zoo("/validate-first").await;
    assert!(message(&vf, "status_402").contains("before the paywall"));

    let red = w.zoo("/redirect/1").await;
    assert_eq!(red["httpStatus"], 402);
    assert_eq!(red["redirects"].as_array().unwrap().len(), 1);
    assert!(red["finalUrl"].as_str().unwrap().ends_with("/v2/ok"));

    let (s, b) = w.check(&w.zoo.url("/redirect/loop")).await;
    assert_eq!(s, 502, "{b}");
    assert_eq!(b["error"], "too_many_redirects");
    assert_eq!(
        w.zoo.hits("/redirect/loop"),
        4,
        "the first request and 3 redirects"
    );

    let (s, b) = w.check(&w.zoo.url("/slow")).await;
    assert_eq!(s, 504, "{b}");
    assert_eq!(b["error"], "upstream_timeout");

    let (s, b) = w.check("http://127.0.0.1:9/closed").await;
    assert_eq!(s, 502, "{b}");

    // Bad input: 400 before anything leaves.
    let before = w.zoo.total();
    for (q, code) in [
        ("url=http%3A%2F%2F10.0.0.1%2F", "blocked_target"),
        ("url=http%3A%2F%2Flocalhost%2F", "blocked_target"),
        ("url=ftp%3A%2F%2Fexample.com%2F", "invalid_parameter"),
        ("", "missing_parameter"),
        (
            &format!("url={}&method=DELETE", enc(&w.zoo.url("/v2/ok"))),
            "invalid_parameter",
        ),
    ] {
        let r = support::server::client()
            .get(w.server.url(&format!("/api/x402-check?{q}")))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 400, "{q}");
        let b = support::server::json_of(r).await;
        assert!(b["error"].is_string() && b["message"].is_string(), "{b}");
        let _ = code;
    }
    assert_eq!(w.zoo.total(), before, "bad input never reaches the target");
}

/// Issue 21: a 402 listing 100,000 offers made a 101 MB report and 1.2 GB of RSS. The first 20
/// are audited, the rest counted in one finding, the report stays small and quick; offers with
/// huge fields and many payTo addresses too (at most 20 addresses looked up).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_challenge_with_100000_offers_gets_a_bounded_report() {
    let w = world().await;
    let t = std::time::Instant::now();
    let url = w.server.url(&format!(
        "/api/x402-check?url={}",
        enc(&w.zoo.url("/v2/many-offers"))
    ));
    let resp = support::server::client().get(&url).send().await.unwrap();
    let status = resp.status().as_u16();
    let bytes = resp.bytes().await.unwrap();
    let took = t.elapsed();
    let r: Value = serde_json::from_slice(&bytes).unwrap();
    eprintln!(
        "100,000 offers: {status}, {} bytes in {took:?}",
        bytes.len()
    );
    assert_eq!(status, 200, "{r}");
    assert!(
        message(&r, "accepts_bounded")
            .starts_with("the 402 lists 100000 offers; the first 20 were audited"),
        "{}",
        message(&r, "accepts_bounded")
    );
    assert_eq!(level(&r, "accepts_bounded"), "warn");
    assert_eq!(r["accepts"].as_array().unwrap().len(), 20);
    assert!(r["checks"].as_array().unwrap().len() <= 200);
    // The empty offers fail: the cut keeps the verdict.
    assert_eq!(r["verdict"], "fail");
    assert!(bytes.len() < 256 * 1024, "{} bytes", bytes.len());
    assert!(took < std::time::Duration::from_secs(8), "{took:?}");

    let rpc_before = w.rpc.total();
    let (s, r) = w.check(&w.zoo.url("/v2/many-pay-tos")).await;
    assert_eq!(s, 200, "{r}");
    let size = r.to_string().len();
    eprintln!("100 offers with 2 KB schemes: {size} bytes");
    assert!(size <= 256 * 1024, "{size} bytes");
    assert_eq!(level(&r, "accepts_bounded"), "warn");
    assert!(
        r["payToTypes"].as_array().unwrap().len() <= 2 * 20,
        "{}",
        r["payToTypes"]
    );
    assert!(
        w.rpc.total() - rpc_before <= 2 * 20,
        "RPC calls bounded by the audited offers"
    );
}
