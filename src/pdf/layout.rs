//! From positioned glyphs to reading-order text.
//!
//! 1. Glyphs become spans in content order: a span continues while the next glyph sits on the
//!    same baseline and close after the previous one; a gap wider than 0.1 em (poppler's
//!    `minWordBreakSpace`; 0.15 em before issue 15's OCR layers), or a space glyph, becomes
//!    one space (TJ offsets and word positioning included, since only the geometry counts),
//!    except in a letter-spaced line (`letter_spaced`). A glyph off the last one's baseline
//!    or at another size (an index, an exponent) is a word from 0.03 em on, as poppler's
//!    words are (`off_baseline`); a vowel sign or accent (a nonspacing mark) never is. A
//!    glyph drawn back to the left of the last one starts a span of its own (`stepped_back`),
//!    since a span's text is in visual order.
//! 2. Spans are ordered by a recursive cut: a vertical strip free of text across the whole
//!    region (a gutter) splits it into columns, read left then right; otherwise the region is cut
//!    into line bands top to bottom, consecutive bands that share a free strip are grouped (a
//!    two-column stretch under a full-width title) and each group is cut again; what remains is
//!    read line by line (spans on one baseline, left to right).

use std::collections::HashMap;
use std::time::Instant;

/// One run of text on a baseline, in device space (y grows upwards).
#[derive(Debug, Clone)]
pub struct Span {
    pub x0: f32,
    pub x1: f32,
    pub y: f32,
    pub size: f32,
    pub text: String,
    /// A space glyph was drawn at this x: it separates words only if the pen moved on past
    /// it (XeTeX draws a space and backs out of it inside Arabic words; issue 15's Kurdish
    /// text came out cut in two at every non-joining letter, which pdftotext keeps whole).
    pending_space: Option<f32>,
    /// The last glyph's origin and text (an overprinted glyph, "fake bold", is dropped).
    last_x0: f32,
    last: String,
    last_adv: f32,
    /// The last glyph's baseline and size: a glyph moved off it by more than half a point,
    /// or at another size, starts a new word for poppler (`TextPage::addChar`), and two words
    /// of a line stand apart by a space from 0.03 em on (`TextLine::coalesce`), not 0.1 em.
    last_y: f32,
    last_size: f32,
    /// Where the glyphs of this span stand apart by more than 0.1 em (poppler's word break,
    /// `minWordBreakSpace`) or across a space glyph: the byte offset in `text` where the next
    /// fragment starts (after the space, if one was written) and the gap in device units. A
    /// line whose fragments are all single characters is letter-spaced (`letter_spaced`).
    bounds: Vec<(u32, f32)>,
}

impl Span {
    fn top(&self) -> f32 {
        self.y + 0.7 * self.size
    }
    fn bottom(&self) -> f32 {
        self.y - 0.1 * self.size
    }
}

/// Collects glyphs into spans, up to a number of characters: the document's character cap is
/// applied while collecting, so a page of 15 MB of distinct lines keeps at most that many
/// characters (and spans), not one span per line drawn (issue 21).
pub struct SpanBuilder {
    pub spans: Vec<Span>,
    cur: Option<Span>,
    /// Characters collected so far (spaces excluded), in the spans kept and the current one.
    pub chars: usize,
    /// Of which in the current span: given back if it turns out to be a copy of text already
    /// on the page (`flush`), so text drawn twice counts once against the cap.
    cur_chars: usize,
    /// Glyphs past this many characters are dropped.
    limit: usize,
    /// A spacing accent waiting for the glyph it is drawn over (see `glyph`).
    accent: Option<Accent>,
    /// The page's spans by text and place (`place_key`), to keep a word drawn twice at the
    /// same place once wherever on the page the second drawing comes (`flush`).
    placed: HashMap<(u64, i64), Vec<u32>>,
}

/// A span's text hashed, with its baseline on a grid of `ROW` units: a copy of it drawn
/// within the duplicate tolerance (0.2 em of baseline) lies at most `rows(size)` rows away.
fn place_key(text: &str, y: f32) -> (u64, i64) {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut h);
    (h.finish(), (y / ROW).floor().clamp(-1e12, 1e12) as i64)
}

/// Rows of the duplicate grid, in device units.
const ROW: f32 = 2.0;

/// How many rows either side a copy of text at this size may lie (at most 8: 80-unit text;
/// larger text is still compared with the last spans drawn, as before).
fn rows(size: f32) -> i64 {
    ((0.2 * size / ROW).ceil() as i64).clamp(1, 8)
}

/// A spacing accent glyph drawn on its own: x range, baseline, size, its combining form.
#[derive(Clone, Copy)]
struct Accent {
    x0: f32,
    x1: f32,
    y: f32,
    size: f32,
    spacing: char,
    combining: char,
}

/// Spacing accents and their combining forms: poppler's table of diacritics it joins to the
/// letter they overlap.
fn combining_form(c: char) -> Option<char> {
    Some(match c {
        '\u{0060}' => '\u{0300}',
        '\u{00A8}' => '\u{0308}',
        '\u{00AF}' => '\u{0304}',
        '\u{00B4}' => '\u{0301}',
        '\u{00B8}' => '\u{0327}',
        '\u{02C6}' => '\u{0302}',
        '\u{02C7}' => '\u{030C}',
        '\u{02D8}' => '\u{0306}',
        '\u{02D9}' => '\u{0307}',
        '\u{02DA}' => '\u{030A}',
        '\u{02DC}' => '\u{0303}',
        '\u{02DD}' => '\u{030B}',
        _ => return None,
    })
}

impl Default for SpanBuilder {
    fn default() -> Self {
        SpanBuilder::with_limit(usize::MAX)
    }
}

/// Expands the Latin ligatures and drops controls, so the text reads as it was typed.
fn push_clean(out: &mut String, text: &str) -> usize {
    let mut n = 0;
    for c in text.chars() {
        let rep: &str = match c {
            '\u{FB00}' => "ff",
            '\u{FB01}' => "fi",
            '\u{FB02}' => "fl",
            '\u{FB03}' => "ffi",
            '\u{FB04}' => "ffl",
            '\u{FB05}' | '\u{FB06}' => "st",
            '\u{00AD}' => "-",
            '\u{00A0}' | '\t' => " ",
            c if c.is_control() || c == '\u{FFFD}' || c == '\u{FEFF}' => "",
            _ => {
                out.push(c);
                n += 1;
                continue;
            }
        };
        out.push_str(rep);
        n += rep.chars().count();
    }
    n
}

impl SpanBuilder {
    pub fn with_limit(limit: usize) -> SpanBuilder {
        SpanBuilder {
            spans: Vec::new(),
            cur: None,
            chars: 0,
            cur_chars: 0,
            limit,
            accent: None,
            placed: HashMap::new(),
        }
    }

    /// The character limit is reached: later glyphs are dropped.
    pub fn is_full(&self) -> bool {
        self.chars >= self.limit
    }

