//! The warp server: one filter per route built from the RouteSpecs at startup, the discovery
//! and demo routes, common headers (request id, CORS, cache control), logs, graceful shutdown.
//!
//! Nothing route-specific lives here: a route is YAML plus stages.

pub mod admin;
pub mod availability;
pub mod demo;
pub mod discovery;
pub mod fast_challenge;
pub mod listen;
pub mod reference;
pub mod respond;
pub mod services;

use bytes::{Bytes, BytesMut};
use futures_util::StreamExt;
use http::{HeaderMap, Method, StatusCode};
use serde_json::Value;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;
use warp::filters::BoxedFilter;
use warp::Filter;

use crate::config::{Config, ConfigError, ConfigErrors, RouteSpec};
use crate::pipeline::reply_headers::cors_preflight;
use crate::pipeline::{self, BuildCtx, Chain, Exchange, Reply, Services, StageFactory};
use crate::stages::REGISTRY;

pub use respond::to_response;

/// A route with its built chain.
pub struct RouteEntry {
    pub spec: Arc<RouteSpec>,
    pub chain: Arc<Chain>,
    pub priced: Option<Arc<Value>>,
    /// Why this route's demo twin was withdrawn on this deployment (see
    /// `demo::demo_withdrawn`); its `spec.demo` is then `None`.
    pub demo_withdrawn: Option<String>,
}

/// Everything a request needs, built once.
pub struct App {
    pub config: Arc<Config>,
    pub routes: Vec<RouteEntry>,
    pub services: Services,
    pub started: Instant,
    pub demo: demo::DemoState,
    /// Paid exchanges running detached from their connection (see `handle_route`).
    pub paid_calls: Arc<PaidCalls>,
    /// The hash and load time of the configuration this App was built from.
    pub stamp: crate::ops::reload::ConfigStamp,
    pub metrics: Arc<crate::ops::metrics::Metrics>,
}

/// Counts paid exchanges in flight, so shutdown can wait for their settlements.
#[derive(Default)]
pub struct PaidCalls {
    count: std::sync::atomic::AtomicUsize,
    idle: tokio::sync::Notify,
}

/// Held by one paid exchange; dropping it counts the exchange out.
pub struct PaidCall(Arc<PaidCalls>);

impl PaidCalls {
    pub fn enter(self: &Arc<Self>) -> PaidCall {
        self.count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        PaidCall(self.clone())
    }

