//! Demo twins: `GET /api/demo/<name>` runs a paid route's own chain, free, on the fixed input
//! of its `demo:` block in routes.yaml, and answers the demo envelope (docs/decisions.md#demo) around the result.
//!
//! - The demo run sets `ex.demo`, so the chain runner skips the payment stages: a demo is never
//!   charged and never reaches the facilitator.
//! - Samples are cached per route for the route's `demo.ttl_s`. A miss is stampede-safe: moka's
//!   `get_with` lets one caller run the chain while concurrent callers for the same route wait
//!   for its result. A failed sample (status ≥ 400) is kept only `FAILED_SAMPLE_TTL` (30 s), long
//!   enough to shield a failing upstream from a crowd, short enough to recover quickly.
//! - A demo never answers 200 around a failure (docs/decisions.md#demo: `sample_status` is the recorded
//!   sample's, 200). When a refresh fails, the last good sample of the route is served instead
//!   (marked `stale: true`); with none yet, the failure itself is the answer, with its own status
//!   (502, 503, …; `Retry-After` on a 5xx) and the route's error body plus `demo: true`. See
//!   [`choose`].
//! - Demo inputs the service itself can serve point at it (`{base_url}/samples/…`, read from
//!   disk by `own_file` on a demo run), so those demos work on any deployment, offline included.
//! - Requests are rate limited per client (routes.yaml `demo: { per_minute, burst }`) → 429 with
//!   Retry-After. The client is the socket's IP; X-Forwarded-For is believed only when the socket
//!   is a configured trusted proxy (see `client_key`).

pub use crate::net::client_ip::client_key;
use governor::clock::Clock;
use governor::{DefaultKeyedRateLimiter, Quota};
use http::{HeaderMap, Method, StatusCode};
use ipnet::IpNet;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use warp::filters::BoxedFilter;
use warp::Filter;

use super::{respond, App, RouteEntry};
use crate::config::{Config, ConfigError, RouteSpec};
use crate::pipeline::exchange::new_request_id;
use crate::pipeline::reply_headers::cors_preflight;
use crate::pipeline::{self, Exchange, Reply};

/// How long a failed sample is reused (capped by the route's own TTL).
pub const FAILED_SAMPLE_TTL: Duration = Duration::from_secs(30);

/// Everything the demo twins keep between requests.
pub struct DemoState {
    samples: SampleCache,
    /// The latest successful sample per route, kept for as long as the server runs (one per
    /// demo route: bounded by the config).
    last_good: Mutex<HashMap<String, Arc<Sample>>>,
    limiter: ClientLimiter,
    trusted_proxies: Vec<IpNet>,
}

impl DemoState {
    pub fn new(config: &Config) -> DemoState {
        DemoState {
            samples: SampleCache::new(),
            last_good: Mutex::new(HashMap::new()),
            limiter: ClientLimiter::new(config.demo.per_minute, config.demo.burst),
            trusted_proxies: config.service.trusted_proxies.clone(),
        }
    }
}

/// The startup check: a demo input the route's own schema refuses would only ever show a 400.
pub fn check_demo_input(spec: &RouteSpec) -> Option<ConfigError> {
    let demo = spec.demo.as_ref()?;
    let reply = pipeline::input::validate_object(spec, &demo.input).err()?;
    let why = reply
        .body_json()
        .and_then(|v| v["message"].as_str().map(str::to_string))
        .unwrap_or_else(|| "refused".into());
    Some(ConfigError {
        file: demo.origin.file.clone(),
        line: demo.origin.loc.line().max(1),
        column: demo.origin.loc.column().max(1),
        message: format!(
            "demo input of {} does not pass the route's input rules: {why}",
            spec.path
        ),
        hint: "fix demo.input: the demo twin runs it exactly as a caller's input".into(),
    })
}