    /// One glyph at baseline origin (x0, y) advancing to x1, with its decoded text.
    ///
    /// A spacing accent drawn over a letter (TeX's `\accent`: the accent, then the letter
    /// under it; issue 15: "з ´о-шит" for "зо́-шит") becomes the letter and the combining
    /// accent, as poppler writes it: an accent overlapping the glyph before it joins that
    /// glyph, one overlapping the next glyph joins that one, any other is a glyph like others.
    pub fn glyph(&mut self, x0: f32, x1: f32, y: f32, size: f32, text: &str) {
        if self.is_full() {
            return;
        }
        if !(x0.is_finite() && x1.is_finite() && y.is_finite() && size.is_finite()) {
            return;
        }
        let (x0, x1) = if x1 < x0 { (x1, x0) } else { (x0, x1) };
        let mut chars = text.chars();
        let accent = match (chars.next(), chars.next()) {
            (Some(c), None) => combining_form(c).map(|m| (c, m)),
            _ => None,
        };
        let mid = |a: f32, b: f32| (a + b) / 2.0;
        // Accents sit above the letter: over a capital, up to about an em higher.
        let near = |ay: f32, by: f32, size: f32| (ay - by).abs() < 1.2 * size.abs().max(0.5);
        if let Some((spacing, combining)) = accent {
            self.release_accent();
            let c = mid(x0, x1);
            if let Some(s) = self.cur.as_mut() {
                let (lx0, lx1) = (s.last_x0, s.last_x0 + s.last_adv);
                if accent_over(c, lx0, lx1, &s.last) && near(y, s.y, size) && !s.text.ends_with(' ')
                {
                    s.text.push(combining);
                    return;
                }
            }
            self.accent = Some(Accent {
                x0,
                x1,
                y,
                size,
                spacing,
                combining,
            });
            return;
        }
        match self.accent {
            Some(a) if accent_over(mid(a.x0, a.x1), x0, x1, text) && near(a.y, y, size) => {
                self.accent = None;
                self.place(x0, x1, y, size, text);
                if let Some(s) = self.cur.as_mut() {
                    if !s.text.is_empty() && !s.text.ends_with(' ') {
                        s.text.push(a.combining);
                    }
                }
            }
            _ => {
                self.release_accent();
                self.place(x0, x1, y, size, text);
            }
        }
    }

    /// A waiting accent that joined no letter is placed as the glyph it is.
    fn release_accent(&mut self) {
        if let Some(a) = self.accent.take() {
            self.place(a.x0, a.x1, a.y, a.size, &a.spacing.to_string());
        }
    }

    fn place(&mut self, x0: f32, x1: f32, y: f32, size: f32, text: &str) {
        let size = size.abs().max(0.5);
        let (x0, x1) = if x1 < x0 { (x1, x0) } else { (x0, x1) };
        let blank = text.chars().all(|c| c.is_whitespace());
        if let Some(s) = self.cur.as_mut() {
            let gap = x0 - s.x1;
            let same_line = (y - s.y).abs() < 0.3 * s.size.min(size).max(0.5);
            if same_line
                && gap > -0.5 * s.size
                && gap < 0.5 * s.size
                && !stepped_back(s.last_x0, gap, x1, s.size, text)
            {
                if blank {
                    if !text.is_empty() {
                        s.pending_space.get_or_insert(x0);
                    }
                    return;
                }
                // Overprinting is offset by a fraction of the glyph; a double letter placed on
                // its own (a condensed face, Tz 70: "tt" 0.19 em apart) sits a whole advance
                // away (issue 15: "rat achement").
                let overprint = (0.2 * size).min(0.5 * s.last_adv);
                if text == s.last && (x0 - s.last_x0).abs() < overprint {
                    return;
                }
                // A mark (a vowel sign over an Arabic letter, XeTeX sets it off the baseline)
                // belongs to its letter: it neither breaks the word nor moves the baseline
                // the next letter is compared with (pdftotext cuts vocalised words there).
                let mark = is_mark(text);
                let break_at = if !mark && off_baseline(s.last_y, s.last_size, y, size) {
                    0.03 * s.size
                } else {
                    0.1 * s.size.min(size)
                };
                s.last_x0 = x0;
                s.last_adv = x1 - x0;
                if !mark {
                    s.last_y = y;
                    s.last_size = size;
                }
                s.last.clear();
                s.last.push_str(text);
                let spaced = s
                    .pending_space
                    .is_some_and(|at| x0 > at + 0.1 * s.size.min(size));
                if (spaced || gap > break_at) && !s.text.ends_with(' ') {
                    s.text.push(' ');
                }
                if (spaced || gap > break_at) && s.bounds.len() < 4096 {
                    s.bounds.push((s.text.len() as u32, gap));
                }
                s.pending_space = None;
                let n = push_clean(&mut s.text, text);
                self.chars += n;
                self.cur_chars += n;
                s.x1 = s.x1.max(x1);
                s.x0 = s.x0.min(x0);
                return;
            }
        }
        if blank {
            return;
        }
        self.flush();
        let mut t = String::new();
        let n = push_clean(&mut t, text);
        self.chars += n;
        self.cur_chars = n;
        if t.is_empty() {
            return;
        }
        self.cur = Some(Span {
            x0,
            x1,
            y,
            size,
            text: t,
            pending_space: None,
            last_x0: x0,
            last: text.to_string(),
            last_adv: x1 - x0,
            last_y: y,
            last_size: size,
            bounds: Vec::new(),
        });
    }

    /// Ends the current span (a new text object may start anywhere).
    pub fn flush(&mut self) {
        self.release_accent();
        let counted = std::mem::take(&mut self.cur_chars);
        if let Some(s) = self.cur.take() {
            let trimmed = s.text.trim_end().len();
            let mut s = s;
            s.text.truncate(trimmed);
            // A word drawn twice at (almost) the same place ("fake bold", or the same text
            // drawn again later in the page: issue 15's exam paper draws its rotated margin
            // twice) is kept once, as poppler drops duplicated text page-wide: both ends
            // within 0.1 em (`dupMaxPriDelta`), the baseline within 0.2 em. Two like glyphs
            // side by side are not a copy: LuaTeX stretches Persian words with tatweels
            // (`ـ`) 0.2 em apart, which a wider tolerance (0.3 em from the start) read as one.
            if s.text.is_empty() {
                return;
            }
            let same = |p: &Span| {
                p.text == s.text
                    && (p.y - s.y).abs() < 0.2 * s.size
                    && (p.x0 - s.x0).abs() < 0.1 * s.size
                    && (p.x1 - s.x1).abs() < 0.1 * s.size
            };
            let (h, row) = place_key(&s.text, s.y);
            let r = rows(s.size);
            let spans = &self.spans;
            let twice = spans.iter().rev().take(8).any(same)
                || (-r..=r).any(|d| {
                    self.placed
                        .get(&(h, row + d))
                        .is_some_and(|ids| ids.iter().any(|&i| same(&spans[i as usize])))
                });
            if twice {
                self.chars = self.chars.saturating_sub(counted);
            } else {
                // At most 64 spans of one text per row are remembered: a page of one word
                // repeated along a line stays linear.
                let ids = self.placed.entry((h, row)).or_default();
                if ids.len() < 64 {
                    ids.push(self.spans.len() as u32);
                }
                self.spans.push(s);
            }
        }
    }

    pub fn finish(mut self) -> Vec<Span> {
        self.flush();
        self.spans
    }
}

