//! Client of a public x402 discovery index (the CDP Bazaar API): merchant
//! look-up by payTo (`GET {base}/discovery/merchant?payTo=&limit=&offset=`, pages of 100) and
//! ranked search (`GET {base}/discovery/search?query=&limit=`). The base URL is the upstream
//! `cdp_discovery` in routes.yaml.
//!
//! Pages are cached (moka, keyed by the request URL) for a few minutes: the index itself is
//! cached up to 10 minutes at CDP, so fresher answers would not be truer, and repeated audits of
//! one host cost the index nothing. Only successful pages are cached.

use http::{HeaderMap, HeaderValue, Method};
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant};
use url::Url;

use crate::net::{FetchRequest, GuardedClient, OverCap};

/// Entries per merchant page (CDP's maximum is 1000; our budget is 3 pages of 100).
pub const PAGE_SIZE: usize = 100;

pub struct DiscoveryIndex {
    base: String,
    client: Arc<GuardedClient>,
    cache: moka::future::Cache<String, Arc<Value>>,
    max_page_bytes: usize,
}

/// What a merchant look-up found for one payTo.
#[derive(Debug, Clone)]
pub struct MerchantPages {
    pub resources: Vec<Value>,
    /// `pagination.total` when the index gave it.
    pub total: Option<u64>,
    pub pages: usize,
    /// More entries exist than the page budget read.
    pub incomplete: bool,
}

impl DiscoveryIndex {
    pub fn new(base: &Url, client: Arc<GuardedClient>, cache_ttl: Duration) -> DiscoveryIndex {
        DiscoveryIndex {
            base: base.as_str().trim_end_matches('/').to_string(),
            client,
            cache: moka::future::Cache::builder()
                .max_capacity(2_000)
                .time_to_live(cache_ttl)
                .build(),
            max_page_bytes: 4 << 20,
        }
    }

    /// The index's name for reports (its base URL: no key is ever part of it).
    pub fn source(&self) -> &str {
        &self.base
    }

    async fn get(&self, url: String, deadline: Instant) -> Result<Arc<Value>, String> {
        if let Some(v) = self.cache.get(&url).await {
            return Ok(v);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left < Duration::from_millis(50) {
            return Err("no time left before the deadline".into());
        }
        let parsed = Url::parse(&url).map_err(|e| e.to_string())?;
        let mut headers = HeaderMap::new();
        headers.insert(
            http::header::ACCEPT,
            HeaderValue::from_static("application/json"),
        );
        let resp = self
            .client
            .fetch(FetchRequest {
                url: parsed,
                method: Method::GET,
                headers,
                body: None,
                max_redirects: 2,
                max_bytes: self.max_page_bytes,
                timeout: left,
                over_cap: OverCap::Reject,
            })
            .await
            .map_err(|e| format!("{}: {e}", e.code()))?;
        if !resp.status.is_success() {
            return Err(format!("the index answered HTTP {}", resp.status.as_u16()));
        }
        let v: Value = serde_json::from_slice(&resp.body)
            .map_err(|_| "the index answered something that is not JSON".to_string())?;
        if !v.is_object() {
            return Err("the index answered JSON that is not an object".into());
        }
        let v = Arc::new(v);
        self.cache.insert(url, v.clone()).await;
        Ok(v)
    }

    /// Up to `max_pages` pages of the payTo's resources; stops early when the index says there
    /// are no more.
    pub async fn merchant(
        &self,
        pay_to: &str,
        max_pages: usize,
        deadline: Instant,
    ) -> Result<MerchantPages, String> {
        let mut out = MerchantPages {
            resources: Vec::new(),
            total: None,
            pages: 0,
            incomplete: false,
        };
        let enc: String = url::form_urlencoded::byte_serialize(pay_to.as_bytes()).collect();
        for page in 0..max_pages {
            let offset = page * PAGE_SIZE;
            let url = format!(
                "{}/discovery/merchant?payTo={enc}&limit={PAGE_SIZE}&offset={offset}",
                self.base
            );
            let v = match self.get(url, deadline).await {
                Ok(v) => v,
                // A later page failing keeps what the first pages found.
                Err(e) if page == 0 => return Err(e),
                Err(_) => {
                    out.incomplete = true;
                    break;
                }
            };
            out.pages += 1;
            let items = v
                .get("resources")
                .or_else(|| v.get("items"))
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let n = items.len();
            out.resources.extend(items);
            out.total = v
                .pointer("/pagination/total")
                .and_then(Value::as_u64)
                .or(out.total);
            let seen = offset + n;
            let more = match out.total {
                Some(t) => (seen as u64) < t,
                None => n >= PAGE_SIZE,
            };
            if !more || n == 0 {
                return Ok(out);
            }
            if page + 1 == max_pages {
                out.incomplete = true;
            }
        }
        Ok(out)
    }

    /// Ranked search; the resources it returns.
    pub async fn search(&self, query: &str, deadline: Instant) -> Result<Vec<Value>, String> {
        let q: String = url::form_urlencoded::byte_serialize(query.as_bytes()).collect();
        let url = format!("{}/discovery/search?query={q}&limit=20", self.base);
        let v = self.get(url, deadline).await?;
        Ok(v.get("resources")
            .or_else(|| v.get("items"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default())
    }
}

/// The URL of an index item (`resource` is a string at CDP; accept `{url}` objects too).
pub fn item_url(item: &Value) -> Option<String> {
    match item.get("resource") {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Object(o)) => o.get("url").and_then(Value::as_str).map(str::to_string),
        _ => item.get("url").and_then(Value::as_str).map(str::to_string),
    }
}

/// `lastUpdated` as text (ISO string at CDP, a unix number in older answers).
pub fn item_last_updated(item: &Value) -> Option<String> {
    match item.get("lastUpdated") {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Number(n)) => {
            let secs = n.as_i64()?;
            // Milliseconds when implausibly large for seconds.
            let secs = if secs > 100_000_000_000 {
                secs / 1000
            } else {
                secs
            };
            chrono::DateTime::from_timestamp(secs, 0)
                .map(|d| d.format("%Y-%m-%dT%H:%M:%SZ").to_string())
        }
        _ => None,
    }
}

/// Networks of an index item's accepts, as written.
pub fn item_networks(item: &Value) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for a in item
        .get("accepts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(n) = a.get("network").and_then(Value::as_str) {
            if !out.iter().any(|x| x == n) {
                out.push(n.to_string());
            }
        }
    }
    out
}
