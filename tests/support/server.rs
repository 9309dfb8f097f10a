//! Test support: paycall's real server started in-process on 127.0.0.1:0 with a given Config,
//! temp config dirs written from YAML strings, a loopback-only HTTP client, and a few stages
//! that only tests register (a run counter, an unready stage, a panicking stage).

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use paycall::config::{self, Config, ConfigErrors};
use paycall::pipeline::{params, BuildCtx, Exchange, Flow, Phase, Stage, StageFactory};
use paycall::server::{self, App};

pub const EVM_PAY_TO: &str = "0xdF1D7b5C056D78F5aA14138a5695f7FF6F7aCFf3";
pub const SOL_PAY_TO: &str = "FYA23SLFVpETuY13UnwTDJA9W6ipiL1sKXd6XJUhViA1";

/// The requirement the facilitator tests verify and settle: 0.005 USDC on Base to
/// [`EVM_PAY_TO`], no `extra`.
pub fn requirement() -> paycall::x402::Requirement {
    paycall::x402::Requirement {
        scheme: "exact".into(),
        network: "eip155:8453".into(),
        amount: "5000".into(),
        asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913".into(),
        pay_to: EVM_PAY_TO.into(),
        max_timeout_seconds: 120,
        extra: Default::default(),
    }
}

/// The environment tests load configs with: payTo addresses only, nothing from the real env.
pub fn test_env(key: &str) -> Option<String> {
    match key {
        "PAYCALL_EVM_PAY_TO" => Some(EVM_PAY_TO.into()),
        "PAYCALL_SOLANA_PAY_TO" => Some(SOL_PAY_TO.into()),
        "PAYCALL_LEDGER_URL" => Some("sqlite::memory:".into()),
        _ => None,
    }
}

/// The shipped routes.yaml loaded with [`test_env`] and the facilitator at `facilitator`.
pub fn shipped_config_on(facilitator: &str) -> Config {
    let routes = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("routes.yaml");
    let facilitator = facilitator.to_string();
    let env = move |k: &str| match k {
        "PAYCALL_FACILITATOR_URL" => Some(facilitator.clone()),
        other => test_env(other),
    };
    config::load_with_env(&routes, &env).unwrap_or_else(|e| panic!("{e}"))
}

/// A config folder in a temp dir: routes.yaml + pipelines/<name>.yaml.
pub struct ConfigDir {
    pub dir: tempfile::TempDir,
    pub routes: PathBuf,
}

impl ConfigDir {
    pub fn pipeline_path(&self, name: &str) -> PathBuf {
        self.dir
            .path()
            .join("pipelines")
            .join(format!("{name}.yaml"))
    }
    /// Line `n` (1-based) of a file, for asserting where an error points.
    pub fn line_of(&self, file: &std::path::Path, n: u64) -> String {
        let text = std::fs::read_to_string(file).expect("readable config file");
        text.lines()
            .nth(n.saturating_sub(1) as usize)
            .unwrap_or_else(|| panic!("{} has no line {n}", file.display()))
            .to_string()
    }
}

/// Writes routes.yaml and each (name, yaml) pipeline as pipelines/<name>.yaml.
pub fn write_config(routes_yaml: &str, pipelines: &[(&str, &str)]) -> ConfigDir {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir(dir.path().join("pipelines")).expect("pipelines dir");
    for (name, yaml) in pipelines {
        std::fs::write(
            dir.path().join("pipelines").join(format!("{name}.yaml")),
            yaml,
        )
        .expect("write pipeline");
    }
    let routes = dir.path().join("routes.yaml");
    std::fs::write(&routes, routes_yaml).expect("write routes.yaml");
    ConfigDir { dir, routes }
}

pub fn load(dir: &ConfigDir) -> Result<Config, ConfigErrors> {
    config::load_with_env(&dir.routes, &test_env)
}

