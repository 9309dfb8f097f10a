//! A tolerant content-stream tokenizer: the page's operators with their operands, read as
//! poppler reads them. lopdf's content parser stops at the first token it cannot parse (a stray
//! `)`, an operator spelt with a character outside `[A-Za-z0-9*'"]`, `1.2.3`, an inline image
//! without `EI`), and everything after it on the page was lost (issue 15); pdftotext turns the
//! bad token into an error operand, drops the operation it lands in, and reads on. So does this
//! tokenizer: it never fails, it only skips.
//!
//! What is read (ISO 32000-1 7.2, 7.3, 8.9.7): comments, numbers (signs and dots as poppler's
//! lexer reads them: `--5` is −5, the digits after a second `.` are dropped), names with `#xx`
//! escapes, literal strings (nested parentheses, escapes, octal, line continuations), hex strings
//! (non-hex characters skipped, an odd last digit padded), arrays, dictionaries, `true`, `false`,
//! `null`, operators (any other run of regular characters, and an unmatched `]`, `}` or `{`),
//! and inline images (`BI … ID data EI`, one `BI` operation whose operand is the dictionary).
//!
//! Bounds (hostile files: 100,000-deep arrays, one op with millions of operands): the tokenizer
//! is linear in its input; nesting past [`MAX_NESTING`] is skipped without recursion, an array
//! or dictionary keeps at most [`MAX_ITEMS`] entries, an operation at most [`MAX_OPERANDS`]
//! operands (poppler keeps 33; further ones are dropped, as there).

use lopdf::content::Operation;
use lopdf::{Dictionary, Object, StringFormat};

/// Arrays and dictionaries nested deeper are skipped (lopdf's own limit is 256; real content
/// nests two levels at most: a TJ array, a marked-content property list).
pub const MAX_NESTING: usize = 32;
/// Entries kept per array or dictionary (a TJ array of one line has hundreds).
pub const MAX_ITEMS: usize = 1 << 16;
/// Operands kept per operation (the most any operator takes is 6; `sc`/`scn` take up to 33).
pub const MAX_OPERANDS: usize = 64;

fn is_white(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n' | b'\x0c' | b'\0')
}

fn is_delim(c: u8) -> bool {
    matches!(
        c,
        b'(' | b')' | b'<' | b'>' | b'[' | b']' | b'{' | b'}' | b'/' | b'%'
    )
}

fn is_regular(c: u8) -> bool {
    !is_white(c) && !is_delim(c)
}

/// The operations of `data`, in order; never an error.
pub fn operations(data: &[u8]) -> Ops<'_> {
    Ops { data, pos: 0 }
}

pub struct Ops<'a> {
    data: &'a [u8],
    pos: usize,
}

/// One token of the stream.
enum Tok {
    Obj(Object),
    /// An operator keyword.
    Op(String),
    /// `]` or `>>` closing an array or dictionary.
    Close,
    /// A token that is nothing (`)`, a lone `>`): poppler's error object.
    Bad,
    End,
}

