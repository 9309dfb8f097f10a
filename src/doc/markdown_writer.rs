//! Renders chosen DOM subtrees as GitHub-flavoured markdown.
//!
//! Two steps: the DOM is turned into a small block tree (paragraphs, headings, lists, quotes,
//! code, tables) whose inline content is already markdown, then the blocks are written out with
//! the prefixes nesting needs. Links and images are made absolute against the base URL; `<pre>`
//! keeps its line breaks; tables become GFM tables (the first row is the header row when the
//! table has no `<th>` header), while layout tables (nested tables, one column, long cells) are
//! rendered as ordinary blocks.

use super::dom::{Dom, Ix, Kind};
use url::Url;

/// Beyond this depth a subtree is rendered as plain text, so recursion stays bounded whatever
/// the parser produced.
const MAX_RENDER_DEPTH: usize = 400;

#[derive(Debug, Clone, PartialEq)]
enum Block {
    Para(String),
    Heading(u8, String),
    List {
        ordered: bool,
        start: u64,
        items: Vec<Vec<Block>>,
    },
    Quote(Vec<Block>),
    Code {
        lang: Option<String>,
        text: String,
    },
    Table(Vec<Vec<String>>),
    Rule,
}

/// Renders `roots` (in order) to markdown, skipping every node whose `skip` flag is set.
pub fn render(dom: &Dom, roots: &[Ix], skip: &[bool], base: Option<&Url>) -> String {
    let r = Renderer {
        dom,
        skip,
        base,
        has_block: block_flags(dom),
    };
    let mut b = Builder::default();
    for &root in roots {
        if !skip[root] {
            r.node(root, &mut b, 0);
        }
    }
    let blocks = b.finish();
    let mut out = String::new();
    write_blocks(&blocks, &mut out);
    out
}

/// Tags that start a new block in markdown.
fn is_block_tag(tag: &str) -> bool {
    matches!(
        tag,
        "address"
            | "article"
            | "aside"
            | "blockquote"
            | "body"
            | "center"
            | "dd"
            | "details"
            | "dialog"
            | "dir"
            | "div"
            | "dl"
            | "dt"
            | "fieldset"
            | "figcaption"
            | "figure"
            | "footer"
            | "form"
            | "h1"
            | "h2"
            | "h3"
            | "h4"
            | "h5"
            | "h6"
            | "header"
            | "hgroup"
            | "hr"
            | "html"
            | "li"
            | "main"
            | "menu"
            | "nav"
            | "ol"
            | "p"
            | "pre"
            | "section"
            | "summary"
            | "table"
            | "tbody"
            | "td"
            | "tfoot"
            | "th"
            | "thead"
            | "tr"
            | "ul"
            | "caption"
            | "listing"
            | "xmp"
            | "plaintext"
    )
}

/// For every node: does its subtree contain a block-level element (itself excluded)?
fn block_flags(dom: &Dom) -> Vec<bool> {
    let n = dom.nodes.len();
    let mut has = vec![false; n];
    for ix in (0..n).rev() {
        let node = &dom.nodes[ix];
        has[ix] = node
            .children
            .iter()
            .any(|&c| has[c] || is_block_tag(dom.tag(c)));
    }
    has
}

/// Inline content being accumulated for the current block.
#[derive(Default)]
struct Inline {
    text: String,
    pending_space: bool,
}

impl Inline {
    fn push_text(&mut self, raw: &str) {
        for (i, part) in raw.split(char::is_whitespace).enumerate() {
            if i > 0 {
                self.pending_space = true;
            }
            if part.is_empty() {
                continue;
            }
            self.space_if_pending();
            escape_into(part, &mut self.text);
        }
    }

    /// Appends already-formatted markdown.
    fn push_md(&mut self, md: &str) {
        if md.is_empty() {
            return;
        }
        self.space_if_pending();
        self.text.push_str(md);
    }

    fn space_if_pending(&mut self) {
        if self.pending_space && !self.text.is_empty() && !self.text.ends_with([' ', '\n']) {
            self.text.push(' ');
        }
        self.pending_space = false;
    }

