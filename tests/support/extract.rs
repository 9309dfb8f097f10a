//! Support for the /api/extract tests : a free copy of the SHIPPED
//! /api/extract route and pipeline (payment stages removed, same inputs and caps) and a local
//! upstream on 127.0.0.1 serving the pages the tests need.

use bytes::Bytes;
use std::convert::Infallible;
use std::path::Path;
use std::time::Duration;
use warp::http::HeaderValue;
use warp::reply::Response;
use warp::Filter;

pub fn repo(path: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path))
        .unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The shipped /api/extract route entry of routes.yaml, verbatim.
pub fn shipped_route_block() -> String {
    let routes = repo("routes.yaml");
    let start = routes
        .find("  - path: /api/extract")
        .expect("routes.yaml has /api/extract");
    let rest = &routes[start..];
    let end = rest[1..].find("\n  - path: ").map_or(rest.len(), |i| i + 2);
    rest[..end].to_string()
}

/// routes.yaml + pipelines for a free /api/extract with the shipped inputs, stages and caps,
/// the guard allowing 127.0.0.1 (the test upstream) only.
pub fn free_config(facilitator: &str) -> (String, String) {
    let block: String = shipped_route_block()
        .lines()
        .filter(|l| !l.trim_start().starts_with("price_usd:"))
        .map(|l| format!("{l}\n"))
        .collect();
    let routes = format!(
        "{}guard:\n  allow_cidrs: [127.0.0.1/32]\nroutes:\n{block}",
        super::server::service_yaml(facilitator, 1000, 1000, &[])
    );
    let pipeline: String = repo("pipelines/extract.yaml")
        .lines()
        .filter(|l| {
            let t = l.trim_start();
            !(t.starts_with("- stage: payment_gate")
                || t.starts_with("- stage: bill")
                || t.starts_with("- stage: settle"))
        })
        .map(|l| format!("{l}\n"))
        .collect();
    (routes, pipeline)
}

pub const ARTICLE_PATH: &str = "fixtures/pages/extract/article.html";

fn resp(status: u16, ct: &str, body: impl Into<Bytes>) -> Response {
    let mut r = Response::new(body.into().into());
    *r.status_mut() = warp::http::StatusCode::from_u16(status).unwrap();
    if !ct.is_empty() {
        r.headers_mut()
            .insert("content-type", HeaderValue::from_str(ct).unwrap());
    }
    r
}

/// A page nested `n` divs deep inside body, with a `<p class=deep>` at the bottom.
pub fn nested(n: usize) -> String {
    format!(
        "<!doctype html><html><head><title>Deep</title></head><body>{}<p class=deep>bottom</p>{}</body></html>",
        "<div>".repeat(n),
        "</div>".repeat(n)
    )
}

pub struct PagesServer {
    pub base: String,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl PagesServer {
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }
}

/// The pages: /article (the fixture), /latin1, /json, /png, /no-type, /declared-big (Content-
/// Length over 200,000), /missing (404), /slow (sleeps), /redirect (→ /article), /deep?n=,
/// /hop?n= (n redirects, then /article), /adoption?n= (issue 21's reconstruction blow-up).
pub async fn pages() -> PagesServer {
    let article = repo(ARTICLE_PATH);
    let routes = warp::path::full()
        .and(warp::query::raw().or(warp::any().map(String::new)).unify())
        .and_then(move |path: warp::path::FullPath, query: String| {
            let article = article.clone();
            async move {
                let n: usize = query
                    .strip_prefix("n=")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0);
                let r = match path.as_str() {
                    "/article" => resp(200, "text/html; charset=utf-8", article),
                    "/latin1" => resp(
                        200,
                        "text/html; charset=iso-8859-1",
                        &b"<html><head><title>Caf\xe9 cr\xe8me</title></head><body><p>\xe0 la carte</p></body></html>"[..],
                    ),
                    "/no-type" => resp(200, "", "<!doctype html><title>Untyped</title><p>x</p>"),
                    "/json" => resp(200, "application/json", r#"{"title":"not html"}"#),
                    "/png" => resp(200, "image/png", &b"\x89PNG\r\n\x1a\n"[..]),
                    "/declared-big" => resp(200, "text/html", vec![b' '; 200_001]),
                    "/exact-cap" => {
                        let mut page = b"<html><body><h1>Cap</h1>".to_vec();
                        page.resize(200_000, b' ');
                        resp(200, "text/html", page)
                    }
                    "/missing" => resp(404, "text/html", "<p>no such page</p>"),
                    "/slow" => {
                        tokio::time::sleep(Duration::from_secs(30)).await;
                        resp(200, "text/html", "<p>late</p>")
                    }
                    "/redirect" => {
                        let mut r = resp(302, "text/plain", "");
                        r.headers_mut()
                            .insert("location", HeaderValue::from_static("/article"));
                        r
                    }
                    "/deep" => resp(200, "text/html", nested(n)),
                    // Issue 21: n distinct open formatting elements, then `<p>x` to 199,997 bytes.
                    "/adoption" => resp(
                        200,
                        "text/html",
                        paycall::doc::parse::adoption_agency_page(n, 199_997),
                    ),
                    // /hop?n=k: k more redirects, then the article.
                    "/hop" => {
                        let next = if n == 0 {
                            "/article".to_string()
                        } else {
                            format!("/hop?n={}", n - 1)
                        };
                        let mut r = resp(302, "text/plain", "");
                        r.headers_mut()
                            .insert("location", HeaderValue::from_str(&next).unwrap());
                        r
                    }
                    _ => resp(404, "text/plain", "unknown"),
                };
                Ok::<_, Infallible>(r)
            }
        });
    let (addr, tx) = super::net::serve(routes).await;
    PagesServer {
        base: format!("http://{addr}"),
        _stop: tx,
    }
}

/// An HTML page of `n` bytes streamed in chunks, without Content-Length, so the 200,000-byte cap
/// can only be applied while streaming (the page is cut, not refused).
pub async fn streamed_html(n: usize) -> String {
    let mut page = b"<html><head><title>Streamed</title></head><body><h1>Top</h1>".to_vec();
    while page.len() < n {
        page.extend_from_slice(b"<p>filler paragraph text</p>\n");
    }
    page.truncate(n);
    format!(
        "{}page",
        super::upstream::chunked_body("text/html", page).await
    )
}
