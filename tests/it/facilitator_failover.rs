//! Issue 17, item 6: several facilitators, health and failover.
//!
//! Part 1 — the pool (`paycall::x402::Facilitators`) against in-process stub facilitators on
//! 127.0.0.1: a verify goes on to the next facilitator when one gives no verdict, never when one
//! gives a verdict; a settle goes on ONLY when the first never received it (its port closed),
//! never after a timeout, a dropped connection or a 5xx (the outcome is unknown: the settle
//! stage's pending path and the ledger decide); a facilitator that does not list the payment's
//! network is never asked; an open breaker is skipped while another one is healthy, and a single
//! facilitator is always asked.
//!
//! Part 2 — end to end: the local payment stack (anvil + the official facilitator) and a second
//! official facilitator process on the same chain (tests/e2e/facilitator2.mjs), preferred
//! first. Paid calls settle through it; it is killed in the middle of a paid call (after its
//! verify, before the settle); that call and the next ones are settled by the other one. The
//! traces of both facilitators and the chain show every 200 settled exactly once, and the ledger
//! rows name the facilitator each payment was settled by.
//!
//! Part 3 — the confirmation rule: a settlement whose outcome is unknown (the preferred
//! facilitator answered 5xx, which also opens its breaker) is resolved, on the buyer's retry,
//! with the SAME facilitator, never sent to the healthy other one; the ledger row, the request
//! log line's `facilitator` and the per-facilitator metrics all name it; the money moved once.

use crate::support;

use support::server as server_support;
use support::{stack, upstream};

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use url::Url;

use paycall::config;
use paycall::ops::reload::Live;
use paycall::payment::ledger::{connect, LedgerUrl, ReportQuery, Row, State};
use paycall::server;
use paycall::x402::{
    FacilitatorClient, FacilitatorConfig, FacilitatorError, Facilitators, Requirement,
    SettleOutcome,
};
use stack::LocalStack;

// ---------------------------------------------------------------------------------------------
// Part 1: stub facilitators

#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    /// verify: isValid true; settle: success with a transaction.
    Answer,
    /// verify: isValid false (a verdict).
    Refuse,
    /// HTTP 503.
    Unavailable,
    /// Read the request, never answer (for 20 s).
    Hang,
    /// Read the request, reset the connection.
    Reset,
}

struct Stub {
    url: String,
    verify: Arc<AtomicUsize>,
    settle: Arc<AtomicUsize>,
    modes: Arc<Mutex<(Mode, Mode)>>,
    accept: tokio::task::JoinHandle<()>,
}

