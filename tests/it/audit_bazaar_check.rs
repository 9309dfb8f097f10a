//! /api/bazaar-check through the real server and stages against a zoo host with its own
//! /.well-known/x402 and the local discovery index in CDP's recorded shapes: each verdict, the
//! per-route findings, the index paging budget, the limits (other hosts, route cap, 5 probes at a
//! time, deadlines) and the not-charged failures.
//!
//! Routes run without payment stages here (free copies of the pipeline: one with the shipped
//! limits, one with short deadlines); billing with real payments is in tests/audit_pay.rs.

use crate::support;

use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use support::server::{service_yaml, write_config, NO_FACILITATOR};

fn routes_yaml(rpc: &str, index: &str) -> String {
    let route = |path: &str, pipeline: &str| {
        format!(
            r#"  - path: {path}
    methods: [GET]
    summary: bazaar-check without payment (test copy)
    pipeline: {pipeline}
    input:
      - name: url
        type: string
        required: true
        max_length: 2048
        description: host
"#
        )
    };
    format!(
        "{}guard:\n  allow_cidrs: [127.0.0.1/32]\nupstreams:\n  base_rpc: {rpc}\n  eth_rpc: {rpc}\n  cdp_discovery: {index}\nroutes:\n{}{}",
        service_yaml(NO_FACILITATOR, 100, 100, &[]),
        route("/api/bazaar-check", "bazaar-free"),
        route("/api/bazaar-quick", "bazaar-quick"),
    )
}

/// The shipped stage parameters (defaults are docs/decisions.md#limits).
const FREE: &str = r#"name: bazaar-free
stages:
  - stage: bazaar_check
    with: { param: url }
"#;

/// Short deadlines and a small route cap, to test the limits quickly.
const QUICK: &str = r#"name: bazaar-quick
stages:
  - stage: bazaar_check
    with:
      probe_window_ms: 1500
      hard_deadline_ms: 3000
      per_request_ms: 1000
      min_time_left_ms: 500
      max_routes: 3
      index_cache_s: 1
"#;

struct World {
    _dir: support::server::ConfigDir,
    server: support::server::TestServer,
    zoo: support::audit_zoo::Local,
    index: support::audit_zoo::Index,
    _rpc: support::audit_zoo::Local,
}

/// `listed`: the zoo's /.well-known/x402 resources (None: no document); `indexed`: paths on
/// the zoo host the index lists under the zoo's payTo (EOA).
async fn world(listed: Option<Vec<String>>, indexed: &[&str], filler: usize) -> World {
    // The zoo's port must be known for the index listing: start it with a placeholder document
    // resolved per request (relative entries are resolved against the origin by the auditor).
    let zoo =
        support::audit_zoo::start_zoo(listed.map(|l| json!({"version": 1, "resources": l}))).await;
    let origin = format!("https://127.0.0.1:{}", zoo.addr.port());
    let mut items: Vec<Value> = (0..filler)
        .map(|i| {
            support::audit_zoo::index_item(
                &format!("https://filler{i}.example.com/r"),
                support::audit_zoo::EOA,
                "eip155:8453",
            )
        })
        .collect();
    items.extend(indexed.iter().map(|p| {
        support::audit_zoo::index_item(
            &format!("{origin}{p}"),
            support::audit_zoo::EOA,
            "eip155:8453",
        )
    }));
    let index = support::audit_zoo::start_index(BTreeMap::from([(
        support::audit_zoo::EOA.to_string(),
        items,
    )]))
    .await;
    let rpc = support::audit_zoo::start_rpc().await;
    let dir = write_config(
        &routes_yaml(&rpc.base, &index.url()),
        &[("bazaar-free", FREE), ("bazaar-quick", QUICK)],
    );
    let cfg = support::server::load(&dir).unwrap_or_else(|e| panic!("{e}"));
    let server = support::server::start(cfg).await;
    World {
        _dir: dir,
        server,
        zoo,
        index,
        _rpc: rpc,
    }
}

