//! /api/screenshot with the real chromium + chromedriver against pages served on 127.0.0.1.
//!
//! The test config allows exactly 127.0.0.1/32 (the page server); the canary listens on
//! 127.0.0.2 and counts every connection: whatever the page tries (images, iframes, scripts,
//! fetch, XHR, beacons, WebSockets, redirects), the canary must see nothing. The route here is
//! free (no payment stages) so these tests exercise the browser alone; billing is in
//! tests/it/screenshot_pay.rs.

use crate::support;
use support::{pages, upstream};

use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::Value;

use paycall::browser::Browsers;

const INPUT: &str = pages::SHOT_INPUT;

const PIPELINE: &str = "name: shot\nstages:\n  - stage: url_guard\n  - stage: screenshot\n";

/// routes.yaml with three free routes on one browser pool: the shipped limits, a small image
/// cap, a short navigation deadline.
fn routes_yaml(chromium: Option<&str>) -> String {
    let bin = chromium
        .map(|c| format!(", chromium: \"{c}\""))
        .unwrap_or_default();
    let route = |path: &str, caps: &str| {
        format!(
            "  - path: {path}\n    methods: [GET]\n    summary: shot\n    pipeline: shot\n    caps:\n      screenshot: {{ pool_size: 2{bin}{caps} }}\n{INPUT}"
        )
    };
    format!(
        "{}guard:\n  allow_cidrs: [\"127.0.0.1/32\"]\nroutes:\n{}{}{}",
        support::server::service_yaml(support::server::NO_FACILITATOR, 30, 10, &[]),
        route("/api/shot", ""),
        route("/api/shot-small", ", max_image_bytes: 60000"),
        route("/api/shot-quick", ", nav_timeout_ms: 1500"),
    )
}

struct Env {
    _dir: support::server::ConfigDir,
    server: support::server::TestServer,
    browsers: std::sync::Arc<Browsers>,
    pages: pages::Pages,
    canary: upstream::Canary,
}

async fn env() -> Env {
    let canary = upstream::canary("127.0.0.2").await;
    let pages = pages::start(canary.addr).await;
    let dir = support::server::write_config(&routes_yaml(None), &[("shot", PIPELINE)]);
    let config = support::server::load(&dir).unwrap_or_else(|e| panic!("{e}"));
    let app = support::server::build(config).unwrap_or_else(|e| panic!("{e}"));
    let browsers = app.services.get::<Browsers>().expect("browser service");
    let server = support::server::start_app(app).await;
    Env {
        _dir: dir,
        server,
        browsers,
        pages,
        canary,
    }
}

use support::server::enc;

impl Env {
    async fn shot(&self, route: &str, page: &str, extra: &str) -> (u16, Value) {
        let url = self
            .server
            .url(&format!("{route}?url={}{extra}", enc(page)));
        let resp = reqwest::Client::builder()
            .no_proxy()
            .timeout(Duration::from_secs(60))
            .build()
            .unwrap()
            .get(url)
            .send()
            .await
            .expect("request");
        let status = resp.status().as_u16();
        (status, support::server::json_of(resp).await)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renders_local_pages_and_the_guard_holds_for_every_request_of_the_page() {
    let e = env().await;

    // A plain page: PNG of the viewport asked for, with the page's facts.
    let (s, b) = e
        .shot("/api/shot", &e.pages.url("/plain"), "&width=800&height=600")
        .await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["mimeType"], "image/png");
    assert_eq!(b["title"], "Plain page");
    assert_eq!(b["pageStatus"], 200);
    assert_eq!(b["finalUrl"], e.pages.url("/plain"));
    assert_eq!(
        (b["width"].as_u64(), b["height"].as_u64()),
        (Some(800), Some(600))
    );
    let png = pages::decode_image(b["imageBase64"].as_str().unwrap());
    assert_eq!(png.len() as u64, b["bytes"].as_u64().unwrap());
    assert_eq!(pages::png_size(&png), (800, 600));
    assert_eq!(b["source"], "shot");
    let proxy = e
        .browsers
        .proxy_if_started()
        .expect("the proxy started with the first render");
    assert!(
        proxy.stats().forwarded.load(Ordering::SeqCst) >= 1,
        "the page itself came through the guarded proxy"
    );

    // The page's own status does not matter: an image is an image.
    let (s, b) = e.shot("/api/shot", &e.pages.url("/missing"), "").await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["pageStatus"], 404);
    assert_eq!(b["title"], "Not here");
    let png = pages::decode_image(b["imageBase64"].as_str().unwrap());
    assert_eq!(pages::png_size(&png), (1280, 800), "the default viewport");

