//! Page facts for /api/extract: title, description, canonical, language, links and images made
//! absolute, JSON-LD blocks, headings, a text sample, and the element nesting depth.
//!
//! Fallbacks where users expect them (documented in /openapi.json through routes.yaml):
//! - title: `<title>`, else `og:title`, else `twitter:title`;
//! - description: `<meta name=description>`, else `og:description`, else `twitter:description`;
//! - canonical: `<link rel=canonical>`, else `og:url`;
//! - language: `<html lang>`, else `<meta http-equiv=content-language>`, else `og:locale`;
//! - images: `og:image` and `twitter:image` come first, then `<img>` in document order
//!   (`src`, else the lazy-loading `data-src`).
//!
//! Everything here is linear in the size of the parsed tree and iterative (no recursion), so a
//! hostile page costs its size and nothing more.

use ego_tree::iter::Edge;
use scraper::{ElementRef, Html, Node};
use serde_json::{json, Map, Value};
use url::Url;

use super::input_bounds::bound_input;
use super::parse::{parse_document, Budget, Refused};

/// At most this many characters of body text in `textSample` (docs/decisions.md#limits).
pub const TEXT_SAMPLE_CHARS: usize = 2000;
/// Caps on the lists, so a page of 10,000 links does not become a 2 MB answer.
pub const MAX_LINKS: usize = 1000;
pub const MAX_IMAGES: usize = 500;
pub const MAX_HEADINGS: usize = 500;
pub const MAX_JSON_LD: usize = 50;
/// Longest metadata string kept (title, description…); longer ones are cut.
const MAX_META_CHARS: usize = 2000;

/// Attributes kept per element; the parser checks each new attribute against all earlier ones,
/// so 40,000 attributes on one tag cost a second (measured) before any budget can apply.
pub const MAX_ATTRIBUTES: usize = 256;

/// Elements whose text is never page text.
const NON_TEXT: &[&str] = &["script", "style", "noscript", "template", "head", "title"];

/// A parsed page: the tree plus the base URL used to make links absolute.
pub struct Page {
    pub html: Html,
    pub base: Option<Url>,
    /// Deepest element nesting (`<html>` is 1).
    pub depth: usize,
}

impl Page {
    /// Parses untrusted HTML. Nesting beyond the input bounds' cap is flattened first (so the
    /// parse stays linear); `depth` is measured on the result, which is enough to refuse pages
    /// deeper than any cap below the input bounds'. The parse runs under `budget` (nodes made per
    /// input byte, deadline): a page whose tree would outgrow it is refused.
    pub fn parse(text: &str, url: Option<&Url>, budget: &Budget) -> Result<Page, Refused> {
        let capped = cap_attributes(text, MAX_ATTRIBUTES);
        let bounded = bound_input(&capped);
        let html = parse_document(&bounded, budget)?;
        let depth = max_depth(&html);
        // <base href> changes how relative links resolve, as in a browser.
        let base = url.map(|u| {
            let sel = scraper::Selector::parse("base[href]").expect("static selector");
            html.select(&sel)
                .next()
                .and_then(|b| b.value().attr("href"))
                .and_then(|h| u.join(h.trim()).ok())
                .filter(|b| matches!(b.scheme(), "http" | "https"))
                .unwrap_or_else(|| u.clone())
        });
        Ok(Page { html, base, depth })
    }

    /// `href` resolved against the base (absolute http(s) only); without a base, only already
    /// absolute http(s) URLs are kept.
    pub fn absolute(&self, href: &str) -> Option<String> {
        let href = href.trim();
        if href.is_empty() {
            return None;
        }
        let u = match &self.base {
            Some(b) => b.join(href).ok()?,
            None => Url::parse(href).ok()?,
        };
        matches!(u.scheme(), "http" | "https").then(|| u.to_string())
    }

