//! A text pattern whose word boundaries stay on regex's fast engine for text without
//! non-ASCII letters, built with only the engines `is_match` needs.
//!
//! regex's lazy DFA cannot decide a Unicode `\b` next to a non-ASCII byte, so on any text with
//! a curly quote, a dash or a no-break space a pattern with `\b` falls back to the PikeVM: over
//! the 181 scrapinghub pages, 2,224 such calls cost 5 % of the whole conversion (callgrind,
//! docs/doc.md). A Unicode and an ASCII word boundary decide alike wherever no non-ASCII word
//! character is next to the position. So a haystack without a non-ASCII word character is
//! matched by the same pattern with ASCII boundaries (`(?-u:\b)`), which the DFA runs to the
//! end, and any other haystack by the pattern as written: the same answers, by construction.
//!
//! Building: `regex::Regex` builds, for every pattern, a forward NFA with capture states, a
//! reverse NFA (to find where a match starts), backtracking engines and literal strategies
//! (and a one-pass engine for patterns with capture groups or a Unicode `\b`) — 7 % of a batch conversion's instructions, before the first page, for about 50
//! patterns whose only question is whether they match. [`Engine`] builds the forward NFA
//! without captures, the lazy DFA over it with the same prefix prefilter regex would use, and
//! the PikeVM and bounded backtracker the DFA falls back on where it gives up: regex-automata's
//! own engines, so the answers are regex's.

use regex_automata::nfa::thompson::{self, backtrack, pikevm, WhichCaptures};
use regex_automata::util::{pool::Pool, prefilter::Prefilter};
use regex_automata::{hybrid, Anchored, Input, MatchKind};

/// A compiled pattern; `is_match` is the one question the extraction rules ask.
#[derive(Debug)]
pub struct TextRegex {
    unicode: Engine,
    /// The pattern with every `\b` made ASCII; `None` when it has none.
    ascii: Option<Engine>,
}