    pub fn in_flight(&self) -> usize {
        self.count.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Resolves when no paid exchange is in flight, or after `limit`.
    pub async fn drained(&self, limit: std::time::Duration) -> bool {
        let wait = async {
            loop {
                let notified = self.idle.notified();
                if self.in_flight() == 0 {
                    return;
                }
                notified.await;
            }
        };
        tokio::time::timeout(limit, wait).await.is_ok()
    }
}

impl Drop for PaidCall {
    fn drop(&mut self) {
        if self
            .0
            .count
            .fetch_sub(1, std::sync::atomic::Ordering::SeqCst)
            == 1
        {
            self.0.idle.notify_waiters();
        }
    }
}

impl App {
    pub fn route_by_name(&self, name: &str) -> Option<&RouteEntry> {
        self.routes.iter().find(|r| r.spec.name == name)
    }
}

/// Builds every route's chain; all problems are reported together, located.
pub fn build_app(config: Config, services: Services) -> Result<App, ConfigErrors> {
    build_app_with(config, services, REGISTRY)
}

/// As `build_app`, with another stage registry (tests add stages of their own to it).
pub fn build_app_with(
    config: Config,
    services: Services,
    registry: &[StageFactory],
) -> Result<App, ConfigErrors> {
    let config = Arc::new(config);
    let mut errors: Vec<ConfigError> = Vec::new();
    let mut routes = Vec::new();
    for spec in &config.routes {
        let spec = Arc::new(spec.clone());
        let ctx = BuildCtx {
            config: &config,
            route: &spec,
            services: &services,
        };
        if let Some(e) = demo::check_demo_input(&spec) {
            errors.push(e);
        }
        match pipeline::build_chain(registry, &ctx) {
            Ok(chain) => {
                let priced = pipeline::priced_block(&spec, &config.payment.accepts).map(Arc::new);
                let base = config.service.base_url.as_str().trim_end_matches('/');
                let demo_withdrawn = demo::demo_withdrawn(&spec, &chain, base);
                let spec = match &demo_withdrawn {
                    Some(why) => {
                        tracing::warn!(route = %spec.path, "{why}");
                        let mut s = (*spec).clone();
                        s.demo = None;
                        Arc::new(s)
                    }
                    None => spec,
                };
                routes.push(RouteEntry {
                    spec,
                    chain: Arc::new(chain),
                    priced,
                    demo_withdrawn,
                })
            }
            Err(mut e) => errors.append(&mut e),
        }
    }
    if !errors.is_empty() {
        errors.sort_by(|a, b| (&a.file, a.line, a.column).cmp(&(&b.file, b.line, b.column)));
        errors.dedup();
        return Err(ConfigErrors(errors));
    }
    let demo = demo::DemoState::new(&config);
    let metrics = services
        .get::<crate::ops::metrics::Metrics>()
        .unwrap_or_default();
    let stamp = crate::ops::reload::ConfigStamp::of(&config);
    Ok(App {
        config,
        routes,
        services,
        started: Instant::now(),
        paid_calls: Arc::new(PaidCalls::default()),
        demo,
        stamp,
        metrics,
    })
}

/// The request as the route handlers see it.
pub struct Incoming {
    pub method: Method,
    pub query: String,
    pub headers: HeaderMap,
    pub body: Result<Bytes, Reply>,
    pub remote: Option<SocketAddr>,
    /// When the request's head was read, before its body: stages' deadlines count from here.
    pub arrived: std::time::Instant,
}

fn exact_path(path: String) -> impl Filter<Extract = (), Error = warp::Rejection> + Clone {
    let path = Arc::new(path);
    warp::path::full()
        .and_then(move |full: warp::path::FullPath| {
            let path = path.clone();
            async move {
                if full.as_str() == path.as_str() {
                    Ok(())
                } else {
                    Err(warp::reject::not_found())
                }
            }
        })
        .untuple_one()
}

/// Method, query, headers, capped body and peer address of any request.
fn incoming(
    max_body: usize,
) -> impl Filter<Extract = (Incoming,), Error = warp::Rejection> + Clone {
    warp::method()
        .and(warp::query::raw().or(warp::any().map(String::new)).unify())
        .and(warp::header::headers_cloned())
        .and(warp::body::stream())
        .and(listen::remote())
        .then(
            move |method: Method, query: String, headers: HeaderMap, body, remote| async move {
                let arrived = std::time::Instant::now();
                let body = if pipeline::input::reads_body(&method) {
                    read_capped(body, max_body).await
                } else {
                    Ok(Bytes::new())
                };
                Incoming {
                    method,
                    query,
                    headers,
                    body,
                    remote,
                    arrived,
                }
            },
        )
}

/// Reads a body up to `cap` bytes; more is a 413 without reading the rest.
pub async fn read_capped<S, B>(stream: S, cap: usize) -> Result<Bytes, Reply>
where
    S: futures_util::Stream<Item = Result<B, warp::Error>> + Unpin,
    B: bytes::Buf,
{
    let mut stream = stream;
    let mut buf = BytesMut::new();
    while let Some(chunk) = stream.next().await {
        let mut chunk = chunk.map_err(|_| {
            Reply::error(
                StatusCode::BAD_REQUEST,
                "invalid_body",
                "the request body could not be read",
            )
        })?;
        while chunk.has_remaining() {
            let piece = chunk.chunk();
            if buf.len() + piece.len() > cap {
                return Err(pipeline::input::too_large(cap));
            }
            buf.extend_from_slice(piece);
            let n = piece.len();
            chunk.advance(n);
        }
    }
    Ok(buf.freeze())
}

/// The complete filter tree of the service.
pub fn filter(app: Arc<App>) -> BoxedFilter<(warp::reply::Response,)> {
    let max_body = app
        .routes
        .iter()
        .map(|r| r.spec.max_request_bytes)
        .max()
        .unwrap_or(64_000);
    let mut tree: BoxedFilter<(warp::reply::Response,)> = discovery::filter(app.clone());
    tree = tree.or(demo::filter(app.clone())).unify().boxed();
    tree = tree.or(crate::mcp::filter(app.clone())).unify().boxed();
    for (i, entry) in app.routes.iter().enumerate() {
        let app2 = app.clone();
        let route_filter = exact_path(entry.spec.path.clone())
            .and(incoming(max_body))
            .then(move |inc: Incoming| {
                let app = app2.clone();
                async move { handle_route(app, i, inc).await }
            })
            .boxed();
        tree = tree.or(route_filter).unify().boxed();
    }
    let fallback = warp::path::full()
        .and(warp::method())
        .map(|p: warp::path::FullPath, m: Method| {
            let r = if m == Method::OPTIONS {
                cors_preflight()
            } else {
                Reply::error(
                    StatusCode::NOT_FOUND,
                    "not_found",
                    format!(
                        "no route {}; the catalogue is at /openapi.json and /llms.txt",
                        p.as_str()
                    ),
                )
            };
            respond::to_response(r, &crate::pipeline::exchange::new_request_id())
        })
        .boxed();
    tree.or(fallback).unify().boxed()
}

/// The ready-made answer of route `index` to a request that carries no payment (its gate's
/// unpaid 402), or None when the request needs the full path: a CORS preflight, a method the
/// route does not serve, a payment, a browser (see `Stage::unpaid_answer`). Checked before the
/// body is read; `handle_route` gives the same answer to the same request.
pub fn unpaid_answer(
    app: &App,
    index: usize,
    method: &Method,
    headers: &HeaderMap,
) -> Option<Reply> {
    let entry = app.routes.get(index)?;
    // A route that cannot work answers 503 before any challenge (`handle_route`), never a 402.
    if !entry.spec.is_paid() || availability::check(app, entry).is_err() {
        return None;
    }
    let preflight =
        *method == Method::OPTIONS && headers.contains_key("access-control-request-method");
    let probe = matches!(*method, Method::OPTIONS | Method::HEAD);
    if preflight || !probe && !entry.spec.methods.contains(method) {
        return None;
    }
    entry.chain.unpaid_answer(method, headers)
}

/// One request on a paid or free route: method check, CORS, input, the chain, headers.
pub async fn handle_route(app: Arc<App>, index: usize, inc: Incoming) -> warp::reply::Response {
    let entry = &app.routes[index];
    if let Some(r) = answer_before_exchange(&app, entry, &inc.method, &inc.headers) {
        return respond::to_response(r, &crate::pipeline::exchange::new_request_id());
    }
    let spec = entry.spec.clone();
    let method = inc.method.clone();
    // A plain OPTIONS or HEAD on a paid route is answered with the challenge, free.
    let probe_only = matches!(method, Method::OPTIONS | Method::HEAD);
    let mut ex = exchange_of(entry, inc, probe_only);
    // A call carrying a payment runs detached from the connection: once a payment is verified,
    // its work, its settlement and its ledger row finish even if the client hangs up (dropping
    // this future does not cancel a spawned task), and shutdown waits for it.
    let paid_call = spec.is_paid() && !probe_only && ex.headers.contains_key("payment-signature");
    if paid_call {
        let guard = app.paid_calls.enter();
        let app2 = app.clone();
        let task = tokio::spawn(async move {
            let _guard = guard;
            run_exchange(&app2.routes[index], &mut ex).await;
            crate::ops::observe_exchange(&app2.metrics, &app2.routes[index], &ex);
            ex
        });
        ex = match task.await {
            Ok(ex) => ex,
            Err(e) => {
                tracing::error!(error = %e, route = %spec.path, "paid exchange task failed");
                let r = Reply::error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "internal_error",
                    "the route failed unexpectedly; you were not charged",
                );
                return respond::to_response(r, &crate::pipeline::exchange::new_request_id());
            }
        };
    } else {
        run_exchange(entry, &mut ex).await;
        crate::ops::observe_exchange(&app.metrics, entry, &ex);
    }
    response_of(ex, &method)
}

