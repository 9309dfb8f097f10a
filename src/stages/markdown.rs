//! `markdown`: /api/fetch's transform (needs `fetched`). An HTML page becomes clean markdown
//! of its main content (title, article, links made absolute; navigation and boilerplate gone);
//! text/plain, JSON and markdown pass through. Anything else is 415, not charged.
//!
//! The conversion itself is `doc::fetch_markdown::page_text` (shared with `search`); it runs on
//! the blocking pool so a large page never stalls other requests.
//! Parameters: `max_chars` (output cut there, `truncated: true`; default 100000).

use async_trait::async_trait;
use http::StatusCode;
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::Arc;

use crate::doc::fetch_markdown::{check_type, page_text, PageText};
use crate::pipeline::artefacts::Fetched;
use crate::pipeline::{params, BuildCtx, Exchange, Flow, Phase, Stage, StageFactory};

pub const FACTORY: StageFactory = StageFactory {
    name: "markdown",
    phase: Phase::Work,
    payment: false,
    needs: &["fetched"],
    gives: &["output"],
    doc: "HTML main content → markdown; text, JSON and markdown pass through; other types 415",
    errors: &[(
        415,
        "The upstream content type is not HTML, text, JSON or markdown",
    )],
    build,
};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    #[serde(default = "default_max_chars")]
    max_chars: usize,
}

fn default_max_chars() -> usize {
    100_000
}

struct Markdown {
    max_chars: usize,
}

fn build(_ctx: &BuildCtx<'_>, p: Value) -> Result<Arc<dyn Stage>, String> {
    let p: Params = params(p)?;
    Ok(Arc::new(Markdown {
        max_chars: p.max_chars.max(1),
    }))
}

pub use crate::doc::fetch_markdown::{decode_text, kind_of, Kind};

#[async_trait]
impl Stage for Markdown {
    async fn run(&self, ex: &mut Exchange) -> Flow {
        let Some(f) = ex.slots.take::<Fetched>() else {
            return ex.fail(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal_error",
                "nothing fetched",
            );
        };
        let r = &f.response;
        let content_type = r
            .headers
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
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
        let work =
            tokio::task::spawn_blocking(move || page_text(&ct, &body, &final_url, max)).await;
        let Ok(Ok(page)) = work else {
            return ex.fail(
                StatusCode::BAD_GATEWAY,
                "transform_failed",
                "the page could not be converted; nothing was charged",
            );
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
