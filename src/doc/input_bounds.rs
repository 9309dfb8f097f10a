//! Input bounds applied before the HTML parser: size and nesting depth.
//!
//! html5ever's tree builder walks its stack of open elements for scope checks, so a page with
//! 100 000 nested `<div>`s costs ~30 s and nested `<ul><li>` minutes (measured). This linear
//! scanner estimates the open-element depth and drops start tags (and their matching end tags)
//! beyond [`MAX_DEPTH`], flattening the excess the way browsers do. It also truncates inputs
//! beyond [`MAX_INPUT_BYTES`]. The estimate errs on the deep side (it does not know every
//! implicit close), which only makes the cap bite earlier on hostile input; elements that close
//! themselves implicitly in real pages (`li`, `p`, `td`, …) are modelled so long flat lists stay
//! intact.
//!
//! It also caps the formatting elements (`b`, `i`, `font`, …) left open at once. The tree
//! builder re-creates ("reconstructs") every open formatting element inside each new block
//! after a misnested close, so 500 distinct unclosed `<b c=N>` make every later `<p>x` cost 500
//! elements (issue 21). Browsers dedupe identical ones (at most three alike, the "Noah's Ark"
//! clause) but not distinct ones; we keep at most [`MAX_OPEN_FORMATTING`] open, counted the
//! same way, and drop further formatting start tags (their text stays). `a` and `nobr` are not
//! counted: a new one closes the previous. The count is an estimate that never decreases
//! without a matching end tag; the node budget in `super::parse` is the hard bound.

use std::borrow::Cow;
use std::collections::HashMap;

/// Deepest element nesting handed to the parser. Real pages stay far below (a few dozen to
/// ~200); Blink flattens at 512.
pub const MAX_DEPTH: usize = 512;

/// Largest input parsed; the rest is cut (at a char boundary). Pages beyond this are not
/// articles a reader would want as one markdown document.
pub const MAX_INPUT_BYTES: usize = 8 * 1024 * 1024;

/// Formatting elements left open at once (distinct tag + attributes, at most three alike), as
/// the tree builder counts them for reconstruction. Real pages rarely leave more than a few
/// open.
pub const MAX_OPEN_FORMATTING: usize = 32;

/// Formatting elements the tree builder reconstructs (HTML spec), minus `a` and `nobr`.
const FORMATTING: &[&str] = &[
    "b", "big", "code", "em", "font", "i", "s", "small", "strike", "strong", "tt", "u",
];

/// The formatting elements the scanner believes open: (name, raw attributes) → how many, and
/// per name the attribute strings in opening order, so an end tag closes the latest.
#[derive(Default)]
struct OpenFormatting {
    count: HashMap<(String, String), usize>,
    by_name: HashMap<String, Vec<String>>,
    /// Σ min(count, 3): what reconstruction would re-create.
    total: usize,
}

impl OpenFormatting {
    /// Whether a start tag may open (and then counts it).
    fn open(&mut self, name: &str, attrs: &str) -> bool {
        let key = (name.to_string(), attrs.to_string());
        let c = self.count.get(&key).copied().unwrap_or(0);
        if c < 3 {
            if self.total >= MAX_OPEN_FORMATTING {
                return false;
            }
            self.total += 1;
        }
        self.count.insert(key, c + 1);
        self.by_name
            .entry(name.to_string())
            .or_default()
            .push(attrs.to_string());
        true
    }

    fn close(&mut self, name: &str) {
        let Some(attrs) = self.by_name.get_mut(name).and_then(Vec::pop) else {
            return;
        };
        if let Some(c) = self.count.get_mut(&(name.to_string(), attrs)) {
            if *c <= 3 {
                self.total -= 1;
            }
            *c -= 1;
        }
    }
}

const VOID: &[&str] = &[
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track",
    "wbr", "param", "keygen", "basefont", "bgsound", "frame", "image",
];

/// Elements whose content is raw text up to their own end tag.
const RAW_TEXT: &[&str] = &[
    "script",
    "style",
    "textarea",
    "title",
    "xmp",
    "iframe",
    "noembed",
    "noframes",
    "plaintext",
];

/// Start tags that close an open `<p>` (the common block-level ones).
const CLOSES_P: &[&str] = &[
    "address",
    "article",
    "aside",
    "blockquote",
    "div",
    "dl",
    "fieldset",
    "figure",
    "footer",
    "form",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hr",
    "main",
    "nav",
    "ol",
    "p",
    "pre",
    "section",
    "table",
    "ul",
];

