//! The one way untrusted HTML becomes a tree: html5ever through scraper's sink, with a node
//! budget and a deadline enforced inside the parse.
//!
//! Why a budget on nodes and not only on bytes: the HTML tree builder may create many nodes per
//! input byte. After `</div>` closes 500 distinct open formatting elements (`<b c=1>`…), every
//! following `<p>x` makes the builder *reconstruct* all 500 inside the new paragraph (HTML
//! spec, "reconstruct the active formatting elements"): a 200 KB page becomes ~24 million
//! elements and ~10 GB. Real pages create well under one node per input byte (measured over the
//! 441 pages of the extraction corpora: median 0.014–0.019, max 0.13), so the budget is
//! `min_nodes + nodes_per_byte × input bytes`.
//!
//! The budget is counted by a wrapper around scraper's `TreeSink` at the point where nodes are
//! made. Past it the sink *freezes*: later nodes are stand-ins (one per element name, never
//! attached) and tree edits are ignored, so memory stops growing at once; the input is fed in
//! chunks and parsing stops at the end of the chunk, with [`Refused::TooManyNodes`]. The
//! deadline is checked between chunks. The input bounds (`super::input_bounds`) already keep the work per
//! chunk small by flattening deep nesting and capping open formatting elements.

use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::time::Instant;

use html5ever::tendril::{StrTendril, TendrilSink};
use html5ever::tree_builder::{ElementFlags, NodeOrText, QuirksMode, TreeSink};
use html5ever::{Attribute, QualName};
use scraper::{Html, HtmlTreeSink};

use super::dom::Dom;
use super::dom_sink::DomSink;

/// Input fed to the tokenizer at once; the budget and deadline are checked between chunks.
const CHUNK_BYTES: usize = 8 * 1024;

/// Limits for one parse. `Default` is the service's: 4,096 nodes plus one per input byte, no
/// deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Nodes allowed per byte of input (on top of `min_nodes`).
    pub nodes_per_byte: usize,
    /// Nodes always allowed (the implied `html`/`head`/`body` and friends of tiny inputs).
    pub min_nodes: usize,
    /// The parse is abandoned (`Refused::Timeout`) when this passes.
    pub deadline: Option<Instant>,
}

pub const DEFAULT_NODES_PER_BYTE: usize = 1;
pub const DEFAULT_MIN_NODES: usize = 4096;

impl Default for Budget {
    fn default() -> Self {
        Budget {
            nodes_per_byte: DEFAULT_NODES_PER_BYTE,
            min_nodes: DEFAULT_MIN_NODES,
            deadline: None,
        }
    }
}

impl Budget {
    pub fn with_deadline(self, deadline: Instant) -> Budget {
        Budget {
            deadline: Some(deadline),
            ..self
        }
    }

    /// Most nodes a parse of `input_bytes` may create.
    pub fn max_nodes(&self, input_bytes: usize) -> usize {
        self.min_nodes
            .saturating_add(input_bytes.saturating_mul(self.nodes_per_byte))
    }

    fn expired(&self) -> bool {
        self.deadline.is_some_and(|d| Instant::now() >= d)
    }
}

/// Why a document was not parsed. Callers answer these as errors (status ≥ 400), so nothing is
/// charged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// The tree would need more nodes than the budget allows for this input.
    TooManyNodes { limit: usize, input_bytes: usize },
    /// The deadline passed while parsing.
    Timeout,
}

impl Refused {
    /// Stable error code.
    pub fn code(&self) -> &'static str {
        match self {
            Refused::TooManyNodes { .. } => "html_too_complex",
            Refused::Timeout => "parse_timeout",
        }
    }
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::TooManyNodes { limit, input_bytes } => write!(
                f,
                "the page's {input_bytes} bytes build a tree of more than {limit} nodes (misnested formatting elements reconstructed over and over); it was not parsed"
            ),
            Refused::Timeout => write!(f, "the page could not be parsed within the time budget"),
        }
    }
}

impl std::error::Error for Refused {}

/// Parses a whole document under `budget`. Call [`super::input_bounds::bound_input`] first on untrusted
/// input (it keeps the tree builder's work per chunk small).
pub fn parse_document(html: &str, budget: &Budget) -> Result<Html, Refused> {
    parse_document_sized(html, html.len(), budget)
}

