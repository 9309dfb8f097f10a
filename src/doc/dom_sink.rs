//! html5ever's tree builder writing straight into a linked arena that becomes a [`Dom`].
//!
//! Extraction used to build scraper's tree and then copy it into the [`Dom`] arena
//! (`Dom::from_html`): two trees per page, the first only to be walked once and dropped. The
//! copy, scraper's node bookkeeping and the drop were about a seventh of a conversion
//! (docs/doc.md, "Speed"). This sink makes the same tree scraper's sink makes — the same tree
//! edits, text merged the same way, a `<template>`'s contents as its first child, attributes
//! in scraper's order — and [`DomSink::finish`] lays it out in document order once.
//! `parse::parse_dom_sized` wraps it in the node budget like any other sink;
//! `markdown::sink_tree_differs` checks it against scraper's tree on any page.

use std::borrow::Cow;
use std::cell::{Ref, RefCell};

use html5ever::tendril::StrTendril;
use html5ever::tree_builder::{ElementFlags, NodeOrText, QuirksMode, TreeSink};
use html5ever::{Attribute, QualName};

use super::dom::{Dom, Elem, Ix, Kind, Node};

/// A node while the tree is being built: linked to its neighbours, so that the tree builder's
/// moves (adoption agency, foster parenting) are O(1).
#[derive(Debug)]
struct Raw {
    parent: Option<Ix>,
    first_child: Option<Ix>,
    last_child: Option<Ix>,
    prev: Option<Ix>,
    next: Option<Ix>,
    kind: RawKind,
}

#[derive(Debug)]
enum RawKind {
    Document,
    /// A `<template>`'s contents (scraper's `Fragment`).
    Fragment,
    Element(QualName, Vec<Attribute>),
    Text(StrTendril),
    /// Comments and processing instructions: kept while building (the tree builder holds
    /// handles to them), left out of the [`Dom`] as `Dom::from_html` leaves them out.
    Other,
}

/// The sink. Handles are arena indices; index 0 is the document.
#[derive(Debug)]
pub struct DomSink {
    nodes: RefCell<Vec<Raw>>,
}

impl Default for DomSink {
    fn default() -> Self {
        DomSink {
            nodes: RefCell::new(vec![Raw::new(RawKind::Document)]),
        }
    }
}

/// What `elem_name` answers for a handle that is not an element (the tree builder never asks;
/// scraper's sink would panic).
fn no_name() -> &'static QualName {
    static NAME: std::sync::OnceLock<QualName> = std::sync::OnceLock::new();
    NAME.get_or_init(|| QualName::new(None, html5ever::ns!(html), html5ever::local_name!("")))
}

impl Raw {
    fn new(kind: RawKind) -> Raw {
        Raw {
            parent: None,
            first_child: None,
            last_child: None,
            prev: None,
            next: None,
            kind,
        }
    }
}

/// Tree edits on the arena (the same operations as ego_tree's that scraper's sink uses).
fn new_node(nodes: &mut Vec<Raw>, kind: RawKind) -> Ix {
    nodes.push(Raw::new(kind));
    nodes.len() - 1
}

fn detach(nodes: &mut [Raw], ix: Ix) {
    let Some(parent) = nodes[ix].parent.take() else {
        return;
    };
    let (prev, next) = (nodes[ix].prev.take(), nodes[ix].next.take());
    match prev {
        Some(p) => nodes[p].next = next,
        None => nodes[parent].first_child = next,
    }
    match next {
        Some(n) => nodes[n].prev = prev,
        None => nodes[parent].last_child = prev,
    }
}

fn append_child(nodes: &mut [Raw], parent: Ix, child: Ix) {
    detach(nodes, child);
    let last = nodes[parent].last_child;
    nodes[child].parent = Some(parent);
    nodes[child].prev = last;
    match last {
        Some(l) => nodes[l].next = Some(child),
        None => nodes[parent].first_child = Some(child),
    }
    nodes[parent].last_child = Some(child);
}

/// Puts `child` just before `sibling`, which has a parent.
fn insert_before(nodes: &mut [Raw], sibling: Ix, child: Ix) {
    detach(nodes, child);
    let Some(parent) = nodes[sibling].parent else {
        return;
    };
    let prev = nodes[sibling].prev;
    nodes[child].parent = Some(parent);
    nodes[child].prev = prev;
    nodes[child].next = Some(sibling);
    nodes[sibling].prev = Some(child);
    match prev {
        Some(p) => nodes[p].next = Some(child),
        None => nodes[parent].first_child = Some(child),
    }
}

/// Appends `text` to `at` when it is a text node; false otherwise.
fn merge_text(nodes: &mut [Raw], at: Option<Ix>, text: &StrTendril) -> bool {
    match at.map(|ix| &mut nodes[ix].kind) {
        Some(RawKind::Text(t)) => {
            t.push_tendril(text);
            true
        }
        _ => false,
    }
}

