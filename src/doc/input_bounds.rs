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

/// Elements whose content is raw text up to their own end tag (`noscript` too: the parser runs
/// with scripting on, as browsers do).
const RAW_TEXT: &[&str] = &[
    "script",
    "style",
    "noscript",
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
fn sibling_group(tag: &Name) -> Option<&'static [&'static str]> {
    Some(match tag.as_bytes() {
        b"li" => &["li"],
        b"dt" | b"dd" => &["dt", "dd"],
        b"td" | b"th" => &["td", "th"],
        b"tr" => &["tr", "td", "th"],
        b"thead" | b"tbody" | b"tfoot" => &["thead", "tbody", "tfoot", "tr", "td", "th"],
        b"option" => &["option"],
        b"optgroup" => &["optgroup", "option"],
        b"rt" | b"rp" => &["rt", "rp"],
        _ => return None,
    })
}

/// Elements a sibling close looks through (`<li><p>a<li>b` closes the first `li`).
const TRANSPARENT: &[&str] = &[
    "p", "div", "address", "span", "a", "b", "i", "em", "strong", "font", "small", "u",
];

/// A tag name as the scan keeps it: lower-case and inline, so a tag costs no allocation. A
/// name longer than the inline room keeps its first 16 bytes and a hash of the whole.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct Name {
    len: u8,
    bytes: [u8; 24],
}

impl Name {
    fn new(raw: &[u8]) -> Name {
        let mut bytes = [0u8; 24];
        if raw.len() <= bytes.len() {
            for (d, s) in bytes.iter_mut().zip(raw) {
                *d = s.to_ascii_lowercase();
            }
            return Name {
                len: raw.len() as u8,
                bytes,
            };
        }
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for &c in raw {
            h = (h ^ u64::from(c.to_ascii_lowercase())).wrapping_mul(0x100_0000_01b3);
        }
        for (d, s) in bytes[..16].iter_mut().zip(raw) {
            *d = s.to_ascii_lowercase();
        }
        bytes[16..].copy_from_slice(&h.to_le_bytes());
        Name {
            len: u8::MAX,
            bytes,
        }
    }

    fn as_bytes(&self) -> &[u8] {
        if self.len == u8::MAX {
            &self.bytes
        } else {
            &self.bytes[..self.len as usize]
        }
    }

    fn is(&self, s: &str) -> bool {
        self.as_bytes() == s.as_bytes()
    }

    fn is_any(&self, list: &[&str]) -> bool {
        list.iter().any(|s| self.is(s))
    }

    fn as_str(&self) -> &str {
        std::str::from_utf8(self.as_bytes()).unwrap_or("")
    }
}

/// Pops the open siblings a start tag implicitly closes: the lowest run of group members near
/// the top of the stack, looking through inline wrappers, stopping at any other element (so a
/// nested `<ul>` protects its parent's `<li>`).
fn close_siblings(stack: &mut Vec<Name>, group: &[&str]) {
    let mut cut = None;
    for (k, n) in stack.iter().enumerate().rev().take(8) {
        if n.is_any(group) {
            cut = Some(k);
        } else if !n.is_any(TRANSPARENT) {
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
    let scan = scan(html.as_bytes(), false);
    without(html, &scan.drops)
}

/// [`bound_input`] for text extraction (`doc::html_to_markdown`): the contents of `<script>`
/// (but JSON, which the metadata reads), `<style>` and `<noscript>` are dropped too, elements
/// kept (`<style></style>`), and so are the attributes outside [`READ_ATTRIBUTES`]. Those are
/// bytes the extractor never reads, and on real pages more than half of them (55 % of the
/// scrapinghub set is script and style): left in, the tokenizer and tree builder spend most
/// of their time on them. The tree built from the result is the tree of [`bound_input`]'s
/// result without those text nodes and attributes (`doc::markdown::text_bounds_differ`
/// checks it on a page; the extraction bench runs it over its sets with `--check-bounds`).
///
/// Exact where it matters: the scan follows the tokenizer's own states to find where a raw
/// text ends (script data's escaped and double-escaped states, comments, attribute quoting),
/// and drops nothing inside `<select>`, nor after the first `<math>`, an `<svg>` holding more
/// than plain drawing markup (`SVG_PLAIN`; where `script`, `style` and `title` are markup and
/// stray end tags may or may not leave foreign content) or inside a `<select>`, a
/// `<frameset>`, a `<![CDATA[` or a `<col>` opening a `<template>`, whose tree-builder states
/// it does not model; nor the attributes of a tag cut off by the end of input or with more
/// than 256 attributes.
pub fn bound_input_for_text(html: &str) -> Bounded<'_> {
    let html = truncate(html, MAX_INPUT_BYTES);
    let scan = scan(html.as_bytes(), true);
    let text = without(html, &scan.drops);
    Bounded {
        budget_bytes: text.len() + scan.raw_dropped,
        text,
    }
}

/// What [`bound_input_for_text`] hands the parser.
pub struct Bounded<'a> {
    pub text: Cow<'a, str>,
    /// The length [`bound_input`]'s result has: the node budget counts these bytes, so
    /// dropping raw text does not shrink the budget.
    pub budget_bytes: usize,
}

