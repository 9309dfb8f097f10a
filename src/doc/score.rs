//! Extraction quality metric of the article-extraction benchmark (scrapinghub), re-implemented.
//!
//! A text is tokenised into `\w+` runs (Unicode letters, numbers, underscore — Python's `\w`),
//! each document becomes a multiset of 4-token shingles, and the multiset overlap between the
//! truth and the prediction gives per-document true/false positives and false negatives,
//! normalised so that long documents weigh no more than short ones. Precision is averaged over
//! documents that have a prediction, recall over documents that have a truth, and F1 is taken
//! of the two averages — exactly as the benchmark's `evaluate.py` does, so figures printed by
//! our bench are comparable with the published table.

use std::collections::HashMap;
use std::sync::OnceLock;

/// Shingle length used by the benchmark.
pub const NGRAM: usize = 4;

/// Per-document overlap, normalised so that `tp + fp + fn_ == 1` (or all zero when both texts
/// have no tokens).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Overlap {
    pub tp: f64,
    pub fp: f64,
    pub fn_: f64,
}

impl Overlap {
    /// Precision of one document; the benchmark's edge cases: a perfect match is 1 even when
    /// empty, nothing predicted and nothing right is 0.
    pub fn precision(&self) -> f64 {
        if self.fp == 0.0 && self.fn_ == 0.0 {
            1.0
        } else if self.tp == 0.0 && self.fp == 0.0 {
            0.0
        } else {
            self.tp / (self.tp + self.fp)
        }
    }

    /// Recall of one document, with the same edge cases as [`Overlap::precision`].
    pub fn recall(&self) -> f64 {
        if self.fp == 0.0 && self.fn_ == 0.0 {
            1.0
        } else if self.tp == 0.0 && self.fn_ == 0.0 {
            0.0
        } else {
            self.tp / (self.tp + self.fn_)
        }
    }

    /// F1 of this one document (for ranking the worst pages; not part of the benchmark).
    pub fn f1(&self) -> f64 {
        f1_of(self.precision(), self.recall())
    }
}

/// Averages over a corpus.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    pub f1: f64,
    pub precision: f64,
    pub recall: f64,
    /// Documents with a prediction (the precision average's denominator).
    pub predicted: usize,
    /// Documents with a truth (the recall average's denominator).
    pub truthful: usize,
}

fn token_re() -> &'static regex::Regex {
    static RE: OnceLock<regex::Regex> = OnceLock::new();
    // Python's `\w` on str is "isalnum() or underscore": letters (L*) and numbers (N*). Rust's
    // `\w` would also take combining marks and split differently on Indic scripts.
    RE.get_or_init(|| regex::Regex::new(r"[\p{L}\p{N}_]+").expect("static regex"))
}

/// The benchmark's tokens: maximal runs of word characters.
pub fn tokenize(text: &str) -> Vec<&str> {
    token_re().find_iter(text).map(|m| m.as_str()).collect()
}

/// How many tokens [`tokenize`] finds in `text`, without the regex: the word count of every
/// extraction, where the regex search cost as much as a twentieth of the markdown pass.
pub fn count_tokens(text: &str) -> usize {
    let mut count = 0;
    let mut in_token = false;
    for c in text.chars() {
        let token_char = token_char(c);
        count += usize::from(token_char && !in_token);
        in_token = token_char;
    }
    count
}

/// `[\p{L}\p{N}_]`: a letter, a number or the underscore.
fn token_char(c: char) -> bool {
    use icu_properties::{props::GeneralCategory, props::GeneralCategoryGroup, CodePointMapData};
    if c.is_ascii() {
        return c.is_ascii_alphanumeric() || c == '_';
    }
    let gc = CodePointMapData::<GeneralCategory>::new().get(c);
    GeneralCategoryGroup::Letter.contains(gc) || GeneralCategoryGroup::Number.contains(gc)
}

