//! Test support for the auditors (/api/x402-check, /api/bazaar-check): a zoo of local x402
//! endpoints on 127.0.0.1 (correct and broken in the ways real sellers break them), a fake EVM
//! JSON-RPC, and a local discovery index answering in CDP's recorded response shapes
//! (fixtures/audit/*.json).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine;
use bytes::Bytes;
use serde_json::{json, Value};
use warp::http::{HeaderMap, HeaderValue, Method};
use warp::reply::Response;
use warp::Filter;

pub const BASE_USDC: &str = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
pub const SEPOLIA_USDC: &str = "0x036CbD53842c5426634e7929541eC2318f3dCF7e";
/// An EOA payTo (checksummed).
pub const EOA: &str = "0xdF1D7b5C056D78F5aA14138a5695f7FF6F7aCFf3";
/// A payTo the fake RPC reports as a contract.
pub const CONTRACT: &str = "0x4200000000000000000000000000000000000006";

#[derive(Default)]
pub struct Stats {
    pub inflight: AtomicUsize,
    pub max_inflight: AtomicUsize,
}

/// A request the zoo (or index, or RPC) saw.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub query: String,
    pub body: String,
}

pub struct Local {
    pub addr: SocketAddr,
    pub base: String,
    pub seen: Arc<Mutex<Vec<Seen>>>,
    /// Requests in flight now and at most (the zoo's /slowish/* routes count themselves).
    pub stats: Arc<Stats>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl Local {
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }
    pub fn hits(&self, path_prefix: &str) -> usize {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|s| s.path.starts_with(path_prefix))
            .count()
    }
    pub fn total(&self) -> usize {
        self.seen.lock().unwrap().len()
    }
    pub fn requests(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

type Handler = Arc<
    dyn Fn(Seen, HeaderMap) -> futures_util::future::BoxFuture<'static, Response> + Send + Sync,
>;

async fn serve(handler: Handler) -> Local {
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let s2 = seen.clone();
    let routes = super::net::any_request().then(
        move |m: Method, p: warp::path::FullPath, q: String, h: HeaderMap, b: Bytes| {
            let seen = Seen {
                method: m.to_string(),
                path: p.as_str().to_string(),
                query: q,
                body: String::from_utf8_lossy(&b).to_string(),
            };
            s2.lock().unwrap().push(seen.clone());
            let handler = handler.clone();
            async move { handler(seen, h).await }
        },
    );
    let (addr, tx) = super::net::serve(routes).await;
    Local {
        addr,
        base: format!("http://{addr}"),
        seen,
        stats: Arc::default(),
        _stop: tx,
    }
}

pub fn resp(status: u16, ct: &str, body: impl Into<Bytes>) -> Response {
    let mut r = Response::new(body.into().into());
    *r.status_mut() = warp::http::StatusCode::from_u16(status).unwrap();
    if !ct.is_empty() {
        r.headers_mut()
            .insert("content-type", HeaderValue::from_str(ct).unwrap());
    }
    r
}

fn header(mut r: Response, name: &'static str, value: &str) -> Response {
    r.headers_mut()
        .append(name, HeaderValue::from_str(value).unwrap());
    r
}

pub fn b64(v: &Value) -> String {
    base64::engine::general_purpose::STANDARD.encode(v.to_string())
}

/// A bazaar extension for `method`, info valid against its schema.
pub fn bazaar(method: &str) -> Value {
    let body_method = matches!(method, "POST" | "PUT" | "PATCH");
    let mut input = json!({"type": "http", "method": method});
    let mut props = json!({
        "type": {"type": "string", "const": "http"},
        "method": {"type": "string", "enum": [method]},
    });
    if body_method {
        input["bodyType"] = json!("json");
        input["body"] = json!({"q": "btc"});
        props["bodyType"] = json!({"type": "string", "const": "json"});
        props["body"] = json!({"type": "object"});
    } else {
        input["queryParams"] = json!({"q": "btc"});
        props["queryParams"] = json!({"type": "object", "properties": {"q": {"type": "string"}}});
    }
    json!({
        "info": {"input": input, "output": {"type": "json", "example": {"price": 1}}},
        "schema": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {"input": {"type": "object", "properties": props, "required": ["type", "method"]},
                           "output": {"type": "object"}},
            "required": ["input"]
        }
    })
}

