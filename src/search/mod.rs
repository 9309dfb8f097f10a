//! Web search providers for /api/search: one module per provider, each implementing
//! [`Provider`] (how to ask it, how to read its answer, which options it takes), and
//! [`ProviderClient`], which sends the request and turns HTTP outcomes into [`ProviderError`]s
//! the route answers with 503 (never charged).
//!
//! A provider's base URL is an operator-configured upstream (routes.yaml `upstreams:`), so it
//! is called with a plain client, not the guarded one: a self-hosted SearXNG on a private
//! address must work without opening the guard to private targets for everyone. The result
//! URLs a provider returns are caller-influenced and are fetched only through the guard.

pub mod brave;
pub mod searxng;
pub mod serper;

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::{HeaderMap, Method, StatusCode};
use url::Url;

/// The `freshness` option: results from the last day, week, month or year.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Freshness {
    Day,
    Week,
    Month,
    Year,
}

impl Freshness {
    pub fn parse(s: &str) -> Option<Freshness> {
        match s.to_ascii_lowercase().as_str() {
            "day" => Some(Freshness::Day),
            "week" => Some(Freshness::Week),
            "month" => Some(Freshness::Month),
            "year" => Some(Freshness::Year),
            _ => None,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Freshness::Day => "day",
            Freshness::Week => "week",
            Freshness::Month => "month",
            Freshness::Year => "year",
        }
    }
}

/// One search as the caller asked for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    pub q: String,
    /// Results wanted (1–5 on the route).
    pub n: usize,
    /// ISO 3166-1 alpha-2 country, as given (`us`, `DE`).
    pub country: Option<String>,
    /// Language code, as given (`en`, `pt-BR`).
    pub lang: Option<String>,
    pub freshness: Option<Freshness>,
}

/// One search result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    pub url: String,
    pub title: String,
    pub snippet: String,
}

/// The HTTP request a provider wants sent.
#[derive(Debug, Clone)]
pub struct ProviderRequest {
    pub method: Method,
    pub url: Url,
    pub headers: HeaderMap,
    pub body: Option<Bytes>,
}

/// Why a search could not be done. Every variant is a 503 for the caller, not charged; the
/// code and message say which.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProviderError {
    /// No API key (the message names the environment variable).
    Unconfigured(String),
    /// Connection refused, DNS failure, reset: the provider could not be reached.
    Unreachable(String),
    /// The provider did not answer within the deadline.
    Timeout(Duration),
    /// HTTP 429; `retry_after` as the provider sent it.
    RateLimited { retry_after: Option<String> },
    /// HTTP 401/403: the provider refused our key.
    Unauthorized(u16),
    /// HTTP 422: the provider refused the query's parameters (a country it does not cover…).
    /// The caller's input, so a 400 rather than a 503.
    Rejected(String),
    /// Any other failure: a 5xx, an unexpected status, an answer that is not the expected JSON.
    Failed(String),
}

impl ProviderError {
    pub fn code(&self) -> &'static str {
        match self {
            ProviderError::Unconfigured(_) => "provider_unconfigured",
            ProviderError::Unreachable(_) | ProviderError::Timeout(_) => "provider_unavailable",
            ProviderError::RateLimited { .. } => "provider_rate_limited",
            ProviderError::Unauthorized(_) => "provider_unauthorized",
            ProviderError::Rejected(_) => "rejected_by_provider",
            ProviderError::Failed(_) => "provider_error",
        }
    }

    /// The status the caller gets: 400 when the provider refused the caller's parameters, 503
    /// for everything else. Neither is charged.
    pub fn status(&self) -> u16 {
        match self {
            ProviderError::Rejected(_) => 400,
            _ => 503,
        }
    }

    /// A sentence for the caller, naming the provider.
    pub fn message(&self, provider: &str) -> String {
        let what = match self {
            ProviderError::Unconfigured(why) => {
                format!("the search provider {provider} is not configured on this server: {why}")
            }
            ProviderError::Unreachable(why) => {
                format!("the search provider {provider} is unreachable ({why})")
            }
            ProviderError::Timeout(after) => format!(
                "the search provider {provider} did not answer within {} ms",
                after.as_millis()
            ),
            ProviderError::RateLimited { retry_after } => match retry_after {
                Some(s) => format!(
                    "the search provider {provider} is rate-limiting this server (retry after {s} s)"
                ),
                None => format!("the search provider {provider} is rate-limiting this server"),
            },
            ProviderError::Unauthorized(status) => format!(
                "the search provider {provider} refused this server's API key (HTTP {status})"
            ),
            ProviderError::Rejected(why) => {
                format!("the search provider {provider} refused the query's parameters ({why})")
            }
            ProviderError::Failed(why) => {
                format!("the search provider {provider} failed: {why}")
            }
        };
        format!("{what}; nothing was charged")
    }
}

