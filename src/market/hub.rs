//! The market hub: the named upstreams of routes.yaml, the guarded HTTP client and a short-lived
//! cache of upstream answers shared by every market stage.
//!
//! - Upstreams are looked up by name (`upstreams:` in routes.yaml, overridable by
//!   `PAYCALL_UPSTREAM_<NAME>`); paths are joined relative to the base URL so a base with a path
//!   prefix (`https://api.coingecko.com/api/v3/`) works.
//! - Everything goes through the same [`GuardedClient`] as /api/fetch: an operator pointing an
//!   upstream at a private address must allow it explicitly (tests allow 127.0.0.1/32).
//! - The cache keeps parsed answers (any type) with a per-entry lifetime chosen by the caller
//!   (the route's TTL); concurrent misses on one key ask the upstream once. The time the data
//!   was taken travels with it, so responses can say `asOf` honestly.

use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::any::Any;
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};
use url::Url;

use crate::net::{FetchError, FetchRequest, GuardedClient, OverCap};

/// Why an upstream could not give us data. `Unavailable` (unreachable, timed out, overloaded)
/// answers 503; `BadAnswer` (an error status, malformed or empty data) answers 502.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FailKind {
    Unavailable,
    BadAnswer,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{upstream}: {message}")]
pub struct UpstreamError {
    /// The upstream's name in routes.yaml (`coinbase_exchange`, `okx`, …).
    pub upstream: String,
    pub kind: FailKind,
    pub message: String,
}

impl UpstreamError {
    pub fn bad(upstream: &str, message: impl Into<String>) -> Self {
        UpstreamError {
            upstream: upstream.to_string(),
            kind: FailKind::BadAnswer,
            message: message.into(),
        }
    }
    pub fn unavailable(upstream: &str, message: impl Into<String>) -> Self {
        UpstreamError {
            upstream: upstream.to_string(),
            kind: FailKind::Unavailable,
            message: message.into(),
        }
    }
    /// The HTTP status the service answers with.
    pub fn status(&self) -> u16 {
        match self.kind {
            FailKind::Unavailable => 503,
            FailKind::BadAnswer => 502,
        }
    }
    /// The error code of that answer.
    pub fn code(&self) -> &'static str {
        match self.kind {
            FailKind::Unavailable => "upstream_unavailable",
            FailKind::BadAnswer => "upstream_error",
        }
    }
    /// Seconds the caller is asked to wait: only an unavailable upstream is worth a retry.
    pub fn retry_after_s(&self) -> Option<u64> {
        (self.kind == FailKind::Unavailable).then_some(RETRY_AFTER_S)
    }
}

/// Error statuses every fetching market stage can answer (for /openapi.json).
pub const UPSTREAM_ERRORS: &[(u16, &str)] = &[
    (
        502,
        "A market upstream answered an error, malformed or empty data (named in `upstream`); not charged",
    ),
    (
        503,
        "A market upstream is unreachable, timed out or rate-limited us (named in `upstream`); not charged",
    ),
];

/// Seconds a caller is asked to wait after a 503 (an upstream unreachable or rate-limiting us):
/// about one cache lifetime, long enough for a blip to pass.
pub const RETRY_AFTER_S: u64 = 30;

/// Data and when it was taken from the upstream.
#[derive(Debug)]
pub struct Fresh<T> {
    pub value: Arc<T>,
    pub taken: DateTime<Utc>,
}

impl<T> Clone for Fresh<T> {
    fn clone(&self) -> Self {
        Fresh {
            value: self.value.clone(),
            taken: self.taken,
        }
    }
}

#[derive(Clone)]
struct Entry {
    taken: DateTime<Utc>,
    ttl: Duration,
    value: Arc<dyn Any + Send + Sync>,
}

struct EntryExpiry;

impl moka::Expiry<String, Entry> for EntryExpiry {
    fn expire_after_create(&self, _key: &String, value: &Entry, _at: Instant) -> Option<Duration> {
        Some(value.ttl)
    }
}

/// Limits of one upstream request.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub timeout: Duration,
    pub max_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            timeout: Duration::from_secs(8),
            max_bytes: 2_000_000,
        }
    }
}

