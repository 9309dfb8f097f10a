//! A person in a browser: a paid route opened with no payment in real Chromium gets the 402 as a
//! small HTML page (what the route does, its inputs, its price on each network, how an agent
//! pays, the free demo) with the same status and PAYMENT-REQUIRED header as the JSON 402, which
//! every other client (no Accept, `*/*`, JSON) keeps byte for byte. Nothing from routes.yaml
//! reaches the page unescaped. No payment is verified or settled for any of it.
//!
//! The screenshot Chromium takes of the shipped /api/fetch page is written to
//! `$CARGO_TARGET_TMPDIR/challenge-page-fetch.png` (the path is printed) for a person to look at.

use crate::support;
use support::stack;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use paycall::config;
use paycall::server;
use stack::LocalStack;

/// What Chromium sends for a page it navigates to.
const BROWSER_ACCEPT: &str = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7";
const CHROMIUM_TIMEOUT: Duration = Duration::from_secs(60);

async fn get(url: &str, accept: Option<&str>) -> (u16, reqwest::header::HeaderMap, String) {
    let mut req = support::server::client().get(url);
    if let Some(a) = accept {
        req = req.header("accept", a);
    }
    let resp = req.send().await.expect("request to paycall");
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    (status, headers, resp.text().await.expect("body"))
}

fn header<'a>(h: &'a reqwest::header::HeaderMap, name: &str) -> &'a str {
    h.get(name).and_then(|v| v.to_str().ok()).unwrap_or("")
}

fn chromium_bin() -> String {
    std::env::var("PAYCALL_CHROMIUM").unwrap_or_else(|_| "chromium".into())
}

/// Runs headless Chromium on `url` with `args` (its own throwaway profile), bounded; its stdout.
fn chromium(args: &[&str], url: &str) -> String {
    let profile = tempfile::tempdir().expect("profile dir");
    let out = tempfile::NamedTempFile::new().expect("stdout file");
    let err = tempfile::NamedTempFile::new().expect("stderr file");
    let mut child = Command::new(chromium_bin())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-extensions",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .arg(url)
        .env_remove("HTTP_PROXY")
        .env_remove("HTTPS_PROXY")
        .env_remove("http_proxy")
        .env_remove("https_proxy")
        .stdin(Stdio::null())
        .stdout(out.reopen().expect("stdout"))
        .stderr(err.reopen().expect("stderr"))
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run {} ({e}): run scripts/setup.sh (it installs chromium)",
                chromium_bin()
            )
        });
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("chromium status") {
            break s;
        }
        if started.elapsed() > CHROMIUM_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium {args:?} {url} did not finish within {CHROMIUM_TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let stdout = std::fs::read_to_string(out.path()).unwrap_or_default();
    assert!(
        status.success(),
        "chromium {args:?} {url} failed ({status}):\n{}",
        std::fs::read_to_string(err.path()).unwrap_or_default()
    );
    stdout
}

async fn chromium_async(args: Vec<String>, url: String) -> String {
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        chromium(&args, &url)
    })
    .await
    .expect("chromium runner panicked")
}