    /// The page facts as /api/extract's JSON fields (docs/routes/extract.md) (empty ones omitted),
    /// in the answer's order: metadata, lists, text sample.
    pub fn facts(&self) -> Map<String, Value> {
        let found = self.gather();
        let mut out = Map::new();
        for (k, v) in self.metadata(&found) {
            if let Some(v) = v.filter(|v| !v.is_empty()) {
                out.insert(k.into(), Value::String(cut(v, MAX_META_CHARS)));
            }
        }
        let images = self.images(&found.metas, found.images);
        for (k, list) in [
            ("links", found.links),
            ("images", images),
            ("jsonLd", found.json_ld),
            ("headings", found.headings),
        ] {
            if !list.is_empty() {
                out.insert(k.into(), Value::Array(list));
            }
        }
        let sample = self.text_sample(TEXT_SAMPLE_CHARS);
        if !sample.is_empty() {
            out.insert("textSample".into(), Value::String(sample));
        }
        out
    }

    /// One walk over the tree, noting what each element says.
    fn gather(&self) -> Found {
        let mut found = Found::default();
        for node in self.html.tree.root().descendants() {
            if let Some(el) = ElementRef::wrap(node) {
                found.note(self, el);
            }
        }
        found
    }

    /// Title, description, canonical and language, each from the first source that has it
    /// (the fallbacks in the module comment).
    fn metadata(&self, found: &Found) -> [(&'static str, Option<String>); 4] {
        [
            (
                "title",
                found
                    .title_tag
                    .clone()
                    .filter(|t| !t.is_empty())
                    .or_else(|| found.meta(&["og:title", "twitter:title"])),
            ),
            (
                "description",
                found.meta(&["description", "og:description", "twitter:description"]),
            ),
            (
                "canonical",
                found
                    .canonical
                    .clone()
                    .or_else(|| found.meta(&["og:url"]).and_then(|u| self.absolute(&u))),
            ),
            (
                "language",
                found
                    .html_lang
                    .clone()
                    .filter(|l| !l.is_empty())
                    .or_else(|| found.meta(&["content-language"]))
                    .or_else(|| found.meta(&["og:locale"]).map(|l| l.replace('_', "-"))),
            ),
        ]
    }

    /// The images answered: og:image / twitter:image first (the picture the page chose to
    /// represent itself), then the `<img>` in document order; each URL once, at most
    /// `MAX_IMAGES`.
    fn images(
        &self,
        metas: &[(String, String)],
        imgs: Vec<(String, Option<String>)>,
    ) -> Vec<Value> {
        let mut all_images: Vec<(String, Option<String>)> = Vec::new();
        for k in [
            "og:image",
            "og:image:url",
            "og:image:secure_url",
            "twitter:image",
        ] {
            for (mk, c) in metas {
                if mk == k {
                    if let Some(u) = self.absolute(c) {
                        all_images.push((u, None));
                    }
                }
            }
        }
        all_images.extend(imgs);
        let mut seen = std::collections::HashSet::new();
        all_images
            .into_iter()
            .filter(|(u, _)| seen.insert(u.clone()))
            .take(MAX_IMAGES)
            .map(|(src, alt)| match alt {
                Some(a) => json!({ "src": src, "alt": cut(a, 300) }),
                None => json!({ "src": src }),
            })
            .collect()
    }

    /// The first `max` characters of the page's visible text, whitespace collapsed.
    pub fn text_sample(&self, max: usize) -> String {
        let mut out = String::new();
        let mut chars = 0usize;
        let mut skip_depth = 0usize;
        let mut pending_space = false;
        for edge in self.html.tree.root().traverse() {
            match edge {
                Edge::Open(n) => match n.value() {
                    Node::Element(e) => {
                        if skip_depth > 0 || NON_TEXT.contains(&e.name()) {
                            skip_depth += 1;
                        } else if is_block(e.name()) {
                            pending_space = true;
                        }
                    }
                    Node::Text(t) if skip_depth == 0 => {
                        for c in t.chars() {
                            if c.is_whitespace() {
                                pending_space = true;
                                continue;
                            }
                            if pending_space && chars > 0 {
                                if chars >= max {
                                    return out;
                                }
                                out.push(' ');
                                chars += 1;
                            }
                            pending_space = false;
                            if chars >= max {
                                return out;
                            }
                            out.push(c);
                            chars += 1;
                        }
                    }
                    _ => {}
                },
                Edge::Close(n) => {
                    if let Node::Element(e) = n.value() {
                        if skip_depth > 0 {
                            skip_depth -= 1;
                        } else if is_block(e.name()) {
                            pending_space = true;
                        }
                    }
                }
            }
        }
        out
    }
}

fn is_block(name: &str) -> bool {
    matches!(
        name,
        "p" | "div"
            | "br"
            | "li"
            | "ul"
            | "ol"
            | "h1"
            | "h2"
            | "h3"
            | "h4"
            | "h5"
            | "h6"
            | "tr"
            | "td"
            | "th"
            | "table"
            | "section"
            | "article"
            | "header"
            | "footer"
            | "nav"
            | "main"
            | "aside"
            | "blockquote"
            | "pre"
            | "dt"
            | "dd"
            | "figcaption"
            | "hr"
            | "option"
    )
}

/// What the elements of a page say, in document order, before the fallbacks are chosen.
#[derive(Default)]
struct Found {
    /// `(property | name | http-equiv, content)` of every `<meta>`, keys lowercased.
    metas: Vec<(String, String)>,
    title_tag: Option<String>,
    canonical: Option<String>,
    html_lang: Option<String>,
    links: Vec<Value>,
    seen_links: std::collections::HashSet<String>,
    /// `<img>` sources made absolute, with their alt text.
    images: Vec<(String, Option<String>)>,
    json_ld: Vec<Value>,
    headings: Vec<Value>,
}

impl Found {
    /// Notes what `el` says; the first title, canonical and `<html lang>` win, the lists stop
    /// at their caps.
    fn note(&mut self, page: &Page, el: ElementRef<'_>) {
        let e = el.value();
        match e.name() {
            "html" if self.html_lang.is_none() => {
                self.html_lang = e.attr("lang").map(|s| s.trim().to_string())
            }
            "title" if self.title_tag.is_none() => self.title_tag = Some(text_of(el)),
            "meta" => {
                let key = e
                    .attr("property")
                    .or_else(|| e.attr("name"))
                    .or_else(|| e.attr("http-equiv"));
                if let (Some(k), Some(c)) = (key, e.attr("content")) {
                    self.metas
                        .push((k.trim().to_ascii_lowercase(), c.trim().to_string()));
                }
            }
            "link" if self.canonical.is_none() => {
                let rel = e.attr("rel").unwrap_or("").to_ascii_lowercase();
                if rel.split_ascii_whitespace().any(|r| r == "canonical") {
                    self.canonical = e.attr("href").and_then(|h| page.absolute(h));
                }
            }
            "a" | "area" if self.links.len() < MAX_LINKS => self.note_link(page, el),
            "img" => {
                let src = e.attr("src").or_else(|| e.attr("data-src"));
                if let Some(src) = src.and_then(|s| page.absolute(s)) {
                    let alt = e
                        .attr("alt")
                        .map(|a| a.trim().to_string())
                        .filter(|a| !a.is_empty());
                    self.images.push((src, alt));
                }
            }
            "script"
                if self.json_ld.len() < MAX_JSON_LD
                    && e.attr("type")
                        .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/ld+json")) =>
            {
                let raw: String = el.text().collect();
                // Bad blocks are skipped; a block is often an array of objects.
                if let Ok(v) = serde_json::from_str::<Value>(raw.trim()) {
                    self.json_ld.push(v);
                }
            }
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" if self.headings.len() < MAX_HEADINGS => {
                let text = text_of(el);
                if !text.is_empty() {
                    let level = e.name().as_bytes()[1] - b'0';
                    self.headings
                        .push(json!({ "level": level, "text": cut(text, 500) }));
                }
            }
            _ => {}
        }
    }

