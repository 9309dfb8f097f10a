//! Fonts as the text layer needs them: character codes → Unicode text and advance widths.
//!
//! Simple fonts (Type1, TrueType, Type3, MMType1): one byte per code; the text of each code is
//! precomputed once from the ToUnicode CMap when it has the code, else from the base encoding
//! (Standard, WinAnsi, MacRoman…) with its `Differences` (glyph names resolved by the Adobe
//! glyph list, `uniXXXX`/`uXXXX[XX]` names and ligature names). Composite fonts (Type0): two
//! bytes per code, text from ToUnicode (or the code itself for the UCS-2/UTF-16 CMaps), widths
//! from the descendant's `W`/`DW`.
//!
//! Nothing here trusts the file: every array is bounded, a missing or odd entry falls back.

use lopdf::{Dictionary, Document, Object};
use std::collections::HashMap;

/// Text units per glyph-space unit for every font but Type3.
const GLYPH_SCALE: f32 = 0.001;
/// Upper bound on the entries read from a `W` array or a `Widths` array.
const MAX_WIDTH_ENTRIES: usize = 70_000;
/// Upper bound on the decompressed size of a ToUnicode CMap.
const MAX_CMAP_BYTES: usize = 4 << 20;
/// Upper bound on the decompressed size of an embedded TrueType read for its cmap.
const MAX_FONT_BYTES: usize = 16 << 20;

type CodeLookup = Box<dyn Fn(u32, u8) -> Option<Vec<u16>>>;

pub struct Font {
    pub two_byte: bool,
    /// Vertical writing mode (a `…-V` CMap or `/WMode 1`): glyphs advance down the page by
    /// `vertical_advance` (DW2's second number, text space units per unit of font size,
    /// negative), and a column reads top to bottom, columns right to left.
    pub vertical: bool,
    pub vertical_advance: f32,
    /// Simple fonts: text per code (empty: unknown).
    simple_text: Vec<Box<str>>,
    /// Simple fonts: advance per code, in text space units per unit of font size.
    simple_widths: Vec<f32>,
    /// Composite fonts: per-CID advance (text space units).
    cid_widths: HashMap<u32, f32>,
    default_width: f32,
    to_unicode: Option<CodeLookup>,
    /// Composite fonts: how a shown string is cut into codes, and what else tells their text
    /// when the ToUnicode CMap does not.
    cid: CidCoding,
    cid_cache: HashMap<u32, Box<str>>,
}

/// How a composite font's codes are cut and read (issue 15: only Identity-H's fixed two bytes
/// and a ToUnicode stream were read; ToUnicode names, embedded CMaps with one- and two-byte
/// codes and the predefined CJK CMaps dropped every glyph).
#[derive(Default)]
struct CidCoding {
    split: Split,
    /// Code → CID of an embedded Encoding CMap (its `cidrange`s, then its `usecmap` parents'
    /// ones); empty: the code is the CID (Identity-H/V, and what we cannot tell).
    cids: Vec<super::cmap::ToUnicode>,
    /// The bytes of a code are text in a legacy CJK charset (Shift-JIS, GBK, Big5, UHC…).
    charset: Option<&'static encoding_rs::Encoding>,
    /// Codes are UCS-2 / UTF-16 code units (Uni…-UCS2/UTF16 CMaps).
    codes_are_unicode: bool,
    /// GID → text from the embedded TrueType's own cmap, with the CIDToGIDMap (None: identity).
    gid_text: Option<HashMap<u16, char>>,
    cid_to_gid: Option<Vec<u16>>,
    /// Adobe-Identity / Adobe-UCS collection: a CID no map tells is taken as the character
    /// itself, as poppler does.
    identity_text: bool,
    /// Adobe-Japan1/GB1/CNS1/Korea1: a CID no ToUnicode tells is read in the collection's
    /// table, as poppler does with poppler-data (issue 15: pLaTeX documents set in CFF CID
    /// fonts through Identity-H without ToUnicode came out without their Japanese).
    collection: Option<super::cid_tables::Collection>,
    /// Default advance of one-byte codes in charset CMaps (half-width).
    half_width: bool,
}

#[derive(Default)]
enum Split {
    #[default]
    Two,
    /// By the embedded CMap's code space ranges.
    Spaces(Vec<super::cmap::Space>),
    /// Legacy double-byte charsets: a lead byte starts a two-byte code (Shift-JIS: 0x81–0x9F
    /// and 0xE0–0xFC, its half-width katakana are one byte; the EUC family, GBK, Big5, UHC:
    /// 0x81–0xFE).
    Lead { sjis: bool },
    /// UTF-16: two bytes, or four for a surrogate pair.
    Utf16,
}

fn deref<'a>(doc: &'a Document, obj: &'a Object) -> &'a Object {
    match obj {
        Object::Reference(id) => doc.get_object(*id).unwrap_or(obj),
        o => o,
    }
}

fn num(o: &Object) -> Option<f32> {
    match o {
        Object::Integer(i) => Some(*i as f32),
        Object::Real(r) => Some(*r),
        _ => None,
    }
    .filter(|v| v.is_finite())
}

fn get<'a>(doc: &'a Document, d: &'a Dictionary, key: &[u8]) -> Option<&'a Object> {
    d.get(key).ok().map(|o| deref(doc, o))
}

/// Helvetica's advance widths for ASCII 32..=126: a fallback for the standard fonts, which
/// may come without a `Widths` array (better than one fixed width for finding word gaps).
const HELVETICA_ASCII: [u16; 95] = [
    278, 278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278, 278, 556, 556, 556,
    556, 556, 556, 556, 556, 556, 556, 278, 278, 584, 584, 584, 556, 1015, 667, 667, 722, 722, 667,
    611, 778, 722, 278, 500, 667, 556, 833, 722, 778, 667, 778, 722, 667, 611, 722, 667, 944, 667,
    667, 611, 278, 278, 278, 469, 556, 333, 556, 556, 500, 556, 556, 278, 556, 556, 222, 222, 500,
    222, 833, 556, 556, 556, 556, 333, 500, 278, 556, 500, 722, 500, 500, 500, 334, 260, 334, 584,
];

/// A character's advance in Helvetica (em): ASCII from its metrics, anything else 0.556 (for
/// text drawn with no font program at hand: a form field's value without an appearance).
pub fn helvetica_advance(c: char) -> f32 {
    match c as u32 {
        c @ 32..=126 => HELVETICA_ASCII[c as usize - 32] as f32 * GLYPH_SCALE,
        _ => 0.556,
    }
}

/// The standard face whose metrics a simple font without a `Widths` array is measured with.
#[derive(Debug, Clone, Copy, PartialEq)]
enum StandardFace {
    /// A column of `std14_widths::LATIN` (Times and Helvetica, by weight and slant).
    Latin(usize),
    Courier,
    Symbol,
    /// ZapfDingbats, by code in its own encoding.
    Dingbats,
}

/// The base-14 font names and the aliases poppler's `Gfx8BitFont` takes for them (its
/// `base14FontMap`: the PDF 1.4 reference's implementation note 44 and what Acrobat 4 wrote
/// for Arial, Times New Roman and Courier New), matched exactly once spaces are removed, in
/// byte order for a binary search. The faces are the metrics' columns: Times-Roman 0, -Bold
/// 1, -Italic 2, -BoldItalic 3, Helvetica 4 and Helvetica-Bold 5 (the obliques have their
/// upright face's widths).
const BASE14_NAMES: &[(&[u8], StandardFace)] = {
    use StandardFace::{Courier as C, Latin as L, Symbol as S};
    &[
        (b"Arial", L(4)),
        (b"Arial,Bold", L(5)),
        (b"Arial,BoldItalic", L(5)),
        (b"Arial,Italic", L(4)),
        (b"Arial-Bold", L(5)),
        (b"Arial-BoldItalic", L(5)),
        (b"Arial-BoldItalicMT", L(5)),
        (b"Arial-BoldMT", L(5)),
        (b"Arial-Italic", L(4)),
        (b"Arial-ItalicMT", L(4)),
        (b"ArialMT", L(4)),
        (b"Courier", C),
        (b"Courier,Bold", C),
        (b"Courier,BoldItalic", C),
        (b"Courier,Italic", C),
        (b"Courier-Bold", C),
        (b"Courier-BoldOblique", C),
        (b"Courier-Oblique", C),
        (b"CourierNew", C),
        (b"CourierNew,Bold", C),
        (b"CourierNew,BoldItalic", C),
        (b"CourierNew,Italic", C),
        (b"CourierNew-Bold", C),
        (b"CourierNew-BoldItalic", C),
        (b"CourierNew-Italic", C),
        (b"CourierNewPS-BoldItalicMT", C),
        (b"CourierNewPS-BoldMT", C),
        (b"CourierNewPS-ItalicMT", C),
        (b"CourierNewPSMT", C),
        (b"Helvetica", L(4)),
        (b"Helvetica,Bold", L(5)),
        (b"Helvetica,BoldItalic", L(5)),
        (b"Helvetica,Italic", L(4)),
        (b"Helvetica-Bold", L(5)),
        (b"Helvetica-BoldItalic", L(5)),
        (b"Helvetica-BoldOblique", L(5)),
        (b"Helvetica-Italic", L(4)),
        (b"Helvetica-Oblique", L(4)),
        (b"Symbol", S),
        (b"Symbol,Bold", S),
        (b"Symbol,BoldItalic", S),
        (b"Symbol,Italic", S),
        (b"SymbolMT", S),
        (b"SymbolMT,Bold", S),
        (b"SymbolMT,BoldItalic", S),
        (b"SymbolMT,Italic", S),
        (b"Times-Bold", L(1)),
        (b"Times-BoldItalic", L(3)),
        (b"Times-Italic", L(2)),
        (b"Times-Roman", L(0)),
        (b"TimesNewRoman", L(0)),
        (b"TimesNewRoman,Bold", L(1)),
        (b"TimesNewRoman,BoldItalic", L(3)),
        (b"TimesNewRoman,Italic", L(2)),
        (b"TimesNewRoman-Bold", L(1)),
        (b"TimesNewRoman-BoldItalic", L(3)),
        (b"TimesNewRoman-Italic", L(2)),
        (b"TimesNewRomanPS", L(0)),
        (b"TimesNewRomanPS-Bold", L(1)),
        (b"TimesNewRomanPS-BoldItalic", L(3)),
        (b"TimesNewRomanPS-BoldItalicMT", L(3)),
        (b"TimesNewRomanPS-BoldMT", L(1)),
        (b"TimesNewRomanPS-Italic", L(2)),
        (b"TimesNewRomanPS-ItalicMT", L(2)),
        (b"TimesNewRomanPSMT", L(0)),
        (b"TimesNewRomanPSMT,Bold", L(1)),
        (b"TimesNewRomanPSMT,BoldItalic", L(3)),
        (b"TimesNewRomanPSMT,Italic", L(2)),
        (b"ZapfDingbats", StandardFace::Dingbats),
    ]
};

