//! `search`: /api/search (docs/search.md). Asks the configured search provider for the query,
//! then fetches the top n result pages concurrently through the guarded client and turns each
//! into markdown with /api/fetch's transform (`doc::page_text`).
//!
//! - Input: `q` (required), `n` (pages, default 3), optional `country`, `lang`, `freshness`
//!   (day|week|month|year). An option the provider cannot honour is 400 naming the provider,
//!   checked before payment verification.
//! - Billing (bill's default rule): 200 whenever the provider returned at least one result,
//!   even when some or all pages fail. Not charged: 404 `no_results`; 400
//!   `rejected_by_provider` when the provider refuses the query's parameters (HTTP 422); 503
//!   when the provider is unconfigured, unreachable, rate-limited or failing (the code says
//!   which).
//! - Pages: sent with `Accept-Language` when `lang` is given; per page `page_max_bytes` (cut there, `truncated: true`), `page_timeout_ms`,
//!   redirects capped, content cut at `page_max_chars`. A result URL the guard refuses is
//!   reported failed and never fetched; DNS answers and redirects are judged by the client.
//!   Each page has its own deadline from when it gets a fetch slot, and the slowest page
//!   bounds the whole: with `concurrency` ≥ n (the default) the call never takes longer than
//!   `provider_timeout_ms + page_timeout_ms + TRANSFORM_MARGIN`; with fewer slots, one
//!   `page_timeout_ms + TRANSFORM_MARGIN` per wave of pages.
//!
//! Parameters: `provider` (brave | serper | searxng), `upstream` (name in routes.yaml
//! `upstreams:`, default the provider's name), `api_key_env` (default BRAVE_API_KEY /
//! SERPER_API_KEY; read once at startup), `api_key` (a literal key, for generated configs and
//! tests; prefer the variable), `provider_timeout_ms` (6000), `page_max_bytes` (200000),
//! `page_timeout_ms` (8000), `page_max_chars` (12000), `max_redirects` (3), `concurrency`
//! (pages fetched at once per request, 5), `parse_concurrent` (4), `parse_queue` (16),
//! `parse_queue_wait_ms` (2000): fetched pages converted at once over all of the route's calls,
//! pages allowed to wait for a turn and for how long (`pipeline::parse_slots`). A page that gets
//! no turn is reported failed with `parser_busy`, as any other failed page (the call is still
//! charged when the provider returned results).

use async_trait::async_trait;
use http::{HeaderMap, HeaderValue, Method, StatusCode};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;
use tokio::time::Instant;

use crate::doc::page_text::{check_type, page_text};
use crate::net::{FetchRequest, GuardedClient, OverCap};
use crate::pipeline::parse_slots::{ParseSlots, SlotLimits};
use crate::pipeline::{params, BuildCtx, Exchange, Flow, Phase, Reply, Stage, StageFactory};
use crate::search::{
    default_key_env, provider, Freshness, Hit, Provider, ProviderClient, ProviderError, Query,
};

pub const FACTORY: StageFactory = StageFactory {
    name: "search",
    phase: Phase::Work,
    payment: false,
    needs: &[],
    gives: &[],
    doc: "web search through the configured provider, then the top n pages fetched in parallel as markdown",
    errors: &[
        (400, "Missing or too long q, bad n, or an option the configured provider does not support or refused (rejected_by_provider)"),
        (404, "The provider found no results (not charged)"),
        (503, "The search provider is unconfigured, unreachable, rate-limited or failing (not charged)"),
    ],
    build,
};

/// Time allowed for turning a fetched page into markdown, on top of its fetch deadline.
pub const TRANSFORM_MARGIN: Duration = Duration::from_millis(2000);

/// The Accept header sent for result pages: the types the transform reads.
const PAGE_ACCEPT: &str =
    "text/html,application/xhtml+xml,text/markdown;q=0.9,text/plain;q=0.9,application/json;q=0.9,*/*;q=0.5";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    provider: String,
    #[serde(default)]
    upstream: Option<String>,
    #[serde(default)]
    api_key_env: Option<String>,
    #[serde(default)]
    api_key: Option<String>,
    #[serde(default = "default_provider_timeout")]
    provider_timeout_ms: u64,
    #[serde(default = "default_page_bytes")]
    page_max_bytes: usize,
    #[serde(default = "default_page_timeout")]
    page_timeout_ms: u64,
    #[serde(default = "default_page_chars")]
    page_max_chars: usize,
    #[serde(default = "default_redirects")]
    max_redirects: u32,
    #[serde(default = "default_concurrency")]
    concurrency: usize,
    #[serde(default = "default_parse_concurrent")]
    parse_concurrent: usize,
    #[serde(default = "default_parse_queue")]
    parse_queue: usize,
    #[serde(default = "default_parse_queue_wait")]
    parse_queue_wait_ms: u64,
}

