//! Soak of a release paycall (issue 17): prints errors, p50/p99 per kind of request and RSS
//! before, during and after; asserts nothing (scripts/soak.sh builds the binary and runs it).
//!
//! Against a stub facilitator (every payment valid, every settlement a success) and a local
//! upstream, both in this process on 127.0.0.1, with a copy of the shipped routes.yaml whose demo
//! and verify quotas are raised (one client and one payer send everything here):
//!
//! 1. the mix: `--requests` (50,000) over `--connections` (500) kept-alive connections, in
//!    rounds of ten: 5 unpaid 402s, 2 demo twins (/api/demo/http, /api/demo/fetch), 2 discovery
//!    documents (/openapi.json, /llms.txt, /.well-known/x402, /status in turn) and 1 paid
//!    /api/http call (each correctly signed, its own nonce) to an upstream that answers at once;
//! 2. the slow upstream: `--slow` (1,000) paid calls at once, the upstream holding each for
//!    `--work-ms` (3,000).
//!
//! An error is a transport failure or a status other than the kind's (402, or 200). RSS is
//! /proc/PID/status VmRSS: before (after a warm-up), the peak during each phase (sampled every
//! 20 ms), and `--after-s` (10) seconds after the last phase.
//!
//! The facilitator stub, the slow upstream and the EIP-3009 signing are those of
//! benches/memory.rs (tests/support/bench.rs, tests/support/eip3009.rs).
//!
//! ```text
//! cargo bench --bench soak -- --bin target/release/paycall [--requests 50000]
//!     [--connections 500] [--slow 1000] [--work-ms 3000] [--after-s 10]
//! ```

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::Value;

#[path = "../tests/support/mod.rs"]
mod support;
use support::bench::{arg, facilitator, mb, num, rss_kb, slow_upstream, KEY};
use support::eip3009;
use support::net::free_port;

/// How long the payments, all signed before the soak starts, stay valid.
const VALID_S: u64 = 600;

fn enc(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// The shipped configuration in `dir`, its demo and verify quotas raised (this bench is one
/// client and one payer); pipelines/ and static/ linked.
fn soak_config(dir: &Path) -> std::path::PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let routes = std::fs::read_to_string(root.join("routes.yaml")).unwrap();
    let routes = routes
        .replacen(
            "demo:\n  per_minute: 30\n  burst: 10\n",
            "demo:\n  per_minute: 10000000\n  burst: 1000000\n",
            1,
        )
        .replacen(
            "payment:\n",
            "payment:\n  verify_per_minute: { payer: 10000000, client: 10000000 }\n",
            1,
        );
    assert!(routes.contains("per_minute: 10000000\n  burst"));
    std::fs::write(dir.join("routes.yaml"), routes).unwrap();
    for d in ["pipelines", "static"] {
        std::os::unix::fs::symlink(root.join(d), dir.join(d)).unwrap();
    }
    dir.join("routes.yaml")
}

/// Latencies (µs) and errors of one kind of request.
#[derive(Default)]
struct Kind {
    micros: Vec<u64>,
    errors: BTreeMap<String, usize>,
}

fn pct(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i] as f64 / 1000.0
}

fn report(name: &str, kinds: &BTreeMap<&'static str, Kind>) {
    for (kind, k) in kinds {
        let mut v = k.micros.clone();
        v.sort_unstable();
        let errors: usize = k.errors.values().sum();
        println!(
            "{name:<6} {kind:<10} {:>6} requests  errors {errors:>4}  p50 {:>8.2} ms  p99 {:>8.2} ms{}",
            v.len(),
            pct(&v, 0.5),
            pct(&v, 0.99),
            if errors > 0 {
                format!("  {:?}", k.errors)
            } else {
                String::new()
            }
        );
    }
}

