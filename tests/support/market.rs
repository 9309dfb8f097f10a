//! Test support: one local server on 127.0.0.1:0 standing in for every market upstream, answering
//! from fixtures/market/ (recorded real response shapes), plus paycall on the SHIPPED routes.yaml
//! with every upstream pointed at it.
//!
//! Each upstream lives under its own prefix: `http://127.0.0.1:<port>/<upstream>/…`. A GET or
//! POST of `/<upstream>/<path>?<query>` answers `fixtures/market/<upstream>/<path>_<query>.json`
//! (query characters other than letters and digits become `_`) or else `<path>.json`. JSON-RPC
//! upstreams (`*_rpc*`) answer from `fixtures/market/rpc/<network>.json` by method; `eth_call`
//! only answers a call whose target and calldata are listed there verbatim (so the test also
//! checks our ABI encoding against independently encoded calldata).
//!
//! Each upstream's behaviour can be switched at run time: ok, an HTTP status, malformed JSON,
//! empty data (`<path>.empty.json`, else the upstream's `_empty.json`), or slow. Hits are counted per upstream.

use std::collections::HashMap;
use std::convert::Infallible;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use serde_json::{json, Value};
use warp::http::HeaderValue;
use warp::reply::Response;
use warp::Filter;

use super::server::{get_json, EVM_PAY_TO, NO_FACILITATOR};

/// Every upstream name of the shipped routes.yaml that the market routes use.
pub const UPSTREAMS: &[&str] = &[
    "coinbase_exchange",
    "coingecko",
    "okx",
    "hyperliquid",
    "defillama_yields",
    "base_rpc",
    "base_rpc_backup",
    "eth_rpc",
    "eth_rpc_backup",
];

#[derive(Debug, Clone, PartialEq)]
pub enum Mode {
    Ok,
    Status(u16),
    Malformed,
    Empty,
    SlowMs(u64),
}

#[derive(Default)]
struct State {
    modes: HashMap<String, Mode>,
    hits: HashMap<String, usize>,
    /// Request bodies seen per upstream (JSON-RPC, POST /info).
    bodies: HashMap<String, Vec<Value>>,
}

#[derive(Clone)]
pub struct MarketUpstreams {
    pub base: String,
    state: Arc<Mutex<State>>,
    _stop: Arc<tokio::sync::oneshot::Sender<()>>,
}

impl MarketUpstreams {
    pub fn url(&self, upstream: &str) -> String {
        format!("{}/{upstream}/", self.base)
    }
    pub fn set(&self, upstream: &str, mode: Mode) {
        self.state
            .lock()
            .unwrap()
            .modes
            .insert(upstream.to_string(), mode);
    }
    pub fn hits(&self, upstream: &str) -> usize {
        *self.state.lock().unwrap().hits.get(upstream).unwrap_or(&0)
    }
    pub fn bodies(&self, upstream: &str) -> Vec<Value> {
        self.state
            .lock()
            .unwrap()
            .bodies
            .get(upstream)
            .cloned()
            .unwrap_or_default()
    }
    /// The environment overrides pointing every upstream here (a `down` upstream at a closed
    /// port instead).
    pub fn env(&self, down: &[&str]) -> Vec<(String, String)> {
        UPSTREAMS
            .iter()
            .map(|u| {
                let key = format!("PAYCALL_UPSTREAM_{}", u.to_ascii_uppercase());
                let value = if down.contains(u) {
                    // Port 9 (discard) is closed on loopback here: connection refused.
                    "http://127.0.0.1:9/".to_string()
                } else {
                    self.url(u)
                };
                (key, value)
            })
            .collect()
    }
}

pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/market")
}

fn resp(status: u16, body: impl Into<Bytes>) -> Response {
    let mut r = Response::new(body.into().into());
    *r.status_mut() = warp::http::StatusCode::from_u16(status).unwrap();
    r.headers_mut()
        .insert("content-type", HeaderValue::from_static("application/json"));
    r
}