/// Which standard face measures a simple font that comes without `Widths` (the 14 standard
/// fonts need none, and some producers leave them out for Arial or Times New Roman too), as
/// poppler's `Gfx8BitFont` decides it:
/// - `base_font`: the font's name (`font_name`: `BaseFont`, else `FontName`, else `Name`).
///   With its spaces removed, a name of `BASE14_NAMES`
///   (exactly: "Arial Black", "Helvetica-Narrow", "Times-RomanSC" are not base-14 names, and
///   neither is a subset-tagged `ABCDEF+Arial`, whose font program is embedded) is that face.
/// - `flags`: the descriptor's `Flags`, None when the font has no descriptor or no integer
///   `Flags` (poppler then assumes serif, "Times-Roman by default"). Any other name is
///   measured by them alone: fixed pitch (bit 1) Courier, else serif (bit 2) Times, else
///   Helvetica; bold from the force-bold bit (19), italic from bit 7, never from the name.
///
/// Issue 15: a hyperref manual in non-embedded Times had every word measured with Helvetica's
/// widths by code, wider than Times', so the gap before a word in another font fell under
/// 0.1 em and `like hyperref` read `likehyperref`; the ninth round matched the names by
/// prefix, which took "Arial Black" and "Times-RomanSC" for standard faces poppler does not.
fn standard_face(base_font: &[u8], flags: Option<i64>) -> StandardFace {
    let name: Vec<u8> = base_font.iter().copied().filter(|&c| c != b' ').collect();
    if let Ok(i) = BASE14_NAMES.binary_search_by(|(n, _)| n.cmp(&name.as_slice())) {
        return BASE14_NAMES[i].1;
    }
    let flags = flags.unwrap_or(2);
    let bold = flags & (1 << 18) != 0;
    let italic = flags & (1 << 6) != 0;
    if flags & 1 != 0 {
        StandardFace::Courier
    } else if flags & 2 != 0 {
        StandardFace::Latin(usize::from(bold) + 2 * usize::from(italic))
    } else {
        StandardFace::Latin(4 + usize::from(bold))
    }
}

/// What a standard face says of one code's width.
#[derive(Debug, Clone, Copy, PartialEq)]
enum StandardWidth {
    /// The face's metric (em).
    Metric(f32),
    /// The glyph is one the face's AFM lacks: poppler gives it the descriptor's
    /// `MissingWidth`, else 0.
    Missing,
    /// Nothing known here: the reader's own fallback.
    Unknown,
}

/// The width of the glyph for `code` in a standard face, looked up as poppler looks it up, by
/// the glyph the font's encoding names (before any ToUnicode):
/// - `name`: the glyph name a `Differences` array gives the code, looked up by that name in
///   the face's AFM metrics: a name the AFM lacks (`uni0041`, `u0041`, `f_i`, `a.sc`, `g65`,
///   `.notdef`, a name that passes through as its code) is `Missing` (poppler:
///   `MissingWidth`, else 0), whatever it reads as.
/// - `text`: without such a name, what the base encoding's glyph reads as (its names are the
///   AFMs' own, so the character is the glyph): one character is that glyph; the ligatures
///   `fi` and `fl` are the AFM's `fi` and `fl` glyphs; `ff`, `ffi` and `ffl`, which the
///   standard fonts' AFMs do not have, are `Missing`; U+00A0 and U+00AD, which WinAnsi and
///   Latin-1 name `space` and `hyphen` in poppler's tables, are measured as those. Symbol and
///   ZapfDingbats are measured by code in their own encodings.
/// - `code`: code 32 that finds no width is the space (poppler sets it first, "kludge for
///   broken PDF files that encode char 32 as .notdef", and replaces it only by a width found).
fn standard_width(face: StandardFace, code: u8, name: Option<&[u8]>, text: &str) -> StandardWidth {
    let w = standard_width_of(face, code, name, text);
    if code == 32 && !matches!(w, StandardWidth::Metric(_)) {
        return standard_width_of(face, 32, Some(b"space"), "");
    }
    w
}

/// `standard_width` without the space kludge.
fn standard_width_of(
    face: StandardFace,
    code: u8,
    name: Option<&[u8]>,
    text: &str,
) -> StandardWidth {
    use super::std14_widths::{LATIN, LATIN_NAMES, SYMBOL, SYMBOL_NAMES, ZAPF_DINGBATS};
    if let Some(name) = name {
        let latin = || {
            LATIN_NAMES
                .binary_search_by(|(k, _)| k.as_bytes().cmp(name))
                .ok()
                .map(|i| LATIN_NAMES[i].1)
        };
        let w = match face {
            StandardFace::Symbol => SYMBOL_NAMES
                .binary_search_by(|(k, _)| k.as_bytes().cmp(name))
                .ok()
                .map(|i| SYMBOL_NAMES[i].1),
            StandardFace::Dingbats => ZAPF_DINGBATS
                .iter()
                .find(|(_, n, _)| n.as_bytes() == name)
                .map(|(_, _, w)| *w),
            StandardFace::Courier => latin().map(|_| 600),
            StandardFace::Latin(col) => latin().map(|ws| ws[col]).filter(|&w| w > 0),
        };
        return match w {
            Some(w) => StandardWidth::Metric(f32::from(w) * GLYPH_SCALE),
            None => StandardWidth::Missing,
        };
    }
    let w = match face {
        StandardFace::Symbol => SYMBOL
            .binary_search_by(|(k, _)| k.cmp(&code))
            .ok()
            .map(|i| SYMBOL[i].1),
        StandardFace::Dingbats => ZAPF_DINGBATS
            .binary_search_by(|(k, _, _)| k.cmp(&code))
            .ok()
            .map(|i| ZAPF_DINGBATS[i].2),
        _ => {
            let c = match text {
                "fi" => '\u{FB01}',
                "fl" => '\u{FB02}',
                "ff" | "ffi" | "ffl" | "\u{FB00}" | "\u{FB03}" | "\u{FB04}" => {
                    return StandardWidth::Missing
                }
                "\u{A0}" => ' ',
                "\u{AD}" => '-',
                _ => {
                    let mut chars = text.chars();
                    match (chars.next(), chars.next()) {
                        (Some(c), None) => c,
                        _ => return StandardWidth::Unknown,
                    }
                }
            };
            if face == StandardFace::Courier {
                Some(600)
            } else {
                let StandardFace::Latin(col) = face else {
                    return StandardWidth::Unknown;
                };
                LATIN
                    .binary_search_by(|(k, _)| k.cmp(&c))
                    .ok()
                    .map(|i| LATIN[i].1[col])
            }
        }
    };
    match w {
        Some(w) => StandardWidth::Metric(f32::from(w) * GLYPH_SCALE),
        None => StandardWidth::Unknown,
    }
}

/// The font's name as poppler takes it: `BaseFont`, else the descriptor's `FontName`, else
/// `Name` (some producers leave `BaseFont` out; the name still decides ZapfDingbats'
/// encoding and the standard face). Empty: none of them.
fn font_name<'a>(doc: &'a Document, font: &'a Dictionary) -> &'a [u8] {
    let name = |d: &'a Dictionary, key: &[u8]| get(doc, d, key).and_then(|o| o.as_name().ok());
    name(font, b"BaseFont")
        .or_else(|| {
            get(doc, font, b"FontDescriptor")
                .and_then(|o| o.as_dict().ok())
                .and_then(|fd| name(fd, b"FontName"))
        })
        .or_else(|| name(font, b"Name"))
        .unwrap_or(b"")
}

