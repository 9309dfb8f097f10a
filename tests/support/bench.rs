//! For the benches that drive a release paycall binary (benches/memory.rs, benches/soak.rs,
//! benches/hostile.rs): a facilitator stub for which every payment is valid and every settlement
//! a success, a slow upstream, the RSS of a process and the bench's own arguments.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use warp::Filter;

/// anvil's second well-known test key (the stub facilitator checks nothing on chain).
pub const KEY: &str = "59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";
pub const PAY_TO: &str = "0xdF1D7b5C056D78F5aA14138a5695f7FF6F7aCFf3";

/// Facilitator stub on 127.0.0.1: every payment valid, every settlement a success (counted in
/// `settles`). /supported lists Base; with `solana`, Solana too with a feePayer, so that
/// startup's readiness check lets the shipped Solana offer stand (its RPC unreachable: a
/// warning). Its base URL.
pub async fn facilitator(settles: Arc<AtomicUsize>, solana: bool) -> String {
    let verify = warp::path("verify")
        .and(warp::body::json())
        .map(|b: Value| {
            let payer = b["paymentPayload"]["payload"]["authorization"]["from"].clone();
            warp::reply::json(&json!({"isValid": true, "payer": payer}))
        });
    let settle = warp::path("settle")
        .and(warp::body::json())
        .map(move |b: Value| {
            settles.fetch_add(1, Ordering::Relaxed);
            let payer = b["paymentPayload"]["payload"]["authorization"]["from"].clone();
            warp::reply::json(
                &json!({"success": true, "network": "eip155:8453", "payer": payer,
                "transaction": format!("0x{}", "ab".repeat(32))}),
            )
        });
    let mut kinds = vec![json!({"x402Version": 2, "scheme": "exact", "network": "eip155:8453"})];
    if solana {
        kinds.push(json!({"x402Version": 2, "scheme": "exact",
            "network": "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp",
            "extra": {"feePayer": "FeePayer1111111111111111111111111111111111"}}));
    }
    let supported = warp::path("supported")
        .map(move || warp::reply::json(&json!({"kinds": kinds, "extensions": [], "signers": {}})));
    let routes = warp::post()
        .and(verify.or(settle))
        .or(warp::get().and(supported));
    format!("http://{}", super::net::serve_forever(routes).await)
}

/// Upstream on 127.0.0.1 whose /slow answers after `?ms=` milliseconds (1,000 by default). Its
/// base URL.
pub async fn slow_upstream() -> String {
    let slow = warp::path("slow")
        .and(warp::query::<BTreeMap<String, u64>>())
        .and_then(|q: BTreeMap<String, u64>| async move {
            let ms = q.get("ms").copied().unwrap_or(1000);
            if ms > 0 {
                tokio::time::sleep(Duration::from_millis(ms)).await;
            }
            Ok::<_, Infallible>("finally, the slow answer")
        });
    format!("http://{}", super::net::serve_forever(slow).await)
}

/// A number field of /proc/PID/status (`VmRSS` in kB, `Threads`); 0 when unreadable.
pub fn status_field(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.split(':').next() == Some(field))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// The resident set of a process, in kB.
pub fn rss_kb(pid: u32) -> u64 {
    status_field(pid, "VmRSS")
}

/// MB from kB.
pub fn mb(kb: u64) -> f64 {
    kb as f64 / 1024.0
}

/// The value after `name` on the bench's command line.
pub fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
}

/// The number after `name` on the bench's command line, else `default`.
pub fn num(name: &str, default: u64) -> u64 {
    arg(name).and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// The environment a benched paycall runs with against the stub facilitator at `facilitator`:
/// payTo addresses, loopback upstreams allowed, no chain to confirm on (port 9 refuses), errors
/// only in the log.
pub fn stub_env(facilitator: &str) -> Vec<(&'static str, String)> {
    vec![
        ("PAYCALL_FACILITATOR_URL", facilitator.to_string()),
        ("PAYCALL_EVM_PAY_TO", PAY_TO.to_string()),
        (
            "PAYCALL_SOLANA_PAY_TO",
            "FYA23SLFVpETuY13UnwTDJA9W6ipiL1sKXd6XJUhViA1".to_string(),
        ),
        ("PAYCALL_ALLOW_CIDRS", "127.0.0.1/32".to_string()),
        (
            "PAYCALL_UPSTREAM_BASE_RPC",
            "http://127.0.0.1:9/".to_string(),
        ),
        ("PAYCALL_LOG", "error".to_string()),
    ]
}

/// Waits (30 s at most) until the paycall at `base` answers /status.
pub async fn wait_ready(client: &reqwest::Client, base: &str) {
    let started = std::time::Instant::now();
    while client.get(format!("{base}/status")).send().await.is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "paycall did not start"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