    // Sub-requests of every kind to the refused canary: all refused, the page still renders.
    let refused_before = proxy.stats().refused.load(Ordering::SeqCst);
    let (s, b) = e
        .shot("/api/shot", &e.pages.url("/subrequests"), "&delayMs=600")
        .await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["title"], "Sub-requests fetch:error,xhr:error", "{b}");
    assert!(
        proxy.stats().refused.load(Ordering::SeqCst) >= refused_before + 4,
        "the proxy refused the page's sub-requests"
    );

    // A WebSocket to the refused canary fails.
    let (s, b) = e
        .shot("/api/shot", &e.pages.url("/websocket"), "&delayMs=500")
        .await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["title"], "WebSocket error", "{b}");

    // A redirect of the page itself to a refused address: 400, nothing rendered.
    let (s, b) = e.shot("/api/shot", &e.pages.url("/redirect"), "").await;
    assert_eq!(s, 400, "{b}");
    assert_eq!(b["error"], "blocked_target", "{b}");
    assert!(b.get("imageBase64").is_none());

    assert_eq!(e.canary.hits(), 0, "the refused canary saw nothing at all");

    // A redirect to a closed port on the allowed address: navigation failed, 502.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let (s, b) = e
        .shot("/api/shot", &format!("http://127.0.0.1:{closed}/"), "")
        .await;
    assert_eq!(s, 502, "{b}");
    assert_eq!(b["error"], "navigation_failed", "{b}");

    // fullPage: a 10,000 px page is clipped at 4,000 px; a short one keeps the viewport.
    let (s, b) = e
        .shot(
            "/api/shot",
            &e.pages.url("/tall"),
            "&fullPage=true&width=400&height=300",
        )
        .await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(
        (b["width"].as_u64(), b["height"].as_u64()),
        (Some(400), Some(4000))
    );
    let png = pages::decode_image(b["imageBase64"].as_str().unwrap());
    assert_eq!(pages::png_size(&png), (400, 4000));
    let (s, b) = e
        .shot(
            "/api/shot",
            &e.pages.url("/plain"),
            "&fullPage=true&width=400&height=300",
        )
        .await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["height"], 300);

    // JPEG when asked.
    let (s, b) = e
        .shot(
            "/api/shot",
            &e.pages.url("/plain"),
            "&format=JPEG&width=320&height=240",
        )
        .await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["mimeType"], "image/jpeg");
    let jpg = pages::decode_image(b["imageBase64"].as_str().unwrap());
    assert_eq!(pages::jpeg_size(&jpg), (320, 240));

    // Fresh context per call: what one render stored is gone for the next.
    for _ in 0..2 {
        let (s, b) = e.shot("/api/shot", &e.pages.url("/state"), "").await;
        assert_eq!(s, 200, "{b}");
        assert_eq!(b["title"], "cookie=[] storage=[]", "{b}");
    }

    e.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_and_refused_urls_never_start_a_browser() {
    let e = env().await;
    let plain = e.pages.url("/plain");
    for (extra, field) in [
        ("&width=319", "width"),
        ("&width=1921", "width"),
        ("&height=239", "height"),
        ("&height=2001", "height"),
        ("&delayMs=3001", "delayMs"),
        ("&delayMs=-1", "delayMs"),
        ("&format=gif", "format"),
        ("&fullPage=maybe", "fullPage"),
    ] {
        let (s, b) = e.shot("/api/shot", &plain, extra).await;
        assert_eq!(s, 400, "{extra}: {b}");
        assert!(b.to_string().contains(field), "{extra}: {b}");
    }
    for url in [
        "http://127.0.0.2/".to_string(),
        "http://localhost/".into(),
        "http://169.254.169.254/latest/meta-data/".into(),
        "file:///etc/passwd".into(),
        format!("http://2130706434:{}/", e.canary.addr.port()),
    ] {
        let (s, b) = e.shot("/api/shot", &url, "").await;
        assert_eq!(s, 400, "{url}: {b}");
    }
    // The bounds themselves are accepted (checked without a browser: the URL is refused).
    let (s, b) = e
        .shot(
            "/api/shot",
            "http://127.0.0.2/",
            "&width=320&height=2000&delayMs=3000",
        )
        .await;
    assert_eq!(
        (s, b["error"].as_str()),
        (400, Some("blocked_target")),
        "{b}"
    );
    assert_eq!(e.canary.hits(), 0);
    for p in e.browsers.pools() {
        assert_eq!(
            p.sessions_started(),
            0,
            "no browser was started for bad input"
        );
    }
    e.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn size_caps_fallback_and_navigation_timeout() {
    let e = env().await;
    // Noise as PNG is far over a 60 kB cap; as JPEG of a small viewport it fits: fallback.
    let (s, b) = e
        .shot(
            "/api/shot-small",
            &e.pages.url("/plain"),
            "&width=320&height=240",
        )
        .await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["mimeType"], "image/png", "a small PNG stays a PNG: {b}");
    assert!(b.get("fallback").is_none());

    let (s, b) = e
        .shot(
            "/api/shot-small",
            &e.pages.url("/noise"),
            "&width=320&height=240",
        )
        .await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["mimeType"], "image/jpeg", "{b}");
    assert!(b["fallback"].as_str().unwrap().contains("JPEG"), "{b}");
    assert!(b["bytes"].as_u64().unwrap() <= 60_000);
    let jpg = pages::decode_image(b["imageBase64"].as_str().unwrap());
    assert_eq!(pages::jpeg_size(&jpg), (320, 240));

    // Too large even as JPEG: 413.
    let (s, b) = e
        .shot(
            "/api/shot-small",
            &e.pages.url("/noise"),
            "&width=1920&height=2000",
        )
        .await;
    assert_eq!(s, 413, "{b}");
    assert_eq!(b["error"], "image_too_large");

    // The shipped cap (3 MB): a 1920×2000 noise PNG is over it and comes back as JPEG.
    let (s, b) = e
        .shot(
            "/api/shot",
            &e.pages.url("/noise"),
            "&width=1920&height=2000",
        )
        .await;
    match s {
        200 => {
            assert_eq!(b["mimeType"], "image/jpeg", "{b}");
            assert!(b["fallback"].is_string(), "{b}");
            assert!(b["bytes"].as_u64().unwrap() <= 3_000_000);
        }
        _ => panic!("expected the JPEG fallback at the 3 MB cap, got {s}: {b}"),
    }

    // A page that never finishes loading: 504 at the route's deadline.
    let t = std::time::Instant::now();
    let (s, b) = e.shot("/api/shot-quick", &e.pages.url("/slow"), "").await;
    assert_eq!(s, 504, "{b}");
    assert_eq!(b["error"], "navigation_timeout");
    assert!(t.elapsed() < Duration::from_secs(15), "{:?}", t.elapsed());
    // The session that timed out is replaced; the next render works.
    let (s, b) = e.shot("/api/shot", &e.pages.url("/plain"), "").await;
    assert_eq!(s, 200, "{b}");
    e.server.shutdown().await;
}

