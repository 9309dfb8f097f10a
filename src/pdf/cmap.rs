//! ToUnicode CMaps read without expanding ranges: `bfchar` and `bfrange` entries are kept as
//! ranges and looked up per code (binary search over runs); no range is walked code by code.
//!
//! Why not lopdf's own CMap parser: after parsing, it builds a reverse map (Unicode → codes) by
//! walking every code of every range, so one `<00000000> <FFFFFFFF>` range in a 100-byte CMap
//! costs 2^32 steps and gigabytes (issue 21; `fixtures/hostile/lopdf-cmap-range.pdf` shows it
//! for a report to its authors). We never need the reverse map; the number of entries is
//! capped. Overlaps resolve as in lopdf (the later entry wins): for one- and two-byte codes by
//! painting each code's table once from the last entry backwards (a "next unpainted code"
//! union-find makes that linear in codes + entries), for three- and four-byte codes (CJK
//! Encoding CMaps and their ToUnicode maps; a table of 2^32 codes is not an option) by a sweep
//! over the entries' intervals (`Table::seal_sparse`); either way only the runs are kept.
//!
//! The reader is lenient the way viewers are: it tokenises the stream (hex strings, arrays,
//! keywords; comments, names, numbers and literal strings skipped) and reads the sections it
//! knows, whatever surrounds them. Later entries override earlier ones, as in lopdf.

/// What a range maps to.
#[derive(Debug, Clone)]
enum Target {
    /// One UTF-16 unit: `lo`'s unit plus the code's offset in the range.
    Unit(u16),
    /// A string whose last unit is incremented by the code's offset.
    Str(Vec<u16>),
    /// One string per code, in order.
    Arr(Vec<Vec<u16>>),
}

#[derive(Debug, Clone)]
struct Entry {
    lo: u32,
    hi: u32,
    target: Target,
}

/// A code → text lookup for one code length: maximal runs of codes mapped by the same entry.
#[derive(Debug, Default)]
struct Table {
    entries: Vec<Entry>,
    /// (first code, last code, entry index), sorted, disjoint.
    runs: Vec<(u32, u32, u32)>,
}

impl Table {
    /// Resolves overlaps (the later entry wins) into runs. Linear in codes + entries.
    fn seal(&mut self, bits: u32) {
        let size = 1usize << bits;
        if self.entries.is_empty() {
            return;
        }
        const NONE: u32 = u32::MAX;
        let mut owner = vec![NONE; size];
        // next[c]: the first code ≥ c not painted yet (path-halving union-find).
        let mut next: Vec<u32> = (0..=size as u32).collect();
        fn find(next: &mut [u32], mut c: u32) -> u32 {
            while next[c as usize] != c {
                let up = next[next[c as usize] as usize];
                next[c as usize] = up;
                c = up;
            }
            c
        }
        for (k, e) in self.entries.iter().enumerate().rev() {
            let mut c = find(&mut next, e.lo);
            while c <= e.hi {
                owner[c as usize] = k as u32;
                next[c as usize] = c + 1;
                c = find(&mut next, c + 1);
            }
        }
        let mut start = 0u32;
        for c in 1..=size as u32 {
            let prev = owner[(c - 1) as usize];
            if c as usize == size || owner[c as usize] != prev {
                if prev != NONE {
                    self.runs.push((start, c - 1, prev));
                }
                start = c;
            }
        }
    }