pub fn base_offer(amount: &str, pay_to: &str) -> Value {
    json!({
        "scheme": "exact", "network": "eip155:8453", "amount": amount, "asset": BASE_USDC,
        "payTo": pay_to, "maxTimeoutSeconds": 120, "extra": {"name": "USD Coin", "version": "2"}
    })
}

/// A correct v2 challenge object for `url`.
pub fn v2(url: &str, method: &str, accepts: Vec<Value>) -> Value {
    json!({
        "x402Version": 2,
        "error": "Payment required",
        "resource": {"url": url, "description": "Spot price of one asset", "mimeType": "application/json"},
        "accepts": accepts,
        "extensions": {"bazaar": bazaar(method)},
    })
}

/// A 402 carrying `challenge` in PAYMENT-REQUIRED with the recommended headers.
pub fn answer_402(challenge: &Value) -> Response {
    let r = resp(402, "application/json", "{}");
    let r = header(r, "payment-required", &b64(challenge));
    let r = header(r, "cache-control", "no-store");
    header(
        r,
        "access-control-expose-headers",
        "PAYMENT-REQUIRED, PAYMENT-RESPONSE",
    )
}

/// The zoo. `well_known` is served at /.well-known/x402 when given (404 otherwise).
pub async fn start_zoo(well_known: Option<Value>) -> Local {
    let wk = Arc::new(well_known);
    let stats: Arc<Stats> = Arc::default();
    let st = stats.clone();
    let mut local = serve(Arc::new(move |s: Seen, h: HeaderMap| {
        let wk = wk.clone();
        let st = st.clone();
        Box::pin(async move {
            let host = h
                .get("host")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("127.0.0.1")
                .to_string();
            let url = format!("https://{host}{}", s.path);
            if s.path.starts_with("/slowish/") {
                let now = st.inflight.fetch_add(1, Ordering::SeqCst) + 1;
                st.max_inflight.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(400)).await;
                st.inflight.fetch_sub(1, Ordering::SeqCst);
                return answer_402(&v2(&url, &s.method, vec![base_offer("10000", EOA)]));
            }
            zoo_answer(&s, &url, &wk).await
        })
    }))
    .await;
    local.stats = stats;
    local
}