/// Samples the peak RSS of `pid` every 20 ms until `stop`.
fn sample_peak(pid: u32, stop: Arc<AtomicBool>) -> tokio::task::JoinHandle<u64> {
    tokio::spawn(async move {
        let mut peak = 0;
        while !stop.load(Ordering::Relaxed) {
            peak = peak.max(rss_kb(pid));
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        peak.max(rss_kb(pid))
    })
}

async fn send(client: &reqwest::Client, url: &str, payment: Option<&str>) -> Result<u16, String> {
    let mut req = client.get(url);
    if let Some(p) = payment {
        req = req.header("PAYMENT-SIGNATURE", p);
    }
    let r = req.send().await.map_err(|e| {
        if e.is_timeout() {
            "timeout".to_string()
        } else {
            "transport".to_string()
        }
    })?;
    let status = r.status().as_u16();
    r.bytes().await.map_err(|_| "body".to_string())?;
    Ok(status)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let Some(bin) = arg("--bin") else {
        eprintln!("usage: cargo bench --bench soak -- --bin PATH [--requests 50000] [--connections 500] [--slow 1000] [--work-ms 3000] [--after-s 10]");
        std::process::exit(2);
    };
    let requests = num("--requests", 50_000) as usize;
    let connections = num("--connections", 500) as usize;
    let slow = num("--slow", 1000) as usize;
    let work_ms = num("--work-ms", 3000);
    let after_s = num("--after-s", 10);
    paycall::x402::ensure_crypto();

    let settles = Arc::new(AtomicUsize::new(0));
    let fac = facilitator(settles.clone(), true).await;
    let up = slow_upstream().await;
    let dir = tempfile::tempdir().unwrap();
    let routes = soak_config(dir.path());
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let mut child = Command::new(&bin)
        .arg("--config")
        .arg(&routes)
        .arg("serve")
        .env_clear()
        .env("PAYCALL_LISTEN", format!("127.0.0.1:{port}"))
        .env("PAYCALL_ADMIN_LISTEN", "off")
        .env("PAYCALL_BASE_URL", &base)
        .envs(support::bench::stub_env(&fac))
        .env(
            "PAYCALL_LEDGER_URL",
            format!("sqlite://{}", dir.path().join("ledger.db").display()),
        )
        .env("PAYCALL_UPSTREAM_SOLANA_RPC", "http://127.0.0.1:9/")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.path().join("paycall.log")).unwrap())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {bin}: {e}"));
    let pid = child.id();
    let client = reqwest::Client::builder()
        .no_proxy()
        .pool_max_idle_per_host(connections.max(slow))
        .timeout(Duration::from_secs(120))
        .build()
        .unwrap();
    let started = Instant::now();
    while client.get(format!("{base}/status")).send().await.is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(30)
                && child.try_wait().ok().flatten().is_none(),
            "paycall did not start:\n{}",
            std::fs::read_to_string(dir.path().join("paycall.log")).unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let fast_url = format!("{base}/api/http?url={}", enc(&format!("{up}/slow?ms=0")));
    let slow_url = format!(
        "{base}/api/http?url={}",
        enc(&format!("{up}/slow?ms={work_ms}"))
    );
    let challenge = |url: String| {
        let client = client.clone();
        async move {
            let r = client.get(&url).send().await.unwrap();
            assert_eq!(r.status().as_u16(), 402);
            serde_json::from_slice::<Value>(
                &base64::engine::general_purpose::STANDARD
                    .decode(r.headers()["payment-required"].to_str().unwrap())
                    .unwrap(),
            )
            .unwrap()
        }
    };
    let fast_challenge = challenge(fast_url.clone()).await;
    let slow_challenge = challenge(slow_url.clone()).await;
    let key = eip3009::key(KEY);
    let paid_in_mix = requests.div_ceil(10);
    let mix_payments: Arc<Vec<String>> = Arc::new(
        (0..paid_in_mix as u64)
            .map(|n| eip3009::sign_valid_for(&key, &fast_challenge, n, VALID_S))
            .collect(),
    );
    let slow_payments: Vec<String> = (0..slow as u64)
        .map(|n| eip3009::sign_valid_for(&key, &slow_challenge, 1_000_000 + n, VALID_S))
        .collect();

    // Warm-up: one of each, then let the process settle.
    let warm = eip3009::sign_valid_for(&key, &fast_challenge, u64::MAX, VALID_S);
    assert_eq!(send(&client, &fast_url, Some(&warm)).await, Ok(200));
    for p in ["/api/demo/http", "/api/demo/fetch", "/openapi.json"] {
        assert_eq!(
            send(&client, &format!("{base}{p}"), None).await,
            Ok(200),
            "{p}"
        );
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let before = rss_kb(pid);

    // 1. The mix.
    let unpaid_url = format!("{base}/api/http?url={}", enc("https://example.com/"));
    let discovery = ["/openapi.json", "/llms.txt", "/.well-known/x402", "/status"]
        .map(|p| format!("{base}{p}"));
    let demos = ["/api/demo/http", "/api/demo/fetch"].map(|p| format!("{base}{p}"));
    let next = Arc::new(AtomicUsize::new(0));
    let kinds: Arc<Mutex<BTreeMap<&'static str, Kind>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = sample_peak(pid, stop.clone());
    let t = Instant::now();
    let workers: Vec<_> = (0..connections)
        .map(|_| {
            let (client, next, kinds) = (client.clone(), next.clone(), kinds.clone());
            let (unpaid_url, fast_url, payments) =
                (unpaid_url.clone(), fast_url.clone(), mix_payments.clone());
            let (discovery, demos) = (discovery.clone(), demos.clone());
            tokio::spawn(async move {
                let mut mine: BTreeMap<&'static str, Kind> = BTreeMap::new();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= requests {
                        break;
                    }
                    let round = i / 10;
                    let (kind, url, payment, want) = match i % 10 {
                        0..=4 => ("402", unpaid_url.as_str(), None, 402),
                        5 | 6 => ("demo", demos[i % 2].as_str(), None, 200),
                        7 | 8 => (
                            "discovery",
                            discovery[(round * 2 + i % 10 - 7) % 4].as_str(),
                            None,
                            200,
                        ),
                        _ => (
                            "paid",
                            fast_url.as_str(),
                            Some(payments[round].as_str()),
                            200,
                        ),
                    };
                    let s = Instant::now();
                    let got = send(&client, url, payment).await;
                    let k = mine.entry(kind).or_default();
                    k.micros.push(s.elapsed().as_micros() as u64);
                    match got {
                        Ok(st) if st == want => {}
                        Ok(st) => *k.errors.entry(st.to_string()).or_default() += 1,
                        Err(e) => *k.errors.entry(e).or_default() += 1,
                    }
                }
                let mut all = kinds.lock().unwrap();
                for (name, k) in mine {
                    let a = all.entry(name).or_default();
                    a.micros.extend(k.micros);
                    for (e, n) in k.errors {
                        *a.errors.entry(e).or_default() += n;
                    }
                }
            })
        })
        .collect();
    for w in workers {
        w.await.unwrap();
    }
    let mix_s = t.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let mix_peak = sampler.await.unwrap();
    let mix = std::mem::take(&mut *kinds.lock().unwrap());

    // 2. The slow upstream: every call in flight at once.
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = sample_peak(pid, stop.clone());
    let t = Instant::now();
    let calls: Vec<_> = slow_payments
        .into_iter()
        .map(|p| {
            let (client, url) = (client.clone(), slow_url.clone());
            tokio::spawn(async move {
                let s = Instant::now();
                let got = send(&client, &url, Some(&p)).await;
                (s.elapsed().as_micros() as u64, got)
            })
        })
        .collect();
    let mut slow_kind = Kind::default();
    for c in calls {
        let (micros, got) = c.await.unwrap();
        slow_kind.micros.push(micros);
        match got {
            Ok(200) => {}
            Ok(st) => *slow_kind.errors.entry(st.to_string()).or_default() += 1,
            Err(e) => *slow_kind.errors.entry(e).or_default() += 1,
        }
    }
    let slow_s = t.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let slow_peak = sampler.await.unwrap();

    drop(client);
    tokio::time::sleep(Duration::from_secs(after_s)).await;
    let after = rss_kb(pid);
    let _ = child.kill();
    let _ = child.wait();

    let total_errors: usize = mix
        .values()
        .chain(std::iter::once(&slow_kind))
        .map(|k| k.errors.values().sum::<usize>())
        .sum();
    println!(
        "mix: {requests} requests over {connections} connections in {mix_s:.1} s ({:.0} req/s); slow: {slow} paid calls at once, upstream {work_ms} ms, in {slow_s:.1} s",
        requests as f64 / mix_s
    );
    report("mix", &mix);
    let mut slow_map = BTreeMap::new();
    slow_map.insert("paid-slow", slow_kind);
    report("slow", &slow_map);
    println!(
        "errors {total_errors} (goal 0) | settled {} of {} paid | RSS before {:.1} MB, peak during mix {:.1} MB, peak during slow {:.1} MB (goal <= 150), {after_s} s after {:.1} MB",
        settles.load(Ordering::Relaxed) - 1,
        paid_in_mix + slow,
        mb(before),
        mb(mix_peak),
        mb(slow_peak),
        mb(after),
    );
}
