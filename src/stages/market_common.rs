//! What the market stages share (not a stage): the source parameters every fetching stage
//! takes, the not-charged upstream failure reply, and the success reply whose `asOf` is the
//! time the data was taken (not the time of the answer).

use chrono::{DateTime, Utc};
use http::StatusCode;
use serde::Deserialize;
use serde_json::{Map, Value};
use std::time::Duration;

use crate::market::{Limits, MarketHub, UpstreamError};
use crate::pipeline::{Exchange, Flow, Reply};

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

pub const MIN_TTL_S: u64 = 15;
pub const MAX_TTL_S: u64 = 300;

/// Parameters of a stage that reads market upstreams.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceParams {
    /// Upstream names (routes.yaml `upstreams:`), tried in order: the second is the fallback.
    pub upstreams: Vec<String>,
    /// How long an upstream answer is reused (15–300 s).
    #[serde(default = "default_ttl")]
    pub ttl_s: u64,
    #[serde(default = "default_timeout")]
    pub timeout_ms: u64,
    #[serde(default = "default_max_bytes")]
    pub max_bytes: usize,
}

fn default_ttl() -> u64 {
    30
}
fn default_timeout() -> u64 {
    6000
}
fn default_max_bytes() -> usize {
    2_000_000
}

impl SourceParams {
    pub fn check(&self, hub: &MarketHub) -> Result<(), String> {
        if self.upstreams.is_empty() {
            return Err("`upstreams` names at least one upstream".into());
        }
        for u in &self.upstreams {
            hub.check_upstream(u)?;
        }
        if !(MIN_TTL_S..=MAX_TTL_S).contains(&self.ttl_s) {
            return Err(format!("ttl_s must be between {MIN_TTL_S} and {MAX_TTL_S}"));
        }
        if self.timeout_ms == 0 || self.timeout_ms > 60_000 {
            return Err("timeout_ms must be between 1 and 60000".into());
        }
        if self.max_bytes == 0 {
            return Err("max_bytes must be positive".into());
        }
        Ok(())
    }
    pub fn ttl(&self) -> Duration {
        Duration::from_secs(self.ttl_s)
    }
    pub fn limits(&self) -> Limits {
        Limits {
            timeout: Duration::from_millis(self.timeout_ms),
            max_bytes: self.max_bytes,
        }
    }
}

/// Seconds a caller is asked to wait after a 503 (an upstream unreachable or rate-limiting us):
/// about one cache lifetime, long enough for a blip to pass.
pub const RETRY_AFTER_S: u64 = 30;

/// The not-charged reply for an upstream failure: 502 or 503 naming the upstream; a 503 says
/// when to retry.
pub fn upstream_failure(ex: &mut Exchange, e: &UpstreamError) -> Flow {
    let status = StatusCode::from_u16(e.status()).unwrap_or(StatusCode::BAD_GATEWAY);
    let code = if e.status() == 503 {
        "upstream_unavailable"
    } else {
        "upstream_error"
    };
    let mut extra = Map::new();
    extra.insert("upstream".into(), Value::String(e.upstream.clone()));
    tracing::warn!(request_id = %ex.id, route = %ex.route.path, error = %e, "market upstream failed");
    let mut reply = Reply::error_with(status, code, format!("{e}; you were not charged"), extra);
    if status == StatusCode::SERVICE_UNAVAILABLE {
        reply = reply.with_header("retry-after", &RETRY_AFTER_S.to_string());
    }
    ex.reply = Some(reply);
    Flow::Reply
}

/// A stage ran without the artefact an earlier stage should have left (a chain bug).
pub fn missing(ex: &mut Exchange, what: &str) -> Flow {
    ex.fail(
        StatusCode::INTERNAL_SERVER_ERROR,
        "internal_error",
        format!("{what} is missing; you were not charged"),
    )
}

/// Success with `source`, `priced` and `asOf` = when the data was taken (the oldest part).
pub fn respond_market(ex: &mut Exchange, body: Value, taken: DateTime<Utc>) -> Flow {
    let mut v = ex.stamp(body);
    if let Value::Object(o) = &mut v {
        o.insert("asOf".into(), Value::String(iso(taken)));
    }
    ex.reply = Some(Reply::json(StatusCode::OK, &v));
    Flow::Reply
}

pub fn iso(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

/// Rounds for display: prices and rates keep their meaning, JSON stays readable.
pub fn round(x: f64, decimals: i32) -> f64 {
    let m = 10f64.powi(decimals);
    (x * m).round() / m
}

/// A finite f64 as JSON (NaN/inf → null).
pub fn jnum(x: f64) -> Value {
    serde_json::Number::from_f64(x)
        .map(Value::Number)
        .unwrap_or(Value::Null)
}

pub fn jopt(x: Option<f64>) -> Value {
    x.map(jnum).unwrap_or(Value::Null)
}

/// One EVM network as gas and portfolio stages configure it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkParams {
    /// Short name used as the JSON key (`base`, `ethereum`).
    pub name: String,
    pub chain_id: u64,
    /// JSON-RPC upstream names, tried in order.
    pub rpc: Vec<String>,
    /// OP-stack GasPriceOracle predeploy for the L1 data fee (Base: 0x420…0F).
    #[serde(default)]
    pub l1_fee_oracle: Option<String>,
    /// Tokens whose balances portfolio reads (gas ignores them).
    #[serde(default)]
    pub tokens: Vec<TokenParams>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenParams {
    pub symbol: String,
    pub address: String,
    pub decimals: u32,
    /// Which spot price values it: `USD` (a dollar stablecoin, 1.0), `ETH`, `BTC` or `SOL`.
    pub price: String,
}

impl NetworkParams {
    pub fn check(&self, hub: &MarketHub) -> Result<(), String> {
        if self.rpc.is_empty() {
            return Err(format!(
                "network {}: `rpc` names at least one upstream",
                self.name
            ));
        }
        for u in &self.rpc {
            hub.check_upstream(u)?;
        }
        if let Some(o) = &self.l1_fee_oracle {
            if !crate::config::is_evm_address(o) {
                return Err(format!(
                    "network {}: l1_fee_oracle is not an address",
                    self.name
                ));
            }
        }
        for t in &self.tokens {
            if !crate::config::is_evm_address(&t.address) {
                return Err(format!("token {} on {}: bad address", t.symbol, self.name));
            }
            if t.decimals > 36 {
                return Err(format!(
                    "token {} on {}: decimals above 36",
                    t.symbol, self.name
                ));
            }
            if !["USD", "ETH", "BTC", "SOL"].contains(&t.price.as_str()) {
                return Err(format!(
                    "token {} on {}: price must be USD, ETH, BTC or SOL",
                    t.symbol, self.name
                ));
            }
        }
        Ok(())
    }
}