fn default_provider_timeout() -> u64 {
    6000
}
fn default_page_bytes() -> usize {
    200_000
}
fn default_page_timeout() -> u64 {
    8000
}
fn default_page_chars() -> usize {
    12_000
}
fn default_redirects() -> u32 {
    3
}
fn default_concurrency() -> usize {
    5
}
fn default_parse_concurrent() -> usize {
    4
}
fn default_parse_queue() -> usize {
    16
}
fn default_parse_queue_wait() -> u64 {
    TRANSFORM_MARGIN.as_millis() as u64
}

struct Search {
    provider: Box<dyn Provider>,
    providers: ProviderClient,
    pages: Arc<GuardedClient>,
    provider_timeout: Duration,
    page_max_bytes: usize,
    page_timeout: Duration,
    page_max_chars: usize,
    max_redirects: u32,
    concurrency: usize,
    /// Pages converted at once, over all calls of the route.
    parses: ParseSlots,
}

fn build(ctx: &BuildCtx<'_>, p: Value) -> Result<Arc<dyn Stage>, String> {
    let p: Params = params(p)?;
    for name in ["q", "n"] {
        if ctx.route.param(name).is_none() {
            return Err(format!("the route has no input parameter `{name}`"));
        }
    }
    if p.provider_timeout_ms == 0
        || p.page_timeout_ms == 0
        || p.page_max_bytes == 0
        || p.page_max_chars == 0
        || p.concurrency == 0
    {
        return Err("timeouts, page caps and concurrency must be positive".into());
    }
    if p.max_redirects > 20 {
        return Err("max_redirects above 20 is not allowed".into());
    }
    if !crate::search::PROVIDERS.contains(&p.provider.as_str()) {
        return Err(format!(
            "unknown search provider `{}`; known: {}",
            p.provider,
            crate::search::PROVIDERS.join(", ")
        ));
    }
    let upstream = p.upstream.clone().unwrap_or_else(|| p.provider.clone());
    let base = ctx
        .config
        .upstreams
        .get(&upstream)
        .cloned()
        .ok_or_else(|| {
            format!(
                "no upstream `{upstream}` in routes.yaml `upstreams:` (the provider's base URL)"
            )
        })?;
    let key_env = p
        .api_key_env
        .clone()
        .or_else(|| default_key_env(&p.provider).map(str::to_string));
    let (key, key_source) = match (&p.api_key, &key_env) {
        (Some(k), _) => (Some(k.clone()), "api_key".to_string()),
        (None, Some(var)) => (std::env::var(var).ok(), var.clone()),
        (None, None) => (None, "api_key_env".to_string()),
    };
    let parse_slots = SlotLimits::new(
        p.parse_concurrent,
        p.parse_queue,
        p.parse_queue_wait_ms,
        ["parse_concurrent", "parse_queue", "parse_queue_wait_ms"],
    )?;
    let provider = provider(&p.provider, base, key, key_source)?;
    Ok(Arc::new(Search {
        provider,
        providers: ProviderClient::new(&ctx.config.guard.user_agent)?,
        pages: ctx.services.need::<GuardedClient>()?,
        provider_timeout: Duration::from_millis(p.provider_timeout_ms),
        page_max_bytes: p.page_max_bytes,
        page_timeout: Duration::from_millis(p.page_timeout_ms),
        page_max_chars: p.page_max_chars,
        max_redirects: p.max_redirects,
        concurrency: p.concurrency,
        parses: ParseSlots::new(parse_slots),
    }))
}

fn bad(code: &str, message: impl Into<String>) -> Reply {
    Reply::error(StatusCode::BAD_REQUEST, code, message)
}