    /// `seal` for codes of three or four bytes, without a table per code: the entries from the
    /// last backwards, each owning the parts of its interval no later entry owns. `covered`
    /// holds the owned codes as merged, disjoint intervals (start → end), so every interval a
    /// gap walk steps over is merged away: O(n log n) in entries, whatever they overlap.
    fn seal_sparse(&mut self) {
        use std::collections::BTreeMap;
        let mut covered: BTreeMap<u32, u32> = BTreeMap::new();
        for (k, e) in self.entries.iter().enumerate().rev() {
            let k = k as u32;
            // The gaps of [lo, hi] between covered intervals become this entry's runs.
            let mut c = Some(e.lo);
            if let Some((_, &end)) = covered.range(..=e.lo).next_back() {
                if end >= e.lo {
                    c = end.checked_add(1);
                }
            }
            while let Some(from) = c.filter(|&c| c <= e.hi) {
                match covered.range(from..).next() {
                    Some((&start, &end)) if start <= e.hi => {
                        if start > from {
                            self.runs.push((from, start - 1, k));
                        }
                        c = end.checked_add(1);
                    }
                    _ => {
                        self.runs.push((from, e.hi, k));
                        c = None;
                    }
                }
            }
            // Merge [lo, hi] with every covered interval it overlaps or touches.
            let (mut lo, mut hi) = (e.lo, e.hi);
            let touching: Vec<(u32, u32)> = covered
                .range(..=e.hi.saturating_add(1))
                .rev()
                .take_while(|(_, &end)| end.saturating_add(1) >= e.lo)
                .map(|(&s, &e)| (s, e))
                .collect();
            for (s, end) in touching {
                covered.remove(&s);
                lo = lo.min(s);
                hi = hi.max(end);
            }
            covered.insert(lo, hi);
        }
        self.runs.sort_unstable();
    }

    fn get(&self, code: u32) -> Option<Vec<u16>> {
        let i = self.runs.partition_point(|r| r.1 < code);
        let &(_, _, k) = self.runs.get(i).filter(|r| r.0 <= code)?;
        let e = &self.entries[k as usize];
        let off = code - e.lo;
        Some(match &e.target {
            Target::Unit(u) => vec![u.wrapping_add(off as u16)],
            Target::Str(s) => {
                let mut s = s.clone();
                if let Some(last) = s.last_mut() {
                    *last = last.wrapping_add(off as u16);
                }
                s
            }
            Target::Arr(a) => a.get(off as usize).cloned().unwrap_or_else(|| vec![0xFFFD]),
        })
    }
}

/// A font's ToUnicode map (or an Encoding CMap's CIDs), one table per code length.
#[derive(Debug, Default)]
pub struct ToUnicode {
    one: Table,
    two: Table,
    three: Table,
    four: Table,
}

impl ToUnicode {
    /// The UTF-16 text of `code` read as `len` bytes (1 or 2). A code the map has only at the
    /// other length is found by its value, as poppler and pdf.js do: producers write
    /// `<41>` entries for two-byte Identity-H fonts and `<0041>` entries for simple fonts
    /// (issue 15: a whole document's glyphs were dropped for that).
    /// Codes of three or four bytes are looked up at their own length, then, as poppler looks
    /// codes up by value whatever their length, at the other wide length.
    pub fn get(&self, code: u32, len: u8) -> Option<Vec<u16>> {
        let (exact, other) = match len {
            1 => (&self.one, &self.two),
            2 => (&self.two, &self.one),
            3 => return self.three.get(code).or_else(|| self.four.get(code)),
            4 => return self.four.get(code).or_else(|| self.three.get(code)),
            _ => return None,
        };
        exact.get(code).or_else(|| {
            if len == 2 && code > 0xFF {
                None
            } else {
                other.get(code)
            }
        })
    }

    /// No entry at all.
    pub fn is_empty(&self) -> bool {
        [&self.one, &self.two, &self.three, &self.four]
            .iter()
            .all(|t| t.runs.is_empty())
    }

    fn table(&self, len: u8) -> &Table {
        match len {
            1 => &self.one,
            2 => &self.two,
            3 => &self.three,
            _ => &self.four,
        }
    }

    /// A CID map's CID for `code` of `len` bytes (its one-unit target).
    pub fn cid(&self, code: u32, len: u8) -> Option<u32> {
        let t = self.table(len);
        t.get(code).and_then(|u| u.first().copied()).map(u32::from)
    }

