//! /api/screenshot render times against a local page, on the real chromium + chromedriver.
//!
//! ```text
//! cargo bench --bench screenshot [-- --cold <n>] [--warm <n>] [--gap-ms <ms>]
//! ```
//!
//! cold: a new pool each time (chromedriver + chromium start, then one render);
//! warm: renders on one warm session, `gap-ms` apart (default 200), each in a fresh browser
//! context, as a paid call gets. Prints p50/p95 of each. The page is served on 127.0.0.1, the
//! only address the guard allows here; every request still goes through the guarded proxy.

#[path = "../tests/support/mod.rs"]
mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use paycall::browser::{Browsers, Format, PoolConfig, RenderLimits, ShotRequest};
use paycall::net::{Guard, SystemResolver};

const PAGE: &str = "<!doctype html><html><head><meta charset=utf-8><title>Bench page</title></head><body style=\"font:16px sans-serif\"><h1>Bench</h1><p>A local page with a little text and a box.</p><div style=\"width:300px;height:200px;background:#369\"></div></body></html>";

fn arg(name: &str, default: u64) -> u64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn report(name: &str, mut ms: Vec<f64>) {
    ms.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!(
        "{name:<5} n={:<3} p50={:>7.1} ms  p95={:>7.1} ms  min={:>7.1} ms  max={:>7.1} ms",
        ms.len(),
        pct(&ms, 0.5),
        pct(&ms, 0.95),
        ms[0],
        ms[ms.len() - 1]
    );
}

async fn serve_page() -> String {
    let (listener, addr) = support::net::listen().await;
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            tokio::spawn(async move {
                use tokio::io::{AsyncReadExt, AsyncWriteExt};
                let mut buf = vec![0u8; 8192];
                let mut seen = Vec::new();
                loop {
                    let n = match s.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => n,
                    };
                    seen.extend_from_slice(&buf[..n]);
                    while let Some(end) = seen.windows(4).position(|w| w == b"\r\n\r\n") {
                        seen.drain(..end + 4);
                        let resp = format!(
                            "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\n\r\n{PAGE}",
                            PAGE.len()
                        );
                        if s.write_all(resp.as_bytes()).await.is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    format!("http://{addr}/")
}

fn browsers() -> Arc<Browsers> {
    let guard = Arc::new(Guard::new(vec!["127.0.0.1/32".parse().unwrap()]));
    Arc::new(Browsers::new(guard, Arc::new(SystemResolver)))
}

fn pool_config() -> PoolConfig {
    PoolConfig {
        chromium: paycall::browser::binary_path(
            None,
            "PAYCALL_CHROMIUM",
            paycall::browser::DEFAULT_CHROMIUM,
        ),
        chromedriver: paycall::browser::binary_path(
            None,
            "PAYCALL_CHROMEDRIVER",
            paycall::browser::DEFAULT_CHROMEDRIVER,
        ),
        size: 1,
        max_uses: 1_000,
        queue: 8,
        queue_wait: Duration::from_secs(30),
        warm: 0,
        js_heap_mb: paycall::browser::pool::DEFAULT_JS_HEAP_MB,
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    paycall::net::install_crypto_provider();
    let cold_n = arg("--cold", 5) as usize;
    let warm_n = arg("--warm", 30) as usize;
    let gap = Duration::from_millis(arg("--gap-ms", 200));
    let url = serve_page().await;
    let req = ShotRequest {
        url: url.parse().unwrap(),
        document: None,
        width: 1280,
        height: 800,
        full_page: false,
        format: Format::Png,
        delay: Duration::ZERO,
    };
    let limits = RenderLimits {
        nav_timeout: Duration::from_secs(15),
        idle: Duration::from_millis(100),
        idle_max: Duration::from_millis(1500),
        max_image_bytes: 3_000_000,
        full_page_max_px: 4000,
        jpeg_quality: 80,
        max_memory_bytes: paycall::browser::render::DEFAULT_MAX_MEMORY_BYTES,
    };
    if let Err(e) = browsers().pool(pool_config()).availability() {
        eprintln!("screenshot bench: {e}");
        std::process::exit(2);
    }

    let mut cold = Vec::new();
    for _ in 0..cold_n {
        let b = browsers();
        let pool = b.pool(pool_config());
        let t = Instant::now();
        let mut lease = pool.acquire().await.expect("session");
        let shot = paycall::browser::render::render(lease.session(), &req, &limits).await;
        cold.push(t.elapsed().as_secs_f64() * 1000.0);
        shot.expect("render");
        paycall::browser::render::tidy(lease.session())
            .await
            .expect("tidy");
        lease.release(true).await;
        b.shutdown().await;
    }

    let b = browsers();
    let pool = b.pool(pool_config());
    {
        let mut lease = pool.acquire().await.expect("session");
        paycall::browser::render::render(lease.session(), &req, &limits)
            .await
            .expect("first render");
        paycall::browser::render::tidy(lease.session())
            .await
            .expect("tidy");
        lease.release(true).await;
    }
    let mut warm = Vec::new();
    let mut bytes = 0;
    for _ in 0..warm_n {
        tokio::time::sleep(gap).await;
        let t = Instant::now();
        let mut lease = pool.acquire().await.expect("session");
        let shot = paycall::browser::render::render(lease.session(), &req, &limits).await;
        warm.push(t.elapsed().as_secs_f64() * 1000.0);
        // As in the stage: the clean-up is after the reply, outside the caller's time.
        paycall::browser::render::tidy(lease.session())
            .await
            .expect("tidy");
        lease.release(true).await;
        bytes = shot.expect("render").bytes;
    }
    b.shutdown().await;
    println!("screenshot of a local page, 1280x800 PNG ({bytes} bytes), fresh context per render");
    if !cold.is_empty() {
        report("cold", cold);
    }
    if !warm.is_empty() {
        report("warm", warm);
    }
}
