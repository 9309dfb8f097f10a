//! A compact, read-only DOM arena built from html5ever's parse (`super::dom_sink`).
//!
//! Nodes are stored in document (pre-)order, so a node's subtree is the contiguous index range
//! `ix..end[ix]` and every child has a larger index than its parent: bottom-up passes are a
//! reverse loop, with no recursion (pages may nest hundreds of levels deep).

use scraper::Html;

use super::parse::{parse_dom_sized, Budget, Refused};

/// Index of a node in [`Dom::nodes`].
pub type Ix = usize;

#[derive(Debug, PartialEq, Eq)]
pub enum Kind {
    Document,
    Element(Elem),
    Text(String),
}

#[derive(Debug, PartialEq, Eq)]
pub struct Elem {
    /// Lower-case local name (`div`, `p`, `svg`, …).
    pub tag: String,
    pub attrs: Vec<(String, String)>,
}

impl Elem {
    /// The attribute's value. Only [`super::input_bounds::READ_ATTRIBUTES`] reach the tree on
    /// the extraction path: a name outside it panics in debug builds.
    pub fn attr(&self, name: &str) -> Option<&str> {
        debug_assert!(
            super::input_bounds::READ_ATTRIBUTES.contains(&name),
            "`{name}` is dropped before parsing: add it to input_bounds::READ_ATTRIBUTES"
        );
        self.attrs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Debug, PartialEq, Eq)]
pub struct Node {
    pub parent: Option<Ix>,
    pub children: Vec<Ix>,
    /// One past the last node of this node's subtree.
    pub end: Ix,
    pub kind: Kind,
}

#[derive(Debug, PartialEq, Eq)]
pub struct Dom {
    pub nodes: Vec<Node>,
}

impl Dom {
    /// Parses a whole document under `budget` (nodes made, deadline). Call
    /// [`super::input_bounds::bound_input`] first on untrusted input.
    pub fn parse(html: &str, budget: &Budget) -> Result<Dom, Refused> {
        parse_dom_sized(html, html.len(), budget)
    }

    /// Parses the result of [`super::input_bounds::bound_input_for_text`], its budget counted
    /// on the bytes the page had before its raw text was dropped.
    pub fn parse_bounded(
        bounded: &super::input_bounds::Bounded<'_>,
        budget: &Budget,
    ) -> Result<Dom, Refused> {
        parse_dom_sized(&bounded.text, bounded.budget_bytes, budget)
    }

    /// The arena of a tree scraper parsed: what [`Dom::parse`] must equal
    /// (`markdown::sink_tree_differs`, the tests of `super::dom_sink`).
    pub fn from_html(parsed: &Html) -> Dom {
        // Names are lower-case already except in foreign content (`foreignObject`).
        let lower = |s: &str| {
            if s.bytes().any(|c| c.is_ascii_uppercase()) {
                s.to_ascii_lowercase()
            } else {
                s.to_string()
            }
        };
        let mut nodes: Vec<Node> = Vec::with_capacity(parsed.tree.values().size_hint().0);
        // (node, parent index) — children are pushed in reverse so they pop in order.
        let mut stack = vec![(parsed.tree.root(), None::<Ix>)];
        while let Some((n, parent)) = stack.pop() {
            let kind = match n.value() {
                scraper::Node::Document | scraper::Node::Fragment => Kind::Document,
                scraper::Node::Element(e) => Kind::Element(Elem {
                    tag: lower(e.name()),
                    attrs: e.attrs().map(|(k, v)| (lower(k), v.to_string())).collect(),
                }),
                scraper::Node::Text(t) => Kind::Text(t.to_string()),
                _ => continue,
            };
            let ix = nodes.len();
            nodes.push(Node {
                parent,
                children: Vec::new(),
                end: ix + 1,
                kind,
            });
            if let Some(p) = parent {
                nodes[p].children.push(ix);
            }
            let mut kid = n.last_child();
            while let Some(c) = kid {
                stack.push((c, Some(ix)));
                kid = c.prev_sibling();
            }
        }
        // Subtree ends, bottom-up.
        for ix in (0..nodes.len()).rev() {
            if let Some(&last) = nodes[ix].children.last() {
                nodes[ix].end = nodes[last].end;
            }
        }
        Dom { nodes }
    }

    pub fn elem(&self, ix: Ix) -> Option<&Elem> {
        match &self.nodes[ix].kind {
            Kind::Element(e) => Some(e),
            _ => None,
        }
    }

    pub fn tag(&self, ix: Ix) -> &str {
        self.elem(ix).map_or("", |e| e.tag.as_str())
    }

    pub fn attr(&self, ix: Ix, name: &str) -> Option<&str> {
        self.elem(ix).and_then(|e| e.attr(name))
    }

    /// The first element with this tag, in document order.
    pub fn find_tag(&self, tag: &str) -> Option<Ix> {
        (0..self.nodes.len()).find(|&i| self.tag(i) == tag)
    }

    /// Ancestors from the parent upwards.
    pub fn ancestors(&self, ix: Ix) -> impl Iterator<Item = Ix> + '_ {
        std::iter::successors(self.nodes[ix].parent, move |&p| self.nodes[p].parent)
    }

    /// Whether `a` is `b` or contains it.
    pub fn contains(&self, a: Ix, b: Ix) -> bool {
        a <= b && b < self.nodes[a].end
    }

    /// Concatenated raw text of a subtree (no whitespace normalisation).
    pub fn raw_text(&self, ix: Ix) -> String {
        let mut s = String::new();
        for i in ix..self.nodes[ix].end {
            if let Kind::Text(t) = &self.nodes[i].kind {
                s.push_str(t);
            }
        }
        s
    }
}

/// Collapses whitespace runs (including no-break spaces) to single spaces and trims.
pub fn collapse_ws(s: &str) -> String {
    // Copied a run at a time: the text rules call this on every block they judge, and a
    // character at a time it was 1.5 % of a batch conversion.
    let mut out = String::with_capacity(s.len());
    for word in s.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arena_is_in_document_order_with_subtree_ranges() {
        let d = Dom::parse(
            "<p id=a>one <b>two</b></p><div>three</div>",
            &Budget::default(),
        )
        .unwrap();
        let p = d.find_tag("p").unwrap();
        let b = d.find_tag("b").unwrap();
        let div = d.find_tag("div").unwrap();
        assert!(p < b && b < div);
        assert!(d.contains(p, b) && !d.contains(p, div));
        assert_eq!(d.attr(p, "id"), Some("a"));
        assert_eq!(d.raw_text(p), "one two");
        assert_eq!(d.ancestors(b).next(), Some(p));
    }

    #[test]
    fn whitespace_collapses() {
        assert_eq!(collapse_ws("  a \n\t b\u{a0}c  "), "a b c");
        assert_eq!(collapse_ws("\u{2003}é\u{3000}漢字 x\u{85}"), "é 漢字 x");
        assert_eq!(collapse_ws(" \t\n"), "");
    }
}
