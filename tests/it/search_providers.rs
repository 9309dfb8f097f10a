//! /api/search through the real server with the SHIPPED routes.yaml (its input schema, caps and
//! pipeline), made free for these tests by dropping the payment stages (billing has its own
//! test, search_pay.rs). The providers are a local server answering in Brave's, Serper's and
//! SearXNG's recorded shapes (fixtures/search/); result pages come from the local upstream on
//! 127.0.0.1; refused result URLs point at a canary on 127.0.0.2 that must see nothing.

use crate::support;
use support::upstream;

use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};

use paycall::config::{self, Config};
use support::search::{MockProvider, BRAVE_KEY, SERPER_KEY};
use support::server::TestServer;

use support::server::enc;

/// The shipped config, upstreams pointed at the mock, 127.0.0.1 allowed, the search route's
/// caps replaced by `caps`.
fn shipped(mock_base: &str, searxng_base: &str, caps: Value) -> Config {
    let routes = Path::new(env!("CARGO_MANIFEST_DIR")).join("routes.yaml");
    let (b, s) = (mock_base.to_string(), searxng_base.to_string());
    let env = move |k: &str| -> Option<String> {
        match k {
            "PAYCALL_FACILITATOR_URL" => Some(support::server::NO_FACILITATOR.into()),
            "PAYCALL_ALLOW_CIDRS" => Some("127.0.0.1/32".into()),
            "PAYCALL_LEDGER_URL" => Some("sqlite::memory:".into()),
            "PAYCALL_UPSTREAM_BASE_RPC" => Some("http://127.0.0.1:9/".into()),
            "PAYCALL_UPSTREAM_BRAVE" | "PAYCALL_UPSTREAM_SERPER" => Some(b.clone()),
            "PAYCALL_UPSTREAM_SEARXNG" => Some(s.clone()),
            other => support::server::test_env(other),
        }
    };
    let mut cfg = config::load_with_env(&routes, &env).unwrap_or_else(|e| panic!("{e}"));
    let route = cfg
        .routes
        .iter_mut()
        .find(|r| r.name == "search")
        .expect("the shipped config has /api/search");
    route.caps.get_mut("search").expect("search caps").0 = caps;
    cfg
}

/// As `shipped`, with the route made free (payment stages dropped) for functional tests.
async fn free_server(mock: &MockProvider, caps: Value) -> TestServer {
    let mut cfg = shipped(&mock.base, &mock.searxng_base, caps);
    let route = cfg.routes.iter_mut().find(|r| r.name == "search").unwrap();
    route.price = None;
    let pipeline = cfg.pipelines.get_mut("search").expect("search pipeline");
    pipeline.stages.retain(|s| s.name == "search");
    support::server::start(cfg).await
}

fn caps(provider: &str) -> Value {
    match provider {
        "brave" => json!({ "provider": "brave", "api_key": BRAVE_KEY }),
        "serper" => json!({ "provider": "serper", "api_key": SERPER_KEY }),
        _ => json!({ "provider": "searxng" }),
    }
}

async fn search(server: &TestServer, query: &str) -> (u16, reqwest::header::HeaderMap, Value) {
    support::server::get_json(&server.url(&format!("/api/search?{query}"))).await
}

fn content(r: &Value) -> &str {
    r["content"].as_str().unwrap_or("")
}