/// Why a demo twin cannot run on this deployment, when its fixed input passes the route's input
/// rules but its own chain refuses it here: `{base_url}` made it this service's origin, and that
/// origin is one the route refuses (bazaar-check audits https origins only; a local run's base URL
/// is `http://…`). Such a demo is withdrawn at build time (not listed, not offered as a "Try"
/// input) instead of failing for every caller; `None` when the demo runs.
pub fn demo_withdrawn(spec: &RouteSpec, chain: &pipeline::Chain, base_url: &str) -> Option<String> {
    let demo = spec.demo.as_ref()?;
    let input = pipeline::input::validate_object(spec, &demo.input).ok()?;
    let reply = chain.check_input(&input).err()?;
    // A 5xx says the route cannot work now (no browser, no provider key): the demo answers that
    // failure with its own status, as a paid call would, until it can. Only an input the route
    // refuses (4xx) stays refused on this deployment.
    if reply.status.is_server_error() {
        return None;
    }
    let why = reply
        .body_json()
        .and_then(|v| v["message"].as_str().map(str::to_string))
        .unwrap_or_else(|| "its input is refused".into());
    let names_base = demo
        .input
        .values()
        .any(|v| v.as_str().is_some_and(|s| s.starts_with(base_url)));
    let fix = if names_base {
        format!(
            " Its fixed input names this service's base URL ({base_url}): set service.base_url \
             (PAYCALL_BASE_URL) to the origin callers reach it at."
        )
    } else {
        " Change its demo.input in routes.yaml.".to_string()
    };
    Some(format!(
        "the demo twin of {} cannot run on this deployment: {why}.{fix}",
        spec.path
    ))
}

/// A recorded answer of a route's chain.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub status: u16,
    pub body: Value,
    /// How long this sample is reused.
    pub ttl: Duration,
}

/// Per-route samples with per-entry lifetimes; concurrent misses on one key run the producer
/// once.
pub struct SampleCache {
    cache: moka::future::Cache<String, Arc<Sample>>,
}

struct SampleExpiry;

impl moka::Expiry<String, Arc<Sample>> for SampleExpiry {
    fn expire_after_create(
        &self,
        _key: &String,
        value: &Arc<Sample>,
        _created_at: Instant,
    ) -> Option<Duration> {
        Some(value.ttl)
    }
}

impl Default for SampleCache {
    fn default() -> Self {
        Self::new()
    }
}

impl SampleCache {
    pub fn new() -> SampleCache {
        SampleCache {
            // Keys are route names (unknown names are refused before the cache).
            cache: moka::future::Cache::builder()
                .max_capacity(1024)
                .expire_after(SampleExpiry)
                .build(),
        }
    }

    /// The cached sample for `key`, or the result of `produce` (run once however many callers
    /// arrive during the miss). `ttl` applies to a success; a failure is kept at most
    /// `FAILED_SAMPLE_TTL`.
    pub async fn get_or_produce<F>(&self, key: &str, ttl: Duration, produce: F) -> Arc<Sample>
    where
        F: Future<Output = (u16, Value)>,
    {
        self.cache
            .get_with(key.to_string(), async move {
                let (status, body) = produce.await;
                let ttl = if status >= 400 {
                    ttl.min(FAILED_SAMPLE_TTL)
                } else {
                    ttl
                };
                Arc::new(Sample { status, body, ttl })
            })
            .await
    }
}

impl Sample {
    pub fn succeeded(&self) -> bool {
        self.status < 400
    }
}

/// What a demo request is answered with.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// The current sample, a success: the envelope.
    Fresh(Arc<Sample>),
    /// The current sample failed; the last good one is served in the envelope, marked stale.
    Stale(Arc<Sample>),
    /// The current sample failed and there is no good one: its own error status and body.
    Failed(Arc<Sample>),
}

/// The rule: a success is served; a failure is covered by the last good sample when there is
/// one, else answered as the failure it is — never as a 200 envelope around an error.
pub fn choose(current: Arc<Sample>, last_good: Option<Arc<Sample>>) -> Answer {
    if current.succeeded() {
        return Answer::Fresh(current);
    }
    match last_good {
        Some(good) => Answer::Stale(good),
        None => Answer::Failed(current),
    }
}

/// Per-client token buckets.
pub struct ClientLimiter {
    limiter: DefaultKeyedRateLimiter<IpAddr>,
    per_minute: u32,
    burst: u32,
    checks: AtomicU64,
}

/// Forget idle clients every this many checks, so the key map stays bounded.
const SWEEP_EVERY: u64 = 4096;

