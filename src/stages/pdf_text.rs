//! `pdf_text`: /api/pdf's transform (needs `fetched`). The downloaded bytes must start with
//! `%PDF-` (else 415, not charged); the text layer of the first `pages` pages (at most
//! `max_chars` characters over all pages) and the metadata come from `crate::pdf`.
//!
//! The parse runs on the blocking pool, at most `max_concurrent` parses at once on this route
//! (`pipeline::parse_slots`), so a slow PDF never stalls the async workers; its budget
//! (`parse_budget_ms`) is enforced inside the parse. When it runs out after some text, the
//! partial text is returned with `truncated: true` (charged); before any text, 504.
//! Encrypted, corrupt and image-only files are 422 with `pdf_encrypted`, `pdf_corrupt`,
//! `pdf_image_only` (or `pdf_no_text` for pages without text or images); none is charged.
//!
//! Parameters: `pages_param` (default `pages`), `max_pages` (50), `max_chars` (100000, applied
//! while glyphs are collected), `parse_budget_ms` (10000, checked inside interpretation, layout
//! and ordering), `max_concurrent` (2; formerly `workers`), `queue` (8), `queue_wait_ms`
//! (10000): parses at once, callers allowed to wait for a turn and for how long, past them
//! 503 `parser_busy` with `Retry-After`, not charged; `max_content_bytes` (32 MiB: decoded content
//! interpreted over the whole document, every page stream and every form draw counted, each
//! form decoded once). A document whose content budget runs out after some text is returned
//! `truncated` (`truncatedReason: content_budget`, charged); before any text it is 422
//! `pdf_too_complex`, not charged.
//!
//! Each page is `{page, text, chars}`, plus `fields: [{name, type, value}]` when the page has
//! filled-in form fields (their values are also in `text`, where the form shows them).

use async_trait::async_trait;
use http::StatusCode;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::sync::Arc;
use std::time::Duration;

use crate::net::Fetched;
use crate::pdf::{self, PdfError, Truncation};
use crate::pipeline::parse_slots::{busy_reply, ParseSlots, SlotLimits};
use crate::pipeline::{params, Artefact, BuildCtx, Exchange, Flow, Phase, Stage, StageFactory};

pub const FACTORY: StageFactory = StageFactory {
    name: "pdf_text",
    phase: Phase::Work,
    payment: false,
    needs: &[Artefact::of::<Fetched>("fetched")],
    gives: &[],
    doc: "PDF → text per page in reading order plus metadata (Info and XMP); parse budget enforced inside the work",
    errors: &[
        (415, "The file is not a PDF (it does not start with %PDF-): not_a_pdf"),
        (
            422,
            "Encrypted (pdf_encrypted), damaged (pdf_corrupt) or image-only PDF without a text layer (pdf_image_only, pdf_no_text), or content streams over the document's content budget before any text (pdf_too_complex)",
        ),
        (
            503,
            "Every parse slot of the route is taken and the queue is full or the wait ran out (parser_busy, Retry-After)",
        ),
        (504, "The parse budget ran out before any text was extracted (parse_timeout)"),
    ],
    build,
};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    #[serde(default = "default_pages_param")]
    pages_param: String,
    #[serde(default = "default_max_pages")]
    max_pages: usize,
    #[serde(default = "default_max_chars")]
    max_chars: usize,
    #[serde(default = "default_budget")]
    parse_budget_ms: u64,
    #[serde(default = "default_concurrent", alias = "workers")]
    max_concurrent: usize,
    #[serde(default = "default_queue")]
    queue: usize,
    #[serde(default = "default_queue_wait")]
    queue_wait_ms: u64,
    #[serde(default = "default_max_content")]
    max_content_bytes: usize,
}

/// Two parses at once: each may hold its 10 MB file and its 32 MiB content budget several
/// times over (about 100 MB for the worst generated files, docs/pdf.md), whatever the cores.
fn default_concurrent() -> usize {
    2
}
fn default_queue() -> usize {
    8
}
fn default_queue_wait() -> u64 {
    10_000
}

fn default_max_content() -> usize {
    pdf::DEFAULT_MAX_CONTENT_BYTES
}

fn default_pages_param() -> String {
    "pages".into()
}
fn default_max_pages() -> usize {
    50
}
fn default_max_chars() -> usize {
    100_000
}
fn default_budget() -> u64 {
    10_000
}

struct PdfText {
    p: Params,
    parses: ParseSlots,
}

fn build(_ctx: &BuildCtx<'_>, p: Value) -> Result<Arc<dyn Stage>, String> {
    let p: Params = params(p)?;
    if p.max_pages == 0 || p.max_chars == 0 || p.parse_budget_ms == 0 || p.max_content_bytes == 0 {
        return Err(
            "max_pages, max_chars, parse_budget_ms and max_content_bytes must be positive".into(),
        );
    }
    let slots = SlotLimits::new(
        p.max_concurrent,
        p.queue,
        p.queue_wait_ms,
        ["max_concurrent", "queue", "queue_wait_ms"],
    )?;
    Ok(Arc::new(PdfText {
        p,
        parses: ParseSlots::new(slots),
    }))
}

fn opt(v: &Option<String>) -> Value {
    v.as_ref().map_or(Value::Null, |s| Value::String(s.clone()))
}