/// Whether a spacing accent centred at `mid` is drawn over the glyph spanning `x0`..`x1` whose
/// text is `base`, as poppler's `TextWord::addCombining` decides: the base is a letter or a
/// digit by poppler's character types (`unicodeTypeAlphaNum`: strong left-to-right or
/// right-to-left, or a number, by bidi class; so a private-use small capital is one, a
/// spacing accent, U+02C7, is not), and the two centres lie within 0.3 of the base's advance
/// (`combMaxMidDelta`). An accent over a symbol or beside a letter stays the glyph it is
/// (issue 15: MusiXTeX's quick reference draws its notes with glyphs its fonts name as accents,
/// and they were fused into words pdftotext does not have, `ˇ̀`).
fn accent_over(mid: f32, x0: f32, x1: f32, base: &str) -> bool {
    use unicode_bidi::{bidi_class, BidiClass};
    let mut chars = base.chars();
    let alnum = chars.next().is_some_and(|c| {
        matches!(
            bidi_class(c),
            BidiClass::L | BidiClass::R | BidiClass::AL | BidiClass::EN | BidiClass::AN
        )
    }) && chars.next().is_none();
    alnum && (mid - (x0 + x1) / 2.0).abs() < 0.3 * (x1 - x0).abs()
}

/// Whether a glyph on baseline `y` at size `size`, after one at (`py`, `psize`), is moved
/// off the baseline by more than 0.5 (device units: points at 72 dpi) or set at another size:
/// poppler's `TextPage::addChar` then starts a new word, and `TextLine::coalesce` puts a
/// space between two words of a line from 0.03 em on (`maxCharSpacing`), not from poppler's
/// word break of 0.1 em (`minWordBreakSpace`) that holds along one baseline. So a subscript
/// or superscript set a little apart is a word of its own, as pdftotext writes it (`u n` for
/// u with the index n; issue 15: maths in exam forms and TeX documents read `un`, `k1v`).
fn off_baseline(py: f32, psize: f32, y: f32, size: f32) -> bool {
    (y - py).abs() > 0.5 || (size - psize).abs() > 0.01 * size.max(psize)
}

/// Whether a glyph ending at `x1` was drawn back to the left of the last glyph (whose origin
/// is `last_x0`), overlapping the span's end by more than 0.2 em (`gap` < -0.2 `size`,
/// poppler's `minDupBreakOverlap`): a span's text is in visual order, so such a glyph cannot
/// be appended to it and starts a span of its own, which the line puts in its place by x.
/// LuaTeX draws right-to-left words in logical order, moving the pen left with TJ offsets,
/// and kerns a letter a hair into the one before it (issue 15: texnegar's `تابی` read `تبای`,
/// the ب appended after the ا it was drawn left of). A nonspacing mark drawn back over its
/// letter is not such a glyph: it stays with its letter.
fn stepped_back(last_x0: f32, gap: f32, x1: f32, size: f32, text: &str) -> bool {
    gap < -0.2 * size && x1 <= last_x0 + 0.05 * size && !is_mark(text)
}

/// A nonspacing mark (a combining accent, an Arabic or Hebrew vowel sign).
fn mark_char(c: char) -> bool {
    unicode_bidi::bidi_class(c) == unicode_bidi::BidiClass::NSM
}

/// Text made only of nonspacing marks.
fn is_mark(text: &str) -> bool {
    !text.is_empty() && text.chars().all(mark_char)
}

/// Free x intervals (width ≥ min_w) of `spans` within [lo, hi].
fn uncovered(spans: &[&Span], lo: f32, hi: f32, min_w: f32) -> Vec<(f32, f32)> {
    let mut xs: Vec<(f32, f32)> = spans.iter().map(|s| (s.x0, s.x1)).collect();
    xs.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut out = Vec::new();
    let mut reach = lo;
    for (a, b) in xs {
        if a - reach >= min_w {
            out.push((reach, a));
        }
        reach = reach.max(b);
    }
    if hi - reach >= min_w {
        out.push((reach, hi));
    }
    out
}

fn intersect(a: &[(f32, f32)], b: &[(f32, f32)], min_w: f32) -> Vec<(f32, f32)> {
    let mut out = Vec::new();
    for &(a0, a1) in a {
        for &(b0, b1) in b {
            let (l, r) = (a0.max(b0), a1.min(b1));
            if r - l >= min_w {
                out.push((l, r));
            }
        }
    }
    out
}

fn median_size(spans: &[Span]) -> f32 {
    let mut v: Vec<f32> = spans.iter().map(|s| s.size).collect();
    if v.is_empty() {
        return 10.0;
    }
    let mid = v.len() / 2;
    v.select_nth_unstable_by(mid, |a, b| a.total_cmp(b));
    v[mid]
}

/// Gutter widths, in device units: a strip at least `wide` separates columns when at least
/// `WIDE_LINES` lines share it, a `narrow` one when at least `NARROW_LINES` do (so that word
/// gaps of justified lines that happen to line up do not make columns).
#[derive(Clone, Copy)]
struct Gutter {
    narrow: f32,
    wide: f32,
    /// Ordering stops cutting regions past this (see `render`).
    deadline: Instant,
}

const NARROW_LINES: usize = 5;
const WIDE_LINES: usize = 3;

fn min_gutter(g: Gutter, lines: usize) -> Option<f32> {
    if lines >= NARROW_LINES {
        Some(g.narrow)
    } else if lines >= WIDE_LINES {
        Some(g.wide)
    } else {
        None
    }
}

/// Orders a page's spans and renders them as text (lines joined by '\n'). Past `deadline`
/// the regions not yet ordered are read line by line (a cheap sort), so ordering ends soon
/// after it; the caller sees the deadline passed and marks the text truncated.
pub fn render(spans: Vec<Span>, deadline: Instant) -> String {
    if spans.is_empty() {
        return String::new();
    }
    let em = median_size(&spans);
    let g = Gutter {
        narrow: (em * 0.6).max(2.0),
        wide: (em * 1.0).max(4.0),
        deadline,
    };
    let refs: Vec<&Span> = spans.iter().collect();
    let mut lines: Vec<Line> = Vec::new();
    order(&refs, g, 0, &mut lines);
    join_lines(&lines)
}

/// One output line: its text, baseline, the font size it ends at and the one it starts at,
/// and whether it continues the flow of text of the line before it (the same column or region
/// read top to bottom; not the first line after a column change).
#[derive(Debug, Clone, PartialEq)]
struct Line {
    text: String,
    y: f32,
    /// The size of the line's last glyph: its hyphen's, for `runs_on`.
    size: f32,
    /// The size of its first glyph: the word a hyphen before it would join.
    start_size: f32,
    continues: bool,
}

/// Baselines further apart than this many ems are different flows to poppler: a hyphen
/// before such a gap stays (measured with pdftotext 22.12: 3.4 em joins, 3.5 does not).
const FLOW_GAP_EM: f32 = 3.5;