    /// A link (`<a>` with its text, `<area>` with its alt), each absolute URL once.
    fn note_link(&mut self, page: &Page, el: ElementRef<'_>) {
        let e = el.value();
        let Some(href) = e.attr("href").and_then(|h| page.absolute(h)) else {
            return;
        };
        if !self.seen_links.insert(href.clone()) {
            return;
        }
        let mut l = Map::new();
        l.insert("href".into(), json!(href));
        let text = if e.name() == "a" {
            text_of(el)
        } else {
            e.attr("alt").unwrap_or("").trim().to_string()
        };
        if !text.is_empty() {
            l.insert("text".into(), json!(cut(text, 300)));
        }
        self.links.push(Value::Object(l));
    }

    /// The first non-empty content among the `<meta>` named by `keys`, in the keys' order.
    fn meta(&self, keys: &[&str]) -> Option<String> {
        keys.iter().find_map(|k| {
            self.metas
                .iter()
                .find(|(mk, c)| mk == k && !c.is_empty())
                .map(|(_, c)| collapse(c))
        })
    }
}

/// Drops the attributes after the first `max` of every start tag, in one linear pass that
/// tokenizes tags the way the HTML tokenizer does (quoted values, comments, raw-text elements
/// such as `<script>` skipped). Borrowed when nothing needed changing.
pub fn cap_attributes(html: &str, max: usize) -> std::borrow::Cow<'_, str> {
    const RAW: &[&str] = &[
        "script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes",
    ];
    let b = html.as_bytes();
    let n = b.len();
    let ws = |c: u8| matches!(c, b' ' | b'\t' | b'\n' | b'\r' | b'\x0c');
    let mut drops: Vec<(usize, usize)> = Vec::new();
    let mut i = 0;
    while let Some(off) = b[i..].iter().position(|&c| c == b'<') {
        let lt = i + off;
        if b[lt..].starts_with(b"<!--") {
            i = find_ci(b, lt + 4, b"-->").map_or(n, |p| p + 3);
            continue;
        }
        if lt + 1 >= n || !b[lt + 1].is_ascii_alphabetic() {
            i = lt + 1;
            continue;
        }
        let mut j = lt + 1;
        while j < n && !ws(b[j]) && b[j] != b'>' && b[j] != b'/' {
            j += 1;
        }
        let name = html[lt + 1..j].to_ascii_lowercase();
        let mut count = 0usize;
        let mut cut_at = None;
        loop {
            while j < n && (ws(b[j]) || b[j] == b'/') {
                j += 1;
            }
            if j >= n || b[j] == b'>' {
                break;
            }
            if count == max && cut_at.is_none() {
                cut_at = Some(j);
            }
            count += 1;
            j += 1; // an attribute name has at least one character (even `=`)
            while j < n && !ws(b[j]) && b[j] != b'/' && b[j] != b'>' && b[j] != b'=' {
                j += 1;
            }
            while j < n && ws(b[j]) {
                j += 1;
            }
            if j < n && b[j] == b'=' {
                j += 1;
                while j < n && ws(b[j]) {
                    j += 1;
                }
                if j < n && (b[j] == b'"' || b[j] == b'\'') {
                    let q = b[j];
                    j = b[j + 1..]
                        .iter()
                        .position(|&c| c == q)
                        .map_or(n, |p| j + 1 + p + 1);
                } else {
                    while j < n && !ws(b[j]) && b[j] != b'>' {
                        j += 1;
                    }
                }
            }
        }
        if let Some(c) = cut_at {
            drops.push((c, j.min(n)));
        }
        i = (j + 1).min(n);
        if RAW.contains(&name.as_str()) {
            let close = format!("</{name}");
            i = find_ci(b, i, close.as_bytes()).unwrap_or(n);
        }
        if i >= n {
            break;
        }
    }
    if drops.is_empty() {
        return std::borrow::Cow::Borrowed(html);
    }
    let mut out = String::with_capacity(html.len());
    let mut at = 0;
    for (start, end) in drops {
        out.push_str(&html[at..start]);
        at = end;
    }
    out.push_str(&html[at..]);
    std::borrow::Cow::Owned(out)
}

