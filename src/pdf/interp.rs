//! Content stream interpretation: just enough of the graphics and text state (CTM, text and line
//! matrices, font, size, character/word spacing, horizontal scaling, leading, rise) to place
//! every shown glyph on the page; form XObjects are followed (depth- and cycle-bounded).
//!
//! Content is budgeted per document, not per stream (issue 21: a 31 MB form drawn 8 times took
//! 13 s and 2 GB): every page stream and every form *draw* counts its decoded bytes against
//! `content_left`, each form is decoded once and kept for its redraws, and interpretation stops
//! when the budget is spent (`content_exhausted`) or the glyph collector is full.

use lopdf::content::Operation;
use lopdf::{Dictionary, Document, Object, ObjectId};
use std::collections::{HashMap, HashSet};
use std::rc::Rc;
use std::time::Instant;

use super::fonts::Font;
use super::layout::SpanBuilder;

/// Bounds against hostile files.
const MAX_STATE_STACK: usize = 256;
const MAX_FORM_DEPTH: usize = 8;
const MAX_PAGE_CONTENT: usize = 32 << 20;
/// Annotations read per page.
const MAX_ANNOTS: usize = 4096;
/// Nesting of an optional-content visibility expression (`/VE`) followed.
const MAX_VE_DEPTH: usize = 16;
/// Marked-content sections remembered per content stream (deeper ones are not tracked).
const MAX_MARKED_CONTENT: usize = 4096;

type M = [f32; 6];
const ID: M = [1.0, 0.0, 0.0, 1.0, 0.0, 0.0];

fn mul(a: &M, b: &M) -> M {
    [
        a[0] * b[0] + a[1] * b[2],
        a[0] * b[1] + a[1] * b[3],
        a[2] * b[0] + a[3] * b[2],
        a[2] * b[1] + a[3] * b[3],
        a[4] * b[0] + a[5] * b[2] + b[4],
        a[4] * b[1] + a[5] * b[3] + b[5],
    ]
}

#[derive(Clone)]
struct GState {
    ctm: M,
    font: Option<FontKey>,
    size: f32,
    tc: f32,
    tw: f32,
    th: f32,
    tl: f32,
    rise: f32,
}

type FontKey = usize;

fn num(o: &Object) -> f32 {
    match o {
        Object::Integer(i) => *i as f32,
        Object::Real(r) if r.is_finite() => *r,
        _ => 0.0,
    }
}

/// The operands an operator reads: with more than it takes (a bad token before them, an
/// operand left over from an unknown operator), the last ones, as poppler's `Gfx::execOp` does.
fn last_operands<'a>(operator: &str, operands: &'a [Object]) -> &'a [Object] {
    let takes = match operator {
        "Tj" | "'" | "TJ" | "Tc" | "Tw" | "Tz" | "TL" | "Ts" | "Do" => 1,
        "Tf" | "Td" | "TD" => 2,
        "\"" => 3,
        "cm" | "Tm" => 6,
        "q" | "Q" | "BT" | "ET" | "T*" | "EMC" => 0,
        "BMC" => 1,
        "BDC" => 2,
        _ => return operands,
    };
    &operands[operands.len().saturating_sub(takes)..]
}

/// Per-document interpreter state: the font cache outlives pages.
pub struct Interp<'d> {
    doc: &'d Document,
    fonts: Vec<Font>,
    font_ids: HashMap<ObjectKey, FontKey>,
    glyph_names: HashMap<Vec<u8>, Box<str>>,
    pub deadline: Instant,
    pub timed_out: bool,
    pub images: usize,
    /// Glyphs written at 90°, 180° and 270°, each laid out in its own upright frame.
    pub rotated: [SpanBuilder; 3],
    ops: u64,
    /// Decoded content bytes the document may still interpret (pages and form draws).
    content_left: usize,
    /// The content budget ran out: the rest of the document is not read.
    pub content_exhausted: bool,
    /// Forms decoded so far, kept for their redraws.
    forms: HashMap<ObjectKey, Rc<Vec<u8>>>,
    /// The filled-in form fields of the page read last (its widgets, in /Annots order).
    pub fields: Vec<super::forms::Field>,
    /// Fields listed so far in the document (at most `forms::MAX_FIELDS`).
    fields_listed: usize,
    /// Optional content groups (layers) hidden in the document's default configuration:
    /// their content is not shown, as in viewers and pdftotext.
    hidden_ocgs: HashSet<ObjectId>,
    /// The page read now's MediaBox (x0, y0, x1, y1): a glyph drawn wholly outside it is not
    /// on the page, and poppler drops it.
    page_box: Option<[f32; 4]>,
    /// Glyphs of the page read now placed, and dropped as off the page.
    glyphs_on_page: usize,
    glyphs_off_page: usize,
}