/// Text of a glyph name that the names alone tell: uniXXXX, uXXXX, ligatures, a few common
/// names lopdf's list may lack. None: ask the glyph list.
fn glyph_name_text(name: &[u8]) -> Option<String> {
    let s = std::str::from_utf8(name).ok()?;
    // "a.sc", "f_i.alt": the part before the first dot names the glyph.
    let base = s.split('.').next().unwrap_or(s);
    if base.contains('_') && base.len() > 1 {
        // Every part must be known here, else the glyph list is asked part by part.
        let parts: Option<Vec<String>> = base
            .split('_')
            .map(|p| glyph_name_text(p.as_bytes()))
            .collect();
        return parts.map(|p| p.concat());
    }
    if let Some(hex) = base.strip_prefix("uni") {
        if hex.len() >= 4 && hex.len() % 4 == 0 && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            let units: Vec<u16> = (0..hex.len() / 4)
                .filter_map(|i| u16::from_str_radix(&hex[i * 4..i * 4 + 4], 16).ok())
                .collect();
            return Some(String::from_utf16_lossy(&units));
        }
    }
    if let Some(hex) = base.strip_prefix('u') {
        if (4..=6).contains(&hex.len()) && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return u32::from_str_radix(hex, 16)
                .ok()
                .and_then(char::from_u32)
                .map(String::from);
        }
    }
    let t = match base {
        "ff" => "ff",
        "fi" => "fi",
        "fl" => "fl",
        "ffi" => "ffi",
        "ffl" => "ffl",
        "space" | "nbspace" | "nonbreakingspace" => " ",
        "hyphen" | "sfthyphen" | "softhyphen" => "-",
        _ if base.len() == 1 && base.as_bytes()[0].is_ascii_alphanumeric() => base,
        _ => return None,
    };
    Some(t.to_string())
}

/// A glyph name of the form `Ann`, `ABnn` or `nn` (a letter or two and a decimal number:
/// dvips' bitmap Type3 fonts name their glyphs `/a0` … `/a127`), or with `hex` `Axx` / `xx`
/// (two hex digits), read as poppler's `parseNumericName` reads it: the number, trailing
/// punctuation allowed.
fn parse_numeric_name(name: &[u8], hex: bool) -> Option<u32> {
    let digits: &[u8] = if hex {
        let n = name
            .iter()
            .take_while(|b| b.is_ascii_alphanumeric())
            .count();
        match n {
            3 if name[0].is_ascii_alphabetic() => &name[1..3],
            2 => &name[..2],
            _ => return None,
        }
    } else {
        let alpha = name
            .iter()
            .take(2)
            .take_while(|b| b.is_ascii_alphabetic())
            .count();
        let rest = &name[alpha..];
        let n = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        if rest[n..].iter().any(|b| b.is_ascii_alphanumeric()) {
            return None;
        }
        &rest[..n]
    };
    if digits.is_empty() || digits.len() > 9 {
        return None;
    }
    u32::from_str_radix(std::str::from_utf8(digits).ok()?, if hex { 16 } else { 10 }).ok()
}

/// Whether a font's `Differences` name its glyphs by number, as poppler decides it
/// (`testForNumericNames`): every run starts at a code up to 5 and every name is numeric.
/// Then a name no glyph list knows is read as its number (issue 15: TeX documents set in
/// bitmap fonts came out empty); otherwise such a name passes its code through (see
/// `load_simple`), which for Ghostscript's `/a65` at code 65 is the same letter.
fn numeric_names(doc: &Document, diffs: &[Object], hex: bool) -> bool {
    !diffs.is_empty()
        && diffs.iter().take(4096).all(|o| match deref(doc, o) {
            Object::Integer(i) => *i <= 5,
            Object::Name(n) => parse_numeric_name(n, hex).is_some(),
            _ => false,
        })
}

/// Whether unknown names look like `Axx` / `xx` with a hex letter among the two digits
/// (poppler then reads numeric names as hexadecimal).
fn hex_name(name: &[u8]) -> bool {
    let hexletter = |b: &u8| matches!(b, b'a'..=b'f' | b'A'..=b'F');
    match name {
        [a, x, y] => {
            a.is_ascii_alphabetic()
                && x.is_ascii_hexdigit()
                && y.is_ascii_hexdigit()
                && (hexletter(x) || hexletter(y))
        }
        [x, y] => x.is_ascii_hexdigit() && y.is_ascii_hexdigit() && hexletter(y),
        _ => false,
    }
}

/// Text of a glyph name: the glyph list (and the rules of `glyph_list_text`), else, when the
/// font's `Differences` name glyphs by number (`numeric`: Some(hex)), the name's number
/// (poppler reads numeric names only there, never in a font program's own encoding:
/// Ghostscript's Dingbats name their glyphs `a120`, and pdftotext passes their codes
/// through). Control characters are no text. Empty: no list knows it.
fn name_text(
    doc: &Document,
    name: &[u8],
    numeric: Option<bool>,
    cache: &mut HashMap<Vec<u8>, Box<str>>,
) -> Box<str> {
    let t = glyph_list_text(doc, name, cache);
    match numeric {
        Some(hex) if t.is_empty() => parse_numeric_name(name, hex)
            .and_then(char::from_u32)
            .filter(|c| !c.is_control())
            .map(|c| c.to_string().into())
            .unwrap_or_default(),
        _ => t,
    }
}

/// Glyph-name → text through lopdf's glyph list (asked with a one-entry Differences).
fn glyph_list_text(
    doc: &Document,
    name: &[u8],
    cache: &mut HashMap<Vec<u8>, Box<str>>,
) -> Box<str> {
    if let Some(t) = cache.get(name) {
        return t.clone();
    }
    let base = name.split(|&c| c == b'.').next().unwrap_or(name);
    let text: Box<str> = match glyph_name_text(name) {
        Some(t) => t.into(),
        // A ligature of names only the glyph list knows (`afii57444_afii57411`, lam-alef:
        // issue 15's Farsi chart printed the names). A part no list knows is left out, as
        // poppler leaves it (Velthuis' Devanagari `d_dh` reads `d`); none known: nothing.
        None if base.contains(&b'_') && !base.starts_with(b"_") => base
            .split(|&c| c == b'_')
            .filter(|p| !p.is_empty() && !p.contains(&b'_'))
            .take(8)
            .map(|p| glyph_list_text(doc, p, cache))
            .collect::<Vec<Box<str>>>()
            .concat()
            .into(),
        // The glyph list is asked for the name before its first dot (the glyph list
        // specification's rule): `afii57415.isol`, `uni06CC.medi`, `alef.fina` are the letter's
        // positional forms (issue 15: a Farsi font chart lost every letter so named).
        None => {
            let mut enc = Dictionary::new();
            enc.set(
                "Differences",
                Object::Array(vec![Object::Integer(65), Object::Name(base.to_vec())]),
            );
            let mut font = Dictionary::new();
            font.set("Type", Object::Name(b"Font".to_vec()));
            font.set("Encoding", Object::Dictionary(enc));
            let listed: Box<str> = match font.get_font_encoding_with_limit(doc, MAX_CMAP_BYTES) {
                Ok(e) => match e.bytes_to_string(&[65]) {
                    // A name the list does not know makes lopdf fall back to Standard: "A".
                    Ok(s) if s != "A" || base == b"A" => s.into(),
                    _ => "".into(),
                },
                Err(_) => "".into(),
            };
            if listed.is_empty() {
                // Arabic glyphs named after their Unicode names (`behinitial`): fonts converted
                // from TrueType without the glyph list's names (issue 15: Ghostscript's
                // embedded Traditional Arabic read as nothing, pdftotext's as Latin letters).
                std::str::from_utf8(base)
                    .ok()
                    .and_then(super::arabic_names::lookup)
                    .map(|c| c.to_string().into())
                    .unwrap_or(listed)
            } else {
                listed
            }
        }
    };
    if cache.len() < 4096 {
        cache.insert(name.to_vec(), text.clone());
    }
    text
}

/// The 256-entry base table of a named simple encoding (lopdf's tables).
fn base_table(doc: &Document, name: Option<&[u8]>) -> Vec<Box<str>> {
    let mut font = Dictionary::new();
    font.set("Type", Object::Name(b"Font".to_vec()));
    if let Some(n) = name {
        font.set("Encoding", Object::Name(n.to_vec()));
    }
    let enc = font.get_font_encoding_with_limit(doc, MAX_CMAP_BYTES).ok();
    (0u16..256)
        .map(|b| {
            enc.as_ref()
                .and_then(|e| e.bytes_to_string(&[b as u8]).ok())
                .unwrap_or_default()
                .into()
        })
        .collect()
}

/// Adobe's Symbol encoding, codes 0x20–0xFE (`\0`: no glyph); Greek capitals Delta and
/// Omega as the letters (U+0394, U+03A9) rather than the increment and ohm signs.
const SYMBOL: &str = " !∀#∃%&∋()∗+,−./0123456789:;<=>?≅ΑΒΧΔΕΦΓΗΙϑΚΛΜΝΟΠΘΡΣΤΥςΩΞΨΖ[∴]⊥_\0αβχδεφγηιϕκλμνοπθρστυϖωξψζ{|}∼\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0ϒ′≤⁄∞ƒ♣♦♥♠↔←↑→↓°±″≥×∝∂•÷≠≡≈…⏐⎯↵ℵℑℜ℘⊗⊕∅∩∪⊃⊇⊄⊂⊆∈∉∠∇®©™∏√⋅¬∧∨⇔⇐⇑⇒⇓◊〈®©™∑⎛⎜⎝⎡⎢⎣⎧⎨⎩⎪\0〉∫⌠⎮⌡⎞⎟⎠⎤⎥⎦⎫⎬⎭";

