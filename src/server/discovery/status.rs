//! `GET /status`: uptime, each route's readiness, and whether the preferred facilitator answers
//! `GET /supported` (checked at most every 30 s, 3 s deadline, so /status cannot be used to
//! hammer the facilitator). The check goes through the facilitator pool's own client (its
//! URL, credentials and body limits), asked afresh: the pool's cached copy and its breakers
//! are left alone.

use serde_json::{json, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::config::Config;
use crate::payment::readiness::{self, Readiness};
use crate::pipeline::now_iso;
use crate::server::App;
use crate::x402::facilitator::{FacilitatorError, Supported};
use crate::x402::facilitators::Facilitators;

/// How long a facilitator check is reused.
pub const FACILITATOR_CHECK_TTL: Duration = Duration::from_secs(30);
/// Deadline of one facilitator check.
pub const FACILITATOR_TIMEOUT: Duration = Duration::from_secs(3);

/// Checks the preferred facilitator's `GET /supported`, one check at a time, result reused
/// 30 s.
pub struct FacilitatorProbe {
    url: String,
    pool: Option<Arc<Facilitators>>,
    last: tokio::sync::Mutex<Option<(Instant, Value)>>,
}

impl FacilitatorProbe {
    /// `pool`: the services' facilitators, whose first (preferred) one is
    /// `payment.facilitator`.
    pub fn new(config: &Config, pool: Option<Arc<Facilitators>>) -> FacilitatorProbe {
        FacilitatorProbe {
            url: config.payment.facilitator.url.to_string(),
            pool,
            last: tokio::sync::Mutex::new(None),
        }
    }

    /// The cached check, or a fresh one when it is older than `FACILITATOR_CHECK_TTL`.
    /// Concurrent callers during a refresh wait for that one check.
    pub async fn check(&self) -> Value {
        let mut last = self.last.lock().await;
        if let Some((at, v)) = &*last {
            if at.elapsed() < FACILITATOR_CHECK_TTL {
                return v.clone();
            }
        }
        let v = self.probe().await;
        *last = Some((Instant::now(), v.clone()));
        v
    }

    async fn probe(&self) -> Value {
        let checked_at = now_iso();
        let started = Instant::now();
        let result = self.ask().await;
        let latency = started.elapsed().as_millis() as u64;
        let mut v = json!({
            "url": self.url,
            "reachable": result.is_ok(),
            "checkedAt": checked_at,
            "latencyMs": latency,
        });
        match result {
            Ok(networks) => v["networks"] = json!(networks),
            Err(e) => {
                v["error"] = json!(e);
                v["networks"] = json!([]);
            }
        }
        v
    }

    /// The v2 networks the preferred facilitator lists now, or why it could not tell.
    async fn ask(&self) -> Result<Vec<String>, String> {
        let client = self
            .pool
            .as_ref()
            .and_then(|p| p.client_at(0))
            .ok_or("no facilitator configured")?;
        match tokio::time::timeout(FACILITATOR_TIMEOUT, client.supported_uncached()).await {
            Ok(Ok(supported)) => Ok(v2_networks(&supported)),
            Ok(Err(e)) => Err(describe_error(&e)),
            Err(_) => Err(format!(
                "no answer within {} s",
                FACILITATOR_TIMEOUT.as_secs()
            )),
        }
    }
}

/// The networks of a `/supported` answer's v2 kinds, each once, in the facilitator's order.
fn v2_networks(s: &Supported) -> Vec<String> {
    let mut networks: Vec<String> = Vec::new();
    for k in s.kinds.iter().filter(|k| k.x402_version == 2) {
        if !networks.contains(&k.network) {
            networks.push(k.network.clone());
        }
    }
    networks
}

/// A failed check in /status's words: the two every operator meets (nothing listens, no
/// answer in time) short, the others as the facilitator client tells them.
fn describe_error(e: &FacilitatorError) -> String {
    match e {
        FacilitatorError::Timeout => "no answer in time".into(),
        FacilitatorError::Unreachable(_) => "connection failed".into(),
        _ => e.to_string(),
    }
}

/// The /status document.
pub async fn status(app: &App, probe: &FacilitatorProbe) -> Value {
    let facilitator = probe.check().await;
    let uptime = app.started.elapsed();
    let started_at = chrono::Utc::now()
        - chrono::Duration::from_std(uptime).unwrap_or_else(|_| chrono::Duration::zero());
    let mut degraded: Vec<Value> = Vec::new();
    let routes: Vec<Value> = app
        .routes
        .iter()
        .map(|r| {
            let mut v = json!({
                "path": r.spec.path,
                "name": r.spec.name,
                "ready": true,
                "price": r.spec.price.as_ref().map(|p| format!("${}", p.usd)),
                "pipeline": r.spec.pipeline,
            });
            if let Err(reason) = crate::server::availability::check(app, r) {
                v["ready"] = json!(false);
                v["reason"] = json!(reason);
                degraded.push(json!({
                    "path": r.spec.path,
                    "name": r.spec.name,
                    "reason": reason,
                }));
            }
            v
        })
        .collect();
    let pool = app.services.get::<Facilitators>();
    // With several facilitators, paid calls can be taken while any one is healthy.
    let reachable = facilitator["reachable"].as_bool().unwrap_or(false)
        || pool
            .as_ref()
            .is_some_and(|p| p.len() > 1 && p.any_available());
    json!({
        // Paid calls need the config (loaded, or we would not be answering) and the
        // facilitator; a route that cannot serve is `degraded`, not the whole service.
        "ok": reachable,
        "degraded": degraded,
        "service": app.config.service.name,
        "version": app.config.service.version,
        "uptimeSeconds": uptime.as_secs(),
        "startedAt": started_at.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string(),
        "config": app.stamp.to_json(),
        "facilitator": facilitator,
        "facilitators": pool.map(|p| p.status()).unwrap_or_else(|| json!([])),
        "networks": readiness::status_of(app.services.get::<Readiness>().as_deref(), &app.config),
        "routes": routes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn networks_are_the_v2_kinds_once_each_in_order() {
        let s = Supported::from_json(&json!({ "kinds": [
            { "x402Version": 2, "scheme": "exact", "network": "eip155:8453" },
            { "x402Version": 1, "scheme": "exact", "network": "base" },
            { "x402Version": 2, "scheme": "exact", "network": "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp" },
            { "x402Version": 2, "scheme": "upto", "network": "eip155:8453" },
        ]}))
        .unwrap();
        assert_eq!(
            v2_networks(&s),
            ["eip155:8453", "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"]
        );
    }

    #[test]
    fn failures_read_short_where_the_operator_meets_them() {
        assert_eq!(
            describe_error(&FacilitatorError::Unreachable("tcp connect error".into())),
            "connection failed"
        );
        assert_eq!(
            describe_error(&FacilitatorError::Timeout),
            "no answer in time"
        );
        assert_eq!(
            describe_error(&FacilitatorError::BadResponse("HTTP 500".into())),
            "facilitator gave an unusable answer: HTTP 500"
        );
    }
}