impl Stub {
    fn set(&self, verify: Mode, settle: Mode) {
        *self.modes.lock().unwrap() = (verify, settle);
    }
    fn counts(&self) -> (usize, usize) {
        (
            self.verify.load(Ordering::SeqCst),
            self.settle.load(Ordering::SeqCst),
        )
    }
    /// Stops listening: the port refuses connections from now on.
    async fn stop(&self) {
        self.accept.abort();
        // Wait (bounded) until the listener is really gone.
        let addr = self.url.trim_start_matches("http://").trim_end_matches('/');
        let deadline = Instant::now() + Duration::from_secs(10);
        while tokio::net::TcpStream::connect(addr).await.is_ok() {
            assert!(Instant::now() < deadline, "stub still accepting");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// A facilitator listing `exact` v2 on `networks`.
async fn stub(networks: &[&str]) -> Stub {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let verify = Arc::new(AtomicUsize::new(0));
    let settle = Arc::new(AtomicUsize::new(0));
    let modes = Arc::new(Mutex::new((Mode::Answer, Mode::Answer)));
    let kinds: Vec<Value> = networks
        .iter()
        .map(|n| json!({"x402Version": 2, "scheme": "exact", "network": n}))
        .collect();
    let supported = json!({"kinds": kinds, "extensions": [], "signers": {}});
    let (v, s, m) = (verify.clone(), settle.clone(), modes.clone());
    let accept = tokio::spawn(async move {
        // Bounded: the stub stops accepting after two minutes.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
        while let Ok(Ok((sock, _))) = tokio::time::timeout_at(deadline, listener.accept()).await {
            let (v, s, m, supported) = (v.clone(), s.clone(), m.clone(), supported.clone());
            tokio::spawn(serve_one(sock, v, s, m, supported));
        }
    });
    Stub {
        url,
        verify,
        settle,
        modes,
        accept,
    }
}

async fn serve_one(
    mut sock: tokio::net::TcpStream,
    verify: Arc<AtomicUsize>,
    settle: Arc<AtomicUsize>,
    modes: Arc<Mutex<(Mode, Mode)>>,
    supported: Value,
) {
    let mut buf = Vec::new();
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let mut chunk = [0u8; 4096];
        match tokio::time::timeout(Duration::from_secs(20), sock.read(&mut chunk)).await {
            Ok(Ok(n)) if n > 0 => buf.extend_from_slice(&chunk[..n]),
            _ => return,
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let len = support::net::content_length(&head);
    while buf.len() < head_end + len {
        let mut chunk = [0u8; 4096];
        match tokio::time::timeout(Duration::from_secs(20), sock.read(&mut chunk)).await {
            Ok(Ok(n)) if n > 0 => buf.extend_from_slice(&chunk[..n]),
            _ => return,
        }
    }
    let path = head.split_whitespace().nth(1).unwrap_or("").to_string();
    let (vm, sm) = *modes.lock().unwrap();
    let mode = match path.as_str() {
        "/verify" => {
            verify.fetch_add(1, Ordering::SeqCst);
            vm
        }
        "/settle" => {
            settle.fetch_add(1, Ordering::SeqCst);
            sm
        }
        _ => Mode::Answer,
    };
    let (status, body) = match (path.as_str(), mode) {
        (_, Mode::Hang) => {
            tokio::time::sleep(Duration::from_secs(20)).await;
            return;
        }
        (_, Mode::Reset) => {
            let _ = sock.set_zero_linger();
            return;
        }
        (_, Mode::Unavailable) => (503, json!({"error": "unavailable"})),
        ("/supported", _) => (200, supported),
        ("/verify", Mode::Refuse) => (
            200,
            json!({"isValid": false, "invalidReason": "invalid_exact_evm_payload_signature"}),
        ),
        ("/verify", _) => (
            200,
            json!({"isValid": true, "payer": "0x1111111111111111111111111111111111111111"}),
        ),
        ("/settle", _) => (
            200,
            json!({"success": true, "transaction": format!("0x{}", "ab".repeat(32)), "network": "eip155:8453"}),
        ),
        _ => (404, json!({"error": "no such path"})),
    };
    let text = body.to_string();
    let resp = format!(
        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
        text.len()
    );
    let _ = sock.write_all(resp.as_bytes()).await;
}

fn client(url: &str) -> FacilitatorClient {
    let mut cfg = FacilitatorConfig::new(Url::parse(url).unwrap());
    cfg.verify_timeout = Duration::from_secs(1);
    cfg.settle_timeout = Duration::from_secs(1);
    FacilitatorClient::new(cfg).unwrap()
}

fn pool(stubs: &[(&str, &Stub)], failures: u32) -> Facilitators {
    Facilitators::new(
        stubs
            .iter()
            .map(|(name, s)| (name.to_string(), client(&s.url)))
            .collect(),
        failures,
        Duration::from_secs(600),
        Duration::from_secs(3),
        Duration::from_secs(600),
    )
}

fn requirement() -> Requirement {
    server_support::requirement()
}

fn payload() -> Value {
    json!({"x402Version": 2, "payload": {"signature": "0x00", "authorization": {"from": "0x1111111111111111111111111111111111111111"}}})
}

#[tokio::test]
async fn a_settle_that_may_have_been_delivered_is_never_sent_to_another_facilitator() {
    for (mode, expect) in [
        (Mode::Hang, "facilitator_timeout"),
        (Mode::Reset, "facilitator_interrupted"),
        (Mode::Unavailable, "facilitator_bad_response"),
    ] {
        let a = stub(&["eip155:8453"]).await;
        let b = stub(&["eip155:8453"]).await;
        let p = pool(&[("a", &a), ("b", &b)], 3);
        p.supported().await.unwrap();
        a.set(Mode::Answer, mode);
        let r = p.settle(&payload(), &requirement()).await;
        let err = r.result.expect_err("no verdict from a");
        assert_eq!(err.code(), expect, "{mode:?}");
        assert_eq!(r.by.as_deref(), Some("a"));
        assert_eq!(a.counts().1, 1, "{mode:?}: delivered to a once");
        assert_eq!(
            b.counts().1,
            0,
            "{mode:?}: a settlement whose outcome is unknown is not re-sent to b"
        );
    }
}

#[tokio::test]
async fn a_settle_that_never_left_goes_to_the_next_facilitator() {
    let a = stub(&["eip155:8453"]).await;
    let b = stub(&["eip155:8453"]).await;
    let p = pool(&[("a", &a), ("b", &b)], 3);
    p.supported().await.unwrap();
    // a was healthy and listed the network, then stopped: its port refuses connections.
    a.stop().await;
    let r = p.settle(&payload(), &requirement()).await;
    assert!(
        matches!(r.result, Ok(SettleOutcome::Settled { .. })),
        "{:?}",
        r.result
    );
    assert_eq!(r.by.as_deref(), Some("b"));
    assert_eq!(b.counts().1, 1, "settled once, by b");
}

#[tokio::test]
async fn verify_goes_on_after_no_verdict_but_a_verdict_is_final() {
    let a = stub(&["eip155:8453"]).await;
    let b = stub(&["eip155:8453"]).await;
    let p = pool(&[("a", &a), ("b", &b)], 100);
    p.supported().await.unwrap();

    let r = p.verify(&payload(), &requirement()).await;
    assert!(r.result.unwrap().is_valid);
    assert_eq!(
        r.by.as_deref(),
        Some("a"),
        "the first in the operator's order"
    );

    for mode in [Mode::Unavailable, Mode::Hang, Mode::Reset] {
        a.set(mode, Mode::Answer);
        let before = (a.counts().0, b.counts().0);
        let r = p.verify(&payload(), &requirement()).await;
        assert!(r.result.unwrap().is_valid, "{mode:?}");
        assert_eq!(r.by.as_deref(), Some("b"), "{mode:?}");
        assert!(a.counts().0 > before.0, "{mode:?}: a was asked first");
        assert_eq!(b.counts().0, before.1 + 1, "{mode:?}");
    }

    a.set(Mode::Refuse, Mode::Answer);
    let before_b = b.counts().0;
    let r = p.verify(&payload(), &requirement()).await;
    let v = r.result.unwrap();
    assert!(!v.is_valid);
    assert_eq!(r.by.as_deref(), Some("a"));
    assert_eq!(b.counts().0, before_b, "a refusal is not shopped around");
}

#[tokio::test]
async fn a_facilitator_that_does_not_list_the_network_is_never_asked() {
    let a = stub(&["eip155:1"]).await;
    let b = stub(&["eip155:8453"]).await;
    let p = pool(&[("a", &a), ("b", &b)], 3);
    let merged = p.supported().await.unwrap();
    assert!(merged.supports(2, "exact", "eip155:1") && merged.supports(2, "exact", "eip155:8453"));
    let r = p.verify(&payload(), &requirement()).await;
    assert_eq!(r.by.as_deref(), Some("b"));
    let r = p.settle(&payload(), &requirement()).await;
    assert_eq!(r.by.as_deref(), Some("b"));
    assert_eq!(a.counts(), (0, 0));

    let mut other = requirement();
    other.network = "eip155:10".into();
    let r = p.verify(&payload(), &other).await;
    assert_eq!(r.by, None);
    assert_eq!(r.result.unwrap_err().code(), "facilitator_unreachable");
    assert_eq!(a.counts(), (0, 0));
    assert_eq!(b.counts(), (1, 1));
}

#[tokio::test]
async fn an_open_breaker_is_skipped_while_another_is_healthy_and_a_single_one_is_always_asked() {
    let a = stub(&["eip155:8453"]).await;
    let b = stub(&["eip155:8453"]).await;
    let p = pool(&[("a", &a), ("b", &b)], 2);
    p.supported().await.unwrap();
    a.set(Mode::Unavailable, Mode::Answer);
    for _ in 0..2 {
        assert_eq!(
            p.verify(&payload(), &requirement()).await.by.as_deref(),
            Some("b")
        );
    }
    assert_eq!(a.counts().0, 2);
    let status = p.status();
    assert_eq!(status[0]["state"], "open", "{status}");
    assert_eq!(status[0]["lastError"], "facilitator_bad_response");
    assert_eq!(status[1]["state"], "closed");
    // Open: not asked while b is healthy, for verify and settle alike.
    a.set(Mode::Answer, Mode::Answer);
    assert_eq!(
        p.verify(&payload(), &requirement()).await.by.as_deref(),
        Some("b")
    );
    assert_eq!(
        p.settle(&payload(), &requirement()).await.by.as_deref(),
        Some("b")
    );
    assert_eq!(a.counts(), (2, 0));
    // A health check closes it again; it is first in the order again.
    p.check_health().await;
    assert_eq!(p.status()[0]["state"], "closed");
    assert_eq!(
        p.verify(&payload(), &requirement()).await.by.as_deref(),
        Some("a")
    );

    // One facilitator: its open breaker never refuses a call (there is no one else).
    let only = stub(&["eip155:8453"]).await;
    let p = pool(&[("only", &only)], 1);
    p.supported().await.unwrap();
    only.set(Mode::Unavailable, Mode::Answer);
    assert!(p.verify(&payload(), &requirement()).await.result.is_err());
    assert_eq!(p.status()[0]["state"], "open");
    only.set(Mode::Answer, Mode::Answer);
    let r = p.verify(&payload(), &requirement()).await;
    assert!(r.result.unwrap().is_valid);
    assert_eq!(p.status()[0]["state"], "closed");
}

#[tokio::test]
async fn unreachable_everywhere_is_not_charged() {
    let a = stub(&["eip155:8453"]).await;
    let p = pool(&[("a", &a)], 3);
    p.supported().await.unwrap();
    a.stop().await;
    let r = p.settle(&payload(), &requirement()).await;
    assert!(matches!(r.result, Err(FacilitatorError::Unreachable(_))));
    assert!(!r.result.unwrap_err().outcome_unknown());
}

// ---------------------------------------------------------------------------------------------
// Part 2: two real facilitators on one chain

/// The second facilitator process (tests/e2e/facilitator2.mjs). Killed when dropped.
struct SecondFacilitator {
    url: String,
    child: Child,
    _dir: tempfile::TempDir,
}

impl SecondFacilitator {
    fn start(stack: &LocalStack) -> SecondFacilitator {
        let e2e = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests")
            .join("e2e");
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let err = dir.path().join("err");
        let mut child = Command::new(std::env::var("PAYCALL_NODE").unwrap_or("node".into()))
            .arg(e2e.join("facilitator2.mjs"))
            .arg("--state")
            .arg(&stack.state_file)
            .current_dir(&e2e)
            .stdin(Stdio::piped())
            .stdout(fs::File::create(&out).unwrap())
            .stderr(fs::File::create(&err).unwrap())
            .spawn()
            .expect("run node");
        let started = Instant::now();
        loop {
            let text = fs::read_to_string(&out).unwrap_or_default();
            if let Some(v) = text
                .lines()
                .find_map(|l| serde_json::from_str::<Value>(l).ok())
            {
                return SecondFacilitator {
                    url: v["url"].as_str().expect("url").to_string(),
                    child,
                    _dir: dir,
                };
            }
            if let Ok(Some(status)) = child.try_wait() {
                panic!(
                    "facilitator2.mjs exited ({status}): {}",
                    fs::read_to_string(&err).unwrap_or_default()
                );
            }
            if started.elapsed() > Duration::from_secs(60) {
                let _ = child.kill();
                panic!(
                    "facilitator2.mjs not listening within 60 s: {}",
                    fs::read_to_string(&err).unwrap_or_default()
                );
            }
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    fn calls(&self) -> Vec<Value> {
        calls_of(&self.url)
    }

    /// SIGKILL, and wait (bounded) until its port refuses connections.
    fn kill(&mut self) {
        self.child.kill().expect("kill facilitator2");
        let _ = self.child.wait();
        let addr: std::net::SocketAddr = self.url.trim_start_matches("http://").parse().unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            assert!(
                Instant::now() < deadline,
                "killed facilitator still accepting"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for SecondFacilitator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn calls_of(url: &str) -> Vec<Value> {
    let (status, text) = stack::http_request("GET", &format!("{url}/_calls"), None)
        .unwrap_or_else(|e| panic!("{url}/_calls: {e}"));
    assert_eq!(status, 200, "{text}");
    serde_json::from_str::<Value>(&text)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

fn of(calls: &[Value], endpoint: &str) -> Vec<Value> {
    calls
        .iter()
        .filter(|c| c["endpoint"] == endpoint)
        .cloned()
        .collect()
}

/// The shipped routes.yaml with `payment.facilitator` replaced by `block`, in a temp dir.
fn routes_with(block: &str) -> (tempfile::TempDir, PathBuf) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("pipelines")).unwrap();
    for e in fs::read_dir(root.join("pipelines")).unwrap() {
        let p = e.unwrap().path();
        fs::copy(
            &p,
            dir.path().join("pipelines").join(p.file_name().unwrap()),
        )
        .unwrap();
    }
    // The sample routes serve files under static/, relative to routes.yaml.
    std::os::unix::fs::symlink(root.join("static"), dir.path().join("static")).unwrap();
    let text = fs::read_to_string(root.join("routes.yaml")).unwrap();
    let mut out = String::new();
    let mut skipping = false;
    let mut replaced = false;
    for line in text.lines() {
        if line == "  facilitator:" {
            skipping = true;
            replaced = true;
            out.push_str(block);
            continue;
        }
        if skipping && line.starts_with("    ") {
            continue;
        }
        skipping = false;
        out.push_str(line);
        out.push('\n');
    }
    assert!(
        replaced,
        "the shipped routes.yaml has no `  facilitator:` block"
    );
    let path = dir.path().join("routes.yaml");
    fs::write(&path, out).unwrap();
    (dir, path)
}

/// paycall's environment on the stack: its payTo and RPC, the upstreams on 127.0.0.1, the
/// ledger in the file `ledger` (read back by the test).
fn stack_env(stack: &LocalStack, ledger: &Path) -> impl Fn(&str) -> Option<String> {
    let rpc = stack.rpc_url.clone();
    let pay_to = stack.pay_to.clone();
    let ledger = format!("sqlite://{}", ledger.display());
    move |k: &str| -> Option<String> {
        match k {
            "PAYCALL_EVM_PAY_TO" => Some(pay_to.clone()),
            "PAYCALL_SOLANA_PAY_TO" => Some("11111111111111111111111111111111".into()),
            "PAYCALL_ALLOW_CIDRS" => Some("127.0.0.1/32".into()),
            "PAYCALL_LEDGER_URL" => Some(ledger.clone()),
            "PAYCALL_UPSTREAM_BASE_RPC" => Some(rpc.clone()),
            _ => None,
        }
    }
}

/// Every row of the ledger file, as `paycall ledger` reads them.
async fn ledger_rows(ledger: &Path) -> Vec<Row> {
    let store = connect(&LedgerUrl::Sqlite(ledger.to_path_buf())).unwrap();
    store.report(&ReportQuery::default()).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paid_calls_keep_succeeding_when_a_facilitator_dies_and_nothing_is_settled_twice() {
    let stack = LocalStack::start();
    let mut second = SecondFacilitator::start(&stack);
    let canary = upstream::canary("127.0.0.2").await;
    let up = upstream::start(&canary.url()).await;

    // `second` first (preferred), the stack's own facilitator as the fallback.
    let block = format!(
        "  facilitators:\n    - name: second\n      url: {}\n      auth: none\n    - name: stack\n      url: {}\n      auth: none\n  failover: {{ failures: 2, cooldown_s: 600, check_interval_s: 1 }}\n",
        second.url, stack.facilitator_url
    );
    let (dir, routes) = routes_with(&block);
    let ledger = dir.path().join("ledger.db");
    let cfg = config::load_with_env(&routes, &stack_env(&stack, &ledger))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(cfg.payment.facilitators.len(), 2);
    let services = server::services::build(&cfg).expect("services");
    let app = server::build_app(cfg, services).unwrap_or_else(|e| panic!("{e}"));
    let paycall = server_support::start_app(app).await;

    let price: u128 = 10_000; // /api/http, $0.01
    let pay_to_start = stack.usdc_balance(&stack.pay_to);
    let url = |path: &str| {
        paycall.url(&format!(
            "/api/http?url={}",
            server_support::enc(&up.url(path))
        ))
    };
    let mut results = Vec::new();

    // 1. Both up: paid calls go to `second`.
    for _ in 0..3 {
        let r = stack.pay_async(&url("/hello"), "GET", None).await;
        assert_eq!(r.status, 200, "{:?}", r.body);
        results.push(r);
    }
    assert_eq!(
        of(&second.calls(), "/settle").len(),
        3,
        "settled by the preferred one"
    );
    assert_eq!(of(&stack.calls(), "/settle").len(), 0);

    // 2. `second` dies in the middle of a paid call: after it verified the payment, while the
    //    work runs (a slow upstream), before the settlement.
    let slow = url("/slow?ms=3000");
    let pay = stack.pay_async(&slow, "GET", None);
    let second_url = second.url.clone();
    let killer = async {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let calls = calls_of(&second_url);
            // Its 4th verify answered (killed before answering, the verify would go to the
            // other facilitator too: allowed, but this test wants a settle-time death).
            if of(&calls, "/verify")
                .get(3)
                .is_some_and(|v| v["status"] == 200)
            {
                break calls;
            }
            assert!(
                Instant::now() < deadline,
                "the 4th verify never reached `second`"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    let (r, second_trace) = tokio::join!(pay, async {
        let trace = killer.await;
        second.kill();
        trace
    });
    assert_eq!(
        r.status, 200,
        "the settlement never reached the dead facilitator, so the other one settles it: {:?}",
        r.body
    );
    results.push(r);

    // 3. Later calls: verified and settled by the survivor.
    for _ in 0..2 {
        let r = stack.pay_async(&url("/hello"), "GET", None).await;
        assert_eq!(r.status, 200, "{:?}", r.body);
        results.push(r);
    }

    // Every 200 was settled exactly once, by exactly one facilitator.
    let stack_trace = stack.calls();
    let tagged = |calls: Vec<Value>, name: &'static str| {
        calls.into_iter().map(move |mut c| {
            c["facilitator"] = json!(name);
            c
        })
    };
    let settles: Vec<Value> = tagged(of(&second_trace, "/settle"), "second")
        .chain(tagged(of(&stack_trace, "/settle"), "stack"))
        .collect();
    assert_eq!(of(&second_trace, "/settle").len(), 3);
    assert_eq!(
        of(&stack_trace, "/settle").len(),
        3,
        "the killed call's and the two after"
    );
    let nonces = |calls: &[Value]| -> Vec<String> {
        calls
            .iter()
            .map(|c| {
                format!(
                    "{} {} {}",
                    c["endpoint"],
                    c["body"]["paymentPayload"]["payload"]["authorization"]["nonce"],
                    c["status"]
                )
            })
            .collect()
    };
    assert_eq!(
        of(&stack_trace, "/verify").len(),
        2,
        "the killed call was verified by `second`: stack {:#?} second {:#?}",
        nonces(&stack_trace),
        nonces(&second_trace)
    );
    let mut by_nonce: BTreeMap<String, usize> = BTreeMap::new();
    let mut by_tx: BTreeMap<String, usize> = BTreeMap::new();
    for s in &settles {
        assert_eq!(s["status"], 200, "{s}");
        assert_eq!(s["response"]["success"], true, "{s}");
        let nonce = s["body"]["paymentPayload"]["payload"]["authorization"]["nonce"]
            .as_str()
            .unwrap_or_else(|| panic!("no nonce in {s}"))
            .to_string();
        *by_nonce.entry(nonce).or_default() += 1;
        let tx = s["response"]["transaction"].as_str().unwrap().to_string();
        *by_tx.entry(tx).or_default() += 1;
    }
    assert_eq!(by_nonce.len(), 6, "six payments: {by_nonce:?}");
    assert!(
        by_nonce.values().all(|&n| n == 1),
        "no payment settled twice: {by_nonce:?}"
    );
    for r in &results {
        let tx = r.payment_response.as_ref().expect("PAYMENT-RESPONSE")["transaction"]
            .as_str()
            .unwrap()
            .to_string();
        assert_eq!(
            by_tx.get(&tx),
            Some(&1),
            "the 200's transaction {tx} was settled once"
        );
        assert_eq!(
            r.pay_to_received(),
            price as i128,
            "exactly the price moved"
        );
    }
    assert_eq!(
        stack.usdc_balance(&stack.pay_to) - pay_to_start,
        6 * price,
        "six calls, six prices on chain"
    );

    // The ledger names the facilitator each payment was settled by; the killed call was
    // verified by `second` and settled by `stack` (`second` was named first, refused the
    // connection, and the row was rewritten before the settlement went to `stack`).
    let rows = ledger_rows(&ledger).await;
    assert_eq!(rows.len(), 6);
    for r in &rows {
        assert_eq!(r.state, State::Settled, "{r:?}");
        let tx = r.transaction.as_deref().unwrap();
        let settled_by = &settles
            .iter()
            .find(|s| s["response"]["transaction"] == tx)
            .unwrap_or_else(|| panic!("{tx} in no facilitator's trace"))["facilitator"];
        assert_eq!(r.settled_by.as_deref(), settled_by.as_str(), "{r:?}");
    }
    let by = |v: Option<&str>, s: Option<&str>| {
        rows.iter()
            .filter(|r| r.verified_by.as_deref() == v && r.settled_by.as_deref() == s)
            .count()
    };
    assert_eq!(by(Some("second"), Some("second")), 3, "{rows:#?}");
    assert_eq!(
        by(Some("second"), Some("stack")),
        1,
        "the killed call: {rows:#?}"
    );
    assert_eq!(by(Some("stack"), Some("stack")), 2, "{rows:#?}");

    // /status: the dead one is open, the survivor closed; paid calls can still be taken.
    let (status, _, body) = server_support::get_json(&paycall.url("/status")).await;
    assert_eq!(status, 200);
    assert_eq!(body["ok"], true, "{body}");
    let f = body["facilitators"].as_array().expect("facilitators");
    assert_eq!(f[0]["name"], "second");
    assert_eq!(f[0]["state"], "open", "{body}");
    assert_eq!(f[0]["lastError"], "facilitator_unreachable");
    assert_eq!(f[1]["name"], "stack");
    assert_eq!(f[1]["state"], "closed", "{body}");
    assert!(f[1]["supported"]
        .as_array()
        .unwrap()
        .iter()
        .any(|n| n == "exact:eip155:8453"));
}

// ---------------------------------------------------------------------------------------------
// Part 3: a settlement in doubt is resolved with the facilitator it was sent to

/// `POST <facilitator>/_mode` (tests/e2e/lib/facilitator.mjs's fault modes).
fn set_settle_mode(facilitator_url: &str, mode: &str) {
    let body = json!({ "settle": mode }).to_string();
    let (status, text) =
        stack::http_request("POST", &format!("{facilitator_url}/_mode"), Some(&body))
            .unwrap_or_else(|e| panic!("{facilitator_url}/_mode: {e}"));
    assert_eq!(status, 200, "{text}");
}

/// Per-facilitator series of one endpoint: (facilitator → exchanges, facilitator → errors).
fn exchanges(m: &BTreeMap<String, f64>, endpoint: &str) -> BTreeMap<String, (f64, f64)> {
    let mut out: BTreeMap<String, (f64, f64)> = BTreeMap::new();
    for name in ["second", "stack"] {
        let of = |metric: &str| -> f64 {
            m.iter()
                .filter(|(k, _)| {
                    k.starts_with(metric)
                        && k.contains(&format!("facilitator=\"{name}\""))
                        && k.contains(&format!("endpoint=\"{endpoint}\""))
                })
                .map(|(_, v)| v)
                .sum()
        };
        out.insert(
            name.to_string(),
            (
                of("paycall_facilitator_exchange_seconds_count"),
                of("paycall_facilitator_exchange_errors_total"),
            ),
        );
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_settlement_in_doubt_is_resolved_with_the_facilitator_it_was_sent_to() {
    let logs = support::logs::capture();
    let stack = LocalStack::start();
    let second = SecondFacilitator::start(&stack);
    let canary = upstream::canary("127.0.0.2").await;
    let up = upstream::start(&canary.url()).await;

    // `second` preferred; one failure opens a breaker; no health check within the test (it
    // would close `second`'s breaker and hide a settle routed by health instead of by record).
    let block = format!(
        "  facilitators:\n    - name: second\n      url: {}\n      auth: none\n    - name: stack\n      url: {}\n      auth: none\n  failover: {{ failures: 1, cooldown_s: 600, check_interval_s: 3600 }}\n",
        second.url, stack.facilitator_url
    );
    let (dir, routes) = routes_with(&block);
    let ledger = dir.path().join("ledger.db");
    let cfg = config::load_with_env(&routes, &stack_env(&stack, &ledger))
        .unwrap_or_else(|e| panic!("{e}"));
    let services = server::services::build(&cfg).expect("services");
    let app = server::build_app(cfg, services).unwrap_or_else(|e| panic!("{e}"));
    // As `paycall serve` does before it listens: know both facilitators' /supported.
    let pool = app.services.get::<Facilitators>().expect("facilitators");
    tokio::time::timeout(Duration::from_secs(10), pool.supported())
        .await
        .expect("/supported within 10 s")
        .expect("/supported");
    let paycall = server_support::start_live(Live::new(Arc::new(app), None)).await;

    let price: i128 = 10_000; // /api/http, $0.01
    let pay_to_start = stack.usdc_balance(&stack.pay_to);
    let url = format!(
        "{}/api/http?url={}",
        paycall.base,
        server_support::enc(&up.url("/hello"))
    );
    let signed = stack.sign_only_async(&url, "GET", None).await;
    let auth = &signed.payload["payload"]["authorization"];
    let nonce = auth["nonce"]
        .as_str()
        .expect("an EIP-3009 nonce")
        .to_string();
    let key = format!(
        "eip155:8453|{}|{}",
        auth["from"].as_str().unwrap().to_ascii_lowercase(),
        nonce.to_ascii_lowercase()
    );
    let settles_of = |calls: &[Value]| -> Vec<Value> {
        of(calls, "/settle")
            .into_iter()
            .filter(|c| {
                c["body"]["paymentPayload"]["payload"]["authorization"]["nonce"] == nonce.as_str()
            })
            .collect()
    };

    // 1. `second` verifies, then answers the settlement with a 503: its outcome is unknown (a
    //    5xx may come after the transfer was sent), so the buyer gets 503 settlement_pending,
    //    and `second`'s breaker opens.
    set_settle_mode(&second.url, "unavailable");
    let m0 = server_support::scrape(&paycall.admin).await;
    let first = stack
        .send_signed_async(&url, "GET", None, &signed.payment_signature)
        .await;
    assert_eq!(first.status, 503, "{:?}", first.body);
    assert_eq!(
        first.body["error"], "settlement_pending",
        "{:?}",
        first.body
    );
    assert_eq!(first.pay_to_received(), 0);
    assert_eq!(settles_of(&second.calls()).len(), 1);
    assert_eq!(settles_of(&stack.calls()).len(), 0);
    let row = connect(&LedgerUrl::Sqlite(ledger.clone()))
        .unwrap()
        .get(&key)
        .await
        .unwrap()
        .expect("the payment's row");
    assert_eq!(row.state, State::Pending);
    assert_eq!(row.verified_by.as_deref(), Some("second"));
    assert_eq!(
        row.settled_by.as_deref(),
        Some("second"),
        "written before the settlement was sent"
    );
    let (_, _, status) = server_support::get_json(&format!("{}/status", paycall.base)).await;
    assert_eq!(
        status["facilitators"][0]["state"], "open",
        "`second` is now last in the failover order: {status}"
    );
    let m1 = server_support::scrape(&paycall.admin).await;
    let (settle0, settle1) = (exchanges(&m0, "settle"), exchanges(&m1, "settle"));
    assert_eq!(
        settle1["second"].0 - settle0["second"].0,
        1.0,
        "one settle exchange with `second`: {settle1:?}"
    );
    assert_eq!(
        settle1["second"].1 - settle0["second"].1,
        1.0,
        "a failed one"
    );
    assert_eq!(settle1["stack"], settle0["stack"], "`stack` never asked");
    let line = logs
        .request(&first.headers["x-request-id"])
        .expect("the first call's request line");
    assert_eq!(line["facilitator"], "second", "{line}");
    assert_eq!(line["payment"], "pending", "{line}");

    // 2. The buyer repeats the same payment. The chain shows no transfer, so the settlement is
    //    asked again — of `second`, the facilitator it was sent to, although its breaker is open
    //    and `stack` is healthy.
    set_settle_mode(&second.url, "normal");
    let mut retry = None;
    for _ in 0..20 {
        let r = stack
            .send_signed_async(&url, "GET", None, &signed.payment_signature)
            .await;
        // The background reconciliation may hold the row for a moment: 409, bounded retries.
        if r.status == 409 && r.body["error"] == "payment_in_flight" {
            tokio::time::sleep(Duration::from_millis(500)).await;
            continue;
        }
        retry = Some(r);
        break;
    }
    let retry = retry.expect("the retry was never taken");
    assert_eq!(retry.status, 200, "{:?}", retry.body);
    let tx = retry.payment_response.as_ref().expect("PAYMENT-RESPONSE")["transaction"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(retry.pay_to_received(), price, "exactly the price moved");
    let second_settles = settles_of(&second.calls());
    assert_eq!(second_settles.len(), 2, "asked again of `second`");
    assert_eq!(second_settles[1]["response"]["transaction"], tx.as_str());
    assert_eq!(
        settles_of(&stack.calls()).len(),
        0,
        "never re-sent to the other facilitator"
    );
    assert_eq!(
        stack.usdc_balance(&stack.pay_to) as i128 - pay_to_start as i128,
        price,
        "settled once on chain"
    );
    let row = connect(&LedgerUrl::Sqlite(ledger.clone()))
        .unwrap()
        .get(&key)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(row.state, State::Settled);
    assert_eq!(row.transaction.as_deref(), Some(tx.as_str()));
    assert_eq!(row.settled_by.as_deref(), Some("second"));

    // The paid call's log line and the per-facilitator metrics name the facilitator that
    // settled it.
    let line = logs
        .request(&retry.headers["x-request-id"])
        .expect("the retry's request line");
    assert_eq!(line["facilitator"], "second", "{line}");
    assert_eq!(line["charged"], true, "{line}");
    let m2 = server_support::scrape(&paycall.admin).await;
    let settle2 = exchanges(&m2, "settle");
    assert_eq!(
        settle2["second"].0 - settle1["second"].0,
        1.0,
        "{settle2:?}"
    );
    assert_eq!(settle2["second"].1, settle1["second"].1, "a successful one");
    assert_eq!(settle2["stack"], settle0["stack"], "`stack` never asked");
    paycall.shutdown(Duration::from_secs(30)).await;
}