/// [`parse_document`] with the node budget counted for `input_bytes` rather than `html.len()`:
/// for input the caller shortened on purpose (`input_bounds::bound_input_for_text`), so that
/// the budget stays what the page itself is allowed.
pub fn parse_document_sized(
    html: &str,
    input_bytes: usize,
    budget: &Budget,
) -> Result<Html, Refused> {
    parse_into(
        HtmlTreeSink::new(Html::new_document()),
        html,
        input_bytes,
        budget,
    )
}

/// [`parse_document_sized`] straight into extraction's [`Dom`] arena (no scraper tree in
/// between, see `super::dom_sink`), under the same budget.
pub(super) fn parse_dom_sized(
    html: &str,
    input_bytes: usize,
    budget: &Budget,
) -> Result<Dom, Refused> {
    parse_into(DomSink::default(), html, input_bytes, budget)
}

/// Drives html5ever into `sink`, counted by [`CountingSink`], chunk by chunk.
fn parse_into<S: TreeSink>(
    sink: S,
    html: &str,
    input_bytes: usize,
    budget: &Budget,
) -> Result<S::Output, Refused> {
    if budget.expired() {
        return Err(Refused::Timeout);
    }
    let limit = budget.max_nodes(input_bytes);
    let sink = CountingSink::new(sink, limit);
    // The tokenizer drops a U+FEFF at the front of *every* feed when `discard_bom` is on, so
    // fed in chunks a page would lose the zero-width no-break spaces that happen to start a
    // chunk. Only the document's own leading one is a byte order mark.
    let opts = html5ever::ParseOpts {
        tokenizer: html5ever::tokenizer::TokenizerOpts {
            discard_bom: false,
            ..Default::default()
        },
        ..Default::default()
    };
    let mut parser = html5ever::driver::parse_document(sink, opts);
    let mut rest = html.strip_prefix('\u{feff}').unwrap_or(html);
    while !rest.is_empty() {
        let mut cut = rest.len().min(CHUNK_BYTES);
        while !rest.is_char_boundary(cut) {
            cut -= 1;
        }
        parser.process(StrTendril::from_slice(&rest[..cut]));
        rest = &rest[cut..];
        if parser.tokenizer.sink.sink.frozen.get() {
            return Err(Refused::TooManyNodes { limit, input_bytes });
        }
        if budget.expired() {
            return Err(Refused::Timeout);
        }
    }
    let (doc, frozen) = parser.finish();
    if frozen {
        return Err(Refused::TooManyNodes { limit, input_bytes });
    }
    Ok(doc)
}

/// A sink (scraper's, or extraction's [`DomSink`]) counting the nodes it makes and freezing
/// past `limit`.
struct CountingSink<S: TreeSink> {
    inner: S,
    made: Cell<usize>,
    limit: usize,
    frozen: Cell<bool>,
    /// Stand-ins handed out once frozen, one per element name so the tree builder still sees
    /// the names it asked for; never attached to the tree.
    stand_ins: RefCell<HashMap<QualName, S::Handle>>,
}

impl<S: TreeSink> CountingSink<S> {
    fn new(inner: S, limit: usize) -> Self {
        CountingSink {
            inner,
            made: Cell::new(0),
            limit,
            frozen: Cell::new(false),
            stand_ins: RefCell::new(HashMap::new()),
        }
    }

    /// Counts one new node; false (and frozen from now on) when over the budget.
    fn admit(&self) -> bool {
        if self.frozen.get() {
            return false;
        }
        let n = self.made.get() + 1;
        self.made.set(n);
        if n > self.limit {
            self.frozen.set(true);
            return false;
        }
        true
    }

    fn stand_in(&self, name: QualName, flags: ElementFlags) -> S::Handle {
        if let Some(id) = self.stand_ins.borrow().get(&name) {
            return id.clone();
        }
        let id = self.inner.create_element(name.clone(), Vec::new(), flags);
        self.stand_ins.borrow_mut().insert(name, id.clone());
        id
    }
}

impl<S: TreeSink> TreeSink for CountingSink<S> {
    type Handle = S::Handle;
    type Output = (S::Output, bool);
    type ElemName<'a>
        = S::ElemName<'a>
    where
        S: 'a;