impl DomSink {
    /// The arena in document order. Names are lower-cased (they already are outside foreign
    /// content), attribute names are their local part, comments and processing instructions
    /// are dropped with nothing below them — all as `Dom::from_html` copies scraper's tree.
    fn into_dom(self) -> Dom {
        let mut raw = self.nodes.into_inner();
        let lower = |s: &str| {
            if s.bytes().any(|c| c.is_ascii_uppercase()) {
                s.to_ascii_lowercase()
            } else {
                s.to_string()
            }
        };
        let mut nodes: Vec<Node> = Vec::with_capacity(raw.len());
        // (raw node, parent index in `nodes`); the next sibling is pushed before the first
        // child so that the subtree is laid out first.
        let mut stack = vec![(0, None::<Ix>)];
        while let Some((r, parent)) = stack.pop() {
            let last_child = raw[r].last_child;
            let kind = match std::mem::replace(&mut raw[r].kind, RawKind::Other) {
                RawKind::Document | RawKind::Fragment => Kind::Document,
                RawKind::Element(name, mut attrs) => {
                    // scraper keeps attributes sorted by name; `Elem::attr` takes the first of
                    // two that share a local name (`href`, `xlink:href`), so keep its order.
                    attrs.sort_unstable_by(|a, b| a.name.cmp(&b.name));
                    Kind::Element(Elem {
                        tag: lower(&name.local),
                        attrs: attrs
                            .into_iter()
                            .map(|a| (lower(&a.name.local), String::from(&*a.value)))
                            .collect(),
                    })
                }
                RawKind::Text(t) => Kind::Text(String::from(&*t)),
                RawKind::Other => continue,
            };
            let ix = nodes.len();
            if let Some(p) = parent {
                nodes[p].children.push(ix);
            }
            // Children pushed last to first, so that they pop in order.
            let before = stack.len();
            let mut kid = last_child;
            while let Some(c) = kid {
                stack.push((c, Some(ix)));
                kid = raw[c].prev;
            }
            nodes.push(Node {
                parent,
                // Comments among them are skipped later: at most a little room too much.
                children: Vec::with_capacity(stack.len() - before),
                end: ix + 1,
                kind,
            });
        }
        for ix in (0..nodes.len()).rev() {
            if let Some(&last) = nodes[ix].children.last() {
                nodes[ix].end = nodes[last].end;
            }
        }
        Dom { nodes }
    }
}

impl TreeSink for DomSink {
    type Handle = Ix;
    type Output = Dom;
    type ElemName<'a> = Ref<'a, QualName>;

    fn finish(self) -> Dom {
        self.into_dom()
    }

