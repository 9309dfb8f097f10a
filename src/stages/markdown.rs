//! `markdown`: /api/fetch's transform (needs `fetched`). An HTML page becomes clean markdown
//! of its main content (title, article, links made absolute; navigation and boilerplate gone);
//! text/plain, JSON and markdown pass through. Anything else is 415, not charged.
//!
//! The conversion itself is `doc::page_text::page_text` (shared with `search`); it runs on
//! the blocking pool so a large page never stalls other requests.
//!
//! Parameters:
//! - `max_chars` (100000): output cut there, `truncated: true`.
//! - `budget_ms` (8000): the route's time budget, counted from the request's arrival; HTML
//!   parsing stops at it (504 `parse_timeout`), though never less than `min_parse_ms` (1000)
//!   after the page arrived, so a slow upstream does not cost a page that parses in 50 ms.
//! - `nodes_per_byte` (1), `min_nodes` (4096): the parse's node budget,
//!   `min_nodes + nodes_per_byte × bytes`; a page whose tree outgrows it (misnested formatting
//!   reconstructed over and over, issue 21) is 413 `html_too_complex`. Real pages make
//!   0.01–0.13 nodes per byte (441 corpus pages, none refused).
//!
//! - `max_concurrent` (4), `queue` (16), `queue_wait_ms` (4000): pages converted at once on
//!   this route, callers allowed to wait for a turn and for how long (`pipeline::parse_slots`);
//!   past them 503 `parser_busy` with `Retry-After`.
//!
//! Every refusal is an error (status ≥ 400): not charged.

use async_trait::async_trait;
use http::StatusCode;
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::doc::page_text::{check_type, page_text, PageError, PageText};
use crate::doc::parse::{Budget, Refused};
use crate::net::Fetched;
use crate::pipeline::parse_slots::{busy_reply, ParseSlots, SlotLimits};
use crate::pipeline::{params, Artefact, BuildCtx, Exchange, Flow, Phase, Stage, StageFactory};

pub const FACTORY: StageFactory = StageFactory {
    name: "markdown",
    phase: Phase::Work,
    payment: false,
    needs: &[Artefact::of::<Fetched>("fetched")],
    gives: &[],
    doc: "HTML main content → markdown; text, JSON and markdown pass through; other types 415",
    errors: &[
        (
            413,
            "The page's HTML builds a tree over the node budget for its size (html_too_complex)",
        ),
        (
            415,
            "The upstream content type is not HTML, text, JSON or markdown",
        ),
        (
            503,
            "Every parse slot of the route is taken and the queue is full or the wait ran out (parser_busy, Retry-After)",
        ),
        (
            504,
            "The page could not be parsed within the route's time budget (parse_timeout)",
        ),
    ],
    build,
};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    #[serde(default = "default_max_chars")]
    max_chars: usize,
    #[serde(default = "default_budget_ms")]
    budget_ms: u64,
    #[serde(default = "default_min_parse_ms")]
    min_parse_ms: u64,
    #[serde(default = "default_nodes_per_byte")]
    nodes_per_byte: usize,
    #[serde(default = "default_min_nodes")]
    min_nodes: usize,
    #[serde(default = "default_concurrent")]
    max_concurrent: usize,
    #[serde(default = "default_queue")]
    queue: usize,
    #[serde(default = "default_queue_wait")]
    queue_wait_ms: u64,
}

fn default_max_chars() -> usize {
    100_000
}
fn default_budget_ms() -> u64 {
    8000
}
fn default_min_parse_ms() -> u64 {
    1000
}
fn default_nodes_per_byte() -> usize {
    crate::doc::parse::DEFAULT_NODES_PER_BYTE
}
fn default_min_nodes() -> usize {
    crate::doc::parse::DEFAULT_MIN_NODES
}
fn default_concurrent() -> usize {
    4
}
fn default_queue() -> usize {
    16
}
fn default_queue_wait() -> u64 {
    4000
}

struct Markdown {
    max_chars: usize,
    budget: Duration,
    min_parse: Duration,
    nodes: Budget,
    parses: ParseSlots,
}