/// One search provider. Implementations are pure: building the request and reading the answer
/// need no I/O, so they are tested on recorded answers directly.
pub trait Provider: Send + Sync {
    /// The name reported in responses (`provider`) and errors.
    fn name(&self) -> &'static str;

    /// Refuses options this provider cannot honour; the message names the provider.
    fn check(&self, query: &Query) -> Result<(), String>;

    /// Ready to search (`Err` says what is missing, e.g. the API key's variable).
    fn configured(&self) -> Result<(), String>;

    /// The request for `query` (only called when `configured` and `check` are Ok).
    fn request(&self, query: &Query) -> ProviderRequest;

    /// Reads a 2xx answer. `Ok(vec![])` means "no results"; `Err` is a malformed answer or a
    /// failure the provider reports inside a 2xx.
    fn parse(&self, body: &[u8]) -> Result<Vec<Hit>, String>;
}

/// Builds a provider by name.
pub fn provider(
    name: &str,
    base: Url,
    api_key: Option<String>,
    key_source: String,
) -> Result<Box<dyn Provider>, String> {
    match name {
        "brave" => Ok(Box::new(brave::Brave::new(base, api_key, key_source))),
        "serper" => Ok(Box::new(serper::Serper::new(base, api_key, key_source))),
        "searxng" => Ok(Box::new(searxng::Searxng::new(base))),
        other => Err(format!(
            "unknown search provider `{other}`; known: {}",
            PROVIDERS.join(", ")
        )),
    }
}

/// Provider names [`provider`] knows.
pub const PROVIDERS: &[&str] = &["brave", "serper", "searxng"];

/// The API key variable a provider reads by default (SearXNG takes no key).
pub fn default_key_env(provider: &str) -> Option<&'static str> {
    match provider {
        "brave" => Some("BRAVE_API_KEY"),
        "serper" => Some("SERPER_API_KEY"),
        _ => None,
    }
}

/// `base` with `path` appended (the base's own path kept, e.g. a SearXNG under /searx/).
/// Whether a provider's API key is usable: set, and sendable as an HTTP header value.
/// `source` names where it comes from (the environment variable) for the message.
pub fn key_configured(key: Option<&str>, source: &str) -> Result<(), String> {
    match key {
        Some(k) if http::HeaderValue::from_str(k).is_ok() => Ok(()),
        Some(_) => Err(format!(
            "{source} holds characters not allowed in an HTTP header"
        )),
        None => Err(format!("{source} is not set")),
    }
}

pub fn endpoint(base: &Url, path: &str) -> Url {
    let mut u = base.clone();
    let joined = format!(
        "{}/{}",
        base.path().trim_end_matches('/'),
        path.trim_start_matches('/')
    );
    u.set_path(&joined);
    u.set_query(None);
    u.set_fragment(None);
    u
}

/// Removes markup from a provider's snippet (Brave wraps matches in `<strong>`) and decodes the
/// common entities, so snippets are plain text.
pub fn plain_snippet(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut in_tag = false;
    for c in s.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    let decoded = out
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&#x27;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&nbsp;", " ")
        .replace("&amp;", "&");
    decoded.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The largest provider answer read (search answers are a few tens of KB).
pub const MAX_PROVIDER_BYTES: usize = 2 * 1024 * 1024;

/// Sends provider requests: no proxy from the environment, no redirects, no cookies, a
/// deadline and a size cap.
#[derive(Clone)]
pub struct ProviderClient {
    http: reqwest::Client,
}

impl ProviderClient {
    pub fn new(user_agent: &str) -> Result<ProviderClient, String> {
        crate::net::install_crypto_provider();
        let http = reqwest::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(user_agent)
            .pool_idle_timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| format!("search provider client: {e}"))?;
        Ok(ProviderClient { http })
    }

    /// Asks `provider` for `query` within `timeout`.
    pub async fn search(
        &self,
        provider: &dyn Provider,
        query: &Query,
        timeout: Duration,
    ) -> Result<Vec<Hit>, ProviderError> {
        provider.configured().map_err(ProviderError::Unconfigured)?;
        let req = provider.request(query);
        let (status, headers, body) = tokio::time::timeout(timeout, self.send(req))
            .await
            .map_err(|_| ProviderError::Timeout(timeout))??;
        if status == StatusCode::TOO_MANY_REQUESTS {
            let retry_after = headers
                .get(http::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .map(|s| s.trim().chars().take(40).collect::<String>())
                .filter(|s| !s.is_empty());
            return Err(ProviderError::RateLimited { retry_after });
        }
        if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
            return Err(ProviderError::Unauthorized(status.as_u16()));
        }
        if status == StatusCode::UNPROCESSABLE_ENTITY {
            return Err(ProviderError::Rejected(
                error_detail(&body).unwrap_or_else(|| "HTTP 422".into()),
            ));
        }
        if !status.is_success() {
            return Err(ProviderError::Failed(format!(
                "it answered HTTP {}{}",
                status.as_u16(),
                error_detail(&body)
                    .map(|d| format!(" ({d})"))
                    .unwrap_or_default()
            )));
        }
        provider.parse(&body).map_err(ProviderError::Failed)
    }

    async fn send(
        &self,
        req: ProviderRequest,
    ) -> Result<(StatusCode, HeaderMap, Bytes), ProviderError> {
        let mut b = self.http.request(req.method, req.url).headers(req.headers);
        if let Some(body) = req.body {
            b = b.body(body);
        }
        let mut resp = b.send().await.map_err(|e| {
            if e.is_connect() {
                ProviderError::Unreachable("connection failed".into())
            } else {
                ProviderError::Unreachable("the request could not be sent".into())
            }
        })?;
        let status = resp.status();
        let headers = resp.headers().clone();
        let mut buf = BytesMut::new();
        loop {
            match resp.chunk().await {
                Ok(Some(c)) => {
                    if buf.len() + c.len() > MAX_PROVIDER_BYTES {
                        return Err(ProviderError::Failed(format!(
                            "its answer is larger than {MAX_PROVIDER_BYTES} bytes"
                        )));
                    }
                    buf.extend_from_slice(&c);
                }
                Ok(None) => break,
                Err(_) => {
                    return Err(ProviderError::Unreachable(
                        "the connection failed while reading its answer".into(),
                    ))
                }
            }
        }
        Ok((status, headers, buf.freeze()))
    }
}