fn find_ci(b: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    if from >= b.len() || needle.len() > b.len() - from {
        return None;
    }
    b[from..]
        .windows(needle.len())
        .position(|w| w.eq_ignore_ascii_case(needle))
        .map(|p| p + from)
}

/// Deepest element nesting of the tree (`<html>` is 1), without recursion.
pub fn max_depth(html: &Html) -> usize {
    let mut depth = 0usize;
    let mut max = 0usize;
    for edge in html.tree.root().traverse() {
        match edge {
            Edge::Open(n) if n.value().is_element() => {
                depth += 1;
                max = max.max(depth);
            }
            Edge::Close(n) if n.value().is_element() => depth -= 1,
            _ => {}
        }
    }
    max
}

/// The element's text, whitespace collapsed (script and style contents included, as in
/// `textContent`).
pub fn text_of(el: ElementRef<'_>) -> String {
    let mut s = String::new();
    for t in el.text() {
        s.push_str(t);
        s.push(' ');
        if s.len() > 1_000_000 {
            break;
        }
    }
    collapse(&s)
}

/// Collapses whitespace runs to one space and trims.
pub fn collapse(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for w in s.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(w);
    }
    out
}

/// At most `max` characters.
pub fn cut(s: String, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => s[..i].to_string(),
        None => s,
    }
}