/// How a text is cut into tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tokens {
    /// The benchmark's `\w+` runs (identical to `evaluate.py`).
    Words,
    /// As `Words`, except that each character of a script written without spaces between words
    /// (Han, kana, Thai, Lao, Khmer, Myanmar) is a token of its own: with `Words` a Chinese or
    /// Thai sentence is one token, and shingles of sentences say little. For multilingual sets.
    Scripts,
}

fn script_token_re() -> &'static regex::Regex {
    static RE: OnceLock<regex::Regex> = OnceLock::new();
    RE.get_or_init(|| {
        let unspaced = r"\p{Han}\p{Hiragana}\p{Katakana}\p{Thai}\p{Lao}\p{Khmer}\p{Myanmar}";
        regex::Regex::new(&format!(r"[{unspaced}]|[[\p{{L}}\p{{N}}_]--[{unspaced}]]+"))
            .expect("static regex")
    })
}

/// Tokens of `text` under `how`.
pub fn tokenize_with(text: &str, how: Tokens) -> Vec<&str> {
    match how {
        Tokens::Words => tokenize(text),
        Tokens::Scripts => script_token_re()
            .find_iter(text)
            .map(|m| m.as_str())
            .collect(),
    }
}

/// Multiset of shingles. A text shorter than [`NGRAM`] tokens is one shorter shingle; an empty
/// text has none.
fn shingles(text: &str, how: Tokens) -> HashMap<Vec<&str>, usize> {
    let tokens = tokenize_with(text, how);
    let mut out: HashMap<Vec<&str>, usize> = HashMap::new();
    if tokens.is_empty() {
        return out;
    }
    let windows = tokens.len().saturating_sub(NGRAM - 1).max(1);
    for i in 0..windows {
        let end = (i + NGRAM).min(tokens.len());
        *out.entry(tokens[i..end].to_vec()).or_insert(0) += 1;
    }
    out
}

/// Overlap between one document's truth and prediction (the benchmark's tokens).
pub fn shingle_overlap(truth: &str, prediction: &str) -> Overlap {
    shingle_overlap_with(truth, prediction, Tokens::Words)
}

/// [`shingle_overlap`] with the given tokens.
pub fn shingle_overlap_with(truth: &str, prediction: &str, how: Tokens) -> Overlap {
    let t = shingles(truth, how);
    let p = shingles(prediction, how);
    let (mut tp, mut fp, mut fn_) = (0usize, 0usize, 0usize);
    for (k, &tc) in &t {
        let pc = p.get(k).copied().unwrap_or(0);
        tp += tc.min(pc);
        fn_ += tc.saturating_sub(pc);
    }
    for (k, &pc) in &p {
        let tc = t.get(k).copied().unwrap_or(0);
        fp += pc.saturating_sub(tc);
    }
    let sum = (tp + fp + fn_) as f64;
    if sum == 0.0 {
        return Overlap::default();
    }
    Overlap {
        tp: tp as f64 / sum,
        fp: fp as f64 / sum,
        fn_: fn_ as f64 / sum,
    }
}

/// Corpus figures from per-document overlaps. Empty averages count as 0.
pub fn summarize(docs: &[Overlap]) -> Summary {
    let mean = |xs: Vec<f64>| -> (f64, usize) {
        let n = xs.len();
        if n == 0 {
            (0.0, 0)
        } else {
            (xs.iter().sum::<f64>() / n as f64, n)
        }
    };
    let (precision, predicted) = mean(
        docs.iter()
            .filter(|d| d.tp + d.fp > 0.0)
            .map(Overlap::precision)
            .collect(),
    );
    let (recall, truthful) = mean(
        docs.iter()
            .filter(|d| d.tp + d.fn_ > 0.0)
            .map(Overlap::recall)
            .collect(),
    );
    Summary {
        f1: f1_of(precision, recall),
        precision,
        recall,
        predicted,
        truthful,
    }
}