impl Ops<'_> {
    fn peek(&self) -> Option<u8> {
        self.data.get(self.pos).copied()
    }

    fn skip_space(&mut self) {
        while let Some(c) = self.peek() {
            if is_white(c) {
                self.pos += 1;
            } else if c == b'%' {
                while let Some(c) = self.peek() {
                    if c == b'\n' || c == b'\r' {
                        break;
                    }
                    self.pos += 1;
                }
            } else {
                break;
            }
        }
    }

    fn regular_run(&mut self) -> &[u8] {
        let start = self.pos;
        while self.peek().is_some_and(is_regular) {
            self.pos += 1;
        }
        &self.data[start..self.pos]
    }

    /// The next token; `depth` is the nesting of the array or dictionary being read.
    fn token(&mut self, depth: usize) -> Tok {
        self.skip_space();
        let Some(c) = self.peek() else {
            return Tok::End;
        };
        match c {
            b'(' => {
                self.pos += 1;
                Tok::Obj(Object::String(self.literal(), StringFormat::Literal))
            }
            b'<' if self.data.get(self.pos + 1) == Some(&b'<') => {
                self.pos += 2;
                self.dictionary(depth + 1)
            }
            b'<' => {
                self.pos += 1;
                Tok::Obj(Object::String(self.hex(), StringFormat::Hexadecimal))
            }
            b'>' if self.data.get(self.pos + 1) == Some(&b'>') => {
                self.pos += 2;
                if depth > 0 {
                    Tok::Close
                } else {
                    Tok::Bad
                }
            }
            b'[' => {
                self.pos += 1;
                self.array(depth + 1)
            }
            b']' if depth > 0 => {
                self.pos += 1;
                Tok::Close
            }
            // Unmatched, poppler reads these as commands (unknown ones: the operands go).
            b']' | b'{' | b'}' => {
                self.pos += 1;
                Tok::Op((c as char).to_string())
            }
            b')' | b'>' => {
                self.pos += 1;
                Tok::Bad
            }
            b'/' => {
                self.pos += 1;
                Tok::Obj(Object::Name(self.name()))
            }
            b'0'..=b'9' | b'+' | b'-' | b'.' => {
                let (o, used) = number(&self.data[self.pos..]);
                self.pos += used;
                Tok::Obj(o)
            }
            _ => {
                let run = self.regular_run();
                match run {
                    b"true" => Tok::Obj(Object::Boolean(true)),
                    b"false" => Tok::Obj(Object::Boolean(false)),
                    b"null" => Tok::Obj(Object::Null),
                    _ => Tok::Op(String::from_utf8_lossy(run).into_owned()),
                }
            }
        }
    }

    /// A literal string's bytes after its `(` (7.3.4.2); an unclosed one runs to the end.
    fn literal(&mut self) -> Vec<u8> {
        let mut out = Vec::new();
        let mut open = 1usize;
        while let Some(c) = self.peek() {
            self.pos += 1;
            match c {
                b'(' => {
                    open += 1;
                    out.push(c);
                }
                b')' => {
                    open -= 1;
                    if open == 0 {
                        break;
                    }
                    out.push(c);
                }
                b'\\' => {
                    let Some(e) = self.peek() else { break };
                    self.pos += 1;
                    match e {
                        b'n' => out.push(b'\n'),
                        b'r' => out.push(b'\r'),
                        b't' => out.push(b'\t'),
                        b'b' => out.push(8),
                        b'f' => out.push(12),
                        b'0'..=b'7' => {
                            let mut v = (e - b'0') as u32;
                            for _ in 0..2 {
                                match self.peek() {
                                    Some(d @ b'0'..=b'7') => {
                                        v = v * 8 + (d - b'0') as u32;
                                        self.pos += 1;
                                    }
                                    _ => break,
                                }
                            }
                            out.push(v as u8);
                        }
                        // A line continuation: the backslash and the end of line are nothing.
                        b'\r' => {
                            if self.peek() == Some(b'\n') {
                                self.pos += 1;
                            }
                        }
                        b'\n' => {}
                        // `\(`, `\)`, `\\`, and an unknown escape is the character itself.
                        e => out.push(e),
                    }
                }
                c => out.push(c),
            }
        }
        out
    }

    /// A hex string's bytes after its `<`: other characters than hex digits are skipped (as
    /// poppler does), an odd last digit is followed by 0.
    fn hex(&mut self) -> Vec<u8> {
        let mut out = Vec::new();
        let mut half: Option<u8> = None;
        while let Some(c) = self.peek() {
            self.pos += 1;
            let v = match c {
                b'>' => break,
                b'0'..=b'9' => c - b'0',
                b'a'..=b'f' => c - b'a' + 10,
                b'A'..=b'F' => c - b'A' + 10,
                _ => continue,
            };
            match half.take() {
                Some(h) => out.push(h << 4 | v),
                None => half = Some(v),
            }
        }
        if let Some(h) = half {
            out.push(h << 4);
        }
        out
    }

    /// A name's bytes after its `/`, `#xx` escapes decoded (a bad escape is kept as written).
    fn name(&mut self) -> Vec<u8> {
        let run = self.regular_run();
        let mut out = Vec::with_capacity(run.len());
        let mut i = 0;
        while i < run.len() {
            if run[i] == b'#' {
                let hex = run
                    .get(i + 1..i + 3)
                    .and_then(|h| std::str::from_utf8(h).ok());
                if let Some(v) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    out.push(v);
                    i += 3;
                    continue;
                }
            }
            out.push(run[i]);
            i += 1;
        }
        out
    }

    fn array(&mut self, depth: usize) -> Tok {
        if depth > MAX_NESTING {
            self.skip_nested();
            return Tok::Obj(Object::Null);
        }
        let mut items = Vec::new();
        loop {
            match self.token(depth) {
                Tok::Obj(o) if items.len() < MAX_ITEMS => items.push(o),
                Tok::Obj(_) | Tok::Bad => {}
                // An operator inside an array is an error in poppler; the array goes on.
                Tok::Op(_) => {}
                Tok::Close | Tok::End => break,
            }
        }
        Tok::Obj(Object::Array(items))
    }

    fn dictionary(&mut self, depth: usize) -> Tok {
        if depth > MAX_NESTING {
            self.skip_nested();
            return Tok::Obj(Object::Null);
        }
        let mut dict = Dictionary::new();
        let mut key: Option<Vec<u8>> = None;
        loop {
            match self.token(depth) {
                Tok::Obj(o) => put_entry(&mut dict, &mut key, o),
                Tok::Op(_) | Tok::Bad => {}
                Tok::Close | Tok::End => break,
            }
        }
        Tok::Obj(Object::Dictionary(dict))
    }

    /// Skips what is left of a structure nested too deeply, up to its closing bracket, with a
    /// counter instead of recursion; strings are skipped whole (their brackets do not count).
    fn skip_nested(&mut self) {
        let mut open = 1usize;
        while let Some(c) = self.peek() {
            match c {
                b'(' => {
                    self.pos += 1;
                    self.literal();
                    continue;
                }
                b'%' => {
                    self.skip_space();
                    continue;
                }
                b'[' => open += 1,
                b'<' if self.data.get(self.pos + 1) == Some(&b'<') => {
                    open += 1;
                    self.pos += 1;
                }
                b']' => open -= 1,
                b'>' if self.data.get(self.pos + 1) == Some(&b'>') => {
                    open -= 1;
                    self.pos += 1;
                }
                _ => {}
            }
            self.pos += 1;
            if open == 0 {
                return;
            }
        }
    }

    /// An inline image after `BI`: its dictionary up to `ID`, then its data up to `EI`. The data
    /// of an unfiltered image is skipped by its size (it may hold ` EI ` by chance); otherwise,
    /// and when no `EI` follows there, up to the first `EI` between white space.
    fn inline_image(&mut self) -> Operation {
        let mut dict = Dictionary::new();
        let mut key: Option<Vec<u8>> = None;
        loop {
            match self.token(1) {
                Tok::Op(op) if op == "ID" => break,
                Tok::End => {
                    return Operation::new("BI", vec![Object::Dictionary(dict)]);
                }
                Tok::Obj(o) => put_entry(&mut dict, &mut key, o),
                _ => {}
            }
        }
        // One white-space character separates ID from the data (8.9.7).
        if self.peek().is_some_and(is_white) {
            self.pos += 1;
        }
        let start = self.pos;
        let ends_at = |data: &[u8], i: usize| {
            data.get(i..i + 2) == Some(b"EI")
                && data.get(i + 2).is_none_or(|&c| is_white(c) || is_delim(c))
        };
        if let Some(n) = inline_image_size(&dict) {
            let mut i = start.saturating_add(n).min(self.data.len());
            while self.data.get(i).is_some_and(|&c| is_white(c)) {
                i += 1;
            }
            if ends_at(self.data, i) {
                self.pos = i + 2;
                return Operation::new("BI", vec![Object::Dictionary(dict)]);
            }
        }
        let mut i = start;
        while i < self.data.len() {
            if (i == start || is_white(self.data[i - 1])) && ends_at(self.data, i) {
                self.pos = i + 2;
                return Operation::new("BI", vec![Object::Dictionary(dict)]);
            }
            i += 1;
        }
        self.pos = self.data.len();
        Operation::new("BI", vec![Object::Dictionary(dict)])
    }
}

