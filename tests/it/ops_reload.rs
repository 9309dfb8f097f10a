//! Live reload and the admin listener, through the real server: a price change in routes.yaml is
//! in the very next 402 after POST /reload; a broken file keeps the old price and the reload
//! answers with the located error; /status and the admin listener show the config's hash; the
//! admin /metrics counts the 402s and reloads exactly.

use crate::support;

use paycall::ops::reload::Live;
use serde_json::Value;
use std::sync::Arc;
use support::server::*;

const PAID: &str = "name: paid\nstages:\n  - stage: payment_gate\n  - stage: static_reply\n    with: { body: { ok: true } }\n  - stage: bill\n  - stage: settle\n";

fn routes_yaml(price: &str) -> String {
    format!(
        "{}routes:\n  - path: /api/paid\n    methods: [GET]\n    price_usd: \"{price}\"\n    summary: Paid\n    pipeline: paid\n",
        service_yaml(NO_FACILITATOR, 30, 10, &[])
    )
}

async fn start_reloadable(dir: &ConfigDir) -> LiveServer {
    let cfg = load(dir).unwrap_or_else(|e| panic!("{e}"));
    let app = Arc::new(build(cfg).unwrap_or_else(|e| panic!("{e}")));
    let path = dir.routes.clone();
    let loader: paycall::ops::reload::Loader =
        Arc::new(move || paycall::config::load_with_env(&path, &test_env));
    let live = Live::with_registry(app, Some(loader), registry());
    start_live(live).await
}

async fn amount(base: &str) -> String {
    let r = client()
        .get(format!("{base}/api/paid"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 402);
    let v: Value = json_of(r).await;
    v["accepts"][0]["amount"].as_str().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_price_change_is_in_the_next_402_and_a_broken_file_keeps_the_old_one() {
    let dir = write_config(&routes_yaml("0.01"), &[("paid", PAID)]);
    let srv = start_reloadable(&dir).await;
    assert_eq!(amount(&srv.base).await, "10000");

    let (_, _, status) = get_json(&format!("{}/status", srv.base)).await;
    let hash1 = status["config"]["hash"].as_str().unwrap().to_string();
    assert_eq!(hash1.len(), 32);

    // Not on the public port.
    let r = client()
        .get(format!("{}/metrics", srv.base))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 404);

    // New price, reload, the next 402 carries it.
    std::fs::write(&dir.routes, routes_yaml("0.05")).unwrap();
    let r = client()
        .post(format!("{}/reload", srv.admin))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let report: Value = json_of(r).await;
    assert_eq!(report["ok"], true, "{report}");
    assert_eq!(report["restartNeeded"], serde_json::json!([]));
    let hash2 = report["config"]["hash"].as_str().unwrap().to_string();
    assert_ne!(hash1, hash2);
    assert_eq!(amount(&srv.base).await, "50000");
    let (_, _, status) = get_json(&format!("{}/status", srv.base)).await;
    assert_eq!(status["config"]["hash"], hash2.as_str());
    let openapi_price = {
        let (_, _, doc) = get_json(&format!("{}/openapi.json", srv.base)).await;
        doc.to_string()
    };
    assert!(openapi_price.contains("0.05"), "discovery is rebuilt too");

    // A broken file: the reload is refused with file:line:column, the old price stays.
    let broken = routes_yaml("0.07").replace(
        "    summary: Paid\n",
        "    summary: Paid\n    pipline: oops\n",
    );
    std::fs::write(&dir.routes, &broken).unwrap();
    let r = client()
        .post(format!("{}/reload", srv.admin))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 422);
    let report: Value = json_of(r).await;
    assert_eq!(report["ok"], false);
    let err = report["errors"][0].as_str().unwrap();
    let line = broken.lines().position(|l| l.contains("pipline")).unwrap() + 1;
    assert!(
        err.starts_with(&format!("{}:{line}:", dir.routes.display())),
        "located at routes.yaml:{line}:col: {err}"
    );
    assert_eq!(
        report["config"]["hash"],
        hash2.as_str(),
        "still the old config"
    );
    assert_eq!(amount(&srv.base).await, "50000");

    // A setting the running services were built from: applied after a restart only.
    let moved = routes_yaml("0.05").replace(NO_FACILITATOR, "http://127.0.0.1:10/");
    std::fs::write(&dir.routes, &moved).unwrap();
    let r = client()
        .post(format!("{}/reload", srv.admin))
        .send()
        .await
        .unwrap();
    let report: Value = json_of(r).await;
    assert_eq!(report["ok"], true);
    assert_eq!(
        report["restartNeeded"],
        serde_json::json!(["payment.facilitator"])
    );

    // The admin listener's view and counters.
    let (_, _, cfg) = get_json(&format!("{}/config", srv.admin)).await;
    assert_eq!(cfg["routes"][0]["priceUsd"], "0.05");
    assert_eq!(cfg["lastReload"]["ok"], true);
    let m = scrape(&srv.admin).await;
    assert_eq!(
        m[r#"paycall_payment_required_total{kind="challenge",route="/api/paid"}"#],
        3.0
    );
    assert_eq!(
        m[r#"paycall_http_requests_total{method="GET",route="/api/paid",status="402"}"#],
        3.0
    );
    assert_eq!(
        m[r#"paycall_http_requests_total{method="GET",route="other",status="404"}"#],
        1.0
    );
    assert_eq!(m[r#"paycall_config_reloads_total{result="ok"}"#], 2.0);
    assert_eq!(m[r#"paycall_config_reloads_total{result="error"}"#], 1.0);
    let hash3 = cfg["config"]["hash"].as_str().unwrap();
    assert_eq!(m[&format!(r#"paycall_config_info{{hash="{hash3}"}}"#)], 1.0);

    srv.shutdown(std::time::Duration::from_secs(15)).await;
}
