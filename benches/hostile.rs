//! Issue 21's hostile documents: wall time and peak RSS per case, each case in its own child
//! process (this binary re-run with `--case NAME`), so one case's memory never hides in
//! another's. Not a timed test: it prints figures.
//!
//!     cargo bench --bench hostile                 # every case, as the routes run them now
//!     cargo bench --bench hostile -- --before     # also the old code paths (scraper's plain
//!                                                 # parse, lopdf's CMap), under a 2 GB address-
//!                                                 # space limit and a 20 s watchdog
//!     cargo bench --bench hostile -- --case adoption-500
//!     cargo bench --bench hostile -- --ratios DIR  # nodes per input byte of real pages (every
//!                                                 # .html / .html.gz under DIR): the margin
//!                                                 # of the node budget
//!     cargo bench --bench hostile -- --concurrent [--per-route 8]
//!                                                 # the paycall binary with the shipped
//!                                                 # routes.yaml: 8 hostile documents in flight
//!                                                 # on each of /api/fetch, /api/extract and
//!                                                 # /api/pdf at once, paid (stub facilitator);
//!                                                 # outcomes, wall time and the process's
//!                                                 # peak RSS (VmHWM) against the 512 MB ceiling
//!
//! Peak RSS is the child's `ru_maxrss` (getrusage of the waited child); the process starts at
//! a few MB, so the figure is what the case itself cost. The document is generated inside the
//! child, before the clock starts; its own size is part of the RSS.

#[path = "../tests/support/mod.rs"]
mod support;
use support::{eip3009, hostile};

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use paycall::doc::parse::{adoption_agency_page, Budget};
use paycall::pdf::{extract_guarded, Options};

/// (name, what, runs in the "before" set only)
const CASES: &[(&str, &str, bool)] = &[
    (
        "adoption-500",
        "200 KB page, 500 distinct open <b>, then <p>x: /api/extract's Page::parse",
        false,
    ),
    (
        "adoption-8000",
        "same with 8,000 formatting elements",
        false,
    ),
    (
        "adoption-markdown",
        "the 500-element page through paycall markdown's html_to_markdown",
        false,
    ),
    (
        "adoption-x8",
        "8 adoption pages parsed at once (8 threads), as 8 calls in flight",
        false,
    ),
    (
        "cmap-full-range",
        "ToUnicode bfrange <00000000> <FFFFFFFF> (pdf::extract)",
        false,
    ),
    (
        "cmap-100k-ranges",
        "ToUnicode of 100,000 ranges of 65,536 codes",
        false,
    ),
    (
        "form-31MB-x8",
        "31 MB flate form of no-ops drawn 8 times",
        false,
    ),
    (
        "pages-50x31MB",
        "50 pages of 31 MB of text operators",
        false,
    ),
    ("page-15MB-lines", "one 15 MB page of distinct lines", false),
    (
        "blank-3x15MB",
        "3 pages of 15 MB of no-op operators, no text (own stream each)",
        false,
    ),
    (
        "offers-100000",
        "x402 challenge with 100,000 empty offers: analysis + report",
        false,
    ),
    (
        "before-adoption-500",
        "OLD PATH: scraper::Html::parse_document on adoption-500",
        true,
    ),
    (
        "before-cmap-full-range",
        "OLD PATH: lopdf's ToUnicode (Document::extract_text)",
        true,
    ),
];

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--child") {
        child(&args[i + 1]);
        return;
    }
    if args.iter().any(|a| a == "--concurrent") {
        let per_route = args
            .iter()
            .position(|a| a == "--per-route")
            .and_then(|i| args.get(i + 1)?.parse().ok())
            .unwrap_or(8);
        concurrent(per_route);
        return;
    }
    if let Some(i) = args.iter().position(|a| a == "--ratios") {
        ratios(std::path::Path::new(&args[i + 1]));
        return;
    }
    let only = args
        .iter()
        .position(|a| a == "--case")
        .map(|i| args[i + 1].clone());
    let before = args.iter().any(|a| a == "--before");
    println!(
        "{:<24} {:>10} {:>12}  {:<10} what",
        "case", "wall", "peak RSS", "outcome"
    );
    for (name, what, is_before) in CASES {
        if only.as_deref().is_some_and(|o| o != *name) || (*is_before && !before && only.is_none())
        {
            continue;
        }
        let (wall, rss_kb, outcome) = run_child(name, *is_before);
        println!(
            "{name:<24} {:>8.2} s {:>9.1} MB  {outcome:<10} {what}",
            wall.as_secs_f64(),
            rss_kb as f64 / 1024.0
        );
    }
}

