//! A text pattern whose word boundaries stay on regex's fast engine for text without
//! non-ASCII letters.
//!
//! regex's lazy DFA cannot decide a Unicode `\b` next to a non-ASCII byte, so on any text with
//! a curly quote, a dash or a no-break space a pattern with `\b` falls back to the PikeVM: over
//! the 181 scrapinghub pages, 2,224 such calls cost 5 % of the whole conversion (callgrind,
//! docs/doc.md). A Unicode and an ASCII word boundary decide alike wherever no non-ASCII word
//! character is next to the position. So a haystack without a non-ASCII word character is
//! matched by the same pattern with ASCII boundaries (`(?-u:\b)`), which the DFA runs to the
//! end, and any other haystack by the pattern as written: the same answers, by construction.

use regex::Regex;

/// A compiled pattern; `is_match` is the one question the extraction rules ask.
#[derive(Debug)]
pub struct TextRegex {
    unicode: Regex,
    /// The pattern with every `\b` made ASCII; `None` when it has none.
    ascii: Option<Regex>,
}

impl TextRegex {
    /// Compiles `pattern`. The ASCII copy is made by rewriting each `\b`, so a pattern with an
    /// escaped backslash or a `\b{…}` assertion, where that rewrite could change the meaning,
    /// keeps only its Unicode form (correct, just not faster).
    pub fn new(pattern: &str) -> Result<TextRegex, regex::Error> {
        let unicode = Regex::new(pattern)?;
        let rewritable = !pattern.contains(r"\\") && !pattern.contains(r"\b{");
        let ascii = if rewritable && pattern.contains(r"\b") {
            Some(Regex::new(&pattern.replace(r"\b", r"(?-u:\b)"))?)
        } else {
            None
        };
        Ok(TextRegex { unicode, ascii })
    }

    pub fn is_match(&self, haystack: &str) -> bool {
        match &self.ascii {
            Some(ascii) if !has_non_ascii_word_char(haystack) => ascii.is_match(haystack),
            _ => self.unicode.is_match(haystack),
        }
    }
}

/// Whether `s` holds a character that is a word character (`\w`) for a Unicode `\b` but not
/// for an ASCII one.
fn has_non_ascii_word_char(s: &str) -> bool {
    !s.is_ascii()
        && s.chars()
            .any(|c| !c.is_ascii() && regex_syntax::is_word_character(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_as_the_unicode_pattern() {
        let p = r"(?i)\bcookies?\b|^\W*(by|von)\s+\p{Lu}\w*\b";
        let t = TextRegex::new(p).unwrap();
        let u = Regex::new(p).unwrap();
        for hay in [
            "We use cookies.",
            "“Cookies’ policy” — read it",
            "écookies",
            "cookiesé",
            "naïve cookies here",
            "scookies",
            "By Jane",
            "Von Ärzten",
            "von Ärzte\u{301}n",
            "by jane",
            "",
            "\u{a0}cookie\u{a0}",
            "クッキー cookie",
        ] {
            assert_eq!(t.is_match(hay), u.is_match(hay), "{hay:?}");
        }
        // The two paths really differ where a non-ASCII letter touches the boundary.
        let ascii = Regex::new(&p.replace(r"\b", r"(?-u:\b)")).unwrap();
        assert!(ascii.is_match("écookies") && !t.is_match("écookies"));
    }

    #[test]
    fn a_pattern_the_rewrite_could_misread_keeps_its_unicode_form() {
        assert!(TextRegex::new(r"\\b|\bx").unwrap().ascii.is_none());
        assert!(TextRegex::new(r"\b{start}x").unwrap().ascii.is_none());
    }

    #[test]
    fn a_pattern_without_boundaries_is_kept_as_is() {
        let t = TextRegex::new("(?i)anzeige").unwrap();
        assert!(t.ascii.is_none());
        assert!(t.is_match("ANZEIGE") && !t.is_match("anz"));
    }
}