async fn shipped_paycall(stack: &LocalStack) -> support::server::TestServer {
    let routes = Path::new(env!("CARGO_MANIFEST_DIR")).join("routes.yaml");
    let fac = stack.facilitator_url.clone();
    let pay_to = stack.pay_to.clone();
    let env = move |k: &str| -> Option<String> {
        match k {
            "PAYCALL_FACILITATOR_URL" => Some(fac.clone()),
            "PAYCALL_EVM_PAY_TO" => Some(pay_to.clone()),
            "PAYCALL_SOLANA_PAY_TO" => Some(support::server::SOL_PAY_TO.into()),
            "PAYCALL_LEDGER_URL" => Some("sqlite::memory:".into()),
            _ => None,
        }
    };
    let cfg = config::load_with_env(&routes, &env).unwrap_or_else(|e| panic!("{e}"));
    let services = server::services::build(&cfg).expect("services");
    let app = server::build_app(cfg, services).unwrap_or_else(|e| panic!("{e}"));
    support::server::start_app(app).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_gets_the_402_as_a_page_and_every_other_client_the_json() {
    let stack = LocalStack::start();
    let paycall = shipped_paycall(&stack).await;
    let url = paycall.url("/api/fetch");

    // Agents, scripts, curl: the JSON 402, identical whatever they accept.
    let (status, json_headers, json_body) = get(&url, None).await;
    assert_eq!(status, 402);
    assert_eq!(header(&json_headers, "content-type"), "application/json");
    // One URL, two representations chosen by Accept: shared caches must key on it.
    assert_eq!(header(&json_headers, "vary"), "Accept");
    let challenge = header(&json_headers, "payment-required").to_string();
    assert!(!challenge.is_empty());
    let body: serde_json::Value = serde_json::from_str(&json_body).expect("JSON 402");
    assert_eq!(body["x402Version"], 2);
    assert_eq!(
        body["accepts"].as_array().map(Vec::len),
        Some(2),
        "Base and Solana offers: {body}"
    );
    for accept in [
        "*/*",
        "application/json",
        "application/json, text/html",
        "application/json, text/event-stream",
    ] {
        let (s, h, b) = get(&url, Some(accept)).await;
        assert_eq!(s, 402, "{accept}");
        assert_eq!(header(&h, "content-type"), "application/json", "{accept}");
        assert_eq!(header(&h, "payment-required"), challenge, "{accept}");
        assert_eq!(b, json_body, "Accept {accept}: the exact JSON 402");
    }

    // A browser: the same status and challenge header, an HTML page.
    let (s, h, page) = get(&url, Some(BROWSER_ACCEPT)).await;
    assert_eq!(s, 402);
    assert_eq!(header(&h, "content-type"), "text/html; charset=utf-8");
    assert_eq!(header(&h, "payment-required"), challenge);
    assert_eq!(header(&h, "cache-control"), "no-store");
    assert_eq!(header(&h, "vary"), "Accept");
    assert!(header(&h, "content-security-policy").contains("default-src 'none'"));
    assert!(page.starts_with("<!doctype html>"), "{page}");
    assert_eq!(page.matches("<b>0.02 USDC</b>").count(), 2, "{page}");
    for want in [
        "<td>Base<br><code>eip155:8453</code>",
        "<td>Solana<br><code>solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp</code>",
        "<a href=\"/api/demo/fetch\">",
        "PAYMENT-SIGNATURE",
        "<code>url</code>",
        &stack.pay_to,
    ] {
        assert!(page.contains(want), "{want} not on the page:\n{page}");
    }
    // A route taking GET and POST.
    let (s, h, page) = get(&paycall.url("/api/extract"), Some(BROWSER_ACCEPT)).await;
    assert_eq!(
        (s, header(&h, "content-type")),
        (402, "text/html; charset=utf-8")
    );
    assert!(page.contains("<b>0.015 USDC</b>"), "{page}");

    // Real Chromium renders it: the text a person reads, and a screenshot to look at.
    let dom = chromium_async(vec!["--dump-dom".into()], url.clone()).await;
    for want in [
        "<h1>Public URL to clean text or markdown</h1>",
        "402 Payment Required",
        "<b>0.02 USDC</b>",
        "href=\"/api/demo/fetch\"",
        "How an agent pays",
    ] {
        assert!(dom.contains(want), "{want} not in Chromium's DOM:\n{dom}");
    }
    let shot = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("challenge-page-fetch.png");
    let _ = std::fs::remove_file(&shot);
    chromium_async(
        vec![
            "--window-size=1000,1400".into(),
            format!("--screenshot={}", shot.display()),
        ],
        url.clone(),
    )
    .await;
    let png = std::fs::read(&shot).expect("Chromium wrote the screenshot");
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "a PNG");
    assert!(
        png.len() > 20_000,
        "a page, not a blank: {} bytes",
        png.len()
    );
    println!("screenshot of the /api/fetch 402 page: {}", shot.display());

    assert_eq!(
        stack.verify_calls() + stack.settle_calls(),
        0,
        "no payment was verified or settled"
    );
}

#[tokio::test]
async fn hostile_route_text_is_shown_never_run() {
    let yaml = format!(
        "{}routes:
  - path: /api/echo
    methods: [GET]
    price_usd: \"0.01\"
    summary: \"<script>document.title='pwned'</script>Echo\"
    description: \"Says \\\"hi\\\" & more\\\"><img src=x onerror=alert(1)><a href='javascript:alert(2)'>x</a>\"
    pipeline: paid_static
    input:
      - {{ name: q, type: string, max_length: 10, description: \"</td><iframe src=//evil></iframe>\" }}
",
        support::server::service_yaml(support::server::NO_FACILITATOR, 30, 10, &[])
    );
    let (_dir, paycall) = support::server::serve_yaml(
        &yaml,
        &[(
            "paid_static",
            "name: paid_static\nstages:\n  - stage: payment_gate\n  - stage: static_reply\n    with: { body: { echoed: true } }\n  - stage: bill\n  - stage: settle\n",
        )],
    )
    .await;
    let url = paycall.url("/api/echo");
    let (s, h, page) = get(&url, Some(BROWSER_ACCEPT)).await;
    assert_eq!(
        (s, header(&h, "content-type")),
        (402, "text/html; charset=utf-8")
    );
    for bad in ["<script", "<img", "<iframe", "<a href='javascript"] {
        assert!(!page.contains(bad), "{bad} reached the page:\n{page}");
    }
    let dom = chromium_async(vec!["--dump-dom".into()], url).await;
    // Live elements only: as text, Chromium serialises them with &lt;.
    for bad in ["<script", "<img", "<iframe", "<a href='javascript"] {
        assert!(
            !dom.contains(bad),
            "{bad} is live in Chromium's DOM:\n{dom}"
        );
    }
    assert!(
        dom.contains("&lt;script&gt;document.title='pwned'&lt;/script&gt;Echo"),
        "the summary is shown as text:\n{dom}"
    );
    assert!(!dom.contains("<title>pwned"), "{dom}");
}
