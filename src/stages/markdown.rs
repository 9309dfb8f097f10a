//! `markdown`: /api/fetch's transform (needs `fetched`). An HTML page becomes clean markdown
//! of its main content (title, article, links made absolute; navigation and boilerplate gone);
//! text/plain, JSON and markdown pass through. Anything else is 415, not charged.
//!
//! The parse runs on the blocking pool so a large page never stalls other requests.
//! Parameters: `max_chars` (output cut there, `truncated: true`; default 100000).

use async_trait::async_trait;
use http::StatusCode;
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::Arc;

use crate::doc::markdown::{html_to_markdown, passthrough};
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

/// What kind of document the bytes are, from the content type (sniffed when absent).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Html,
    Text,
    Markdown,
    Json,
}

pub fn kind_of(content_type: &str, body: &[u8]) -> Option<Kind> {
    let ct = content_type.to_ascii_lowercase();
    let essence = ct.split(';').next().unwrap_or("").trim();
    match essence {
        "text/html" | "application/xhtml+xml" => Some(Kind::Html),
        "text/plain" => Some(Kind::Text),
        "text/markdown" | "text/x-markdown" => Some(Kind::Markdown),
        "application/json" => Some(Kind::Json),
        e if e.ends_with("+json") => Some(Kind::Json),
        "" => {
            let head = String::from_utf8_lossy(&body[..body.len().min(512)]).to_ascii_lowercase();
            let t = head.trim_start();
            if t.starts_with("<!doctype html") || t.starts_with("<html") || t.starts_with('<') {
                Some(Kind::Html)
            } else if std::str::from_utf8(&body[..body.len().min(4096)]).is_ok() {
                Some(Kind::Text)
            } else {
                None
            }
        }
        _ => None,
    }
}

/// Decodes the body using the charset of the content type (UTF-8 otherwise, lossily).
pub fn decode_text(content_type: &str, body: &[u8]) -> String {
    let charset = content_type
        .to_ascii_lowercase()
        .split(';')
        .filter_map(|p| {
            p.trim()
                .strip_prefix("charset=")
                .map(|c| c.trim_matches('"').to_string())
        })
        .next();
    if let Some(label) = charset {
        if let Some(enc) = encoding_rs::Encoding::for_label(label.as_bytes()) {
            if enc != encoding_rs::UTF_8 {
                let (text, _, _) = enc.decode(body);
                return text.into_owned();
            }
        }
    }
    String::from_utf8_lossy(body).into_owned()
}

fn cut_chars(s: String, max: usize) -> (String, bool) {
    match s.char_indices().nth(max) {
        Some((i, _)) => (s[..i].to_string(), true),
        None => (s, false),
    }
}

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
        let Some(kind) = kind_of(&content_type, &r.body) else {
            return ex.fail(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_content_type",
                format!(
                    "the upstream sent `{content_type}`; /api/fetch reads text/html, text/plain, application/json and text/markdown (nothing was charged)"
                ),
            );
        };
        let body = r.body.clone();
        let final_url = r.final_url.clone();
        let ct = content_type.clone();
        let max = self.max_chars;
        let work = tokio::task::spawn_blocking(move || {
            let text = decode_text(&ct, &body);
            match kind {
                Kind::Html => {
                    let doc = html_to_markdown(&text, Some(&final_url));
                    (
                        doc.markdown,
                        doc.title,
                        doc.description,
                        doc.language,
                        "markdown",
                    )
                }
                Kind::Json => (
                    passthrough("application/json", &text).unwrap_or(text),
                    None,
                    None,
                    None,
                    "markdown",
                ),
                Kind::Markdown => (
                    passthrough("text/markdown", &text).unwrap_or(text),
                    None,
                    None,
                    None,
                    "markdown",
                ),
                Kind::Text => (
                    passthrough("text/plain", &text).unwrap_or(text),
                    None,
                    None,
                    None,
                    "text",
                ),
            }
        })
        .await;
        let Ok((content, title, description, language, format)) = work else {
            return ex.fail(
                StatusCode::BAD_GATEWAY,
                "transform_failed",
                "the page could not be converted; nothing was charged",
            );
        };
        let (content, cut) = cut_chars(content, max);
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

    #[test]
    fn kinds() {
        assert_eq!(kind_of("text/html; charset=utf-8", b""), Some(Kind::Html));
        assert_eq!(kind_of("application/ld+json", b""), Some(Kind::Json));
        assert_eq!(kind_of("text/markdown", b""), Some(Kind::Markdown));
        assert_eq!(kind_of("image/png", b"\x89PNG"), None);
        assert_eq!(kind_of("application/pdf", b"%PDF-"), None);
        assert_eq!(kind_of("", b"<!DOCTYPE html><p>x"), Some(Kind::Html));
        assert_eq!(kind_of("", b"plain words"), Some(Kind::Text));
    }

    #[test]
    fn charset_decoding() {
        assert_eq!(
            decode_text("text/plain; charset=iso-8859-1", b"caf\xe9"),
            "café"
        );
        assert_eq!(decode_text("text/plain", "café".as_bytes()), "café");
    }

    #[test]
    fn cut_on_char_boundary() {
        let (s, cut) = cut_chars("ééé".into(), 2);
        assert_eq!(s, "éé");
        assert!(cut);
        assert!(!cut_chars("ab".into(), 2).1);
    }
}
