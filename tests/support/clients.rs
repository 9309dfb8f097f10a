//! Test support for the official x402 clients paying paycall (tests/it/python_clients.rs,
//! tests/it/rust_client.rs): paycall on the SHIPPED routes.yaml against the local payment stack,
//! a bounded runner for a client command that prints one JSON line, the money checks of a
//! charged call (receipt, facilitator trace, on-chain balances), and the calls every HTTP client
//! must pay.

use serde_json::{json, Value};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use super::market::MarketUpstreams;
use super::server::TestServer;
use super::shipped;
use super::stack::LocalStack;
use super::upstream::{Canary, Upstream};

/// paycall on the shipped routes.yaml: the stack's facilitator and chain, market upstreams from
/// fixtures, loopback targets allowed (the fetch/extract upstream).
pub async fn paycall_on_stack(stack: &LocalStack, market: &MarketUpstreams) -> TestServer {
    // The stack's variables win: settlements are confirmed on the stack's chain.
    let mut vars = shipped::vars(stack, &[]);
    for (k, v) in market.env(&[]) {
        vars.entry(k).or_insert(v);
    }
    shipped::start(shipped::config(&shipped::routes_yaml(), vars))
        .await
        .0
}

/// What a client test pays against, started in this order: the local payment stack, a canary on
/// 127.0.0.2 (a target the guard refuses; it counts what reaches it), upstream pages on 127.0.0.1
/// (some link to the canary), the market fixtures, and paycall on the shipped routes.yaml over
/// all of them ([`paycall_on_stack`]). Keep the market upstreams alive as long as paycall.
pub async fn setup() -> (LocalStack, Canary, Upstream, MarketUpstreams, TestServer) {
    let stack = LocalStack::start();
    let canary = super::upstream::canary("127.0.0.2").await;
    let up = super::upstream::start(&canary.url()).await;
    let market = super::market::start().await;
    let paycall = paycall_on_stack(&stack, &market).await;
    (stack, canary, up, market, paycall)
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

/// One call of [`http_client_pays`]: `what` names it in failures; `body` makes it a POST.
pub struct Call {
    pub what: &'static str,
    pub url: String,
    pub body: Option<String>,
}

/// What every x402 HTTP client must do against paycall on the shipped routes: GET /api/fetch of
/// an article (charged 20,000), POST /api/extract with a JSON body holding an object field
/// (charged 15,000; the client repeats the body with the payment), and GET /api/fetch of a
/// missing page (the route's error, not charged); the canary is never reached. `pay` runs the
/// client for one call and returns its JSON line; the three lines, in that order.
pub async fn http_client_pays<F, Fut>(
    stack: &LocalStack,
    paycall: &TestServer,
    up: &Upstream,
    canary: &Canary,
    client: &str,
    mut pay: F,
) -> Vec<Value>
where
    F: FnMut(Call) -> Fut,
    Fut: std::future::Future<Output = Value>,
{
    let fetch = |path: &str| {
        format!(
            "{}?url={}",
            paycall.url("/api/fetch"),
            super::server::enc(&up.url(path))
        )
    };
    let mut outs = Vec::new();

    let what = format!("{client} GET /api/fetch");
    let before = balances(stack);
    let out = pay(Call {
        what: "GET /api/fetch",
        url: fetch("/article"),
        body: None,
    })
    .await;
    assert_eq!(out["status"], 200, "{what}: {out}");
    assert_eq!(out["body"]["format"], "markdown", "{what}: {out}");
    assert!(
        out["body"]["content"]
            .as_str()
            .unwrap_or_default()
            .contains("The harbour was quiet that morning"),
        "{what}: {out}"
    );
    assert_charged(stack, &what, &out["paymentResponse"], before, 20_000);
    outs.push(out);

    stack.reset_calls();
    let what = format!("{client} POST /api/extract");
    let body = json!({ "url": up.url("/article"), "fields": { "headline": "h1" } }).to_string();
    let before = balances(stack);
    let out = pay(Call {
        what: "POST /api/extract",
        url: paycall.url("/api/extract"),
        body: Some(body),
    })
    .await;
    assert_eq!(out["status"], 200, "{what}: {out}");
    assert!(
        out["body"]["fields"]["headline"].is_string(),
        "{what}: {out}"
    );
    assert_charged(stack, &what, &out["paymentResponse"], before, 15_000);
    outs.push(out);

    stack.reset_calls();
    let what = format!("{client} GET /api/fetch of a missing page");
    let before = balances(stack);
    let out = pay(Call {
        what: "GET /api/fetch of a missing page",
        url: fetch("/missing"),
        body: None,
    })
    .await;
    assert!(out["status"].as_u64().unwrap_or(0) >= 400, "{what}: {out}");
    assert!(out["body"]["error"].is_string(), "{what}: {out}");
    assert_eq!(out["paymentResponse"], Value::Null, "{what}: {out}");
    assert_not_charged(stack, &what, before);
    outs.push(out);

    assert_eq!(canary.hits(), 0);
    outs
}

/// tests/.venv's Python (the official Python x402 clients, the OpenAPI validator); a missing
/// venv fails the test, it never skips.
pub fn venv_python() -> std::path::PathBuf {
    let py = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/.venv/bin/python");
    assert!(
        py.exists(),
        "{} is missing: run scripts/setup.sh (it makes tests/.venv with tests/requirements.txt)",
        py.display()
    );
    py
}