/// Runs one case in a child; (wall time, peak RSS in KB, outcome line the child printed).
/// The child is reaped by `wait4` (which also gives its rusage), not `Child::wait`.
#[allow(clippy::zombie_processes)]
fn run_child(name: &str, before: bool) -> (Duration, u64, String) {
    let exe = std::env::current_exe().expect("own path");
    let t = Instant::now();
    let mut cmd = Command::new(exe);
    cmd.arg("--child").arg(name).stdout(Stdio::piped());
    if before {
        // The old paths would take the machine: bound them.
        use std::os::unix::process::CommandExt;
        unsafe {
            cmd.pre_exec(|| {
                let lim = libc::rlimit {
                    rlim_cur: 2 << 30,
                    rlim_max: 2 << 30,
                };
                libc::setrlimit(libc::RLIMIT_AS, &lim);
                Ok(())
            });
        }
    }
    let mut child = cmd.spawn().expect("spawn child");
    let pid = child.id() as i32;
    let deadline = Instant::now() + Duration::from_secs(if before { 20 } else { 60 });
    let mut status = 0i32;
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let mut killed = false;
    loop {
        // SAFETY: wait4 on our own child with valid out-pointers.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if r == pid {
            break;
        }
        if Instant::now() >= deadline && !killed {
            let _ = child.kill();
            killed = true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let wall = t.elapsed();
    let mut out = String::new();
    if let Some(mut so) = child.stdout.take() {
        use std::io::Read;
        let _ = so.read_to_string(&mut out);
    }
    let outcome = if killed {
        "killed".to_string()
    } else if libc::WIFSIGNALED(status) || libc::WEXITSTATUS(status) != 0 {
        "died/OOM".to_string()
    } else {
        out.lines().last().unwrap_or("").to_string()
    };
    (wall, usage.ru_maxrss as u64, outcome)
}

/// One case, in this (child) process; prints a one-word outcome.
fn child(name: &str) {
    let outcome = match name {
        "adoption-500" | "adoption-8000" => {
            let n = if name == "adoption-500" { 500 } else { 8000 };
            let html = adoption_agency_page(n, 199_997);
            let b = Budget::default().with_deadline(Instant::now() + Duration::from_secs(2));
            match paycall::doc::page::Page::parse(&html, None, &b) {
                Ok(_) => "parsed".to_string(),
                Err(e) => e.code().to_string(),
            }
        }
        "adoption-markdown" => {
            let html = adoption_agency_page(500, 199_997);
            match paycall::doc::html_to_markdown(&html, None) {
                Ok(_) => "converted".to_string(),
                Err(e) => e.code().to_string(),
            }
        }
        "adoption-x8" => {
            let html = std::sync::Arc::new(adoption_agency_page(500, 199_997));
            let hs: Vec<_> = (0..8)
                .map(|_| {
                    let html = html.clone();
                    std::thread::spawn(move || {
                        let b = Budget::default()
                            .with_deadline(Instant::now() + Duration::from_secs(2));
                        paycall::doc::page::Page::parse(&html, None, &b)
                            .map(|_| ())
                            .map_err(|e| e.code())
                    })
                })
                .collect();
            let codes: Vec<String> = hs
                .into_iter()
                .map(|h| match h.join() {
                    Ok(Ok(())) => "parsed".to_string(),
                    Ok(Err(c)) => c.to_string(),
                    Err(_) => "panic".to_string(),
                })
                .collect();
            codes.join(",")
        }
        "cmap-full-range" => pdf(&hostile::cmap_pdf(hostile::FULL_RANGE_CMAP)),
        "cmap-100k-ranges" => pdf(&hostile::cmap_pdf(&hostile::many_ranges_cmap())),
        "form-31MB-x8" => pdf(&hostile::redrawn_form_pdf(31_000_000, 8, false)),
        "pages-50x31MB" => pdf(&hostile::many_text_pages_pdf(50, 31_000_000)),
        "page-15MB-lines" => pdf(&hostile::many_text_pages_pdf(1, 15_000_000)),
        "blank-3x15MB" => pdf(&hostile::blank_pages_pdf(3, 15_000_000)),
        "offers-100000" => {
            use base64::Engine;
            let challenge = hostile::many_offers_challenge(100_000);
            let mut headers = http::HeaderMap::new();
            headers.insert(
                "payment-required",
                base64::engine::general_purpose::STANDARD
                    .encode(challenge)
                    .parse()
                    .unwrap(),
            );
            let url = url::Url::parse("https://example.com/x").unwrap();
            let guard = paycall::net::Guard::new(Vec::new());
            let a = paycall::audit::challenge_checks::analyse(
                &paycall::audit::challenge_checks::ProbeView {
                    url: &url,
                    final_url: &url,
                    method: "GET",
                    status: 402,
                    headers: &headers,
                    body: b"{}",
                    truncated: false,
                },
                &guard,
            );
            let report = serde_json::json!({"accepts": a.accepts, "checks": a.checks});
            format!("{}B", serde_json::to_vec(&report).unwrap().len())
        }
        "before-adoption-500" => {
            let html = adoption_agency_page(500, 199_997);
            let h = scraper::Html::parse_document(&html);
            format!("{}nodes", h.tree.nodes().count())
        }
        "before-cmap-full-range" => {
            let doc =
                lopdf::Document::load_mem(&hostile::cmap_pdf(hostile::FULL_RANGE_CMAP)).unwrap();
            match doc.extract_text(&[1]) {
                Ok(t) => format!("{}chars", t.len()),
                Err(_) => "error".to_string(),
            }
        }
        other => format!("unknown case {other}"),
    };
    println!("{outcome}");
}

fn pdf(bytes: &[u8]) -> String {
    match extract_guarded(bytes, &Options::default()) {
        Ok(d) => match d.truncated {
            Some(t) => format!("text,{t:?}"),
            None => "text".to_string(),
        },
        Err(e) => e.code().to_string(),
    }
}

/// Nodes made per input byte over real pages, and how many the default budget would refuse.
fn ratios(dir: &std::path::Path) {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.to_string_lossy().ends_with(".html")
                || p.to_string_lossy().ends_with(".html.gz")
            {
                files.push(p);
            }
        }
    }
    let mut rows: Vec<(f64, usize, String)> = Vec::new();
    let mut refused = 0;
    let unlimited = Budget {
        nodes_per_byte: usize::MAX / (1 << 24),
        min_nodes: 0,
        deadline: None,
    };
    for f in &files {
        let raw = std::fs::read(f).unwrap_or_default();
        let bytes = if f.to_string_lossy().ends_with(".gz") {
            use std::io::Read;
            let mut out = Vec::new();
            let _ = flate2::read::GzDecoder::new(&raw[..]).read_to_end(&mut out);
            out
        } else {
            raw
        };
        let text = String::from_utf8_lossy(&bytes);
        let bounded = paycall::doc::input_bounds::bound_input(&text);
        let Ok(h) = paycall::doc::parse::parse_document(&bounded, &unlimited) else {
            continue;
        };
        let nodes = h.tree.nodes().count();
        if paycall::doc::parse::parse_document(&bounded, &Budget::default()).is_err() {
            refused += 1;
        }
        rows.push((
            nodes as f64 / bounded.len().max(1) as f64,
            bounded.len(),
            f.display().to_string(),
        ));
    }
    rows.sort_by(|a, b| a.0.total_cmp(&b.0));
    let n = rows.len();
    if n == 0 {
        println!("no .html or .html.gz files under {}", dir.display());
        return;
    }
    let at = |q: f64| rows[((n - 1) as f64 * q) as usize].0;
    println!(
        "{n} pages: nodes per byte median {:.3}, p90 {:.3}, p99 {:.3}, max {:.3} ({}); refused by the default budget: {refused}",
        at(0.5),
        at(0.9),
        at(0.99),
        rows[n - 1].0,
        rows[n - 1].2
    );
}

