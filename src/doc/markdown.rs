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
    let dom = if main_content::off("rawtext") {
        Dom::parse(&input_bounds::bound_input(html), budget)?
    } else {
        Dom::parse_bounded(&input_bounds::bound_input_for_text(html), budget)?
    };
    let meta = page_meta::extract(&dom);
    let base = document_base(&dom, base_url);
    let sel = main_content::select(&dom, meta.title.as_deref());
    let markdown = markdown_writer::render(&dom, &sel.roots, &sel.skip, base.as_ref());
    let word_count = super::score::count_tokens(&markdown_to_text(&markdown));
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

/// Where the tree of [`input_bounds::bound_input_for_text`]'s result differs from the tree of
/// [`input_bounds::bound_input`]'s once the text of `script`/`style`/`noscript` and the
/// attributes outside [`input_bounds::READ_ATTRIBUTES`] are set aside in both: `None` when
/// they agree, as they must. Development check (`cargo bench --bench extraction --
/// --check-bounds`).
#[doc(hidden)]
pub fn text_bounds_differ(html: &str) -> Option<String> {
    let budget = Budget::default();
    let full = Dom::parse(&input_bounds::bound_input(html), &budget);
    let lean = Dom::parse_bounded(&input_bounds::bound_input_for_text(html), &budget);
    let (full, lean) = match (full, lean) {
        (Ok(f), Ok(l)) => (f, l),
        (Err(a), Err(b)) if a == b => return None,
        (a, b) => return Some(format!("parse: {:?} vs {:?}", a.err(), b.err())),
    };
    let (a, b) = (canonical_nodes(&full), canonical_nodes(&lean));
    if a == b {
        return None;
    }
    let at = a
        .iter()
        .zip(&b)
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()));
    Some(format!(
        "node {at} of {}/{}: {:?} vs {:?}",
        a.len(),
        b.len(),
        a.get(at),
        b.get(at)
    ))
}

/// Where the tree extraction builds ([`Dom::parse`], html5ever into `super::dom_sink`)
/// differs from scraper's tree of the same input copied into the arena (`Dom::from_html`):
/// `None` when they agree, as they must. Development check (`cargo bench --bench extraction
/// -- --check-bounds`), on the lean input the extractor parses.
#[doc(hidden)]
pub fn sink_tree_differs(html: &str) -> Option<String> {
    let lean = input_bounds::bound_input_for_text(html);
    // Parsed as extraction parses it; a refusal is a difference too (scraper has no budget).
    let ours = match Dom::parse_bounded(&lean, &Budget::default()) {
        Ok(dom) => dom,
        Err(e) => return Some(format!("refused by the node budget: {e}")),
    };
    let theirs = Dom::from_html(&scraper::Html::parse_document(&lean.text));
    if ours == theirs {
        return None;
    }
    let at = ours
        .nodes
        .iter()
        .zip(&theirs.nodes)
        .position(|(x, y)| x != y)
        .unwrap_or(ours.nodes.len().min(theirs.nodes.len()));
    Some(format!(
        "node {at} of {}/{}: {:?} vs {:?}",
        ours.nodes.len(),
        theirs.nodes.len(),
        ours.nodes.get(at),
        theirs.nodes.get(at)
    ))
}