/// What a request gets before any exchange is made: the CORS preflight's 204 (and a plain
/// OPTIONS on a free route), 405 for a method the route does not serve, and a paid route's 503
/// when it cannot work now. None: the request goes to the chain.
fn answer_before_exchange(
    app: &App,
    entry: &RouteEntry,
    method: &Method,
    headers: &HeaderMap,
) -> Option<Reply> {
    let spec = &entry.spec;
    let is_preflight =
        *method == Method::OPTIONS && headers.contains_key("access-control-request-method");
    if is_preflight || (*method == Method::OPTIONS && !spec.is_paid()) {
        return Some(cors_preflight());
    }
    let probe_only = matches!(*method, Method::OPTIONS | Method::HEAD);
    if !probe_only && !spec.methods.contains(method) {
        let allow: Vec<&str> = spec.methods.iter().map(Method::as_str).collect();
        let r = Reply::error(
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
            format!("{} accepts {}", spec.path, allow.join(", ")),
        )
        .with_header("allow", &format!("{}, OPTIONS", allow.join(", ")));
        return Some(r);
    }
    // The hook before the payment gate: a paid route that cannot work now answers 503 with
    // Retry-After instead of a challenge (a 402 would invite a payment that can only fail).
    if spec.is_paid() {
        if let Err(reason) = availability::check(app, entry) {
            return Some(availability::unavailable_reply(&spec.path, &reason));
        }
    }
    None
}

