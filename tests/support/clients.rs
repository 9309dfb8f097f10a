//! Test support for the official x402 clients paying paycall (tests/python_clients.rs,
//! tests/rust_client.rs): paycall on the SHIPPED routes.yaml against the local payment stack,
//! a bounded runner for a client command that prints one JSON line, and the money checks of a
//! charged call (receipt, facilitator trace, on-chain balances).
//!
//! Include with `#[path = "support/clients.rs"] mod clients;` next to `support/server.rs` as
//! `server_support`, `support/stack.rs` as `stack` and `support/market.rs` as `market`.
#![allow(dead_code)]

use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use paycall::config;
use paycall::server;

use super::market::MarketUpstreams;
use super::server_support::{self, TestServer};
use super::stack::LocalStack;

const SOL_PLACEHOLDER: &str = "11111111111111111111111111111111";

/// paycall on the shipped routes.yaml: the stack's facilitator and chain, market upstreams from
/// fixtures, loopback targets allowed (the fetch/extract upstream).
pub async fn paycall_on_stack(stack: &LocalStack, market: &MarketUpstreams) -> TestServer {
    let routes = Path::new(env!("CARGO_MANIFEST_DIR")).join("routes.yaml");
    let mut vars: HashMap<String, String> = market.env(&[]).into_iter().collect();
    for (k, v) in [
        ("PAYCALL_FACILITATOR_URL", stack.facilitator_url.clone()),
        ("PAYCALL_EVM_PAY_TO", stack.pay_to.clone()),
        ("PAYCALL_SOLANA_PAY_TO", SOL_PLACEHOLDER.to_string()),
        ("PAYCALL_ALLOW_CIDRS", "127.0.0.1/32".to_string()),
        ("PAYCALL_LEDGER_URL", "sqlite::memory:".to_string()),
        // Settlements are confirmed on the stack's chain.
        ("PAYCALL_UPSTREAM_BASE_RPC", stack.rpc_url.clone()),
    ] {
        vars.insert(k.to_string(), v);
    }
    let env = move |k: &str| vars.get(k).cloned();
    let cfg = config::load_with_env(&routes, &env).unwrap_or_else(|e| panic!("{e}"));
    let services = server::services::build(&cfg).expect("services");
    let app = server::build_app(cfg, services).unwrap_or_else(|e| panic!("{e}"));
    server_support::start_app(app).await
}

/// Runs `cmd` (stdin closed, no proxy from the environment), bounded by `timeout` (a panic when
/// over it): its exit status, stdout and stderr.
pub fn run_bounded(
    mut cmd: Command,
    what: &str,
    timeout: Duration,
) -> (ExitStatus, String, String) {
    let dir = tempfile::tempdir().expect("temp dir");
    let (out_file, err_file) = (dir.path().join("stdout"), dir.path().join("stderr"));
    for var in [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ] {
        cmd.env_remove(var);
    }
    let mut child = cmd
        .env("NO_PROXY", "127.0.0.1,localhost")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_file).expect("stdout file"))
        .stderr(std::fs::File::create(&err_file).expect("stderr file"))
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {what}: {e}"));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("child status") {
            break status;
        }
        if started.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not finish within {timeout:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stdout = std::fs::read_to_string(&out_file).unwrap_or_default();
    let stderr = std::fs::read_to_string(&err_file).unwrap_or_default();
    (status, stdout, stderr)
}

/// `run_bounded` for a client that prints one JSON line: that line when it succeeded, else a
/// panic with everything it printed.
pub fn run_json(cmd: Command, what: &str, timeout: Duration) -> Value {
    let (status, stdout, stderr) = run_bounded(cmd, what, timeout);
    let line = stdout
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with('{'));
    match line.and_then(|l| serde_json::from_str::<Value>(l).ok()) {
        Some(v) if status.success() => v,
        other => panic!(
            "{what} failed ({status}): {}\nstdout:\n{stdout}\nstderr:\n{stderr}",
            other.map(|v| v.to_string()).unwrap_or_default()
        ),
    }
}

/// On-chain USDC of the buyer and of payTo.
pub fn balances(stack: &LocalStack) -> (i128, i128) {
    (
        stack.usdc_balance(&stack.buyer) as i128,
        stack.usdc_balance(&stack.pay_to) as i128,
    )
}

/// The money checks of one charged call since the facilitator trace was last reset: the receipt
/// names a settled transaction by the buyer, the facilitator verified and settled exactly once
/// (that transaction), and exactly `price` moved from the buyer to payTo since `before`.
pub fn assert_charged(
    stack: &LocalStack,
    what: &str,
    receipt: &Value,
    before: (i128, i128),
    price: i128,
) {
    assert_eq!(receipt["success"], true, "{what}: receipt {receipt}");
    let tx = receipt["transaction"].as_str().unwrap_or_default();
    assert!(
        tx.starts_with("0x") && tx.len() == 66,
        "{what}: receipt {receipt}"
    );
    assert_eq!(receipt["network"], "eip155:8453", "{what}: {receipt}");
    assert!(
        receipt["payer"]
            .as_str()
            .is_some_and(|p| p.eq_ignore_ascii_case(&stack.buyer)),
        "{what}: the receipt's payer is the buyer: {receipt}"
    );
    let calls = stack.calls();
    let settles: Vec<&Value> = calls
        .iter()
        .filter(|c| c["endpoint"] == "/settle")
        .collect();
    assert_eq!(
        calls.iter().filter(|c| c["endpoint"] == "/verify").count(),
        1,
        "{what}: one verify: {calls:?}"
    );
    assert_eq!(settles.len(), 1, "{what}: one settle: {calls:?}");
    assert_eq!(
        settles[0]["response"]["transaction"].as_str(),
        Some(tx),
        "{what}: the receipt is the facilitator's settlement"
    );
    let after = balances(stack);
    assert_eq!(
        (before.0 - after.0, after.1 - before.1),
        (price, price),
        "{what}: the price moved from the buyer to payTo on chain"
    );
}

/// The checks of a call that was not charged: no settle, no money moved since `before`.
pub fn assert_not_charged(stack: &LocalStack, what: &str, before: (i128, i128)) {
    assert_eq!(
        stack.settle_calls(),
        0,
        "{what}: a not-charged outcome never settles"
    );
    assert_eq!(balances(stack), before, "{what}: no money moved");
}