impl ClientLimiter {
    pub fn new(per_minute: u32, burst: u32) -> ClientLimiter {
        let pm = NonZeroU32::new(per_minute.max(1)).unwrap_or(NonZeroU32::MIN);
        let b = NonZeroU32::new(burst.max(1)).unwrap_or(NonZeroU32::MIN);
        ClientLimiter {
            limiter: DefaultKeyedRateLimiter::keyed(Quota::per_minute(pm).allow_burst(b)),
            per_minute: pm.get(),
            burst: b.get(),
            checks: AtomicU64::new(0),
        }
    }

    /// Ok, or the whole seconds to wait before the next request is allowed (at least 1).
    pub fn check(&self, key: IpAddr) -> Result<(), u64> {
        if self.checks.fetch_add(1, Ordering::Relaxed) % SWEEP_EVERY == SWEEP_EVERY - 1 {
            self.limiter.retain_recent();
            self.limiter.shrink_to_fit();
        }
        match self.limiter.check_key(&key) {
            Ok(()) => Ok(()),
            Err(not_until) => {
                let wait = not_until.wait_time_from(self.limiter.clock().now());
                Err(wait.as_secs_f64().ceil().max(1.0) as u64)
            }
        }
    }
}

/// Routes that have a demo twin: paid, with a `demo:` block.
pub fn demo_routes(app: &App) -> impl Iterator<Item = &RouteEntry> {
    app.routes
        .iter()
        .filter(|r| r.spec.is_paid() && r.spec.demo.is_some())
}

/// "10 minutes", "1 hour", "45 seconds".
pub fn human_duration(d: Duration) -> String {
    let s = d.as_secs();
    let (n, unit) = if s >= 3600 && s % 3600 == 0 {
        (s / 3600, "hour")
    } else if s >= 60 && s % 60 == 0 {
        (s / 60, "minute")
    } else {
        (s, "second")
    };
    format!("{n} {unit}{}", if n == 1 { "" } else { "s" })
}

pub fn filter(app: Arc<App>) -> BoxedFilter<(warp::reply::Response,)> {
    warp::path!("api" / "demo" / String)
        .and(warp::method())
        .and(warp::header::headers_cloned())
        .and(super::listen::remote())
        .then(
            move |name: String, method: Method, headers: HeaderMap, remote| {
                let app = app.clone();
                async move {
                    let id = new_request_id();
                    let reply = handle(&app, &name, &method, &headers, remote).await;
                    let head = method == Method::HEAD;
                    let mut resp = respond::to_response(reply, &id);
                    if head {
                        *resp.body_mut() = Default::default();
                    }
                    resp
                }
            },
        )
        .boxed()
}

/// One demo request (also the MCP `*_demo` tools' answer).
pub async fn handle(
    app: &App,
    name: &str,
    method: &Method,
    headers: &HeaderMap,
    remote: Option<SocketAddr>,
) -> Reply {
    if let Some(r) = refuse_request(app, method, headers, remote) {
        return r;
    }
    let Some(entry) = demo_routes(app).find(|r| r.spec.name == name) else {
        return unknown_demo(app, name);
    };
    let Some(demo) = entry.spec.demo.as_ref() else {
        return Reply::error(StatusCode::NOT_FOUND, "unknown_demo", "no demo");
    };
    let (sample, last_good) = sample_and_last_good(app, entry, demo).await;
    match choose(sample.clone(), last_good) {
        Answer::Fresh(s) => Reply::json(StatusCode::OK, &envelope(app, entry, &s, None))
            .with_header("cache-control", "public, max-age=60"),
        Answer::Stale(good) => {
            tracing::warn!(route = %entry.spec.path, status = sample.status, "demo refresh failed; last good sample served");
            Reply::json(
                StatusCode::OK,
                &envelope(app, entry, &good, Some(sample.status)),
            )
            .with_header("cache-control", "no-store")
        }
        Answer::Failed(failed) => failure(app, entry, &failed),
    }
}

/// What a demo request gets before any sample: the CORS preflight, 405 for a method other than
/// GET or HEAD, 429 past the client's rate limit. None: the request is served.
fn refuse_request(
    app: &App,
    method: &Method,
    headers: &HeaderMap,
    remote: Option<SocketAddr>,
) -> Option<Reply> {
    if *method == Method::OPTIONS {
        return Some(cors_preflight());
    }
    if !matches!(*method, Method::GET | Method::HEAD) {
        return Some(
            Reply::error(
                StatusCode::METHOD_NOT_ALLOWED,
                "method_not_allowed",
                "demo twins answer GET only",
            )
            .with_header("allow", "GET, HEAD, OPTIONS"),
        );
    }
    let state = &app.demo;
    let key = client_key(remote, headers, &state.trusted_proxies);
    let Err(wait) = state.limiter.check(key) else {
        return None;
    };
    Some(
        Reply::error(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limited",
            format!(
                "demo twins allow {} requests per minute per client (burst {}); retry in {wait} s, \
                 or pay for the route itself",
                state.limiter.per_minute, state.limiter.burst
            ),
        )
        .with_header("retry-after", &wait.to_string()),
    )
}