fn sanitize(q: &str) -> String {
    q.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

fn file_answer(upstream: &str, rest: &str, query: &str) -> Response {
    let dir = fixtures().join(upstream);
    let mut candidates = Vec::new();
    if !query.is_empty() {
        candidates.push(dir.join(format!("{rest}_{}.json", sanitize(query))));
    }
    candidates.push(dir.join(format!("{rest}.json")));
    for c in candidates {
        if let Ok(bytes) = std::fs::read(&c) {
            return resp(200, bytes);
        }
    }
    resp(
        404,
        json!({"message": format!("no fixture for {upstream}/{rest}?{query}")}).to_string(),
    )
}

fn rpc_answer(upstream: &str, body: &Value, empty: bool) -> Value {
    let network = upstream.split('_').next().unwrap_or("eth");
    let path = fixtures().join("rpc").join(format!("{network}.json"));
    let table: Value = serde_json::from_slice(&std::fs::read(&path).expect("rpc fixture"))
        .expect("rpc fixture JSON");
    let one = |req: &Value| -> Value {
        let id = req["id"].clone();
        let method = req["method"].as_str().unwrap_or("");
        if empty {
            return json!({"jsonrpc": "2.0", "id": id, "result": null});
        }
        let result = if method == "eth_call" {
            let call = &req["params"][0];
            let key = format!(
                "{}:{}",
                call["to"].as_str().unwrap_or("").to_ascii_lowercase(),
                call["data"]
                    .as_str()
                    .or(call["input"].as_str())
                    .unwrap_or("")
                    .to_ascii_lowercase()
            );
            table["eth_call"].get(&key).cloned()
        } else {
            // `{byAddress: {addr: answer}, default: answer}` answers per the first parameter.
            table
                .get(method)
                .cloned()
                .map(|r| match r.get("byAddress") {
                    Some(by) => {
                        let a = req["params"][0].as_str().unwrap_or("").to_ascii_lowercase();
                        by.get(&a).cloned().unwrap_or_else(|| r["default"].clone())
                    }
                    None => r,
                })
        };
        match result {
            Some(r) => json!({"jsonrpc": "2.0", "id": id, "result": r}),
            None => json!({"jsonrpc": "2.0", "id": id,
                           "error": {"code": -32000, "message": "execution reverted"}}),
        }
    };
    match body {
        Value::Array(reqs) => Value::Array(reqs.iter().map(one).collect()),
        other => one(other),
    }
}

pub async fn start() -> MarketUpstreams {
    let state = Arc::new(Mutex::new(State::default()));
    let st = state.clone();
    let routes = warp::path::full()
        .and(warp::query::raw().or(warp::any().map(String::new)).unify())
        .and(warp::body::bytes())
        .and_then(
            move |path: warp::path::FullPath, query: String, body: Bytes| {
                let st = st.clone();
                async move {
                    let p = path.as_str().trim_start_matches('/').to_string();
                    let (upstream, rest) = p.split_once('/').unwrap_or((p.as_str(), ""));
                    let upstream = upstream.to_string();
                    let rest = rest.trim_end_matches('/').to_string();
                    let json_body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                    let mode = {
                        let mut s = st.lock().unwrap();
                        *s.hits.entry(upstream.clone()).or_default() += 1;
                        if !json_body.is_null() {
                            s.bodies
                                .entry(upstream.clone())
                                .or_default()
                                .push(json_body.clone());
                        }
                        s.modes.get(&upstream).cloned().unwrap_or(Mode::Ok)
                    };
                    let r = match mode {
                        Mode::Status(code) => {
                            resp(code, json!({"message": "fixture failure"}).to_string())
                        }
                        Mode::Malformed => resp(200, "{\"data\": [ {\"unterminated\": "),
                        Mode::Empty if upstream.contains("_rpc") => {
                            resp(200, rpc_answer(&upstream, &json_body, true).to_string())
                        }
                        Mode::Empty => {
                            // A path's own empty answer (`<path>.empty.json`) or the upstream's.
                            let own = fixtures()
                                .join(&upstream)
                                .join(format!("{rest}.empty.json"));
                            match std::fs::read(&own) {
                                Ok(bytes) => resp(200, bytes),
                                Err(_) => file_answer(&upstream, "_empty", ""),
                            }
                        }
                        Mode::SlowMs(ms) => {
                            tokio::time::sleep(Duration::from_millis(ms)).await;
                            file_answer(&upstream, &rest, &query)
                        }
                        Mode::Ok if upstream.contains("_rpc") => {
                            resp(200, rpc_answer(&upstream, &json_body, false).to_string())
                        }
                        Mode::Ok => file_answer(&upstream, &rest, &query),
                    };
                    Ok::<_, Infallible>(r)
                }
            },
        );
    let (addr, tx) = super::net::serve(routes).await;
    MarketUpstreams {
        base: format!("http://{addr}"),
        state,
        _stop: Arc::new(tx),
    }
}

/// The shipped routes.yaml with every market upstream pointed at `up` (those in `down` at a
/// closed port), 127.0.0.1/32 allowed, and the given facilitator.
pub fn shipped_config(
    up: &MarketUpstreams,
    down: &[&str],
    facilitator: &str,
    pay_to: &str,
) -> paycall::config::Config {
    let routes = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("routes.yaml");
    let mut vars: HashMap<String, String> = up.env(down).into_iter().collect();
    vars.insert("PAYCALL_FACILITATOR_URL".into(), facilitator.to_string());
    vars.insert("PAYCALL_EVM_PAY_TO".into(), pay_to.to_string());
    vars.insert(
        "PAYCALL_SOLANA_PAY_TO".into(),
        "FYA23SLFVpETuY13UnwTDJA9W6ipiL1sKXd6XJUhViA1".into(),
    );
    vars.insert("PAYCALL_ALLOW_CIDRS".into(), "127.0.0.1/32".into());
    vars.insert("PAYCALL_LEDGER_URL".into(), "sqlite::memory:".into());
    let env = move |k: &str| vars.get(k).cloned();
    paycall::config::load_with_env(&routes, &env).unwrap_or_else(|e| panic!("{e}"))
}

/// A config with one FREE route `/api/<name>` running the shipped pipelines/<name>.yaml without
/// its payment stages, every upstream pointed at `up` (those in `down` at a closed port), for
/// calling a market chain with any input without a payment stack. `input_yaml` is the route's
/// `input:` list (YAML, indented by four spaces) or empty. Returns the temp dir (keep it alive)
/// and the loaded config.
pub fn free_route_config(
    up: &MarketUpstreams,
    down: &[&str],
    name: &str,
    input_yaml: &str,
) -> (tempfile::TempDir, paycall::config::Config) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let shipped = std::fs::read_to_string(root.join(format!("pipelines/{name}.yaml")))
        .expect("shipped pipeline");
    let pipeline: String = shipped
        .lines()
        .filter(|l| {
            let t = l.trim();
            t != "- stage: payment_gate" && t != "- stage: bill" && t != "- stage: settle"
        })
        .map(|l| format!("{l}\n"))
        .collect();
    let upstreams: String = up
        .env(down)
        .into_iter()
        .map(|(k, v)| {
            let n = k
                .trim_start_matches("PAYCALL_UPSTREAM_")
                .to_ascii_lowercase();
            format!("  {n}: {v}\n")
        })
        .collect();
    let routes = format!(
        r#"service:
  name: paycall-test
  version: 1.0.0
  description: Test service.
  base_url: https://api.paycall.test
  listen: 127.0.0.1:0
payment:
  facilitator:
    url: http://127.0.0.1:9/
  accepts:
    - network: eip155:8453
      name: base
      asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
      decimals: 6
      eip712: {{ name: USD Coin, version: "2" }}
      pay_to: "0xdF1D7b5C056D78F5aA14138a5695f7FF6F7aCFf3"
guard:
  allow_cidrs: [127.0.0.1/32]
upstreams:
{upstreams}routes:
  - path: /api/{name}
    methods: [GET]
    summary: {name} without payment (test)
    pipeline: {name}
{input}
"#,
        input = if input_yaml.is_empty() {
            String::new()
        } else {
            format!("    input:\n{input_yaml}")
        }
    );
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir(dir.path().join("pipelines")).unwrap();
    std::fs::write(
        dir.path().join("pipelines").join(format!("{name}.yaml")),
        pipeline,
    )
    .unwrap();
    let path = dir.path().join("routes.yaml");
    std::fs::write(&path, routes).unwrap();
    let cfg =
        paycall::config::load_with_env(&path, &|_: &str| None).unwrap_or_else(|e| panic!("{e}"));
    (dir, cfg)
}