/// A hyphenated `line` runs on into `next`, as pdftotext joins them (poppler's
/// `TextPage::dump`, reading-order mode: a line whose last character is U+002D, followed by a
/// line of the same flow, loses the hyphen and is written with the next line without a break).
/// Any `-` counts, as in poppler (a soft hyphen was already written as `-`; U+2010 and dashes
/// are not hyphens to it), so a compound broken at its own hyphen (`e-` / `mail`) becomes
/// `email` there too: nothing on the page tells the two apart. The same flow: the next line
/// continues this column or region, starts below within 3.5 em, and does not start in a
/// larger font than the hyphen's (pdftotext keeps the hyphen before a larger line: a heading).
/// The sizes compared are those of the two halves of the word, as poppler's blocks are grown
/// word by word: a line that opens with a command name in a smaller typewriter face is still a
/// line of its roman text (issue 15: LuaTeX's bidi manual, `\LTRfootnote … notwith-` kept its
/// hyphen when the line was measured by its longest span, which started in the smaller face).
fn runs_on(line: &Line, next: &Line) -> bool {
    let dy = line.y - next.y;
    next.continues
        && line.text.trim_end().ends_with('-')
        && !next.text.trim().is_empty()
        && dy > 0.0
        && dy < FLOW_GAP_EM * line.size
        && next.start_size <= line.size * 1.05
}

/// Lines joined by '\n', hyphenated line ends run on into the next line (`runs_on`):
/// `doc-` / `uments` → `documents`. The last line of a column, region or page keeps its hyphen.
fn join_lines(lines: &[Line]) -> String {
    let mut out = String::new();
    let mut run_on = false;
    for (i, line) in lines.iter().enumerate() {
        if i > 0 && !run_on {
            out.push('\n');
        }
        let text = if run_on {
            line.text.trim_start()
        } else {
            line.text.as_str()
        };
        run_on = lines.get(i + 1).is_some_and(|next| runs_on(line, next));
        if run_on {
            let end = text.trim_end();
            out.push_str(&end[..end.len() - 1]);
        } else {
            out.push_str(text);
        }
    }
    out
}

const MAX_DEPTH: usize = 48;

/// Line bands of a region, top to bottom (y-projection of the spans' cores).
fn bands_of<'a>(spans: &[&'a Span]) -> Vec<Vec<&'a Span>> {
    let mut sorted: Vec<&Span> = spans.to_vec();
    sorted.sort_by(|a, b| b.top().total_cmp(&a.top()));
    let mut bands: Vec<Vec<&Span>> = Vec::new();
    let mut floor = f32::INFINITY;
    for s in sorted {
        match bands.last_mut() {
            Some(band) if s.top() > floor => {
                band.push(s);
                floor = floor.min(s.bottom());
            }
            _ => {
                floor = s.bottom();
                bands.push(vec![s]);
            }
        }
    }
    bands
}

fn widest(gaps: &[(f32, f32)]) -> Option<(f32, f32)> {
    gaps.iter()
        .copied()
        .max_by(|a, b| (a.1 - a.0).total_cmp(&(b.1 - b.0)))
}

fn order(spans: &[&Span], g: Gutter, depth: usize, out: &mut Vec<Line>) {
    if spans.is_empty() {
        return;
    }
    if depth >= MAX_DEPTH || Instant::now() >= g.deadline {
        emit_lines(spans, false, out);
        return;
    }
    let lo = spans.iter().map(|s| s.x0).fold(f32::INFINITY, f32::min);
    let hi = spans.iter().map(|s| s.x1).fold(f32::NEG_INFINITY, f32::max);
    let bands = bands_of(spans);
    // 1. A gutter across the whole region: columns, left then right.
    if let Some(min_w) = min_gutter(g, bands.len()) {
        if let Some((g0, g1)) = widest(&uncovered(spans, lo, hi, min_w)) {
            let cut = (g0 + g1) / 2.0;
            let (left, right): (Vec<&Span>, Vec<&Span>) = spans.iter().partition(|s| s.x1 <= cut);
            if !left.is_empty() && !right.is_empty() {
                order(&left, g, depth + 1, out);
                order(&right, g, depth + 1, out);
                return;
            }
        }
    }
    // 2. Line bands, top to bottom.
    if bands.len() == 1 {
        emit_lines(spans, false, out);
        return;
    }
    // 3. Group consecutive bands that share a free strip; cut each group again.
    // Bands read one after another (no columns between them) are one flow of text.
    let mut flowing = false;
    let mut i = 0;
    while i < bands.len() {
        let mut acc = uncovered(&bands[i], lo, hi, g.narrow);
        let mut j = i + 1;
        while j < bands.len() {
            let next = intersect(&acc, &uncovered(&bands[j], lo, hi, g.narrow), g.narrow);
            // Only a strip with text on both sides makes columns; a shared ragged margin
            // does not.
            if !next.iter().any(|&(a, b)| a > lo + 0.5 && b < hi - 0.5) {
                break;
            }
            acc = next;
            j += 1;
        }
        let group: Vec<&Span> = bands[i..j].iter().flatten().copied().collect();
        let glo = group.iter().map(|s| s.x0).fold(f32::INFINITY, f32::min);
        let ghi = group.iter().map(|s| s.x1).fold(f32::NEG_INFINITY, f32::max);
        let columns =
            min_gutter(g, j - i).is_some_and(|need| !uncovered(&group, glo, ghi, need).is_empty());
        if columns && group.len() < spans.len() {
            order(&group, g, depth + 1, out);
            flowing = false;
        } else {
            for band in &bands[i..j] {
                emit_lines(band, flowing, out);
                flowing = true;
            }
        }
        i = j;
    }
}

/// Spans of one region with no columns: lines by baseline, left to right. The first line
/// continues the flow of the line before it if `continues`; the others always do.
fn emit_lines(spans: &[&Span], continues: bool, out: &mut Vec<Line>) {
    let mut sorted: Vec<&Span> = spans.to_vec();
    sorted.sort_by(|a, b| b.y.total_cmp(&a.y).then(a.x0.total_cmp(&b.x0)));
    let mut lines: Vec<Vec<&Span>> = Vec::new();
    let mut line_y = f32::NAN;
    let mut line_size = 0.0f32;
    for s in sorted {
        let tol = 0.5 * line_size.max(s.size).max(0.5);
        if !lines.is_empty() && (s.y - line_y).abs() <= tol {
            if let Some(l) = lines.last_mut() {
                l.push(s);
            }
        } else {
            lines.push(vec![s]);
            line_y = s.y;
            line_size = s.size;
        }
    }
    for (n, mut line) in lines.into_iter().enumerate() {
        line.sort_by(|a, b| a.x0.total_cmp(&b.x0));
        let y = line.first().map_or(0.0, |s| s.y);
        // The line's main size: that of its longest span (not a drop cap or a big symbol).
        let size = line
            .iter()
            .max_by_key(|s| s.text.len())
            .map_or(0.0, |s| s.size);
        // For the hyphen rule (`runs_on`): the size the line ends at (its hyphen) and starts
        // at, not the size of its longest span, which may open with a word in another face.
        let end_size = line.last().map_or(size, |s| s.last_size);
        let start_size = line.first().map_or(size, |s| s.size);
        let text = letter_spaced(&line).unwrap_or_else(|| {
            let mut text = String::new();
            let mut reach = f32::NEG_INFINITY;
            let mut prev: Option<&Span> = None;
            for s in &line {
                // A span that continues another's baseline at its size breaks a word from
                // 0.1 em on, one off it from 0.03 em of the line's size (`off_baseline`).
                let break_at = match prev {
                    Some(p)
                        if !s.text.chars().next().is_some_and(mark_char)
                            && off_baseline(p.last_y, p.last_size, s.y, s.size) =>
                    {
                        0.03 * size
                    }
                    _ => 0.1 * s.size,
                };
                if !text.is_empty() && s.x0 - reach > break_at && !text.ends_with(' ') {
                    text.push(' ');
                }
                text.push_str(&s.text);
                reach = reach.max(s.x1);
                if !is_mark(&s.text) {
                    prev = Some(s);
                }
            }
            text
        });
        out.push(Line {
            text: logical_order(text),
            y,
            size: end_size,
            start_size,
            continues: continues || n > 0,
        });
    }
}