#[derive(Hash, PartialEq, Eq, Clone, Copy)]
enum ObjectKey {
    Id(ObjectId),
    Ptr(usize),
}

struct Frame<'a> {
    resources: Option<&'a Dictionary>,
}

impl<'d> Interp<'d> {
    pub fn new(doc: &'d Document, deadline: Instant, max_content: usize) -> Interp<'d> {
        Interp {
            doc,
            fonts: Vec::new(),
            font_ids: HashMap::new(),
            glyph_names: HashMap::new(),
            deadline,
            timed_out: false,
            images: 0,
            rotated: Default::default(),
            ops: 0,
            content_left: max_content,
            content_exhausted: false,
            forms: HashMap::new(),
            fields: Vec::new(),
            fields_listed: 0,
            hidden_ocgs: hidden_ocgs(doc),
            page_box: None,
            glyphs_on_page: 0,
            glyphs_off_page: 0,
        }
    }

    /// Whether content marked with this optional-content group or membership dictionary
    /// (`/OC` of a marked-content section, a form, an image or an annotation) is shown in the
    /// default configuration, as poppler's `OCGs::optContentIsVisible` decides: an OCG by its
    /// state, an OCMD by its visibility expression (`/VE`) or else its `/OCGs` under its policy
    /// (`/P`, default `AnyOn`); anything else (a missing or broken reference) is shown.
    fn oc_visible(&self, o: &'d Object) -> bool {
        self.oc_visible_at(o, 0)
    }

    fn oc_visible_at(&self, o: &'d Object, depth: usize) -> bool {
        if depth > MAX_VE_DEPTH {
            return true;
        }
        if let Object::Reference(id) = o {
            if self.hidden_ocgs.contains(id) {
                return false;
            }
        }
        let Some(d) = self.dict_of(o) else {
            return true;
        };
        if d.get(b"Type").ok().and_then(|t| t.as_name().ok()) != Some(b"OCMD") {
            return true;
        }
        if let Some(Object::Array(ve)) = d.get(b"VE").ok().map(|v| self.deref(v)) {
            return self.ve_visible(ve, depth + 1);
        }
        let ocgs: Vec<&'d Object> = match d.get(b"OCGs").ok() {
            Some(o) => match self.deref(o) {
                Object::Array(a) => a.iter().collect(),
                Object::Dictionary(_) => vec![o],
                _ => Vec::new(),
            },
            None => Vec::new(),
        };
        if ocgs.is_empty() {
            return true;
        }
        let on = |o: &&'d Object| match o {
            Object::Reference(id) => !self.hidden_ocgs.contains(id),
            _ => true,
        };
        match d.get(b"P").ok().and_then(|p| self.deref(p).as_name().ok()) {
            Some(b"AllOn") => ocgs.iter().all(on),
            Some(b"AnyOff") => !ocgs.iter().all(on),
            Some(b"AllOff") => !ocgs.iter().any(on),
            _ => ocgs.iter().any(on),
        }
    }

    /// A visibility expression: `[/And e…]`, `[/Or e…]`, `[/Not e]`, each `e` an OCG or an
    /// expression.
    fn ve_visible(&self, ve: &'d [Object], depth: usize) -> bool {
        if depth > MAX_VE_DEPTH {
            return true;
        }
        let term = |o: &'d Object| match self.deref(o) {
            Object::Array(a) => self.ve_visible(a, depth + 1),
            _ => self.oc_visible_at(o, depth + 1),
        };
        let args = ve.get(1..).unwrap_or_default();
        match ve.first().and_then(|o| o.as_name().ok()) {
            Some(b"And") => args.iter().all(term),
            Some(b"Or") => args.iter().any(term),
            Some(b"Not") => args.first().is_none_or(|o| !term(o)),
            _ => true,
        }
    }

    /// Whether a marked-content section `BDC` with these operands hides its content: a tag
    /// `/OC` whose properties (a name in the resources' `/Properties`, or a dictionary) are an
    /// optional-content group or membership dictionary that is off.
    fn marks_hidden(&self, frame: &Frame<'d>, operands: &[Object]) -> bool {
        let [Object::Name(tag), props] = operands else {
            return false;
        };
        if tag.as_slice() != b"OC" {
            return false;
        }
        match props {
            Object::Name(name) => frame
                .resources
                .and_then(|r| r.get(b"Properties").ok())
                .and_then(|p| self.dict_of(p))
                .and_then(|p| p.get(name).ok())
                .is_some_and(|o| !self.oc_visible(o)),
            _ => false,
        }
    }

    /// Whether a dictionary's `/OC` entry (a form, an image, an annotation) hides it.
    fn oc_hidden(&self, dict: &'d Dictionary) -> bool {
        dict.get(b"OC").is_ok_and(|o| !self.oc_visible(o))
    }

    /// Takes `n` bytes from the document's content budget; false (and exhausted) if they do not
    /// fit.
    fn spend(&mut self, n: usize) -> bool {
        if n > self.content_left {
            self.content_left = 0;
            self.content_exhausted = true;
            return false;
        }
        self.content_left -= n;
        true
    }

    fn deref(&self, o: &'d Object) -> &'d Object {
        match o {
            Object::Reference(id) => self.doc.get_object(*id).unwrap_or(o),
            o => o,
        }
    }

    fn dict_of(&self, o: &'d Object) -> Option<&'d Dictionary> {
        match self.deref(o) {
            Object::Dictionary(d) => Some(d),
            Object::Stream(s) => Some(&s.dict),
            _ => None,
        }
    }

    /// The page's resources: its own or the nearest ancestor's.
    fn page_resources(&self, page: ObjectId) -> Option<&'d Dictionary> {
        let mut node = self.doc.get_dictionary(page).ok()?;
        for _ in 0..64 {
            if let Ok(r) = node.get(b"Resources") {
                if let Some(d) = self.dict_of(r) {
                    return Some(d);
                }
            }
            node = self.dict_of(node.get(b"Parent").ok()?)?;
        }
        None
    }

    /// A page's rectangle (`/MediaBox`): its own or the nearest ancestor's.
    fn inherited_rect(&self, page: ObjectId, key: &[u8]) -> Option<[f32; 4]> {
        let mut node = self.doc.get_dictionary(page).ok()?;
        for _ in 0..64 {
            if let Some(r) = self.rect(node.get(key).ok()) {
                return Some(r);
            }
            node = self.dict_of(node.get(b"Parent").ok()?)?;
        }
        None
    }

    fn page_content(&mut self, page: ObjectId) -> Vec<u8> {
        let Ok(dict) = self.doc.get_dictionary(page) else {
            return Vec::new();
        };
        let Ok(contents) = dict.get(b"Contents") else {
            return Vec::new();
        };
        let streams: Vec<&Object> = match self.deref(contents) {
            Object::Array(a) => a.iter().map(|o| self.deref(o)).collect(),
            o => vec![o],
        };
        let mut out = Vec::new();
        for s in streams {
            if let Object::Stream(s) = s {
                let left = MAX_PAGE_CONTENT
                    .saturating_sub(out.len())
                    .min(self.content_left);
                match super::decode_stream(self.doc, s, left) {
                    Ok(bytes) if self.spend(bytes.len() + 1) => {
                        out.extend_from_slice(&bytes);
                        out.push(b'\n');
                    }
                    Err(lopdf::Error::Decompress(
                        lopdf::DecompressError::MemoryLimitExceeded { .. },
                    )) if left == self.content_left => {
                        self.content_left = 0;
                        self.content_exhausted = true;
                    }
                    _ => {}
                }
                if self.content_exhausted {
                    break;
                }
            }
        }
        out
    }

    fn font(&mut self, resources: Option<&'d Dictionary>, name: &[u8]) -> Option<FontKey> {
        let fonts = self.dict_of(resources?.get(b"Font").ok()?)?;
        let raw = fonts.get(name).ok()?;
        let key = match raw {
            Object::Reference(id) => ObjectKey::Id(*id),
            o => ObjectKey::Ptr(o as *const Object as usize),
        };
        if let Some(k) = self.font_ids.get(&key) {
            return Some(*k);
        }
        let dict = self.dict_of(raw)?;
        let font = Font::load(self.doc, dict, &mut self.glyph_names);
        self.fonts.push(font);
        let k = self.fonts.len() - 1;
        self.font_ids.insert(key, k);
        Some(k)
    }

    /// Interprets one page into spans (and its form fields into `fields`).
    pub fn page(&mut self, page: ObjectId, out: &mut SpanBuilder) {
        self.fields.clear();
        let content = self.page_content(page);
        let resources = self.page_resources(page);
        self.page_box = self
            .inherited_rect(page, b"MediaBox")
            .filter(|b| b[2] - b[0] > 1.0 && b[3] - b[1] > 1.0);
        (self.glyphs_on_page, self.glyphs_off_page) = (0, 0);
        let mut seen = Vec::new();
        self.run(&content, Frame { resources }, ID, out, 0, &mut seen);
        out.flush();
        self.annotations(page, out);
        // Every glyph of the page off the page: the MediaBox is wrong rather than the text (a
        // file with a text layer should not read as empty), so the page is read unbounded.
        if self.glyphs_on_page == 0 && self.glyphs_off_page > 0 {
            self.page_box = None;
            self.fields.clear();
            self.run(&content, Frame { resources }, ID, out, 0, &mut seen);
            out.flush();
            self.annotations(page, out);
        }
    }

    fn run(
        &mut self,
        content: &[u8],
        frame: Frame<'d>,
        ctm: M,
        out: &mut SpanBuilder,
        depth: usize,
        seen: &mut Vec<ObjectId>,
    ) {
        let mut gs = GState {
            ctm,
            font: None,
            size: 0.0,
            tc: 0.0,
            tw: 0.0,
            th: 1.0,
            tl: 0.0,
            rise: 0.0,
        };
        let mut stack: Vec<GState> = Vec::new();
        let mut tm = ID;
        let mut tlm = ID;
        // Open marked-content sections, each true if it hides its content (optional content
        // that is off); the content shows while none does (a form is drawn only where its
        // `Do` shows, so a caller's hidden section hides it).
        let mut marked: Vec<bool> = Vec::new();
        let mut hiding = 0usize;
        // Our tolerant tokenizer, not lopdf's parser, which stopped at the first token it could
        // not read and lost the rest of the page (issue 15).
        for op in super::content::operations(content) {
            self.ops += 1;
            if self.ops % 2048 == 0 && Instant::now() >= self.deadline {
                self.timed_out = true;
                return;
            }
            if self.timed_out || self.content_exhausted || out.is_full() {
                return;
            }
            let Operation { operator, operands } = op;
            let operands = last_operands(&operator, &operands);
            let n = |i: usize| operands.get(i).map(num).unwrap_or(0.0);
            let shown = hiding == 0;
            match operator.as_str() {
                "BMC" | "BDC" if marked.len() < MAX_MARKED_CONTENT => {
                    let hides = operator == "BDC" && self.marks_hidden(&frame, operands);
                    marked.push(hides);
                    hiding += usize::from(hides);
                }
                "EMC" => hiding -= usize::from(marked.pop() == Some(true)),
                // Past the bound, `q` is ignored (and the matching `Q` restores an older state).
                "q" if stack.len() < MAX_STATE_STACK => stack.push(gs.clone()),
                "Q" => {
                    if let Some(s) = stack.pop() {
                        gs = s;
                    }
                }
                "cm" if operands.len() == 6 => {
                    let m = [n(0), n(1), n(2), n(3), n(4), n(5)];
                    gs.ctm = mul(&m, &gs.ctm);
                }
                "BT" => {
                    tm = ID;
                    tlm = ID;
                    out.flush();
                }
                "ET" => {}
                "Tf" => {
                    if let Some(Object::Name(name)) = operands.first() {
                        gs.font = self.font(frame.resources, name);
                    }
                    gs.size = n(1);
                }
                "Tc" => gs.tc = n(0),
                "Tw" => gs.tw = n(0),
                "Tz" => gs.th = n(0) / 100.0,
                "TL" => gs.tl = n(0),
                "Ts" => gs.rise = n(0),
                "Td" => {
                    tlm = mul(&[1.0, 0.0, 0.0, 1.0, n(0), n(1)], &tlm);
                    tm = tlm;
                }
                "TD" => {
                    gs.tl = -n(1);
                    tlm = mul(&[1.0, 0.0, 0.0, 1.0, n(0), n(1)], &tlm);
                    tm = tlm;
                }
                "Tm" if operands.len() == 6 => {
                    tlm = [n(0), n(1), n(2), n(3), n(4), n(5)];
                    tm = tlm;
                }
                "T*" => {
                    tlm = mul(&[1.0, 0.0, 0.0, 1.0, 0.0, -gs.tl], &tlm);
                    tm = tlm;
                }
                "Tj" => {
                    if let Some(Object::String(s, _)) = operands.first() {
                        self.show(s, &gs, &mut tm, out, shown);
                    }
                }
                "'" => {
                    tlm = mul(&[1.0, 0.0, 0.0, 1.0, 0.0, -gs.tl], &tlm);
                    tm = tlm;
                    if let Some(Object::String(s, _)) = operands.first() {
                        self.show(s, &gs, &mut tm, out, shown);
                    }
                }
                "\"" => {
                    gs.tw = n(0);
                    gs.tc = n(1);
                    tlm = mul(&[1.0, 0.0, 0.0, 1.0, 0.0, -gs.tl], &tlm);
                    tm = tlm;
                    if let Some(Object::String(s, _)) = operands.get(2) {
                        self.show(s, &gs, &mut tm, out, shown);
                    }
                }
                "TJ" => {
                    if let Some(Object::Array(items)) = operands.first() {
                        for item in items {
                            match item {
                                Object::String(s, _) => self.show(s, &gs, &mut tm, out, shown),
                                o => {
                                    let adj = num(o);
                                    let vertical = gs
                                        .font
                                        .and_then(|fk| self.fonts.get(fk))
                                        .is_some_and(|f| f.vertical);
                                    // A vertical font's adjustment moves along y (9.4.3).
                                    let shift = if vertical {
                                        [1.0, 0.0, 0.0, 1.0, 0.0, -adj / 1000.0 * gs.size]
                                    } else {
                                        let tx = -adj / 1000.0 * gs.size * gs.th;
                                        [1.0, 0.0, 0.0, 1.0, tx, 0.0]
                                    };
                                    tm = mul(&shift, &tm);
                                }
                            }
                        }
                    }
                }
                "BI" | "EI" => self.images += 1,
                "Do" if shown => {
                    if let Some(Object::Name(name)) = operands.first() {
                        self.xobject(&frame, name, &gs.ctm, out, depth, seen);
                    }
                }
                _ => {}
            }
        }
    }

    fn xobject(
        &mut self,
        frame: &Frame<'d>,
        name: &[u8],
        ctm: &M,
        out: &mut SpanBuilder,
        depth: usize,
        seen: &mut Vec<ObjectId>,
    ) {
        let Some(res) = frame.resources else { return };
        let Some(xobjects) = res.get(b"XObject").ok().and_then(|o| self.dict_of(o)) else {
            return;
        };
        let Ok(raw) = xobjects.get(name) else { return };
        let Object::Stream(stream) = self.deref(raw) else {
            return;
        };
        if self.oc_hidden(&stream.dict) {
            return;
        }
        let subtype = stream
            .dict
            .get(b"Subtype")
            .ok()
            .and_then(|o| o.as_name().ok());
        match subtype {
            Some(b"Image") => self.images += 1,
            Some(b"Form") => self.draw_form(raw, stream, ctm, frame.resources, out, depth, seen),
            _ => {}
        }
    }

    /// Draws a form XObject (depth- and cycle-bounded, its content budgeted per draw) with
    /// `ctm` as the CTM where it is invoked (its /Matrix is applied here).
    #[allow(clippy::too_many_arguments)]
    fn draw_form(
        &mut self,
        raw: &'d Object,
        stream: &'d lopdf::Stream,
        ctm: &M,
        fallback: Option<&'d Dictionary>,
        out: &mut SpanBuilder,
        depth: usize,
        seen: &mut Vec<ObjectId>,
    ) {
        let id = match raw {
            Object::Reference(id) => Some(*id),
            _ => None,
        };
        if depth >= MAX_FORM_DEPTH || id.is_some_and(|id| seen.contains(&id)) {
            return;
        }
        let matrix = self.matrix(stream.dict.get(b"Matrix").ok());
        let Some(content) = self.form_content(raw, stream) else {
            return;
        };
        if !self.spend(content.len()) {
            return;
        }
        let resources = stream
            .dict
            .get(b"Resources")
            .ok()
            .and_then(|o| self.dict_of(o))
            .or(fallback);
        if let Some(id) = id {
            seen.push(id);
        }
        out.flush();
        self.run(
            &content,
            Frame { resources },
            mul(&matrix, ctm),
            out,
            depth + 1,
            seen,
        );
        out.flush();
        if id.is_some() {
            seen.pop();
        }
    }

    fn matrix(&self, o: Option<&'d Object>) -> M {
        match o.map(|o| self.deref(o)) {
            Some(Object::Array(a)) if a.len() == 6 => {
                let v: Vec<f32> = a.iter().map(|o| num(self.deref(o))).collect();
                [v[0], v[1], v[2], v[3], v[4], v[5]]
            }
            _ => ID,
        }
    }

    fn rect(&self, o: Option<&'d Object>) -> Option<[f32; 4]> {
        match o.map(|o| self.deref(o)) {
            Some(Object::Array(a)) if a.len() == 4 => {
                let v: Vec<f32> = a.iter().map(|o| num(self.deref(o))).collect();
                Some([
                    v[0].min(v[2]),
                    v[1].min(v[3]),
                    v[0].max(v[2]),
                    v[1].max(v[3]),
                ])
            }
            _ => None,
        }
    }

    /// The appearances of a page's annotations (form fields' widgets, free-text notes, stamps
    /// …), where viewers and pdftotext show them: field values live there, not in the page's
    /// content (issue 15: recall 0.53 on a form). As in poppler, nothing is read of an
    /// annotation flagged Hidden (2) or NoView (32), of one on an optional-content layer that
    /// is off; a check box or radio button shows only its current state's appearance (`AS`;
    /// an unset one's is usually empty).
    fn annotations(&mut self, page: ObjectId, out: &mut SpanBuilder) {
        let Ok(dict) = self.doc.get_dictionary(page) else {
            return;
        };
        let Some(Object::Array(annots)) = dict.get(b"Annots").ok().map(|o| self.deref(o)) else {
            return;
        };
        for a in annots.iter().take(MAX_ANNOTS) {
            if self.timed_out || self.content_exhausted || out.is_full() {
                return;
            }
            let Some(ad) = self.dict_of(a) else { continue };
            let doc = self.doc;
            let name = |k: &[u8]| {
                let o = ad.get(k).ok()?;
                let o = match o {
                    Object::Reference(id) => doc.get_object(*id).unwrap_or(o),
                    o => o,
                };
                o.as_name().ok()
            };
            // Every annotation's appearance is drawn, whatever its type, as poppler's
            // `Page::displaySlice` draws them for pdftotext (issue 15: a stamp whose
            // appearance holds a caption, `A PDF with a JPEG image.`, was not read).
            let flags = ad.get(b"F").ok().map_or(0, |o| num(self.deref(o)) as i64);
            // Hidden (2) or NoView (32: printed only), or of a layer that is off: not shown on
            // screen, so not read (poppler's `Annot::isVisible` for a display).
            if flags & (2 | 32) != 0 || self.oc_hidden(ad) {
                continue;
            }
            // A widget's field is listed whether or not it has an appearance to draw.
            let field = if name(b"Subtype") == Some(b"Widget") {
                super::forms::field(self.doc, ad)
            } else {
                None
            };
            let normal = ad
                .get(b"AP")
                .ok()
                .and_then(|o| self.dict_of(o))
                .and_then(|ap| ap.get(b"N").ok());
            if let Some(f) = field {
                if normal.is_none() && matches!(f.kind, "text" | "choice") {
                    self.draw_value(ad, &f.value, out);
                }
                if self.fields_listed < super::forms::MAX_FIELDS {
                    self.fields_listed += 1;
                    self.fields.push(f);
                }
            }
            let Some(normal) = normal else { continue };
            let raw = match self.deref(normal) {
                Object::Stream(_) => normal,
                // A check box or radio button: the appearance of its current state.
                Object::Dictionary(states) => match name(b"AS").and_then(|s| states.get(s).ok()) {
                    Some(o) => o,
                    None => continue,
                },
                _ => continue,
            };
            let Object::Stream(stream) = self.deref(raw) else {
                continue;
            };
            let (Some(r), Some(bbox)) = (
                self.rect(ad.get(b"Rect").ok()),
                self.rect(stream.dict.get(b"BBox").ok()),
            ) else {
                continue;
            };
            // PDF 32000 12.5.5: the BBox, transformed by the form's Matrix, is fitted to Rect.
            let m = self.matrix(stream.dict.get(b"Matrix").ok());
            let corners = [
                (bbox[0], bbox[1]),
                (bbox[2], bbox[1]),
                (bbox[0], bbox[3]),
                (bbox[2], bbox[3]),
            ]
            .map(|(x, y)| (m[0] * x + m[2] * y + m[4], m[1] * x + m[3] * y + m[5]));
            let fold = |f: fn(f32, f32) -> f32, i: usize| {
                corners
                    .iter()
                    .map(|c| if i == 0 { c.0 } else { c.1 })
                    .reduce(f)
                    .unwrap_or(0.0)
            };
            let (bx0, by0, bx1, by1) = (
                fold(f32::min, 0),
                fold(f32::min, 1),
                fold(f32::max, 0),
                fold(f32::max, 1),
            );
            let sx = if bx1 - bx0 > 1e-3 {
                (r[2] - r[0]) / (bx1 - bx0)
            } else {
                1.0
            };
            let sy = if by1 - by0 > 1e-3 {
                (r[3] - r[1]) / (by1 - by0)
            } else {
                1.0
            };
            let fit = [sx, 0.0, 0.0, sy, r[0] - bx0 * sx, r[1] - by0 * sy];
            let mut seen = Vec::new();
            self.draw_form(raw, stream, &fit, None, out, 0, &mut seen);
        }
    }

    /// A text or choice field's value where its widget is, for a widget with no appearance
    /// stream: poppler (and viewers) make one from the default appearance (`/DA`) and the value,
    /// so pdftotext reads it there. Helvetica's advances at the `/DA` size (auto size or none:
    /// what fits the box's height), from 2 points inside the box's left edge; a multi-line
    /// value line by line from the top, a single line centred vertically.
    fn draw_value(&mut self, widget: &'d Dictionary, value: &str, out: &mut SpanBuilder) {
        let Some(r) = self.rect(widget.get(b"Rect").ok()) else {
            return;
        };
        let height = r[3] - r[1];
        let da = super::forms::default_appearance(self.doc, widget);
        let size = da
            .as_deref()
            .and_then(super::forms::da_font_size)
            .unwrap_or((height * 0.7).clamp(4.0, 12.0));
        let lines: Vec<&str> = value.lines().collect();
        let top = if lines.len() > 1 {
            r[3] - 2.0 - size
        } else {
            r[1] + (height - size) / 2.0 + 0.22 * size
        };
        out.flush();
        for (i, line) in lines.iter().enumerate() {
            let y = top - i as f32 * size * 1.15;
            let mut x = r[0] + 2.0;
            let mut buf = [0u8; 4];
            for c in line.chars() {
                let x1 = x + super::fonts::helvetica_advance(c) * size;
                out.glyph(x, x1, y, size, c.encode_utf8(&mut buf));
                x = x1;
            }
            out.flush();
        }
    }

    /// A form's decoded content, decoded once per document (its decoded size counted against
    /// the content budget the first time, like every draw after).
    fn form_content(&mut self, raw: &'d Object, stream: &'d lopdf::Stream) -> Option<Rc<Vec<u8>>> {
        let key = match raw {
            Object::Reference(id) => ObjectKey::Id(*id),
            o => ObjectKey::Ptr(o as *const Object as usize),
        };
        if let Some(c) = self.forms.get(&key) {
            return Some(c.clone());
        }
        let limit = MAX_PAGE_CONTENT.min(self.content_left);
        let content = match super::decode_stream(self.doc, stream, limit) {
            Ok(c) => Rc::new(c),
            Err(lopdf::Error::Decompress(lopdf::DecompressError::MemoryLimitExceeded {
                ..
            })) if limit == self.content_left => {
                self.content_left = 0;
                self.content_exhausted = true;
                return None;
            }
            Err(_) => return None,
        };
        self.forms.insert(key, content.clone());
        Some(content)
    }

    /// Shows a string: every glyph placed (unless `shown` is false: optional content that is
    /// off, whose text still moves the pen) and the text matrix advanced.
    fn show(&mut self, bytes: &[u8], gs: &GState, tm: &mut M, out: &mut SpanBuilder, shown: bool) {
        let Some(fk) = gs.font else { return };
        let Some(font) = self.fonts.get_mut(fk) else {
            return;
        };
        let rotated = &mut self.rotated;
        let page_box = self.page_box;
        let two_byte = font.two_byte;
        let (vertical, w1) = (font.vertical, font.vertical_advance);
        let (fs, th, tc, tw, rise) = (gs.size, gs.th, gs.tc, gs.tw, gs.rise);
        let ctm = gs.ctm;
        let mut m = *tm;
        let (mut on, mut off) = (0, 0);
        font.each_code(bytes, |code, text, w0| {
            let trm = mul(&mul(&[fs * th, 0.0, 0.0, fs, 0.0, rise], &m), &ctm);
            let full = mul(&m, &ctm);
            let size = fs * (full[2] * full[2] + full[3] * full[3]).sqrt();
            // Vertical fonts advance along text space's -y (issue 15: CJK columns were laid
            // out as overlapping horizontal glyphs): the column is the line, read downwards.
            let (adv_glyph, (dx, dy)) = if vertical {
                (-w1 * fs, (-full[2], -full[3]))
            } else {
                (w0 * fs * th, (full[0], full[1]))
            };
            // The direction of the advance decides the frame: upright text goes to `out`,
            // rotated (and vertical) text to its own builder, in coordinates where it reads
            // left to right; for a vertical column that is the 270° frame, whose lines (the
            // columns) come right to left.
            // A glyph mirrored left to right (its advance reversed, its up still up: XeTeX's
            // reversed E in the XeTeX and XeLaTeX logos, drawn under `-1 0 0 1 cm`) is upright
            // text, as poppler's `TextPage::updateFont` decides: only text whose advance and
            // up are both reversed is turned by 180° (issue 15: the logos read `X … LaTeX`
            // with the `E` after the page).
            let k = if dx.abs() >= dy.abs() {
                if dx >= 0.0 || (!vertical && full[3] > 0.0) {
                    0
                } else {
                    2
                }
            } else if dy > 0.0 {
                1
            } else {
                3
            };
            let turn = |x: f32, y: f32| match k {
                1 => (y, -x),
                2 => (-x, -y),
                3 => (-y, x),
                _ => (x, y),
            };
            let (ox, oy) = (trm[4], trm[5]);
            let (ex, ey) = (ox + adv_glyph * dx, oy + adv_glyph * dy);
            // A glyph whose origin and advance lie wholly off the page (text pushed past the
            // MediaBox, a slug, a hidden title) is not on the page: poppler's `addChar` drops
            // it, and no viewer shows it.
            let on_page = page_box.is_none_or(|b| {
                ox.max(ex) >= b[0] && ox.min(ex) <= b[2] && oy.max(ey) >= b[1] && oy.min(ey) <= b[3]
            });
            let (x0, y) = turn(ox, oy);
            let (x1, _) = turn(ex, ey);
            if shown && !on_page {
                off += 1;
            } else if shown {
                on += 1;
                if k == 0 {
                    out.glyph(x0, x1, y, size, text);
                } else {
                    rotated[k - 1].glyph(x0, x1, y, size, text);
                }
            }
            let word = if !two_byte && code == 32 { tw } else { 0.0 };
            if vertical {
                // PDF 32000 9.4.4: ty = w1·Tfs + Tc + Tw (w1 < 0: down the page).
                let ty = w1 * fs + tc + word;
                m = mul(&[1.0, 0.0, 0.0, 1.0, 0.0, ty], &m);
            } else {
                let tx = (w0 * fs + tc + word) * th;
                m = mul(&[1.0, 0.0, 0.0, 1.0, tx, 0.0], &m);
            }
        });
        self.glyphs_on_page += on;
        self.glyphs_off_page += off;
        *tm = m;
    }
}

