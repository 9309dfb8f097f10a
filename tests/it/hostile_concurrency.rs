//! Route budgets under concurrency (issue 21), with the real paycall binary, the real local
//! chain and the official facilitator: 8 hostile documents in flight at once on each of
//! /api/fetch, /api/extract (4 fetched, 4 posted as `html`) and /api/pdf — 24 paid calls,
//! each correctly signed by the funded buyer and verified by the facilitator. Meanwhile
//! /status, an unpaid 402 and a demo twin keep answering; afterwards:
//!
//! - every hostile call ended in a refusal (413 html_too_complex, 422 pdf_too_complex,
//!   504 parse_timeout, or 503 parser_busy for a call that found its route's slots full),
//!   and the facilitator's trace has no /settle at all: nothing hostile was charged;
//! - the process's peak RSS (VmHWM of /proc/PID/status, everything since it started) stayed
//!   under the documented ceiling of 512 MB (README, "Budgets under concurrency").
//!
//! The upstream holds every hostile document until all 20 fetched ones have been asked for
//! (bounded), and the posted pages are sent at that moment, so all 24 are in the service at
//! once. The figures are printed by `cargo bench --bench hostile -- --concurrent`.

use crate::support;
use support::{eip3009, hostile, stack};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::{json, Value};
use warp::Filter;

use stack::LocalStack;
use support::server::enc;

/// The documented ceiling for the whole process (README), the goal.
const CEILING_MB: u64 = 512;
/// Hostile documents in flight per route.
const PER_ROUTE: usize = 8;
/// How long the upstream holds the documents back waiting for the others (bounded).
const GATHER: Duration = Duration::from_secs(30);

/// The hostile upstream: every document is held until `expected` have been asked for.
struct Upstream {
    base: String,
    arrived: Arc<AtomicUsize>,
    released: Arc<tokio::sync::Notify>,
    open: Arc<AtomicBool>,
}

async fn upstream(expected: usize) -> Upstream {
    let page = Bytes::from(paycall::doc::parse::adoption_agency_page(500, 199_997));
    let pdf = Bytes::from(hostile::blank_pages_pdf(3, 15_000_000));
    let arrived = Arc::new(AtomicUsize::new(0));
    let released = Arc::new(tokio::sync::Notify::new());
    let open = Arc::new(AtomicBool::new(false));
    let gate = {
        let (arrived, released, open) = (arrived.clone(), released.clone(), open.clone());
        move || {
            let (arrived, released, open) = (arrived.clone(), released.clone(), open.clone());
            async move {
                if arrived.fetch_add(1, Ordering::SeqCst) + 1 >= expected {
                    open.store(true, Ordering::SeqCst);
                    released.notify_waiters();
                }
                let t = Instant::now();
                while !open.load(Ordering::SeqCst) && t.elapsed() < GATHER {
                    let _ =
                        tokio::time::timeout(Duration::from_millis(50), released.notified()).await;
                }
            }
        }
    };
    let routes = warp::path("adoption.html")
        .and(held("text/html; charset=utf-8", page, gate.clone()))
        .or(warp::path("blank.pdf").and(held("application/pdf", pdf, gate)));
    let addr = support::net::serve_forever(routes).await;
    Upstream {
        base: format!("http://{addr}"),
        arrived,
        released,
        open,
    }
}

/// A document held at `gate`, then sent whole.
fn held<G, F>(
    ct: &'static str,
    body: Bytes,
    gate: G,
) -> impl Filter<Extract = (warp::reply::Response,), Error = warp::Rejection> + Clone
where
    G: Fn() -> F + Clone + Send + Sync + 'static,
    F: std::future::Future<Output = ()> + Send,
{
    warp::any().and_then(move || {
        let (body, gate) = (body.clone(), gate.clone());
        async move {
            gate().await;
            let mut r = warp::reply::Response::new(body.into());
            r.headers_mut()
                .insert("content-type", warp::http::HeaderValue::from_static(ct));
            Ok::<_, warp::Rejection>(r)
        }
    })
}

/// The paycall binary on the shipped routes.yaml against the local stack.
struct Paycall {
    child: Child,
    base: String,
    log: PathBuf,
}