    fn put(&mut self, lo: u32, hi: u32, len: u8, target: Target) {
        let t = match len {
            1 => &mut self.one,
            2 => &mut self.two,
            3 => &mut self.three,
            _ => &mut self.four,
        };
        t.entries.push(Entry { lo, hi, target });
    }

    fn seal(&mut self) {
        self.one.seal(8);
        self.two.seal(16);
        self.three.seal_sparse();
        self.four.seal_sparse();
    }
}

/// Entries (`bfchar` pairs plus `bfrange` triples) read from one CMap; the rest are ignored.
pub const MAX_ENTRIES: usize = 100_000;
/// Longest destination string kept (UTF-16 code units); real ones are a few (ligatures).
const MAX_TARGET_UNITS: usize = 64;
/// Longest destination array of one range.
const MAX_TARGET_ARRAY: usize = 65_536;

#[derive(Debug, PartialEq)]
enum Tok<'a> {
    Hex(&'a [u8]),
    Open,
    Close,
    Word(&'a [u8]),
}

/// Tokens of a CMap stream, lazily.
struct Lexer<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Iterator for Lexer<'a> {
    type Item = Tok<'a>;

    fn next(&mut self) -> Option<Tok<'a>> {
        let b = self.b;
        loop {
            let c = *b.get(self.i)?;
            match c {
                b'%' => {
                    while self.i < b.len() && b[self.i] != b'\n' && b[self.i] != b'\r' {
                        self.i += 1;
                    }
                }
                b'<' if b.get(self.i + 1) == Some(&b'<') => self.i += 2,
                b'>' => self.i += 1,
                b'<' => {
                    let start = self.i + 1;
                    let end = b[start..]
                        .iter()
                        .position(|&c| c == b'>')
                        .map_or(b.len(), |p| start + p);
                    self.i = (end + 1).min(b.len());
                    return Some(Tok::Hex(&b[start..end]));
                }
                b'[' => {
                    self.i += 1;
                    return Some(Tok::Open);
                }
                b']' => {
                    self.i += 1;
                    return Some(Tok::Close);
                }
                b'(' => {
                    // A literal string (balanced parentheses, backslash escapes): skipped.
                    let mut depth = 0usize;
                    while self.i < b.len() {
                        match b[self.i] {
                            b'\\' => self.i += 1,
                            b'(' => depth += 1,
                            b')' => {
                                depth -= 1;
                                if depth == 0 {
                                    self.i += 1;
                                    break;
                                }
                            }
                            _ => {}
                        }
                        self.i += 1;
                    }
                }
                c if c.is_ascii_alphanumeric() || c == b'/' || c == b'.' || c == b'-' => {
                    let start = self.i;
                    self.i += 1;
                    while self.i < b.len()
                        && (b[self.i].is_ascii_alphanumeric() || b"._-".contains(&b[self.i]))
                    {
                        self.i += 1;
                    }
                    return Some(Tok::Word(&b[start..self.i]));
                }
                _ => self.i += 1,
            }
        }
    }
}

/// Bytes of a hex string (whitespace ignored, an odd last digit padded with 0 as PDF says).
fn hex_bytes(h: &[u8]) -> Vec<u8> {
    let digits: Vec<u8> = h
        .iter()
        .filter_map(|&c| (c as char).to_digit(16).map(|d| d as u8))
        .collect();
    digits
        .chunks(2)
        .map(|p| (p[0] << 4) | p.get(1).copied().unwrap_or(0))
        .collect()
}

/// A source code and its length in bytes (1 to 4, as code space ranges allow); None otherwise.
fn source(h: &[u8]) -> Option<(u32, u8)> {
    let bytes = hex_bytes(h);
    if bytes.is_empty() || bytes.len() > 4 {
        return None;
    }
    Some((
        bytes.iter().fold(0u32, |a, &b| (a << 8) | b as u32),
        bytes.len() as u8,
    ))
}