fn build(_ctx: &BuildCtx<'_>, p: Value) -> Result<Arc<dyn Stage>, String> {
    let p: Params = params(p)?;
    if p.budget_ms == 0 || p.nodes_per_byte == 0 {
        return Err("budget_ms and nodes_per_byte must be positive".into());
    }
    let slots = SlotLimits::new(
        p.max_concurrent,
        p.queue,
        p.queue_wait_ms,
        ["max_concurrent", "queue", "queue_wait_ms"],
    )?;
    Ok(Arc::new(Markdown {
        parses: ParseSlots::new(slots),
        max_chars: p.max_chars.max(1),
        budget: Duration::from_millis(p.budget_ms),
        min_parse: Duration::from_millis(p.min_parse_ms),
        nodes: Budget {
            nodes_per_byte: p.nodes_per_byte,
            min_nodes: p.min_nodes,
            deadline: None,
        },
    }))
}

pub use crate::doc::page_text::{decode_text, kind_of, Kind};

#[async_trait]
impl Stage for Markdown {
    async fn run(&self, ex: &mut Exchange) -> Flow {
        let Some(f) = ex.slots.take::<Fetched>() else {
            return ex.fail_internal("nothing fetched");
        };
        let r = &f.response;
        let content_type = r.content_type().unwrap_or("").to_string();
        if let Err(e) = check_type(&content_type, &r.body) {
            return ex.fail(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_content_type",
                format!(
                    "the upstream sent `{}`; /api/fetch reads text/html, text/plain, application/json and text/markdown (nothing was charged)",
                    e.content_type
                ),
            );
        }
        let body = r.body.clone();
        let final_url = r.final_url.clone();
        let ct = content_type.clone();
        let max = self.max_chars;
        let slot = match self.parses.acquire().await {
            Ok(s) => s,
            Err(busy) => {
                ex.reply = Some(busy_reply(busy, "pages", self.parses.limits()));
                return Flow::Reply;
            }
        };
        let deadline = (ex.arrived + self.budget).max(Instant::now() + self.min_parse);
        let budget = self.nodes.with_deadline(deadline);
        let work = tokio::task::spawn_blocking(move || {
            let _slot = slot;
            page_text(&ct, &body, &final_url, max, &budget)
        })
        .await;
        let page = match work {
            Ok(Ok(page)) => page,
            Ok(Err(PageError::Refused(r))) => {
                let status = match r {
                    Refused::TooManyNodes { .. } => StatusCode::PAYLOAD_TOO_LARGE,
                    Refused::Timeout => StatusCode::GATEWAY_TIMEOUT,
                };
                return ex.fail(status, r.code(), format!("{r}; nothing was charged"));
            }
            _ => {
                return ex.fail(
                    StatusCode::BAD_GATEWAY,
                    "transform_failed",
                    "the page could not be converted; nothing was charged",
                )
            }
        };
        let PageText {
            content,
            cut,
            format,
            title,
            description,
            language,
        } = page;
        let mut out = json!({
            "ok": true,
            "url": f.requested.as_str(),
            "finalUrl": r.final_url.as_str(),
            "status": r.status.as_u16(),
            "contentType": content_type,
            "format": format,
            "content": content,
            "contentChars": content.chars().count(),
            "truncated": r.truncated || cut,
            "bytesRead": r.bytes_read,
            "elapsedMs": ex.elapsed_ms(),
        });
        if let Value::Object(m) = &mut out {
            for (k, v) in [
                ("title", title),
                ("description", description),
                ("language", language),
            ] {
                if let Some(v) = v.filter(|s| !s.is_empty()) {
                    m.insert(k.into(), Value::String(v));
                }
            }
        }
        ex.respond_ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::chain::with_shipped_route;
    use serde_json::json;

    #[test]
    fn defaults_build_and_budgets_must_be_positive() {
        with_shipped_route("/api/fetch", |ctx| {
            assert!(build(ctx, Value::Null).is_ok());
            let e = build(ctx, json!({"budget_ms": 0})).err().unwrap();
            assert!(e.contains("must be positive"), "{e}");
            let e = build(ctx, json!({"max_concurrent": 0})).err().unwrap();
            assert!(e.contains("max_concurrent"), "{e}");
            let e = build(ctx, json!({"max_char": 10})).err().unwrap();
            assert!(e.contains("unknown field"), "{e}");
        });
    }
}