/// A service worker's own requests go through the guarded proxy too: the worker of a page
/// fetches the refused canary; the proxy refuses it and the canary sees nothing. (The worker's
/// no-cors fetch resolves either way, on the proxy's refusal page: its outcome only proves the
/// worker ran.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_worker_cannot_reach_a_refused_address() {
    let e = env().await;
    // The proxy starts with the first render; read its refusals from there on.
    let (s, b) = e.shot("/api/shot", &e.pages.url("/plain"), "").await;
    assert_eq!(s, 200, "{b}");
    let proxy = e.browsers.proxy_if_started().expect("proxy started");
    let refused_before = proxy.stats().refused.load(Ordering::SeqCst);
    let (s, b) = e
        .shot("/api/shot", &e.pages.url("/sw"), "&delayMs=2500")
        .await;
    assert_eq!(s, 200, "{b}");
    let title = b["title"].as_str().unwrap_or_default();
    assert!(title.starts_with("SW fetch:"), "the worker ran: {b}");
    assert!(
        proxy.stats().refused.load(Ordering::SeqCst) > refused_before,
        "the proxy refused the worker's request"
    );
    assert_eq!(e.canary.hits(), 0, "the canary saw nothing");
    e.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_leaves_no_browser_process_behind() {
    let e = env().await;
    let (s, b) = e.shot("/api/shot", &e.pages.url("/plain"), "").await;
    assert_eq!(s, 200, "{b}");
    let pools = e.browsers.pools();
    let running: usize = pools
        .iter()
        .map(|p| paycall::browser::session::processes_naming(p.profile_root()).len())
        .sum();
    assert!(
        running >= 1,
        "chromium runs under the pool's profile while warm"
    );
    let roots: Vec<_> = pools
        .iter()
        .map(|p| p.profile_root().to_path_buf())
        .collect();
    e.server.shutdown().await;
    for root in roots {
        let mut left = paycall::browser::session::processes_naming(&root);
        for _ in 0..50 {
            if left.is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            left = paycall::browser::session::processes_naming(&root);
        }
        assert!(left.is_empty(), "processes left behind: {left:?}");
        assert!(!root.exists(), "profiles removed");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_chromium_the_service_starts_and_the_route_answers_503() {
    let canary = upstream::canary("127.0.0.2").await;
    let pages = pages::start(canary.addr).await;
    let dir = support::server::write_config(
        &routes_yaml(Some("/nonexistent/chromium")),
        &[("shot", PIPELINE)],
    );
    let config = support::server::load(&dir).unwrap_or_else(|e| panic!("{e}"));
    let server = support::server::start(config).await;
    let (s, _, status) = support::server::get_json(&server.url("/status")).await;
    assert_eq!(s, 200);
    let route = status["routes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["path"] == "/api/shot")
        .unwrap()
        .clone();
    assert_eq!(route["ready"], false, "{route}");
    let reason = route["reason"].as_str().unwrap();
    assert!(
        reason.contains("chromium") && reason.contains("chromium-driver"),
        "{reason}"
    );
    let url = server.url(&format!("/api/shot?url={}", enc(&pages.url("/plain"))));
    let (s, _, b) = support::server::get_json(&url).await;
    assert_eq!(s, 503, "{b}");
    assert_eq!(b["error"], "screenshot_unavailable");
    assert!(b["message"]
        .as_str()
        .unwrap()
        .contains("apt-get install chromium chromium-driver"));
    assert_eq!(pages.hits(), 0);
    server.shutdown().await;
}

/// One session, warmed at start, recycled after two renders, a queue of one: a third
/// concurrent caller is told the renderer is busy (503, with Retry-After).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pool_warms_recycles_and_bounds_its_queue() {
    let canary = upstream::canary("127.0.0.2").await;
    let pages = pages::start(canary.addr).await;
    let yaml = format!(
        "{}guard:\n  allow_cidrs: [\"127.0.0.1/32\"]\nroutes:\n  - path: /api/shot\n    methods: [GET]\n    summary: shot\n    pipeline: shot\n    caps:\n      screenshot: {{ pool_size: 1, queue: 1, max_uses: 2, warm: 1 }}\n{INPUT}",
        support::server::service_yaml(support::server::NO_FACILITATOR, 30, 10, &[])
    );
    let dir = support::server::write_config(&yaml, &[("shot", PIPELINE)]);
    let config = support::server::load(&dir).unwrap_or_else(|e| panic!("{e}"));
    let app = support::server::build(config).unwrap_or_else(|e| panic!("{e}"));
    let browsers = app.services.get::<Browsers>().expect("browser service");
    let server = support::server::start_app(app).await;
    let pool = browsers.pools().pop().expect("one pool");

    // warm: 1 starts a session with the server, before any call.
    for _ in 0..300 {
        if pool.idle_sessions() == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(pool.idle_sessions(), 1, "a warm session is waiting");
    assert_eq!(pool.sessions_started(), 1);

    let e = |path: &str| server.url(&format!("/api/shot?url={}", enc(&pages.url(path))));
    let get = |url: String| async move {
        let resp = reqwest::Client::builder()
            .no_proxy()
            .timeout(Duration::from_secs(60))
            .build()
            .unwrap()
            .get(url)
            .send()
            .await
            .expect("request");
        let status = resp.status().as_u16();
        let retry = resp.headers().get("retry-after").is_some();
        (status, retry, support::server::json_of(resp).await)
    };

    // Three at once with one session and a queue of one: the first renders, the second waits
    // its turn, the third is turned away.
    let (a, b, c) = tokio::join!(
        get(e("/delay?ms=1500")),
        async {
            tokio::time::sleep(Duration::from_millis(300)).await;
            get(e("/plain")).await
        },
        async {
            tokio::time::sleep(Duration::from_millis(600)).await;
            get(e("/plain")).await
        }
    );
    assert_eq!(a.0, 200, "{}", a.2);
    assert_eq!(b.0, 200, "the queued caller got the session next: {}", b.2);
    assert_eq!((c.0, c.1), (503, true), "{}", c.2);
    assert_eq!(c.2["error"], "renderer_busy");

    // Two uses of the warm session, then it is recycled (just after the reply): the next
    // render starts a new one.
    for _ in 0..100 {
        if pool.sessions_closed() == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(pool.sessions_closed(), 1, "recycled after max_uses");
    assert_eq!(pool.sessions_started(), 1);
    let (s, _, body) = get(e("/plain")).await;
    assert_eq!(s, 200, "{body}");
    assert_eq!(pool.sessions_started(), 2);
    server.shutdown().await;
    assert!(paycall::browser::session::processes_naming(pool.profile_root()).is_empty());
}

/// Names are resolved by the service's resolver inside the proxy, never by chromium: a page on
/// a name that resolves to the allowed address renders, a name resolving to the canary's
/// address is refused as the page itself (400) and as a sub-request (the canary sees nothing).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_are_resolved_and_judged_by_the_guard_not_by_the_browser() {
    use paycall::net::StaticResolver;
    let canary = upstream::canary("127.0.0.2").await;
    let pages = pages::start(canary.addr).await;
    let ip = |s: &str| s.parse::<std::net::IpAddr>().unwrap();
    let resolver = StaticResolver::new()
        .with("pages.test", [ip("127.0.0.1")])
        .with("private.test", [ip("127.0.0.2")])
        .with("rebind.test", [ip("127.0.0.1"), ip("127.0.0.2")]);
    let dir = support::server::write_config(&routes_yaml(None), &[("shot", PIPELINE)]);
    let config = support::server::load(&dir).unwrap_or_else(|e| panic!("{e}"));
    let services =
        paycall::server::services::build_with_resolver(&config, std::sync::Arc::new(resolver))
            .expect("services");
    let app = paycall::server::build_app_with(config, services, &support::server::registry())
        .unwrap_or_else(|e| panic!("{e}"));
    let server = support::server::start_app(app).await;
    let port = pages.addr.port();
    let cport = canary.addr.port();
    let shot = |page: String| {
        let url = server.url(&format!("/api/shot?url={}", enc(&page)));
        async move { support::server::get_json(&url).await }
    };

    let (s, _, b) = shot(format!("http://pages.test:{port}/plain")).await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["title"], "Plain page");
    assert_eq!(b["finalUrl"], format!("http://pages.test:{port}/plain"));

    for name in ["private.test", "rebind.test"] {
        let (s, _, b) = shot(format!("http://{name}:{cport}/")).await;
        assert_eq!(
            (s, b["error"].as_str()),
            (400, Some("blocked_target")),
            "{name}: {b}"
        );
    }
    let (s, _, b) = shot(format!(
        "http://pages.test:{port}/redirect?to={}",
        enc(&format!("http://private.test:{cport}/"))
    ))
    .await;
    assert_eq!(
        (s, b["error"].as_str()),
        (400, Some("blocked_target")),
        "{b}"
    );
    let (s, _, b) = shot(format!(
        "http://pages.test:{port}/websocket?to={}",
        enc(&format!("ws://rebind.test:{cport}/"))
    ))
    .await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["title"], "WebSocket error", "{b}");
    assert_eq!(canary.hits(), 0, "the canary saw nothing");
    server.shutdown().await;
}

/// Issue 21: a page that allocates until it dies took the browser's processes to ~4.7 GB. The
/// render's watchdog kills the session's chromium past 512 MB (summed PSS): 502 render_failed,
/// not charged, well within the navigation deadline; the pool then renders the next page.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_that_eats_memory_is_stopped_at_the_cap() {
    let e = env().await;
    // Sample the pool's chromium memory while the eater runs.
    let root: Vec<std::path::PathBuf> = e
        .browsers
        .pools()
        .iter()
        .map(|p| p.profile_root().to_path_buf())
        .collect();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let peak = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let sampler = {
        let (stop, peak) = (stop.clone(), peak.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                let used: u64 = root
                    .iter()
                    .map(|r| paycall::browser::session::profile_memory_bytes(r))
                    .sum();
                peak.fetch_max(used, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(50));
            }
        })
    };
    let t = std::time::Instant::now();
    let (s, b) = e.shot("/api/shot", &e.pages.url("/eat"), "").await;
    let took = t.elapsed();
    stop.store(true, Ordering::SeqCst);
    sampler.join().unwrap();
    let peak_mb = peak.load(Ordering::SeqCst) >> 20;
    eprintln!("memory eater: {s} in {took:?}, browser peak {peak_mb} MB: {b}");
    assert_eq!(
        (s, b["error"].as_str()),
        (502, Some("render_failed")),
        "{b}"
    );
    assert!(b["message"].as_str().unwrap().contains("MB"), "{b}");
    assert!(took < Duration::from_secs(15), "{took:?}");
    // The watchdog looks every 100 ms; one more round of allocations may land before it kills.
    assert!(peak_mb < 1024, "browser peak {peak_mb} MB");
    let (s, b) = e.shot("/api/shot", &e.pages.url("/plain"), "").await;
    assert_eq!(s, 200, "{b}");
}