const SPEC_FIELDS: &[&str] = &[
    "ok",
    "query",
    "provider",
    "n",
    "resultCount",
    "fetchedOk",
    "elapsedMs",
    "results",
    "source",
    "asOf",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_provider_format_with_partial_page_failures() {
    let canary = upstream::canary("127.0.0.2").await;
    let up = upstream::start(&canary.url()).await;
    let mock = support::search::start().await;
    mock.scenario(
        "mixed",
        &[
            up.url("/article"),
            canary.url(),
            up.url("/missing"),
            up.url("/png"),
            up.url("/notes.md"),
            up.url("/echo"),
        ],
    );
    for provider in ["brave", "serper", "searxng"] {
        let server = free_server(&mock, caps(provider)).await;
        mock.clear();
        let freshness = if provider == "searxng" {
            "month"
        } else {
            "week"
        };
        let country = if provider == "searxng" {
            String::new()
        } else {
            "&country=de".into()
        };
        let (s, _, b) = search(
            &server,
            &format!(
                "q={}&n=5&lang=en&freshness={freshness}{country}",
                enc("mixed results x402")
            ),
        )
        .await;
        assert_eq!(s, 200, "{provider}: {b}");
        for f in SPEC_FIELDS {
            assert!(b.get(*f).is_some(), "{provider}: field {f} missing: {b}");
        }
        assert_eq!(b["ok"], true);
        assert_eq!(b["query"], "mixed results x402");
        assert_eq!(b["provider"], provider);
        assert_eq!(b["n"], 5);
        assert_eq!(b["resultCount"], 5);
        assert_eq!(b["fetchedOk"], 2, "{provider}: {b}");
        assert_eq!(b["source"], "search");
        let r = b["results"].as_array().unwrap();
        for (i, e) in r.iter().enumerate() {
            assert_eq!(e["rank"], i + 1);
            assert_eq!(e["format"], "markdown");
            assert!(e["title"].as_str().is_some_and(|t| !t.is_empty()), "{e}");
            assert!(e["snippet"].as_str().is_some(), "{e}");
            assert!(e["url"].is_string() && e["finalUrl"].is_string(), "{e}");
            assert!(e["truncated"].is_boolean(), "{e}");
            if e["ok"] == true {
                assert!(e.get("error").is_none(), "{e}");
            } else {
                assert!(
                    e.get("content").is_none(),
                    "a failed page has no content: {e}"
                );
                assert!(e["error"]["code"].is_string() && e["error"]["message"].is_string());
            }
        }
        // 1: the article as markdown, boilerplate gone.
        assert_eq!(r[0]["ok"], true);
        assert_eq!(r[0]["status"], 200);
        assert!(content(&r[0]).contains("The harbour was quiet that morning"));
        assert!(!content(&r[0]).contains("Copyright footer"));
        assert_eq!(r[0]["truncated"], false);
        // 2: the canary: refused by the guard, never fetched.
        assert_eq!(r[1]["ok"], false);
        assert_eq!(r[1]["error"]["code"], "blocked_target", "{}", r[1]);
        assert!(r[1]["status"].is_null());
        // 3: a 404 page.
        assert_eq!(r[2]["error"]["code"], "upstream_status");
        assert_eq!(r[2]["status"], 404);
        // 4: an image.
        assert_eq!(r[3]["error"]["code"], "unsupported_content_type");
        // 5: markdown passes through.
        assert_eq!(r[4]["ok"], true);
        assert!(content(&r[4]).contains("- one"), "{}", r[4]);
        // Not asked for (n=5); the provider's sixth result is left out.
        assert_eq!(r.len(), 5);

        // The provider got the request in its own format.
        let seen = mock.last();
        match provider {
            "brave" => {
                assert_eq!(seen.method, "GET");
                assert_eq!(seen.path, "/res/v1/web/search");
                assert_eq!(seen.headers["x-subscription-token"], BRAVE_KEY);
                assert_eq!(seen.param("q"), Some("mixed results x402"));
                assert_eq!(seen.param("count"), Some("5"));
                assert_eq!(seen.param("country"), Some("DE"));
                assert_eq!(seen.param("search_lang"), Some("en"));
                assert_eq!(seen.param("freshness"), Some("pw"));
            }
            "serper" => {
                assert_eq!(seen.method, "POST");
                assert_eq!(seen.path, "/search");
                assert_eq!(seen.headers["x-api-key"], SERPER_KEY);
                assert_eq!(
                    seen.json(),
                    json!({"q": "mixed results x402", "num": 5, "gl": "de", "hl": "en", "tbs": "qdr:w"})
                );
            }
            _ => {
                assert_eq!(seen.method, "GET");
                assert_eq!(seen.path, "/sx/search", "the base URL's path is kept");
                assert_eq!(seen.param("format"), Some("json"));
                assert_eq!(seen.param("language"), Some("en"));
                assert_eq!(seen.param("time_range"), Some("month"));
                assert!(seen.headers.get("x-api-key").is_none());
            }
        }
        assert!(
            seen.headers.get("cookie").is_none(),
            "no cookies to the provider"
        );
        server.shutdown().await;
    }
    assert_eq!(canary.hits(), 0, "the canary saw nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_page_never_holds_the_others_and_all_failing_pages_still_answer() {
    let canary = upstream::canary("127.0.0.2").await;
    let up = upstream::start(&canary.url()).await;
    let mock = support::search::start().await;
    let mut c = caps("brave");
    c["page_timeout_ms"] = json!(1500);
    let server = free_server(&mock, c).await;

    mock.scenario(
        "slow",
        &[
            up.url("/slow?ms=20000"),
            up.url("/article#untitled"),
            up.url("/hello"),
        ],
    );
    let started = Instant::now();
    let (s, _, b) = search(&server, "q=slow+one").await;
    let took = started.elapsed();
    assert_eq!(s, 200, "{b}");
    assert!(
        took < Duration::from_millis(1500 + 2000 + 2500),
        "bounded by the page deadline: {took:?}"
    );
    let r = b["results"].as_array().unwrap();
    assert_eq!(r[0]["ok"], false);
    assert_eq!(r[0]["error"]["code"], "upstream_timeout", "{}", r[0]);
    assert_eq!(r[1]["ok"], true);
    assert_eq!(
        r[1]["title"], "Upstream article",
        "an untitled result takes the page's title"
    );
    assert_eq!(r[2]["ok"], true);
    assert_eq!(content(&r[2]), "hello");
    assert_eq!(b["fetchedOk"], 2);
    assert_eq!(
        up.hits.slow.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "fetched concurrently, once"
    );

    // Every page fails: the search itself worked, so it answers 200 with fetchedOk 0.
    mock.scenario(
        "allfail",
        &[up.url("/missing"), canary.url(), up.url("/server-error")],
    );
    let (s, _, b) = search(&server, "q=allfail").await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["resultCount"], 3);
    assert_eq!(b["fetchedOk"], 0);
    assert!(b["results"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["ok"] == false && r["error"]["code"].is_string()));
    assert_eq!(b["results"][2]["status"], 503);
    assert_eq!(canary.hits(), 0);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guard_refused_result_urls_are_reported_and_never_fetched() {
    let canary = upstream::canary("127.0.0.2").await;
    let up = upstream::start(&canary.url()).await;
    let mock = support::search::start().await;
    let port = canary.addr.port();
    mock.scenario(
        "refused",
        &[
            format!("http://127.0.0.2:{port}/secret"),
            format!("http://[::ffff:127.0.0.2]:{port}/"),
            format!("http://2130706434:{port}/"),
            format!("http://localhost:{port}/"),
            "http://169.254.169.254/latest/meta-data/".into(),
        ],
    );
    mock.scenario(
        "odd",
        &[
            up.url("/to-canary"),
            "ftp://example.com/file".into(),
            "not a url".into(),
            up.url("/hello"),
        ],
    );
    let server = free_server(&mock, caps("serper")).await;
    let (s, _, b) = search(&server, "q=refused&n=5").await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["fetchedOk"], 0);
    for r in b["results"].as_array().unwrap() {
        assert_eq!(r["ok"], false, "{r}");
        assert_eq!(r["error"]["code"], "blocked_target", "{r}");
        assert!(
            r["error"]["message"]
                .as_str()
                .unwrap()
                .contains("not fetched"),
            "{r}"
        );
    }
    let (s, _, b) = search(&server, "q=odd&n=4").await;
    assert_eq!(s, 200, "{b}");
    let r = b["results"].as_array().unwrap();
    assert_eq!(
        r[0]["error"]["code"], "blocked_target",
        "a redirect to the canary: {}",
        r[0]
    );
    assert_eq!(r[1]["error"]["code"], "bad_url", "{}", r[1]);
    assert_eq!(r[2]["error"]["code"], "bad_url", "{}", r[2]);
    assert_eq!(r[3]["ok"], true);
    assert_eq!(b["fetchedOk"], 1);
    assert_eq!(canary.hits(), 0, "the canary saw nothing");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_results_and_provider_failures_say_which() {
    let mock = support::search::start().await;
    let server = free_server(&mock, caps("brave")).await;

    let (s, _, b) = search(&server, "q=none+at+all").await;
    assert_eq!((s, b["error"].as_str()), (404, Some("no_results")), "{b}");
    assert!(b["message"].as_str().unwrap().contains("brave"), "{b}");

    let (s, h, b) = search(&server, "q=ratelimit").await;
    assert_eq!(
        (s, b["error"].as_str()),
        (503, Some("provider_rate_limited")),
        "{b}"
    );
    assert_eq!(h["retry-after"], "7");
    assert!(b["message"].as_str().unwrap().contains("brave"));

    let (s, _, b) = search(&server, "q=boom").await;
    assert_eq!(
        (s, b["error"].as_str()),
        (503, Some("provider_error")),
        "{b}"
    );
    assert!(b["message"].as_str().unwrap().contains("HTTP 500"), "{b}");

    // The provider refusing the caller's parameters is the caller's 400, not an outage.
    let (s, _, b) = search(&server, "q=invalid&country=zz").await;
    assert_eq!(
        (s, b["error"].as_str()),
        (400, Some("rejected_by_provider")),
        "{b}"
    );
    assert!(
        b["message"]
            .as_str()
            .unwrap()
            .contains("Unable to validate"),
        "{b}"
    );

    let (s, _, b) = search(&server, "q=garbage").await;
    assert_eq!(
        (s, b["error"].as_str()),
        (503, Some("provider_error")),
        "{b}"
    );
    server.shutdown().await;

    // A key the provider refuses.
    let server = free_server(&mock, json!({"provider": "brave", "api_key": "wrong-key"})).await;
    let (s, _, b) = search(&server, "q=anything").await;
    assert_eq!(
        (s, b["error"].as_str()),
        (503, Some("provider_unauthorized")),
        "{b}"
    );
    server.shutdown().await;

    // Serper's error body is quoted.
    let server = free_server(&mock, caps("serper")).await;
    let (s, _, b) = search(&server, "q=credits").await;
    assert_eq!(
        (s, b["error"].as_str()),
        (503, Some("provider_error")),
        "{b}"
    );
    assert!(
        b["message"]
            .as_str()
            .unwrap()
            .contains("Not enough credits"),
        "{b}"
    );
    let (s, _, b) = search(&server, "q=none").await;
    assert_eq!(s, 404, "{b}");
    server.shutdown().await;

    // SearXNG: no results, and "no results because every engine failed".
    let server = free_server(&mock, caps("searxng")).await;
    let (s, _, b) = search(&server, "q=none").await;
    assert_eq!(s, 404, "{b}");
    let (s, _, b) = search(&server, "q=engines").await;
    assert_eq!(
        (s, b["error"].as_str()),
        (503, Some("provider_error")),
        "{b}"
    );
    assert!(b["message"].as_str().unwrap().contains("duckduckgo"), "{b}");
    server.shutdown().await;

    // Unconfigured: no key in the environment. /status says why the route is not ready.
    let server = free_server(
        &mock,
        json!({"provider": "serper", "api_key_env": "PAYCALL_TEST_SEARCH_KEY_NEVER_SET"}),
    )
    .await;
    mock.clear();
    let (s, _, b) = search(&server, "q=anything").await;
    assert_eq!(
        (s, b["error"].as_str()),
        (503, Some("provider_unconfigured")),
        "{b}"
    );
    assert!(
        b["message"]
            .as_str()
            .unwrap()
            .contains("PAYCALL_TEST_SEARCH_KEY_NEVER_SET"),
        "{b}"
    );
    assert_eq!(mock.count(), 0, "an unconfigured provider is not called");
    let (_, _, st) = support::server::get_json(&server.url("/status")).await;
    let route = st["routes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "search")
        .unwrap()
        .clone();
    assert_eq!(route["ready"], false, "{route}");
    assert!(route["reason"]
        .as_str()
        .unwrap()
        .contains("PAYCALL_TEST_SEARCH_KEY_NEVER_SET"));
    server.shutdown().await;

    // Provider down (nothing listens) and provider too slow.
    let dead = MockProviderless::new();
    let mut cfg = shipped(&dead.base, &dead.base, caps("brave"));
    let route = cfg.routes.iter_mut().find(|r| r.name == "search").unwrap();
    route.price = None;
    cfg.pipelines
        .get_mut("search")
        .unwrap()
        .stages
        .retain(|s| s.name == "search");
    let server = support::server::start(cfg).await;
    let (s, _, b) = search(&server, "q=anything").await;
    assert_eq!(
        (s, b["error"].as_str()),
        (503, Some("provider_unavailable")),
        "{b}"
    );
    assert!(
        b["message"].as_str().unwrap().contains("unreachable"),
        "{b}"
    );
    server.shutdown().await;

    let mut c = caps("brave");
    c["provider_timeout_ms"] = json!(500);
    let server = free_server(&mock, c).await;
    let started = Instant::now();
    let (s, _, b) = search(&server, "q=slowprovider").await;
    assert_eq!(
        (s, b["error"].as_str()),
        (503, Some("provider_unavailable")),
        "{b}"
    );
    assert!(b["message"].as_str().unwrap().contains("500 ms"), "{b}");
    assert!(started.elapsed() < Duration::from_secs(5));
    server.shutdown().await;
}

/// A base URL where nothing listens (port 9 on loopback is closed here).
struct MockProviderless {
    base: String,
}

impl MockProviderless {
    fn new() -> Self {
        MockProviderless {
            base: "http://127.0.0.1:9".into(),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn n_and_q_bounds_and_provider_options() {
    let canary = upstream::canary("127.0.0.2").await;
    let up = upstream::start(&canary.url()).await;
    let mock = support::search::start().await;
    let six: Vec<String> = (0..6).map(|i| up.url(&format!("/hello?{i}"))).collect();
    mock.scenario("many", &six);
    let server = free_server(&mock, caps("searxng")).await;

    // n: default 3; 1 and 5 at the edges; SearXNG's longer list is cut to n.
    for (q, want) in [("", 3), ("&n=1", 1), ("&n=5", 5)] {
        let before = up.total();
        let (s, _, b) = search(&server, &format!("q=many{q}")).await;
        assert_eq!(s, 200, "{q}: {b}");
        assert_eq!(b["n"], want);
        assert_eq!(b["resultCount"], want, "{q}");
        assert_eq!(b["fetchedOk"], want, "{q}");
        assert_eq!(
            up.total() - before,
            want,
            "{q}: only the top n pages are fetched"
        );
    }
    // Bad n, bad or missing q, bad options: 400, the provider never asked.
    mock.clear();
    let long = "a".repeat(301);
    let cases: Vec<(String, &str)> = vec![
        ("q=many&n=0".into(), "n"),
        ("q=many&n=6".into(), "n"),
        ("q=many&n=-1".into(), "n"),
        ("q=many&n=abc".into(), "n"),
        ("q=many&n=2.5".into(), "n"),
        ("n=2".into(), "q"),
        ("q=".into(), "q"),
        (format!("q={}", enc("   ")), "q"),
        (format!("q={long}"), "q"),
        ("q=many&freshness=hour".into(), "freshness"),
        ("q=many&country=usa".into(), "country"),
        ("q=many&lang=english!".into(), "lang"),
        ("q=many&country=us".into(), "searxng"),
        ("q=many&freshness=week".into(), "searxng"),
    ];
    for (q, names) in &cases {
        let (s, _, b) = search(&server, q).await;
        assert_eq!(s, 400, "{q}: {b}");
        assert!(b["error"].is_string(), "{q}: {b}");
        assert!(
            b["message"].as_str().unwrap().contains(names),
            "{q}: the message names {names}: {b}"
        );
    }
    assert_eq!(mock.count(), 0, "bad input never reaches the provider");

    // q at exactly 300 characters passes, counted in characters, not bytes.
    let a300 = "a".repeat(300);
    mock.scenario(&a300, &six);
    mock.scenario("ééé", &six);
    for q in [a300.clone(), format!("ééé {}", "é".repeat(296))] {
        let (s, _, b) = search(&server, &format!("q={}&n=1", enc(&q))).await;
        assert_eq!(s, 200, "{b}");
        assert_eq!(b["query"].as_str().unwrap().chars().count(), 300);
    }
    assert_eq!(mock.count(), 2, "300-character queries reach the provider");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn page_caps_cut_and_mark_truncated() {
    let canary = upstream::canary("127.0.0.2").await;
    let up = upstream::start(&canary.url()).await;
    let mock = support::search::start().await;
    let big = upstream::chunked(300_000).await;
    mock.scenario(
        "caps",
        &[
            up.url("/sized?n=12000"),
            up.url("/sized?n=12001"),
            up.url("/sized?n=250000"),
            big,
        ],
    );
    let server = free_server(&mock, caps("brave")).await;
    let (s, _, b) = search(&server, "q=caps&n=4").await;
    assert_eq!(s, 200, "{b}");
    let r = b["results"].as_array().unwrap();
    let chars = |i: usize| content(&r[i]).chars().count();
    assert_eq!(
        (chars(0), r[0]["truncated"].as_bool()),
        (12_000, Some(false))
    );
    assert_eq!(
        (chars(1), r[1]["truncated"].as_bool()),
        (12_000, Some(true))
    );
    // Over 200 KB declared or streamed: cut (not refused), content at 12,000 characters.
    for i in [2, 3] {
        assert_eq!(r[i]["ok"], true, "{}", r[i]);
        assert_eq!(
            (chars(i), r[i]["truncated"].as_bool()),
            (12_000, Some(true))
        );
    }
    assert_eq!(b["fetchedOk"], 4);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openapi_documents_the_options_and_the_demo_twin_is_sane() {
    let canary = upstream::canary("127.0.0.2").await;
    let up = upstream::start(&canary.url()).await;
    let mock = support::search::start().await;
    // The demo's fixed query ("x402 payment protocol") starts with x402.
    mock.scenario(
        "x402",
        &[up.url("/article"), up.url("/hello"), canary.url()],
    );
    let cfg = shipped(&mock.base, &mock.searxng_base, caps("brave"));
    let server = support::server::start(cfg).await;

    let (s, _, doc) = support::server::get_json(&server.url("/openapi.json")).await;
    assert_eq!(s, 200);
    let op = &doc["paths"]["/api/search"]["get"];
    let params: Vec<&str> = op["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    for p in ["q", "n", "country", "lang", "freshness"] {
        assert!(params.contains(&p), "{p} documented: {params:?}");
    }
    let q = op["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "q")
        .unwrap();
    assert_eq!(q["required"], true);
    assert_eq!(q["schema"]["maxLength"], 300, "{q}");
    for status in ["400", "402", "404", "503"] {
        assert!(op["responses"].get(status).is_some(), "{status}: {op}");
    }

    // The unpaid paid route: 402, the provider never asked.
    let r = support::server::client()
        .get(server.url("/api/search?q=x402"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 402);
    assert_eq!(mock.count(), 0);

    // The demo: the fixed query, free, cached (one provider call for two demo requests).
    let (s, _, d) = support::server::get_json(&server.url("/api/demo/search")).await;
    assert_eq!(s, 200, "{d}");
    assert_eq!(d["demo"], true);
    assert_eq!(d["sample_status"], 200, "{d}");
    assert_eq!(d["sample"]["query"], "x402 payment protocol");
    assert_eq!(d["sample"]["resultCount"], 3);
    assert_eq!(d["sample"]["results"][2]["error"]["code"], "blocked_target");
    let (_, _, d2) = support::server::get_json(&server.url("/api/demo/search")).await;
    assert_eq!(
        d2["sample"]["asOf"], d["sample"]["asOf"],
        "the sample is reused"
    );
    assert_eq!(mock.count(), 1);
    assert_eq!(canary.hits(), 0);
    server.shutdown().await;

    // Offline / unconfigured: the demo answers the 503 itself (never a 200 around it).
    let cfg = shipped(
        &mock.base,
        &mock.searxng_base,
        json!({"provider": "brave", "api_key_env": "PAYCALL_TEST_SEARCH_KEY_NEVER_SET"}),
    );
    let server = support::server::start(cfg).await;
    let (s, h, d) = support::server::get_json(&server.url("/api/demo/search")).await;
    assert_eq!(s, 503, "{d}");
    assert_eq!(d["demo"], true, "{d}");
    assert_eq!(d["error"], "provider_unconfigured", "{d}");
    assert!(h.contains_key("retry-after"));
    server.shutdown().await;
}

#[test]
fn bad_provider_settings_are_startup_errors_that_say_what_to_fix() {
    for (caps, want) in [
        (
            json!({"provider": "bing"}),
            "unknown search provider `bing`",
        ),
        (
            json!({"provider": "brave", "upstream": "nowhere"}),
            "no upstream `nowhere`",
        ),
        (json!({"provider": "brave", "colour": "red"}), "colour"),
        (json!({"provider": "brave", "concurrency": 0}), "positive"),
    ] {
        let cfg = shipped("http://127.0.0.1:9", "http://127.0.0.1:9", caps.clone());
        let Err(e) = support::server::build(cfg) else {
            panic!("{caps} was accepted");
        };
        let text = e.to_string();
        assert!(text.contains(want), "{caps}: {text}");
        assert!(text.contains("routes.yaml"), "located: {text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_beyond_the_concurrency_limit_wait_for_a_slot_without_losing_their_deadline() {
    let canary = upstream::canary("127.0.0.2").await;
    let up = upstream::start(&canary.url()).await;
    let mock = support::search::start().await;
    mock.scenario(
        "queue",
        &[
            up.url("/slow?ms=1000"),
            up.url("/slow?ms=1000"),
            up.url("/slow?ms=1000"),
            up.url("/slow?ms=1000"),
        ],
    );
    // One page at a time, each allowed 1.5 s (+ 2 s to convert) from when it gets its slot:
    // four 1 s pages all succeed one after another, though the last ends 4 s in.
    let mut c = caps("brave");
    c["concurrency"] = json!(1);
    c["page_timeout_ms"] = json!(1500);
    let server = free_server(&mock, c).await;
    let started = Instant::now();
    let (s, _, b) = search(&server, "q=queue&n=3").await;
    let took = started.elapsed();
    assert_eq!(s, 200, "{b}");
    assert_eq!(
        b["fetchedOk"], 3,
        "queued pages keep their own deadline: {b}"
    );
    assert!(
        took >= Duration::from_millis(1800),
        "one at a time: {took:?}"
    );
    server.shutdown().await;

    // The default limit (5) fetches them together.
    let server = free_server(&mock, caps("brave")).await;
    let started = Instant::now();
    let (s, _, b) = search(&server, "q=queue&n=4").await;
    assert_eq!((s, b["fetchedOk"].as_u64()), (200, Some(4)), "{b}");
    assert!(started.elapsed() < Duration::from_millis(4000), "together");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_are_asked_for_in_the_callers_language_without_cookies() {
    let canary = upstream::canary("127.0.0.2").await;
    let up = upstream::start(&canary.url()).await;
    let mock = support::search::start().await;
    mock.scenario("echo", &[up.url("/echo")]);
    let server = free_server(&mock, caps("serper")).await;
    let echoed = |b: &Value| -> Value {
        let c = content(&b["results"][0]);
        let json = c
            .trim_start_matches("```json")
            .trim_end_matches("```")
            .trim();
        serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {c}"))
    };
    let (s, _, b) = search(&server, "q=echo&n=1&lang=pt-BR").await;
    assert_eq!(s, 200, "{b}");
    let seen = echoed(&b);
    assert_eq!(seen["headers"]["accept-language"], "pt-BR", "{seen}");
    assert!(seen["headers"].get("cookie").is_none());
    assert_eq!(seen["method"], "GET");
    let (_, _, b) = search(&server, "q=echo&n=1").await;
    assert!(echoed(&b)["headers"].get("accept-language").is_none());
    server.shutdown().await;
}