/// The character of a code in ZapfDingbats' built-in encoding (0x20 is the space): the
/// Unicode Dingbats block was laid out after that font, so most codes are U+2700 plus the
/// code less 0x20, or for 0xA1 on U+2760 plus the code less 0xA0; the rest are the
/// characters Unicode already had (☎, ☛, ★, ●, ■, the card suits, ①–⑩, the arrows), as the
/// ZapfDingbats glyph list maps them. None: no glyph (0x7F, 0x8E–0xA0, 0xF0, 0xFF).
fn zapf_dingbats_char(code: u8) -> Option<char> {
    let u = match code {
        0x20 => 0x20,
        0x25 => 0x260E,
        0x2A => 0x261B,
        0x2B => 0x261E,
        0x48 => 0x2605,
        0x6C => 0x25CF,
        0x6E => 0x25A0,
        0x73 => 0x25B2,
        0x74 => 0x25BC,
        0x75 => 0x25C6,
        0x77 => 0x25D7,
        0x21..=0x7E => 0x2700 + u32::from(code) - 0x20,
        0x80..=0x8D => 0x2768 + u32::from(code) - 0x80,
        0xA1..=0xA7 => 0x2760 + u32::from(code) - 0xA0,
        0xA8 => 0x2663,
        0xA9 => 0x2666,
        0xAA => 0x2665,
        0xAB => 0x2660,
        0xAC..=0xB5 => 0x2460 + u32::from(code) - 0xAC,
        0xB6..=0xD4 => 0x2776 + u32::from(code) - 0xB6,
        0xD5 => 0x2192,
        0xD6 => 0x2194,
        0xD7 => 0x2195,
        0xD8..=0xEF => 0x2798 + u32::from(code) - 0xD8,
        0xF1..=0xFE => 0x27B1 + u32::from(code) - 0xF1,
        _ => return None,
    };
    char::from_u32(u)
}

/// The text of a ZapfDingbats glyph name (`a20` is ✔): its code in the font's own encoding,
/// read as there. None: not one of its names.
fn zapf_dingbats_name_text(name: &[u8]) -> Option<char> {
    use super::std14_widths::ZAPF_DINGBATS;
    let (code, _, _) = ZAPF_DINGBATS
        .iter()
        .find(|(_, n, _)| n.as_bytes() == name)?;
    zapf_dingbats_char(*code)
}

/// ZapfDingbats' built-in encoding as a 256-entry table (see `zapf_dingbats_char`).
fn zapf_dingbats_table() -> Vec<Box<str>> {
    (0..=255u8)
        .map(|c| {
            zapf_dingbats_char(c)
                .map(|c| c.to_string())
                .unwrap_or_default()
                .into()
        })
        .collect()
}

/// The encoding a simple font brings itself when the PDF names none: Symbol's for the
/// standard Symbol font, the `dup <code> /<glyph> put` entries of an embedded Type1 program's
/// clear-text part (pdfTeX writes no /Encoding for Computer Modern: CMMI's code 11 is alpha),
/// or an embedded CFF program's (`/FontFile3`) encoding and charset (issue 15: dvipdfmx and
/// Ghostscript embed TeX's fonts as CFF, and their ligatures and Greek came out as Standard
/// encoding's letters or nothing).
///
/// The flag is true when a glyph the encoding names is one no list knows (see `load_simple`).
fn builtin_table(
    doc: &Document,
    font: &Dictionary,
    names: &mut HashMap<Vec<u8>, Box<str>>,
) -> Option<(Vec<Box<str>>, bool)> {
    let fd = get(doc, font, b"FontDescriptor").and_then(|o| o.as_dict().ok());
    let file = fd.and_then(|fd| get(doc, fd, b"FontFile"));
    if let Some(Object::Stream(file)) = file {
        let data = super::decode_stream(doc, file, MAX_FONT_BYTES).ok()?;
        let clear_len = get(doc, &file.dict, b"Length1")
            .and_then(|o| o.as_i64().ok())
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or(data.len())
            .min(data.len());
        let clear = &data[..clear_len];
        let clear = match clear.windows(5).position(|w| w == b"eexec") {
            Some(i) => &clear[..i],
            None => clear,
        };
        let toks: Vec<&[u8]> = clear
            .split(|c| c.is_ascii_whitespace())
            .filter(|t| !t.is_empty())
            .take(1 << 16)
            .collect();
        let mut table = base_table(doc, None);
        let (mut found, mut unknown) = (false, false);
        for w in toks.windows(4) {
            if w[0] == b"dup" && w[3] == b"put" && w[2].starts_with(b"/") {
                let code = std::str::from_utf8(w[1])
                    .ok()
                    .and_then(|c| c.parse::<u8>().ok());
                if let Some(code) = code {
                    let t = name_text(doc, &w[2][1..], None, names);
                    unknown |= t.is_empty() && &w[2][1..] != b".notdef";
                    table[code as usize] = t;
                    found = true;
                }
            }
        }
        return found.then_some((table, unknown));
    }
    if let Some(Object::Stream(file)) = fd.and_then(|fd| get(doc, fd, b"FontFile3")) {
        if let Some(t) = cff_table(doc, file, names) {
            return Some(t);
        }
    }
    let base = Some(font_name(doc, font)).filter(|n| !n.is_empty())?;
    // A subset tag ("ABCDEF+Symbol") and style suffixes do not change the encoding.
    let base = base.splitn(2, |&c| c == b'+').last().unwrap_or(base);
    if base.starts_with(b"Symbol") {
        let mut table: Vec<Box<str>> = vec!["".into(); 256];
        for (i, c) in SYMBOL.chars().enumerate() {
            if c != '\0' {
                table[0x20 + i] = c.to_string().into();
            }
        }
        return Some((table, false));
    }
    None
}

/// Code → text of an embedded CFF font program by its own encoding: code → glyph (the CFF's
/// encoding, Standard where it has none for a code) → glyph name (its charset) → the glyph
/// list. None for a CID-keyed CFF, which has no names.
fn cff_table(
    doc: &Document,
    file: &lopdf::Stream,
    names: &mut HashMap<Vec<u8>, Box<str>>,
) -> Option<(Vec<Box<str>>, bool)> {
    let data = super::decode_stream(doc, file, MAX_FONT_BYTES).ok()?;
    let cff = ttf_parser::cff::Table::parse(&data)?;
    let mut table = base_table(doc, None);
    let (mut found, mut unknown) = (false, false);
    for code in 0u8..=255 {
        let name = cff
            .glyph_index(code)
            .filter(|g| g.0 != 0)
            .and_then(|g| cff.glyph_name(g));
        if let Some(name) = name {
            let t = name_text(doc, name.as_bytes(), None, names);
            unknown |= t.is_empty() && name != ".notdef";
            table[code as usize] = t;
            found = true;
        }
    }
    found.then_some((table, unknown))
}

/// The ToUnicode CMap of a font, as a code → UTF-16 lookup. Read by `super::cmap`, not lopdf's
/// CMap parser, which expands every range code by code (issue 21).
fn to_unicode(doc: &Document, font: &Dictionary) -> Option<CodeLookup> {
    let Object::Stream(stream) = get(doc, font, b"ToUnicode")? else {
        return None;
    };
    let bytes = super::decode_stream(doc, stream, MAX_CMAP_BYTES).ok()?;
    let cmap = super::cmap::parse(&bytes)?;
    Some(Box::new(move |code, len| cmap.get(code, len)))
}

impl Font {
    pub fn load(doc: &Document, font: &Dictionary, names: &mut HashMap<Vec<u8>, Box<str>>) -> Font {
        let subtype = get(doc, font, b"Subtype")
            .and_then(|o| o.as_name().ok())
            .unwrap_or(b"Type1");
        if subtype == b"Type0" {
            Font::load_composite(doc, font)
        } else {
            Font::load_simple(doc, font, subtype, names)
        }
    }

