//! /api/search speed through the real server, everything on loopback: the shipped config (the
//! route made free so no payment is involved), the mock provider answering Brave's format from
//! fixtures/search/, result pages from the local test upstream.
//!
//! ```text
//! cargo bench --bench search [-- --rounds <n>]   (default 40)
//! ```
//!
//! Prints: the page → markdown transform alone (per page), one search with 5 pages fetched and
//! converted (p50 / p95 / max, sequential), throughput with 8 concurrent callers, and the time
//! a search with one hanging page takes (bounded by the page deadline, 1.5 s here, + 2 s).

#[path = "../tests/support/mod.rs"]
mod support;
use support::upstream;

use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};

use paycall::config;

fn rounds() -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == "--rounds")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(40)
}

async fn server(mock: &support::search::MockProvider, caps: Value) -> support::server::TestServer {
    let routes = Path::new(env!("CARGO_MANIFEST_DIR")).join("routes.yaml");
    let b = mock.base.clone();
    let env = move |k: &str| -> Option<String> {
        match k {
            "PAYCALL_FACILITATOR_URL" => Some(support::server::NO_FACILITATOR.into()),
            "PAYCALL_ALLOW_CIDRS" => Some("127.0.0.1/32".into()),
            "PAYCALL_UPSTREAM_BRAVE" => Some(b.clone()),
            other => support::server::test_env(other),
        }
    };
    let mut cfg = config::load_with_env(&routes, &env).unwrap_or_else(|e| panic!("{e}"));
    let route = cfg.routes.iter_mut().find(|r| r.name == "search").unwrap();
    route.price = None;
    route.caps.get_mut("search").unwrap().0 = caps;
    cfg.pipelines
        .get_mut("search")
        .unwrap()
        .stages
        .retain(|s| s.name == "search");
    support::server::start(cfg).await
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn pct(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn main() {
    let rounds = rounds().max(1);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async move {
        // The transform alone.
        let base = url::Url::parse("http://127.0.0.1/article").unwrap();
        let n = 500;
        let t = Instant::now();
        for _ in 0..n {
            let p = paycall::doc::page_text::page_text(
                "text/html; charset=utf-8",
                upstream::ARTICLE.as_bytes(),
                &base,
                12_000,
                &Default::default(),
            )
            .unwrap();
            assert!(!p.content.is_empty());
        }
        println!(
            "transform (test article, {} bytes): {:.1} µs/page",
            upstream::ARTICLE.len(),
            t.elapsed().as_secs_f64() * 1e6 / n as f64
        );

        let canary = upstream::canary("127.0.0.2").await;
        let up = upstream::start(&canary.url()).await;
        let mock = support::search::start().await;
        let pages: Vec<String> = (0..5).map(|i| up.url(&format!("/article?{i}"))).collect();
        mock.scenario("bench", &pages);
        let srv = server(
            &mock,
            json!({"provider": "brave", "api_key": support::search::BRAVE_KEY}),
        )
        .await;
        let url = srv.url("/api/search?q=bench&n=5");
        let client = support::server::client();
        // Warm-up (connection pools).
        for _ in 0..3 {
            let r = client.get(&url).send().await.unwrap();
            assert_eq!(r.status().as_u16(), 200);
            let _ = r.bytes().await;
        }

        let mut times = Vec::with_capacity(rounds);
        for _ in 0..rounds {
            let t = Instant::now();
            let r = client.get(&url).send().await.unwrap();
            assert_eq!(r.status().as_u16(), 200);
            let b = support::server::json_of(r).await;
            assert_eq!(b["fetchedOk"], 5, "{b}");
            times.push(t.elapsed());
        }
        times.sort();
        println!(
            "search n=5, sequential ({rounds} calls): p50 {:.1} ms, p95 {:.1} ms, max {:.1} ms",
            ms(pct(&times, 0.5)),
            ms(pct(&times, 0.95)),
            ms(*times.last().unwrap())
        );

        let callers = 8;
        let t = Instant::now();
        let tasks: Vec<_> = (0..callers)
            .map(|_| {
                let (c, u) = (client.clone(), url.clone());
                tokio::spawn(async move {
                    for _ in 0..rounds {
                        let r = c.get(&u).send().await.unwrap();
                        assert_eq!(r.status().as_u16(), 200);
                        let _ = r.bytes().await;
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        let total = callers * rounds;
        println!(
            "search n=5, {callers} concurrent callers: {:.1} searches/s ({:.1} pages/s)",
            total as f64 / t.elapsed().as_secs_f64(),
            5.0 * total as f64 / t.elapsed().as_secs_f64()
        );
        srv.shutdown().await;

        // One hanging page among three: the answer comes at the page deadline.
        mock.scenario(
            "hang",
            &[up.url("/slow?ms=30000"), up.url("/article"), up.url("/hello")],
        );
        let srv = server(
            &mock,
            json!({"provider": "brave", "api_key": support::search::BRAVE_KEY, "page_timeout_ms": 1500}),
        )
        .await;
        let t = Instant::now();
        let b = support::server::get_json(&srv.url("/api/search?q=hang&n=3"))
            .await
            .2;
        println!(
            "search n=3 with one hanging page (page deadline 1500 ms + 2000 ms transform margin): {:.0} ms, fetchedOk {}",
            ms(t.elapsed()),
            b["fetchedOk"]
        );
        srv.shutdown().await;
    });
}