/// The exchange of a request: its parts, and its input validated (a probe's is not).
fn exchange_of(entry: &RouteEntry, inc: Incoming, probe_only: bool) -> Exchange {
    let spec = &entry.spec;
    let mut ex = Exchange::new(spec.clone(), entry.priced.clone(), inc.method.clone());
    ex.arrived = inc.arrived;
    ex.query = inc.query;
    ex.headers = inc.headers;
    ex.remote = inc.remote;
    match inc.body {
        Ok(b) => ex.body = b,
        Err(r) => ex.input_error = Some(r),
    }
    if ex.input_error.is_none() && !probe_only {
        match pipeline::input::validate(spec, &ex.method, &ex.query, &ex.body) {
            Ok(input) => ex.input = input,
            Err(r) => ex.input_error = Some(r),
        }
    }
    ex
}

/// The finished exchange's response: its reply (no body for a HEAD), with what the request
/// log line reads (the payment's outcome, the facilitator used) in its extensions.
fn response_of(mut ex: Exchange, method: &Method) -> warp::reply::Response {
    let mut reply = ex.reply.take().unwrap_or_else(|| {
        Reply::error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal_error",
            "no reply",
        )
    });
    if *method == Method::HEAD {
        reply.body = Bytes::new();
    }
    let outcome = if ex.demo {
        None
    } else {
        ex.slots.get::<crate::payment::Settled>().map(|s| s.outcome)
    };
    let used = ex
        .slots
        .get::<crate::payment::paid::FacilitatorUsed>()
        .cloned();
    // Demos skip the payment stages, so they have no verify times and get no header.
    let timing = crate::payment::timing::server_timing(
        ex.arrived,
        std::time::Instant::now(),
        ex.slots.get::<crate::payment::timing::VerifyTimes>(),
        ex.slots.get::<crate::payment::timing::SettleTimes>(),
    );
    if let Some(value) = timing.and_then(|t| http::HeaderValue::from_str(&t).ok()) {
        reply.headers.insert("server-timing", value);
    }
    let mut resp = respond::to_response(reply, &ex.id);
    if let Some(o) = outcome {
        resp.extensions_mut().insert(PaymentOutcome(o));
    }
    if let Some(used) = used {
        resp.extensions_mut().insert(used);
    }
    resp
}