/// 8 (`per_route`) hostile documents in flight on each parsing route of a real paycall.
fn concurrent(per_route: usize) {
    use serde_json::{json, Value};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use warp::Filter;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        paycall::x402::ensure_crypto();
        let settles = Arc::new(AtomicUsize::new(0));
        let fac = support::bench::facilitator(settles.clone(), false).await;
        let page = bytes::Bytes::from(adoption_agency_page(500, 199_997));
        let pdf = bytes::Bytes::from(hostile::blank_pages_pdf(3, 15_000_000));
        let doc = |ct: &'static str, body: bytes::Bytes| {
            warp::any().map(move || {
                let mut r = warp::reply::Response::new(body.clone().into());
                r.headers_mut()
                    .insert("content-type", warp::http::HeaderValue::from_static(ct));
                r
            })
        };
        let up = support::net::serve_forever(
            warp::path("adoption.html")
                .and(doc("text/html", page.clone()))
                .or(warp::path("blank.pdf").and(doc("application/pdf", pdf))),
        )
        .await;
        let up = format!("http://{up}");
        let port = support::net::free_port();
        // The shipped routes.yaml, but the Solana offer left out: the stub facilitator offers
        // only Base, and the start-up check must not reach a public Solana RPC.
        let dir = std::env::temp_dir().join(format!("paycall-bench-hostile-{port}"));
        let _ = std::fs::create_dir_all(&dir);
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let routes = std::fs::read_to_string(root.join("routes.yaml"))
            .unwrap()
            .replace(
                "unsupported_network: refuse",
                "unsupported_network: leave_out",
            );
        std::fs::write(dir.join("routes.yaml"), routes).unwrap();
        for d in ["pipelines", "static"] {
            let _ = std::os::unix::fs::symlink(root.join(d), dir.join(d));
        }
        let mut child = Command::new(env!("CARGO_BIN_EXE_paycall"))
            .arg("--config")
            .arg(dir.join("routes.yaml"))
            .arg("serve")
            .env("PAYCALL_LISTEN", format!("127.0.0.1:{port}"))
            .env("PAYCALL_ADMIN_LISTEN", "off")
            .env("PAYCALL_BASE_URL", format!("http://127.0.0.1:{port}"))
            .envs(support::bench::stub_env(&fac))
            .env(
                "PAYCALL_LEDGER_URL",
                format!("sqlite://{}", dir.join("ledger.db").display()),
            )
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start paycall");
        let pid = child.id();
        let base = format!("http://127.0.0.1:{port}");
        let client = reqwest::Client::builder()
            .no_proxy()
            .timeout(Duration::from_secs(120))
            .build()
            .unwrap();
        support::bench::wait_ready(&client, &base).await;
        let enc = |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
        let posted = json!({ "html": String::from_utf8_lossy(&page) }).to_string();
        let mut calls: Vec<(&str, reqwest::Method, String, Option<String>)> = Vec::new();
        for i in 0..per_route {
            let docu = |p: &str| enc(&format!("{up}/{p}?i={i}"));
            calls.push((
                "fetch",
                reqwest::Method::GET,
                format!("{base}/api/fetch?url={}", docu("adoption.html")),
                None,
            ));
            calls.push(if i % 2 == 0 {
                (
                    "extract",
                    reqwest::Method::GET,
                    format!("{base}/api/extract?url={}", docu("adoption.html")),
                    None,
                )
            } else {
                (
                    "extract-post",
                    reqwest::Method::POST,
                    format!("{base}/api/extract"),
                    Some(posted.clone()),
                )
            });
            calls.push((
                "pdf",
                reqwest::Method::GET,
                format!("{base}/api/pdf?url={}", docu("blank.pdf")),
                None,
            ));
        }
        let key = eip3009::key(support::bench::KEY);
        let mut signed = Vec::new();
        for (n, (_, method, url, body)) in calls.iter().enumerate() {
            let mut r = client.request(method.clone(), url);
            if let Some(b) = body {
                r = r.header("content-type", "application/json").body(b.clone());
            }
            let resp = r.send().await.unwrap();
            let c = eip3009::challenge_of(resp.headers()["payment-required"].to_str().unwrap());
            signed.push(eip3009::sign(&key, &c, n as u64));
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        let idle = support::bench::status_field(pid, "VmRSS");
        let t = Instant::now();
        let jobs: Vec<_> = calls
            .into_iter()
            .zip(signed)
            .map(|((name, method, url, body), sig)| {
                let client = client.clone();
                tokio::spawn(async move {
                    let mut r = client
                        .request(method, &url)
                        .header("PAYMENT-SIGNATURE", sig);
                    if let Some(b) = body {
                        r = r.header("content-type", "application/json").body(b);
                    }
                    let (status, code) = match r.send().await {
                        Ok(resp) => {
                            let s = resp.status().as_u16();
                            let v: Value =
                                serde_json::from_slice(&resp.bytes().await.unwrap_or_default())
                                    .unwrap_or(Value::Null);
                            (s, v["error"].as_str().unwrap_or("").to_string())
                        }
                        Err(_) => (0, "no answer".to_string()),
                    };
                    format!("{name} {status} {code}")
                })
            })
            .collect();
        // Meanwhile, how long /status takes to answer.
        let mut slowest = Duration::ZERO;
        while jobs.iter().any(|j| !j.is_finished()) {
            let s = Instant::now();
            let _ = client.get(format!("{base}/status")).send().await;
            slowest = slowest.max(s.elapsed());
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let mut outcomes: std::collections::BTreeMap<String, usize> = Default::default();
        for j in jobs {
            *outcomes.entry(j.await.unwrap()).or_default() += 1;
        }
        let wall = t.elapsed();
        let peak = support::bench::status_field(pid, "VmHWM");
        let _ = child.kill();
        let _ = child.wait();
        let _ = std::fs::remove_dir_all(&dir);
        println!(
            "{} hostile documents in flight ({per_route} per route): {:.1} s, RSS idle {:.1} MB, \
             peak (VmHWM) {:.1} MB — ceiling 512 MB: {}; slowest /status meanwhile {:.0} ms; \
             settled {}; outcomes {outcomes:?}",
            3 * per_route,
            wall.as_secs_f64(),
            idle as f64 / 1024.0,
            peak as f64 / 1024.0,
            if peak <= 512 * 1024 {
                "held"
            } else {
                "EXCEEDED"
            },
            slowest.as_secs_f64() * 1000.0,
            settles.load(Ordering::Relaxed),
        );
    });
}