impl Paycall {
    fn start(stack: &LocalStack, dir: &Path) -> Paycall {
        let port = support::net::free_port();
        let base = format!("http://127.0.0.1:{port}");
        let log = dir.join("paycall.log");
        let child = Command::new(env!("CARGO_BIN_EXE_paycall"))
            .env_clear()
            .envs([
                ("PAYCALL_FACILITATOR_URL", stack.facilitator_url.clone()),
                ("PAYCALL_EVM_PAY_TO", stack.pay_to.clone()),
                ("PAYCALL_SOLANA_PAY_TO", stack.solana("payTo")),
                ("PAYCALL_UPSTREAM_SOLANA_RPC", stack.solana("rpcUrl")),
                ("PAYCALL_UPSTREAM_BASE_RPC", stack.rpc_url.clone()),
                ("PAYCALL_ALLOW_CIDRS", "127.0.0.1/32".into()),
                ("PAYCALL_LISTEN", format!("127.0.0.1:{port}")),
                ("PAYCALL_ADMIN_LISTEN", "off".into()),
                ("PAYCALL_BASE_URL", base.clone()),
                (
                    "PAYCALL_LEDGER_URL",
                    format!("sqlite://{}", dir.join("ledger.db").display()),
                ),
                ("PAYCALL_LOG", "info".into()),
            ])
            .arg("--config")
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("routes.yaml"))
            .arg("serve")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("run paycall");
        let mut p = Paycall { child, base, log };
        let started = Instant::now();
        loop {
            if let Ok((200, _)) = stack::http_request("GET", &p.url("/status"), None) {
                return p;
            }
            if let Ok(Some(status)) = p.child.try_wait() {
                panic!("paycall exited ({status}):\n{}", p.log_text());
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "paycall not ready in 30 s:\n{}",
                p.log_text()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// A kB field of /proc/PID/status (VmHWM: the peak RSS since the process started).
    fn status_kb(&self, field: &str) -> u64 {
        std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.split(':').next() == Some(field))
                    .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
            })
            .unwrap_or_else(|| panic!("no {field} in /proc/{}/status", self.child.id()))
    }
}

