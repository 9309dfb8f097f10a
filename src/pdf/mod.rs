//! /api/pdf's document reader: structure, metadata and encryption through lopdf, and our own
//! text layer over lopdf's objects (content streams interpreted in `interp`, glyphs laid out in
//! reading order in `layout`, character codes decoded in `fonts`).
//!
//! `extract` is synchronous and CPU-bound: callers run it off the async workers. It never
//! panics by design (every lookup falls back, every loop and buffer is bounded) and checks its
//! deadline between pages and every few thousand content operations, so the parse budget holds
//! inside the work; `extract_guarded` adds catch_unwind as a last line of defence.

pub mod arabic_names;
pub mod cid_tables;
pub mod cmap;
pub mod content;
pub mod fonts;
pub mod forms;
pub mod interp;
pub mod layout;
pub mod meta;
mod std14_widths;

use std::time::{Duration, Instant};

pub use meta::Metadata;

/// A stream's decoded bytes (at most `limit`), with its `/Filter` and `/DecodeParms` resolved
/// when they are indirect (`/Filter 18 0 R` → `[/FlateDecode]`), which the spec allows and
/// lopdf's decoder, having no document at hand, reads as "no filter" (issue 15: an invoice's
/// page came back as compressed bytes and the call answered 422). Only then is the stream
/// copied; a reference that resolves to neither a name nor an array is left for lopdf to refuse.
pub fn decode_stream(
    doc: &lopdf::Document,
    stream: &lopdf::Stream,
    limit: usize,
) -> lopdf::Result<Vec<u8>> {
    use lopdf::Object;
    let resolve = |o: &Object| -> Object {
        let o = match o {
            Object::Reference(id) => doc.get_object(*id).unwrap_or(o),
            o => o,
        };
        match o {
            Object::Array(a) => Object::Array(
                a.iter()
                    .take(16)
                    .map(|e| match e {
                        Object::Reference(id) => {
                            doc.get_object(*id).cloned().unwrap_or(Object::Null)
                        }
                        e => e.clone(),
                    })
                    .collect(),
            ),
            o => o.clone(),
        }
    };
    let indirect = |key: &[u8]| match stream.dict.get(key) {
        Ok(Object::Reference(_)) => true,
        Ok(Object::Array(a)) => a.iter().any(|e| matches!(e, Object::Reference(_))),
        _ => false,
    };
    if !indirect(b"Filter") && !indirect(b"DecodeParms") {
        return stream.get_plain_content_with_limit(limit);
    }
    let mut dict = stream.dict.clone();
    for key in [&b"Filter"[..], b"DecodeParms"] {
        if let Ok(o) = stream.dict.get(key) {
            dict.set(key.to_vec(), resolve(o));
        }
    }
    let mut copy = lopdf::Stream::new(dict, stream.content.clone());
    // `Stream::new` recomputes /Length from the content: nothing else differs.
    copy.allows_compression = stream.allows_compression;
    copy.get_plain_content_with_limit(limit)
}

/// What to read and how long to try.
#[derive(Debug, Clone)]
pub struct Options {
    /// Pages read, from the first.
    pub max_pages: usize,
    /// Characters returned over all pages.
    pub max_chars: usize,
    /// Parse budget, from the start of `extract`.
    pub budget: Duration,
    /// Largest size a single stream may inflate to.
    pub max_stream_bytes: usize,
    /// Decoded content bytes interpreted over the whole document: every page stream and every
    /// form draw counts (a form is decoded once, however often it is drawn).
    pub max_content_bytes: usize,
}

/// Default of [`Options::max_content_bytes`]: 32 MiB of operators is far more text than the
/// 100,000-character cap can return (text-only pages are a few KB to a few hundred KB), and
/// interprets within the parse budget; only heavy vector drawings get near it.
pub const DEFAULT_MAX_CONTENT_BYTES: usize = 32 << 20;