    fn hard_break(&mut self) {
        if !self.text.trim().is_empty() {
            while self.text.ends_with(' ') {
                self.text.pop();
            }
            self.text.push_str("  \n");
        }
        self.pending_space = false;
    }

    fn take(&mut self) -> String {
        self.pending_space = false;
        // trim() also drops a trailing hard break.
        std::mem::take(&mut self.text).trim().to_string()
    }
}

#[derive(Default)]
struct Builder {
    blocks: Vec<Block>,
    inline: Inline,
}

impl Builder {
    fn flush(&mut self) {
        let t = self.inline.take();
        if !t.is_empty() {
            self.blocks.push(Block::Para(escape_line_starts(&t)));
        }
    }

    fn push(&mut self, b: Block) {
        self.flush();
        self.blocks.push(b);
    }

    fn finish(mut self) -> Vec<Block> {
        self.flush();
        self.blocks
    }
}

struct Renderer<'a> {
    dom: &'a Dom,
    skip: &'a [bool],
    base: Option<&'a Url>,
    has_block: Vec<bool>,
}

impl Renderer<'_> {
    fn children(&self, ix: Ix, b: &mut Builder, depth: usize) {
        for &c in &self.dom.nodes[ix].children {
            if !self.skip[c] {
                self.node(c, b, depth + 1);
            }
        }
    }

    fn node(&self, ix: Ix, b: &mut Builder, depth: usize) {
        let dom = self.dom;
        let el = match &dom.nodes[ix].kind {
            Kind::Text(t) => return b.inline.push_text(t),
            Kind::Document => return self.children(ix, b, depth),
            Kind::Element(e) => e,
        };
        if depth > MAX_RENDER_DEPTH {
            b.inline.pending_space = true;
            b.inline.push_text(&self.visible_text(ix));
            b.inline.pending_space = true;
            return;
        }
        match el.tag.as_str() {
            "p" | "div" | "section" | "article" | "main" | "header" | "footer" | "aside"
            | "nav" | "address" | "center" | "details" | "summary" | "form" | "fieldset"
            | "body" | "html" | "figure" | "figcaption" | "hgroup" | "dialog" | "caption"
            | "dd" | "dt" | "tbody" | "thead" | "tfoot" | "tr" | "td" | "th" | "menu" => {
                b.flush();
                self.children(ix, b, depth);
                b.flush();
            }
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => {
                let level = el.tag.as_bytes()[1] - b'0';
                let text = self.inline_of(ix, depth);
                if text.is_empty() {
                    b.flush();
                } else {
                    b.push(Block::Heading(level, text.replace('\n', " ")));
                }
            }
            "ul" | "ol" | "dir" => {
                let ordered = el.tag == "ol";
                let start = el
                    .attr("start")
                    .and_then(|s| s.trim().parse::<u64>().ok())
                    .unwrap_or(1)
                    .min(999_999_999);
                let items = self.list_items(ix, depth);
                if items.is_empty() {
                    b.flush();
                } else {
                    b.push(Block::List {
                        ordered,
                        start,
                        items,
                    });
                }
            }
            "li" => {
                // A list item outside a list: render it as a one-item list.
                let mut sub = Builder::default();
                self.children(ix, &mut sub, depth);
                let item = sub.finish();
                if !item.is_empty() {
                    b.push(Block::List {
                        ordered: false,
                        start: 1,
                        items: vec![item],
                    });
                }
            }
            "blockquote" => {
                let mut sub = Builder::default();
                self.children(ix, &mut sub, depth);
                let inner = sub.finish();
                if !inner.is_empty() {
                    b.push(Block::Quote(inner));
                } else {
                    b.flush();
                }
            }
            "pre" | "listing" | "xmp" | "plaintext" => {
                let text = self.pre_text(ix);
                if text.trim().is_empty() {
                    b.flush();
                } else {
                    b.push(Block::Code {
                        lang: self.code_lang(ix),
                        text,
                    });
                }
            }
            "table" => self.table(ix, b, depth),
            "hr" => b.push(Block::Rule),
            "br" => b.inline.hard_break(),
            "img" => {
                if let Some(md) = self.image(ix) {
                    b.inline.push_md(&md);
                }
            }
            "a" => self.link(ix, b, depth),
            "strong" | "b" => self.wrap(ix, b, depth, "**"),
            "em" | "i" | "cite" | "dfn" => self.wrap(ix, b, depth, "*"),
            "del" | "s" | "strike" => self.wrap(ix, b, depth, "~~"),
            "code" | "kbd" | "samp" | "tt" => {
                if self.has_block[ix] {
                    self.children(ix, b, depth);
                } else {
                    let text = super::dom::collapse_ws(&self.visible_text(ix));
                    if !text.is_empty() {
                        b.inline.push_md(&code_span(&text));
                    }
                }
            }
            "q" => {
                b.inline.push_md("“");
                self.children(ix, b, depth);
                b.inline.push_md("”");
            }
            // A heading's button is its text: an accordion's question (`doc::main_content`
            // keeps it, and its answer panel, unless `PAYCALL_DOC_OFF=collapsed`).
            "button"
                if !super::main_content::off("collapsed")
                    && self.dom.nodes[ix].parent.is_some_and(|p| {
                        matches!(
                            self.dom.tag(p),
                            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" | "dt"
                        )
                    }) =>
            {
                self.children(ix, b, depth)
            }
            "script" | "style" | "noscript" | "template" | "head" | "title" | "meta" | "link"
            | "svg" | "math" | "select" | "option" | "button" | "input" | "textarea" | "iframe"
            | "object" | "embed" | "canvas" | "audio" | "video" | "map" => {}
            _ => self.children(ix, b, depth),
        }
    }

    /// Markdown of a subtree as one inline run (blocks inside are joined with spaces).
    fn inline_of(&self, ix: Ix, depth: usize) -> String {
        let mut sub = Builder::default();
        self.children(ix, &mut sub, depth);
        let blocks = sub.finish();
        let mut parts = Vec::new();
        flatten_inline(&blocks, &mut parts);
        parts.join(" ")
    }

    fn wrap(&self, ix: Ix, b: &mut Builder, depth: usize, marker: &str) {
        if self.has_block[ix] {
            return self.children(ix, b, depth);
        }
        let inner = self.inline_of(ix, depth);
        let inner = inner.trim();
        if inner.is_empty() {
            return;
        }
        // Whitespace just inside the element belongs outside the markers.
        let leading = self.dom.raw_text(ix).starts_with(char::is_whitespace);
        if leading {
            b.inline.pending_space = true;
        }
        if inner.contains('\n') || inner.starts_with(marker) || inner.ends_with(marker) {
            b.inline.push_md(inner);
        } else {
            b.inline.push_md(&format!("{marker}{inner}{marker}"));
        }
        if self.dom.raw_text(ix).ends_with(char::is_whitespace) {
            b.inline.pending_space = true;
        }
    }

    fn link(&self, ix: Ix, b: &mut Builder, depth: usize) {
        if self.has_block[ix] {
            // A link wrapping blocks (a teaser card): keep the blocks, drop the link.
            return self.children(ix, b, depth);
        }
        let inner = self.inline_of(ix, depth);
        let inner = inner.trim();
        if inner.is_empty() {
            return;
        }
        let href = self
            .dom
            .attr(ix, "href")
            .and_then(|h| self.resolve(h, true));
        if self.dom.raw_text(ix).starts_with(char::is_whitespace) {
            b.inline.pending_space = true;
        }
        match href {
            Some(url) if !inner.contains('\n') => {
                b.inline.push_md(&format!("[{inner}]({url})"));
            }
            _ => b.inline.push_md(inner),
        }
        if self.dom.raw_text(ix).ends_with(char::is_whitespace) {
            b.inline.pending_space = true;
        }
    }

    fn image(&self, ix: Ix) -> Option<String> {
        let el = self.dom.elem(ix)?;
        let src = [
            "src",
            "data-src",
            "data-lazy-src",
            "data-original",
            "data-url",
        ]
        .iter()
        .filter_map(|k| el.attr(k))
        .map(str::trim)
        .find(|s| !s.is_empty() && !s.starts_with("data:"))
        .or_else(|| {
            el.attr("srcset")
                .or_else(|| el.attr("data-srcset"))
                .and_then(|s| s.split(',').next())
                .and_then(|s| s.split_whitespace().next())
        })?;
        let url = self.resolve(src, false)?;
        let alt = el.attr("alt").or_else(|| el.attr("title")).unwrap_or("");
        let mut alt_md = String::new();
        escape_into(&super::dom::collapse_ws(alt), &mut alt_md);
        Some(format!("![{alt_md}]({url})"))
    }

    /// Absolute, markdown-safe URL; None for script links and empty ones.
    fn resolve(&self, raw: &str, is_link: bool) -> Option<String> {
        let raw = raw.trim();
        if raw.is_empty() {
            return None;
        }
        let lower = raw.to_ascii_lowercase();
        if lower.starts_with("javascript:") || lower.starts_with("vbscript:") {
            return None;
        }
        if is_link && lower.starts_with("data:") {
            return None;
        }
        let abs = match (Url::parse(raw), self.base) {
            (Ok(u), _) => u.to_string(),
            (Err(_), Some(base)) => base.join(raw).ok()?.to_string(),
            (Err(_), None) => raw.to_string(),
        };
        Some(
            abs.replace(' ', "%20")
                .replace('(', "%28")
                .replace(')', "%29")
                .replace('<', "%3C")
                .replace('>', "%3E"),
        )
    }

    fn list_items(&self, ix: Ix, depth: usize) -> Vec<Vec<Block>> {
        let mut items: Vec<Vec<Block>> = Vec::new();
        let mut loose = Builder::default();
        for &c in &self.dom.nodes[ix].children {
            if self.skip[c] {
                continue;
            }
            if self.dom.tag(c) == "li" {
                let stray = std::mem::take(&mut loose).finish();
                if !stray.is_empty() {
                    items.push(stray);
                }
                let mut sub = Builder::default();
                self.children(c, &mut sub, depth + 1);
                let item = sub.finish();
                if !item.is_empty() {
                    items.push(item);
                }
            } else {
                self.node(c, &mut loose, depth + 1);
            }
        }
        let stray = loose.finish();
        if !stray.is_empty() {
            items.push(stray);
        }
        items
    }

    fn pre_text(&self, ix: Ix) -> String {
        let mut s = String::new();
        let (mut i, end) = (ix, self.dom.nodes[ix].end);
        while i < end {
            if self.skip[i] {
                i = self.dom.nodes[i].end;
                continue;
            }
            match &self.dom.nodes[i].kind {
                Kind::Text(t) => s.push_str(t),
                Kind::Element(e) if e.tag == "br" => s.push('\n'),
                _ => {}
            }
            i += 1;
        }
        // The HTML parser already drops a newline right after <pre>; trailing ones are noise.
        let s = s.trim_end().to_string();
        s.trim_start_matches(['\n', '\r']).replace("\r\n", "\n")
    }

    fn code_lang(&self, ix: Ix) -> Option<String> {
        let mut nodes = vec![ix];
        if let Some(&c) = self.dom.nodes[ix].children.first() {
            nodes.push(c);
        }
        for n in nodes {
            let class = self.dom.attr(n, "class").unwrap_or("");
            for tok in class.split_whitespace() {
                let lang = tok
                    .strip_prefix("language-")
                    .or_else(|| tok.strip_prefix("lang-"));
                if let Some(l) = lang {
                    if !l.is_empty()
                        && l.chars()
                            .all(|c| c.is_ascii_alphanumeric() || "+-#_.".contains(c))
                    {
                        return Some(l.to_string());
                    }
                }
            }
        }
        None
    }

    /// Visible text of a subtree, skipping removed nodes (no escaping).
    fn visible_text(&self, ix: Ix) -> String {
        let mut s = String::new();
        let mut i = ix;
        let end = self.dom.nodes[ix].end;
        while i < end {
            if self.skip[i] {
                i = self.dom.nodes[i].end;
                continue;
            }
            match &self.dom.nodes[i].kind {
                Kind::Text(t) => s.push_str(t),
                Kind::Element(e) if is_block_tag(&e.tag) || e.tag == "br" => s.push(' '),
                _ => {}
            }
            i += 1;
        }
        s
    }

    fn table(&self, ix: Ix, b: &mut Builder, depth: usize) {
        // Rows of this table (not of nested tables).
        let mut rows: Vec<Ix> = Vec::new();
        let mut nested = false;
        let mut stack: Vec<Ix> = self.dom.nodes[ix].children.iter().rev().copied().collect();
        while let Some(n) = stack.pop() {
            if self.skip[n] {
                continue;
            }
            match self.dom.tag(n) {
                "tr" => rows.push(n),
                "table" => nested = true,
                "thead" | "tbody" | "tfoot" => {
                    stack.extend(self.dom.nodes[n].children.iter().rev().copied())
                }
                _ => {}
            }
            if self.dom.tag(n) == "tr"
                && (n..self.dom.nodes[n].end).any(|d| self.dom.tag(d) == "table")
            {
                nested = true;
            }
        }
        let cells_of = |r: Ix| -> Vec<Ix> {
            self.dom.nodes[r]
                .children
                .iter()
                .copied()
                .filter(|&c| !self.skip[c] && matches!(self.dom.tag(c), "td" | "th"))
                .collect()
        };
        let max_cols = rows.iter().map(|&r| cells_of(r).len()).max().unwrap_or(0);
        let long_cell = rows.iter().any(|&r| {
            cells_of(r)
                .iter()
                .any(|&c| self.visible_text(c).len() > 600)
        });
        let layout = nested
            || max_cols < 2
            || long_cell
            || self.dom.attr(ix, "role") == Some("presentation");
        if layout || depth > MAX_RENDER_DEPTH / 2 {
            b.flush();
            self.children(ix, b, depth);
            b.flush();
            return;
        }
        // Caption first, as a paragraph.
        for &c in &self.dom.nodes[ix].children {
            if self.dom.tag(c) == "caption" && !self.skip[c] {
                self.node(c, b, depth + 1);
            }
        }
        let mut grid: Vec<Vec<String>> = Vec::new();
        for &r in &rows {
            let mut row = Vec::new();
            for c in cells_of(r) {
                let text = self
                    .inline_of(c, depth + 2)
                    .replace("  \n", " ")
                    .replace('\n', " ")
                    .replace('|', "\\|");
                let span = self
                    .dom
                    .attr(c, "colspan")
                    .and_then(|s| s.trim().parse::<usize>().ok())
                    .unwrap_or(1)
                    .clamp(1, 50);
                row.push(text);
                for _ in 1..span {
                    row.push(String::new());
                }
            }
            if row.iter().any(|c| !c.is_empty()) {
                grid.push(row);
            }
        }
        if grid.is_empty() {
            return b.flush();
        }
        let width = grid.iter().map(Vec::len).max().unwrap_or(0).min(64);
        for row in &mut grid {
            row.resize(width, String::new());
        }
        b.push(Block::Table(grid));
    }
}