    fn load_simple(
        doc: &Document,
        font: &Dictionary,
        subtype: &[u8],
        names: &mut HashMap<Vec<u8>, Box<str>>,
    ) -> Font {
        // Base encoding and differences.
        let enc = get(doc, font, b"Encoding");
        let (base_name, diffs): (Option<&[u8]>, Option<&Vec<Object>>) = match enc {
            Some(Object::Name(n)) => (Some(n.as_slice()), None),
            Some(Object::Dictionary(d)) => (
                get(doc, d, b"BaseEncoding").and_then(|o| o.as_name().ok()),
                get(doc, d, b"Differences").and_then(|o| o.as_array().ok()),
            ),
            _ => (None, None),
        };
        let base_name = match base_name {
            Some(
                n @ (b"WinAnsiEncoding" | b"MacRomanEncoding" | b"MacExpertEncoding"
                | b"StandardEncoding"),
            ) => Some(n),
            _ => None,
        };
        // ZapfDingbats (any name ending so) has its own encoding whatever the font dictionary
        // names, as in poppler's `Gfx8BitFont` (issue 15: a form's check boxes, drawn with
        // `4`, ZapfDingbats' ✔, read as the digit 4).
        let base_font = font_name(doc, font);
        let zapf = base_font.ends_with(b"ZapfDingbats");
        let (mut table, mut unknown) = match base_name {
            _ if zapf => (zapf_dingbats_table(), false),
            Some(_) => (base_table(doc, base_name), false),
            // No base encoding named: the font's own (issue 15: Symbol and TeX maths fonts
            // came out as Latin letters through StandardEncoding).
            None => {
                builtin_table(doc, font, names).unwrap_or_else(|| (base_table(doc, None), false))
            }
        };
        // The glyph name `Differences` gives each code (the standard widths go by it).
        let mut glyphs: Vec<Option<&[u8]>> = vec![None; 256];
        if let Some(diffs) = diffs {
            let hex = diffs.iter().take(4096).any(|o| match deref(doc, o) {
                Object::Name(n) => hex_name(n) && glyph_list_text(doc, n, names).is_empty(),
                _ => false,
            });
            let numeric = numeric_names(doc, diffs, hex).then_some(hex);
            let mut code: i64 = 0;
            for o in diffs.iter().take(4096) {
                match deref(doc, o) {
                    Object::Integer(i) => code = *i,
                    Object::Name(n) => {
                        if (0..256).contains(&code) {
                            glyphs[code as usize] = Some(n.as_slice());
                            let t = match zapf.then(|| zapf_dingbats_name_text(n)).flatten() {
                                Some(c) => c.to_string().into(),
                                None => name_text(doc, n, numeric, names),
                            };
                            unknown |= t.is_empty() && n != b".notdef";
                            table[code as usize] = t;
                        }
                        // Saturating: `[9223372036854775807 /a /b]` must not overflow; names
                        // past 255 are ignored, as poppler ignores them.
                        code = code.saturating_add(1);
                    }
                    _ => {}
                }
            }
        }
        // A font that names a glyph no list knows: every code still without text is taken
        // as itself, as poppler does (`Gfx8BitFont`, "simple pass-through mapping for unknown
        // character names"): Ghostscript names the glyphs of TeX's bitmap fonts /BT, /CP…
        // and ArabTeX's `char92`, Velthuis' Devanagari fonts name theirs /ka, /halfva, and
        // their codes are the documents' transliteration (issue 15: such pages read as
        // nothing, pdftotext's as those letters). Control codes stay no text.
        if unknown {
            for (code, slot) in table.iter_mut().enumerate() {
                if slot.is_empty() {
                    if let Some(c) = char::from_u32(code as u32).filter(|c| !c.is_control()) {
                        *slot = c.to_string().into();
                    }
                }
            }
        }
        // No widths given: the standard face's, by the glyphs the encoding names, before
        // ToUnicode (see `standard_face`, `standard_width`).
        let explicit = get(doc, font, b"Widths").and_then(|o| o.as_array().ok());
        let standard: Option<Vec<StandardWidth>> = (explicit.is_none() && subtype != b"Type3")
            .then(|| {
                let flags = get(doc, font, b"FontDescriptor")
                    .and_then(|o| o.as_dict().ok())
                    .and_then(|fd| get(doc, fd, b"Flags"))
                    .and_then(|o| o.as_i64().ok());
                let face = standard_face(base_font, flags);
                (0..256)
                    .map(|c| standard_width(face, c as u8, glyphs[c], &table[c]))
                    .collect()
            });
        // ToUnicode wins where it knows the code.
        if let Some(tu) = to_unicode(doc, font) {
            for (code, slot) in table.iter_mut().enumerate() {
                if let Some(units) = tu(code as u32, 1) {
                    let s = String::from_utf16_lossy(&units);
                    if !s.is_empty() && s != "\u{FFFD}" {
                        *slot = s.into();
                    }
                }
            }
        }
        // Widths.
        let scale = if subtype == b"Type3" {
            get(doc, font, b"FontMatrix")
                .and_then(|o| o.as_array().ok())
                .and_then(|a| a.first())
                .and_then(num)
                .map(f32::abs)
                .filter(|v| *v > 0.0 && *v < 10.0)
                .unwrap_or(GLYPH_SCALE)
        } else {
            GLYPH_SCALE
        };
        let missing = get(doc, font, b"FontDescriptor")
            .and_then(|o| o.as_dict().ok())
            .and_then(|fd| get(doc, fd, b"MissingWidth"))
            .and_then(num)
            .filter(|w| *w > 0.0);
        let mono = base_font.windows(7).any(|w| w == b"Courier");
        let mut widths: Vec<f32> = (0..256)
            .map(|c: usize| {
                let known = standard.as_ref().map_or(StandardWidth::Unknown, |s| s[c]);
                if let StandardWidth::Metric(w) = known {
                    w
                } else if let Some(m) = missing {
                    m * scale
                } else if known == StandardWidth::Missing {
                    0.0
                } else if mono {
                    0.6
                } else if (32..=126).contains(&c) {
                    HELVETICA_ASCII[c - 32] as f32 * GLYPH_SCALE
                } else {
                    0.5
                }
            })
            .collect();
        if let Some(ws) = explicit {
            let first = get(doc, font, b"FirstChar")
                .and_then(|o| o.as_i64().ok())
                .unwrap_or(0);
            for (i, w) in ws.iter().take(MAX_WIDTH_ENTRIES).enumerate() {
                let code = first.saturating_add(i as i64);
                if (0..256).contains(&code) {
                    if let Some(w) = num(deref(doc, w)) {
                        widths[code as usize] = w * scale;
                    }
                }
            }
        }
        Font {
            two_byte: false,
            vertical: false,
            vertical_advance: -1.0,
            simple_text: table,
            simple_widths: widths,
            cid_widths: HashMap::new(),
            default_width: 0.5,
            to_unicode: None,
            cid: CidCoding::default(),
            cid_cache: HashMap::new(),
        }
    }

    fn load_composite(doc: &Document, font: &Dictionary) -> Font {
        let desc = get(doc, font, b"DescendantFonts")
            .and_then(|o| o.as_array().ok())
            .and_then(|a| a.first())
            .map(|o| deref(doc, o))
            .and_then(|o| o.as_dict().ok());
        let mut default_width = 1.0;
        let mut cid_widths = HashMap::new();
        if let Some(d) = desc {
            if let Some(dw) = get(doc, d, b"DW").and_then(num) {
                default_width = dw * GLYPH_SCALE;
            }
            if let Some(w) = get(doc, d, b"W").and_then(|o| o.as_array().ok()) {
                let mut i = 0;
                let mut entries = 0usize;
                while i < w.len() && entries < MAX_WIDTH_ENTRIES {
                    let Some(first) = num(deref(doc, &w[i])) else {
                        break;
                    };
                    let first = first.max(0.0) as u32;
                    match w.get(i + 1).map(|o| deref(doc, o)) {
                        Some(Object::Array(list)) => {
                            for (k, v) in list.iter().enumerate() {
                                if entries >= MAX_WIDTH_ENTRIES {
                                    break;
                                }
                                if let Some(v) = num(deref(doc, v)) {
                                    cid_widths
                                        .insert(first.saturating_add(k as u32), v * GLYPH_SCALE);
                                    entries += 1;
                                }
                            }
                            i += 2;
                        }
                        Some(o) => {
                            let last = num(o).unwrap_or(0.0).max(0.0) as u32;
                            let v = w.get(i + 2).map(|o| deref(doc, o)).and_then(num);
                            if let Some(v) = v {
                                let mut c = first;
                                while c <= last && entries < MAX_WIDTH_ENTRIES {
                                    cid_widths.insert(c, v * GLYPH_SCALE);
                                    entries += 1;
                                    c += 1;
                                }
                            }
                            i += 3;
                        }
                        None => break,
                    }
                }
            }
        }
        let to_unicode = to_unicode(doc, font);
        let mut cid = CidCoding::default();
        let vertical = match get(doc, font, b"Encoding") {
            Some(Object::Name(n)) => {
                predefined(n, &mut cid);
                n.ends_with(b"-V")
            }
            Some(Object::Stream(s)) => {
                embedded_cmap(doc, s, &mut cid, 0);
                get(doc, &s.dict, b"WMode").and_then(|o| o.as_i64().ok()) == Some(1)
            }
            _ => false,
        };
        // DW2 [v_y w1]: the vertical advance; -1000 (one em down) by default.
        let vertical_advance = desc
            .and_then(|d| get(doc, d, b"DW2"))
            .and_then(|o| o.as_array().ok())
            .and_then(|a| a.get(1))
            .and_then(num)
            .map(|w| w * GLYPH_SCALE)
            .filter(|w| *w < 0.0 && *w > -10.0)
            .unwrap_or(-1.0);
        if let Some(d) = desc {
            let ordering = get(doc, d, b"CIDSystemInfo")
                .and_then(|o| o.as_dict().ok())
                .and_then(|i| get(doc, i, b"Ordering"))
                .and_then(|o| o.as_str().ok())
                .unwrap_or(b"Identity");
            cid.identity_text = matches!(ordering, b"Identity" | b"UCS");
            cid.collection = super::cid_tables::Collection::from_ordering(ordering);
            // Without a ToUnicode stream, the embedded TrueType's cmap tells what its glyphs
            // are (pdftotext reads such lines as the glyph ids themselves).
            if to_unicode.is_none() && cid.charset.is_none() && !cid.codes_are_unicode {
                cid.gid_text = truetype_gid_text(doc, d);
                if cid.gid_text.is_some() {
                    cid.cid_to_gid = cid_to_gid(doc, d);
                }
            }
        }
        Font {
            two_byte: true,
            vertical,
            vertical_advance,
            simple_text: Vec::new(),
            simple_widths: Vec::new(),
            cid_widths,
            default_width,
            to_unicode,
            cid,
            cid_cache: HashMap::new(),
        }
    }