/// A short error text from a provider's error body (`message`, `error.detail`, …), if any.
fn error_detail(body: &[u8]) -> Option<String> {
    let v: serde_json::Value = serde_json::from_slice(body).ok()?;
    let candidates = [
        v.get("message"),
        v.pointer("/error/detail"),
        v.pointer("/error/message"),
        v.get("error").filter(|e| e.is_string()),
        v.get("detail"),
    ];
    let found = candidates
        .into_iter()
        .flatten()
        .filter_map(|x| x.as_str())
        .map(|s| s.chars().take(200).collect::<String>())
        .find(|s| !s.trim().is_empty());
    found
}

/// A JSON answer, or a parse error that says what was expected.
pub(crate) fn json_body(provider: &str, body: &[u8]) -> Result<serde_json::Value, String> {
    serde_json::from_slice(body).map_err(|_| format!("{provider} sent an answer that is not JSON"))
}

/// A hit from a JSON result object, when it has an http(s) URL.
pub(crate) fn hit(url: Option<&str>, title: Option<&str>, snippet: Option<&str>) -> Option<Hit> {
    let url = url?.trim();
    if url.is_empty() {
        return None;
    }
    Some(Hit {
        url: url.to_string(),
        title: plain_snippet(title.unwrap_or("")),
        snippet: plain_snippet(snippet.unwrap_or("")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_keep_the_base_path() {
        let b = Url::parse("https://api.search.brave.com").unwrap();
        assert_eq!(
            endpoint(&b, "res/v1/web/search").as_str(),
            "https://api.search.brave.com/res/v1/web/search"
        );
        let s = Url::parse("http://10.0.0.5:8080/searx/").unwrap();
        assert_eq!(
            endpoint(&s, "/search").as_str(),
            "http://10.0.0.5:8080/searx/search"
        );
    }

    #[test]
    fn snippets_become_plain_text() {
        assert_eq!(
            plain_snippet("The <strong>x402</strong> protocol &amp; HTTP&#39;s  402"),
            "The x402 protocol & HTTP's 402"
        );
    }

    #[test]
    fn error_codes_and_messages_say_which() {
        let e = ProviderError::RateLimited {
            retry_after: Some("3".into()),
        };
        assert_eq!(e.code(), "provider_rate_limited");
        assert!(e.message("brave").contains("brave is rate-limiting"));
        assert!(e.message("brave").ends_with("nothing was charged"));
        assert_eq!(ProviderError::Rejected("x".into()).status(), 400);
        assert_eq!(ProviderError::Failed("x".into()).status(), 503);
        assert_eq!(
            ProviderError::Unconfigured("x".into()).code(),
            "provider_unconfigured"
        );
        assert_eq!(
            ProviderError::Timeout(Duration::from_secs(1)).code(),
            "provider_unavailable"
        );
        assert_eq!(
            error_detail(br#"{"message":"Not enough credits","statusCode":400}"#).as_deref(),
            Some("Not enough credits")
        );
        assert_eq!(
            error_detail(br#"{"type":"ErrorResponse","error":{"detail":"bad country"}}"#)
                .as_deref(),
            Some("bad country")
        );
    }
}