async fn zoo_answer(s: &Seen, url: &str, wk: &Option<Value>) -> Response {
    let m = s.method.as_str();
    match s.path.as_str() {
        "/.well-known/x402" => match wk {
            Some(v) => resp(200, "application/json", v.to_string()),
            None => resp(404, "text/plain", "not found"),
        },
        "/v2/ok" | "/api/price" | "/api/quote" => {
            answer_402(&v2(url, m, vec![base_offer("10000", EOA)]))
        }
        "/v2/dual" => {
            let mut r = answer_402(&v2(url, m, vec![base_offer("10000", EOA)]));
            let v1 = json!({"x402Version": 1, "error": "X-PAYMENT header is required", "accepts": [{
                "scheme": "exact", "network": "base", "maxAmountRequired": "10000", "resource": url,
                "description": "Spot price", "mimeType": "application/json", "payTo": EOA,
                "maxTimeoutSeconds": 60, "asset": BASE_USDC, "extra": {"name": "USD Coin", "version": "2"}}]});
            *r.body_mut() = v1.to_string().into();
            r
        }
        "/v1/ok" => {
            let v1 = json!({"x402Version": 1, "error": "X-PAYMENT header is required", "accepts": [{
                "scheme": "exact", "network": "base", "maxAmountRequired": "5000", "resource": url,
                "description": "Legacy quote API", "mimeType": "application/json",
                "outputSchema": {"input": {"type": "http", "method": "GET", "discoverable": true}},
                "payTo": EOA, "maxTimeoutSeconds": 60, "asset": BASE_USDC,
                "extra": {"name": "USD Coin", "version": "2"}}]});
            resp(402, "application/json", v1.to_string())
        }
        "/v2/body-only" => resp(
            402,
            "application/json",
            v2(url, m, vec![base_offer("10000", EOA)]).to_string(),
        ),
        "/v2/dollars" => answer_402(&v2(url, m, vec![base_offer("0.01", EOA)])),
        "/v2/wrong-network-usdc" => {
            let mut o = base_offer("10000", EOA);
            o["asset"] = json!(SEPOLIA_USDC);
            o["extra"] = json!({"name": "USDC", "version": "2"});
            answer_402(&v2(url, m, vec![o]))
        }
        "/v2/sepolia-name" => {
            let mut o = base_offer("10000", EOA);
            o["extra"] = json!({"name": "USDC", "version": "2"});
            answer_402(&v2(url, m, vec![o]))
        }
        "/v2/bad-base64" => header(
            resp(402, "application/json", "{}"),
            "payment-required",
            "%%%this is not base64%%%",
        ),
        "/v2/no-accepts" => answer_402(&v2(url, m, vec![])),
        // Issue 21: 100,000 empty offers (a 400 KB header); 100 offers, each with its own
        // payTo and a 2 KB scheme name echoed into its findings.
        "/v2/many-offers" => answer_402(&v2(url, m, vec![json!({}); 100_000])),
        "/v2/many-pay-tos" => answer_402(&v2(
            url,
            m,
            (0..100u32)
                .map(|i| {
                    let mut o = base_offer("10000", &format!("0x{i:040x}"));
                    o["scheme"] = json!("s".repeat(2000));
                    o
                })
                .collect(),
        )),
        "/v2/testnet" => {
            let o = json!({"scheme": "exact", "network": "eip155:84532", "amount": "10000", "asset": SEPOLIA_USDC,
                "payTo": EOA, "maxTimeoutSeconds": 120, "extra": {"name": "USDC", "version": "2"}});
            answer_402(&v2(url, m, vec![o]))
        }
        "/v2/no-bazaar" => {
            let mut c = v2(url, m, vec![base_offer("10000", EOA)]);
            c.as_object_mut().unwrap().remove("extensions");
            answer_402(&c)
        }
        "/v2/bad-schema" => {
            let mut c = v2(url, m, vec![base_offer("10000", EOA)]);
            c["extensions"]["bazaar"]["info"]["input"]["method"] = json!("POST");
            answer_402(&c)
        }
        "/v2/contract-payto" => answer_402(&v2(url, m, vec![base_offer("10000", CONTRACT)])),
        "/v2/internal-resource" => answer_402(&v2(
            &format!("http://localhost:3000{}", s.path),
            m,
            vec![base_offer("10000", EOA)],
        )),
        "/v2/bad-checksum" => answer_402(&v2(
            url,
            m,
            vec![base_offer(
                "10000",
                &EOA.replace('F', "f").replacen('f', "F", 1),
            )],
        )),
        "/v2/no-store-missing" => {
            let c = v2(url, m, vec![base_offer("10000", EOA)]);
            header(
                resp(402, "application/json", "{}"),
                "payment-required",
                &b64(&c),
            )
        }
        "/500" => resp(500, "text/plain", "internal error"),
        "/200" => resp(200, "application/json", "{\"free\":true}"),
        "/validate-first" => resp(400, "application/json", "{\"error\":\"q is required\"}"),
        "/redirect/1" => header(resp(302, "", ""), "location", "/v2/ok"),
        "/redirect/loop" => header(resp(302, "", ""), "location", "/redirect/loop"),
        "/slow" => {
            tokio::time::sleep(Duration::from_secs(30)).await;
            resp(402, "text/plain", "too late")
        }
        _ => resp(404, "text/plain", "no such route"),
    }
}

/// A fake EVM JSON-RPC: CONTRACT has code, everything else is an EOA; every balance is 10000;
/// EOA received one USDC transfer lately.
pub async fn start_rpc() -> Local {
    serve(Arc::new(|s: Seen, _h: HeaderMap| {
        Box::pin(async move {
            let req: Value = serde_json::from_str(&s.body).unwrap_or(Value::Null);
            let method = req["method"].as_str().unwrap_or("");
            let result = match method {
                "eth_getCode" => {
                    let a = req["params"][0].as_str().unwrap_or("").to_ascii_lowercase();
                    if a == CONTRACT.to_ascii_lowercase() {
                        json!("0x6080604052")
                    } else {
                        json!("0x")
                    }
                }
                "eth_call" => json!(format!("0x{:064x}", 10_000)),
                "eth_blockNumber" => json!("0x100000"),
                "eth_getLogs" => {
                    let to = req["params"][0]["topics"][2].as_str().unwrap_or("").to_ascii_lowercase();
                    if to.ends_with(&EOA[2..].to_ascii_lowercase()) {
                        json!([{"address": BASE_USDC, "topics": [], "data": "0x2710"}])
                    } else {
                        json!([])
                    }
                }
                _ => {
                    return resp(200, "application/json", json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "method not found"}}).to_string());
                }
            };
            resp(200, "application/json", json!({"jsonrpc": "2.0", "id": 1, "result": result}).to_string())
        })
    }))
    .await
}