/// What the settle stage made of a paid call, carried on its response to the request log line
/// (`listen::RequestLog`); absent when no payment was worked (402s, demos, bad input).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PaymentOutcome(pub crate::payment::Outcome);

/// Runs the chain. The request's log line is written by the listener (`listen::RequestLog`),
/// once, from the response; a demo sample's run is a debug line under its demo request's.
pub async fn run_exchange(entry: &RouteEntry, ex: &mut Exchange) {
    entry.chain.run(ex).await;
    if ex.demo {
        tracing::debug!(
            request_id = %ex.id,
            route = %entry.spec.path,
            status = ex.reply.as_ref().map(|r| r.status.as_u16()).unwrap_or(0),
            elapsed_ms = ex.elapsed_ms(),
            "demo sample produced (not charged)"
        );
    }
}

/// Serves `app` (no live reload, no admin listener) until `shutdown` resolves, then lets
/// in-flight requests finish for the grace period.
pub async fn serve(
    app: Arc<App>,
    listener: tokio::net::TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    serve_live(
        crate::ops::reload::Live::new(app, None),
        listener,
        None,
        shutdown,
    )
    .await
}

/// Serves the App held by `live` (swapped by live reloads) and, when given, the admin listener,
/// until `shutdown` resolves; then stops accepting, lets in-flight requests finish for the grace
/// period and waits for every paid call's settlement.
pub async fn serve_live(
    live: Arc<crate::ops::reload::Live>,
    listener: tokio::net::TcpListener,
    admin: Option<tokio::net::TcpListener>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let app = live.app();
    services::start(&app.services);
    let grace = app.config.service.shutdown_grace;
    let (notify_tx, notify_rx) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        shutdown.await;
        let _ = notify_tx.send(true);
    });
    let stopping = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|v| *v).await;
    };
    if let Some(admin) = admin {
        let filter = admin::filter(live.clone());
        tokio::spawn(
            warp::serve(filter)
                .incoming(admin)
                .graceful(stopping(notify_rx.clone()))
                .run(),
        );
    }
    let server = listen::run(live.clone(), listener, stopping(notify_rx.clone()));
    tokio::pin!(server);
    tokio::select! {
        _ = &mut server => {}
        _ = async {
            stopping(notify_rx.clone()).await;
            tokio::time::sleep(grace).await;
        } => {
            tracing::warn!("shutdown grace period over; dropping remaining connections");
        }
    }
    // Paid exchanges outlive their connections: let each finish its settlement and ledger row
    // (bounded by the facilitator's settle timeout, asked twice, plus a margin). Reloaded Apps
    // share one `PaidCalls`.
    let app = live.app();
    let paid = app.paid_calls.in_flight();
    if paid > 0 {
        tracing::info!(paid, "waiting for paid calls to settle before stopping");
        // Several facilitators: a verify may be asked of each, a settle of each unreachable one.
        let fs = &app.config.payment.facilitators;
        let longest_settle = fs
            .iter()
            .map(|f| f.settle_timeout)
            .max()
            .unwrap_or_default();
        let limit = longest_settle * 2
            + fs.iter()
                .map(|f| f.verify_timeout)
                .sum::<std::time::Duration>()
            + std::time::Duration::from_secs(30);
        if !app.paid_calls.drained(limit).await {
            tracing::error!(
                left = app.paid_calls.in_flight(),
                "paid calls still running at exit; the ledger reconciles them at the next start"
            );
        }
    }
    services::shutdown(&app.services).await;
}

/// Resolves on Ctrl-C or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
    tracing::info!("shutdown signal received");
}
