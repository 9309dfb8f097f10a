//! The PDF bench's scoring: word recall and precision, page by page (issue 15 words its goal
//! per page; the bench first scored each document as one bag of words, so a word read on
//! another page still counted). Pure: the bench (`benches/pdf.rs`) cuts the words; `tests/it/pdf_bench_pages.rs`
//! tests this file.

use std::collections::HashMap;

/// Word recall and precision of `got` against `reference`, as multisets: recall 1 of an empty
/// reference, precision 0 of an empty reading.
pub fn recall_precision(reference: &[String], got: &[String]) -> (f64, f64) {
    let mut counts: HashMap<&str, i64> = HashMap::new();
    for w in reference {
        *counts.entry(w).or_default() += 1;
    }
    let mut hit = 0i64;
    for w in got {
        if let Some(c) = counts.get_mut(w.as_str()) {
            if *c > 0 {
                *c -= 1;
                hit += 1;
            }
        }
    }
    let r = if reference.is_empty() {
        1.0
    } else {
        hit as f64 / reference.len() as f64
    };
    let p = if got.is_empty() {
        0.0
    } else {
        hit as f64 / got.len() as f64
    };
    (r, p)
}

/// pdftotext's pages: it ends every page with a form feed, so one final form feed is dropped
/// and the rest cut at form feeds (`"a\x0c\x0c"` is two pages, the second blank).
pub fn pdftotext_pages(text: &str) -> Vec<&str> {
    text.strip_suffix('\x0c')
        .unwrap_or(text)
        .split('\x0c')
        .collect()
}

/// Our pages: joined by a form feed, so cut at each (`"a\x0c"` is two pages, the second
/// blank).
pub fn joined_pages(text: &str) -> Vec<&str> {
    text.split('\x0c').collect()
}

/// Per-page figures of one document.
#[derive(Debug, Clone, PartialEq)]
pub struct PageScores {
    /// (recall, precision) of each page scored, in page order.
    pub pages: Vec<(f64, f64)>,
    /// The two readers gave a different number of pages (every reference page is scored, a
    /// page missing from ours as blank; pages of ours beyond the reference's are not scored).
    pub count_differs: bool,
}

impl PageScores {
    /// Mean recall and precision over the pages scored (None: no page has text).
    pub fn mean(&self) -> Option<(f64, f64)> {
        if self.pages.is_empty() {
            return None;
        }
        let n = self.pages.len() as f64;
        let (r, p) = self
            .pages
            .iter()
            .fold((0.0, 0.0), |(r, p), &(pr, pp)| (r + pr, p + pp));
        Some((r / n, p / n))
    }
}

/// Scores `got` (ours) against `reference` (pdftotext's) page by page with `score(reference_page, got_page)`,
/// which gives (recall, precision). `is_blank(page)`: the page has no word to score. Pages
/// blank in both texts (an image, an empty back page) are not scored; a page blank in only
/// one of them is (recall or precision 0 from `score`). A page missing from `got` counts as
/// blank there.
pub fn score_pages(
    reference: &str,
    got: &str,
    score: impl Fn(&str, &str) -> (f64, f64),
    is_blank: impl Fn(&str) -> bool,
) -> PageScores {
    let (rp, gp) = (pdftotext_pages(reference), joined_pages(got));
    let mut out = Vec::with_capacity(rp.len());
    for (i, r) in rp.iter().enumerate() {
        let g = gp.get(i).copied().unwrap_or("");
        if is_blank(r) && is_blank(g) {
            continue;
        }
        out.push(score(r, g));
    }
    PageScores {
        pages: out,
        count_differs: rp.len() != gp.len(),
    }
}