/// Each node as (parent's position, description), raw text and unread attributes left out.
fn canonical_nodes(dom: &Dom) -> Vec<(Option<usize>, String)> {
    use super::dom::Kind;
    let mut pos = vec![usize::MAX; dom.nodes.len()];
    let mut out = Vec::new();
    for (ix, n) in dom.nodes.iter().enumerate() {
        let parent_tag = n.parent.map_or("", |p| dom.tag(p));
        let desc = match &n.kind {
            Kind::Document => "#document".to_string(),
            Kind::Element(e) => {
                let attrs: Vec<String> = e
                    .attrs
                    .iter()
                    .filter(|(k, _)| input_bounds::READ_ATTRIBUTES.contains(&k.as_str()))
                    .map(|(k, v)| format!("{k}={v:?}"))
                    .collect();
                format!("<{} {}>", e.tag, attrs.join(" "))
            }
            Kind::Text(_) if matches!(parent_tag, "script" | "style" | "noscript") => continue,
            Kind::Text(t) => format!("{t:?}"),
        };
        pos[ix] = out.len();
        out.push((n.parent.map(|p| pos[p]), desc));
    }
    out
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lean_input_builds_the_pages_tree() {
        let head = "<!doctype html><html><head><title>T</title><style>p>a{}</style>\
                    <script>var s = '</div><p>not markup';</script></head><body>";
        for body in [
            "<div data-a=1 class=x><p id=p onclick=f()>a <b data-b=2>b</b> c</p></div>",
            "<script><!-- document.write('<script>x</script><p>') --></script><p>t</p>",
            "<table><tr><td data-x=1>a<style>td{}</style><td>b</table>",
            "<svg viewBox='0 0 1 1'><style>.a{}</style><path d='M0 0'/></svg><p x=1>after</p>",
            "<select><style>x</style><option selected data-v=1>o</select><p>t",
            "<noscript><img src=x.png></noscript><p data-x='a>b'>t</p>",
            "<p title=a'b data-q=\"x\">quoted</p><img data-z=1 src=a.png alt=b>",
            "<div/x>self</div><p>t<!-- <script> -->after<!--><script>a</script>",
            "<math><mi>x</mi><style>s</style></math><p>t",
            "<frameset><frame src=a></frameset>",
            // Found in review: a quoted value the input's end cuts off; svg/math counted
            // wrongly by stray end tags; raw-text names inside svg.
            "<p>first para</p><div data-x=\"1>tail text that is not part of the page",
            "<p data-x='a>",
            "<p>before</p><svg></math><style><p>hidden words here</p></style></svg><p>after</p>",
            "<p>before</p><svg></select><style><p>hidden words here</p></style></svg>",
            "<p>before</p><svg><title><a title=\"</title></svg>\"></a></title><style>X<p>visible paragraph text</p></style></svg><p>after</p>",
            "<textarea><style></textarea><p data-a=1>t",
            "<template><p data-a=1>t</p><style>x</style></template>",
            // svgs the scan follows to their end, then drops after them (`svg_tag`)…
            "<a href=/><svg viewBox='0 0 9 9'><title>Home</title><g><path d=x/><rect></g></svg></a><style>p{}</style><p data-x=1>t</p>",
            "<svg><svg/><defs><linearGradient><stop/></linearGradient><style>.a{}</style></defs><feBlend/></svg><script>x</script><p a=1>t",
            "<table><tr><svg><path></svg><td data-x=1>a<style>s</style></table>",
            "<p>a<svg><desc>d</desc><text>t<tspan>u</tspan></text></svg>b<script>s</script></p>",
            // …and those it does not.
            "<svg><p>x</svg><style>s</style><p data-x=1>t",
            "<svg><g><div>x</div></g></svg><style>s</style><p data-x=1>t",
            "<svg><foreignObject><p>x</p><style>s</style></foreignObject></svg><p data-x=1>t",
            "<svg><desc><b>x</b></svg><style>s</style></desc></svg><p data-x=1>t",
            "<svg><title>a<i>b</i></svg><style>s</style></title></svg><p data-x=1>t",
            "<svg><title/><style>s</style></title></svg><p data-x=1>t",
            "<svg><g></p><style>s</style></g></svg><p data-x=1>t",
            "<select><svg><path></svg><style>s</style></select><p data-x=1>t",
            "<select></svg><svg><path></svg><style>s</style></select><p data-x=1>t",
            // In a template holding a `col`, the column-group mode ignores `<script>` and
            // `<style>` tags: what follows is markup (found in review).
            "<template><col><script></template><p data-x=1>hi</p></script>",
            "<template><col><style></template><p data-x=1>hi</p></style>",
        ] {
            let html = format!("{head}{body}</body></html>");
            assert_eq!(text_bounds_differ(&html), None, "{body}");
        }
    }
}