/// A letter-spaced line, as poppler reads it (`TextLine::coalesce`): when every fragment of
/// a line (glyphs closer than 0.1 em) is a single character, the gaps between letters are
/// not word spaces; a gap is a space only from 1.3 times the line's narrowest gap (at most
/// 0.4 em) on. OCR layers spread each word's letters over the word's width on the scan, and
/// spaced-out headings do the same (issue 15: an EPSON scan's `N o r t h`, `C o m p a n y`,
/// which pdftotext reads whole). A space glyph between two letters is no exception: poppler
/// ends a word at a space character but prints a space only where `coalesce` puts one, by the
/// gap alone, so a line of letters each set apart by a space glyph of the same width (SIL's
/// character samples, `Ʋ ʋ ᶹ`) reads `Ʋʋᶹ`; a wider gap among them still becomes a space.
/// None: not such a line.
fn letter_spaced(line: &[&Span]) -> Option<String> {
    let size = line.first()?.size;
    // (fragment, gap before it)
    let mut frags: Vec<(&str, f32)> = Vec::new();
    let mut reach = f32::NEG_INFINITY;
    for s in line {
        let mut start = 0usize;
        let mut gap = s.x0 - reach;
        for &(at, g) in &s.bounds {
            let at = (at as usize).min(s.text.len());
            if at <= start || !s.text.is_char_boundary(at) {
                continue;
            }
            frags.push((s.text[start..at].trim_end_matches(' '), gap));
            (start, gap) = (at, g);
        }
        frags.push((&s.text[start..], gap));
        reach = reach.max(s.x1);
        if frags.len() > 4096 {
            return None;
        }
    }
    if frags.len() < 2 || frags.iter().any(|(f, _)| f.chars().count() != 1) {
        return None;
    }
    let narrowest = frags[1..]
        .iter()
        .map(|&(_, g)| g)
        .fold(f32::INFINITY, f32::min);
    if narrowest.is_nan() || narrowest <= 0.0 {
        return None;
    }
    let space = (1.3 * narrowest).min(0.4 * size);
    let mut text = String::new();
    for (i, &(f, g)) in frags.iter().enumerate() {
        if i > 0 && g >= space {
            text.push(' ');
        }
        text.push_str(f);
    }
    Some(text)
}

/// A line with right-to-left text (Hebrew, Arabic) is laid out here in visual order, the way
/// producers draw it (or we placed its glyphs), so each RTL word reads reversed (issue 15).
/// The Unicode bidi algorithm's reordering (rule L2) reverses the RTL runs and keeps numbers
/// and embedded LTR runs as written, and applied to the visual string it gives back the
/// logical order. The paragraph direction is the line's majority of strong characters.
/// `unicode-bidi` (Servo's, already in the tree) implements UAX #9; lines without RTL
/// characters are returned untouched. Runs of the other direction are then marked as
/// pdftotext marks them (`embed_runs`).
pub fn logical_order(line: String) -> String {
    use unicode_bidi::{bidi_class, BidiClass, BidiInfo, Level};
    let (mut rtl, mut ltr) = (0usize, 0usize);
    for c in line.chars() {
        match bidi_class(c) {
            BidiClass::R | BidiClass::AL => rtl += 1,
            BidiClass::L => ltr += 1,
            _ => {}
        }
    }
    if rtl == 0 {
        return line;
    }
    let level = if rtl >= ltr {
        Level::rtl()
    } else {
        Level::ltr()
    };
    let info = BidiInfo::new(&line, Some(level));
    let mut out = String::with_capacity(line.len());
    for para in &info.paragraphs {
        out.push_str(&info.reorder_line(para, para.range.clone()));
    }
    if ltr == 0 && !out.chars().any(|c| is_number(bidi_class(c))) {
        return out;
    }
    embed_runs(&out, level.is_rtl())
}

fn is_number(class: unicode_bidi::BidiClass) -> bool {
    matches!(
        class,
        unicode_bidi::BidiClass::EN | unicode_bidi::BidiClass::AN
    )
}

