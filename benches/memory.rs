//! Memory of a release paycall under a burst of paid calls, and the 402 path's req/s (issue 19).
//! Prints figures, asserts nothing; scripts/bench-memory.sh runs it once per allocator build.
//!
//! For one paycall binary (`--bin PATH`): starts it with the shipped routes.yaml against a stub
//! facilitator (verify valid, settle success) and a slow upstream, both in this process on
//! 127.0.0.1; reads its RSS (/proc/PID/status VmRSS) idle, at the peak of a burst of N paid
//! /api/http calls all in flight at once (each correctly signed, distinct nonces; the upstream
//! holds each for `--work-ms`), and `--after-s` seconds after the burst; then runs
//! `wrk -t2 -c50 -d10s` on the unpaid 402 path.
//!
//! ```text
//! cargo bench --bench memory -- --bin target/release/paycall [--label NAME] [--burst 1000]
//!     [--work-ms 3000] [--after-s 10] [--wrk-s 10]
//! ```

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::Value;

#[path = "../tests/support/mod.rs"]
mod support;
use support::bench::{arg, facilitator, mb, num, rss_kb, slow_upstream, status_field, KEY};
use support::eip3009::{self, sign};
use support::net::free_port;

fn wrk_rps(url: &str, secs: u64) -> Option<f64> {
    let out = Command::new("wrk")
        .args(["-t2", "-c50", &format!("-d{secs}s"), url])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find(|l| l.starts_with("Requests/sec:"))
        .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let Some(bin) = arg("--bin") else {
        eprintln!("usage: cargo bench --bench memory -- --bin PATH [--label NAME] [--burst N] [--work-ms MS] [--after-s S] [--wrk-s S]");
        std::process::exit(2);
    };
    let label = arg("--label").unwrap_or_else(|| bin.clone());
    let burst = num("--burst", 1000) as usize;
    let work_ms = num("--work-ms", 3000);
    let after_s = num("--after-s", 10);
    let wrk_s = num("--wrk-s", 10);
    paycall::x402::ensure_crypto();

    let settles = Arc::new(AtomicUsize::new(0));
    let fac = facilitator(settles.clone(), false).await;
    let up = slow_upstream().await;
    let port = free_port();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut child = Command::new(&bin)
        .args(["--config", "routes.yaml", "serve"])
        .current_dir(root)
        .env("PAYCALL_LISTEN", format!("127.0.0.1:{port}"))
        .envs(support::bench::stub_env(&fac))
        // The shipped default ledger (a SQLite file), in a temp dir; no chain to confirm on.
        .env(
            "PAYCALL_LEDGER_URL",
            format!(
                "sqlite://{}",
                std::env::temp_dir()
                    .join(format!("paycall-bench-memory-{port}.db"))
                    .display()
            ),
        )
        .stdout(Stdio::null())
        // wrk's last requests are cut when it stops: paycall logs those as connection errors.
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {bin}: {e}"));
    let pid = child.id();
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::builder()
        .no_proxy()
        .pool_max_idle_per_host(0)
        .timeout(Duration::from_secs(120))
        .build()
        .unwrap();
    support::bench::wait_ready(&client, &base).await;

    let target = format!("{up}/slow?ms={work_ms}");
    let url = format!(
        "{base}/api/http?url={}",
        url::form_urlencoded::byte_serialize(target.as_bytes()).collect::<String>()
    );
    let r = client.get(&url).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 402);
    let challenge: Value = serde_json::from_slice(
        &base64::engine::general_purpose::STANDARD
            .decode(r.headers()["payment-required"].to_str().unwrap())
            .unwrap(),
    )
    .unwrap();
    let key = eip3009::key(KEY);
    let payments: Vec<String> = (0..burst as u64)
        .map(|n| sign(&key, &challenge, n))
        .collect();
    // One paid call to warm the paths, then let the process settle down.
    let warm = sign(&key, &challenge, u64::MAX);
    let w = client
        .get(&url)
        .header("PAYMENT-SIGNATURE", warm)
        .send()
        .await
        .unwrap();
    assert_eq!(w.status().as_u16(), 200, "{:?}", w.text().await);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let idle = rss_kb(pid);

    let peak = Arc::new(AtomicU64::new(idle));
    let done = Arc::new(AtomicUsize::new(0));
    let sampler = {
        let (peak, done) = (peak.clone(), done.clone());
        tokio::spawn(async move {
            while done.load(Ordering::Relaxed) < burst {
                peak.fetch_max(rss_kb(pid), Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    };
    let t = Instant::now();
    let calls: Vec<_> = payments
        .into_iter()
        .map(|p| {
            let (client, url, done) = (client.clone(), url.clone(), done.clone());
            tokio::spawn(async move {
                let status = match client.get(&url).header("PAYMENT-SIGNATURE", p).send().await {
                    Ok(r) => {
                        let s = r.status().as_u16();
                        let _ = r.bytes().await;
                        s
                    }
                    Err(_) => 0,
                };
                done.fetch_add(1, Ordering::Relaxed);
                status
            })
        })
        .collect();
    let mut statuses: BTreeMap<u16, usize> = BTreeMap::new();
    for c in calls {
        *statuses.entry(c.await.unwrap_or(0)).or_default() += 1;
    }
    let burst_s = t.elapsed().as_secs_f64();
    let _ = sampler.await;
    let peak = peak.load(Ordering::Relaxed);
    tokio::time::sleep(Duration::from_secs(after_s)).await;
    let after = rss_kb(pid);
    let threads_after = status_field(pid, "Threads");
    let fds_after = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0);

    let unpaid = format!(
        "{base}/api/http?url={}",
        url::form_urlencoded::byte_serialize(b"https://example.com/").collect::<String>()
    );
    let rps = tokio::task::spawn_blocking(move || wrk_rps(&unpaid, wrk_s))
        .await
        .unwrap();
    let after_wrk = rss_kb(pid);
    let _ = child.kill();
    let _ = child.wait();

    let goal = 1.5 * mb(idle) + 10.0;
    println!(
        "{label:<10} idle {:6.1} MB | peak {:6.1} MB ({burst} in flight, {burst_s:.1} s) | after {after_s} s {:6.1} MB (goal ≤ {goal:.1}: {}, {threads_after} threads, {fds_after} fds) | 402 path {} req/s (RSS after wrk {:.1} MB) | statuses {statuses:?}, settled {}",
        mb(idle),
        mb(peak),
        mb(after),
        if mb(after) <= goal { "met" } else { "MISSED" },
        rps.map(|r| format!("{r:.0}")).unwrap_or_else(|| "? (wrk missing)".into()),
        mb(after_wrk),
        settles.load(Ordering::Relaxed) - 1,
    );
}
