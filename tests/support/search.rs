//! Test support: one local server on 127.0.0.1 that answers as Brave
//! (`GET /res/v1/web/search`), Serper (`POST /search`) and SearXNG (`GET /sx/search?format=json`)
//! from the recorded-shape answers in fixtures/search/, and records every request it gets.
//!
//! What it answers depends on the first word of the query:
//! - a word registered with [`MockProvider::scenario`]: the provider's fixture with its result
//!   URLs replaced by the scenario's URLs (as many results as URLs);
//! - `none`: the provider's empty answer; `ratelimit`: 429 + Retry-After: 7; `boom`: 500;
//!   `credits`: 400 with Serper's error body; `invalid`: 422 with Brave's validation error; `engines`: SearXNG's "every engine failed" answer;
//!   `garbage`: 200 with HTML; `slowprovider`: waits 30 s.
//!
//! A scenario URL ending in `#untitled` gets an empty title (a provider result without one).
//!
//! Keys: Brave requires `X-Subscription-Token: test-brave-key` (401 otherwise), Serper requires
//! `X-API-KEY: test-serper-key` (403 otherwise).

use std::collections::HashMap;
use std::convert::Infallible;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use serde_json::Value;
use warp::http::{HeaderMap, HeaderValue, Method, StatusCode};
use warp::reply::Response;
use warp::Filter;

pub const BRAVE_KEY: &str = "test-brave-key";
pub const SERPER_KEY: &str = "test-serper-key";

/// One request the mock provider received.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub path: String,
    /// Decoded query parameters, in order.
    pub query: Vec<(String, String)>,
    pub headers: HeaderMap,
    pub body: String,
}

impl Seen {
    pub fn param(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }
}