/// Marks each run written in the other direction than its line with explicit embedding
/// controls, as poppler's `reorderText` writes a line: in a right-to-left line every run of
/// left-to-right letters or digits between LRE (U+202A) and PDF (U+202C), in a left-to-right
/// line every run of right-to-left letters between RLE (U+202B) and PDF. A viewer shows the
/// line as it stands on the page, and a run that touches a word of the other direction with
/// no space between (a transliterated letter inside an Arabic word, a glyph the font maps to
/// a Latin letter, a number glued to a word) is a word of its own, as in pdftotext's text
/// (issue 15: ArabTeX's `ae` fonts and Beamer overlays inside Arabic words made one word of
/// several). A run ends before the first character of the line's own direction; spaces and
/// punctuation at its end stay outside the marks.
fn embed_runs(line: &str, rtl: bool) -> String {
    use unicode_bidi::{bidi_class, BidiClass};
    let chars: Vec<char> = line.chars().collect();
    // Whether a character opens (or continues) a run of the other direction, ends one, or
    // is neutral.
    let other = |c: char| {
        let k = bidi_class(c);
        if rtl {
            k == BidiClass::L || is_number(k)
        } else {
            matches!(k, BidiClass::R | BidiClass::AL)
        }
    };
    let own = |c: char| {
        let k = bidi_class(c);
        if rtl {
            matches!(k, BidiClass::R | BidiClass::AL)
        } else {
            k == BidiClass::L || is_number(k)
        }
    };
    let (open, close) = if rtl {
        ('\u{202A}', '\u{202C}')
    } else {
        ('\u{202B}', '\u{202C}')
    };
    let mut out = String::with_capacity(line.len() + 8);
    let mut i = 0;
    while i < chars.len() {
        if !other(chars[i]) {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        // The run: up to the next character of the line's own direction, less what trails
        // its last character of the other direction (combining marks stay with it).
        let mut end = i;
        let mut last = i;
        while end < chars.len() && !own(chars[end]) {
            if other(chars[end]) || bidi_class(chars[end]) == BidiClass::NSM {
                last = end;
            }
            end += 1;
        }
        out.push(open);
        out.extend(&chars[i..=last]);
        out.push(close);
        i = last + 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn far() -> Instant {
        Instant::now() + std::time::Duration::from_secs(60)
    }

    /// Lays out words as a generator would: monospace-ish advance of 0.5 em per char.
    fn word(b: &mut SpanBuilder, x: f32, y: f32, text: &str) -> f32 {
        let mut x = x;
        for c in text.chars() {
            let s = c.to_string();
            b.glyph(x, x + 5.0, y, 10.0, &s);
            x += 5.0;
        }
        x
    }

    #[test]
    fn letter_spaced_words_read_whole_as_pdftotext_reads_them() {
        // An OCR layer spreads each word's letters (gaps of 0.2 em) with wider gaps between
        // the words: a line made only of single letters reads as its words.
        let mut b = SpanBuilder::default();
        let mut x = 0.0;
        for (i, w) in ["North", "Buona", "Vista"].iter().enumerate() {
            if i > 0 {
                x += 6.0;
            }
            for c in w.chars() {
                b.glyph(x, x + 5.0, 100.0, 10.0, &c.to_string());
                x += 7.0;
            }
        }
        // A line with a word of several letters keeps its spaced letters apart.
        let x = word(&mut b, 0.0, 80.0, "American");
        let mut x = x + 4.0;
        for c in "Ltd".chars() {
            b.glyph(x, x + 5.0, 80.0, 10.0, &c.to_string());
            x += 7.0;
        }
        let text = render(b.finish(), far());
        assert_eq!(text, "North Buona Vista\nAmerican L t d");
    }

    #[test]
    fn letters_set_apart_by_space_glyphs_read_as_pdftotext_reads_them() {
        // A font sample: letters each followed by a space glyph (0.25 em), one wider gap
        // (0.6 em) between two groups. Every fragment is one letter, so only the wider gap is
        // a space, as in pdftotext (`Ʋ ʋ ᶹ` → `Ʋʋᶹ`).
        let mut b = SpanBuilder::default();
        let mut x = 0.0;
        for (i, c) in "Ʋʋᶹбгд".chars().enumerate() {
            if i == 3 {
                x += 3.5;
            }
            b.glyph(x, x + 5.0, 100.0, 10.0, &c.to_string());
            b.glyph(x + 5.0, x + 7.5, 100.0, 10.0, " ");
            x += 7.5;
        }
        // A line with a longer word keeps its space glyphs as spaces.
        let x = word(&mut b, 0.0, 80.0, "Sample");
        b.glyph(x, x + 2.5, 80.0, 10.0, " ");
        let x = word(&mut b, x + 2.5, 80.0, "a");
        b.glyph(x, x + 2.5, 80.0, 10.0, " ");
        word(&mut b, x + 2.5, 80.0, "b");
        let text = render(b.finish(), far());
        assert_eq!(text, "Ʋʋᶹ бгд\nSample a b");
    }

    #[test]
    fn text_drawn_twice_counts_once_against_the_character_cap() {
        // A page that draws its text twice (fake bold, a redrawn layer) under a cap of 12
        // characters: the copies are dropped and give their characters back, so the line
        // after them still fits.
        let mut b = SpanBuilder::with_limit(12);
        for _ in 0..3 {
            word(&mut b, 0.0, 100.0, "hello");
            b.flush();
        }
        assert_eq!(b.chars, 5);
        assert!(!b.is_full());
        word(&mut b, 0.0, 80.0, "world");
        b.flush();
        assert_eq!(b.chars, 10);
        assert_eq!(render(b.finish(), far()), "hello\nworld");
    }

    #[test]
    fn an_accent_drawn_over_a_letter_joins_it() {
        // TeX's \accent: "з", the acute moved over the next letter, then "о" under it.
        let mut b = SpanBuilder::default();
        b.glyph(0.0, 5.0, 100.0, 10.0, "з");
        b.glyph(7.0, 10.0, 100.0, 10.0, "\u{00B4}");
        b.glyph(6.0, 11.0, 100.0, 10.0, "о");
        b.glyph(11.0, 16.0, 100.0, 10.0, "ш");
        // An accent drawn after its letter, raised over a capital.
        b.glyph(30.0, 35.0, 100.0, 10.0, "E");
        b.glyph(31.0, 34.0, 103.0, 10.0, "\u{00A8}");
        b.glyph(35.0, 40.0, 100.0, 10.0, "r");
        // A spacing accent over nothing stays what it is.
        b.glyph(60.0, 63.0, 100.0, 10.0, "\u{00B4}");
        let text = render(b.finish(), far());
        assert_eq!(text, "зо\u{0301}ш E\u{0308}r \u{00B4}");
    }

    #[test]
    fn an_accent_joins_only_a_letter_or_digit_it_is_centred_over() {
        // A caron over a caron (MusiXTeX's note glyphs), then a grave over a dot: symbols.
        let mut b = SpanBuilder::default();
        b.glyph(0.0, 5.0, 100.0, 10.0, "\u{02C7}");
        b.glyph(0.0, 5.0, 100.0, 10.0, "\u{0060}");
        b.glyph(20.0, 25.0, 100.0, 10.0, "\u{00B7}");
        b.glyph(20.0, 25.0, 100.0, 10.0, "\u{0060}");
        // An acute over the right half of an `o` (centres 2 apart, advance 5): beside it.
        b.glyph(40.0, 45.0, 100.0, 10.0, "o");
        b.glyph(43.0, 46.0, 103.0, 10.0, "\u{00B4}");
        let text = render(b.finish(), far());
        assert!(
            !text.contains('\u{0300}') && !text.contains('\u{0301}'),
            "{text:?}"
        );
        assert!(
            text.contains('\u{0060}') && text.contains('\u{00B4}'),
            "{text:?}"
        );
        // A private-use small capital (txfonts' `asmall`) is a letter to poppler: it takes
        // its breve.
        let mut b = SpanBuilder::default();
        b.glyph(0.0, 5.0, 100.0, 10.0, "\u{F761}");
        b.glyph(1.0, 4.0, 100.0, 10.0, "\u{02D8}");
        assert_eq!(render(b.finish(), far()), "\u{F761}\u{0306}");
    }

    #[test]
    fn a_space_the_pen_backs_out_of_is_no_word_break() {
        let mut b = SpanBuilder::default();
        let x = word(&mut b, 0.0, 100.0, "book");
        b.glyph(x, x + 3.0, 100.0, 10.0, " ");
        let x = word(&mut b, x, 100.0, "keeper");
        b.glyph(x, x + 3.0, 100.0, 10.0, " ");
        word(&mut b, x + 3.0, 100.0, "day");
        assert_eq!(render(b.finish(), far()), "bookkeeper day");
    }

    #[test]
    fn a_glyph_off_the_baseline_is_a_word_from_a_narrower_gap() {
        let mut b = SpanBuilder::default();
        // u with the index n, 0.05 em after it and 2 pt lower, at 7 pt: two words.
        b.glyph(0.0, 5.0, 100.0, 10.0, "u");
        b.glyph(5.5, 9.0, 98.0, 7.0, "n");
        // The same gap along the baseline at the same size is no word break (kerning).
        b.glyph(20.0, 25.0, 100.0, 10.0, "a");
        b.glyph(25.5, 30.0, 100.0, 10.0, "b");
        // A superscript touching its letter (a TeX logo's lowered E, overlapping) stays in it.
        b.glyph(40.0, 45.0, 100.0, 10.0, "T");
        b.glyph(44.0, 49.0, 98.0, 10.0, "E");
        b.glyph(48.5, 53.0, 100.0, 10.0, "X");
        // A superscript far enough off the baseline to be a span of its own: 0.05 em apart.
        b.glyph(60.0, 65.0, 100.0, 10.0, "x");
        b.glyph(65.5, 69.0, 104.0, 7.0, "2");
        // A vowel sign set off the baseline stays in its word, and so does the next letter,
        // whether the sign is in the letters' span (2 pt up) or a span of its own (4 pt).
        b.glyph(80.0, 85.0, 100.0, 10.0, "b");
        b.glyph(81.0, 84.0, 102.0, 10.0, "\u{064E}");
        b.glyph(85.5, 90.0, 100.0, 10.0, "c");
        b.glyph(90.5, 95.0, 100.0, 10.0, "d");
        b.glyph(91.0, 94.0, 104.0, 10.0, "\u{064E}");
        b.glyph(95.5, 99.0, 100.0, 10.0, "e");
        let text = render(b.finish(), far());
        assert_eq!(text, "u n ab TEX x 2 b\u{064E}cd\u{064E}e");
    }

    #[test]
    fn gaps_become_spaces_and_ligatures_expand() {
        let mut b = SpanBuilder::default();
        let x = word(&mut b, 0.0, 100.0, "a\u{FB01}ne");
        word(&mut b, x + 3.0, 100.0, "day");
        let text = render(b.finish(), far());
        assert_eq!(text, "afine day");
    }

    #[test]
    fn two_columns_read_column_by_column_under_a_title() {
        let mut b = SpanBuilder::default();
        b.flush();
        word(
            &mut b,
            100.0,
            800.0,
            "Title of the paper crossing the gutter",
        );
        for i in 0..5 {
            let y = 760.0 - 12.0 * i as f32;
            word(&mut b, 50.0, y, &format!("left{i} aaaa"));
            b.flush();
            word(&mut b, 300.0, y, &format!("right{i} bbbb"));
            b.flush();
        }
        let text = render(b.finish(), far());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "Title of the paper crossing the gutter");
        assert_eq!(lines[1], "left0 aaaa");
        assert_eq!(lines[5], "left4 aaaa");
        assert_eq!(lines[6], "right0 bbbb");
        assert_eq!(lines[10], "right4 bbbb");
    }

    #[test]
    fn a_longer_left_column_keeps_its_tail_before_the_right_column() {
        let mut b = SpanBuilder::default();
        for i in 0..6 {
            let y = 760.0 - 12.0 * i as f32;
            word(&mut b, 50.0, y, &format!("L{i} xxxxxxxxxxxx"));
            b.flush();
            if i < 3 {
                word(&mut b, 300.0, y, &format!("R{i} yyyyyyyyyy"));
                b.flush();
            }
        }
        let text = render(b.finish(), far());
        let order: Vec<String> = text
            .lines()
            .map(|l| l.split(' ').next().unwrap().to_string())
            .collect();
        assert_eq!(
            order,
            ["L0", "L1", "L2", "L3", "L4", "L5", "R0", "R1", "R2"]
        );
    }

    #[test]
    fn a_narrow_gutter_shared_by_several_lines_still_makes_columns() {
        let mut b = SpanBuilder::default();
        for i in 0..6 {
            let y = 700.0 - 12.0 * i as f32;
            // Left line ends at x=100, right line starts 6 units (0.6 em) later, same text object.
            let x = word(&mut b, 50.0, y, &format!("left{i} aaaa"));
            word(&mut b, x + 6.0, y, &format!("right{i} bbb"));
        }
        let text = render(b.finish(), far());
        let first: Vec<&str> = text.lines().map(|l| l.split(' ').next().unwrap()).collect();
        assert_eq!(
            first,
            [
                "left0", "left1", "left2", "left3", "left4", "left5", "right0", "right1", "right2",
                "right3", "right4", "right5"
            ],
            "{text}"
        );
        // A few lines with an aligned narrow gap (justified text) are just lines.
        let mut b = SpanBuilder::default();
        for i in 0..4 {
            let y = 700.0 - 12.0 * i as f32;
            let x = word(&mut b, 50.0, y, &format!("one{i} aaaa"));
            word(&mut b, x + 6.0, y, &format!("two{i} bbb"));
        }
        assert_eq!(
            render(b.finish(), far()),
            "one0 aaaa two0 bbb\none1 aaaa two1 bbb\none2 aaaa two2 bbb\none3 aaaa two3 bbb"
        );
    }

    #[test]
    fn overprinted_glyphs_and_words_are_kept_once() {
        let mut b = SpanBuilder::default();
        // Glyph by glyph, each drawn twice half a unit apart.
        let mut x = 50.0;
        for c in "Bold".chars() {
            let s = c.to_string();
            b.glyph(x, x + 5.0, 700.0, 10.0, &s);
            b.glyph(x + 0.5, x + 5.5, 700.0, 10.0, &s);
            x += 5.0;
        }
        b.flush();
        // A whole word drawn twice.
        word(&mut b, 50.0, 680.0, "Heading");
        b.flush();
        word(&mut b, 50.4, 680.0, "Heading");
        b.flush();
        // Real repeated letters stay.
        word(&mut b, 50.0, 660.0, "ballooon");
        b.flush();
        // A margin drawn character by character, then all of it again later in the page.
        for _ in 0..2 {
            for (i, c) in "密封线".chars().enumerate() {
                b.glyph(20.0, 30.0, 600.0 - 40.0 * i as f32, 10.0, &c.to_string());
                b.flush();
            }
            for i in 0..10 {
                word(&mut b, 50.0, 640.0 - 12.0 * i as f32, "filler");
                b.flush();
            }
        }
        let text = render(b.finish(), far());
        assert_eq!(text.matches('密').count(), 1, "{text}");
        assert_eq!(text.matches('线').count(), 1, "{text}");
        assert!(text.contains("Bold\nHeading\nballooon"), "{text}");
    }

    #[test]
    fn like_glyphs_side_by_side_are_not_a_copy() {
        // LuaTeX's kashida: two tatweels drawn right to left, each its own span, 0.2 em apart.
        let mut b = SpanBuilder::default();
        b.glyph(196.45, 205.31, 500.0, 44.8, "ـ");
        b.flush();
        b.glyph(187.56, 196.43, 500.0, 44.8, "ـ");
        b.flush();
        assert_eq!(render(b.finish(), far()).trim(), "ــ");
    }

    #[test]
    fn right_to_left_lines_come_back_in_logical_order() {
        let visual = |s: &str| logical_order(s.to_string());
        // Runs of the other direction come between embedding marks, as pdftotext writes
        // them: a number in a Hebrew line, a Hebrew word in an English one.
        assert_eq!(
            visual("לקש 120 ריחמ םולש"),
            "שלום מחיר \u{202A}120\u{202C} שקל"
        );
        assert_eq!(visual("ملاعلاب ابحرم"), "مرحبا بالعالم");
        assert_eq!(
            visual("The word םולש means peace"),
            "The word \u{202B}שלום\u{202C} means peace"
        );
        assert_eq!(visual("plain text 42"), "plain text 42");
        // A Latin letter drawn inside an Arabic word is a word of its own.
        assert_eq!(visual("يrبaجلا"), "الج\u{202A}a\u{202C}ب\u{202A}r\u{202C}ي");
        // Two Hebrew words in an English line are one run; the space after it stays out.
        assert_eq!(
            visual("we say םכל םולש now"),
            "we say \u{202B}שלום לכם\u{202C} now"
        );
    }

    #[test]
    fn letters_drawn_right_to_left_in_logical_order_read_in_logical_order() {
        // LuaTeX draws تابی from the right, pen moving left, each letter kerned a hair into
        // the one before it: ت, then ا left of it, then ب left of ا (overlapping it by 0.03),
        // then ی. Each glyph drawn back to the left stands by x, not after the last one.
        let mut b = SpanBuilder::default();
        let size = 44.8;
        b.glyph(279.96, 293.56, 500.0, size, "ﺗ");
        b.glyph(270.20, 279.96, 500.0, size, "ﺎ");
        b.glyph(257.77, 270.23, 500.0, size, "ﺑ");
        b.glyph(226.47, 257.75, 500.0, size, "ﯽ");
        let text = render(b.finish(), far());
        assert_eq!(text.trim(), "ﺗﺎﺑﯽ");
        // A mark drawn back to its letter's left edge stays with the letter.
        let mut b = SpanBuilder::default();
        b.glyph(100.0, 104.0, 500.0, 10.0, "e");
        b.glyph(99.5, 100.0, 500.0, 10.0, "\u{0301}");
        b.glyph(104.0, 108.0, 500.0, 10.0, "x");
        assert_eq!(render(b.finish(), far()).trim(), "e\u{0301}x");
    }

    #[test]
    fn double_letters_placed_one_by_one_are_not_overprinting() {
        // "tt" in a condensed face: 0.19 em apart, each glyph 0.19 em wide.
        let mut b = SpanBuilder::default();
        let mut x = 0.0;
        for c in "rattachement".chars() {
            let w = if c == 't' { 1.95 } else { 3.9 };
            b.glyph(x, x + w, 700.0, 10.0, &c.to_string());
            x += w;
        }
        // Fake bold: the same glyph again 0.3 pt to the right.
        b.glyph(x, x + 5.0, 700.0, 10.0, "s");
        b.glyph(x + 0.3, x + 5.3, 700.0, 10.0, "s");
        assert_eq!(render(b.finish(), far()), "rattachements");
    }

    #[test]
    fn hostile_numbers_do_not_panic() {
        let mut b = SpanBuilder::default();
        for v in [f32::NAN, f32::INFINITY, -1e30, 1e30, 0.0] {
            b.glyph(v, v, v, v, "x");
            b.glyph(0.0, 1.0, v, 10.0, "y");
        }
        let _ = render(b.finish(), far());
    }

    /// Lines 12 pt apart in a 10 pt font, top to bottom.
    fn lines(texts: &[(&str, bool)]) -> Vec<Line> {
        texts
            .iter()
            .enumerate()
            .map(|(i, &(text, continues))| Line {
                text: text.to_string(),
                y: 700.0 - 12.0 * i as f32,
                size: 10.0,
                start_size: 10.0,
                continues,
            })
            .collect()
    }

    #[test]
    fn a_hyphen_at_a_line_end_joins_the_next_line_of_the_flow() {
        let l = lines(&[
            ("the doc-", false),
            ("uments we read, an e-", true),
            ("mail and a 1990-", true),
            ("2000 range", true),
        ]);
        // As pdftotext: the hyphen goes, the next line runs on (a compound's own hyphen and a
        // range's too: poppler does not tell them apart).
        assert_eq!(
            join_lines(&l),
            "the documents we read, an email and a 19902000 range"
        );
    }

    #[test]
    fn a_hyphen_stays_before_a_new_flow_a_blank_line_or_the_end() {
        let l = lines(&[
            ("left column ends in hyph-", false),
            ("right column", false),
            ("before nothing-", true),
            ("  ", true),
            ("a dash \u{2010}", true),
            ("and an en dash \u{2013}", true),
            ("last-", true),
        ]);
        assert_eq!(
            join_lines(&l),
            "left column ends in hyph-\nright column\nbefore nothing-\n  \n\
             a dash \u{2010}\nand an en dash \u{2013}\nlast-"
        );
        assert_eq!(join_lines(&[]), "");
    }

    #[test]
    fn a_hyphen_stays_before_a_wide_gap_or_a_larger_font() {
        let mut l = lines(&[("para-", false), ("graph", true)]);
        // 3.4 em lower joins, 3.5 em does not (pdftotext 22.12).
        l[1].y = l[0].y - 34.0;
        assert_eq!(join_lines(&l), "paragraph");
        l[1].y = l[0].y - 35.0;
        assert_eq!(join_lines(&l), "para-\ngraph");
        // A larger next line (a heading) is another block; a smaller one runs on.
        l[1].y = l[0].y - 12.0;
        l[1].start_size = 12.0;
        assert_eq!(join_lines(&l), "para-\ngraph");
        l[1].start_size = 8.0;
        assert_eq!(join_lines(&l), "paragraph");
    }
    /// Glyphs of `text` from `x` at `size`, 0.5 em apart; returns where the pen ends.
    fn sized(b: &mut SpanBuilder, x: f32, y: f32, size: f32, text: &str) -> f32 {
        let mut x = x;
        for c in text.chars() {
            let adv = 0.5 * size;
            if c != ' ' {
                b.glyph(x, x + adv, y, size, &c.to_string());
            }
            x += adv;
        }
        x
    }

    #[test]
    fn a_hyphen_joins_by_the_sizes_of_the_word_halves_not_of_the_line() {
        // A line opening with a command name in a 9 pt typewriter face and going on in 11 pt
        // roman, hyphenated, then an 11 pt line: one flow, joined as pdftotext joins it. The
        // command and its comma make the line's widest span, which starts at 9 pt: the line's
        // size as its widest span's took the next line for a larger heading (luabidi).
        let mut b = SpanBuilder::default();
        let x = sized(&mut b, 50.0, 700.0, 9.0, "\\LTRfootnote");
        sized(&mut b, x, 700.0, 11.0, ", in contrast, always notwith-");
        b.flush();
        sized(&mut b, 50.0, 686.0, 11.0, "standing the current direction");
        assert_eq!(
            render(b.finish(), far()),
            "\\LTRfootnote, in contrast, always notwithstanding the current direction"
        );
        // Roman text naming long macros in the smaller face, more of them than roman letters.
        let mut b = SpanBuilder::default();
        let x = sized(&mut b, 50.0, 700.0, 11.0, "Two ");
        let x = sized(&mut b, x, 700.0, 9.0, "\\ukrainian@sh@hyphen");
        sized(&mut b, x, 700.0, 11.0, " de-");
        b.flush();
        sized(&mut b, 50.0, 686.0, 11.0, "fined below");
        assert_eq!(
            render(b.finish(), far()),
            "Two \\ukrainian@sh@hyphen defined below"
        );
        // A heading set larger than the hyphen before it still keeps the hyphen.
        let mut b = SpanBuilder::default();
        sized(&mut b, 50.0, 700.0, 9.0, "small print ends in hyph-");
        b.flush();
        sized(&mut b, 50.0, 686.0, 11.0, "Heading");
        assert_eq!(
            render(b.finish(), far()),
            "small print ends in hyph-\nHeading"
        );
    }

    #[test]
    fn hyphenated_lines_join_within_a_column_not_across_the_gutter() {
        let mut b = SpanBuilder::default();
        for i in 0..5 {
            let y = 760.0 - 12.0 * i as f32;
            let (l, r) = if i == 4 {
                ("left bottom-".to_string(), "right end".to_string())
            } else {
                (format!("left{i} ex-"), format!("right{i} co-"))
            };
            word(&mut b, 50.0, y, &l);
            b.flush();
            word(&mut b, 300.0, y, &r);
            b.flush();
        }
        let text = render(b.finish(), far());
        assert_eq!(
            text,
            "left0 exleft1 exleft2 exleft3 exleft bottom-\n\
             right0 coright1 coright2 coright3 coright end"
        );
    }
}
