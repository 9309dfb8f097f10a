//! A fetched body → what /api/fetch returns as content: HTML pages become markdown of their
//! main content; text/plain, JSON and markdown pass through; anything else is refused.
//!
//! Shared by the `markdown` stage (/api/fetch) and the `search` stage (each result page), so
//! both turn a page into text the same way. Pure and blocking: callers run it on the blocking
//! pool.

use url::Url;

use super::markdown::{html_to_markdown_within, passthrough};
use super::parse::{Budget, Refused};

/// What kind of document the bytes are, from the content type (sniffed when absent).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Html,
    Text,
    Markdown,
    Json,
}

impl Kind {
    /// The content type its text is passed through as (`doc::passthrough`).
    pub fn mime(self) -> &'static str {
        match self {
            Kind::Html => "text/html",
            Kind::Text => "text/plain",
            Kind::Markdown => "text/markdown",
            Kind::Json => "application/json",
        }
    }
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

/// Decodes the body (see `doc::charset`: BOM, the content type's charset, an HTML meta, UTF-8,
/// then detection — never a lossy UTF-8 read of a legacy-encoded page).
pub fn decode_text(content_type: &str, body: &[u8]) -> String {
    let html = crate::doc::page::is_html(content_type, body);
    crate::doc::charset::decode(content_type, body, html)
}

/// Cuts `s` after `max` characters (on a char boundary); true when something was cut.
pub fn cut_chars(s: String, max: usize) -> (String, bool) {
    match s.char_indices().nth(max) {
        Some((i, _)) => (s[..i].to_string(), true),
        None => (s, false),
    }
}

/// A page as text, ready for a JSON answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageText {
    /// The content, at most `max_chars` characters.
    pub content: String,
    /// The content was cut at `max_chars`.
    pub cut: bool,
    /// `markdown` (HTML, JSON, markdown) or `text` (text/plain).
    pub format: &'static str,
    pub title: Option<String>,
    pub description: Option<String>,
    pub language: Option<String>,
}

/// The content type is not one this transform reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsupported {
    pub content_type: String,
}

impl std::fmt::Display for Unsupported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the upstream sent `{}`; only text/html, text/plain, application/json and text/markdown are read",
            self.content_type
        )
    }
}

/// Why a body was not turned into text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PageError {
    /// Not a type this transform reads (415).
    Unsupported(Unsupported),
    /// An HTML page over its parse budget (nodes or time).
    Refused(Refused),
}

impl PageError {
    /// Stable error code.
    pub fn code(&self) -> &'static str {
        match self {
            PageError::Unsupported(_) => "unsupported_content_type",
            PageError::Refused(r) => r.code(),
        }
    }
}

impl std::fmt::Display for PageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PageError::Unsupported(u) => u.fmt(f),
            PageError::Refused(r) => r.fmt(f),
        }
    }
}

/// The type check alone (cheap, no parsing): lets a caller refuse before going to the pool.
pub fn check_type(content_type: &str, body: &[u8]) -> Result<Kind, Unsupported> {
    kind_of(content_type, body).ok_or_else(|| Unsupported {
        content_type: content_type.to_string(),
    })
}

/// Converts one fetched body. `final_url` makes links absolute. Blocking (HTML parsing, under
/// `budget`).
pub fn page_text(
    content_type: &str,
    body: &[u8],
    final_url: &Url,
    max_chars: usize,
    budget: &Budget,
) -> Result<PageText, PageError> {
    let kind = check_type(content_type, body).map_err(PageError::Unsupported)?;
    let text = decode_text(content_type, body);
    let (content, title, description, language, format) = match kind {
        Kind::Html => {
            let doc = html_to_markdown_within(&text, Some(final_url), budget)
                .map_err(PageError::Refused)?;
            (
                doc.markdown,
                doc.title,
                doc.description,
                doc.language,
                "markdown",
            )
        }
        Kind::Json => (
            passthrough(kind.mime(), &text).unwrap_or(text),
            None,
            None,
            None,
            "markdown",
        ),
        Kind::Markdown => (
            passthrough(kind.mime(), &text).unwrap_or(text),
            None,
            None,
            None,
            "markdown",
        ),
        Kind::Text => (
            passthrough(kind.mime(), &text).unwrap_or(text),
            None,
            None,
            None,
            "text",
        ),
    };
    let (content, cut) = cut_chars(content, max_chars.max(1));
    Ok(PageText {
        content,
        cut,
        format,
        title,
        description,
        language,
    })
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

    #[test]
    fn pages_by_type() {
        let base = Url::parse("https://example.com/a/").unwrap();
        let html = b"<html><head><title>T</title></head><body><article><h1>Head</h1><p>Some words of an article that is long enough to be kept as the main content of the page.</p><p><a href=\"x\">link</a></p></article></body></html>";
        let p = page_text("text/html", html, &base, 12_000, &Budget::default()).unwrap();
        assert_eq!(p.format, "markdown");
        assert_eq!(p.title.as_deref(), Some("T"));
        assert!(
            p.content.contains("https://example.com/a/x"),
            "{}",
            p.content
        );
        assert!(!p.cut);
        let t = page_text("text/plain", b"abcdef", &base, 3, &Budget::default()).unwrap();
        assert_eq!((t.content.as_str(), t.cut, t.format), ("abc", true, "text"));
        let j = page_text(
            "application/json",
            br#"{"a":1}"#,
            &base,
            100,
            &Budget::default(),
        )
        .unwrap();
        assert!(j.content.starts_with("```json"));
        let e = page_text("image/png", b"\x89PNG", &base, 100, &Budget::default()).unwrap_err();
        assert!(e.to_string().contains("image/png"));
    }
}