/// The data size of an unfiltered inline image from its dictionary (abbreviated keys as 8.9.7
/// names them, or the full ones), or None when it is filtered or a key is missing.
/// One object of a dictionary's `key value` sequence: a name waiting for its value becomes the
/// key, the next object its value (at most [`MAX_ITEMS`] entries; a value with no name before
/// it is dropped).
fn put_entry(dict: &mut Dictionary, key: &mut Option<Vec<u8>>, o: Object) {
    match key.take() {
        Some(k) if dict.len() < MAX_ITEMS => dict.set(k, o),
        Some(_) => {}
        None => {
            if let Object::Name(n) = o {
                *key = Some(n)
            }
        }
    }
}

fn inline_image_size(dict: &Dictionary) -> Option<usize> {
    let get = |short: &[u8], long: &[u8]| dict.get(short).or_else(|_| dict.get(long)).ok();
    if get(b"F", b"Filter").is_some_and(|f| !matches!(f, Object::Array(a) if a.is_empty())) {
        return None;
    }
    let int = |o: Option<&Object>| match o {
        Some(Object::Integer(i)) if (0..=1 << 20).contains(i) => Some(*i as usize),
        _ => None,
    };
    let w = int(get(b"W", b"Width"))?;
    let h = int(get(b"H", b"Height"))?;
    let mask = matches!(get(b"IM", b"ImageMask"), Some(Object::Boolean(true)));
    let bpc = if mask {
        1
    } else {
        int(get(b"BPC", b"BitsPerComponent"))?
    };
    let comps = if mask {
        1
    } else {
        match get(b"CS", b"ColorSpace") {
            Some(Object::Name(n)) => match n.as_slice() {
                b"G" | b"DeviceGray" | b"I" | b"Indexed" => 1,
                b"RGB" | b"DeviceRGB" => 3,
                b"CMYK" | b"DeviceCMYK" => 4,
                _ => return None,
            },
            Some(Object::Array(a)) if matches!(a.first(), Some(Object::Name(n)) if n == b"I" || n == b"Indexed") => {
                1
            }
            _ => return None,
        }
    };
    Some((w * comps * bpc).div_ceil(8) * h)
}