/// Passage counts of one page, scored trafilatura's way: each "with" passage (main text) found
/// in the output is a true positive, each one missing a false negative; each "without" passage
/// (boilerplate) found is a false positive, each one absent a true negative.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Passages {
    pub tp: usize,
    pub fn_: usize,
    pub fp: usize,
    pub tn: usize,
}

impl Passages {
    /// Adds another page's counts (the set's figures are taken over all passages at once).
    pub fn add(&mut self, o: Passages) {
        self.tp += o.tp;
        self.fn_ += o.fn_;
        self.fp += o.fp;
        self.tn += o.tn;
    }
    pub fn precision(&self) -> f64 {
        ratio(self.tp, self.tp + self.fp)
    }
    pub fn recall(&self) -> f64 {
        ratio(self.tp, self.tp + self.fn_)
    }
    pub fn f1(&self) -> f64 {
        f1_of(self.precision(), self.recall())
    }
}

/// The harmonic mean of precision and recall; 0 when both are.
fn f1_of(precision: f64, recall: f64) -> f64 {
    if precision + recall == 0.0 {
        0.0
    } else {
        2.0 * precision * recall / (precision + recall)
    }
}

fn ratio(a: usize, b: usize) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// Text as passages are matched: canonical composition (pages mix precomposed and combining
/// accents), every run of whitespace one space, trimmed.
pub fn passage_text(s: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    let nfc: String = s.nfc().collect();
    nfc.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Scores one output (plain text) against a page's passages.
pub fn score_passages<S: AsRef<str>>(output: &str, with: &[S], without: &[S]) -> Passages {
    let text = passage_text(output);
    // An empty passage (or one of whitespace only) would be "in" every output: it never
    // matches, so an empty "with" counts as missing and an empty "without" as absent.
    let found = |p: &S| {
        let p = passage_text(p.as_ref());
        !p.is_empty() && text.contains(&p)
    };
    let hits = with.iter().filter(|p| found(p)).count();
    let leaks = without.iter().filter(|p| found(p)).count();
    Passages {
        tp: hits,
        fn_: with.len() - hits,
        fp: leaks,
        tn: without.len() - leaks,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The two tables may be of different Unicode versions (icu_properties 2.4 knows Unicode
    /// 17's new letters, regex-syntax 0.8 stops at 16): they may differ only on code points the
    /// regex's tables leave unassigned.
    #[test]
    fn token_chars_are_the_regex_class_for_every_code_point() {
        let class = regex::Regex::new(r"^[\p{L}\p{N}_]$").unwrap();
        let unassigned = regex::Regex::new(r"^\p{Cn}$").unwrap();
        let differ: Vec<char> = (0..=0x10FFFFu32)
            .filter_map(char::from_u32)
            .filter(|&c| {
                let mut buf = [0u8; 4];
                let s = c.encode_utf8(&mut buf);
                token_char(c) != class.is_match(s) && !unassigned.is_match(s)
            })
            .collect();
        assert!(
            differ.is_empty(),
            "{} differ: {:?}",
            differ.len(),
            &differ[..differ.len().min(20)]
        );
    }

    #[test]
    fn token_count_is_the_tokenizers() {
        for text in [
            "",
            "  ",
            "one two_three, four-5 ٣٤ ½",
            "Ünïcödé wörds — and 中文字符 and देवनागरी लिपि and Ελληνικά",
            "trailing word",
            "x",
        ] {
            assert_eq!(count_tokens(text), tokenize(text).len(), "{text:?}");
        }
    }

    #[test]
    fn an_empty_passage_never_matches() {
        let p = score_passages("Some text.", &["", " \n "], &["", "\t"]);
        assert_eq!(
            p,
            Passages {
                tp: 0,
                fn_: 2,
                fp: 0,
                tn: 2
            }
        );
    }

    #[test]
    fn passages_match_after_composition_and_whitespace() {
        let out = "Le  d\u{e9}but\ndu texte.\n\nMenu principal";
        // The passage has a combining accent and a line break where the output has a space.
        let with = ["Le de\u{301}but du texte.", "absent du texte"];
        let without = ["Menu principal", "Mentions légales"];
        let p = score_passages(out, &with, &without);
        assert_eq!(
            p,
            Passages {
                tp: 1,
                fn_: 1,
                fp: 1,
                tn: 1
            }
        );
        assert_eq!((p.precision(), p.recall(), p.f1()), (0.5, 0.5, 0.5));
        let mut all = Passages::default();
        all.add(p);
        all.add(score_passages("", &with, &without));
        assert_eq!(
            all,
            Passages {
                tp: 1,
                fn_: 3,
                fp: 1,
                tn: 3
            }
        );
        assert_eq!(Passages::default().f1(), 0.0);
    }

    #[test]
    fn tokens_are_unicode_word_runs() {
        assert_eq!(
            tokenize("Hello, wörld! 42_x — naïve… 東京"),
            vec!["Hello", "wörld", "42_x", "naïve", "東京"]
        );
        assert!(tokenize(" ,.;-— ").is_empty());
    }

    #[test]
    fn unspaced_scripts_are_cut_per_character() {
        assert_eq!(
            tokenize_with("Tokyo 東京都, ภาษาไทย und café_2", Tokens::Scripts),
            vec![
                "Tokyo", "東", "京", "都", "ภ", "า", "ษ", "า", "ไ", "ท", "ย", "und", "café_2"
            ]
        );
        assert_eq!(
            tokenize_with("ab東京", Tokens::Scripts),
            vec!["ab", "東", "京"]
        );
        // Half of a Chinese sentence is half recalled, not nothing.
        let o = shingle_overlap_with("一二三四五六七八九十", "一二三四五六", Tokens::Scripts);
        assert!(o.recall() > 0.3 && o.precision() == 1.0, "{o:?}");
        assert_eq!(
            shingle_overlap("一二三四五六七八九十", "一二三四五六").recall(),
            0.0
        );
    }

    #[test]
    fn identical_texts_are_perfect() {
        let o = shingle_overlap("one two three four five", "one two three four five");
        assert_eq!(o.tp, 1.0);
        assert_eq!((o.precision(), o.recall(), o.f1()), (1.0, 1.0, 1.0));
    }

    #[test]
    fn partial_prediction_counts_multiset_overlap() {
        // truth shingles: [a b c d], [b c d e]; prediction: [a b c d] twice plus [b c d a],
        // [c d a b], [d a b c] → tp 1, fp 4, fn 1, normalised by 6.
        let o = shingle_overlap("a b c d e", "a b c d a b c d");
        assert!((o.tp - 1.0 / 6.0).abs() < 1e-12, "{o:?}");
        assert!((o.fp - 4.0 / 6.0).abs() < 1e-12, "{o:?}");
        assert!((o.fn_ - 1.0 / 6.0).abs() < 1e-12, "{o:?}");
        assert!((o.precision() - 0.2).abs() < 1e-12);
        assert!((o.recall() - 0.5).abs() < 1e-12);
    }

    #[test]
    fn short_texts_form_one_shingle() {
        assert_eq!(shingle_overlap("two words", "two words").tp, 1.0);
        let o = shingle_overlap("two words", "two other");
        assert_eq!((o.tp, o.precision(), o.recall()), (0.0, 0.0, 0.0));
    }

    #[test]
    fn empty_prediction_is_excluded_from_precision_only() {
        let docs = [
            shingle_overlap("a b c d", ""),
            shingle_overlap("a b c d", "a b c d"),
        ];
        assert_eq!(docs[0].fn_, 1.0);
        let s = summarize(&docs);
        assert_eq!((s.predicted, s.truthful), (1, 2));
        assert_eq!(s.precision, 1.0);
        assert_eq!(s.recall, 0.5);
        assert!((s.f1 - 2.0 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn both_empty_is_excluded_everywhere() {
        let s = summarize(&[shingle_overlap("", "...")]);
        assert_eq!((s.predicted, s.truthful, s.f1), (0, 0, 0.0));
    }
}