    fn parse_error(&self, _msg: Cow<'static, str>) {}

    fn get_document(&self) -> Ix {
        0
    }

    fn elem_name<'a>(&'a self, target: &'a Ix) -> Ref<'a, QualName> {
        Ref::map(self.nodes.borrow(), |n| match &n[*target].kind {
            RawKind::Element(name, _) => name,
            _ => no_name(),
        })
    }

    fn create_element(&self, name: QualName, attrs: Vec<Attribute>, _flags: ElementFlags) -> Ix {
        let template =
            name.ns == html5ever::ns!(html) && name.local == html5ever::local_name!("template");
        let nodes = &mut *self.nodes.borrow_mut();
        let ix = new_node(nodes, RawKind::Element(name, attrs));
        if template {
            let contents = new_node(nodes, RawKind::Fragment);
            append_child(nodes, ix, contents);
        }
        ix
    }

    fn create_comment(&self, _text: StrTendril) -> Ix {
        new_node(&mut self.nodes.borrow_mut(), RawKind::Other)
    }

    fn create_pi(&self, _target: StrTendril, _data: StrTendril) -> Ix {
        new_node(&mut self.nodes.borrow_mut(), RawKind::Other)
    }

    fn append(&self, parent: &Ix, child: NodeOrText<Ix>) {
        let nodes = &mut *self.nodes.borrow_mut();
        match child {
            NodeOrText::AppendNode(ix) => append_child(nodes, *parent, ix),
            NodeOrText::AppendText(text) => {
                let last = nodes[*parent].last_child;
                if !merge_text(nodes, last, &text) {
                    let ix = new_node(nodes, RawKind::Text(text));
                    append_child(nodes, *parent, ix);
                }
            }
        }
    }

    fn append_based_on_parent_node(&self, element: &Ix, prev_element: &Ix, child: NodeOrText<Ix>) {
        let has_parent = self.nodes.borrow()[*element].parent.is_some();
        if has_parent {
            self.append_before_sibling(element, child)
        } else {
            self.append(prev_element, child)
        }
    }

    fn append_doctype_to_document(&self, _: StrTendril, _: StrTendril, _: StrTendril) {}

    fn get_template_contents(&self, target: &Ix) -> Ix {
        // Made with the element; a non-template handle (never asked) gets itself.
        self.nodes.borrow()[*target].first_child.unwrap_or(*target)
    }

    fn same_node(&self, x: &Ix, y: &Ix) -> bool {
        x == y
    }

    fn set_quirks_mode(&self, _mode: QuirksMode) {}

    fn append_before_sibling(&self, sibling: &Ix, new_node_or_text: NodeOrText<Ix>) {
        let nodes = &mut *self.nodes.borrow_mut();
        if let NodeOrText::AppendNode(ix) = new_node_or_text {
            detach(nodes, ix);
        }
        if nodes[*sibling].parent.is_none() {
            return;
        }
        match new_node_or_text {
            NodeOrText::AppendNode(ix) => insert_before(nodes, *sibling, ix),
            NodeOrText::AppendText(text) => {
                let prev = nodes[*sibling].prev;
                if !merge_text(nodes, prev, &text) {
                    let ix = new_node(nodes, RawKind::Text(text));
                    insert_before(nodes, *sibling, ix);
                }
            }
        }
    }

    fn add_attrs_if_missing(&self, target: &Ix, attrs: Vec<Attribute>) {
        if let RawKind::Element(_, have) = &mut self.nodes.borrow_mut()[*target].kind {
            for a in attrs {
                if !have.iter().any(|h| h.name == a.name) {
                    have.push(a);
                }
            }
        }
    }

    fn remove_from_parent(&self, target: &Ix) {
        detach(&mut self.nodes.borrow_mut(), *target);
    }

    fn reparent_children(&self, node: &Ix, new_parent: &Ix) {
        let nodes = &mut *self.nodes.borrow_mut();
        while let Some(child) = nodes[*node].first_child {
            append_child(nodes, *new_parent, child);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::parse::Budget;
    use super::*;

    fn same_as_scraper(html: &str) {
        let ours = Dom::parse(html, &Budget::default()).unwrap();
        let theirs = Dom::from_html(&scraper::Html::parse_document(html));
        assert_eq!(ours, theirs, "{html}");
    }

    #[test]
    fn builds_scrapers_tree() {
        for html in [
            "",
            "plain text",
            "<!doctype html><html><head><title>T</title></head><body><p>a <b>b</b><!-- c --> d</p>",
            // Foster parenting: text and elements misplaced in a table go before it.
            "<table>x<tr><td>1<td>2</td>y<b>z</b></tr></table>after",
            "<table><tr><td>a</td></tr><p>moved</p>tail</table>",
            // The adoption agency: misnested formatting elements are cloned and moved.
            "<p>1<b>2<i>3</b>4</i>5</p><div><a href=x>a<div>b</a>c</div>",
            "<b><p>x</b>y</p>",
            // A template's contents, nested templates, and text merged across moves.
            "<template><i>t</i><template>u</template></template><p>x<!--c-->y",
            // Foreign content: attribute names adjusted and lower-cased here, xlink's prefix.
            "<svg viewBox='0 0 1 1'><a xlink:href=x href=y>l</a><foreignObject><p>f</p></foreignObject></svg>",
            "<math><annotation-xml encoding='text/html'><p>h</p></annotation-xml></math>",
            // Attributes added to html/body later, duplicates dropped by the tokenizer.
            "<html lang=en><body class=a><p id=1 id=2>x</p><body class=b data-x=1><html dir=rtl>",
            "<select><option>a<option>b</select><frameset><frame></frameset>",
            "<ul><li>a<li>b</ul><dl><dt>t<dd>d</dl><pre>\n\nx</pre><textarea>\nq</textarea>",
            "<?xml pi ?><p>\u{0}nul & &amp; &#x1F600; &bogus;</p>",
        ] {
            same_as_scraper(html);
        }
    }

    #[test]
    fn builds_scrapers_tree_on_the_recall_fixtures() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/pages");
        let mut seen = 0;
        let mut stack = vec![dir];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x == "html") {
                    let bytes = std::fs::read(&p).unwrap();
                    same_as_scraper(&String::from_utf8_lossy(&bytes));
                    seen += 1;
                }
            }
        }
        assert!(seen >= 10, "only {seen} fixture pages");
    }

    #[test]
    fn over_the_budget_is_refused_as_before() {
        let html = super::super::parse::adoption_agency_page(500, 200_000);
        let err = Dom::parse(&html, &Budget::default()).unwrap_err();
        assert_eq!(err.code(), "html_too_complex");
    }
}