pub struct MockProvider {
    /// Base URL for Brave and Serper (`http://127.0.0.1:port`).
    pub base: String,
    /// Base URL for SearXNG: the same server under `/sx/` (a base with a path).
    pub searxng_base: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    scenarios: Arc<Mutex<HashMap<String, Vec<String>>>>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl MockProvider {
    /// Answers queries starting with `word` with results pointing at `urls`.
    pub fn scenario(&self, word: &str, urls: &[String]) {
        self.scenarios
            .lock()
            .unwrap()
            .insert(word.to_string(), urls.to_vec());
    }
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
    pub fn count(&self) -> usize {
        self.seen.lock().unwrap().len()
    }
    pub fn last(&self) -> Seen {
        self.seen
            .lock()
            .unwrap()
            .last()
            .cloned()
            .expect("the provider saw a request")
    }
    pub fn clear(&self) {
        self.seen.lock().unwrap().clear();
    }
}

fn fixture(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/search")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn reply(status: u16, ct: &str, body: impl Into<Bytes>) -> Response {
    let mut r = Response::new(body.into().into());
    *r.status_mut() = StatusCode::from_u16(status).unwrap();
    r.headers_mut()
        .insert("content-type", HeaderValue::from_str(ct).unwrap());
    r
}

/// The fixture with its results cut to `urls.len()` and their URLs replaced.
fn with_urls(fixture_name: &str, pointer: &str, url_key: &str, urls: &[String]) -> String {
    let mut v: Value = serde_json::from_str(&fixture(fixture_name)).unwrap();
    let list = v
        .pointer_mut(pointer)
        .and_then(Value::as_array_mut)
        .expect("fixture results");
    let template = list.clone();
    list.clear();
    for (i, u) in urls.iter().enumerate() {
        let mut r = template[i.min(template.len() - 1)].clone();
        r[url_key] = Value::String(u.clone());
        if u.ends_with("#untitled") {
            r["title"] = Value::String(String::new());
        }
        list.push(r);
    }
    v.to_string()
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Brave,
    Serper,
    Searxng,
}

async fn answer(
    kind: Kind,
    q: String,
    headers: &HeaderMap,
    scenarios: &Mutex<HashMap<String, Vec<String>>>,
) -> Response {
    match kind {
        Kind::Brave => {
            if headers
                .get("x-subscription-token")
                .and_then(|v| v.to_str().ok())
                != Some(BRAVE_KEY)
            {
                return reply(
                    401,
                    "application/json",
                    r#"{"type":"ErrorResponse","error":{"status":401,"code":"SUBSCRIPTION_TOKEN_INVALID","detail":"The provided subscription token is invalid."}}"#,
                );
            }
        }
        Kind::Serper => {
            if headers.get("x-api-key").and_then(|v| v.to_str().ok()) != Some(SERPER_KEY) {
                return reply(
                    403,
                    "application/json",
                    r#"{"message":"Unauthorized.","statusCode":403}"#,
                );
            }
        }
        Kind::Searxng => {}
    }
    let word = q.split_whitespace().next().unwrap_or("").to_string();
    match word.as_str() {
        "none" => {
            let f = match kind {
                Kind::Brave => "brave-empty.json",
                Kind::Serper => "serper-empty.json",
                Kind::Searxng => "searxng-empty.json",
            };
            return reply(200, "application/json", fixture(f));
        }
        "ratelimit" => {
            let mut r = reply(429, "application/json", fixture("brave-429.json"));
            r.headers_mut()
                .insert("retry-after", HeaderValue::from_static("7"));
            return r;
        }
        "boom" => return reply(500, "text/plain", "internal error"),
        "invalid" => return reply(422, "application/json", fixture("brave-422.json")),
        "credits" => return reply(400, "application/json", fixture("serper-400.json")),
        "engines" => {
            return reply(
                200,
                "application/json",
                fixture("searxng-engines-down.json"),
            )
        }
        "garbage" => return reply(200, "text/html", "<html>maintenance</html>"),
        "slowprovider" => {
            tokio::time::sleep(Duration::from_secs(30)).await;
            return reply(500, "text/plain", "too late");
        }
        _ => {}
    }
    let urls = scenarios.lock().unwrap().get(&word).cloned();
    let Some(urls) = urls else {
        return reply(
            500,
            "text/plain",
            format!("mock provider: no scenario for `{word}`"),
        );
    };
    let body = match kind {
        Kind::Brave => with_urls("brave.json", "/web/results", "url", &urls),
        Kind::Serper => with_urls("serper.json", "/organic", "link", &urls),
        Kind::Searxng => with_urls("searxng.json", "/results", "url", &urls),
    };
    reply(200, "application/json", body)
}

pub async fn start() -> MockProvider {
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let scenarios: Arc<Mutex<HashMap<String, Vec<String>>>> = Arc::default();
    let (s1, s2) = (seen.clone(), scenarios.clone());
    let routes = warp::method()
        .and(warp::path::full())
        .and(warp::query::raw().or(warp::any().map(String::new)).unify())
        .and(warp::header::headers_cloned())
        .and(warp::body::bytes())
        .and_then(
            move |method: Method,
                  path: warp::path::FullPath,
                  raw: String,
                  headers: HeaderMap,
                  body: Bytes| {
                let seen = s1.clone();
                let scenarios = s2.clone();
                async move {
                    let query: Vec<(String, String)> = url::form_urlencoded::parse(raw.as_bytes())
                        .map(|(k, v)| (k.into_owned(), v.into_owned()))
                        .collect();
                    let body_text = String::from_utf8_lossy(&body).into_owned();
                    seen.lock().unwrap().push(Seen {
                        method: method.to_string(),
                        path: path.as_str().to_string(),
                        query: query.clone(),
                        headers: headers.clone(),
                        body: body_text.clone(),
                    });
                    let param = |n: &str| {
                        query
                            .iter()
                            .find(|(k, _)| k == n)
                            .map(|(_, v)| v.clone())
                            .unwrap_or_default()
                    };
                    let r = match (method.as_str(), path.as_str()) {
                        ("GET", "/res/v1/web/search") => {
                            answer(Kind::Brave, param("q"), &headers, &scenarios).await
                        }
                        ("POST", "/search") => {
                            let q = serde_json::from_str::<Value>(&body_text)
                                .ok()
                                .and_then(|v| v["q"].as_str().map(str::to_string))
                                .unwrap_or_default();
                            answer(Kind::Serper, q, &headers, &scenarios).await
                        }
                        ("GET", "/sx/search") if param("format") == "json" => {
                            answer(Kind::Searxng, param("q"), &headers, &scenarios).await
                        }
                        // SearXNG answers 403 for a format the instance has not enabled.
                        ("GET", "/sx/search") => reply(403, "text/html", "Forbidden"),
                        _ => reply(404, "text/plain", "unknown mock provider path"),
                    };
                    Ok::<_, Infallible>(r)
                }
            },
        );
    let (addr, tx) = super::net::serve(routes).await;
    MockProvider {
        base: format!("http://{addr}"),
        searxng_base: format!("http://{addr}/sx/"),
        seen,
        scenarios,
        _stop: tx,
    }
}
