//! /api/extract through the real server on a free copy of the SHIPPED route and pipeline
//! (same inputs, stages and caps; payment stages removed — tests/it/extract_pay.rs pays for real):
//! every output field, GET and POST, the fields language and its per-field errors, every limit
//! at its edge, every error status, and hostile pages and selectors that must end within the
//! 2 s budget without stalling other requests.

use crate::support;

use serde_json::{json, Value};
use std::time::{Duration, Instant};
use support::extract::{free_config, nested, pages, repo, PagesServer};
use support::server::enc;

struct Env {
    _dir: support::server::ConfigDir,
    server: support::server::TestServer,
    pages: PagesServer,
}

async fn env() -> Env {
    let (routes, pipeline) = free_config(support::server::NO_FACILITATOR);
    let (dir, server) = support::server::serve_yaml(&routes, &[("extract", &pipeline)]).await;
    Env {
        _dir: dir,
        server,
        pages: pages().await,
    }
}

impl Env {
    async fn get(&self, target: &str, fields: Option<Value>) -> (u16, Value) {
        let mut q = format!("/api/extract?url={}", enc(target));
        if let Some(f) = fields {
            q.push_str(&format!("&fields={}", enc(&f.to_string())));
        }
        let (s, _, b) = get_any(&self.server.url(&q)).await;
        (s, b)
    }
    async fn get_raw(&self, query: &str) -> (u16, Value) {
        let (s, _, b) = get_any(&self.server.url(&format!("/api/extract{query}"))).await;
        (s, b)
    }
    async fn post(&self, body: &Value) -> (u16, Value) {
        self.post_raw(body.to_string()).await
    }
    async fn post_raw(&self, body: String) -> (u16, Value) {
        let resp = support::server::client()
            .post(self.server.url("/api/extract"))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .expect("request");
        let s = resp.status().as_u16();
        let text = resp.text().await.unwrap_or_default();
        (
            s,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }
}

async fn get_any(url: &str) -> (u16, reqwest::header::HeaderMap, Value) {
    let resp = support::server::client()
        .get(url)
        .send()
        .await
        .expect("request");
    let s = resp.status().as_u16();
    let h = resp.headers().clone();
    let text = resp.text().await.unwrap_or_default();
    (
        s,
        h,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

fn code(b: &Value) -> &str {
    b["error"].as_str().unwrap_or("")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_a_page_every_output_field() {
    let e = env().await;
    let page = e.pages.url("/article");
    let (s, b) = e.get(&page, None).await;
    assert_eq!(s, 200, "{b}");
    let origin = &e.pages.base;
    assert_eq!(b["ok"], true);
    assert_eq!(b["url"], page);
    assert_eq!(b["finalUrl"], page);
    assert_eq!(
        b["title"], "Tide Tables for the Northern Coast",
        "<title> wins over og:title"
    );
    assert_eq!(
        b["description"],
        "Weekly tide tables for five harbours on the northern coast."
    );
    assert_eq!(b["canonical"], format!("{origin}/tides/northern-coast"));
    assert_eq!(b["language"], "en-GB");
    let links = b["links"].as_array().unwrap();
    assert_eq!(
        links[0],
        json!({"href": format!("{origin}/"), "text": "Home"})
    );
    assert!(links
        .contains(&json!({"href": format!("{origin}/harbours/kirkby.html"), "text": "Kirkby"})));
    assert!(
        links.contains(&json!({"href": "https://other.example.net/bamburgh", "text": "Bamburgh"}))
    );
    assert!(
        !links
            .iter()
            .any(|l| l["href"].as_str().unwrap().starts_with("javascript")),
        "only http(s) links"
    );
    let tides = links
        .iter()
        .filter(|l| l["href"] == format!("{origin}/tides/"))
        .count();
    assert_eq!(tides, 1, "links are deduplicated by href");
    assert_eq!(
        b["images"],
        json!([
            {"src": "https://cdn.example.org/tides/cover.jpg"},
            {"src": format!("{origin}/img/twitter-card.png")},
            {"src": format!("{origin}/img/gauge.png"), "alt": "A harbour gauge"},
            {"src": format!("{origin}/img/lazy-chart.png"), "alt": "Chart"}
        ])
    );
    assert_eq!(
        b["jsonLd"],
        json!([{"@context": "https://schema.org", "@type": "Dataset", "name": "Northern tide tables", "temporalCoverage": "2026-11"}]),
        "the broken block is skipped"
    );
    assert_eq!(
        b["headings"],
        json!([
            {"level": 1, "text": "Tide Tables for the Northern Coast"},
            {"level": 2, "text": "Harbours"},
            {"level": 3, "text": "Notes"}
        ])
    );
    let sample = b["textSample"].as_str().unwrap();
    assert!(
        sample.starts_with("Home | All tides | Menu Tide Tables"),
        "{sample}"
    );
    assert!(sample.contains("Kirkby 4.2 m"), "{sample}");
    assert!(!sample.contains("scripted text"), "{sample}");
    assert_eq!(b["bytesRead"], repo(support::extract::ARTICLE_PATH).len());
    assert!(b["elapsedMs"].is_u64());
    assert_eq!(b["source"], "extract");
    assert!(b["asOf"].as_str().unwrap().ends_with('Z'));
    for absent in [
        "fields",
        "fieldErrors",
        "matchedFields",
        "requestedFields",
        "truncated",
    ] {
        assert!(
            b.get(absent).is_none(),
            "{absent} omitted without fields: {b}"
        );
    }

    // Redirects: finalUrl is where the page was; url is what was asked.
    let (s, b) = e.get(&e.pages.url("/redirect"), None).await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["url"], e.pages.url("/redirect"));
    assert_eq!(b["finalUrl"], page);
    // Three redirects are followed; a fourth is refused.
    let (s, b) = e.get(&e.pages.url("/hop?n=2"), None).await;
    assert_eq!(
        (s, b["finalUrl"].as_str()),
        (200, Some(page.as_str())),
        "{b}"
    );
    let (s, b) = e.get(&e.pages.url("/hop?n=3"), None).await;
    assert_eq!((s, code(&b)), (502, "too_many_redirects"), "{b}");
    // Charset from the Content-Type; an untyped body that looks like HTML is read.
    let (s, b) = e.get(&e.pages.url("/latin1"), None).await;
    assert_eq!((s, b["title"].as_str()), (200, Some("Café crème")), "{b}");
    assert_eq!(b["textSample"], "à la carte");
    let (s, b) = e.get(&e.pages.url("/no-type"), None).await;
    assert_eq!((s, b["title"].as_str()), (200, Some("Untyped")), "{b}");
    // A page streamed past the cap is cut there and read (docs/decisions.md#billing: charged, marked).
    let streamed = support::extract::streamed_html(250_000).await;
    let (s, b) = e.get(&streamed, Some(json!({"top": "h1"}))).await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["truncated"], true);
    assert_eq!(b["bytesRead"], 200_000);
    assert_eq!(
        (b["title"].as_str(), b["fields"]["top"].as_str()),
        (Some("Streamed"), Some("Top"))
    );
    // Exactly the cap is read whole.
    let (s, b) = e.get(&e.pages.url("/exact-cap"), None).await;
    assert_eq!((s, b["bytesRead"].as_u64()), (200, Some(200_000)), "{b}");
    assert!(b.get("truncated").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fields_values_and_per_field_errors() {
    let e = env().await;
    let origin = e.pages.base.clone();
    let fields = json!({
        "heading": "h1",
        "lead": {"selector": "p.lead", "attr": "html"},
        "harbours": {"selector": "li.harbour a", "all": true},
        "first3": {"selector": "li.harbour a", "attr": "href", "all": true, "limit": 3},
        "codes": {"selector": "li.harbour", "attr": "data-code", "all": true},
        "price": {"selector": "[itemprop=price]", "attr": "content"},
        "withHas": "li:has(> a[href^=https]) .height",
        "nth": "li:nth-child(2) a",
        "none": ".no-such-thing",
        "noAttr": {"selector": "h1", "attr": "data-missing"},
        "bad": "li[",
        "twoHas": "ul:has(li) li:has(a)"
    });
    let (s, b) = e.get(&e.pages.url("/article"), Some(fields.clone())).await;
    assert_eq!(s, 200, "{b}");
    let f = &b["fields"];
    assert_eq!(f["heading"], "Tide Tables for the Northern Coast");
    assert_eq!(
        f["lead"],
        r#"<p class="lead">High and low water for the week, measured at the harbour gauges.</p>"#
    );
    assert_eq!(
        f["harbours"],
        json!(["Kirkby", "Alnmouth", "Seahouses", "Bamburgh", "Holy Island"])
    );
    assert_eq!(
        f["first3"],
        json!([
            format!("{origin}/harbours/kirkby.html"),
            format!("{origin}/harbours/alnmouth.html"),
            format!("{origin}/harbours/seahouses.html")
        ]),
        "href values are absolute; limit 3"
    );
    assert_eq!(
        f["codes"],
        json!(["KRK", "ALN", "SEA", "HLY"]),
        "with all, matches lacking the attribute are skipped"
    );
    assert_eq!(f["price"], "0.00");
    assert_eq!(f["withHas"], "4.4 m");
    assert_eq!(f["nth"], "Alnmouth");
    for (name, err) in [
        ("none", "no_match"),
        ("noAttr", "attr_missing"),
        ("bad", "bad_selector"),
        ("twoHas", "bad_selector"),
    ] {
        assert_eq!(f[name], Value::Null, "{name}");
        assert_eq!(b["fieldErrors"][name], err, "{name}: {b}");
    }
    assert_eq!(b["fieldErrors"].as_object().unwrap().len(), 4);
    assert_eq!(b["matchedFields"], 8);
    assert_eq!(b["requestedFields"], 12);
    let keys: Vec<&String> = f.as_object().unwrap().keys().collect();
    let asked: Vec<&String> = fields.as_object().unwrap().keys().collect();
    assert_eq!(keys, asked, "fields keep the requested order");

    // None matched: 422 no_fields_matched with the per-field errors.
    let (s, b) = e
        .get(
            &e.pages.url("/article"),
            Some(json!({"a": ".nope", "b": "h1:has(x) p:has(y)", "c": {"selector": "h1", "attr": "title"}})),
        )
        .await;
    assert_eq!(s, 422, "{b}");
    assert_eq!(code(&b), "no_fields_matched");
    assert!(b["message"].is_string());
    assert_eq!(
        b["fieldErrors"],
        json!({"a": "no_match", "b": "bad_selector", "c": "attr_missing"})
    );
    assert_eq!(b["fields"], json!({"a": null, "b": null, "c": null}));
    assert_eq!(
        (b["matchedFields"].as_u64(), b["requestedFields"].as_u64()),
        (Some(0), Some(3))
    );

    // An empty fields object asks for nothing.
    let (s, b) = e.get(&e.pages.url("/article"), Some(json!({}))).await;
    assert_eq!(s, 200, "{b}");
    assert!(b.get("requestedFields").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn post_with_html_fetches_nothing_and_echoes_url() {
    let e = env().await;
    let html = r#"<html lang="de"><head><title>Eigene Seite</title><base href="/sub/"></head>
<body><h2>Teil</h2><a href="x.html">x</a><img src="/i.png"><span class=v>42</span></body></html>"#;
    // url points at a refused target: with html it is only echoed, never fetched or judged.
    let (s, b) = e
        .post(&json!({"url": "http://127.0.0.2/page", "html": html, "fields": {"v": ".v"}}))
        .await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["url"], "http://127.0.0.2/page");
    assert_eq!(b["finalUrl"], "http://127.0.0.2/page");
    assert_eq!(b["title"], "Eigene Seite");
    assert_eq!(b["language"], "de");
    assert_eq!(
        b["links"],
        json!([{"href": "http://127.0.0.2/sub/x.html", "text": "x"}])
    );
    assert_eq!(b["images"], json!([{"src": "http://127.0.0.2/i.png"}]));
    assert_eq!(b["fields"], json!({"v": "42"}));
    assert_eq!(b["bytesRead"], html.len());
    // Without url: relative links cannot be made absolute and are left out.
    let (s, b) = e.post(&json!({"html": html})).await;
    assert_eq!(s, 200, "{b}");
    assert!(
        b.get("url").is_none() && b.get("finalUrl").is_none() && b.get("links").is_none(),
        "{b}"
    );
    assert_eq!(b["headings"], json!([{"level": 2, "text": "Teil"}]));
    // POST with url only fetches like GET.
    let (s, b) = e
        .post(&json!({"url": e.pages.url("/article"), "fields": {"h": "h1"}}))
        .await;
    assert_eq!(
        (s, b["fields"]["h"].as_str()),
        (200, Some("Tide Tables for the Northern Coast")),
        "{b}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_and_limits_at_their_edges() {
    let e = env().await;
    let page = e.pages.url("/article");
    // Missing input.
    assert_eq!(code(&e.get_raw("").await.1), "missing_parameter");
    assert_eq!(
        code(&e.post(&json!({"fields": {"a": "p"}})).await.1),
        "missing_parameter"
    );
    // Bad URLs and refused targets.
    for u in [
        "notaurl",
        "ftp://example.com/",
        "http://127.0.0.2/",
        "http://169.254.169.254/",
    ] {
        let (s, b) = e.get(u, None).await;
        assert_eq!(s, 400, "{u}: {b}");
    }
    // Bad HTML.
    for html in ["", "   ", "no markup at all", "a\u{0}<p>"] {
        let (s, b) = e.post(&json!({"html": html})).await;
        assert_eq!((s, code(&b)), (400, "bad_html"), "{html:?}: {b}");
    }
    // html size: exactly 200,000 bytes passes, one more is 413.
    let mut html = String::from("<p>edge</p>");
    html.push_str(&" ".repeat(200_000 - html.len()));
    let (s, b) = e.post(&json!({"html": html})).await;
    assert_eq!((s, b["bytesRead"].as_u64()), (200, Some(200_000)), "{b}");
    html.push(' ');
    let (s, b) = e.post(&json!({"html": html})).await;
    assert_eq!((s, code(&b)), (413, "html_too_large"), "{b}");
    // The request body cap (300,000 bytes) is 413 too.
    let (s, b) = e
        .post_raw(format!("{{\"html\": \"{}\"}}", "a".repeat(300_000)))
        .await;
    assert_eq!((s, code(&b)), (413, "request_too_large"), "{b}");
    // bad_fields: structure, counts and lengths.
    let twenty: serde_json::Map<String, Value> =
        (0..20).map(|i| (format!("f{i}"), json!("h1"))).collect();
    let (s, b) = e.get(&page, Some(Value::Object(twenty.clone()))).await;
    assert_eq!(
        (s, b["matchedFields"].as_u64()),
        (200, Some(20)),
        "20 fields pass: {b}"
    );
    let mut twenty_one = twenty.clone();
    twenty_one.insert("f20".into(), json!("h1"));
    let long_ok = "h1".to_string() + &" ".repeat(298);
    let (s, b) = e.get(&page, Some(json!({"a": long_ok}))).await;
    assert_eq!(s, 200, "a 300-character selector passes: {b}");
    for bad in [
        Value::Object(twenty_one),
        json!({"a": format!("{long_ok} ")}),
        json!({"a": {"selector": "p", "all": true, "limit": 0}}),
        json!({"a": {"selector": "p", "all": true, "limit": 51}}),
        json!({"a": {"selector": "p", "attr": ""}}),
        json!({"a": {"selector": "p", "bogus": 1}}),
        json!({"a": {"attr": "text"}}),
        json!({"a": 3}),
        json!(["h1"]),
    ] {
        let (s, b) = e.get(&page, Some(bad.clone())).await;
        assert_eq!((s, code(&b)), (400, "bad_fields"), "{bad}: {b}");
        let (s, b) = e.post(&json!({"url": page, "fields": bad})).await;
        assert_eq!((s, code(&b)), (400, "bad_fields"), "POST {bad}: {b}");
    }
    let (s, b) = e
        .get_raw(&format!("?url={}&fields=%7Bnot%20json", enc(&page)))
        .await;
    assert_eq!((s, code(&b)), (400, "bad_fields"), "{b}");
    // The GET spec is at most 16,000 characters (the edge passes, one more does not).
    let (s, b) = e
        .get_raw(&format!(
            "?url={}&fields={}",
            enc(&page),
            enc(&edge_spec(16_000))
        ))
        .await;
    assert_eq!(s, 200, "a 16,000-character spec passes: {b}");
    let (s, b) = e
        .get_raw(&format!(
            "?url={}&fields={}",
            enc(&page),
            enc(&edge_spec(16_001))
        ))
        .await;
    assert_eq!((s, code(&b)), (400, "bad_fields"), "{b}");
    // Upstream outcomes.
    let cases = [
        ("/json", 415, "unsupported_content_type"),
        ("/png", 415, "unsupported_content_type"),
        ("/declared-big", 413, "upstream_too_large"),
        ("/missing", 502, "upstream_status"),
    ];
    for (p, status, c) in cases {
        let (s, b) = e.get(&e.pages.url(p), None).await;
        assert_eq!((s, code(&b)), (status, c), "{p}: {b}");
    }
    let (s, b) = e.get("http://127.0.0.1:9/", None).await;
    assert_eq!(s, 502, "{b}");
    let t = Instant::now();
    let (s, b) = e.get(&e.pages.url("/slow"), None).await;
    assert_eq!((s, code(&b)), (504, "upstream_timeout"), "{b}");
    assert!(
        t.elapsed() < Duration::from_secs(15),
        "the 8 s fetch cap holds"
    );
}

/// A valid fields spec whose JSON text is exactly `n` characters (JSON whitespace pads it:
/// 20 fields of 300-character selectors cannot reach 16,000).
fn edge_spec(n: usize) -> String {
    let base = r#"{"a":"h1"}"#;
    let s = format!("{{\"a\":\"h1\"{}}}", " ".repeat(n - base.len()));
    assert_eq!(s.chars().count(), n);
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deep_pages_are_refused_for_fields_at_256() {
    let e = env().await;
    // html + body + n divs + the <p>: depth n + 3.
    let (s, b) = e
        .get(&e.pages.url("/deep?n=253"), Some(json!({"p": "p.deep"})))
        .await;
    assert_eq!(
        (s, b["fields"]["p"].as_str()),
        (200, Some("bottom")),
        "depth 256 is read: {b}"
    );
    let (s, b) = e
        .get(
            &e.pages.url("/deep?n=254"),
            Some(json!({"p": "p.deep", "t": "title"})),
        )
        .await;
    assert_eq!((s, code(&b)), (422, "no_fields_matched"), "{b}");
    assert_eq!(
        b["fieldErrors"],
        json!({"p": "document_too_deep", "t": "document_too_deep"})
    );
    // Without fields the page facts are still answered; a very deep page too, quickly.
    let t = Instant::now();
    let (s, b) = e.post(&json!({"html": nested(16_000)})).await;
    assert_eq!((s, b["title"].as_str()), (200, Some("Deep")), "{b}");
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
}

/// Pages and selectors built to be slow. Each answer must arrive within the 2 s budget plus
/// slack for a loaded 2-core machine, with the unfinished fields marked time_budget, and other
/// requests must be served meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_pages_and_selectors_end_within_the_budget() {
    let e = env().await;
    // ~19,000 sibling elements (200 KB) in a 250-deep spine.
    let mut wide = String::from("<html><body>");
    wide.push_str(&"<div>".repeat(200));
    while wide.len() < 190_000 {
        wide.push_str("<i class=a></i>");
    }
    wide.push_str("<b id=end>end</b>");
    // One element with ~28,000 distinct attributes (the parser's duplicate check is quadratic
    // in them: ~1 s for 40,000 before the per-element cap of 256).
    let mut attrs = String::from("<html><body><p ");
    let mut k = 0;
    while attrs.len() < 195_000 {
        attrs.push_str(&format!("a{k} "));
        k += 1;
    }
    attrs.push_str(">x</p><a href=/y>y</a>");
    let slow_selectors = json!({
        "quadratic": "i:has(~ :nth-last-child(-n+0))",
        "nth": "i:nth-last-child(2n+1):nth-child(3n):nth-last-of-type(n+2)",
        "has": ":has(b#nope) i",
        "deep": "div div div div div div div div div div div div div div div div div div div div i.b",
        "is": ":is(div, i, b):not(:is(.x, .y, .z)):nth-last-of-type(n+2)",
        "end": "b#end"
    });
    let cases = [
        ("wide", wide, slow_selectors.clone()),
        (
            "attrs",
            attrs,
            json!({"kept": "p[a255]", "dropped": "p[a256]", "any": "*:not([zz]) + a"}),
        ),
        ("deep", nested(16_000), json!({"p": "p.deep"})),
    ];
    for (name, html, fields) in cases {
        let t = Instant::now();
        let e2 = &e;
        let heavy = async {
            let r = e2.post(&json!({"html": html, "fields": fields})).await;
            (r, t.elapsed())
        };
        // A light request sent while the heavy one runs must not wait for it.
        let light = async {
            tokio::time::sleep(Duration::from_millis(150)).await;
            let t2 = Instant::now();
            let r = e2
                .post(&json!({"html": "<h1>light</h1>", "fields": {"h": "h1"}}))
                .await;
            (r, t2.elapsed())
        };
        let (((s, b), heavy_took), ((ls, lb), light_took)) = tokio::join!(heavy, light);
        eprintln!(
            "{name}: {s} in {heavy_took:?}; light request {light_took:?}; {}",
            b.get("fieldErrors").unwrap_or(&Value::Null)
        );
        assert!(s == 200 || s == 422, "{name}: {s} {b}");
        assert!(
            heavy_took < Duration::from_secs(5),
            "{name}: the budget holds: {heavy_took:?}"
        );
        assert_eq!(
            (ls, lb["fields"]["h"].as_str()),
            (200, Some("light")),
            "{lb}"
        );
        assert!(
            light_took < Duration::from_secs(2),
            "{name}: a light request is not stalled by a heavy one: {light_took:?}"
        );
        if name == "attrs" {
            assert_eq!(b["fields"]["kept"], "x", "{b}");
            assert_eq!(b["fieldErrors"]["dropped"], "no_match", "{b}");
            assert_eq!(b["fields"]["any"], "y", "{b}");
        }
        if let Some(errs) = b["fieldErrors"].as_object() {
            for (k, v) in errs {
                assert!(
                    [
                        "time_budget",
                        "no_match",
                        "document_too_deep",
                        "attr_missing"
                    ]
                    .contains(&v.as_str().unwrap()),
                    "{name}.{k}: {v}"
                );
            }
        }
    }
}

/// Issue 21: n distinct formatting elements left open by a `</div>`, then ~48,000 `<p>x` in
/// 200 KB: the tree builder would reconstruct all n in every paragraph (24 million elements,
/// 10 GB for n = 500). Refused with 413 html_too_complex (not charged) within the 2 s budget,
/// posted or fetched, and the server keeps answering ordinary pages.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adoption_agency_pages_are_refused_not_grown() {
    let e = env().await;
    for n in [500, 8000, 40] {
        let html = paycall::doc::parse::adoption_agency_page(n, 199_997);
        let t = Instant::now();
        let (s, b) = e.post(&json!({"html": html, "fields": {"p": "p"}})).await;
        let took = t.elapsed();
        eprintln!("posted n={n}: {s} {} in {took:?}", code(&b));
        assert_eq!((s, code(&b)), (413, "html_too_complex"), "n={n}: {b}");
        assert!(
            b["message"]
                .as_str()
                .unwrap()
                .contains("nothing was charged"),
            "{b}"
        );
        // Bounded, not timed: an unbounded tree takes minutes and gigabytes (a loaded machine
        // can stretch the refusal past the 2 s fields budget, which is the bench's to show).
        assert!(took < Duration::from_secs(10), "n={n}: {took:?}");
        let t = Instant::now();
        let (s, b) = e.get(&e.pages.url(&format!("/adoption?n={n}")), None).await;
        assert_eq!((s, code(&b)), (413, "html_too_complex"), "n={n}: {b}");
        assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    }
    // A few unclosed formatting elements over paragraphs of real length (sloppy but real) still
    // parse, each paragraph carrying its reconstructed elements.
    let html = format!(
        "<div><b><i><font face=a></div>{}",
        "<p>a sentence of a real paragraph".repeat(5000)
    );
    let (s, b) = e
        .post(&json!({"html": html, "fields": {"p": "p font"}}))
        .await;
    assert_eq!(
        (s, b["fields"]["p"].as_str()),
        (200, Some("a sentence of a real paragraph")),
        "{b}"
    );
}

/// More hostile requests than extraction slots (4): they queue for a slot, each ends within its
/// budget, and the async workers stay free for everything else meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crowd_of_hostile_requests_leaves_the_server_responsive() {
    let e = env().await;
    let mut wide = String::from("<html><body>");
    wide.push_str(&"<div>".repeat(200));
    while wide.len() < 190_000 {
        wide.push_str("<i class=a></i>");
    }
    let body = json!({"html": wide, "fields": {
        "has": ":has(b#nope) i",
        "deep": "div div div div div div div div div div div div div div div div div div div div i.b"
    }})
    .to_string();
    let t = Instant::now();
    let heavy = (0..6).map(|_| e.post_raw(body.clone()));
    let probe = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let mut worst = Duration::ZERO;
        for _ in 0..5 {
            let t2 = Instant::now();
            let (s, _, _) = get_any(&e.server.url("/status")).await;
            assert_eq!(s, 200);
            worst = worst.max(t2.elapsed());
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        worst
    };
    let (results, worst) = tokio::join!(futures_util::future::join_all(heavy), probe);
    let took = t.elapsed();
    eprintln!("6 hostile requests in {took:?}; slowest /status meanwhile {worst:?}");
    for (s, b) in &results {
        assert_eq!(*s, 422, "{b}");
        // Whether the selector finishes inside its 2 s budget depends on the machine's load
        // (the budget cut itself is tested in doc::fields); either way it ends as a 422.
        let e = b["fieldErrors"]["has"].as_str().unwrap_or_default();
        assert!(e == "time_budget" || e == "no_match", "{b}");
    }
    // Blocked async workers would hold /status for a whole 2 s round or more.
    assert!(
        worst < Duration::from_secs(2),
        "/status answered in {worst:?}"
    );
    assert!(
        took < Duration::from_secs(10),
        "two rounds of 2 s budgets: {took:?}"
    );
}

/// `skip_if_param` (url_guard, fetch) must name an input of the route: a typo is a startup
/// error, not a stage that never skips.
#[test]
fn skip_if_param_naming_no_input_is_a_startup_error() {
    let (routes, pipeline) = free_config(support::server::NO_FACILITATOR);
    for (stage, bad) in [
        (
            "url_guard",
            pipeline.replace("skip_if_param: html }", "skip_if_param: htm }"),
        ),
        (
            "fetch",
            pipeline.replace("      skip_if_param: html", "      skip_if_param: htm"),
        ),
    ] {
        assert_ne!(bad, pipeline, "{stage}: the pipeline text changed");
        let dir = support::server::write_config(&routes, &[("extract", &bad)]);
        let cfg = support::server::load(&dir).expect("the YAML itself loads");
        let err = match support::server::build(cfg) {
            Ok(_) => panic!("{stage}: a bad skip_if_param was accepted"),
            Err(e) => e.to_string(),
        };
        assert!(err.contains("htm"), "{stage}: {err}");
        assert!(err.contains(stage), "{stage}: {err}");
    }
}