impl Default for Options {
    fn default() -> Self {
        Options {
            max_pages: 50,
            max_chars: 100_000,
            budget: Duration::from_secs(10),
            max_stream_bytes: 16 << 20,
            max_content_bytes: DEFAULT_MAX_CONTENT_BYTES,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// 1-based page number.
    pub page: usize,
    pub text: String,
    /// The page's filled-in form fields (their values are in `text` too, where the form shows
    /// them).
    pub fields: Vec<forms::Field>,
}

#[derive(Debug, Clone, PartialEq, Eq, Copy)]
pub enum Truncation {
    /// The character cap was reached.
    Chars,
    /// The parse budget ran out after some text.
    Time,
    /// The document's content budget ran out after some text.
    Content,
}

#[derive(Debug, Clone)]
pub struct PdfText {
    pub pages: Vec<Page>,
    pub page_count: usize,
    pub meta: Metadata,
    pub chars: usize,
    pub truncated: Option<Truncation>,
    /// Images met on the pages read (to tell image-only files apart).
    pub images: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PdfError {
    #[error("the file does not start with %PDF-")]
    NotPdf,
    #[error("the PDF is encrypted and cannot be opened without a password")]
    Encrypted,
    #[error("the PDF is damaged and could not be read: {0}")]
    Corrupt(String),
    #[error("the PDF has no text layer (image-only: {images} image(s) on the pages read, no text); there is no OCR")]
    ImageOnly { images: usize },
    #[error("the PDF has no text on the pages read")]
    NoText,
    #[error("the parse budget ran out before any text was extracted")]
    Timeout,
    #[error("the PDF's content streams are larger than the content budget ({limit} decoded bytes over all pages and form draws) before any text")]
    TooComplex { limit: usize },
}

impl PdfError {
    pub fn code(&self) -> &'static str {
        match self {
            PdfError::NotPdf => "not_a_pdf",
            PdfError::Encrypted => "pdf_encrypted",
            PdfError::Corrupt(_) => "pdf_corrupt",
            PdfError::ImageOnly { .. } => "pdf_image_only",
            PdfError::NoText => "pdf_no_text",
            PdfError::Timeout => "parse_timeout",
            PdfError::TooComplex { .. } => "pdf_too_complex",
        }
    }
}

/// Whether the bytes start like a PDF (`%PDF-`, allowing a little leading junk as readers do).
pub fn looks_like_pdf(bytes: &[u8]) -> bool {
    let head = &bytes[..bytes.len().min(1024)];
    head.windows(5).any(|w| w == b"%PDF-")
}

/// The bytes with every `endstream` keyword that follows a stream's data on the same line
/// (`…data endstream`, as VTeX writes it) moved to a line of its own, by turning the space
/// before it into a line feed: lopdf's parser wants an end-of-line there and drops the whole
/// object otherwise (issue 15: a VTeX document lost every page's content and answered 422;
/// poppler reads it). One byte for one, so the cross-reference offsets still hold. None when
/// nothing needs repair (no copy).
pub fn repair_stream_ends(bytes: &[u8]) -> Option<Vec<u8>> {
    const KEY: &[u8] = b"endstream";
    let needs =
        |b: &[u8], i: usize| i >= 2 && b[i - 1] == b' ' && !matches!(b[i - 2], b'\n' | b'\r');
    let mut at = Vec::new();
    let mut i = 0;
    while let Some(k) = bytes[i..].windows(KEY.len()).position(|w| w == KEY) {
        let pos = i + k;
        if needs(bytes, pos) {
            at.push(pos - 1);
        }
        i = pos + KEY.len();
    }
    if at.is_empty() {
        return None;
    }
    let mut out = bytes.to_vec();
    for p in at {
        out[p] = b'\n';
    }
    Some(out)
}

/// Reads text per page and metadata.
pub fn extract(bytes: &[u8], opts: &Options) -> Result<PdfText, PdfError> {
    let started = Instant::now();
    let deadline = started + opts.budget;
    if !looks_like_pdf(bytes) {
        return Err(PdfError::NotPdf);
    }
    let repaired = repair_stream_ends(bytes);
    let bytes = repaired.as_deref().unwrap_or(bytes);
    let load = lopdf::LoadOptions {
        max_decompressed_size: Some(opts.max_stream_bytes),
        ..Default::default()
    };
    let doc = match lopdf::Document::load_mem_with_options(bytes, load) {
        Ok(d) => d,
        Err(e) => {
            let s = e.to_string();
            if s.to_ascii_lowercase().contains("decrypt")
                || s.to_ascii_lowercase().contains("password")
                || s.to_ascii_lowercase().contains("encrypt")
            {
                return Err(PdfError::Encrypted);
            }
            return Err(PdfError::Corrupt(short(&s)));
        }
    };
    let encrypted = doc.trailer.get(b"Encrypt").is_ok();
    let pages = doc.get_pages();
    if pages.is_empty() {
        return Err(if encrypted {
            PdfError::Encrypted
        } else {
            PdfError::Corrupt("no pages found".into())
        });
    }
    let meta = meta::read(&doc);
    let mut it = interp::Interp::new(&doc, deadline, opts.max_content_bytes);
    let mut out_pages = Vec::new();
    let mut chars = 0usize;
    let mut truncated = None;
    for (&num, &id) in pages.iter().take(opts.max_pages) {
        if Instant::now() >= deadline {
            truncated = Some(Truncation::Time);
            break;
        }
        // The character cap applies while glyphs are collected (one over what is left, so the
        // cut below sees the page overflow).
        let limit = (opts.max_chars - chars).saturating_add(1);
        let mut sb = layout::SpanBuilder::with_limit(limit);
        it.rotated = std::array::from_fn(|_| layout::SpanBuilder::with_limit(limit));
        it.page(id, &mut sb);
        let mut text = layout::render(sb.finish(), deadline);
        // Rotated text (a margin note, a sideways table) after the upright text.
        for rot in it.rotated.iter_mut() {
            let spans = std::mem::take(rot).finish();
            if !spans.is_empty() {
                let t = layout::render(spans, deadline);
                if !text.is_empty() {
                    text.push('\n');
                }
                text.push_str(&t);
            }
        }
        let timed_out = it.timed_out || Instant::now() >= deadline;
        let n = text.chars().count();
        let left = opts.max_chars - chars;
        if n > left {
            if let Some((i, _)) = text.char_indices().nth(left) {
                text.truncate(i);
            }
            chars += left;
            out_pages.push(Page {
                page: num as usize,
                text,
                fields: std::mem::take(&mut it.fields),
            });
            truncated = Some(Truncation::Chars);
            break;
        }
        chars += n;
        out_pages.push(Page {
            page: num as usize,
            text,
            fields: std::mem::take(&mut it.fields),
        });
        if timed_out {
            truncated = Some(Truncation::Time);
            break;
        }
        if it.content_exhausted {
            truncated = Some(Truncation::Content);
            break;
        }
        if chars >= opts.max_chars {
            truncated = Some(Truncation::Chars);
            break;
        }
    }
    let has_text = out_pages.iter().any(|p| !p.text.trim().is_empty());
    if !has_text {
        if truncated == Some(Truncation::Time) {
            return Err(PdfError::Timeout);
        }
        if truncated == Some(Truncation::Content) {
            return Err(PdfError::TooComplex {
                limit: opts.max_content_bytes,
            });
        }
        if encrypted && it.images == 0 {
            return Err(PdfError::Encrypted);
        }
        return Err(if it.images > 0 {
            PdfError::ImageOnly { images: it.images }
        } else {
            PdfError::NoText
        });
    }
    Ok(PdfText {
        page_count: pages.len(),
        pages: out_pages,
        meta,
        chars,
        truncated,
        images: it.images,
    })
}

/// `extract` with a panic turned into `Corrupt` (a last line of defence: the code above is
/// written not to panic, and the property tests check it).
pub fn extract_guarded(bytes: &[u8], opts: &Options) -> Result<PdfText, PdfError> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| extract(bytes, opts))) {
        Ok(r) => r,
        Err(_) => Err(PdfError::Corrupt("the file could not be parsed".into())),
    }
}