impl TextRegex {
    /// Compiles `pattern` (regex's syntax). The ASCII copy is made by rewriting each `\b`, so a
    /// pattern with an escaped backslash or a `\b{…}` assertion, where that rewrite could change
    /// the meaning, keeps only its Unicode form (correct, just not faster).
    pub fn new(pattern: &str) -> Result<TextRegex, Box<dyn std::error::Error + Send + Sync>> {
        let unicode = Engine::new(pattern)?;
        let rewritable = !pattern.contains(r"\\") && !pattern.contains(r"\b{");
        let ascii = if rewritable && pattern.contains(r"\b") {
            Some(Engine::new(&pattern.replace(r"\b", r"(?-u:\b)"))?)
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

/// Per-thread search state of an [`Engine`].
#[derive(Debug)]
struct Caches {
    dfa: hybrid::dfa::Cache,
    pikevm: pikevm::Cache,
    backtrack: backtrack::Cache,
}

type MakeCaches = Box<dyn Fn() -> Caches + Send + Sync>;

/// The engines of one pattern, configured as `regex::Regex` configures them (leftmost-first,
/// the lazy DFA's cache and give-up thresholds), minus what only match positions need.
struct Engine {
    dfa: hybrid::dfa::DFA,
    pikevm: pikevm::PikeVM,
    backtrack: backtrack::BoundedBacktracker,
    /// The pattern starts with `^`: searched anchored, as regex does, not at every position.
    anchored: bool,
    caches: Pool<Caches, MakeCaches>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("anchored", &self.anchored)
            .finish_non_exhaustive()
    }
}

impl Engine {
    fn new(pattern: &str) -> Result<Engine, Box<dyn std::error::Error + Send + Sync>> {
        let hir = regex_syntax::ParserBuilder::new().build().parse(pattern)?;
        let anchored = hir
            .properties()
            .look_set_prefix()
            .contains(regex_syntax::hir::Look::Start);
        // regex's own NFA size limit: a pattern edit that blows up fails at startup, as it did
        // with `regex::Regex`, instead of building a huge automaton.
        let nfa = thompson::Compiler::new()
            .configure(
                thompson::Config::new()
                    .which_captures(WhichCaptures::None)
                    .nfa_size_limit(Some(10 << 20)),
            )
            .build_from_hir(&hir)?;
        // An anchored search tries one position: nothing for a prefilter to skip.
        let prefilter = if anchored {
            None
        } else {
            Prefilter::from_hir_prefix(MatchKind::LeftmostFirst, &hir)
        };
        let dfa = hybrid::dfa::Builder::new()
            .configure(
                hybrid::dfa::Config::new()
                    .match_kind(MatchKind::LeftmostFirst)
                    .prefilter(prefilter.clone())
                    .specialize_start_states(prefilter.is_some())
                    .unicode_word_boundary(true)
                    .minimum_cache_clear_count(Some(3))
                    .minimum_bytes_per_state(Some(10)),
            )
            .build_from_nfa(nfa.clone())?;
        let pikevm = pikevm::Builder::new()
            .configure(pikevm::Config::new().prefilter(prefilter.clone()))
            .build_from_nfa(nfa.clone())?;
        let backtrack = backtrack::Builder::new()
            .configure(backtrack::Config::new().prefilter(prefilter))
            .build_from_nfa(nfa)?;
        let (d, p, b) = (dfa.clone(), pikevm.clone(), backtrack.clone());
        let make: MakeCaches = Box::new(move || Caches {
            dfa: d.create_cache(),
            pikevm: p.create_cache(),
            backtrack: b.create_cache(),
        });
        Ok(Engine {
            dfa,
            pikevm,
            backtrack,
            anchored,
            caches: Pool::new(make),
        })
    }

    fn pikevm_is_match(&self, cache: &mut pikevm::Cache, input: &Input<'_>) -> bool {
        self.pikevm.search_slots(cache, input, &mut []).is_some()
    }

    fn is_match(&self, haystack: &str) -> bool {
        let anchored = if self.anchored {
            Anchored::Yes
        } else {
            Anchored::No
        };
        let input = Input::new(haystack).anchored(anchored).earliest(true);
        let mut caches = self.caches.get();
        let caches = &mut *caches;
        match self.dfa.try_search_fwd(&mut caches.dfa, &input) {
            Ok(found) => found.is_some(),
            // The lazy DFA gave up (a Unicode `\b` beside a non-ASCII byte, or its cache
            // thrashed): the backtracker or the PikeVM, as regex falls back.
            // The backtracker does not stop at the first match, so regex keeps it to short
            // texts when any match will do.
            Err(_) if haystack.len() <= 128 => self
                .backtrack
                .try_search_slots(&mut caches.backtrack, &input, &mut [])
                .map_or_else(
                    |_| self.pikevm_is_match(&mut caches.pikevm, &input),
                    |found| found.is_some(),
                ),
            Err(_) => self.pikevm_is_match(&mut caches.pikevm, &input),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use regex::Regex;

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

    /// Every path of `is_match` against `regex::Regex`: the lazy DFA, its give-up on a Unicode
    /// `\b` beside a non-ASCII byte in short texts (backtracker) and long ones (PikeVM), anchored
    /// patterns, and an empty match that would split a character.
    #[test]
    fn every_engine_path_answers_as_regex() {
        let long_tail = "ü".repeat(200);
        let long_head = format!("{} Foto: dpa", "é".repeat(150));
        let patterns = [
            r"(?i)\bcookies?\b",
            r"^\W*(?i:by|von|par)\s+\p{Lu}\w*\b",
            r"(?i)^(foto|photo|bild)\s*:\s*\S.{0,60}$",
            r"\b\p{L}{2,20}/(AFP|dpa|Reuters)\b",
            r"(?-u:\B)",
            r"(?i)\b(dpa|afp)\b$",
            r"^$",
        ];
        let hays = [
            String::new(),
            "aéa".to_string(),
            "Foto: dpa".to_string(),
            "by Jane Doe".to_string(),
            "Von Äpfeln und Birnen".to_string(),
            format!("{long_tail} cookies"),
            format!("cookies{long_tail}"),
            format!("ücookies {long_tail}"),
            long_head.clone(),
            format!("{long_head} Müller/AFP"),
            format!("Jörg/AFP {long_tail}"),
            "x".repeat(300) + " AFP",
            "é".repeat(300),
        ];
        for p in patterns {
            let t = TextRegex::new(p).unwrap();
            let u = Regex::new(p).unwrap();
            for hay in &hays {
                assert_eq!(t.is_match(hay), u.is_match(hay), "{p:?} on {hay:?}");
            }
        }
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