/// The caller's query from the validated input, or the 400.
#[allow(clippy::result_large_err)] // a Reply is the house's error type for input checks
fn query_of(input: &Map<String, Value>) -> Result<Query, Reply> {
    let q = input
        .get("q")
        .and_then(Value::as_str)
        .map(str::trim)
        .unwrap_or("");
    if q.is_empty() {
        return Err(bad(
            "missing_parameter",
            "`q` is required: the search query (at most 300 characters)",
        ));
    }
    let n = input.get("n").and_then(Value::as_i64).unwrap_or(3);
    if !(1..=5).contains(&n) {
        return Err(bad(
            "invalid_parameter",
            "`n` must be an integer from 1 to 5",
        ));
    }
    let text = |name: &str| {
        input
            .get(name)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    let freshness = match text("freshness") {
        None => None,
        Some(f) => Some(Freshness::parse(&f).ok_or_else(|| {
            bad(
                "invalid_parameter",
                "`freshness` must be one of day, week, month, year",
            )
        })?),
    };
    Ok(Query {
        q: q.to_string(),
        n: n as usize,
        country: text("country"),
        lang: text("lang"),
        freshness,
    })
}

/// How one result page ended.
struct Page {
    ok: bool,
    final_url: Option<String>,
    status: Option<u16>,
    truncated: bool,
    content: Option<String>,
    /// The page's own title, for results the provider left untitled.
    title: Option<String>,
    error: Option<(String, String)>,
}

impl Page {
    fn failed(code: &str, message: impl Into<String>) -> Page {
        Page {
            ok: false,
            final_url: None,
            status: None,
            truncated: false,
            content: None,
            title: None,
            error: Some((code.to_string(), message.into())),
        }
    }
}

impl Search {
    /// A result URL the guard refuses by its spelling: reported, never fetched.
    fn refused(&self, url: &str) -> Result<url::Url, Page> {
        self.pages.guard().parse_target(url).map_err(|refusal| {
            let e = crate::net::FetchError::from_url_refusal(refusal);
            Page::failed(e.code(), format!("{e}; the page was not fetched"))
        })
    }

    /// Fetches and converts one vetted result page (DNS answers and redirects are judged by
    /// the client). Never panics; every failure is a failed Page.
    async fn page(&self, target: url::Url, lang: Option<&HeaderValue>) -> Page {
        let mut headers = HeaderMap::new();
        headers.insert(http::header::ACCEPT, HeaderValue::from_static(PAGE_ACCEPT));
        if let Some(l) = lang {
            headers.insert(http::header::ACCEPT_LANGUAGE, l.clone());
        }
        let req = FetchRequest {
            url: target,
            method: Method::GET,
            headers,
            body: None,
            max_redirects: self.max_redirects,
            max_bytes: self.page_max_bytes,
            timeout: self.page_timeout,
            over_cap: OverCap::Truncate,
        };
        let resp = match self.pages.fetch(req).await {
            Ok(r) => r,
            Err(e) => return Page::failed(e.code(), e.to_string()),
        };
        let final_url = resp.final_url.to_string();
        let status = resp.status.as_u16();
        let with_answer = |mut p: Page| {
            p.final_url = Some(final_url.clone());
            p.status = Some(status);
            p
        };
        if !resp.status.is_success() {
            return with_answer(Page::failed(
                "upstream_status",
                format!("the page answered HTTP {status}"),
            ));
        }
        let content_type = resp.content_type().unwrap_or("").to_string();
        if let Err(e) = check_type(&content_type, &resp.body) {
            return with_answer(Page::failed("unsupported_content_type", e.to_string()));
        }
        let max = self.page_max_chars;
        let body = resp.body.clone();
        let base = resp.final_url.clone();
        let slot = match self.parses.acquire().await {
            Ok(s) => s,
            Err(busy) => {
                let why =
                    crate::pipeline::parse_slots::busy_message(busy, "pages", self.parses.limits());
                return with_answer(Page::failed("parser_busy", why));
            }
        };
        // The page's tree is bounded like /api/fetch's: nodes per byte, and the transform margin.
        let budget = crate::doc::parse::Budget::default()
            .with_deadline(std::time::Instant::now() + TRANSFORM_MARGIN);
        let converted = tokio::task::spawn_blocking(move || {
            let _slot = slot;
            page_text(&content_type, &body, &base, max, &budget)
        })
        .await;
        match converted {
            Ok(Ok(text)) => Page {
                ok: true,
                final_url: Some(final_url),
                status: Some(status),
                truncated: resp.truncated || text.cut,
                content: Some(text.content),
                title: text.title,
                error: None,
            },
            Ok(Err(e)) => with_answer(Page::failed(e.code(), e.to_string())),
            Err(_) => with_answer(Page::failed(
                "transform_failed",
                "the page could not be converted",
            )),
        }
    }

    /// Every page concurrently (at most `concurrency` at once), each under its own deadline
    /// from the moment it gets a slot, and all under one overall deadline: a slow page never
    /// holds the others' results.
    async fn pages(&self, hits: &[Hit], lang: Option<&str>) -> Vec<Page> {
        // Pages in the language asked for, where the site offers a choice.
        let lang = lang.and_then(|l| HeaderValue::from_str(l).ok());
        let lang = lang.as_ref();
        let permits = Semaphore::new(self.concurrency);
        let per_page = self.page_timeout + TRANSFORM_MARGIN;
        // With more pages than slots, pages wait their turn, but never past this.
        let waves = hits.len().div_ceil(self.concurrency).max(1) as u32;
        let deadline = Instant::now() + per_page * waves;
        let timed_out = || {
            Page::failed(
                "upstream_timeout",
                format!(
                    "the page was not fetched and converted within {} ms",
                    per_page.as_millis()
                ),
            )
        };
        let jobs = hits.iter().map(|h| {
            let permits = &permits;
            async move {
                let target = match self.refused(&h.url) {
                    Ok(t) => t,
                    Err(page) => return page,
                };
                let work = async {
                    let Ok(_slot) = permits.acquire().await else {
                        return Page::failed("internal_error", "the page could not be scheduled");
                    };
                    match tokio::time::timeout(per_page, self.page(target, lang)).await {
                        Ok(page) => page,
                        Err(_) => timed_out(),
                    }
                };
                match tokio::time::timeout_at(deadline, work).await {
                    Ok(page) => page,
                    Err(_) => timed_out(),
                }
            }
        });
        futures_util::future::join_all(jobs).await
    }
}

#[async_trait]
impl Stage for Search {
    fn readiness(&self) -> Result<(), String> {
        self.provider
            .configured()
            .map_err(|why| format!("search provider {}: {why}", self.provider.name()))
    }

    fn check_input(&self, input: &Map<String, Value>) -> Result<(), Reply> {
        let query = query_of(input)?;
        self.provider
            .check(&query)
            .map_err(|m| bad("unsupported_parameter", m))
    }

    async fn run(&self, ex: &mut Exchange) -> Flow {
        let query = match query_of(&ex.input) {
            Ok(q) => q,
            Err(r) => {
                ex.reply = Some(r);
                return Flow::Reply;
            }
        };
        if let Err(m) = self.provider.check(&query) {
            return ex.fail(StatusCode::BAD_REQUEST, "unsupported_parameter", m);
        }
        let name = self.provider.name();
        let hits = match self
            .providers
            .search(self.provider.as_ref(), &query, self.provider_timeout)
            .await
        {
            Ok(h) => h,
            Err(e) => {
                tracing::warn!(request_id = %ex.id, provider = name, code = e.code(), "search provider failed");
                let status =
                    StatusCode::from_u16(e.status()).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
                let mut reply = Reply::error(status, e.code(), e.message(name));
                if let ProviderError::RateLimited {
                    retry_after: Some(s),
                } = &e
                {
                    reply = reply.with_header("retry-after", s);
                }
                ex.reply = Some(reply);
                return Flow::Reply;
            }
        };
        let hits: Vec<Hit> = hits.into_iter().take(query.n).collect();
        if hits.is_empty() {
            return ex.fail(
                StatusCode::NOT_FOUND,
                "no_results",
                format!(
                    "the search provider {name} found no results for this query; nothing was charged"
                ),
            );
        }
        let pages = self.pages(&hits, query.lang.as_deref()).await;
        let fetched_ok = pages.iter().filter(|p| p.ok).count();
        let results: Vec<Value> = hits
            .iter()
            .zip(pages)
            .enumerate()
            .map(|(i, (h, p))| {
                let title = match (h.title.is_empty(), p.title) {
                    (true, Some(t)) => t,
                    _ => h.title.clone(),
                };
                let mut r = json!({
                    "rank": i + 1,
                    "url": h.url,
                    "title": title,
                    "snippet": h.snippet,
                    "ok": p.ok,
                    "finalUrl": p.final_url.unwrap_or_else(|| h.url.clone()),
                    "status": p.status,
                    "format": "markdown",
                    "truncated": p.truncated,
                });
                if let Some(c) = p.content {
                    r["content"] = Value::String(c);
                }
                if let Some((code, message)) = p.error {
                    r["error"] = json!({ "code": code, "message": message });
                }
                r
            })
            .collect();
        ex.respond_ok(json!({
            "ok": true,
            "query": query.q,
            "provider": name,
            "n": query.n,
            "resultCount": results.len(),
            "fetchedOk": fetched_ok,
            "elapsedMs": ex.elapsed_ms(),
            "results": results,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn queries_from_input() {
        let q = query_of(&input(
            json!({"q": "  rust  ", "n": 2, "freshness": "Week", "country": "de"}),
        ))
        .unwrap();
        assert_eq!(q.q, "rust");
        assert_eq!(q.n, 2);
        assert_eq!(q.freshness, Some(Freshness::Week));
        assert_eq!(q.country.as_deref(), Some("de"));
        assert_eq!(query_of(&input(json!({"q": "x"}))).unwrap().n, 3);
        for bad in [
            json!({"q": "   "}),
            json!({}),
            json!({"q": "x", "n": 0}),
            json!({"q": "x", "n": 6}),
            json!({"q": "x", "freshness": "hour"}),
        ] {
            let r = query_of(&input(bad.clone())).unwrap_err();
            assert_eq!(r.status, StatusCode::BAD_REQUEST, "{bad}");
        }
    }
}