/// paycall on the shipped config with `down` upstreams unreachable (no facilitator): the 200
/// envelope of GET /api/demo/<route>.
pub async fn demo_with(up: &MarketUpstreams, down: &[&str], route: &str) -> Value {
    let cfg = shipped_config(up, down, NO_FACILITATOR, EVM_PAY_TO);
    let server = super::server::start(cfg).await;
    let (status, _, body) = get_json(&server.url(&format!("/api/demo/{route}"))).await;
    assert_eq!(status, 200, "{body}");
    server.shutdown().await;
    body
}

/// A demo whose sample fails: no 200 envelope, the failure's own status and error body
/// (`demo: true`), `Retry-After` on a 503.
pub async fn demo_failure(up: &MarketUpstreams, down: &[&str], route: &str) -> (u16, Value) {
    let cfg = shipped_config(up, down, NO_FACILITATOR, EVM_PAY_TO);
    let server = super::server::start(cfg).await;
    let (status, h, body) = get_json(&server.url(&format!("/api/demo/{route}"))).await;
    server.shutdown().await;
    assert!(status >= 400, "{status}: {body}");
    assert_eq!(body["demo"], true, "{body}");
    assert!(body.get("sample").is_none(), "{body}");
    if status == 503 {
        assert!(h.contains_key("retry-after"), "{status}: {body}");
    }
    (status, body)
}

/// `v` is a number within `tol` of `expected`.
pub fn close(v: &Value, expected: f64, tol: f64) -> bool {
    v.as_f64()
        .map(|x| (x - expected).abs() <= tol)
        .unwrap_or(false)
}