    /// Calls `f(code, text, width)` for each character code of a shown string.
    pub fn each_code(&mut self, bytes: &[u8], mut f: impl FnMut(u32, &str, f32)) {
        if !self.two_byte {
            for &b in bytes {
                f(
                    b as u32,
                    &self.simple_text[b as usize],
                    self.simple_widths[b as usize],
                );
            }
            return;
        }
        let mut rest = bytes;
        while !rest.is_empty() {
            let (code, n) = match &self.cid.split {
                Split::Two => (fold(&rest[..rest.len().min(2)]), rest.len().min(2)),
                Split::Spaces(spaces) => super::cmap::next_code(spaces, rest),
                Split::Lead { sjis } => {
                    let b = rest[0];
                    let lead = if *sjis {
                        matches!(b, 0x81..=0x9F | 0xE0..=0xFC)
                    } else {
                        b >= 0x81 && b != 0xFF
                    };
                    let n = if lead { 2 } else { 1 };
                    let n = n.min(rest.len());
                    (fold(&rest[..n]), n)
                }
                Split::Utf16 => {
                    let n = if (0xD8..=0xDB).contains(&rest[0]) {
                        4
                    } else {
                        2
                    };
                    let n = n.min(rest.len());
                    (fold(&rest[..n]), n)
                }
            };
            let raw = &rest[..n];
            rest = &rest[n..];
            let cid = if self.cid.cids.is_empty() {
                code
            } else {
                let mut maps = self.cid.cids.iter();
                maps.find_map(|m| m.cid(code, n as u8)).unwrap_or(0)
            };
            let width =
                self.cid_widths
                    .get(&cid)
                    .copied()
                    .unwrap_or(if self.cid.half_width && n == 1 {
                        self.default_width / 2.0
                    } else {
                        self.default_width
                    });
            // Codes of different lengths with the same value are different codes.
            let key = code | ((n as u32) << 29);
            if !self.cid_cache.contains_key(&key) {
                let text = self.code_text(code, n, raw, cid);
                if self.cid_cache.len() < 70_000 {
                    self.cid_cache.insert(key, text.into());
                } else {
                    f(code, &text, width);
                    continue;
                }
            }
            let text = self.cid_cache.get(&key).map(|s| &**s).unwrap_or("");
            f(code, text, width);
        }
    }

    /// The text of one composite code: the ToUnicode CMap, else what the encoding tells (a
    /// legacy charset, UCS-2/UTF-16 codes), else the character collection's table (Adobe's
    /// CJK collections), else the embedded TrueType's cmap, else for the Identity collection
    /// the CID itself.
    fn code_text(&self, code: u32, n: usize, raw: &[u8], cid: u32) -> String {
        let clean = |s: String| -> String {
            if s == "\u{FFFD}" || s.chars().all(|c| c.is_control()) {
                String::new()
            } else {
                s
            }
        };
        if let Some(tu) = &self.to_unicode {
            if let Some(u) = tu(code, n as u8) {
                let t = clean(String::from_utf16_lossy(&u));
                if !t.is_empty() {
                    return t;
                }
            }
        }
        if let Some(cs) = self.cid.charset {
            let (t, bad) = cs.decode_without_bom_handling(raw);
            return if bad {
                String::new()
            } else {
                clean(t.into_owned())
            };
        }
        if self.cid.codes_are_unicode {
            let units: Vec<u16> = raw
                .chunks(2)
                .map(|p| ((p[0] as u16) << 8) | p.get(1).copied().unwrap_or(0) as u16)
                .collect();
            return clean(String::from_utf16_lossy(&units));
        }
        if let Some(c) = self.cid.collection.and_then(|c| c.text(cid)) {
            return clean(c.to_string());
        }
        if let Some(map) = &self.cid.gid_text {
            let gid = match &self.cid.cid_to_gid {
                Some(t) => t.get(cid as usize).copied(),
                None => u16::try_from(cid).ok(),
            };
            if let Some(c) = gid.and_then(|g| map.get(&g)) {
                return clean(c.to_string());
            }
        }
        if self.cid.identity_text && self.to_unicode.is_none() {
            return char::from_u32(cid)
                .map(|c| clean(c.to_string()))
                .unwrap_or_default();
        }
        String::new()
    }
}

fn fold(b: &[u8]) -> u32 {
    b.iter().fold(0u32, |a, &c| (a << 8) | c as u32)
}

/// What a predefined CMap name tells (PDF 32000 table 118): the code lengths and, for the
/// legacy CJK charsets, the charset that turns a code's bytes into text without the CID
/// tables (which poppler needs poppler-data for).
fn predefined(name: &[u8], cid: &mut CidCoding) {
    let has = |s: &[u8]| name.windows(s.len()).any(|w| w == s);
    let charset = |enc: &'static encoding_rs::Encoding, cid: &mut CidCoding| {
        cid.charset = Some(enc);
        cid.split = Split::Lead {
            sjis: enc == encoding_rs::SHIFT_JIS,
        };
        cid.half_width = true;
    };
    if has(b"UCS2") {
        cid.codes_are_unicode = true;
    } else if has(b"UTF16") {
        cid.codes_are_unicode = true;
        cid.split = Split::Utf16;
    } else if has(b"RKSJ") {
        charset(encoding_rs::SHIFT_JIS, cid);
    } else if has(b"GBK2K") {
        // GB 18030 has four-byte codes too; two-byte GBK is what these fonts show.
        charset(encoding_rs::GB18030, cid);
    } else if has(b"GB") && has(b"EUC") || has(b"GBK") {
        charset(encoding_rs::GBK, cid);
    } else if has(b"B5") {
        charset(encoding_rs::BIG5, cid);
    } else if has(b"KSC") || has(b"UHC") {
        charset(encoding_rs::EUC_KR, cid);
    } else if name.starts_with(b"EUC-") {
        charset(encoding_rs::EUC_JP, cid);
    }
}

/// An embedded Encoding CMap: its code space ranges and code → CID map, with the parent named
/// by the stream's /UseCMap (a stream, read up to 4 levels, or a predefined name) under it.
fn embedded_cmap(doc: &Document, s: &lopdf::Stream, cid: &mut CidCoding, depth: usize) {
    if depth > 4 {
        return;
    }
    if let Some(parent) = s.dict.get(b"UseCMap").ok().map(|o| deref(doc, o)) {
        match parent {
            Object::Stream(p) => embedded_cmap(doc, p, cid, depth + 1),
            Object::Name(n) => predefined(n, cid),
            _ => {}
        }
    }
    let Ok(bytes) = super::decode_stream(doc, s, MAX_CMAP_BYTES) else {
        return;
    };
    let p = super::cmap::parse_cmap(&bytes);
    if p.usecmap.is_some() && s.dict.get(b"UseCMap").is_err() {
        if let Some(n) = &p.usecmap {
            predefined(n, cid);
        }
    }
    if !p.spaces.is_empty() {
        let mut spaces = match std::mem::take(&mut cid.split) {
            Split::Spaces(v) => v,
            _ => Vec::new(),
        };
        spaces.extend(p.spaces);
        cid.split = Split::Spaces(spaces);
    }
    if !p.cids.is_empty() {
        // Parents were read first: the child's map goes in front, so it wins.
        cid.cids.insert(0, p.cids);
    }
}

/// GID → character from the CID font's embedded TrueType (`/FontFile2`), by its Unicode cmap
/// subtables (ttf-parser; bounded by the font size and Unicode's range).
fn truetype_gid_text(doc: &Document, desc: &Dictionary) -> Option<HashMap<u16, char>> {
    let fd = get(doc, desc, b"FontDescriptor")?.as_dict().ok()?;
    let Object::Stream(file) = get(doc, fd, b"FontFile2")? else {
        return None;
    };
    let data = super::decode_stream(doc, file, MAX_FONT_BYTES).ok()?;
    let face = ttf_parser::Face::parse(&data, 0).ok()?;
    let cmap = face.tables().cmap?;
    let mut map = HashMap::new();
    for sub in cmap.subtables.into_iter().filter(|s| s.is_unicode()) {
        sub.codepoints(|cp| {
            if let (Some(g), Some(c)) = (sub.glyph_index(cp), char::from_u32(cp)) {
                map.entry(g.0)
                    .and_modify(|old: &mut char| {
                        if alias_rank(c) < alias_rank(*old) {
                            *old = c;
                        }
                    })
                    .or_insert(c);
            }
        });
    }
    (!map.is_empty()).then_some(map)
}

/// Which of the characters a font's cmap maps to one glyph is its text: the lowest rank wins.
/// CJK fonts map a Kangxi radical and its unified ideograph (U+2F47 and U+65E5 日), or a
/// compatibility ideograph and its original, to one glyph; issue 15's IPAexMincho pages came
/// out in radicals. Then private use last, and the lower code point first.
fn alias_rank(c: char) -> (u8, u32) {
    let u = c as u32;
    let class = match u {
        0x2E80..=0x2FDF | 0xF900..=0xFAFF | 0x2F800..=0x2FA1F => 1,
        0xE000..=0xF8FF | 0xF0000.. => 2,
        _ => 0,
    };
    (class, u)
}