fn short(s: &str) -> String {
    let mut s: String = s.chars().take(160).collect();
    if s.is_empty() {
        s = "unreadable".into();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::repair_stream_ends;

    /// A one-page PDF whose page draws `body` and carries these annotations, each (subtype,
    /// flags, the text its appearance stream draws). A text starting `off:` puts the annotation
    /// on a layer that is off; one starting `self:` has an appearance whose resources name the
    /// appearance itself, which it then draws (`/X1 Do`).
    fn annotated(body: &str, annots: &[(&str, i64, &str)]) -> Vec<u8> {
        use lopdf::{dictionary, Document, Object, Stream};
        let int = |v: &[i64]| Object::Array(v.iter().map(|&i| Object::Integer(i)).collect());
        let mut doc = Document::with_version("1.5");
        let pages = doc.new_object_id();
        let font = doc.add_object(
            dictionary! { "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica" },
        );
        let fonts = || dictionary! { "Font" => dictionary! { "F1" => font } };
        let layer = doc.add_object(dictionary! { "Type" => "OCG", "Name" => "Off" });
        let mut refs = Vec::new();
        for (i, (subtype, flags, text)) in annots.iter().enumerate() {
            let ap = doc.new_object_id();
            let mut resources = fonts();
            let mut content = format!("BT /F1 12 Tf 2 5 Td ({text}) Tj ET");
            if text.starts_with("self:") {
                resources.set("XObject", dictionary! { "X1" => ap });
                content.push_str(" /X1 Do");
            }
            let stream = Stream::new(
                dictionary! {
                    "Type" => "XObject", "Subtype" => "Form",
                    "BBox" => int(&[0, 0, 300, 20]), "Resources" => resources,
                },
                content.into_bytes(),
            );
            doc.objects.insert(ap, Object::Stream(stream));
            let y = 600 - 40 * i as i64;
            let mut annot = dictionary! {
                "Type" => "Annot", "Subtype" => *subtype, "F" => *flags,
                "Rect" => int(&[100, y, 400, y + 20]), "AP" => dictionary! { "N" => ap },
            };
            if text.starts_with("off:") {
                annot.set("OC", layer);
            }
            refs.push(Object::Reference(doc.add_object(annot)));
        }
        let content = doc.add_object(Stream::new(
            dictionary! {},
            format!("BT /F1 12 Tf 72 700 Td ({body}) Tj ET").into_bytes(),
        ));
        let page = doc.add_object(dictionary! {
            "Type" => "Page", "Parent" => pages, "MediaBox" => int(&[0, 0, 612, 792]),
            "Contents" => content, "Resources" => fonts(), "Annots" => refs,
        });
        let kids = vec![Object::Reference(page)];
        doc.objects.insert(
            pages,
            Object::Dictionary(dictionary! { "Type" => "Pages", "Kids" => kids, "Count" => 1 }),
        );
        let layers = dictionary! {
            "OCGs" => vec![Object::Reference(layer)],
            "D" => dictionary! { "OFF" => vec![Object::Reference(layer)] },
        };
        let catalog = doc.add_object(dictionary! {
            "Type" => "Catalog", "Pages" => pages, "OCProperties" => layers,
        });
        doc.trailer.set("Root", catalog);
        let mut bytes = Vec::new();
        doc.save_to(&mut bytes).expect("written");
        bytes
    }

    #[test]
    fn every_visible_annotation_appearance_is_read() {
        let pdf = annotated(
            "Page body",
            &[
                ("Stamp", 4, "Approved by the board"),
                ("FreeText", 4, "A free note"),
                ("Square", 4, "Boxed caption"),
                ("Stamp", 2, "Hidden stamp"),
                ("Stamp", 32, "Printed only"),
                ("Stamp", 4, "off: Layered stamp"),
                // Draws itself: the form recursion guard stops it (no hang, no panic).
                ("Stamp", 4, "self: Recursive caption"),
            ],
        );
        let got = super::extract(&pdf, &super::Options::default()).expect("read");
        let t = &got.pages[0].text;
        for want in [
            "Page body",
            "Approved by the board",
            "A free note",
            "Boxed caption",
            "Recursive caption",
        ] {
            assert!(t.contains(want), "{want} in {t:?}");
        }
        for not in ["Hidden", "Printed", "Layered"] {
            assert!(!t.contains(not), "{not} in {t:?}");
        }
    }

    #[test]
    fn an_endstream_on_the_data_line_gets_a_line_of_its_own() {
        let b = b"1 0 obj<</Length 2>>stream\nBT endstream\nendobj\n2 0 obj<</Length 2>>stream\nET\nendstream";
        let fixed = repair_stream_ends(b).expect("one to repair");
        assert_eq!(fixed.len(), b.len());
        assert!(fixed.windows(13).any(|w| w == b"BT\nendstream\n"));
        assert!(fixed.windows(12).any(|w| w == b"ET\nendstream"));
        assert_eq!(
            repair_stream_ends(b"stream\nET\nendstream\r\n endstream"),
            None
        );
    }
}