/// The optional content groups that are off in the document's default configuration
/// (`/OCProperties /D`): all of `/OCGs` when `/BaseState` is `/OFF`, less those in `/ON`, plus
/// those in `/OFF` (poppler's order: `/OFF` wins).
fn hidden_ocgs(doc: &Document) -> HashSet<ObjectId> {
    let deref = |o: &Object| -> Object {
        match o {
            Object::Reference(id) => doc.get_object(*id).cloned().unwrap_or(Object::Null),
            o => o.clone(),
        }
    };
    let mut hidden = HashSet::new();
    let Ok(root) = doc.catalog() else {
        return hidden;
    };
    let Ok(props) = root.get(b"OCProperties").map(deref) else {
        return hidden;
    };
    let Ok(props) = props.as_dict() else {
        return hidden;
    };
    let Ok(config) = props.get(b"D").map(deref) else {
        return hidden;
    };
    let Ok(config) = config.as_dict() else {
        return hidden;
    };
    let refs = |o: Option<&Object>| -> Vec<ObjectId> {
        match o.map(deref) {
            Some(Object::Array(a)) => a
                .iter()
                .filter_map(|o| o.as_reference().ok())
                .take(1 << 16)
                .collect(),
            _ => Vec::new(),
        }
    };
    if config
        .get(b"BaseState")
        .ok()
        .map(deref)
        .as_ref()
        .and_then(|b| b.as_name().ok())
        == Some(b"OFF")
    {
        hidden.extend(refs(props.get(b"OCGs").ok()));
        for id in refs(config.get(b"ON").ok()) {
            hidden.remove(&id);
        }
    }
    hidden.extend(refs(config.get(b"OFF").ok()));
    hidden
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_operator_reads_its_last_operands() {
        let ops = [Object::Null, Object::string_literal("x")];
        assert_eq!(last_operands("Tj", &ops), &ops[1..]);
        assert_eq!(last_operands("Tj", &ops[1..]), &ops[1..]);
        assert_eq!(last_operands("BT", &ops), &[] as &[Object]);
        // Unknown operators keep theirs; too few stay too few.
        assert_eq!(last_operands("sc", &ops), &ops[..]);
        assert_eq!(last_operands("cm", &ops), &ops[..]);
    }
}