/// The CID font's `/CIDToGIDMap` stream (two bytes per CID); None for /Identity or none.
fn cid_to_gid(doc: &Document, desc: &Dictionary) -> Option<Vec<u16>> {
    let Object::Stream(s) = get(doc, desc, b"CIDToGIDMap")? else {
        return None;
    };
    let b = super::decode_stream(doc, s, 2 << 16).ok()?;
    Some(
        b.chunks_exact(2)
            .map(|p| u16::from_be_bytes([p[0], p[1]]))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::{
        alias_rank, glyph_list_text, glyph_name_text, hex_name, numeric_names, parse_numeric_name,
        SYMBOL,
    };
    use lopdf::{Document, Object};
    use std::collections::HashMap;

    /// The advances `each_code` gives for `bytes` in a simple font with these entries.
    fn advances(entries: Vec<(&str, Object)>, bytes: &[u8]) -> Vec<f32> {
        let doc = Document::with_version("1.5");
        let mut dict = lopdf::Dictionary::new();
        dict.set("Type", Object::Name(b"Font".to_vec()));
        dict.set("Subtype", Object::Name(b"Type1".to_vec()));
        for (k, v) in entries {
            dict.set(k, v);
        }
        let mut font = super::Font::load(&doc, &dict, &mut HashMap::new());
        let mut out = Vec::new();
        font.each_code(bytes, |_, _, w| out.push((w * 1000.0).round()));
        out
    }

    #[test]
    fn a_standard_font_without_widths_is_measured_with_its_own_metrics() {
        let name = |n: &str| Object::Name(n.as_bytes().to_vec());
        let win = || ("Encoding", name("WinAnsiEncoding"));
        // Times: `a` 444, `m` 778, `é` 444 (Helvetica's would be 556, 833, 556).
        let times = advances(vec![("BaseFont", name("Times-Roman")), win()], b"am\xE9 ");
        assert_eq!(times, vec![444.0, 778.0, 444.0, 250.0]);
        assert_eq!(
            advances(vec![("BaseFont", name("Times-BoldItalic")), win()], b"a"),
            vec![500.0]
        );
        // Aliases: Arial,Bold is Helvetica-Bold; Courier New is Courier.
        assert_eq!(
            advances(vec![("BaseFont", name("Arial,Bold")), win()], b"a"),
            vec![556.0]
        );
        assert_eq!(
            advances(vec![("BaseFont", name("CourierNewPSMT")), win()], b"i"),
            vec![600.0]
        );
        // Symbol by its own encoding: 0x61 is alpha, 631.
        assert_eq!(
            advances(vec![("BaseFont", name("Symbol"))], b"a"),
            vec![631.0]
        );
        // A Widths array wins.
        let widths = vec![
            ("BaseFont", name("Times-Roman")),
            win(),
            ("FirstChar", Object::Integer(97)),
            ("Widths", Object::Array(vec![Object::Integer(321)])),
        ];
        assert_eq!(advances(widths, b"a"), vec![321.0]);
    }

    #[test]
    fn a_font_outside_the_standard_names_is_measured_by_its_flags() {
        use super::{standard_face, StandardFace};
        // Flags: fixed pitch 1, serif 2, italic 64, force bold 1 << 18.
        assert_eq!(standard_face(b"Garamond", Some(2)), StandardFace::Latin(0));
        assert_eq!(
            standard_face(b"Garamond", Some(2 | 64)),
            StandardFace::Latin(2)
        );
        assert_eq!(
            standard_face(b"Letter Gothic", Some(1)),
            StandardFace::Courier
        );
        assert_eq!(
            standard_face(b"Verdana", Some(1 << 18)),
            StandardFace::Latin(5)
        );
        assert_eq!(standard_face(b"Verdana", Some(32)), StandardFace::Latin(4));
        // No descriptor or no Flags: serif, as poppler assumes ("Times-Roman by default").
        assert_eq!(standard_face(b"Garamond", None), StandardFace::Latin(0));
        // The name says nothing outside the table: bold and italic come from the flags.
        assert_eq!(
            standard_face(b"Verdana,Bold", Some(32)),
            StandardFace::Latin(4)
        );
    }

    #[test]
    fn the_base14_names_and_their_aliases_match_exactly() {
        use super::{standard_face, StandardFace, BASE14_NAMES};
        assert!(BASE14_NAMES.windows(2).all(|w| w[0].0 < w[1].0), "sorted");
        // Flags that would say Helvetica (nonsymbolic, sans): only the name can say otherwise.
        let f = |n: &[u8]| standard_face(n, Some(32));
        assert_eq!(f(b"Times-Roman"), StandardFace::Latin(0));
        assert_eq!(f(b"Times-BoldItalic"), StandardFace::Latin(3));
        assert_eq!(f(b"TimesNewRoman"), StandardFace::Latin(0));
        assert_eq!(f(b"Times New Roman,BoldItalic"), StandardFace::Latin(3));
        assert_eq!(f(b"TimesNewRoman-Bold"), StandardFace::Latin(1));
        assert_eq!(f(b"TimesNewRomanPS-ItalicMT"), StandardFace::Latin(2));
        assert_eq!(f(b"Arial,Bold"), StandardFace::Latin(5));
        assert_eq!(f(b"Arial-BoldMT"), StandardFace::Latin(5));
        assert_eq!(f(b"Helvetica-Oblique"), StandardFace::Latin(4));
        assert_eq!(f(b"CourierNew,Italic"), StandardFace::Courier);
        assert_eq!(f(b"Courier New"), StandardFace::Courier);
        assert_eq!(f(b"Courier-BoldOblique"), StandardFace::Courier);
        assert_eq!(f(b"SymbolMT,Bold"), StandardFace::Symbol);
        assert_eq!(f(b"ZapfDingbats"), StandardFace::Dingbats);
        // Look-alikes are not base-14 names: measured by their flags (here Helvetica).
        for n in [
            &b"Times-RomanSC"[..],
            b"TimesNewRomanPSMT-Bold",
            b"times-roman",
            b"ABCDEF+Times-Roman",
            b"ABCDEF+Courier",
            b"Courier-Condensed",
            b"CourierNewBold",
            b"SymbolPS",
            b"Symbol-Bold",
        ] {
            assert_eq!(
                f(n),
                StandardFace::Latin(4),
                "{}",
                String::from_utf8_lossy(n)
            );
        }
        // Not bold by name: "Arial Black" and a condensed bold Helvetica are not in the table.
        assert_eq!(f(b"Arial Black"), StandardFace::Latin(4));
        assert_eq!(f(b"Helvetica-Condensed-Bold"), StandardFace::Latin(4));
        assert_eq!(f(b"ArialNarrow-Bold"), StandardFace::Latin(4));
    }

    #[test]
    fn ligatures_and_latin1_spaces_take_the_standard_metrics_by_glyph() {
        let name = |n: &str| Object::Name(n.as_bytes().to_vec());
        let diffs = |names: &[&str]| {
            let mut d = vec![Object::Integer(1)];
            d.extend(names.iter().map(|n| name(n)));
            let mut enc = lopdf::Dictionary::new();
            enc.set("Differences", Object::Array(d));
            ("Encoding", Object::Dictionary(enc))
        };
        // Times-Roman's AFM: fi 556, fl 556; ffi and ffl it has not: MissingWidth, else 0.
        let lig = diffs(&["fi", "fl", "ffi", "ffl"]);
        let times = || ("BaseFont", name("Times-Roman"));
        assert_eq!(
            advances(vec![times(), lig.clone()], b"\x01\x02\x03\x04"),
            vec![556.0, 556.0, 0.0, 0.0]
        );
        let mut fd = lopdf::Dictionary::new();
        fd.set("MissingWidth", Object::Integer(250));
        let with_missing = vec![times(), lig, ("FontDescriptor", Object::Dictionary(fd))];
        assert_eq!(advances(with_missing, b"\x01\x03"), vec![556.0, 250.0]);
        // Helvetica-Bold's fi is 611; Courier's 600.
        let lig = diffs(&["fi"]);
        assert_eq!(
            advances(
                vec![("BaseFont", name("Helvetica-Bold")), lig.clone()],
                b"\x01"
            ),
            vec![611.0]
        );
        assert_eq!(
            advances(vec![("BaseFont", name("Courier")), lig], b"\x01"),
            vec![600.0]
        );
        // WinAnsi's 0xA0 and 0xAD are poppler's `space` and `hyphen`: 250 and 333 in Times.
        let win = ("Encoding", name("WinAnsiEncoding"));
        assert_eq!(
            advances(vec![times(), win], b"\xA0\xAD"),
            vec![250.0, 333.0]
        );
    }

    #[test]
    fn zapf_dingbats_reads_and_measures_by_its_own_encoding() {
        use super::{zapf_dingbats_char, zapf_dingbats_name_text};
        let name = |n: &str| Object::Name(n.as_bytes().to_vec());
        let doc = Document::with_version("1.5");
        let mut dict = lopdf::Dictionary::new();
        dict.set("Type", name("Font"));
        dict.set("Subtype", name("Type1"));
        dict.set("BaseFont", name("ZapfDingbats"));
        // Even with a Latin encoding named, as poppler reads it.
        dict.set("Encoding", name("WinAnsiEncoding"));
        let mut font = super::Font::load(&doc, &dict, &mut HashMap::new());
        let mut got = Vec::new();
        font.each_code(b"4 3n", |_, t, w| {
            got.push((t.to_string(), (w * 1000.0).round()))
        });
        let want = [("✔", 846.0), (" ", 278.0), ("✓", 755.0), ("■", 761.0)];
        let want: Vec<(String, f32)> = want.iter().map(|(t, w)| (t.to_string(), *w)).collect();
        assert_eq!(got, want);
        // The block's holes hold the characters Unicode had before it.
        assert_eq!(zapf_dingbats_char(0x25), Some('☎'));
        assert_eq!(zapf_dingbats_char(0xAC), Some('①'));
        assert_eq!(zapf_dingbats_char(0xD4), Some('➔'));
        assert_eq!(zapf_dingbats_char(0xFE), Some('➾'));
        assert_eq!(zapf_dingbats_char(0xF0), None);
        assert_eq!(zapf_dingbats_name_text(b"a20"), Some('✔'));
        assert_eq!(zapf_dingbats_name_text(b"a71"), Some('●'));
        assert_eq!(zapf_dingbats_name_text(b"alpha"), None);
    }

    /// (text, advance in 1/1000 em) of each code of `bytes` in a simple font with these
    /// entries.
    fn read(entries: Vec<(&str, Object)>, bytes: &[u8]) -> Vec<(String, f32)> {
        let doc = Document::with_version("1.5");
        let mut dict = lopdf::Dictionary::new();
        dict.set("Type", Object::Name(b"Font".to_vec()));
        dict.set("Subtype", Object::Name(b"Type1".to_vec()));
        for (k, v) in entries {
            dict.set(k, v);
        }
        let mut font = super::Font::load(&doc, &dict, &mut HashMap::new());
        let mut out = Vec::new();
        font.each_code(bytes, |_, t, w| {
            out.push((t.to_string(), (w * 1000.0).round()))
        });
        out
    }

    /// An `Encoding` entry: Differences `objs` over the font's own encoding.
    fn differences(objs: Vec<Object>) -> (&'static str, Object) {
        let mut enc = lopdf::Dictionary::new();
        enc.set("Differences", Object::Array(objs));
        ("Encoding", Object::Dictionary(enc))
    }

    #[test]
    fn zapf_dingbats_differences_are_measured_by_the_glyph_they_name() {
        let name = |n: &str| Object::Name(n.as_bytes().to_vec());
        let zapf = || ("BaseFont", name("ZapfDingbats"));
        // `a20` is ✔ (846) whatever code it is put at; `.notdef` over `4` (✔) has no width.
        let diffs = differences(vec![
            Object::Integer(1),
            name("a20"),
            Object::Integer(52),
            name(".notdef"),
        ]);
        let got = read(vec![zapf(), diffs], b"\x014");
        assert_eq!(got[0], ("✔".to_string(), 846.0));
        assert_eq!(got[1].1, 0.0);
    }

    #[test]
    fn standard_widths_go_by_the_glyph_name_not_its_text() {
        let name = |n: &str| Object::Name(n.as_bytes().to_vec());
        let times = || ("BaseFont", name("Times-Roman"));
        // Names Times-Roman's AFM lacks read as `A`, `fi`… but have no width there (poppler:
        // MissingWidth, else 0); `A` and `fi` themselves have 722 and 556.
        let names = ["uni0041", "u0041", "uniFB01", "f_i", "a.sc", "A", "fi"];
        let mut objs = vec![Object::Integer(1)];
        objs.extend(names.iter().map(|n| name(n)));
        let got = read(
            vec![times(), differences(objs)],
            b"\x01\x02\x03\x04\x05\x06\x07",
        );
        let widths: Vec<f32> = got.iter().map(|g| g.1).collect();
        assert_eq!(widths, vec![0.0, 0.0, 0.0, 0.0, 0.0, 722.0, 556.0]);
        assert_eq!(got[0].0, "A");
        // With a MissingWidth, that.
        let mut fd = lopdf::Dictionary::new();
        fd.set("MissingWidth", Object::Integer(250));
        let objs = vec![Object::Integer(1), name("uni0041")];
        let with_missing = vec![
            times(),
            differences(objs),
            ("FontDescriptor", Object::Dictionary(fd)),
        ];
        assert_eq!(read(with_missing, b"\x01")[0].1, 250.0);
        // A name no list knows passes its code through as text, but has no width either.
        let objs = vec![Object::Integer(0x41), name("BT")];
        assert_eq!(
            read(vec![times(), differences(objs)], b"A"),
            vec![("A".to_string(), 0.0)]
        );
        // Symbol by name too: `alpha` at code 1 is 631.
        let objs = vec![Object::Integer(1), name("alpha")];
        let symbol = vec![("BaseFont", name("Symbol")), differences(objs)];
        assert_eq!(read(symbol, b"\x01")[0].1, 631.0);
    }

    #[test]
    fn code_32_without_a_known_glyph_is_the_space() {
        let name = |n: &str| Object::Name(n.as_bytes().to_vec());
        for glyph in [".notdef", "uni0020", "a.sc"] {
            let objs = vec![Object::Integer(32), name(glyph)];
            let got = read(
                vec![("BaseFont", name("Times-Roman")), differences(objs)],
                b" ",
            );
            assert_eq!(got[0].1, 250.0, "{glyph}");
        }
        // A known glyph at 32 keeps its own width.
        let objs = vec![Object::Integer(32), name("A")];
        let got = read(
            vec![("BaseFont", name("Times-Roman")), differences(objs)],
            b" ",
        );
        assert_eq!(got[0].1, 722.0);
    }

    #[test]
    fn without_base_font_the_descriptor_name_then_name_is_the_font_name() {
        let name = |n: &str| Object::Name(n.as_bytes().to_vec());
        let win = || ("Encoding", name("WinAnsiEncoding"));
        let mut fd = lopdf::Dictionary::new();
        fd.set("FontName", name("Times-Bold"));
        let fd = ("FontDescriptor", Object::Dictionary(fd));
        // Times-Bold's `a` is 500 (Times-Roman 444, Helvetica 556).
        assert_eq!(read(vec![win(), fd.clone()], b"a")[0].1, 500.0);
        // FontName before Name; BaseFont before both.
        assert_eq!(
            read(vec![win(), fd.clone(), ("Name", name("Helvetica"))], b"a")[0].1,
            500.0
        );
        assert_eq!(
            read(vec![win(), fd, ("BaseFont", name("Times-Roman"))], b"a")[0].1,
            444.0
        );
        assert_eq!(
            read(vec![win(), ("Name", name("Helvetica"))], b"a")[0].1,
            556.0
        );
        // ZapfDingbats' encoding by `Name` alone: `4` reads ✔.
        assert_eq!(read(vec![("Name", name("ZapfDingbats"))], b"4")[0].0, "✔");
    }

    #[test]
    fn differences_past_the_last_code_do_not_overflow() {
        let name = |n: &str| Object::Name(n.as_bytes().to_vec());
        let objs = vec![
            Object::Integer(i64::MAX),
            name("a"),
            name("b"),
            Object::Integer(1),
            name("A"),
        ];
        let got = read(
            vec![("BaseFont", name("Times-Roman")), differences(objs)],
            b"\x01",
        );
        assert_eq!(got, vec![("A".to_string(), 722.0)]);
    }

    #[test]
    fn a_glyph_of_several_characters_reads_as_the_ordinary_one() {
        assert!(alias_rank('日') < alias_rank('\u{2F47}'));
        assert!(alias_rank('金') < alias_rank('\u{F90A}'));
        assert!(alias_rank('A') < alias_rank('\u{E041}'));
        assert!(alias_rank(' ') < alias_rank('\u{00A0}'));
    }

    #[test]
    fn numeric_glyph_names_are_read_as_poppler_reads_them() {
        let n = |s: &[u8]| parse_numeric_name(s, false);
        assert_eq!(n(b"a65"), Some(65));
        assert_eq!(n(b"g101"), Some(101));
        assert_eq!(n(b"cs1234"), Some(1234));
        assert_eq!(n(b"17"), Some(17));
        assert_eq!(n(b"cid120"), None);
        assert_eq!(n(b"alpha"), None);
        assert_eq!(n(b"a65b"), None);
        assert_eq!(parse_numeric_name(b"x7f", true), Some(0x7F));
        assert_eq!(parse_numeric_name(b"x7f0", true), None);
        assert!(hex_name(b"x7f") && hex_name(b"1A") && !hex_name(b"x75") && !hex_name(b"a0"));
        // Numeric only when every run starts at a code up to 5 and every name is a number
        // (dvips' bitmap fonts); `[117 /x75]` passes its code through instead.
        let doc = Document::with_version("1.5");
        let d = |v: Vec<Object>| numeric_names(&doc, &v, false);
        let name = |s: &str| Object::Name(s.as_bytes().to_vec());
        assert!(d(vec![
            Object::Integer(0),
            name("a0"),
            name("a1"),
            name("a65")
        ]));
        assert!(!d(vec![Object::Integer(117), name("x75")]));
        assert!(!d(vec![Object::Integer(0), name("a0"), name("alpha")]));
    }

    #[test]
    fn the_symbol_table_covers_its_codes() {
        let t: Vec<char> = SYMBOL.chars().collect();
        assert_eq!(t.len(), 0xFF - 0x20);
        assert_eq!(t[b'a' as usize - 0x20], 'α');
        assert_eq!(t[0xBB - 0x20], '≈');
        assert_eq!(t[0xF2 - 0x20], '∫');
        assert_eq!(t[0xFE - 0x20], '⎭');
    }

    #[test]
    fn glyph_names_that_spell_their_text() {
        assert_eq!(glyph_name_text(b"uni0041").as_deref(), Some("A"));
        assert_eq!(glyph_name_text(b"uni00660069").as_deref(), Some("fi"));
        assert_eq!(glyph_name_text(b"u1F600").as_deref(), Some("😀"));
        assert_eq!(glyph_name_text(b"f_f_i").as_deref(), Some("ffi"));
        assert_eq!(glyph_name_text(b"fi").as_deref(), Some("fi"));
        assert_eq!(glyph_name_text(b"a.sc").as_deref(), Some("a"));
        assert_eq!(glyph_name_text(b"g123"), None);
        // A part only the glyph list knows: asked there, not spelled out.
        assert_eq!(glyph_name_text(b"afii57444_afii57411"), None);
    }

    #[test]
    fn the_glyph_list_is_asked_for_the_name_before_its_suffix() {
        let doc = Document::with_version("1.5");
        let mut cache = HashMap::new();
        let mut t = |n: &[u8]| glyph_list_text(&doc, n, &mut cache).to_string();
        assert_eq!(t(b"afii57415.isol"), "\u{627}");
        assert_eq!(t(b"afii57421.init"), "\u{62D}");
        assert_eq!(t(b"afii57444_afii57411.fina"), "\u{644}\u{623}");
        assert_eq!(t(b"Aring.sc"), "\u{C5}");
        assert_eq!(t(b"A.alt"), "A");
        assert_eq!(t(b"notaglyph.isol"), "");
        assert_eq!(t(b".notdef"), "");
    }
}