#[async_trait]
impl Stage for PdfText {
    async fn run(&self, ex: &mut Exchange) -> Flow {
        let Some(f) = ex.slots.take::<Fetched>() else {
            return ex.fail_internal("nothing fetched");
        };
        let body = f.response.body.clone();
        if !pdf::looks_like_pdf(&body) {
            let ct = f
                .response
                .content_type()
                .unwrap_or("no content type")
                .to_string();
            return ex.fail(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "not_a_pdf",
                format!(
                    "the file is not a PDF (it does not start with %PDF-; the upstream sent `{ct}`); nothing was charged"
                ),
            );
        }
        let pages = ex
            .input_i64(&self.p.pages_param)
            .map(|n| n.max(1) as usize)
            .unwrap_or(self.p.max_pages)
            .min(self.p.max_pages);
        let budget = Duration::from_millis(self.p.parse_budget_ms);
        let opts = pdf::Options {
            max_pages: pages,
            max_chars: self.p.max_chars,
            budget,
            max_content_bytes: self.p.max_content_bytes,
            ..Default::default()
        };
        let permit = match self.parses.acquire().await {
            Ok(p) => p,
            Err(busy) => {
                ex.reply = Some(busy_reply(busy, "PDFs", self.parses.limits()));
                return Flow::Reply;
            }
        };
        let work = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            pdf::extract_guarded(&body, &opts)
        });
        let result = match work.await {
            Ok(r) => r,
            Err(_) => Err(PdfError::Corrupt("the parse failed".into())),
        };
        let doc = match result {
            Ok(d) => d,
            Err(e) => {
                let status = match e {
                    PdfError::NotPdf => StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    PdfError::Timeout => StatusCode::GATEWAY_TIMEOUT,
                    _ => StatusCode::UNPROCESSABLE_ENTITY,
                };
                return ex.fail(status, e.code(), format!("{e}; nothing was charged"));
            }
        };
        let m = &doc.meta;
        let mut meta = Map::new();
        for (k, v) in [
            ("title", &m.title),
            ("author", &m.author),
            ("subject", &m.subject),
            ("keywords", &m.keywords),
            ("creator", &m.creator),
            ("producer", &m.producer),
            ("creationDate", &m.creation_date),
            ("modDate", &m.mod_date),
        ] {
            meta.insert(k.into(), opt(v));
        }
        let pages_json: Vec<Value> = doc.pages.iter().map(page_json).collect();
        let mut out = Map::new();
        out.insert("url".into(), json!(f.requested.as_str()));
        out.insert("finalUrl".into(), json!(f.response.final_url.as_str()));
        out.insert("title".into(), opt(&m.title));
        out.insert("author".into(), opt(&m.author));
        out.insert("metadata".into(), Value::Object(meta));
        out.insert("pageCount".into(), json!(doc.page_count));
        out.insert("pagesReturned".into(), json!(doc.pages.len()));
        out.insert("pages".into(), Value::Array(pages_json));
        out.insert("chars".into(), json!(doc.chars));
        out.insert("truncated".into(), json!(doc.truncated.is_some()));
        if let Some(t) = doc.truncated {
            out.insert(
                "truncatedReason".into(),
                json!(match t {
                    Truncation::Chars => "max_chars",
                    Truncation::Time => "parse_budget",
                    Truncation::Content => "content_budget",
                }),
            );
        }
        out.insert("bytesRead".into(), json!(f.response.bytes_read));
        out.insert("elapsedMs".into(), json!(ex.elapsed_ms()));
        ex.respond_ok(Value::Object(out))
    }
}

/// One page of the answer: `page`, `text`, `chars`, and `fields` (`[{name, type, value}]`) only
/// when the page has filled-in form fields, so answers for other PDFs keep their shape.
fn page_json(p: &pdf::Page) -> Value {
    let mut v = json!({ "page": p.page, "text": p.text, "chars": p.text.chars().count() });
    if !p.fields.is_empty() {
        v["fields"] = json!(p.fields);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::chain::with_shipped_route;
    use serde_json::json;

    #[test]
    fn defaults_build_and_limits_must_be_positive() {
        with_shipped_route("/api/pdf", |ctx| {
            assert!(build(ctx, Value::Null).is_ok());
            let e = build(ctx, json!({"max_pages": 0})).err().unwrap();
            assert!(e.contains("must be positive"), "{e}");
            let e = build(ctx, json!({"queue": 100000})).err().unwrap();
            assert!(e.contains("queue"), "{e}");
        });
    }

    #[test]
    fn form_fields_are_listed_only_on_pages_that_have_them() {
        let mut p = pdf::Page {
            page: 1,
            text: "Name: Jane Doe".into(),
            fields: Vec::new(),
        };
        assert_eq!(
            page_json(&p),
            json!({"page": 1, "text": "Name: Jane Doe", "chars": 14})
        );
        p.fields.push(pdf::forms::Field {
            name: "name".into(),
            kind: "text",
            value: "Jane Doe".into(),
        });
        assert_eq!(
            page_json(&p)["fields"],
            json!([{"name": "name", "type": "text", "value": "Jane Doe"}])
        );
    }

    #[test]
    fn absent_metadata_is_null() {
        assert_eq!(opt(&None), Value::Null);
        assert_eq!(opt(&Some("A title".into())), json!("A title"));
    }
}
