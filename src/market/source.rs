//! A market source as a route configures it: which upstreams to try in order, how long an
//! answer is reused, and the limits of one request; and the one way every market stage reads
//! one ("a cached source with fallback"): each upstream in turn, each answer kept for the
//! route's lifetime.

use serde::Deserialize;
use std::any::Any;
use std::future::Future;
use std::time::Duration;

use super::hub::{first_ok, Fresh, Limits, MarketHub, UpstreamError};

pub const MIN_TTL_S: u64 = 15;
pub const MAX_TTL_S: u64 = 300;

/// The bounds every market stage puts on its cache lifetime (15–300 s) and its request timeout
/// (1–60000 ms).
pub fn check_ttl_and_timeout(ttl_s: u64, timeout_ms: u64) -> Result<(), String> {
    if !(MIN_TTL_S..=MAX_TTL_S).contains(&ttl_s) {
        return Err(format!("ttl_s must be between {MIN_TTL_S} and {MAX_TTL_S}"));
    }
    if timeout_ms == 0 || timeout_ms > 60_000 {
        return Err("timeout_ms must be between 1 and 60000".into());
    }
    Ok(())
}

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
        for u in &self.upstreams {
            hub.check_upstream(u)?;
        }
        self.check_numbers()
    }
    /// The checks that need no hub.
    fn check_numbers(&self) -> Result<(), String> {
        if self.upstreams.is_empty() {
            return Err("`upstreams` names at least one upstream".into());
        }
        check_ttl_and_timeout(self.ttl_s, self.timeout_ms)?;
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

    /// Reads the source: each upstream in order until one answers, each answer cached for
    /// `ttl_s` under `kind|upstream` (so two routes reading one upstream share its answer).
    pub async fn read<T, F, Fut>(
        &self,
        hub: &MarketHub,
        kind: &str,
        fetch: F,
    ) -> Result<Fresh<T>, UpstreamError>
    where
        T: Any + Send + Sync,
        F: Fn(String) -> Fut,
        Fut: Future<Output = Result<T, UpstreamError>>,
    {
        let fetch = &fetch;
        first_ok(&self.upstreams, |u| async move {
            hub.cached(format!("{kind}|{u}"), self.ttl(), fetch(u.clone()))
                .await
        })
        .await
    }
}