/// The 404 for a name with no demo twin: why it was withdrawn, or the names there are.
fn unknown_demo(app: &App, name: &str) -> Reply {
    if let Some(why) = app
        .route_by_name(name)
        .and_then(|r| r.demo_withdrawn.as_deref())
    {
        return Reply::error(StatusCode::NOT_FOUND, "demo_unavailable", why);
    }
    let names: Vec<&str> = demo_routes(app).map(|r| r.spec.name.as_str()).collect();
    let mut extra = serde_json::Map::new();
    extra.insert("demos".into(), json!(names));
    Reply::error_with(
        StatusCode::NOT_FOUND,
        "unknown_demo",
        format!(
            "there is no demo twin `{name}`; try one of: {}",
            names.join(", ")
        ),
        extra,
    )
}

/// The route's sample (cached, or produced now and counted as a miss) and the last good one
/// kept (this one, when it succeeded).
async fn sample_and_last_good(
    app: &App,
    entry: &RouteEntry,
    demo: &crate::config::RouteDemo,
) -> (Arc<Sample>, Option<Arc<Sample>>) {
    let state = &app.demo;
    let produced = std::sync::atomic::AtomicBool::new(false);
    let sample = state
        .samples
        .get_or_produce(&entry.spec.name, demo.ttl, async {
            produced.store(true, std::sync::atomic::Ordering::Relaxed);
            run_sample(entry).await
        })
        .await;
    let result = if produced.load(std::sync::atomic::Ordering::Relaxed) {
        "miss"
    } else {
        "hit"
    };
    app.metrics
        .demo_cache
        .with_label_values(&[&entry.spec.name, result])
        .inc();
    let last_good = match state.last_good.lock() {
        Ok(mut kept) => {
            if sample.succeeded() {
                kept.insert(entry.spec.name.clone(), sample.clone());
            }
            kept.get(&entry.spec.name).cloned()
        }
        Err(_) => None,
    };
    (sample, last_good)
}

/// A failed sample with no good one to fall back on: the route's own error status and body,
/// marked as the demo's, not cached; a 5xx says when the demo tries again.
fn failure(app: &App, entry: &RouteEntry, sample: &Sample) -> Reply {
    let status = StatusCode::from_u16(sample.status).unwrap_or(StatusCode::BAD_GATEWAY);
    let mut body = match &sample.body {
        Value::Object(m) => m.clone(),
        other => {
            let mut m = serde_json::Map::new();
            m.insert("error".into(), json!("demo_failed"));
            m.insert("message".into(), other.clone());
            m
        }
    };
    body.insert("demo".into(), json!(true));
    body.insert("paid_endpoint".into(), json!(paid_endpoint(app, entry)));
    let mut reply =
        Reply::json(status, &Value::Object(body)).with_header("cache-control", "no-store");
    if status.is_server_error() {
        reply = reply.with_header("retry-after", &sample.ttl.as_secs().max(1).to_string());
    }
    reply
}

fn paid_endpoint(app: &App, entry: &RouteEntry) -> String {
    format!(
        "{}{}",
        app.config.service.base_url.as_str().trim_end_matches('/'),
        entry.spec.path
    )
}

/// Runs the route's chain on its demo input, payment stages skipped.
async fn run_sample(entry: &RouteEntry) -> (u16, Value) {
    let spec = entry.spec.clone();
    let method = if spec.methods.contains(&Method::GET) {
        Method::GET
    } else {
        spec.methods.first().cloned().unwrap_or(Method::GET)
    };
    let mut ex = Exchange::new(spec.clone(), entry.priced.clone(), method);
    ex.demo = true;
    if let Some(demo) = &spec.demo {
        match pipeline::input::validate_object(&spec, &demo.input) {
            Ok(input) => ex.input = input,
            Err(r) => ex.input_error = Some(r),
        }
    }
    super::run_exchange(entry, &mut ex).await;
    match ex.reply.take() {
        Some(r) => {
            let body = r.body_json().unwrap_or_else(|| {
                json!({
                    "error": "not_json",
                    "message": "the route answered a body that is not JSON",
                })
            });
            (r.status.as_u16(), body)
        }
        None => (
            500,
            json!({"error": "internal_error", "message": "no reply"}),
        ),
    }
}