/// A number token as poppler's lexer reads it: a sign (further `-` signs inside are ignored),
/// digits, one `.` and digits; what follows is the next token (`1.2.3` is 1.2 and .3, `5Tc` is
/// 5 and `Tc`). Nothing numeric is 0. Returns the number and the bytes it took (at least one).
fn number(run: &[u8]) -> (Object, usize) {
    let mut used = run.len();
    let mut neg = false;
    let mut int: i64 = 0;
    let mut frac = 0f64;
    let mut scale = 1f64;
    let mut dot = false;
    for (i, &c) in run.iter().enumerate() {
        match c {
            b'-' if i == 0 => neg = true,
            // poppler ignores minus signs after the first (Adobe's readers do too).
            b'-' => {}
            b'+' if i == 0 => {}
            b'.' if !dot => dot = true,
            b'0'..=b'9' => {
                if dot {
                    scale /= 10.0;
                    frac += (c - b'0') as f64 * scale;
                } else {
                    int = int.saturating_mul(10).saturating_add((c - b'0') as i64);
                }
            }
            _ => {
                used = i.max(1);
                break;
            }
        }
    }
    let sign = if neg { -1.0 } else { 1.0 };
    let o = if dot {
        Object::Real((sign * (int as f64 + frac)) as f32)
    } else {
        Object::Integer(if neg { -int } else { int })
    };
    (o, used)
}