impl World {
    fn host(&self) -> String {
        format!("127.0.0.1:{}", self.zoo.addr.port())
    }
    async fn run(&self, route: &str, input: &str) -> (u16, Value) {
        let enc: String = url::form_urlencoded::byte_serialize(input.as_bytes()).collect();
        let r = support::server::client()
            .get(self.server.url(&format!("{route}?url={enc}")))
            .send()
            .await
            .unwrap();
        let s = r.status().as_u16();
        (s, support::server::json_of(r).await)
    }
    async fn check(&self) -> Value {
        let (s, b) = self.run("/api/bazaar-check", &self.host()).await;
        assert_eq!(s, 200, "{b:#}");
        b
    }
}

fn route<'a>(rep: &'a Value, path: &str) -> &'a Value {
    rep["routes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["url"].as_str().unwrap().ends_with(path))
        .unwrap_or_else(|| panic!("no route {path} in {:#}", rep["routes"]))
}

fn finding_ids(v: &Value) -> Vec<String> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partially_indexed_host_with_routes_elsewhere_and_retired_listings() {
    let listed = vec![
        "/v2/ok".to_string(),
        "POST /v2/ok".to_string(),
        "/v2/no-bazaar".to_string(),
        "/500".to_string(),
        "https://other.example.com/x".to_string(),
    ];
    let w = world(Some(listed), &["/v2/ok", "/api/retired"], 0).await;
    let rep = w.check().await;
    assert_eq!(rep["verdict"], "partially_indexed", "{rep:#}");
    assert_eq!(rep["target"]["host"], "127.0.0.1");
    assert_eq!(rep["target"]["origin"], format!("https://{}", w.host()));
    assert_eq!(rep["wellKnown"]["found"], true);
    assert_eq!(rep["wellKnown"]["entries"], 5);
    let s = &rep["summary"];
    assert_eq!(s["routesListed"], 4);
    assert_eq!(s["routesProbed"], 3);
    assert_eq!(s["indexed"], 1);
    assert_eq!(s["notIndexed"], 2);
    assert_eq!(s["indexedOnBase"], 1);

    let ok = route(&rep, "/v2/ok");
    assert_eq!(ok["indexed"], true);
    assert_eq!(ok["methods"], json!(["GET", "POST"]));
    assert_eq!(ok["indexedNetworks"], json!(["base"]));
    assert_eq!(ok["advertisedNetworks"], json!(["base"]));
    assert_eq!(ok["lastIndexed"], "2026-11-20T09:14:02.118Z");
    let probes = ok["probes"].as_array().unwrap();
    assert_eq!(probes.len(), 2);
    assert!(probes
        .iter()
        .all(|p| p["httpStatus"] == 402 && p["challengeSource"] == "v2_header"));
    assert_eq!(probes[1]["bazaar"]["method"], "POST");

    let nb = route(&rep, "/v2/no-bazaar");
    assert_eq!(nb["indexed"], false);
    let ids = finding_ids(nb);
    assert!(
        ids.contains(&"bazaar_present".to_string()) && ids.contains(&"not_indexed".to_string()),
        "{ids:?}"
    );

    let e500 = route(&rep, "/500");
    assert_eq!(e500["probes"][0]["httpStatus"], 500);

    let other = route(&rep, "other.example.com/x");
    assert_eq!(other["probed"], false);
    assert_eq!(other["skippedReason"], "other_host");
    assert!(finding_ids(&rep).contains(&"other_hosts".to_string()));

    let not_listed = rep["index"]["indexedNotListed"].as_array().unwrap();
    assert_eq!(not_listed.len(), 1);
    assert!(not_listed[0].as_str().unwrap().ends_with("/api/retired"));
    assert!(finding_ids(&rep).contains(&"indexed_not_listed".to_string()));

    let pt = &rep["index"]["payTos"][0];
    assert_eq!(pt["payTo"], support::audit_zoo::EOA);
    assert_eq!(pt["network"], "base");
    assert_eq!(pt["indexedTotalForPayTo"], 2);
    assert_eq!(pt["indexedOnHost"], 2);
    assert_eq!(rep["index"]["searchHitsOnHost"], 2);
    assert_eq!(rep["index"]["searchError"], Value::Null);
    let onchain = rep["onchain"].as_array().unwrap();
    assert!(onchain
        .iter()
        .any(|o| o["id"] == "holds_usdc" && o["value"] == true));
    assert!(onchain
        .iter()
        .any(|o| o["id"] == "received_usdc_recently" && o["value"] == true));
    assert!(rep["methodology"]["verdicts"]["fully_indexed"].is_string());
    // Exactly one probe per route and method, plus the well-known document; no payment header.
    assert_eq!(w.zoo.hits("/v2/ok"), 2);
    assert_eq!(w.zoo.hits("/.well-known/x402"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verdicts_not_indexed_not_ready_no_well_known() {
    let w = world(Some(vec!["/v2/ok".into()]), &[], 0).await;
    let rep = w.check().await;
    assert_eq!(rep["verdict"], "not_indexed", "{rep:#}");
    let f = &route(&rep, "/v2/ok")["findings"][0];
    assert_eq!(f["id"], "not_indexed");
    assert!(
        f["fix"]
            .as_str()
            .unwrap()
            .contains("settled v2 payment through the CDP facilitator"),
        "{f}"
    );

    let w = world(Some(vec!["/v2/no-bazaar".into(), "/v1/ok".into()]), &[], 0).await;
    let rep = w.check().await;
    assert_eq!(rep["verdict"], "not_ready", "{rep:#}");
    assert_eq!(route(&rep, "/v1/ok")["probes"][0]["x402Version"], 1);

    let w = world(None, &["/v2/ok"], 0).await;
    let rep = w.check().await;
    assert_eq!(rep["verdict"], "no_well_known", "{rep:#}");
    assert_eq!(rep["wellKnown"]["httpStatus"], 404);
    assert!(finding_ids(&rep).contains(&"well_known_missing".to_string()));

    let w = world(Some(vec!["https://other.example.com/only".into()]), &[], 0).await;
    assert_eq!(w.check().await["verdict"], "no_routes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn index_pages_of_100_at_most_3_per_pay_to() {
    // 250 entries: all three pages are read and the listed route (last) is found.
    let w = world(Some(vec!["/v2/ok".into()]), &["/v2/ok"], 249).await;
    let rep = w.check().await;
    assert_eq!(rep["verdict"], "fully_indexed", "{rep:#}");
    let pt = &rep["index"]["payTos"][0];
    assert_eq!(pt["indexedTotalForPayTo"], 250);
    assert_eq!(pt["pagesRead"], 3);
    assert_eq!(pt["incomplete"], false);
    let merchant: Vec<support::audit_zoo::Seen> = w
        .index
        .local
        .requests()
        .into_iter()
        .filter(|r| r.path == "/discovery/merchant")
        .collect();
    assert_eq!(merchant.len(), 3);
    assert!(merchant.iter().all(|r| r.query.contains("limit=100")));
    // A second audit within the cache lifetime asks the index nothing.
    let before = w.index.requests.load(Ordering::SeqCst);
    assert_eq!(w.check().await["verdict"], "fully_indexed");
    assert_eq!(
        w.index.requests.load(Ordering::SeqCst),
        before,
        "pages come from the cache"
    );

    // 350 entries: still at most 3 pages, reported incomplete.
    let w = world(Some(vec!["/v2/ok".into()]), &["/v2/ok"], 349).await;
    let rep = w.check().await;
    let pt = &rep["index"]["payTos"][0];
    assert_eq!(pt["pagesRead"], 3);
    assert_eq!(pt["incomplete"], true);
    assert_eq!(
        w.index
            .local
            .requests()
            .iter()
            .filter(|r| r.path == "/discovery/merchant")
            .count(),
        3
    );
    // The route is on page 4, but the search by host still finds it.
    assert_eq!(rep["verdict"], "fully_indexed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_probes_at_a_time_route_cap_and_deadlines() {
    let listed: Vec<String> = (0..8).map(|i| format!("/slowish/{i}")).collect();
    let w = world(Some(listed), &[], 0).await;
    let rep = w.check().await;
    assert_eq!(rep["summary"]["routesProbed"], 8);
    assert_eq!(
        w.zoo.stats.max_inflight.load(Ordering::SeqCst),
        5,
        "5 probes at a time"
    );

    // Route cap (3 on the quick route): the rest listed, not probed, index status still given.
    let listed: Vec<String> = [
        "/v2/ok",
        "/v2/dual",
        "/v1/ok",
        "/v2/no-bazaar",
        "/v2/dollars",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let w = world(Some(listed), &["/v2/dollars"], 0).await;
    let (s, rep) = w.run("/api/bazaar-quick", &w.host()).await;
    assert_eq!(s, 200, "{rep:#}");
    assert_eq!(rep["summary"]["routesProbed"], 3);
    let capped = route(&rep, "/v2/dollars");
    assert_eq!(capped["skippedReason"], "route_limit");
    assert_eq!(capped["indexed"], true);
    assert_eq!(w.zoo.hits("/v2/dollars"), 0);

    // A route that never answers: its probe ends with the probe window, the report comes back
    // within the hard deadline.
    let w = world(Some(vec!["/slow".into(), "/v2/ok".into()]), &["/v2/ok"], 0).await;
    let t = Instant::now();
    let (s, rep) = w.run("/api/bazaar-quick", &w.host()).await;
    assert_eq!(s, 200, "{rep:#}");
    assert!(
        t.elapsed() < Duration::from_millis(3000),
        "{:?}",
        t.elapsed()
    );
    assert_eq!(
        route(&rep, "/slow")["probes"][0]["error"],
        "upstream_timeout"
    );
    assert_eq!(route(&rep, "/v2/ok")["probes"][0]["httpStatus"], 402);

    // An index that does not answer in time: discovery_unavailable (502) within the deadline.
    w.index.set(support::audit_zoo::INDEX_SLOW);
    let w2 = world(Some(vec!["/v2/ok".into()]), &["/v2/ok"], 0).await;
    w2.index.set(support::audit_zoo::INDEX_SLOW);
    let t = Instant::now();
    let (s, b) = w2.run("/api/bazaar-quick", &w2.host()).await;
    assert_eq!(s, 502, "{b:#}");
    assert_eq!(b["error"], "discovery_unavailable");
    assert!(
        t.elapsed() < Duration::from_millis(3500),
        "{:?}",
        t.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_and_unreachable_hosts() {
    let w = world(Some(vec!["/v2/ok".into()]), &["/v2/ok"], 0).await;
    for (input, code) in [
        (format!("http://{}", w.host()), "https_only"),
        ("ftp://example.com".to_string(), "https_only"),
        ("10.0.0.1".to_string(), "blocked_target"),
        ("localhost".to_string(), "blocked_target"),
        ("https://169.254.169.254/".to_string(), "blocked_target"),
    ] {
        let (s, b) = w.run("/api/bazaar-check", &input).await;
        assert_eq!(s, 400, "{input}: {b}");
        assert_eq!(b["error"], code, "{input}");
    }
    let r = support::server::client()
        .get(w.server.url("/api/bazaar-check"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);
    assert_eq!(w.zoo.total(), 0, "bad input never reaches the host");
    assert_eq!(w.index.requests.load(Ordering::SeqCst), 0, "nor the index");

    let (s, b) = w.run("/api/bazaar-check", "127.0.0.1:9").await;
    assert_eq!(s, 502, "{b}");
    assert_eq!(b["error"], "host_unreachable");

    // An https:// origin with a path is accepted; the path is ignored.
    let (s, b) = w
        .run(
            "/api/bazaar-check",
            &format!("https://{}/some/page?x=1", w.host()),
        )
        .await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["verdict"], "fully_indexed");
}
