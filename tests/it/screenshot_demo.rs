//! The /api/screenshot demo twin renders a page the service serves itself (issue 16), with the
//! real chromium: the file is handed to the browser by our own code, so the demo works on a
//! deployment that reaches nothing and the guard makes no exception for anyone: only demo runs
//! read the service's own files (`own_file`; paid runs always fetch, tests/it/pdf_http.rs).

use crate::support;
use support::{pages, upstream};

use std::sync::atomic::Ordering;

use paycall::browser::Browsers;
use support::server::*;

const SAMPLE_URL: &str = "https://paycall.example.com/samples/harbour-guide.html";

/// The shipped routes.yaml with nothing reachable: no allowlist, no facilitator, a base_url
/// that resolves nowhere here.
fn shipped_offline() -> paycall::config::Config {
    let routes = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("routes.yaml");
    let env = |k: &str| match k {
        "PAYCALL_FACILITATOR_URL" => Some(NO_FACILITATOR.to_string()),
        other => test_env(other),
    };
    paycall::config::load_with_env(&routes, &env).unwrap_or_else(|e| panic!("{e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_renders_the_services_own_sample_on_a_deployment_that_reaches_nothing() {
    let app = build(shipped_offline()).unwrap_or_else(|e| panic!("{e}"));
    let browsers = app.services.get::<Browsers>().expect("browser service");
    let server = start_app(app).await;
    let (s, _, v) = get_json(&server.url("/api/demo/screenshot")).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["sample_status"], 200, "{v}");
    let shot = &v["sample"];
    assert_eq!(shot["title"], "A Walker's Guide to the Old Harbour", "{v}");
    assert_eq!(shot["finalUrl"], SAMPLE_URL);
    assert_eq!(shot["pageStatus"], 200);
    assert_eq!(shot["mimeType"], "image/png");
    let png = pages::decode_image(shot["imageBase64"].as_str().unwrap());
    assert_eq!(pages::png_size(&png), (1280, 800));
    assert!(
        png.len() > 5_000,
        "a rendered page, not a blank: {} bytes",
        png.len()
    );
    // Nothing went out: the page came from disk, its relative image has nowhere to go.
    let forwarded = browsers
        .proxy_if_started()
        .map(|p| p.stats().forwarded.load(Ordering::SeqCst))
        .unwrap_or(0);
    assert_eq!(forwarded, 0, "the demo fetched nothing through the proxy");
    server.shutdown().await;
}

const INPUT: &str = pages::SHOT_INPUT;

const OWN_PAGE: &str = "<!doctype html><html><head><title>Our own sample</title></head>\
    <body><h1>Served from disk</h1><img src=\"img/x.png\"></body></html>";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_twin_renders_the_file_and_a_failed_render_is_never_a_200() {
    let canary = upstream::canary("127.0.0.2").await;
    let up = pages::start(canary.addr).await;
    // The service serves /samples/page.html itself; the page server on 127.0.0.1 answers the
    // same path with its own 404 page, so what was rendered says where it came from.
    let sample = up.url("/samples/page.html");
    let route = |path: &str, chromium: &str| {
        format!(
            "  - path: {path}\n    methods: [GET]\n    price_usd: \"0.02\"\n    summary: shot\n    pipeline: shot\n    caps:\n      screenshot: {{ pool_size: 1{chromium} }}\n{INPUT}    demo:\n      input: {{ url: \"{sample}\" }}\n      ttl_s: 60\n      describe: our own page\n"
        )
    };
    let yaml = format!(
        "{}guard:\n  allow_cidrs: [\"127.0.0.1/32\"]\nroutes:\n  - path: /samples/page.html\n    methods: [GET]\n    summary: our page\n    pipeline: page\n{}{}",
        service_yaml(NO_FACILITATOR, 100, 100, &[]),
        route("/api/shot", ""),
        route("/api/shot-none", ", chromium: /nonexistent/chromium"),
    );
    let dir = write_config(
        &yaml,
        &[
            (
                "shot",
                "name: shot\nstages:\n  - stage: payment_gate\n  - stage: url_guard\n  - stage: own_file\n  - stage: screenshot\n  - stage: bill\n  - stage: settle\n",
            ),
            (
                "page",
                "name: page\nstages:\n  - stage: static_file\n    with: { file: page.html, content_type: text/html; charset=utf-8 }\n",
            ),
        ],
    );
    std::fs::write(dir.dir.path().join("page.html"), OWN_PAGE).unwrap();
    let app = build(load(&dir).unwrap_or_else(|e| panic!("{e}"))).unwrap_or_else(|e| panic!("{e}"));
    let browsers = app.services.get::<Browsers>().expect("browser service");
    let server = start_app(app).await;

    // The demo: our own file, not fetched.
    let (s, _, v) = get_json(&server.url("/api/demo/shot")).await;
    assert_eq!(s, 200, "{v}");
    let shot = &v["sample"];
    assert_eq!(shot["title"], "Our own sample", "{v}");
    assert_eq!(shot["finalUrl"], sample.as_str());
    assert_eq!(shot["pageStatus"], 200);
    assert_eq!(up.hits(), 0, "the demo never asked the network");

    let forwarded = browsers
        .proxy_if_started()
        .map(|p| p.stats().forwarded.load(Ordering::SeqCst))
        .unwrap_or(0);
    assert_eq!(forwarded, 0, "nothing went through the proxy");
    // The route itself is paid: the same URL without payment is a 402, nothing rendered.
    let (s, _, _) = get_json(&server.url(&format!("/api/shot?url={}", enc(&sample)))).await;
    assert_eq!(s, 402);
    assert_eq!(up.hits(), 0);
    assert_eq!(canary.hits(), 0);

    // A demo that cannot render is answered with the failure's status, never a 200 envelope.
    let (s, _, v) = get_json(&server.url("/api/demo/shot-none")).await;
    assert_eq!(s, 503, "{v}");
    assert_eq!(v["error"], "screenshot_unavailable", "{v}");
    server.shutdown().await;
}
