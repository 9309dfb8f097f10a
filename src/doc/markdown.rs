//! Public entry points: a page's main content as markdown, pass-through of bodies that are
//! already text, and markdown → text.

use super::parse::{Budget, Refused};
use super::{dom::Dom, input_bounds, main_content, markdown_writer, page_meta};
use url::Url;

pub use super::text::markdown_to_text;

/// A page reduced to its main content.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MarkdownDoc {
    pub title: Option<String>,
    pub description: Option<String>,
    /// BCP 47-ish language tag as the page declares it (`en`, `pt-BR`).
    pub language: Option<String>,
    pub byline: Option<String>,
    /// Publication date as the page states it (usually ISO 8601).
    pub published: Option<String>,
    /// The main content as GitHub-flavoured markdown, without the title.
    pub markdown: String,
    /// Words in the markdown's text.
    pub word_count: usize,
}

/// Extracts the main content of an HTML page as markdown. Links and images are made absolute
/// against `base_url` (a `<base href>` in the page takes precedence, as in a browser). Never
/// panics; a page without a detectable article yields its body text. Parsed under the default
/// [`Budget`] (no deadline): a page whose tree would outgrow it is refused.
pub fn html_to_markdown(html: &str, base_url: Option<&Url>) -> Result<MarkdownDoc, Refused> {
    html_to_markdown_within(html, base_url, &Budget::default())
}

/// [`html_to_markdown`] under the caller's budget (nodes per input byte, deadline).
pub fn html_to_markdown_within(
    html: &str,
    base_url: Option<&Url>,
    budget: &Budget,
) -> Result<MarkdownDoc, Refused> {
    let bounded = input_bounds::bound_input(html);
    let dom = Dom::parse(&bounded, budget)?;
    let meta = page_meta::extract(&dom);
    let base = document_base(&dom, base_url);
    let sel = main_content::select(&dom, meta.title.as_deref());
    let markdown = markdown_writer::render(&dom, &sel.roots, &sel.skip, base.as_ref());
    let word_count = super::score::tokenize(&markdown_to_text(&markdown)).len();
    Ok(MarkdownDoc {
        title: meta.title,
        description: meta.description,
        language: meta.language,
        byline: meta.byline,
        published: meta.published,
        markdown,
        word_count,
    })
}

/// `<base href>` resolved against the URL the page came from.
fn document_base(dom: &Dom, base_url: Option<&Url>) -> Option<Url> {
    let href = dom
        .find_tag("base")
        .and_then(|b| dom.attr(b, "href"))
        .map(str::trim)
        .filter(|h| !h.is_empty());
    match (href, base_url) {
        (Some(h), Some(b)) => b.join(h).ok().or_else(|| Some(b.clone())),
        (Some(h), None) => Url::parse(h).ok(),
        (None, b) => b.cloned(),
    }
    .filter(|u| matches!(u.scheme(), "http" | "https"))
}

/// Bodies that need no extraction: `text/plain` (newlines normalised), JSON (pretty-printed in
/// a json fence; invalid JSON is fenced as is) and `text/markdown`. `None` for anything else.
pub fn passthrough(content_type: &str, body: &str) -> Option<String> {
    let mime = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let normalised = || body.replace("\r\n", "\n").replace('\r', "\n");
    match mime.as_str() {
        "text/plain" | "text/markdown" | "text/x-markdown" => Some(normalised()),
        m if m == "application/json" || m == "text/json" || m.ends_with("+json") => {
            let pretty = serde_json::from_str::<serde_json::Value>(body)
                .ok()
                .and_then(|v| serde_json::to_string_pretty(&v).ok())
                .unwrap_or_else(|| normalised().trim_end().to_string());
            let fence = "`".repeat(longest_backtick_run(&pretty).max(2) + 1);
            Some(format!("{fence}json\n{pretty}\n{fence}"))
        }
        _ => None,
    }
}

fn longest_backtick_run(s: &str) -> usize {
    s.split(|c| c != '`').map(str::len).max().unwrap_or(0)
}