/// Tags that implicitly close an open sibling of the same group.
fn sibling_group(tag: &str) -> Option<&'static [&'static str]> {
    Some(match tag {
        "li" => &["li"],
        "dt" | "dd" => &["dt", "dd"],
        "td" | "th" => &["td", "th"],
        "tr" => &["tr", "td", "th"],
        "thead" | "tbody" | "tfoot" => &["thead", "tbody", "tfoot", "tr", "td", "th"],
        "option" => &["option"],
        "optgroup" => &["optgroup", "option"],
        "rt" | "rp" => &["rt", "rp"],
        _ => return None,
    })
}

/// Elements a sibling close looks through (`<li><p>a<li>b` closes the first `li`).
const TRANSPARENT: &[&str] = &[
    "p", "div", "address", "span", "a", "b", "i", "em", "strong", "font", "small", "u",
];

/// Pops the open siblings a start tag implicitly closes: the lowest run of group members near
/// the top of the stack, looking through inline wrappers, stopping at any other element (so a
/// nested `<ul>` protects its parent's `<li>`).
fn close_siblings(stack: &mut Vec<String>, group: &[&str]) {
    let mut cut = None;
    for (k, n) in stack.iter().enumerate().rev().take(8) {
        if group.contains(&n.as_str()) {
            cut = Some(k);
        } else if !TRANSPARENT.contains(&n.as_str()) {
            break;
        }
    }
    if let Some(k) = cut {
        stack.truncate(k);
    }
}

/// Returns the input, truncated to [`MAX_INPUT_BYTES`] and with nesting beyond [`MAX_DEPTH`]
/// flattened. Borrowed when nothing needed changing.
pub fn bound_input(html: &str) -> Cow<'_, str> {
    let html = truncate(html, MAX_INPUT_BYTES);
    let drops = find_excess_tags(html.as_bytes());
    if drops.is_empty() {
        return Cow::Borrowed(html);
    }
    let mut out = String::with_capacity(html.len());
    let mut at = 0;
    for (start, end) in drops {
        out.push_str(&html[at..start]);
        at = end;
    }
    out.push_str(&html[at..]);
    Cow::Owned(out)
}

fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut cut = max;
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    &s[..cut]
}

/// Byte ranges of tags to drop, in order. Ranges always start at `<` and end after `>` (or at
/// the end of input), both ASCII, so they are char boundaries.
fn find_excess_tags(b: &[u8]) -> Vec<(usize, usize)> {
    let mut drops = Vec::new();
    let mut stack: Vec<String> = Vec::new();
    let mut dropped: HashMap<String, usize> = HashMap::new();
    let mut formatting = OpenFormatting::default();
    let mut i = 0;
    while i < b.len() {
        let Some(off) = memchr_lt(&b[i..]) else { break };
        let lt = i + off;
        let rest = &b[lt..];
        if rest.starts_with(b"<!--") {
            i = find(b, lt + 4, b"-->").map_or(b.len(), |p| p + 3);
            continue;
        }
        if rest.len() > 1 && (rest[1] == b'!' || rest[1] == b'?') {
            i = find(b, lt + 2, b">").map_or(b.len(), |p| p + 1);
            continue;
        }
        let closing = rest.len() > 1 && rest[1] == b'/';
        let name_at = lt + if closing { 2 } else { 1 };
        if name_at >= b.len() || !b[name_at].is_ascii_alphabetic() {
            i = lt + 1;
            continue;
        }
        let mut name_end = name_at;
        while name_end < b.len()
            && !b[name_end].is_ascii_whitespace()
            && b[name_end] != b'/'
            && b[name_end] != b'>'
        {
            name_end += 1;
        }
        let name = String::from_utf8_lossy(&b[name_at..name_end]).to_ascii_lowercase();
        let (tag_end, self_closing) = tag_end(b, name_end);
        if closing {
            if FORMATTING.contains(&name.as_str()) {
                formatting.close(&name);
            }
            if let Some(pos) = stack.iter().rposition(|n| *n == name) {
                stack.truncate(pos);
            } else if let Some(n) = dropped.get_mut(&name).filter(|n| **n > 0) {
                *n -= 1;
                drops.push((lt, tag_end));
            }
            i = tag_end;
            continue;
        }
        if RAW_TEXT.contains(&name.as_str()) {
            // Skip the raw text so markup-looking content inside a script is not counted.
            let close = format!("</{name}");
            i = find_ci(b, tag_end, close.as_bytes()).unwrap_or(b.len());
            continue;
        }
        if self_closing || VOID.contains(&name.as_str()) {
            i = tag_end;
            continue;
        }
        if let Some(group) = sibling_group(&name) {
            close_siblings(&mut stack, group);
        }
        if CLOSES_P.contains(&name.as_str()) && stack.last().is_some_and(|n| n == "p") {
            stack.pop();
        }
        let too_much_formatting = FORMATTING.contains(&name.as_str())
            && !formatting.open(&name, &String::from_utf8_lossy(&b[name_end..tag_end]));
        if stack.len() >= MAX_DEPTH || too_much_formatting {
            *dropped.entry(name).or_insert(0) += 1;
            drops.push((lt, tag_end));
        } else {
            stack.push(name);
        }
        i = tag_end;
    }
    drops
}