/// The header of a test routes.yaml: service, payment (facilitator at `facilitator`), demo
/// quota and trusted proxies. Append `routes:` to it.
pub fn service_yaml(
    facilitator: &str,
    demo_per_minute: u32,
    demo_burst: u32,
    trusted: &[&str],
) -> String {
    format!(
        r#"service:
  name: paycall-test
  version: 1.0.0
  description: Test service.
  base_url: https://api.paycall.test
  backup_url: https://backup.paycall.test
  listen: 127.0.0.1:0
  trusted_proxies: [{trusted}]
  shutdown_grace_s: 5
payment:
  facilitator:
    url: {facilitator}
  accepts:
    - network: eip155:8453
      name: base
      asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
      decimals: 6
      eip712: {{ name: USD Coin, version: "2" }}
    - network: solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp
      name: solana
      asset: EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v
      decimals: 6
demo:
  per_minute: {demo_per_minute}
  burst: {demo_burst}
"#,
        trusted = trusted.join(", ")
    )
}

/// A facilitator URL where nothing listens (port 9, discard, is closed on loopback here) for
/// tests that never need one.
pub const NO_FACILITATOR: &str = "http://127.0.0.1:9/";

// ---------------------------------------------------------------------------------------------
// Test-only stages

fn counters() -> &'static Mutex<HashMap<String, Arc<AtomicUsize>>> {
    static C: OnceLock<Mutex<HashMap<String, Arc<AtomicUsize>>>> = OnceLock::new();
    C.get_or_init(Default::default)
}

fn counter(name: &str) -> Arc<AtomicUsize> {
    counters()
        .lock()
        .unwrap()
        .entry(name.to_string())
        .or_default()
        .clone()
}