/// A destination string as UTF-16 code units (big-endian pairs).
fn target(h: &[u8]) -> Vec<u16> {
    hex_bytes(h)
        .chunks(2)
        .take(MAX_TARGET_UNITS)
        .map(|p| ((p[0] as u16) << 8) | p.get(1).copied().unwrap_or(0) as u16)
        .collect()
}

/// A code space range: codes of `len` bytes whose every byte lies within `lo..=hi`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Space {
    pub len: u8,
    lo: [u8; 4],
    hi: [u8; 4],
}

impl Space {
    /// A range over `len`-byte codes from `lo` to `hi` (one byte each).
    pub const fn new(len: u8, lo: [u8; 4], hi: [u8; 4]) -> Space {
        Space { len, lo, hi }
    }

    fn matches(&self, b: &[u8]) -> bool {
        b.len() == self.len as usize
            && b.iter()
                .enumerate()
                .all(|(i, &c)| self.lo[i] <= c && c <= self.hi[i])
    }
}

/// The first character code of `b` by the code space ranges (PDF 32000 9.7.6.2): the shortest
/// prefix inside a range; when none is, as many bytes as the shortest range whose first byte
/// fits, else one. Returns (code, bytes used); `b` must not be empty.
pub fn next_code(spaces: &[Space], b: &[u8]) -> (u32, usize) {
    let fold = |n: usize| b[..n].iter().fold(0u32, |a, &c| (a << 8) | c as u32);
    for n in 1..=b.len().min(4) {
        if spaces.iter().any(|s| s.matches(&b[..n])) {
            return (fold(n), n);
        }
    }
    let n = spaces
        .iter()
        .filter(|s| s.lo[0] <= b[0] && b[0] <= s.hi[0])
        .map(|s| s.len as usize)
        .min()
        .unwrap_or(1)
        .clamp(1, b.len().min(4));
    (fold(n), n)
}

/// Everything the text layer reads from a CMap: `bfchar`/`bfrange` (ToUnicode), `cidchar`/
/// `cidrange` (an embedded Encoding CMap: code → CID, kept as one-unit targets), the code space
/// ranges and the name given to `usecmap`.
#[derive(Debug, Default)]
pub struct Parsed {
    pub text: ToUnicode,
    pub cids: ToUnicode,
    pub spaces: Vec<Space>,
    pub usecmap: Option<Vec<u8>>,
}

/// Code space ranges kept from one CMap.
const MAX_SPACES: usize = 64;

/// Reads a ToUnicode CMap stream (already decompressed). Never fails: what cannot be read is
/// skipped; an empty map is None.
pub fn parse(stream: &[u8]) -> Option<ToUnicode> {
    let p = parse_cmap(stream);
    (!p.text.is_empty()).then_some(p.text)
}