/// How the fixture index behaves.
pub const INDEX_OK: u8 = 0;
pub const INDEX_DOWN: u8 = 1;
pub const INDEX_SLOW: u8 = 2;

pub struct Index {
    pub local: Local,
    pub mode: Arc<AtomicU8>,
    pub requests: Arc<AtomicUsize>,
}

impl Index {
    pub fn set(&self, mode: u8) {
        self.mode.store(mode, Ordering::SeqCst);
    }
    pub fn url(&self) -> String {
        self.local.base.clone()
    }
}

fn fixture(name: &str) -> Value {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/audit")
        .join(name);
    serde_json::from_str(
        &std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display())),
    )
    .unwrap()
}

/// An index item in CDP's recorded shape for `resource`, paid to `pay_to` on `network`.
pub fn index_item(resource: &str, pay_to: &str, network: &str) -> Value {
    let page = fixture("cdp-merchant-page.json");
    let mut item = page["resources"][0].clone();
    item["resource"] = json!(resource);
    item["accepts"][0]["payTo"] = json!(pay_to);
    item["accepts"][0]["network"] = json!(network);
    item
}

/// The local discovery index listing `paths` of a seller at https://127.0.0.1:`port` under
/// `pay_to`, on Base.
pub async fn start_index_of(port: u16, paths: &[String], pay_to: &str) -> Index {
    let items = paths
        .iter()
        .map(|p| {
            index_item(
                &format!("https://127.0.0.1:{port}{p}"),
                pay_to,
                "eip155:8453",
            )
        })
        .collect::<Vec<_>>();
    start_index(BTreeMap::from([(pay_to.to_string(), items)])).await
}

/// The local discovery index. `listing`: payTo → its items (already in the CDP item shape).
/// Merchant pages are sliced by `offset`/`limit` with `pagination.total`; search returns the
/// items whose resource contains the query. Envelopes come from the recorded fixtures.
pub async fn start_index(listing: BTreeMap<String, Vec<Value>>) -> Index {
    let mode = Arc::new(AtomicU8::new(INDEX_OK));
    let requests = Arc::new(AtomicUsize::new(0));
    let listing = Arc::new(listing);
    let (m2, r2) = (mode.clone(), requests.clone());
    let local = serve(Arc::new(move |s: Seen, _h: HeaderMap| {
        let listing = listing.clone();
        let mode = m2.load(Ordering::SeqCst);
        r2.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            match mode {
                INDEX_DOWN => {
                    return resp(503, "application/json", "{\"errorType\":\"unavailable\"}")
                }
                INDEX_SLOW => {
                    tokio::time::sleep(Duration::from_secs(30)).await;
                }
                _ => {}
            }
            let q: BTreeMap<String, String> = url::form_urlencoded::parse(s.query.as_bytes())
                .into_owned()
                .collect();
            match s.path.as_str() {
                "/discovery/merchant" => {
                    let pay_to = q.get("payTo").cloned().unwrap_or_default();
                    let limit: usize = q.get("limit").and_then(|v| v.parse().ok()).unwrap_or(20);
                    let offset: usize = q.get("offset").and_then(|v| v.parse().ok()).unwrap_or(0);
                    let all: Vec<Value> = listing
                        .iter()
                        .filter(|(k, _)| k.eq_ignore_ascii_case(&pay_to))
                        .flat_map(|(_, v)| v.clone())
                        .collect();
                    let mut page = fixture("cdp-merchant-page.json");
                    page["payTo"] = json!(pay_to);
                    page["resources"] = json!(all
                        .iter()
                        .skip(offset)
                        .take(limit)
                        .cloned()
                        .collect::<Vec<_>>());
                    page["pagination"] =
                        json!({"limit": limit, "offset": offset, "total": all.len()});
                    resp(200, "application/json", page.to_string())
                }
                "/discovery/search" => {
                    let query = q.get("query").cloned().unwrap_or_default();
                    let hits: Vec<Value> = listing
                        .values()
                        .flatten()
                        .filter(|it| it["resource"].as_str().unwrap_or("").contains(&query))
                        .cloned()
                        .collect();
                    let mut page = fixture("cdp-search.json");
                    page["resources"] = json!(hits);
                    resp(200, "application/json", page.to_string())
                }
                _ => resp(404, "application/json", "{\"errorType\":\"not_found\"}"),
            }
        })
    }))
    .await;
    Index {
        local,
        mode,
        requests,
    }
}