/// Decodes a fetched HTML body (see `doc::charset`).
pub fn decode_html(content_type: &str, body: &[u8]) -> String {
    crate::doc::charset::decode(content_type, body, true)
}

/// Whether a content type (or, without one, the body's start) is HTML.
pub fn is_html(content_type: &str, body: &[u8]) -> bool {
    let ct = content_type.to_ascii_lowercase();
    let essence = ct.split(';').next().unwrap_or("").trim();
    match essence {
        "text/html" | "application/xhtml+xml" => true,
        "" => {
            let head = String::from_utf8_lossy(&body[..body.len().min(512)]).to_ascii_lowercase();
            head.trim_start().starts_with('<')
        }
        _ => false,
    }
}

/// Why supplied HTML cannot be read, if it cannot: empty, NUL characters, or no markup at all.
pub fn html_problem(html: &str) -> Option<&'static str> {
    if html.trim().is_empty() {
        return Some("`html` is empty");
    }
    if html.contains('\0') {
        return Some("`html` contains NUL characters; send the page's text, not binary data");
    }
    let b = html.as_bytes();
    let has_tag = b
        .windows(2)
        .any(|w| w[0] == b'<' && (w[1].is_ascii_alphabetic() || w[1] == b'!'));
    if !has_tag {
        return Some("`html` has no HTML markup (no tag at all)");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = r#"<!doctype html><html lang="en-GB"><head>
<title>  The   Page </title><base href="/docs/">
<meta name="description" content="Plain description">
<meta property="og:title" content="OG title"><meta property="og:image" content="/og.png">
<link rel="alternate stylesheet" href="/x.css"><link rel="Canonical" href="https://ex.com/canon">
<script type="application/ld+json">{"@type":"Article","headline":"H"}</script>
<script type="application/ld+json">{ not json</script>
<script>var x = "<p>not text</p>";</script><style>p{}</style>
</head><body><h1>Main <em>heading</em></h1><p>First para with <a href="a.html">a link</a>.</p>
<a href="javascript:alert(1)">js</a><a href="mailto:x@y">mail</a><a href="a.html">dup</a>
<img src="i.png" alt=" pic "><img data-src="lazy.png"><h3></h3><h2>Second</h2>
<div>Block<div>inner</div></div></body></html>"#;

    #[test]
    fn facts_with_base_and_fallbacks() {
        let base = Url::parse("https://ex.com/root/page").unwrap();
        let p = Page::parse(PAGE, Some(&base), &Budget::default()).unwrap();
        let f = p.facts();
        assert_eq!(f["title"], "The Page");
        assert_eq!(f["description"], "Plain description");
        assert_eq!(f["canonical"], "https://ex.com/canon");
        assert_eq!(f["language"], "en-GB");
        assert_eq!(
            f["links"],
            json!([{"href": "https://ex.com/docs/a.html", "text": "a link"}])
        );
        assert_eq!(
            f["images"],
            json!([
                {"src": "https://ex.com/og.png"},
                {"src": "https://ex.com/docs/i.png", "alt": "pic"},
                {"src": "https://ex.com/docs/lazy.png"}
            ])
        );
        assert_eq!(f["jsonLd"], json!([{"@type": "Article", "headline": "H"}]));
        assert_eq!(
            f["headings"],
            json!([{"level": 1, "text": "Main heading"}, {"level": 2, "text": "Second"}])
        );
        let sample = f["textSample"].as_str().unwrap();
        assert!(
            sample.starts_with("Main heading First para with a link."),
            "{sample}"
        );
        assert!(sample.ends_with("Second Block inner"), "{sample}");
        assert!(!sample.contains("not text"));
    }

    #[test]
    fn og_and_twitter_fallbacks() {
        let html = r#"<html><head><meta property="og:title" content="OG">
<meta name="twitter:description" content="TW desc"><meta property="og:url" content="https://ex.com/c">
<meta property="og:locale" content="fr_FR"></head><body>x</body></html>"#;
        let f = Page::parse(html, None, &Budget::default()).unwrap().facts();
        assert_eq!(f["title"], "OG");
        assert_eq!(f["description"], "TW desc");
        assert_eq!(f["canonical"], "https://ex.com/c");
        assert_eq!(f["language"], "fr-FR");
        // Without a base, relative links are dropped, absolute ones kept.
        let f = Page::parse(
            r#"<a href="/rel">r</a><a href="https://ex.com/abs">a</a>"#,
            None,
            &Budget::default(),
        )
        .unwrap()
        .facts();
        assert_eq!(
            f["links"],
            json!([{"href": "https://ex.com/abs", "text": "a"}])
        );
        assert!(f.get("title").is_none(), "empty fields are omitted");
    }

    #[test]
    fn text_sample_is_capped_in_characters() {
        let html = format!("<p>{}</p>", "é ".repeat(3000));
        let s = Page::parse(&html, None, &Budget::default())
            .unwrap()
            .text_sample(TEXT_SAMPLE_CHARS);
        assert_eq!(s.chars().count(), TEXT_SAMPLE_CHARS);
    }

    #[test]
    fn depth_is_measured() {
        let html = format!("<body>{}x</body>", "<div>".repeat(300));
        let p = Page::parse(&html, None, &Budget::default()).unwrap();
        assert_eq!(p.depth, 302, "html, body and 300 divs");
        assert_eq!(
            Page::parse("<p>x", None, &Budget::default()).unwrap().depth,
            3
        );
    }

    #[test]
    fn attributes_are_capped_per_element() {
        let many: String = (0..1000).map(|k| format!(" a{k}=\"v>{k}\"")).collect();
        let html = format!("<p{many}>text</p><script>x = '<i {many}>';</script><b c=1>b</b>");
        let capped = cap_attributes(&html, 256);
        let p = Page::parse(&html, None, &Budget::default()).unwrap();
        let el = p
            .html
            .select(&scraper::Selector::parse("p").unwrap())
            .next()
            .unwrap();
        assert_eq!(el.value().attrs().count(), 256);
        assert_eq!(el.value().attr("a255"), Some("v>255"));
        assert_eq!(text_of(el), "text");
        assert!(
            capped.contains(&format!("<i {many}>")),
            "script text untouched"
        );
        assert!(capped.ends_with("<b c=1>b</b>"));
        let b = p
            .html
            .select(&scraper::Selector::parse("b[c]").unwrap())
            .count();
        assert_eq!(b, 1);
        let plain = "<p a=1 b='2' c>x</p><!-- <p d e f> -->";
        assert!(matches!(
            cap_attributes(plain, 2),
            std::borrow::Cow::Owned(_)
        ));
        assert!(matches!(
            cap_attributes(plain, 3),
            std::borrow::Cow::Borrowed(_)
        ));
    }

    #[test]
    fn html_checks_and_decoding() {
        assert!(html_problem("  ").is_some());
        assert!(html_problem("just words").is_some());
        assert!(html_problem("a\0<p>").is_some());
        assert!(html_problem("<p>ok").is_none());
        assert!(is_html("text/html; charset=utf-8", b""));
        assert!(is_html("", b"  <!doctype html>"));
        assert!(!is_html("application/json", b"<p>"));
        assert_eq!(
            decode_html("text/html; charset=iso-8859-1", b"caf\xe9"),
            "café"
        );
        assert_eq!(
            decode_html("text/html", b"<meta charset=\"windows-1252\">caf\xe9"),
            "<meta charset=\"windows-1252\">café"
        );
    }
}