fn flatten_inline(blocks: &[Block], out: &mut Vec<String>) {
    for b in blocks {
        match b {
            Block::Para(t) | Block::Heading(_, t) => out.push(t.clone()),
            Block::List { items, .. } => items.iter().for_each(|i| flatten_inline(i, out)),
            Block::Quote(inner) => flatten_inline(inner, out),
            Block::Code { text, .. } => out.push(code_span(&super::dom::collapse_ws(text))),
            Block::Table(rows) => rows
                .iter()
                .for_each(|r| out.push(r.join(" ").trim().to_string())),
            Block::Rule => {}
        }
    }
}

fn code_span(text: &str) -> String {
    let longest = longest_run(text, '`');
    let fence = "`".repeat(longest + 1);
    if longest > 0 || text.starts_with('`') || text.ends_with('`') {
        format!("{fence} {text} {fence}")
    } else {
        format!("{fence}{text}{fence}")
    }
}

fn longest_run(text: &str, ch: char) -> usize {
    let (mut best, mut cur) = (0, 0);
    for c in text.chars() {
        if c == ch {
            cur += 1;
            best = best.max(cur);
        } else {
            cur = 0;
        }
    }
    best
}

/// Escapes characters that would otherwise become markdown syntax inside a line.
fn escape_into(text: &str, out: &mut String) {
    // Most words hold none of these: copied whole (a vector of chars per word and a push per
    // char were 3 % of a batch conversion).
    if !text
        .bytes()
        .any(|b| matches!(b, b'\\' | b'`' | b'*' | b'[' | b']' | b'<' | b'_'))
    {
        out.push_str(text);
        return;
    }
    let mut prev = None;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' | '`' | '*' | '[' | ']' | '<' => {
                out.push('\\');
                out.push(c);
            }
            '_' => {
                // Intraword underscores are literal in CommonMark; escape only at word edges.
                let inner = prev.is_some_and(char::is_alphanumeric)
                    && chars.peek().is_some_and(|c| c.is_alphanumeric());
                if !inner {
                    out.push('\\');
                }
                out.push(c);
            }
            _ => out.push(c),
        }
        prev = Some(c);
    }
}

/// Escapes what only matters at the start of a line: headings, quotes, list markers, rules.
fn escape_line_starts(para: &str) -> String {
    para.split('\n')
        .map(|line| {
            let t = line.trim_start();
            let bytes = t.as_bytes();
            let needs = match bytes.first() {
                Some(b'#') | Some(b'>') | Some(b'=') | Some(b'|') => true,
                Some(b'-') | Some(b'+') => bytes.len() == 1 || bytes[1] == b' ' || t == "---",
                Some(b'~') => t.starts_with("~~~"),
                Some(c) if c.is_ascii_digit() => {
                    let digits = bytes.iter().take_while(|b| b.is_ascii_digit()).count();
                    matches!(bytes.get(digits), Some(b'.') | Some(b')'))
                        && matches!(bytes.get(digits + 1), None | Some(b' '))
                }
                _ => false,
            };
            if !needs {
                return line.to_string();
            }
            if bytes[0].is_ascii_digit() {
                let digits = bytes.iter().take_while(|b| b.is_ascii_digit()).count();
                format!("{}\\{}", &t[..digits], &t[digits..])
            } else {
                format!("\\{t}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn write_blocks(blocks: &[Block], out: &mut String) {
    for (i, b) in blocks.iter().enumerate() {
        if i > 0 {
            out.push_str("\n\n");
        }
        write_block(b, out);
    }
}

fn write_block(b: &Block, out: &mut String) {
    match b {
        Block::Para(t) => out.push_str(t),
        Block::Heading(level, t) => {
            out.push_str(&"#".repeat(*level as usize));
            out.push(' ');
            out.push_str(t);
        }
        Block::Rule => out.push_str("---"),
        Block::Code { lang, text } => {
            let fence = "`".repeat(longest_run(text, '`').max(2) + 1);
            out.push_str(&fence);
            if let Some(l) = lang {
                out.push_str(l);
            }
            out.push('\n');
            out.push_str(text);
            out.push('\n');
            out.push_str(&fence);
        }
        Block::Quote(inner) => {
            let mut s = String::new();
            write_blocks(inner, &mut s);
            let quoted: Vec<String> = s
                .split('\n')
                .map(|l| {
                    if l.is_empty() {
                        ">".to_string()
                    } else {
                        format!("> {l}")
                    }
                })
                .collect();
            out.push_str(&quoted.join("\n"));
        }
        Block::List {
            ordered,
            start,
            items,
        } => {
            for (n, item) in items.iter().enumerate() {
                if n > 0 {
                    out.push('\n');
                }
                let marker = if *ordered {
                    format!("{}. ", start + n as u64)
                } else {
                    "- ".to_string()
                };
                let indent = " ".repeat(marker.len());
                let mut s = String::new();
                write_blocks(item, &mut s);
                for (k, line) in s.split('\n').enumerate() {
                    if k == 0 {
                        out.push_str(&marker);
                        out.push_str(line);
                    } else {
                        out.push('\n');
                        if !line.is_empty() {
                            out.push_str(&indent);
                            out.push_str(line);
                        }
                    }
                }
            }
        }
        Block::Table(rows) => {
            let width = rows.first().map_or(0, Vec::len);
            for (r, row) in rows.iter().enumerate() {
                out.push('|');
                for cell in row {
                    out.push(' ');
                    out.push_str(cell);
                    out.push_str(" |");
                }
                if r == 0 {
                    out.push_str("\n|");
                    for _ in 0..width {
                        out.push_str(" --- |");
                    }
                }
                if r + 1 < rows.len() {
                    out.push('\n');
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_syntax_is_escaped_and_intraword_underscores_are_not() {
        let esc = |t: &str| {
            let mut out = String::new();
            escape_into(t, &mut out);
            out
        };
        assert_eq!(esc("plain"), "plain");
        assert_eq!(esc("snake_case"), "snake_case");
        assert_eq!(esc("é_ü"), "é_ü");
        assert_eq!(esc("_lead"), "\\_lead");
        assert_eq!(esc("trail_"), "trail\\_");
        assert_eq!(esc("a__b"), "a\\_\\_b");
        assert_eq!(esc("a*b[c]<d`e\\f"), "a\\*b\\[c\\]\\<d\\`e\\\\f");
    }

    fn md(html: &str, base: Option<&str>) -> String {
        let dom = Dom::parse(html, &Default::default()).unwrap();
        let skip = vec![false; dom.nodes.len()];
        let base = base.map(|b| Url::parse(b).unwrap());
        render(&dom, &[0], &skip, base.as_ref())
    }

    #[test]
    fn paragraphs_headings_and_emphasis() {
        let out = md(
            "<h2>Title</h2><p>Some <b>bold</b> and <em>it</em> text.</p><p>Next</p>",
            None,
        );
        assert_eq!(out, "## Title\n\nSome **bold** and *it* text.\n\nNext");
    }

    #[test]
    fn links_and_images_are_absolute() {
        let out = md(
            "<p>See <a href='/x?a=1'>this page</a>. <img src='img/p.png' alt='A pic'></p>",
            Some("https://ex.com/dir/page.html"),
        );
        assert_eq!(
            out,
            "See [this page](https://ex.com/x?a=1). ![A pic](https://ex.com/dir/img/p.png)"
        );
    }

    #[test]
    fn nested_lists() {
        let out = md(
            "<ul><li>one<ul><li>inner</li></ul></li><li>two</li></ul><ol start=3><li>a<li>b</ol>",
            None,
        );
        assert_eq!(out, "- one\n\n  - inner\n- two\n\n3. a\n4. b");
    }

    #[test]
    fn pre_keeps_line_breaks_and_language() {
        let out = md(
            "<pre><code class='language-rust'>fn main() {\n    x();\n}\n</code></pre>",
            None,
        );
        assert_eq!(out, "```rust\nfn main() {\n    x();\n}\n```");
    }

    #[test]
    fn table_without_header_cells() {
        let out = md(
            "<table><tr><td>a</td><td>b|c</td></tr><tr><td colspan=2>wide</td></tr></table>",
            None,
        );
        assert_eq!(out, "| a | b\\|c |\n| --- | --- |\n| wide |  |");
    }

    #[test]
    fn blockquote_and_breaks() {
        let out = md(
            "<blockquote><p>line one<br>line two</p><p>p2</p></blockquote>",
            None,
        );
        assert_eq!(out, "> line one  \n> line two\n>\n> p2");
    }

    #[test]
    fn markdown_syntax_in_text_is_escaped() {
        let out = md(
            "<p>1. not a list *nor* [a link] snake_case _x_</p><p># no</p>",
            None,
        );
        assert_eq!(
            out,
            "1\\. not a list \\*nor\\* \\[a link\\] snake_case \\_x\\_\n\n\\# no"
        );
    }
}