/// The demo envelope (docs/decisions.md#demo). `refresh_failed`: the status of the failed refresh when `sample` is
/// the last good one served in its place (adds `stale: true`).
fn envelope(app: &App, entry: &RouteEntry, sample: &Sample, refresh_failed: Option<u16>) -> Value {
    let spec = &entry.spec;
    let paid_endpoint = paid_endpoint(app, entry);
    let price = spec
        .price
        .as_ref()
        .map(|p| format!("${}", p.usd))
        .unwrap_or_default();
    let (describe, ttl) = spec
        .demo
        .as_ref()
        .map(|d| (d.describe.clone(), d.ttl))
        .unwrap_or_default();
    let stale_note = refresh_failed
        .map(|s| format!(" The latest refresh failed (HTTP {s}); this is the last good sample."))
        .unwrap_or_default();
    let mut v = json!({
        "demo": true,
        "note": format!(
            "Free sample of {} on a fixed input, refreshed every {}. Pay at {paid_endpoint} for \
             your own input: {price} per call with x402 v2 (the unpaid call answers 402 with a \
             PAYMENT-REQUIRED challenge; sign it and repeat with PAYMENT-SIGNATURE).{stale_note}",
            spec.path,
            human_duration(ttl)
        ),
        "paid_endpoint": paid_endpoint,
        "price": price,
        "fixed_input": describe,
        "sample_status": sample.status,
        "sample": sample.body,
    });
    if refresh_failed.is_some() {
        v["stale"] = json!(true);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;
    use std::sync::atomic::AtomicUsize;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_misses_run_the_producer_once() {
        let cache = Arc::new(SampleCache::new());
        let runs = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for _ in 0..20 {
            let cache = cache.clone();
            let runs = runs.clone();
            tasks.push(tokio::spawn(async move {
                cache
                    .get_or_produce("http", Duration::from_secs(60), async move {
                        let n = runs.fetch_add(1, Ordering::SeqCst) + 1;
                        tokio::time::sleep(Duration::from_millis(200)).await;
                        (200, json!({ "run": n }))
                    })
                    .await
            }));
        }
        for t in tasks {
            let sample = t.await.unwrap();
            assert_eq!(sample.body, json!({"run": 1}));
        }
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        // another key is another sample
        let other = cache
            .get_or_produce("fetch", Duration::from_secs(60), async { (200, json!(2)) })
            .await;
        assert_eq!(other.body, json!(2));
    }

    #[tokio::test]
    async fn samples_expire_after_their_ttl_and_failures_sooner() {
        let cache = SampleCache::new();
        let runs = AtomicUsize::new(0);
        let produce = |status| {
            let n = runs.fetch_add(1, Ordering::SeqCst);
            async move { (status, json!(n)) }
        };
        let a = cache
            .get_or_produce("ok", Duration::from_millis(300), produce(200))
            .await;
        let b = cache
            .get_or_produce("ok", Duration::from_millis(300), produce(200))
            .await;
        assert_eq!(a.body, b.body, "reused within the TTL");
        let bounded = Duration::from_secs(3600);
        let failed = cache.get_or_produce("bad", bounded, produce(502)).await;
        assert_eq!(failed.ttl, FAILED_SAMPLE_TTL, "a failure is kept briefly");
        let fine = cache.get_or_produce("good", bounded, produce(200)).await;
        assert_eq!(fine.ttl, bounded);
        tokio::time::sleep(Duration::from_millis(450)).await;
        let c = cache
            .get_or_produce("ok", Duration::from_millis(300), produce(200))
            .await;
        assert_ne!(a.body, c.body, "produced again after the TTL");
    }

    #[test]
    fn a_failure_is_never_served_as_a_sample() {
        let sample = |status| {
            Arc::new(Sample {
                status,
                body: json!({ "status": status }),
                ttl: Duration::from_secs(60),
            })
        };
        let good = sample(200);
        let bad = sample(503);
        assert_eq!(choose(good.clone(), None), Answer::Fresh(good.clone()));
        assert_eq!(
            choose(good.clone(), Some(sample(200))),
            Answer::Fresh(good.clone()),
            "the current success wins"
        );
        assert_eq!(
            choose(bad.clone(), Some(good.clone())),
            Answer::Stale(good.clone())
        );
        assert_eq!(choose(bad.clone(), None), Answer::Failed(bad.clone()));
        assert_eq!(choose(sample(404), None), Answer::Failed(sample(404)));
    }

    #[test]
    fn limiter_allows_the_burst_then_asks_to_wait() {
        let l = ClientLimiter::new(6, 3);
        let a: IpAddr = "198.51.100.7".parse().unwrap();
        let b: IpAddr = "198.51.100.8".parse().unwrap();
        for _ in 0..3 {
            assert!(l.check(a).is_ok());
        }
        let wait = l.check(a).unwrap_err();
        assert!((1..=10).contains(&wait), "one token per 10 s: {wait}");
        assert!(l.check(b).is_ok(), "clients have their own buckets");
    }

    fn xff(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert("x-forwarded-for", HeaderValue::from_str(v).unwrap());
        h
    }

    fn sock(ip: &str) -> Option<SocketAddr> {
        Some(SocketAddr::new(ip.parse().unwrap(), 40000))
    }

    #[test]
    fn forwarded_for_is_believed_only_from_trusted_proxies() {
        let none: Vec<IpNet> = vec![];
        let proxies: Vec<IpNet> = vec!["10.0.0.0/8".parse().unwrap()];
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        // untrusted socket: header ignored
        assert_eq!(
            client_key(sock("203.0.113.5"), &xff("1.2.3.4"), &none),
            ip("203.0.113.5")
        );
        assert_eq!(
            client_key(sock("203.0.113.5"), &xff("1.2.3.4"), &proxies),
            ip("203.0.113.5")
        );
        // trusted socket: right-most untrusted hop
        assert_eq!(
            client_key(
                sock("10.0.0.2"),
                &xff("6.6.6.6, 1.2.3.4, 10.0.0.9"),
                &proxies
            ),
            ip("1.2.3.4")
        );
        // several header lines are one list
        let mut h = xff("6.6.6.6");
        h.append("x-forwarded-for", HeaderValue::from_static("1.2.3.4"));
        assert_eq!(client_key(sock("10.0.0.2"), &h, &proxies), ip("1.2.3.4"));
        // trusted socket without header: the proxy itself
        assert_eq!(
            client_key(sock("10.0.0.2"), &HeaderMap::new(), &proxies),
            ip("10.0.0.2")
        );
        // garbage stops the walk at the last believed address
        assert_eq!(
            client_key(
                sock("10.0.0.2"),
                &xff("1.2.3.4, nonsense, 10.0.0.7"),
                &proxies
            ),
            ip("10.0.0.7")
        );
        // every hop trusted: the left-most
        assert_eq!(
            client_key(sock("10.0.0.2"), &xff("10.1.1.1, 10.0.0.7"), &proxies),
            ip("10.1.1.1")
        );
        // ports and IPv4-mapped forms
        assert_eq!(
            client_key(sock("10.0.0.2"), &xff("1.2.3.4:5555"), &proxies),
            ip("1.2.3.4")
        );
        assert_eq!(
            client_key(sock("::ffff:203.0.113.5"), &HeaderMap::new(), &none),
            ip("203.0.113.5")
        );
        // IPv6 keyed by /64
        assert_eq!(
            client_key(sock("2001:db8:1:2:aaaa::1"), &HeaderMap::new(), &none),
            ip("2001:db8:1:2::")
        );
        assert_eq!(client_key(None, &HeaderMap::new(), &none), ip("0.0.0.0"));
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(human_duration(Duration::from_secs(600)), "10 minutes");
        assert_eq!(human_duration(Duration::from_secs(3600)), "1 hour");
        assert_eq!(human_duration(Duration::from_secs(86400)), "24 hours");
        assert_eq!(human_duration(Duration::from_secs(90)), "90 seconds");
        assert_eq!(human_duration(Duration::from_secs(1)), "1 second");
    }
}