/// How many times the `count` stage with `{ counter: name }` has run.
pub fn runs(name: &str) -> usize {
    counter(name).load(Ordering::SeqCst)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CountParams {
    counter: String,
    #[serde(default)]
    delay_ms: u64,
    /// Runs after this many answer 502, as an upstream that went down.
    #[serde(default)]
    fail_after: Option<usize>,
}

/// `count`: stands for an upstream call; counts its runs, waits, answers `{run: n}` (or 502
/// once past `fail_after` runs).
struct Count {
    runs: Arc<AtomicUsize>,
    delay: Duration,
    fail_after: Option<usize>,
}

#[async_trait]
impl Stage for Count {
    async fn run(&self, ex: &mut Exchange) -> Flow {
        let n = self.runs.fetch_add(1, Ordering::SeqCst) + 1;
        tokio::time::sleep(self.delay).await;
        if self.fail_after.is_some_and(|f| n > f) {
            return ex.fail(
                http::StatusCode::BAD_GATEWAY,
                "upstream_error",
                format!("run {n}: the upstream failed"),
            );
        }
        ex.respond_ok(json!({ "run": n }))
    }
}

fn build_count(_: &BuildCtx<'_>, p: Value) -> Result<Arc<dyn Stage>, String> {
    let p: CountParams = params(p)?;
    Ok(Arc::new(Count {
        runs: counter(&p.counter),
        delay: Duration::from_millis(p.delay_ms),
        fail_after: p.fail_after,
    }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UnreadyParams {
    reason: String,
}

/// `unready`: passes requests on but reports itself not ready (as a screenshot stage would
/// without chromium).
struct Unready(String);

#[async_trait]
impl Stage for Unready {
    async fn run(&self, _ex: &mut Exchange) -> Flow {
        Flow::Continue
    }
    fn readiness(&self) -> Result<(), String> {
        Err(self.0.clone())
    }
}

fn build_unready(_: &BuildCtx<'_>, p: Value) -> Result<Arc<dyn Stage>, String> {
    let p: UnreadyParams = params(p)?;
    Ok(Arc::new(Unready(p.reason)))
}

/// `panic`: a stage with a bug.
struct Panics;

#[async_trait]
impl Stage for Panics {
    async fn run(&self, _ex: &mut Exchange) -> Flow {
        panic!("test stage panics on purpose")
    }
}

fn build_panic(_: &BuildCtx<'_>, p: Value) -> Result<Arc<dyn Stage>, String> {
    let _: serde_json::Map<String, Value> = params(p)?;
    Ok(Arc::new(Panics))
}

/// Stand-in for a payment stage this build does not have yet: building works (so paid routes
/// exist for discovery and demo tests) but running it fails loudly with a 500. Demo runs skip
/// payment stages, so only a test that calls a paid route for real would see it.
struct MissingPaymentStage(&'static str);

#[async_trait]
impl Stage for MissingPaymentStage {
    async fn run(&self, ex: &mut Exchange) -> Flow {
        ex.fail(
            http::StatusCode::INTERNAL_SERVER_ERROR,
            "test_stand_in",
            format!("{} is a test stand-in and must never run", self.0),
        )
    }
}

fn build_gate_stand_in(_: &BuildCtx<'_>, _: Value) -> Result<Arc<dyn Stage>, String> {
    Ok(Arc::new(MissingPaymentStage("payment_gate")))
}

fn build_settle_stand_in(_: &BuildCtx<'_>, _: Value) -> Result<Arc<dyn Stage>, String> {
    Ok(Arc::new(MissingPaymentStage("settle")))
}

/// paycall's registry plus the test stages, plus stand-ins for payment_gate/settle while the
/// real ones are not in the registry.
pub fn registry() -> Vec<StageFactory> {
    let mut r: Vec<StageFactory> = paycall::stages::REGISTRY.to_vec();
    r.push(StageFactory {
        name: "count",
        phase: Phase::Work,
        payment: false,
        needs: &[],
        gives: &[],
        errors: &[(502, "upstream error"), (504, "upstream timeout")],
        doc: "test: count runs, answer {run: n}",
        build: build_count,
    });
    r.push(StageFactory {
        name: "unready",
        phase: Phase::Work,
        payment: false,
        needs: &[],
        gives: &[],
        errors: &[(503, "renderer unavailable")],
        doc: "test: report not ready",
        build: build_unready,
    });
    r.push(StageFactory {
        name: "panic",
        phase: Phase::Work,
        payment: false,
        needs: &[],
        gives: &[],
        errors: &[],
        doc: "test: panic",
        build: build_panic,
    });
    let has = |r: &Vec<StageFactory>, n: &str| r.iter().any(|f| f.name == n);
    if !has(&r, "payment_gate") {
        r.push(StageFactory {
            name: "payment_gate",
            phase: Phase::Gate,
            payment: true,
            needs: &[],
            gives: paycall::payment::gate::FACTORY.gives,
            errors: &[],
            doc: "test stand-in",
            build: build_gate_stand_in,
        });
    }
    if !has(&r, "settle") {
        r.push(StageFactory {
            name: "settle",
            phase: Phase::Finish,
            payment: true,
            needs: paycall::payment::settle::FACTORY.needs,
            gives: &[],
            errors: &[],
            doc: "test stand-in",
            build: build_settle_stand_in,
        });
    }
    r
}

/// build_app with the test registry and the server's own services.
pub fn build(config: Config) -> Result<App, ConfigErrors> {
    let services = server::services::build(&config).expect("services build");
    server::build_app_with(config, services, &registry())
}

// ---------------------------------------------------------------------------------------------
// The running server

pub struct TestServer {
    pub base: String,
    pub addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

impl TestServer {
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Asks the server to stop without waiting (in-flight requests may still finish).
    pub fn begin_shutdown(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
    }

    /// Stops the server and waits until it has finished (bounded by 15 s).
    pub async fn shutdown(mut self) {
        self.begin_shutdown();
        tokio::time::timeout(Duration::from_secs(15), &mut self.task)
            .await
            .expect("server stops within 15 s")
            .expect("server task ends cleanly");
    }
}

/// Builds the app (panicking with the located errors if the config is refused) and serves it on
/// 127.0.0.1:0.
pub async fn start(config: Config) -> TestServer {
    let app = build(config).unwrap_or_else(|e| panic!("config refused:\n{e}"));
    start_app(app).await
}

pub async fn start_app(app: App) -> TestServer {
    // As `paycall serve` does before it listens (its network readiness check), know the
    // facilitator's /supported first: the Solana offer needs its feePayer, and a test's first
    // 402 must not race the background warm-up. A facilitator that is down is fine (bounded).
    if let Some(fac) = app
        .services
        .get::<paycall::x402::facilitators::Facilitators>()
    {
        let _ = tokio::time::timeout(Duration::from_secs(10), fac.supported()).await;
    }
    let (listener, addr) = super::net::listen().await;
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(server::serve(Arc::new(app), listener, async move {
        let _ = rx.await;
    }));
    TestServer {
        base: format!("http://{addr}"),
        addr,
        stop: Some(tx),
        task,
    }
}

/// Writes, loads and starts in one go.
pub async fn serve_yaml(routes_yaml: &str, pipelines: &[(&str, &str)]) -> (ConfigDir, TestServer) {
    let dir = write_config(routes_yaml, pipelines);
    let config = load(&dir).unwrap_or_else(|e| panic!("config refused:\n{e}"));
    let server = start(config).await;
    (dir, server)
}

/// A client for loopback servers: no proxy from the environment, 20 s deadline.
/// A value percent-encoded for a query string.
pub fn enc(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// GET `url` carrying a `PAYMENT-SIGNATURE`: the status, the headers and the body as JSON (a
/// body that is not JSON comes back as a JSON string). 60 s: a paid call may wait on a real
/// settlement, a browser or a slow upstream.
pub async fn send_signed(url: &str, sig: &str) -> (u16, reqwest::header::HeaderMap, Value) {
    send_signed_with("GET", url, sig, None).await
}

/// [`send_signed`] with a method: a POST carries `body` as JSON.
pub async fn send_signed_with(
    method: &str,
    url: &str,
    sig: &str,
    body: Option<String>,
) -> (u16, reqwest::header::HeaderMap, Value) {
    let c = client();
    let mut req = match method {
        "POST" => c.post(url),
        _ => c.get(url),
    }
    .header("PAYMENT-SIGNATURE", sig)
    .timeout(Duration::from_secs(60));
    if let Some(b) = body {
        req = req.header("content-type", "application/json").body(b);
    }
    let resp = req.send().await.expect("request to paycall");
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let text = resp.text().await.unwrap_or_default();
    let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (status, headers, body)
}

pub fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(20))
        .build()
        .expect("reqwest client")
}

/// GET → (status, headers, body as JSON).
pub async fn get_json(url: &str) -> (u16, reqwest::header::HeaderMap, Value) {
    let resp = client().get(url).send().await.expect("request");
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let text = resp.text().await.expect("body");
    let body = serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
    (status, headers, body)
}

/// A tiny facilitator stand-in on 127.0.0.1 answering GET /supported, counting every request.
pub struct FakeFacilitator {
    pub url: String,
    pub hits: Arc<AtomicUsize>,
    /// Requests to anything but GET /supported (verify, settle, …).
    pub payment_hits: Arc<AtomicUsize>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

pub async fn fake_facilitator() -> FakeFacilitator {
    use warp::Filter;
    let hits = Arc::new(AtomicUsize::new(0));
    let payment_hits = Arc::new(AtomicUsize::new(0));
    let h = hits.clone();
    let ph = payment_hits.clone();
    let routes = warp::path::full()
        .map(move |p: warp::path::FullPath| {
            h.fetch_add(1, Ordering::SeqCst);
            if p.as_str() != "/supported" {
                ph.fetch_add(1, Ordering::SeqCst);
            }
        })
        .untuple_one()
        .and(warp::path("supported"))
        .and(warp::path::end())
        .map(|| {
            warp::reply::json(&json!({
                "kinds": [
                    { "x402Version": 2, "scheme": "exact", "network": "eip155:8453" },
                    { "x402Version": 2, "scheme": "exact", "network": "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp" },
                    { "x402Version": 1, "scheme": "exact", "network": "base" }
                ],
                "extensions": ["bazaar"]
            }))
        });
    let (addr, tx) = super::net::serve(routes).await;
    FakeFacilitator {
        url: format!("http://{addr}/"),
        hits,
        payment_hits,
        _stop: tx,
    }
}

/// A response's body as JSON (reqwest is built without its json feature).
pub async fn json_of(resp: reqwest::Response) -> Value {
    let text = resp.text().await.expect("body");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// A real PAYMENT-SIGNATURE recorded from the official client (shape-valid; its offer is not
/// ours, which does not matter where bad input is answered before the offer is matched).
pub fn recorded_signature() -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/x402-vectors/payment-signature.json");
    let v: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    v["raw"].as_str().unwrap().to_string()
}

/// GET `url` with [`recorded_signature`] (shape-valid, not an offer of ours): the status and the JSON
/// body, for inputs refused before the payment is looked at.
pub async fn get_signed_json(url: &str) -> (u16, Value) {
    let r = client()
        .get(url)
        .header("PAYMENT-SIGNATURE", recorded_signature())
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    (status, json_of(r).await)
}

/// A base64 JSON header value (PAYMENT-REQUIRED, PAYMENT-RESPONSE), decoded.
pub fn decode_b64_json(v: &str) -> Value {
    use base64::Engine;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(v.trim())
        .expect("base64");
    serde_json::from_slice(&bytes).expect("json")
}

/// A live-reloadable app served on 127.0.0.1:0, its admin listener (/metrics, /reload) on
/// another free port.
pub struct LiveServer {
    pub base: String,
    pub admin: String,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

pub async fn start_live(live: Arc<paycall::ops::reload::Live>) -> LiveServer {
    let (listener, addr) = super::net::listen().await;
    let (admin, admin_addr) = super::net::listen().await;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(server::serve_live(
        live,
        listener,
        Some(admin),
        async move {
            let _ = stopped.await;
        },
    ));
    LiveServer {
        base: format!("http://{addr}"),
        admin: format!("http://{admin_addr}"),
        stop,
        task,
    }
}

impl LiveServer {
    /// Stops the server and waits until it has finished, at most `limit`.
    pub async fn shutdown(self, limit: Duration) {
        let _ = self.stop.send(());
        tokio::time::timeout(limit, self.task)
            .await
            .expect("stops")
            .unwrap();
    }
}

/// A paid route's pipeline that answers a fixed body: the payment gate, `{ echoed: true }`,
/// bill, settle.
pub const PAID_STATIC: &str = "name: paid_static\nstages:\n  - stage: payment_gate\n  - stage: static_reply\n    with: { body: { echoed: true } }\n  - stage: bill\n  - stage: settle\n";

/// A free pipeline answering `{ pong: true }`.
pub const PING: &str =
    "name: ping\nstages:\n  - stage: static_reply\n    with: { body: { pong: true } }\n";

/// GET `<admin>/metrics` (200, the Prometheus text format), parsed: series → value.
pub async fn scrape(admin: &str) -> std::collections::BTreeMap<String, f64> {
    let r = client()
        .get(format!("{admin}/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert!(r.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/plain; version=0.0.4"));
    paycall::ops::metrics::parse_exposition(&r.text().await.unwrap())
}

/// The entry of route `path` in llms.txt: from its `- [path]` line to the next entry.
pub fn llms_entry<'a>(llms: &'a str, path: &str) -> Option<&'a str> {
    let rest = llms.split(&format!("- [{path}]")).nth(1)?;
    rest.split("\n- [").next()
}

/// GET → the body as text (any status).
pub async fn get_text(url: &str) -> String {
    client()
        .get(url)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}