pub struct MarketHub {
    client: Arc<GuardedClient>,
    upstreams: BTreeMap<String, Url>,
    cache: moka::future::Cache<String, Entry>,
}

impl MarketHub {
    pub fn new(client: Arc<GuardedClient>, upstreams: BTreeMap<String, Url>) -> MarketHub {
        MarketHub {
            client,
            upstreams,
            cache: moka::future::Cache::builder()
                .max_capacity(4096)
                .expire_after(EntryExpiry)
                .build(),
        }
    }

    /// For stage builders: the named upstream exists.
    pub fn check_upstream(&self, name: &str) -> Result<(), String> {
        if self.upstreams.contains_key(name) {
            Ok(())
        } else {
            Err(format!(
                "unknown upstream `{name}`; add it to `upstreams:` in routes.yaml (known: {})",
                self.upstreams
                    .keys()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        }
    }

    /// `path` (relative, may carry a query) joined to the upstream's base URL.
    pub fn url(&self, upstream: &str, path: &str) -> Result<Url, UpstreamError> {
        let base = self
            .upstreams
            .get(upstream)
            .ok_or_else(|| UpstreamError::bad(upstream, "is not configured"))?;
        let mut base = base.clone();
        if !base.path().ends_with('/') {
            let p = format!("{}/", base.path());
            base.set_path(&p);
        }
        base.join(path.trim_start_matches('/'))
            .map_err(|e| UpstreamError::bad(upstream, format!("bad path {path}: {e}")))
    }

    /// GET `path` on `upstream`, parsed as `T`.
    pub async fn get_json<T: DeserializeOwned>(
        &self,
        upstream: &str,
        path: &str,
        limits: Limits,
    ) -> Result<T, UpstreamError> {
        let url = self.url(upstream, path)?;
        let body = self.send(upstream, url, None, limits).await?;
        parse(upstream, &body)
    }

    /// POST a JSON body to `path` on `upstream`, the answer parsed as `T`.
    pub async fn post_json<T: DeserializeOwned>(
        &self,
        upstream: &str,
        path: &str,
        body: &Value,
        limits: Limits,
    ) -> Result<T, UpstreamError> {
        let url = self.url(upstream, path)?;
        let bytes = serde_json::to_vec(body).unwrap_or_default();
        let answer = self.send(upstream, url, Some(bytes), limits).await?;
        parse(upstream, &answer)
    }

    /// The raw body of a GET (callers that parse large answers themselves).
    pub async fn get_bytes(
        &self,
        upstream: &str,
        path: &str,
        limits: Limits,
    ) -> Result<bytes::Bytes, UpstreamError> {
        let url = self.url(upstream, path)?;
        self.send(upstream, url, None, limits).await
    }

    async fn send(
        &self,
        upstream: &str,
        url: Url,
        body: Option<Vec<u8>>,
        limits: Limits,
    ) -> Result<bytes::Bytes, UpstreamError> {
        let mut req = FetchRequest::get(url);
        req.max_redirects = 2;
        req.max_bytes = limits.max_bytes;
        req.timeout = limits.timeout;
        req.over_cap = OverCap::Reject;
        req.headers.insert(
            http::header::ACCEPT,
            http::HeaderValue::from_static("application/json"),
        );
        if let Some(b) = body {
            req.method = http::Method::POST;
            req.headers.insert(
                http::header::CONTENT_TYPE,
                http::HeaderValue::from_static("application/json"),
            );
            req.body = Some(b.into());
        }
        let resp = self
            .client
            .fetch(req)
            .await
            .map_err(|e| fetch_error(upstream, e))?;
        let status = resp.status.as_u16();
        if status == 429 || status >= 500 {
            return Err(UpstreamError::unavailable(
                upstream,
                format!("answered HTTP {status}"),
            ));
        }
        if !resp.status.is_success() {
            return Err(UpstreamError::bad(
                upstream,
                format!("answered HTTP {status}"),
            ));
        }
        Ok(resp.body)
    }

    /// The cached value for `key`, or the result of `produce` kept for `ttl`. Concurrent misses
    /// run `produce` once; failures are not kept.
    pub async fn cached<T, F>(
        &self,
        key: String,
        ttl: Duration,
        produce: F,
    ) -> Result<Fresh<T>, UpstreamError>
    where
        T: Any + Send + Sync,
        F: Future<Output = Result<T, UpstreamError>>,
    {
        // Routes with different TTLs must not serve each other's older data.
        let key = format!("{key}|ttl={}", ttl.as_millis());
        let entry = self
            .cache
            .try_get_with(key, async move {
                let value = produce.await?;
                Ok::<_, UpstreamError>(Entry {
                    taken: Utc::now(),
                    ttl: ttl.max(Duration::from_millis(1)),
                    value: Arc::new(value),
                })
            })
            .await
            .map_err(|e: Arc<UpstreamError>| (*e).clone())?;
        let value = entry
            .value
            .downcast::<T>()
            .map_err(|_| UpstreamError::bad("cache", "cached value has an unexpected type"))?;
        Ok(Fresh {
            value,
            taken: entry.taken,
        })
    }
}

fn parse<T: DeserializeOwned>(upstream: &str, body: &[u8]) -> Result<T, UpstreamError> {
    serde_json::from_slice(body)
        .map_err(|e| UpstreamError::bad(upstream, format!("sent an answer we cannot read: {e}")))
}

fn fetch_error(upstream: &str, e: FetchError) -> UpstreamError {
    match e {
        FetchError::TooLarge { .. } | FetchError::BadRedirect(_) | FetchError::BadUrl(_) => {
            UpstreamError::bad(upstream, e.to_string())
        }
        other => UpstreamError::unavailable(upstream, format!("is unavailable: {other}")),
    }
}

/// Tries each source in order; the first success wins. All failing → one error naming every
/// source, `Unavailable` (503, worth a retry) when any source was unreachable, `BadAnswer`
/// (502) only when every source answered and badly: an unreachable source may answer on a
/// retry even when the other one sends garbage.
pub async fn first_ok<T, F, Fut>(sources: &[String], mut attempt: F) -> Result<T, UpstreamError>
where
    F: FnMut(String) -> Fut,
    Fut: Future<Output = Result<T, UpstreamError>>,
{
    let mut failures: Vec<UpstreamError> = Vec::new();
    for s in sources {
        match attempt(s.clone()).await {
            Ok(v) => {
                if let Some(f) = failures.last() {
                    tracing::warn!(failed = %f, used = %s, "market upstream failed; second source used");
                }
                return Ok(v);
            }
            Err(e) => failures.push(e),
        }
    }
    let Some(last) = failures.last().cloned() else {
        return Err(UpstreamError::bad("config", "no upstream configured"));
    };
    if failures.len() == 1 {
        return Err(last);
    }
    let kind = if failures.iter().any(|f| f.kind == FailKind::Unavailable) {
        FailKind::Unavailable
    } else {
        FailKind::BadAnswer
    };
    Err(UpstreamError {
        upstream: failures
            .iter()
            .map(|f| f.upstream.clone())
            .collect::<Vec<_>>()
            .join(", "),
        kind,
        message: failures
            .iter()
            .map(|f| f.to_string())
            .collect::<Vec<_>>()
            .join("; "),
    })
}

/// A decimal string or number as f64 (exchanges send prices as strings).
pub fn num(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok(),
        _ => None,
    }
    .filter(|f| f.is_finite())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn hub() -> MarketHub {
        let guard = Arc::new(crate::net::Guard::new(vec![]));
        let client =
            GuardedClient::new(guard, Arc::new(crate::net::SystemResolver), "paycall-test")
                .expect("client");
        let mut up = BTreeMap::new();
        up.insert(
            "prefixed".to_string(),
            Url::parse("https://api.example.com/api/v3").unwrap(),
        );
        MarketHub::new(Arc::new(client), up)
    }

    #[tokio::test]
    async fn cache_keeps_successes_for_their_ttl_and_never_failures() {
        let hub = hub();
        let runs = AtomicUsize::new(0);
        let produce = || async {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok::<_, UpstreamError>(42u32)
        };
        let ttl = Duration::from_millis(300);
        let a = hub.cached("k".into(), ttl, produce()).await.unwrap();
        let b = hub.cached("k".into(), ttl, produce()).await.unwrap();
        assert_eq!((*a.value, *b.value), (42, 42));
        assert_eq!(a.taken, b.taken, "the second answer is the cached one");
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        // Another TTL is another entry: a 15 s route never serves a 60 s route's older data.
        hub.cached("k".into(), Duration::from_secs(60), produce())
            .await
            .unwrap();
        assert_eq!(runs.load(Ordering::SeqCst), 2);
        tokio::time::sleep(Duration::from_millis(600)).await;
        hub.cached("k".into(), ttl, produce()).await.unwrap();
        assert_eq!(runs.load(Ordering::SeqCst), 3, "expired after its TTL");

        let fails = AtomicUsize::new(0);
        for _ in 0..2 {
            let e = hub
                .cached::<u32, _>("f".into(), ttl, async {
                    fails.fetch_add(1, Ordering::SeqCst);
                    Err(UpstreamError::unavailable("up", "down"))
                })
                .await
                .unwrap_err();
            assert_eq!(e.status(), 503);
        }
        assert_eq!(fails.load(Ordering::SeqCst), 2, "failures are not cached");
    }

    #[test]
    fn transport_failures_map_to_503_and_bad_answers_to_502() {
        let t = fetch_error(
            "okx",
            FetchError::Timeout {
                after: Duration::from_secs(6),
            },
        );
        assert_eq!(t.status(), 503);
        assert!(t.to_string().starts_with("okx: "));
        assert_eq!(
            fetch_error("okx", FetchError::Connect("refused".into())).status(),
            503
        );
        let big = fetch_error(
            "llama",
            FetchError::TooLarge {
                declared: None,
                cap: 10,
            },
        );
        assert_eq!(big.status(), 502);
    }

    #[test]
    fn paths_join_under_a_base_path() {
        let hub = hub();
        assert_eq!(
            hub.url("prefixed", "simple/price?ids=bitcoin")
                .unwrap()
                .as_str(),
            "https://api.example.com/api/v3/simple/price?ids=bitcoin"
        );
        assert_eq!(
            hub.url("prefixed", "").unwrap().as_str(),
            "https://api.example.com/api/v3/"
        );
        assert!(hub.url("missing", "x").is_err());
        assert!(hub
            .check_upstream("missing")
            .unwrap_err()
            .contains("prefixed"));
    }

    #[tokio::test]
    async fn first_ok_uses_the_second_source_and_names_both_when_both_fail() {
        let sources = vec!["a".to_string(), "b".to_string()];
        let got = first_ok(&sources, |s| async move {
            if s == "a" {
                Err(UpstreamError::unavailable("a", "down"))
            } else {
                Ok(7)
            }
        })
        .await;
        assert_eq!(got, Ok(7));
        let err = first_ok::<u32, _, _>(&sources, |s| async move {
            Err(UpstreamError::bad(&s, "garbage"))
        })
        .await
        .unwrap_err();
        assert_eq!(err.upstream, "a, b");
        assert_eq!(err.status(), 502);
        assert!(err.message.contains("a: garbage") && err.message.contains("b: garbage"));
        // One source unreachable, the other answering garbage, in either order: 503.
        for down in ["a", "b"] {
            let err = first_ok::<u32, _, _>(&sources, |s| async move {
                if s == down {
                    Err(UpstreamError::unavailable(&s, "down"))
                } else {
                    Err(UpstreamError::bad(&s, "garbage"))
                }
            })
            .await
            .unwrap_err();
            assert_eq!(err.status(), 503, "{down} down: {err}");
            assert_eq!(err.upstream, "a, b");
        }
    }

    #[test]
    fn numbers_come_as_strings_or_numbers() {
        assert_eq!(num(&Value::String("1.5".into())), Some(1.5));
        assert_eq!(num(&serde_json::json!(2)), Some(2.0));
        assert_eq!(num(&Value::String("x".into())), None);
        assert_eq!(num(&Value::Null), None);
    }
}