impl Iterator for Ops<'_> {
    type Item = Operation;

    fn next(&mut self) -> Option<Operation> {
        let mut operands = Vec::new();
        loop {
            match self.token(0) {
                Tok::End => {
                    // Operands with no operator at the end are nothing.
                    return None;
                }
                Tok::Obj(o) => {
                    if operands.len() < MAX_OPERANDS {
                        operands.push(o);
                    }
                }
                // poppler's error object: an operand of no type, which fails the type check of
                // an operator reading that place and is dropped when it is further back.
                Tok::Bad => {
                    if operands.len() < MAX_OPERANDS {
                        operands.push(Object::Null);
                    }
                }
                Tok::Close => {}
                Tok::Op(op) if op == "BI" => return Some(self.inline_image()),
                Tok::Op(op) => return Some(Operation::new(&op, operands)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ops(s: &[u8]) -> Vec<String> {
        operations(s).map(|o| format!("{o:?}")).collect()
    }

    #[test]
    fn well_formed_streams_read_as_lopdf_reads_them() {
        let streams: [&[u8]; 6] = [
            b"",
            b"q 1 0 0 1 72 720 cm BT /F1 12 Tf [(A) -120 (B)] TJ ET Q",
            b"  % leading comment\n0 0 m 10 10 l S\n% trailing comment\n",
            b"BT /F#31 9.5 Tf (a\\(b\\) \\101\\n) Tj <48 65 6c6C 6f> Tj T* -.5 Tc ET",
            b"/P <</MCID 3 /Alt (x)>> BDC 0.1 0.2 0.3 rg 1 0 0 1 0 0 Tm (x) ' 1 2 (y) \" EMC",
            b"BT /F1 1 Tf (nested (paren) ok) Tj ET d0 d1",
        ];
        for s in streams {
            let ours = ops(s);
            let theirs: Vec<String> = lopdf::content::Content::decode(s)
                .unwrap()
                .operations
                .iter()
                .map(|o| format!("{o:?}"))
                .collect();
            assert_eq!(ours, theirs, "{}", String::from_utf8_lossy(s));
        }
    }

    #[test]
    fn a_bad_token_is_skipped_and_the_rest_is_read() {
        // A stray `)`, an operator lopdf cannot spell, a lone `>`: every Tj after them is read.
        let s = b"BT (one) Tj ) (two) Tj foo.bar (three) Tj > (four) Tj } (five) Tj ET";
        let shown: Vec<Vec<u8>> = operations(s)
            .filter(|o| o.operator == "Tj")
            .map(|o| match o.operands.last() {
                Some(Object::String(s, _)) => s.clone(),
                _ => Vec::new(),
            })
            .collect();
        assert_eq!(shown, [&b"one"[..], b"two", b"three", b"four", b"five"]);
        // The bad token is an operand of no type in the operation it lands in.
        let tj: Vec<_> = operations(b") (x) Tj").collect();
        assert_eq!(tj[0].operands, [Object::Null, Object::string_literal("x")]);
    }

    #[test]
    fn numbers_read_as_poppler_reads_them() {
        let n = |s: &[u8]| number(s).0;
        assert_eq!(number(b"1.2.3 Tc"), (Object::Real(1.2), 3));
        assert_eq!(number(b"5Tc"), (Object::Integer(5), 1));
        assert_eq!(number(b"-"), (Object::Integer(0), 1));
        assert_eq!(number(b"12 0"), (Object::Integer(12), 2));
        let ops: Vec<_> = operations(b"1.2.3 Tc").collect();
        assert_eq!(ops[0].operands, [Object::Real(1.2), Object::Real(0.3)]);
        assert_eq!(n(b"12"), Object::Integer(12));
        assert_eq!(n(b"-12"), Object::Integer(-12));
        assert_eq!(n(b"+7"), Object::Integer(7));
        assert_eq!(n(b"--5"), Object::Integer(-5));
        assert_eq!(n(b"-.5"), Object::Real(-0.5));
        assert_eq!(n(b"1.2.3"), Object::Real(1.2));
        assert_eq!(n(b"4.-5"), Object::Real(4.5));
        assert_eq!(n(b"-"), Object::Integer(0));
        assert_eq!(n(b"99999999999999999999999"), Object::Integer(i64::MAX));
    }

    #[test]
    fn strings_names_and_hex_are_decoded() {
        let first = |s: &[u8]| operations(s).next().unwrap().operands.remove(0);
        assert_eq!(
            first(b"(a\\\nb\\)\\0053) Tj"),
            Object::string_literal(b"ab)\x053".to_vec())
        );
        assert_eq!(
            first(b"<4 1z4>Tj"),
            Object::String(vec![0x41, 0x40], StringFormat::Hexadecimal)
        );
        assert_eq!(first(b"/A#20B#zz Tf"), Object::Name(b"A B#zz".to_vec()));
        // An unclosed string runs to the end: nothing is left for an operator.
        assert_eq!(operations(b"(open Tj").count(), 0);
    }

    #[test]
    fn inline_images_are_skipped_by_size_or_up_to_ei() {
        // Unfiltered data that holds ` EI ` and brackets: skipped by its size (4×1 RGB = 12 bytes).
        let s = b"BI /W 4 /H 1 /BPC 8 /CS /RGB ID \x00 EI ([\x01\x02\x03\x04\x05\nEI (after) Tj";
        let o: Vec<_> = operations(s).collect();
        assert_eq!(o.len(), 2, "{o:?}");
        assert_eq!(o[0].operator, "BI");
        assert_eq!(o[1].operands, [Object::string_literal("after")]);
        // Filtered: up to the first EI between white space.
        let s = b"BI /W 9 /H 9 /F /AHx ID 0a0b0c> EI Q";
        let o: Vec<_> = operations(s).map(|o| o.operator).collect();
        assert_eq!(o, ["BI", "Q"]);
        // No EI at all: the rest is the image.
        assert_eq!(operations(b"BI /W 1 ID abc (x) Tj").count(), 1);
    }

    #[test]
    fn hostile_nesting_and_operand_counts_are_bounded() {
        let mut s = vec![b'['; 100_000];
        s.extend_from_slice(b"(x) ");
        s.extend(vec![b']'; 100_000]);
        s.extend_from_slice(b" TJ (y) Tj");
        let o: Vec<_> = operations(&s).collect();
        assert_eq!(o.len(), 2);
        assert_eq!(o[1].operands, [Object::string_literal("y")]);
        let many = b"1 ".repeat(10_000);
        let o: Vec<_> = operations(&[&many[..], b"cm"].concat()).collect();
        assert_eq!(o[0].operands.len(), MAX_OPERANDS);
        // Unbalanced closers in a deep structure still end at the input's end.
        assert_eq!(operations(&vec![b'<'; 50_000]).count(), 0);
    }
}