    fn finish(self) -> (S::Output, bool) {
        let frozen = self.frozen.get();
        (self.inner.finish(), frozen)
    }

    fn parse_error(&self, msg: Cow<'static, str>) {
        self.inner.parse_error(msg)
    }

    fn get_document(&self) -> S::Handle {
        self.inner.get_document()
    }

    fn elem_name<'a>(&'a self, target: &'a S::Handle) -> S::ElemName<'a> {
        self.inner.elem_name(target)
    }

    fn create_element(
        &self,
        name: QualName,
        attrs: Vec<Attribute>,
        flags: ElementFlags,
    ) -> S::Handle {
        if self.admit() {
            self.inner.create_element(name, attrs, flags)
        } else {
            self.stand_in(name, flags)
        }
    }

    fn create_comment(&self, text: StrTendril) -> S::Handle {
        if self.admit() {
            self.inner.create_comment(text)
        } else {
            self.stand_in(
                QualName::new(None, html5ever::ns!(html), html5ever::local_name!("span")),
                ElementFlags::default(),
            )
        }
    }

    fn create_pi(&self, target: StrTendril, data: StrTendril) -> S::Handle {
        if self.admit() {
            self.inner.create_pi(target, data)
        } else {
            self.stand_in(
                QualName::new(None, html5ever::ns!(html), html5ever::local_name!("span")),
                ElementFlags::default(),
            )
        }
    }

    fn append(&self, parent: &S::Handle, child: NodeOrText<S::Handle>) {
        // A text append may make a node (or grow the last text node): count it either way.
        if matches!(child, NodeOrText::AppendText(_)) && !self.admit() {
            return;
        }
        if !self.frozen.get() {
            self.inner.append(parent, child)
        }
    }

    fn append_based_on_parent_node(
        &self,
        element: &S::Handle,
        prev_element: &S::Handle,
        child: NodeOrText<S::Handle>,
    ) {
        if matches!(child, NodeOrText::AppendText(_)) && !self.admit() {
            return;
        }
        if !self.frozen.get() {
            self.inner
                .append_based_on_parent_node(element, prev_element, child)
        }
    }

    fn append_doctype_to_document(
        &self,
        name: StrTendril,
        public_id: StrTendril,
        system_id: StrTendril,
    ) {
        if self.admit() {
            self.inner
                .append_doctype_to_document(name, public_id, system_id)
        }
    }

    fn mark_script_already_started(&self, node: &S::Handle) {
        self.inner.mark_script_already_started(node)
    }

    fn pop(&self, node: &S::Handle) {
        self.inner.pop(node)
    }

    fn get_template_contents(&self, target: &S::Handle) -> S::Handle {
        self.inner.get_template_contents(target)
    }

    fn same_node(&self, x: &S::Handle, y: &S::Handle) -> bool {
        self.inner.same_node(x, y)
    }

    fn set_quirks_mode(&self, mode: QuirksMode) {
        self.inner.set_quirks_mode(mode)
    }

    fn append_before_sibling(&self, sibling: &S::Handle, new_node: NodeOrText<S::Handle>) {
        if matches!(new_node, NodeOrText::AppendText(_)) && !self.admit() {
            return;
        }
        if !self.frozen.get() {
            self.inner.append_before_sibling(sibling, new_node)
        }
    }

    fn add_attrs_if_missing(&self, target: &S::Handle, attrs: Vec<Attribute>) {
        if !self.frozen.get() {
            self.inner.add_attrs_if_missing(target, attrs)
        }
    }

    fn associate_with_form(
        &self,
        target: &S::Handle,
        form: &S::Handle,
        nodes: (&S::Handle, Option<&S::Handle>),
    ) {
        self.inner.associate_with_form(target, form, nodes)
    }

    fn remove_from_parent(&self, target: &S::Handle) {
        if !self.frozen.get() {
            self.inner.remove_from_parent(target)
        }
    }

    fn reparent_children(&self, node: &S::Handle, new_parent: &S::Handle) {
        if !self.frozen.get() {
            self.inner.reparent_children(node, new_parent)
        }
    }