/// Reads any CMap stream (ToUnicode or an embedded Encoding), leniently.
pub fn parse_cmap(stream: &[u8]) -> Parsed {
    let mut out = Parsed::default();
    let mut text = ToUnicode::default();
    let cmap = &mut text;
    let mut entries = 0usize;
    let mut last_name: Option<&[u8]> = None;
    let mut toks = Lexer { b: stream, i: 0 }.peekable();
    while let Some(t) = toks.next() {
        if entries >= MAX_ENTRIES {
            break;
        }
        match t {
            Tok::Word(w) if w.starts_with(b"/") => last_name = Some(&w[1..]),
            Tok::Word(b"usecmap") => out.usecmap = last_name.map(|n| n.to_vec()),
            Tok::Word(b"begincodespacerange") => {
                while let (Some(Tok::Hex(lo)), Some(Tok::Hex(hi))) = (toks.next(), toks.next()) {
                    let (lo, hi) = (hex_bytes(lo), hex_bytes(hi));
                    if (1..=4).contains(&lo.len())
                        && lo.len() == hi.len()
                        && out.spaces.len() < MAX_SPACES
                    {
                        let mut s = Space::new(lo.len() as u8, [0; 4], [0; 4]);
                        s.lo[..lo.len()].copy_from_slice(&lo);
                        s.hi[..hi.len()].copy_from_slice(&hi);
                        out.spaces.push(s);
                    }
                    if !matches!(toks.peek(), Some(Tok::Hex(_))) {
                        break;
                    }
                }
            }
            Tok::Word(w @ (b"begincidchar" | b"begincidrange")) => {
                let range = w == b"begincidrange";
                while let Some(Tok::Hex(lo)) = toks.next() {
                    let hi = if range {
                        match toks.next() {
                            Some(Tok::Hex(h)) => h,
                            _ => break,
                        }
                    } else {
                        lo
                    };
                    let Some(Tok::Word(cid)) = toks.next() else {
                        break;
                    };
                    entries += 1;
                    let cid = std::str::from_utf8(cid)
                        .ok()
                        .and_then(|c| c.parse::<u16>().ok());
                    if let (Some(cid), Some((lo, len)), Some((hi, hi_len))) =
                        (cid, source(lo), source(hi))
                    {
                        if len == hi_len && lo <= hi {
                            out.cids.put(lo, hi, len, Target::Unit(cid));
                        }
                    }
                    if entries >= MAX_ENTRIES || !matches!(toks.peek(), Some(Tok::Hex(_))) {
                        break;
                    }
                }
            }
            Tok::Word(b"beginbfchar") => {
                while let (Some(Tok::Hex(src)), Some(Tok::Hex(dst))) = (toks.next(), toks.next()) {
                    entries += 1;
                    if let Some((code, len)) = source(src) {
                        let dst = target(dst);
                        match dst.len() {
                            0 => {}
                            1 => cmap.put(code, code, len, Target::Unit(dst[0])),
                            _ => cmap.put(code, code, len, Target::Str(dst)),
                        }
                    }
                    if entries >= MAX_ENTRIES || !matches!(toks.peek(), Some(Tok::Hex(_))) {
                        break;
                    }
                }
            }
            Tok::Word(b"beginbfrange") => {
                while let (Some(Tok::Hex(lo)), Some(Tok::Hex(hi))) = (toks.next(), toks.next()) {
                    entries += 1;
                    let dst = match toks.next() {
                        Some(Tok::Hex(d)) => Some(target(d)),
                        Some(Tok::Open) => {
                            let mut arr = Vec::new();
                            for t in toks.by_ref() {
                                match t {
                                    Tok::Hex(d) if arr.len() < MAX_TARGET_ARRAY => {
                                        arr.push(target(d))
                                    }
                                    Tok::Hex(_) => {}
                                    _ => break,
                                }
                            }
                            put_array(cmap, lo, hi, arr);
                            None
                        }
                        _ => break,
                    };
                    if let (Some(dst), Some((lo, len)), Some((hi, hi_len))) =
                        (dst, source(lo), source(hi))
                    {
                        if len == hi_len && lo <= hi && !dst.is_empty() {
                            let t = if dst.len() == 1 {
                                Target::Unit(dst[0])
                            } else {
                                Target::Str(dst)
                            };
                            cmap.put(lo, hi, len, t);
                        }
                    }
                    if entries >= MAX_ENTRIES || !matches!(toks.peek(), Some(Tok::Hex(_))) {
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    out.text = text;
    out.text.seal();
    out.cids.seal();
    out
}

fn put_array(cmap: &mut ToUnicode, lo: &[u8], hi: &[u8], arr: Vec<Vec<u16>>) {
    if let (Some((lo, len)), Some((hi, hi_len))) = (source(lo), source(hi)) {
        if len == hi_len && lo <= hi && !arr.is_empty() {
            cmap.put(lo, hi, len, Target::Arr(arr));
        }
    }
}

/// The CMap of issue 21: one range over every four-byte code.
pub const HOSTILE_FULL_RANGE: &str = "/CIDInit /ProcSet findresource begin\n12 dict begin\nbegincmap\n/CMapName /Hostile def\n1 begincodespacerange\n<00000000> <FFFFFFFF>\nendcodespacerange\n1 beginbfrange\n<00000000> <FFFFFFFF> <0041>\nendbfrange\nendcmap\nCMapName currentdict /CMap defineresource pop\nend\nend\n";

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    const REAL: &str = "/CIDInit /ProcSet findresource begin 12 dict begin begincmap\n\
        /CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def\n\
        /CMapName /Adobe-Identity-UCS def /CMapType 2 def\n\
        1 begincodespacerange <0000> <FFFF> endcodespacerange\n\
        2 beginbfchar <0003> <0020> <0011> <00660069> endbfchar\n\
        2 beginbfrange <0024> <0026> <0041> <0030> <0031> [<0078> <D835DC00>] endbfrange\n\
        endcmap CMapName currentdict /CMap defineresource pop end end";

    #[test]
    fn chars_ranges_and_arrays_are_read() {
        let c = parse(REAL.as_bytes()).unwrap();
        assert_eq!(c.get(0x03, 2), Some(vec![0x20]));
        assert_eq!(c.get(0x11, 2), Some(vec![0x66, 0x69]));
        assert_eq!(c.get(0x25, 2), Some(vec![0x42]));
        assert_eq!(c.get(0x31, 2), Some(vec![0xD835, 0xDC00]));
        assert_eq!(c.get(0x27, 2), None);
        // A one-byte lookup finds the two-byte entry of the same value (poppler does so).
        assert_eq!(c.get(0x25, 1), Some(vec![0x42]));
        let one = parse(b"1 beginbfchar <41> <0391> endbfchar").unwrap();
        assert_eq!(one.get(0x41, 2), Some(vec![0x391]));
        assert_eq!(one.get(0x141, 2), None);
    }

    #[test]
    fn a_range_over_every_four_byte_code_costs_nothing() {
        let t = Instant::now();
        let c = parse(HOSTILE_FULL_RANGE.as_bytes()).unwrap();
        assert_eq!(c.get(0x0000_0002, 4), Some(vec![0x43]));
        assert_eq!(c.get(0xFFFF_FFFF, 4), Some(vec![0x40]), "the unit wraps");
        // And 100,000 ranges of 65,536 two-byte codes each.
        let mut s = String::from("100000 beginbfrange\n");
        for i in 0..100_000u32 {
            s.push_str(&format!("<0000> <FFFF> <{:04X}>\n", i % 0xFFFF));
        }
        s.push_str("endbfrange");
        let c = parse(s.as_bytes()).unwrap();
        assert_eq!(c.get(0x10, 2), Some(vec![(99_999 % 0xFFFF + 0x10) as u16]));
        assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    }

    #[test]
    fn codespace_ranges_split_mixed_length_codes() {
        let p = parse_cmap(
            b"/Base usecmap 2 begincodespacerange <00> <7F> <8000> <FFFF> endcodespacerange \
              1 begincidrange <8001> <8005> 300 endcidrange 1 begincidchar <41> 7 endcidchar",
        );
        assert_eq!(p.usecmap.as_deref(), Some(&b"Base"[..]));
        assert_eq!(p.spaces.len(), 2);
        let b = [0x41, 0x80, 0x02, 0x42, 0x90];
        assert_eq!(next_code(&p.spaces, &b), (0x41, 1));
        assert_eq!(next_code(&p.spaces, &b[1..]), (0x8002, 2));
        assert_eq!(
            next_code(&p.spaces, &b[4..]),
            (0x90, 1),
            "a cut code is one byte"
        );
        assert_eq!(p.cids.cid(0x8002, 2), Some(301));
        assert_eq!(p.cids.cid(0x41, 1), Some(7));
        assert_eq!(next_code(&[], &[0xAB, 0xCD]), (0xAB, 1));
    }

    #[test]
    fn three_and_four_byte_codes_are_looked_up() {
        let p = parse_cmap(
            b"3 begincodespacerange <00> <7F> <8E0000> <8EFFFF> <81000000> <81FFFFFF> \
              endcodespacerange 2 begincidrange <8EA1A1> <8EA1FE> 500 <81308130> <81308139> 900 \
              endcidrange 1 begincidchar <81308135> 7 endcidchar \
              2 beginbfrange <8EA1A1> <8EA1FE> <4E00> <81308130> <81308139> <00C0> endbfrange \
              1 beginbfchar <81308131> <D840DC00> endbfchar",
        );
        let b = [0x41, 0x8E, 0xA1, 0xA3, 0x81, 0x30, 0x81, 0x31];
        assert_eq!(next_code(&p.spaces, &b[1..]), (0x8EA1A3, 3));
        assert_eq!(next_code(&p.spaces, &b[4..]), (0x81308131, 4));
        assert_eq!(p.cids.cid(0x8EA1A3, 3), Some(502));
        assert_eq!(p.cids.cid(0x81308134, 4), Some(904));
        assert_eq!(p.cids.cid(0x81308135, 4), Some(7), "the later entry wins");
        assert_eq!(p.cids.cid(0x81308136, 4), Some(906));
        assert_eq!(p.text.get(0x8EA1A3, 3), Some(vec![0x4E02]));
        assert_eq!(p.text.get(0x81308131, 4), Some(vec![0xD840, 0xDC00]));
        assert_eq!(p.text.get(0x81308132, 4), Some(vec![0xC2]));
        assert_eq!(
            p.text.get(0x8EA1A3, 4),
            Some(vec![0x4E02]),
            "found by value"
        );
        assert_eq!(p.text.get(0x8EA200, 3), None);
    }

    #[test]
    fn wide_overlaps_resolve_to_the_later_entry() {
        // Later entries win; the sweep must give the same runs as painting code by code.
        let entries = [
            (10u32, 50u32),
            (20, 30),
            (0, 5),
            (25, 60),
            (5, 5),
            (61, 61),
            (0, 100),
        ];
        for n in 1..=entries.len() {
            let mut t = Table::default();
            for (i, &(lo, hi)) in entries[..n].iter().enumerate() {
                t.entries.push(Entry {
                    lo: lo | 0x0100_0000,
                    hi: hi | 0x0100_0000,
                    target: Target::Unit(i as u16),
                });
            }
            t.seal_sparse();
            for code in 0..=101u32 {
                let want = entries[..n]
                    .iter()
                    .rposition(|&(lo, hi)| lo <= code && code <= hi);
                let got = t.get(code | 0x0100_0000).map(|u| u[0]);
                let want = want.map(|k| k as u16 + (code - entries[k].0) as u16);
                assert_eq!(got, want, "{n} entries, code {code}");
            }
            assert!(t.runs.windows(2).all(|w| w[0].1 < w[1].0));
        }
        // 100,000 nested and crossing four-byte ranges stay fast.
        let t0 = Instant::now();
        let mut t = Table::default();
        for i in 0..100_000u32 {
            let (lo, hi) = if i % 2 == 0 {
                (i * 7, i * 7 + 3)
            } else {
                (0, u32::MAX - i)
            };
            t.entries.push(Entry {
                lo,
                hi,
                target: Target::Unit(1),
            });
        }
        t.seal_sparse();
        assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    }

    #[test]
    fn garbage_does_not_panic() {
        for s in [
            "",
            "beginbfrange",
            "beginbfrange <00> <FF> [",
            "beginbfchar <0",
            "beginbfrange <FF> <00> <0041>",
            "beginbfrange <00> <0100> <0041>",
            "(unclosed beginbfchar <01> <41>",
            "beginbfchar <> <>",
            "begincodespacerange <> <FF> <0000000000> <00> endcodespacerange",
            "begincidrange <00> <FF> 99999999999 <00> <FF> 1 endcidrange begincidchar <00>",
            "usecmap /X usecmap",
        ] {
            let _ = parse(s.as_bytes());
            let p = parse_cmap(s.as_bytes());
            let _ = next_code(&p.spaces, &[0xFF, 0, 0, 0, 0]);
        }
    }
}
