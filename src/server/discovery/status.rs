//! `GET /status`: uptime, each route's readiness, and whether the facilitator answers
//! `GET /supported` (checked at most every 30 s, 3 s deadline, so /status cannot be used to
//! hammer the facilitator).

use serde_json::{json, Value};
use std::time::{Duration, Instant};

use crate::config::Config;
use crate::payment::readiness::{self, Readiness};
use crate::pipeline::now_iso;
use crate::server::App;

/// How long a facilitator check is reused.
pub const FACILITATOR_CHECK_TTL: Duration = Duration::from_secs(30);
/// Deadline of one facilitator check.
pub const FACILITATOR_TIMEOUT: Duration = Duration::from_secs(3);
/// Largest /supported answer read.
const SUPPORTED_MAX_BYTES: usize = 256 * 1024;

/// Checks the facilitator's `GET /supported`, one check at a time, result reused 30 s.
pub struct FacilitatorProbe {
    url: String,
    supported_url: String,
    client: Option<reqwest::Client>,
    build_error: Option<String>,
    last: tokio::sync::Mutex<Option<(Instant, Value)>>,
}

impl FacilitatorProbe {
    pub fn new(config: &Config) -> FacilitatorProbe {
        crate::net::install_crypto_provider();
        let url = config.payment.facilitator.url.to_string();
        let supported_url = format!("{}/supported", url.trim_end_matches('/'));
        let built = reqwest::Client::builder()
            .no_proxy()
            .timeout(FACILITATOR_TIMEOUT)
            .connect_timeout(FACILITATOR_TIMEOUT)
            .redirect(reqwest::redirect::Policy::limited(3))
            .user_agent(config.guard.user_agent.clone())
            .build();
        let (client, build_error) = match built {
            Ok(c) => (Some(c), None),
            Err(e) => (None, Some(format!("cannot build the HTTP client: {e}"))),
        };
        FacilitatorProbe {
            url,
            supported_url,
            client,
            build_error,
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
        let result = match &self.client {
            Some(c) => fetch_supported(c, &self.supported_url).await,
            None => Err(self.build_error.clone().unwrap_or_default()),
        };
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
}

/// GET /supported → the v2 networks it lists.
async fn fetch_supported(client: &reqwest::Client, url: &str) -> Result<Vec<String>, String> {
    let mut resp = client.get(url).send().await.map_err(describe_error)?;
    if !resp.status().is_success() {
        return Err(format!(
            "GET /supported answered HTTP {}",
            resp.status().as_u16()
        ));
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(describe_error)? {
        if body.len() + chunk.len() > SUPPORTED_MAX_BYTES {
            return Err("GET /supported answered more than 256 KB".into());
        }
        body.extend_from_slice(&chunk);
    }
    let v: Value = serde_json::from_slice(&body)
        .map_err(|e| format!("GET /supported did not answer JSON: {e}"))?;
    v2_networks(&v)
}

/// The networks of a `/supported` answer's v2 kinds (a kind without a version counts as v2),
/// each once, in the facilitator's order.
fn v2_networks(v: &Value) -> Result<Vec<String>, String> {
    let kinds = v["kinds"]
        .as_array()
        .ok_or("GET /supported has no kinds list")?;
    let mut networks: Vec<String> = Vec::new();
    for k in kinds {
        let v2 = k["x402Version"].as_u64().map(|n| n == 2).unwrap_or(true);
        if let (true, Some(n)) = (v2, k["network"].as_str()) {
            if !networks.iter().any(|x| x == n) {
                networks.push(n.to_string());
            }
        }
    }
    Ok(networks)
}

fn describe_error(e: reqwest::Error) -> String {
    if e.is_timeout() {
        format!("no answer within {} s", FACILITATOR_TIMEOUT.as_secs())
    } else if e.is_connect() {
        "connection failed".into()
    } else {
        format!("request failed: {e}")
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
    let pool = app
        .services
        .get::<crate::x402::facilitators::Facilitators>();
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
        let v = json!({ "kinds": [
            { "x402Version": 2, "scheme": "exact", "network": "eip155:8453" },
            { "x402Version": 1, "scheme": "exact", "network": "base" },
            { "scheme": "exact", "network": "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp" },
            { "x402Version": 2, "scheme": "upto", "network": "eip155:8453" },
        ]});
        assert_eq!(
            v2_networks(&v).unwrap(),
            ["eip155:8453", "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"]
        );
    }

    #[test]
    fn an_answer_without_kinds_is_an_error() {
        assert_eq!(
            v2_networks(&json!({})).unwrap_err(),
            "GET /supported has no kinds list"
        );
    }
}