/// `html` without the byte ranges `drops` (in order, on char boundaries).
fn without<'a>(html: &'a str, drops: &[(usize, usize)]) -> Cow<'a, str> {
    if drops.is_empty() {
        return Cow::Borrowed(html);
    }
    let mut out = String::with_capacity(html.len());
    let mut at = 0;
    for &(start, end) in drops {
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

/// What [`scan`] found.
struct Scan {
    /// Byte ranges to leave out, in order: excess tags, and raw text when asked for.
    drops: Vec<(usize, usize)>,
    /// Bytes of raw text and attributes among `drops`.
    raw_dropped: usize,
}

/// Elements whose contents [`bound_input_for_text`] drops: the text the extractor never reads.
const DROPPED_RAW_TEXT: &[&str] = &["script", "style", "noscript"];

/// The attributes the extractor reads (`doc::dom::Elem::attr` checks it in debug builds):
/// [`bound_input_for_text`] drops the others. Tracking ids, event handlers, `data-*` blobs,
/// sizes and ARIA labels are a tenth of a page's bytes once scripts and styles are gone, and
/// the tokenizer spends its time in tags.
pub const READ_ATTRIBUTES: &[&str] = &[
    "class",
    "id",
    "style",
    "hidden",
    "aria-hidden",
    "role",
    "href",
    "src",
    "data-src",
    "data-lazy-src",
    "data-original",
    "data-url",
    "srcset",
    "data-srcset",
    "alt",
    "title",
    "rel",
    "itemprop",
    "datetime",
    "lang",
    "type",
    "property",
    "name",
    "content",
    "http-equiv",
    "charset",
    "start",
    "colspan",
];

fn is_read_attribute(name: &[u8]) -> bool {
    READ_ATTRIBUTES
        .iter()
        .any(|r| r.len() == name.len() && name.eq_ignore_ascii_case(r.as_bytes()))
}

/// Elements whose attributes are all kept: those the tree builder compares or reads
/// (formatting elements are told apart by their attributes when reconstructed; `input type`,
/// `template shadowrootmode`, `font color`, `option selected`, the `html`/`body` merge) and
/// the head's.
const KEEPS_ATTRIBUTES: &[&str] = &[
    "a",
    "b",
    "big",
    "code",
    "em",
    "font",
    "i",
    "nobr",
    "s",
    "small",
    "strike",
    "strong",
    "tt",
    "u",
    "input",
    "template",
    "select",
    "option",
    "optgroup",
    "svg",
    "math",
    "annotation-xml",
    "html",
    "body",
    "head",
    "meta",
    "link",
    "base",
    "form",
    "frameset",
    "frame",
];

/// Start tags after which the scan stops dropping raw text inside: foreign content (`svg`,
/// `math`: their `script`/`style` are parsed as markup) and `select`.
const NO_RAW_DROP_INSIDE: &[&str] = &["svg", "math", "select"];

/// The elements of plain SVG drawings (icons, logos), and the filter primitives (`fe…`): none
/// is a tag that breaks out of foreign content (`b`, `div`, `p`, `span`, `font`…), an HTML
/// integration point with markup inside (`foreignObject`), or raw text the scan would read
/// differently from the tree builder (`script`). Inside an `<svg>` that holds only these the
/// tree builder stays in foreign content until the matching `</svg>` (HTML §13.2.6.5), so
/// after it the scan can go on dropping: 74 of the 181 scrapinghub pages have an inline
/// `<svg>`, most before the body, and 3.8 MB of script and style came after one.
const SVG_PLAIN: &[&str] = &[
    "svg",
    "g",
    "path",
    "circle",
    "ellipse",
    "line",
    "polyline",
    "polygon",
    "rect",
    "defs",
    "use",
    "symbol",
    "lineargradient",
    "radialgradient",
    "stop",
    "clippath",
    "mask",
    "pattern",
    "marker",
    "text",
    "tspan",
    "image",
    "filter",
    "animate",
    "animatetransform",
    "animatemotion",
    "set",
    "title",
    "desc",
    "style",
];

/// SVG elements the scan follows only when text alone runs to their own end tag: `title`
/// and `desc` are HTML integration points (markup inside is parsed as HTML, and an end tag
/// there may not close the svg), and the scan reads `title` and `style` as raw text, the
/// tree builder as markup; with no `<` before the end tag both read alike.
const SVG_TEXT_ONLY: &[&str] = &["title", "desc", "style"];

/// One tag inside an `<svg>` the scan follows: `open` holds the SVG elements open (the `svg`
/// first), `name` the tag's name, `closing` whether it is an end tag, `self_closing` whether
/// it ends in `/>` (an SVG element then closes at once), `tag_end` where it ends. Updates
/// `open` as the tree builder's foreign-content rules do: an end tag pops up to the latest
/// open element of its name. Returns false where the content leaves [`SVG_PLAIN`] markup or
/// an end tag names no open element: the scan no longer knows the tree builder's state.
fn svg_tag(
    b: &[u8],
    open: &mut Vec<Name>,
    name: Name,
    closing: bool,
    self_closing: bool,
    tag_end: usize,
) -> bool {
    if closing {
        let Some(k) = open.iter().rposition(|n| *n == name) else {
            return false;
        };
        open.truncate(k);
        return true;
    }
    if !name.is_any(SVG_PLAIN) && !name.as_bytes().starts_with(b"fe") {
        return false;
    }
    if name.is_any(SVG_TEXT_ONLY) {
        let next = b
            .get(tag_end..)
            .and_then(|rest| memchr::memchr(b'<', rest))
            .map(|p| tag_end + p);
        if !next.is_some_and(|lt| is_end_tag(b, lt, name.as_bytes())) {
            return false;
        }
    }
    if !self_closing {
        open.push(name);
    }
    true
}

/// One pass over the input: the tags to drop (nesting past [`MAX_DEPTH`], formatting past
/// [`MAX_OPEN_FORMATTING`]) and, with `raw`, the raw text of [`DROPPED_RAW_TEXT`]. Ranges start
/// at `<` or after `>` and end at `<`, after `>` or at the end of input: all char boundaries.
fn scan(b: &[u8], raw: bool) -> Scan {
    let mut drops = Vec::new();
    let mut raw_dropped = 0;
    let mut stack: Vec<Name> = Vec::new();
    let mut dropped: HashMap<Name, usize> = HashMap::new();
    let mut formatting = OpenFormatting::default();
    // Open svg/math/select as the scan counts them; raw text is dropped only outside all.
    let mut inside = 0usize;
    // Cleared for good by markup whose tree-builder state the scan does not model.
    let mut exact = raw;
    let mut attrs: Vec<AttrSpan> = Vec::new();
    let mut unread: Vec<(usize, usize)> = Vec::new();
    // The SVG elements open while the scan follows an `<svg>` (`svg_tag`).
    let mut svg: Vec<Name> = Vec::new();
    let mut i = 0;
    while let Some(off) = memchr::memchr(b'<', &b[i..]) {
        let lt = i + off;
        let closing = match b.get(lt + 1) {
            Some(b'!') => {
                let cdata = b[lt..].starts_with(b"<![CDATA[");
                if cdata {
                    exact = false;
                }
                i = if b[lt..].starts_with(b"<!--") {
                    comment_end(b, lt + 4)
                } else if cdata && inside > 0 {
                    memchr::memmem::find(&b[lt..], b"]]>").map_or(b.len(), |p| lt + p + 3)
                } else {
                    // Doctype or bogus comment: the first `>` ends it.
                    past(b, lt + 2, b'>')
                };
                continue;
            }
            Some(b'?') => {
                i = past(b, lt + 2, b'>');
                continue;
            }
            Some(b'/') => match b.get(lt + 2) {
                Some(c) if c.is_ascii_alphabetic() => true,
                Some(b'>') => {
                    i = lt + 3;
                    continue;
                }
                Some(_) => {
                    i = past(b, lt + 2, b'>');
                    continue;
                }
                None => break,
            },
            Some(c) if c.is_ascii_alphabetic() => false,
            _ => {
                i = lt + 1;
                continue;
            }
        };
        let name_at = lt + if closing { 2 } else { 1 };
        let name_end = b[name_at..]
            .iter()
            .position(|&c| is_ws(c) || c == b'/' || c == b'>')
            .map_or(b.len(), |p| name_at + p);
        let name = Name::new(&b[name_at..name_end]);
        attrs.clear();
        let (tag_end, self_closing, spans_whole) = tag_end_with(b, name_end, Some(&mut attrs));
        if exact && !svg.is_empty() && !svg_tag(b, &mut svg, name, closing, self_closing, tag_end) {
            exact = false;
        }
        if closing {
            if name.is_any(NO_RAW_DROP_INSIDE) {
                inside = inside.saturating_sub(1);
            }
            if name.is_any(FORMATTING) {
                formatting.close(name.as_str());
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
        if name.is("plaintext") {
            // Everything after it is text.
            break;
        }
        if name.is_any(RAW_TEXT) {
            // Skip the raw text so markup-looking content inside a script is not counted.
            let end = if name.is("script") {
                script_end(b, tag_end)
            } else {
                raw_text_end(b, tag_end, name.as_bytes())
            };
            let keep = name.is("script") && {
                // JSON-LD is read for the metadata; `&` could spell its type in entities.
                let attrs = &b[name_end..tag_end];
                attrs.contains(&b'&') || attrs.windows(4).any(|w| w.eq_ignore_ascii_case(b"json"))
            };
            if exact && inside == 0 && name.is_any(DROPPED_RAW_TEXT) && !keep && end > tag_end {
                drops.push((tag_end, end));
                raw_dropped += end - tag_end;
            }
            i = end;
            continue;
        }
        if name.is("frameset") {
            exact = false;
        }
        if name.is("col") && stack.last().is_some_and(|n| n.is("template")) {
            // A template whose content starts with a `col` is in column-group mode, which
            // ignores `<script>`, `<style>` and `<noscript>` tags (HTML §13.2.6.4.12): their
            // contents are markup there, not raw text. (Conservative after other children.)
            exact = false;
        }
        // Outside select, svg and math as far as the scan can tell (a stray end tag can
        // miscount `inside`; the stack still holds an open `select`).
        let outside = inside == 0 && !stack.iter().any(|n| n.is("select"));
        if name.is("select") || (name.is_any(NO_RAW_DROP_INSIDE) && !self_closing) {
            inside += 1;
        }
        unread.clear();
        if name.is("math") || (name.is("svg") && svg.is_empty()) {
            // Foreign content: `script`/`style`/`title` inside are markup, not raw text, and
            // stray end tags inside can leave it or not. The scan follows an `<svg>` of plain
            // drawing markup outside `select` to its end (`svg_tag`); in any other, including
            // one inside a `select` (parsers disagree there: the standard's "in select" mode
            // ignores it, html5ever parses it as foreign content), it drops nothing more in
            // this page.
            if exact && name.is("svg") && outside {
                if !self_closing {
                    svg.push(name);
                }
            } else {
                exact = false;
            }
        }
        if exact && inside == 0 && spans_whole && !name.is_any(KEEPS_ATTRIBUTES) {
            // A `/` right before a name would make `/>` of what is left: leave such tags be.
            if !attrs.iter().any(|a| b[a.name.0 - 1] == b'/') {
                unread.extend(
                    attrs
                        .iter()
                        .filter(|a| !is_read_attribute(&b[a.name.0..a.name.1]))
                        .map(|a| (a.name.0, a.end)),
                );
            }
        }
        if self_closing || name.is_any(VOID) {
            raw_dropped += unread.iter().map(|(s, e)| e - s).sum::<usize>();
            drops.extend_from_slice(&unread);
            i = tag_end;
            continue;
        }
        if let Some(group) = sibling_group(&name) {
            close_siblings(&mut stack, group);
        }
        if name.is_any(CLOSES_P) && stack.last().is_some_and(|n| n.is("p")) {
            stack.pop();
        }
        let too_much_formatting = name.is_any(FORMATTING)
            && !formatting.open(
                name.as_str(),
                &String::from_utf8_lossy(&b[name_end..tag_end]),
            );
        if stack.len() >= MAX_DEPTH || too_much_formatting {
            *dropped.entry(name).or_insert(0) += 1;
            drops.push((lt, tag_end));
        } else {
            raw_dropped += unread.iter().map(|(s, e)| e - s).sum::<usize>();
            drops.extend_from_slice(&unread);
            stack.push(name);
        }
        i = tag_end;
    }
    Scan { drops, raw_dropped }
}

/// Whitespace as the tokenizer sees it (a CR becomes a LF before it).
fn is_ws(c: u8) -> bool {
    matches!(c, b'\t' | b'\n' | b'\x0c' | b'\r' | b' ')
}

/// Just past the first `c` at or after `from` (the input's end if none).
fn past(b: &[u8], from: usize, c: u8) -> usize {
    b.get(from..)
        .and_then(|rest| memchr::memchr(c, rest))
        .map_or(b.len(), |p| from + p + 1)
}

/// End of a comment whose `<!--` ends at `from`: `<!-->` and `<!--->` close at once, else the
/// first `-->` or `--!>` (dashes may run longer) closes it, as in the tokenizer's comment states.
fn comment_end(b: &[u8], from: usize) -> usize {
    let rest = b.get(from..).unwrap_or(&[]);
    if rest.starts_with(b">") {
        return from + 1;
    }
    if rest.starts_with(b"->") {
        return from + 2;
    }
    let mut j = from;
    while let Some(p) = memchr::memmem::find(&b[j..], b"--") {
        let mut k = j + p + 2;
        while b.get(k) == Some(&b'-') {
            k += 1;
        }
        match b.get(k) {
            Some(b'>') => return k + 1,
            Some(b'!') if b.get(k + 1) == Some(&b'>') => return k + 2,
            None => break,
            _ => j = k,
        }
    }
    b.len()
}

/// Whether an end tag of `name` (ASCII, lower-case) that the tokenizer accepts in raw text
/// starts at `lt`: `</name` then whitespace, `/` or `>`.
fn is_end_tag(b: &[u8], lt: usize, name: &[u8]) -> bool {
    b.get(lt + 1) == Some(&b'/') && name_here(b, lt + 2, name)
}

/// Whether `name` (any case) starts at `at`, followed by whitespace, `/` or `>`.
fn name_here(b: &[u8], at: usize, name: &[u8]) -> bool {
    b.get(at..at + name.len())
        .is_some_and(|n| n.eq_ignore_ascii_case(name))
        && b.get(at + name.len())
            .is_some_and(|&c| is_ws(c) || c == b'/' || c == b'>')
}

/// Where the RAWTEXT or RCDATA of a `name` element starting at `from` ends: the `<` of its end
/// tag, or the input's end.
fn raw_text_end(b: &[u8], from: usize, name: &[u8]) -> usize {
    let mut j = from;
    while let Some(p) = b.get(j..).and_then(|rest| memchr::memchr(b'<', rest)) {
        if is_end_tag(b, j + p, name) {
            return j + p;
        }
        j += p + 1;
    }
    b.len()
}

/// Where the script data starting at `from` ends: the `<` of `</script`, or the input's end.
/// Follows the tokenizer's script data states (HTML §13.2.5.4, .15–.29): after `<!--` a
/// `<script` starts a double-escaped run in which `</script` does not end the script, until a
/// `</script` ends the run or `-->` returns to plain script data.
fn script_end(b: &[u8], from: usize) -> usize {
    #[derive(PartialEq)]
    enum S {
        Data,
        Escaped,
        DoubleEscaped,
    }
    let mut s = S::Data;
    let mut j = from;
    loop {
        let Some(rest) = b.get(j..) else {
            return b.len();
        };
        let found = if s == S::Data {
            memchr::memchr(b'<', rest)
        } else {
            memchr::memchr2(b'<', b'-', rest)
        };
        let Some(p) = found else {
            return b.len();
        };
        let at = j + p;
        if b[at] == b'-' {
            // Two or more dashes then `>` return to script data.
            let mut k = at;
            while b.get(k) == Some(&b'-') {
                k += 1;
            }
            if k - at >= 2 && b.get(k) == Some(&b'>') {
                s = S::Data;
                j = k + 1;
            } else {
                j = k;
            }
            continue;
        }
        match s {
            S::Data => {
                if is_end_tag(b, at, b"script") {
                    return at;
                }
                if b[at + 1..].starts_with(b"!--") {
                    // The dashes of `<!--` count towards a `-->` (`<!-->` is back at once).
                    s = S::Escaped;
                    j = at + 2;
                } else {
                    j = at + 1;
                }
            }
            S::Escaped => {
                if is_end_tag(b, at, b"script") {
                    return at;
                }
                if name_here(b, at + 1, b"script") {
                    s = S::DoubleEscaped;
                    j = at + 7;
                } else {
                    j = at + 1;
                }
            }
            S::DoubleEscaped => {
                if is_end_tag(b, at, b"script") {
                    s = S::Escaped;
                    j = at + 8;
                } else {
                    j = at + 1;
                }
            }
        }
    }
}

/// End of a tag whose name ends at `from`: the byte after its `>`, and whether it was written
/// self-closing (`/>`); the attributes' spans go into `attrs` when given. Follows the tokenizer's attribute states: quotes open a value only
/// after `=`, an unquoted value ends at whitespace or `>`.
/// One attribute of a tag: where its name starts and ends, and where the attribute (with its
/// value) ends.
#[derive(Clone, Copy)]
struct AttrSpan {
    name: (usize, usize),
    end: usize,
}

fn tag_end_with(b: &[u8], from: usize, attrs: Option<&mut Vec<AttrSpan>>) -> (usize, bool, bool) {
    let mut overflow = false;
    let (end, self_closing, closed) = tag_end_spans(b, from, attrs, &mut overflow);
    (end, self_closing, closed && !overflow)
}

/// Attributes recorded per tag; a tag with more keeps all of them (memory stays bounded on a
/// tag with millions of attributes).
const MAX_TRACKED_ATTRIBUTES: usize = 256;

/// [`tag_end_with`]'s scan: the end, whether self-closing, whether the tag closed before the
/// input's end (a tag cut off by the end is never emitted, and its spans are not whole).
fn tag_end_spans(
    b: &[u8],
    from: usize,
    mut attrs: Option<&mut Vec<AttrSpan>>,
    overflow: &mut bool,
) -> (usize, bool, bool) {
    #[derive(PartialEq)]
    enum A {
        /// Before an attribute name (also after a quoted value and its whitespace).
        Before,
        Name,
        AfterName,
        BeforeValue,
        AfterQuoted,
    }
    let mut st = A::Before;
    let mut j = from;
    while let Some(&c) = b.get(j) {
        match st {
            A::Before | A::AfterName | A::AfterQuoted if c == b'>' => return (j + 1, false, true),
            A::Before | A::AfterName | A::AfterQuoted if c == b'/' => {
                if b.get(j + 1) == Some(&b'>') {
                    return (j + 2, true, true);
                }
                st = A::Before;
                j += 1;
            }
            A::AfterQuoted => st = A::Before,
            A::Before | A::AfterName if is_ws(c) => j += 1,
            A::AfterName if c == b'=' => {
                st = A::BeforeValue;
                j += 1;
            }
            A::Before | A::AfterName => {
                if let Some(a) = attrs.as_deref_mut() {
                    if a.len() < MAX_TRACKED_ATTRIBUTES {
                        a.push(AttrSpan {
                            name: (j, j),
                            end: j,
                        });
                    } else {
                        // The spans below would belong to the last recorded attribute.
                        *overflow = true;
                        attrs = None;
                    }
                }
                st = A::Name;
                j += 1;
            }
            A::Name => {
                if matches!(c, b'/' | b'>' | b'=') || is_ws(c) {
                    if let Some(a) = attrs.as_deref_mut().and_then(|a| a.last_mut()) {
                        a.name.1 = j;
                        a.end = j;
                    }
                }
                match c {
                    b'/' | b'>' => st = A::AfterName,
                    b'=' => {
                        st = A::BeforeValue;
                        j += 1;
                    }
                    c if is_ws(c) => {
                        st = A::AfterName;
                        j += 1;
                    }
                    _ => j += 1,
                }
            }
            A::BeforeValue => match c {
                c if is_ws(c) => j += 1,
                b'>' => return (j + 1, false, true),
                b'"' | b'\'' => match memchr::memchr(c, &b[j + 1..]) {
                    Some(p) => {
                        j += p + 2;
                        st = A::AfterQuoted;
                        if let Some(a) = attrs.as_deref_mut().and_then(|a| a.last_mut()) {
                            a.end = j;
                        }
                    }
                    None => return (b.len(), false, false),
                },
                _ => {
                    // Unquoted: up to whitespace or `>`.
                    match b[j..].iter().position(|&c| is_ws(c) || c == b'>') {
                        Some(p) => {
                            j += p;
                            st = A::Before;
                            if let Some(a) = attrs.as_deref_mut().and_then(|a| a.last_mut()) {
                                a.end = j;
                            }
                        }
                        None => return (b.len(), false, false),
                    }
                }
            },
        }
    }
    (b.len(), false, false)
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

    #[test]
    fn raw_text_and_unread_attributes_are_dropped_for_text() {
        let lean = |s: &str| bound_input_for_text(s).text.into_owned();
        assert_eq!(
            lean("<script src=a.js>var a = '<p>x</p>';</script><p data-x=1 class=a onclick=\"f()\">t</p>"),
            "<script src=a.js></script><p  class=a >t</p>"
        );
        assert_eq!(
            lean("<style>p > a { x: 1 }</STYLE ><noscript><img src=x></noscript>"),
            "<style></STYLE ><noscript></noscript>"
        );
        // JSON-LD is read for the metadata; svg's and select's contents are not raw text.
        for kept in [
            "<script type=\"application/ld+json\">{\"a\":1}</script>",
            "<script type=application/ld&#43;json>{}</script>",
            "<svg><style>a{}</style><script>x</script></svg>",
            "<math><style>a{}</style></math>",
            "<select><style>a{}</style></select>",
            "<b data-x=1>formatting elements keep theirs</b><a data-y=2 href=x>y</a>",
        ] {
            assert_eq!(lean(kept), kept);
        }
        // After a frameset or a CDATA section nothing more is dropped.
        assert_eq!(
            lean("<frameset><style>a</style>"),
            "<frameset><style>a</style>"
        );
        // After an svg of plain drawing markup, dropping goes on (`svg_tag`).
        assert_eq!(
            lean("<svg viewBox=\"0 0 1 1\"><title>Logo</title><g><path d=x/><rect></g></svg><script>a</script><p data-x=1>t</p>"),
            "<svg viewBox=\"0 0 1 1\"><title>Logo</title><g><path d=x/><rect></g></svg><script></script><p >t</p>"
        );
        assert_eq!(
            lean("<svg><svg/><defs><style>.a{}</style></defs><feBlend/></svg><style>b</style>"),
            "<svg><svg/><defs><style>.a{}</style></defs><feBlend/></svg><style></style>"
        );
        // Not after one that breaks out of foreign content, holds HTML (foreignObject, markup
        // in a title or desc), closes what is not open, or sits in a select.
        for kept in [
            "<svg><p>x</svg><script>a</script>",
            "<svg><font color=red>x</font></svg><script>a</script>",
            "<svg><foreignObject><div>x</div></foreignObject></svg><script>a</script>",
            "<svg><desc><b>x</b></desc></svg><script>a</script>",
            "<svg><title>a<i>b</i></title></svg><script>a</script>",
            "<svg><title/>x</title></svg><script>a</script>",
            "<svg><g></p></g></svg><script>a</script>",
            "<svg><a href=x><path/></a></svg><script>a</script>",
            "<select><svg></svg><style>a</style></select>",
            "<math></math><script>a</script>",
        ] {
            assert_eq!(lean(kept), kept);
        }
        // A `/` right before an attribute would leave `/>`.
        assert_eq!(lean("<div/x>t</div>"), "<div/x>t</div>");
        // The node budget still counts the page's bytes.
        let page = "<style>aaaa</style><p data-x=1>t";
        assert_eq!(bound_input_for_text(page).budget_bytes, page.len());
    }

    #[test]
    fn script_ends_where_the_tokenizer_ends_it() {
        fn end(s: &str) -> &str {
            let from = s.find('>').unwrap() + 1;
            &s[script_end(s.as_bytes(), from)..]
        }
        assert_eq!(end("<script>a</script>b"), "</script>b");
        assert_eq!(end("<script>a</scripts></script >b"), "</script >b");
        assert_eq!(end("<script>a</SCRIPT/>b"), "</SCRIPT/>b");
        // `<!--` then `<script>`: the first `</script>` belongs to the inner script.
        assert_eq!(
            end("<script><!-- document.write('<script>x</script>') --></script>b"),
            "</script>b"
        );
        assert_eq!(
            end("<script><!-- <script> x </script> y </script>b"),
            "</script>b"
        );
        // `<!-->` is back to plain script data at once.
        assert_eq!(end("<script><!--><script></script>b"), "</script>b");
        // Escaped, not double escaped: the end tag still ends it.
        assert_eq!(end("<script><!-- x </script>b"), "</script>b");
        assert_eq!(end("<script>a</script"), "");
    }

    #[test]
    fn tags_end_where_the_tokenizer_ends_them() {
        fn end(s: &str) -> (&str, bool) {
            let (e, sc, _) = tag_end_with(s.as_bytes(), 2, None);
            (&s[e..], sc)
        }
        assert_eq!(end("<p class=a'b>t"), ("t", false));
        assert_eq!(end("<p title='a>b' x>t"), ("t", false));
        assert_eq!(end("<p a=\"x\"/>t"), ("t", true));
        assert_eq!(end("<p a=x/>t"), ("t", false));
        assert_eq!(end("<p 'a>t"), ("t", false));
        assert_eq!(end("<p =\"a>\">t"), ("\">t", false));
        assert_eq!(end("<p a = \"b>\">t"), ("t", false));
    }

    #[test]
    fn comments_end_where_the_tokenizer_ends_them() {
        fn end(s: &str) -> &str {
            &s[comment_end(s.as_bytes(), 4)..]
        }
        assert_eq!(end("<!-->t"), "t");
        assert_eq!(end("<!--->t"), "t");
        assert_eq!(end("<!---->t"), "t");
        assert_eq!(end("<!-- a -- b --->t"), "t");
        assert_eq!(end("<!-- a --!>t"), "t");
        assert_eq!(end("<!-- a --!-->t"), "t");
        assert_eq!(end("<!-- <!--> t"), " t");
        assert_eq!(end("<!-- a -- >"), "");
    }
}