/// End of a tag whose name ends at `from`: the byte after `>` outside quotes, and whether it was
/// written self-closing (`/>`).
fn tag_end(b: &[u8], from: usize) -> (usize, bool) {
    let mut quote: Option<u8> = None;
    let mut j = from;
    while j < b.len() {
        let c = b[j];
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == b'"' || c == b'\'' => quote = Some(c),
            None if c == b'>' => return (j + 1, j > from && b[j - 1] == b'/'),
            None => {}
        }
        j += 1;
    }
    (b.len(), false)
}

fn memchr_lt(b: &[u8]) -> Option<usize> {
    b.iter().position(|&c| c == b'<')
}

fn find(b: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    if from >= b.len() {
        return None;
    }
    b[from..]
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

fn find_ci(b: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    if from >= b.len() {
        return None;
    }
    b[from..]
        .windows(needle.len())
        .position(|w| w.eq_ignore_ascii_case(needle))
        .map(|p| p + from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_pages_are_untouched() {
        let html = "<html><body><div><ul><li>a<li>b</ul><p>x<p>y<table><tr><td>1<td>2</table>\
                    <script>if (a < b) { x = '<div>'; }</script></div></body></html>";
        assert!(matches!(bound_input(html), Cow::Borrowed(_)));
    }

    #[test]
    fn long_flat_lists_and_tables_without_end_tags_are_kept() {
        let html = format!("<ul>{}</ul>", "<li><p>item".repeat(5000));
        assert!(matches!(bound_input(&html), Cow::Borrowed(_)));
        let html = format!("<table>{}</table>", "<tr><td>a<td><div>b".repeat(5000));
        assert!(matches!(bound_input(&html), Cow::Borrowed(_)));
        let html = format!("<dl>{}</dl>", "<dt>a<dd>b".repeat(5000));
        assert!(matches!(bound_input(&html), Cow::Borrowed(_)));
    }

    #[test]
    fn deep_nesting_is_flattened_and_text_kept() {
        let n = 2000;
        let html = format!("{}deep text{}", "<div>".repeat(n), "</div>".repeat(n));
        let out = bound_input(&html);
        assert_eq!(out.matches("<div>").count(), MAX_DEPTH);
        assert_eq!(out.matches("</div>").count(), MAX_DEPTH);
        assert!(out.contains("deep text"));
    }

    /// Depth of the tree the parser builds from the bounded input.
    fn parsed_depth(html: &str) -> usize {
        let dom = crate::doc::dom::Dom::parse(&bound_input(html), &Default::default()).unwrap();
        (0..dom.nodes.len())
            .map(|i| dom.ancestors(i).count())
            .max()
            .unwrap_or(0)
    }

    #[test]
    fn unclosed_deep_nesting_is_flattened() {
        for unit in [
            "<ul><li>",
            "<div>",
            "<div><p>x",
            "<table><tr><td>",
            "<blockquote>",
            "<b><i>",
        ] {
            let depth = parsed_depth(&(unit.repeat(3000) + "x"));
            assert!(depth <= 2 * MAX_DEPTH + 8, "{unit}: depth {depth}");
        }
    }

    #[test]
    fn open_formatting_elements_are_capped() {
        let page = crate::doc::parse::adoption_agency_page(500, 20_000);
        let out = bound_input(&page);
        assert_eq!(out.matches("<b ").count(), MAX_OPEN_FORMATTING);
        assert_eq!(out.matches("<p>x").count(), page.matches("<p>x").count());
    }

    #[test]
    fn closed_or_identical_formatting_elements_are_kept() {
        // Closed ones never count; identical unclosed ones count at most three times, as in
        // the tree builder.
        let html = "<b c=1>x</b>".repeat(1000) + &"<p><font face=a>y</p>".repeat(1000);
        assert!(matches!(bound_input(&html), Cow::Borrowed(_)));
    }

    #[test]
    fn truncation_respects_char_boundaries() {
        let s = "é".repeat(MAX_INPUT_BYTES); // 2 bytes each
        let out = bound_input(&s);
        assert!(out.len() <= MAX_INPUT_BYTES);
    }

    #[test]
    fn odd_markup_does_not_panic() {
        for s in [
            "<",
            "</",
            "<!--",
            "<a href='",
            "</>",
            "<!",
            "<1>",
            "<a/",
            "<é>",
            "<div",
        ] {
            let _ = bound_input(s);
        }
    }
}