    fn is_mathml_annotation_xml_integration_point(&self, handle: &S::Handle) -> bool {
        self.inner
            .is_mathml_annotation_xml_integration_point(handle)
    }

    fn allow_declarative_shadow_roots(&self, intended_parent: &S::Handle) -> bool {
        self.inner.allow_declarative_shadow_roots(intended_parent)
    }

    fn attach_declarative_shadow(
        &self,
        location: &S::Handle,
        template: &S::Handle,
        attrs: &[Attribute],
    ) -> bool {
        !self.frozen.get()
            && self
                .inner
                .attach_declarative_shadow(location, template, attrs)
    }

    fn maybe_clone_an_option_into_selectedcontent(&self, option: &S::Handle) {
        if !self.frozen.get() {
            self.inner
                .maybe_clone_an_option_into_selectedcontent(option)
        }
    }
}

/// The adoption-agency page of issue 21: `n` distinct open formatting elements closed by a
/// `</div>`, then `<p>x` until `bytes`. Each paragraph reconstructs all `n`.
pub fn adoption_agency_page(n: usize, bytes: usize) -> String {
    let mut s = String::from("<div>");
    for i in 0..n {
        s.push_str(&format!("<b c={i}>"));
    }
    s.push_str("</div>");
    while s.len() + 4 <= bytes {
        s.push_str("<p>x");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn count(h: &Html) -> usize {
        h.tree.nodes().count()
    }

    #[test]
    fn ordinary_pages_parse_as_scraper_does() {
        let html =
            "<!doctype html><html><head><title>T</title></head><body><p>a <b>b</b><!-- c -->\
                    <table><tr><td>1<td>2</table><template><i>t</i></template></body></html>";
        let ours = parse_document(html, &Budget::default()).unwrap();
        let theirs = Html::parse_document(html);
        assert_eq!(ours.root_element().html(), theirs.root_element().html());
    }

    #[test]
    fn chunk_boundaries_do_not_change_the_tree() {
        // Multi-byte characters and a tag across the 8 KiB boundaries.
        let html = format!(
            "<p>{}<a href='x'>é</a>{}</p>",
            "é".repeat(4095),
            "ü".repeat(9000)
        );
        let ours = parse_document(&html, &Budget::default()).unwrap();
        let theirs = Html::parse_document(&html);
        assert_eq!(ours.root_element().html(), theirs.root_element().html());
        // A zero-width no-break space (U+FEFF) that starts a chunk is text, not a BOM.
        let html = format!(
            "\u{feff}<p>{}\u{feff} / \u{feff}</p>",
            "x".repeat(CHUNK_BYTES - 6)
        );
        assert_eq!(html.find(" / ").unwrap(), CHUNK_BYTES + 3);
        let ours = parse_document(&html, &Budget::default()).unwrap();
        let theirs = Html::parse_document(&html);
        assert_eq!(ours.root_element().html(), theirs.root_element().html());
    }

    #[test]
    fn reconstruction_blow_up_is_refused_within_the_budget() {
        // Without the input bounds' formatting cap, straight into the parser: the sink alone bounds it.
        let html = adoption_agency_page(500, 200_000);
        let t = Instant::now();
        let err = parse_document(&html, &Budget::default()).unwrap_err();
        assert_eq!(err.code(), "html_too_complex");
        assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    }

    #[test]
    fn the_budget_is_exact_at_its_edge() {
        let html = "<p>x".repeat(100);
        let made = count(&parse_document(&html, &Budget::default()).unwrap());
        // The tree holds every node made except the doctype-less document root itself.
        let tight = Budget {
            nodes_per_byte: 0,
            min_nodes: made - 1,
            deadline: None,
        };
        assert!(parse_document(&html, &tight).is_ok());
        let under = Budget {
            min_nodes: made - 2,
            ..tight
        };
        assert_eq!(
            parse_document(&html, &under).unwrap_err(),
            Refused::TooManyNodes {
                limit: made - 2,
                input_bytes: html.len()
            }
        );
    }

    #[test]
    fn a_passed_deadline_refuses() {
        let b = Budget::default().with_deadline(Instant::now());
        assert_eq!(parse_document("<p>x", &b).unwrap_err(), Refused::Timeout);
    }
}