impl Drop for Paycall {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One hostile call: route, method, URL, body.
struct Call {
    name: &'static str,
    method: reqwest::Method,
    url: String,
    body: Option<String>,
}

/// The challenge of an unpaid request like `call`.
async fn challenge(client: &reqwest::Client, call: &Call) -> Value {
    let mut r = client.request(call.method.clone(), &call.url);
    if let Some(b) = &call.body {
        r = r.header("content-type", "application/json").body(b.clone());
    }
    let resp = r.send().await.expect("unpaid request");
    assert_eq!(resp.status().as_u16(), 402, "{}", call.url);
    eip3009::challenge_of(resp.headers()["payment-required"].to_str().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_hostile_documents_per_route_in_flight_stay_under_the_ceiling_and_are_never_charged()
{
    let stack = LocalStack::start();
    let dir = tempfile::tempdir().unwrap();
    let paycall = Paycall::start(&stack, dir.path());
    let up = upstream(3 * PER_ROUTE - PER_ROUTE / 2).await;
    let client = support::server::client();
    let long = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(120))
        .build()
        .unwrap();

    let page = paycall::doc::parse::adoption_agency_page(500, 199_997);
    let posted = json!({ "html": page }).to_string();
    let mut calls = Vec::new();
    for i in 0..PER_ROUTE {
        let doc = |p: &str| enc(&format!("{}/{p}?i={i}", up.base));
        calls.push(Call {
            name: "fetch",
            method: reqwest::Method::GET,
            url: paycall.url(&format!("/api/fetch?url={}", doc("adoption.html"))),
            body: None,
        });
        calls.push(if i % 2 == 0 {
            Call {
                name: "extract",
                method: reqwest::Method::GET,
                url: paycall.url(&format!("/api/extract?url={}", doc("adoption.html"))),
                body: None,
            }
        } else {
            Call {
                name: "extract-post",
                method: reqwest::Method::POST,
                url: paycall.url("/api/extract"),
                body: Some(posted.clone()),
            }
        });
        calls.push(Call {
            name: "pdf",
            method: reqwest::Method::GET,
            url: paycall.url(&format!("/api/pdf?url={}", doc("blank.pdf"))),
            body: None,
        });
    }
    let key = eip3009::key(&stack.buyer_key);
    let mut signed = Vec::new();
    for (n, call) in calls.iter().enumerate() {
        let c = challenge(&client, call).await;
        signed.push(eip3009::sign(&key, &c, n as u64));
    }
    stack.reset_calls();
    let rss_before = paycall.status_kb("VmRSS");

    // The posted pages go in when the upstream lets the fetched ones go.
    let released = up.released.clone();
    let open = up.open.clone();
    let t0 = Instant::now();
    let jobs: Vec<_> = calls
        .into_iter()
        .zip(signed)
        .map(|(call, sig)| {
            let (long, released, open) = (long.clone(), released.clone(), open.clone());
            tokio::spawn(async move {
                if call.body.is_some() {
                    let t = Instant::now();
                    while !open.load(Ordering::SeqCst) && t.elapsed() < GATHER {
                        let _ =
                            tokio::time::timeout(Duration::from_millis(50), released.notified())
                                .await;
                    }
                }
                let mut r = long
                    .request(call.method.clone(), &call.url)
                    .header("PAYMENT-SIGNATURE", sig);
                if let Some(b) = &call.body {
                    r = r.header("content-type", "application/json").body(b.clone());
                }
                let resp = r.send().await.expect("paid hostile call answered");
                let status = resp.status().as_u16();
                let receipt = resp.headers().contains_key("payment-response");
                let retry_after = resp.headers().contains_key("retry-after");
                let body: Value = serde_json::from_slice(&resp.bytes().await.unwrap_or_default())
                    .unwrap_or(Value::Null);
                (call.name, status, body, receipt, retry_after)
            })
        })
        .collect();

    // Meanwhile the rest of the service answers: /status, a 402, a demo.
    let unpaid = paycall.url(&format!("/api/http?url={}", enc("https://example.com/")));
    let mut probes = 0;
    let mut slowest = Duration::ZERO;
    // Demos are rate-limited per client (burst 10, then 30 a minute): one every 2.5 s.
    let mut last_demo: Option<Instant> = None;
    while jobs.iter().any(|j| !j.is_finished()) {
        assert!(
            t0.elapsed() < Duration::from_secs(150),
            "hostile calls still running"
        );
        let mut asks = vec![(paycall.url("/status"), 200), (unpaid.clone(), 402)];
        if last_demo.is_none_or(|t| t.elapsed() >= Duration::from_millis(2500)) {
            asks.push((paycall.url("/api/demo/http"), 200));
            last_demo = Some(Instant::now());
        }
        for (url, want) in asks {
            let t = Instant::now();
            let r = client.get(&url).send().await;
            let status = r.as_ref().map(|r| r.status().as_u16()).unwrap_or(0);
            assert_eq!(status, want, "{url} during the hostile calls: {r:?}");
            slowest = slowest.max(t.elapsed());
        }
        probes += 1;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let mut outcomes: BTreeMap<String, usize> = BTreeMap::new();
    for j in jobs {
        let (name, status, body, receipt, retry_after) = j.await.unwrap();
        let code = body["error"].as_str().unwrap_or("").to_string();
        let refused = matches!(
            (status, code.as_str()),
            (413, "html_too_complex")
                | (422, "pdf_too_complex")
                | (504, "parse_timeout")
                | (503, "parser_busy")
        );
        assert!(refused, "{name}: {status} {body}\n{}", paycall.log_text());
        assert!(!receipt, "{name}: a refusal carries no receipt");
        if status == 503 {
            assert!(retry_after, "{name}: parser_busy says when to come back");
        }
        *outcomes
            .entry(format!("{name} {status} {code}"))
            .or_default() += 1;
    }
    let took = t0.elapsed();
    let peak_mb = paycall.status_kb("VmHWM") / 1024;
    eprintln!(
        "24 hostile calls in {took:.1?}: {outcomes:?}; RSS before {} MB, peak {peak_mb} MB; \
         {probes} probe rounds, slowest probe {slowest:.1?}; upstream asked {} times",
        rss_before / 1024,
        up.arrived.load(Ordering::SeqCst)
    );

    // The facilitator verified the payments and settled none of them.
    let trace = stack.calls();
    let settles = trace.iter().filter(|c| c["endpoint"] == "/settle").count();
    let verifies = trace.iter().filter(|c| c["endpoint"] == "/verify").count();
    assert_eq!(settles, 0, "nothing hostile is charged: {trace:?}");
    assert_eq!(verifies, 3 * PER_ROUTE, "each call was a verified payment");
    assert!(
        probes >= 1,
        "the other routes were asked while the hostile calls ran"
    );
    assert!(
        peak_mb <= CEILING_MB,
        "peak RSS {peak_mb} MB over the {CEILING_MB} MB ceiling ({outcomes:?})"
    );
}

/// The shipped routes.yaml with one edit, in a temp folder with the shipped pipelines and
/// static files; the errors `paycall check` and startup would report.
fn shipped_with(from: &str, to: &str) -> (support::server::ConfigDir, String) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let routes = std::fs::read_to_string(root.join("routes.yaml")).unwrap();
    assert!(routes.contains(from), "routes.yaml has no `{from}`");
    let pipelines: Vec<(String, String)> = std::fs::read_dir(root.join("pipelines"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| {
            (
                p.file_stem().unwrap().to_string_lossy().to_string(),
                std::fs::read_to_string(&p).unwrap(),
            )
        })
        .collect();
    let named: Vec<(&str, &str)> = pipelines
        .iter()
        .map(|(n, y)| (n.as_str(), y.as_str()))
        .collect();
    let dir = support::server::write_config(&routes.replacen(from, to, 1), &named);
    std::fs::create_dir(dir.dir.path().join("static")).unwrap();
    for f in std::fs::read_dir(root.join("static")).unwrap() {
        let p = f.unwrap().path();
        std::fs::copy(
            &p,
            dir.dir.path().join("static").join(p.file_name().unwrap()),
        )
        .unwrap();
    }
    let errors = match support::server::load(&dir).map(support::server::build) {
        Err(e) | Ok(Err(e)) => e.to_string(),
        Ok(Ok(_)) => String::new(),
    };
    (dir, errors)
}

#[test]
fn parse_budgets_are_checked_at_startup_naming_their_line() {
    let (_, errors) = shipped_with("", "");
    assert_eq!(errors, "", "the shipped file is accepted");
    for (stage, from, to, says) in [
        (
            "markdown",
            "        max_concurrent: 4\n        queue: 16\n        queue_wait_ms: 4000",
            "        max_concurrent: 0\n        queue: 16\n        queue_wait_ms: 4000",
            "max_concurrent must be from 1 to 64",
        ),
        (
            "pdf_text",
            "        max_concurrent: 2\n        queue: 8",
            "        max_concurrent: 2\n        queue: 5000",
            "queue must be at most 1024",
        ),
        (
            "pdf_text",
            "        queue: 8\n        queue_wait_ms: 10000",
            "        queue: 8\n        queue_wait_ms: 0",
            "queue_wait_ms must be from 1 to 60000",
        ),
        (
            "search",
            "        parse_queue_wait_ms: 2000",
            "        parse_queue_wait_ms: 600000",
            "parse_queue_wait_ms must be from 1 to 60000",
        ),
    ] {
        let (dir, errors) = shipped_with(from, to);
        assert!(errors.contains(says), "{says}: {errors}");
        // The error names routes.yaml and a line of the stage's caps in the route.
        let line: u64 = errors
            .split("routes.yaml:")
            .nth(1)
            .and_then(|rest| rest.split(':').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no routes.yaml:LINE in {errors}"));
        let in_caps = (line.saturating_sub(8).max(1)..=line)
            .any(|n| dir.line_of(&dir.routes, n).trim() == format!("{stage}:"));
        assert!(
            in_caps,
            "{says}: line {line} (`{}`) is not in the {stage} caps",
            dir.line_of(&dir.routes, line)
        );
    }
}
