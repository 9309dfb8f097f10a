//! The PDF bench's page-by-page scoring (`benches/support/pdf_pages.rs`), tested here because
//! the bench runs without the test harness.

#[path = "../../benches/support/pdf_pages.rs"]
mod pdf_pages;

use pdf_pages::{joined_pages, pdftotext_pages, recall_precision, score_pages};

/// The bench's scoring on whitespace-separated words.
fn overlap(reference: &str, got: &str) -> (f64, f64) {
    let words = |s: &str| s.split_whitespace().map(str::to_string).collect::<Vec<_>>();
    recall_precision(&words(reference), &words(got))
}

fn blank(p: &str) -> bool {
    p.split_whitespace().next().is_none()
}

#[test]
fn pdftotext_pages_end_with_a_form_feed_ours_are_joined_by_one() {
    assert_eq!(
        pdftotext_pages("one\n\x0ctwo\n\x0c"),
        vec!["one\n", "two\n"]
    );
    assert_eq!(pdftotext_pages("only"), vec!["only"]);
    // A blank last page of pdftotext's is still a page when it is not the final terminator.
    assert_eq!(pdftotext_pages("a\x0c\x0c").len(), 2);
    assert_eq!(joined_pages("one\n\x0ctwo"), vec!["one\n", "two"]);
    // Ours: a blank last page is a page.
    assert_eq!(joined_pages("a\x0c"), vec!["a", ""]);
}

#[test]
fn a_word_read_on_the_wrong_page_is_a_loss_per_page_not_per_document() {
    // As one bag the two texts are equal; page by page, page 1 lost "beta" and page 2 has it
    // extra.
    let reference = "alpha beta\n\x0cgamma\n\x0c";
    let got = "alpha\n\x0cbeta gamma";
    let s = score_pages(reference, got, overlap, blank);
    assert_eq!(s.pages, vec![(0.5, 1.0), (1.0, 0.5)]);
    assert!(!s.count_differs);
    assert_eq!(s.mean(), Some((0.75, 0.75)));
}

#[test]
fn pages_blank_in_both_are_not_scored_and_missing_pages_count_as_blank() {
    let reference = "alpha\n\x0c\n\x0cgamma\n\x0c";
    let got = "alpha\n\x0c\n";
    let s = score_pages(reference, got, overlap, blank);
    // Page 2 is blank in both; page 3 is missing from ours: recall 1 of nothing is 0.
    assert_eq!(s.pages, vec![(1.0, 1.0), (0.0, 0.0)]);
    assert!(s.count_differs);
    assert_eq!(score_pages("\x0c", "", overlap, blank).mean(), None);
}

#[test]
fn words_are_counted_as_multisets() {
    // One of the two "a" found and nothing else: recall 1/3; "c" is extra: precision 1/2.
    assert_eq!(overlap("a a b", "a c"), (1.0 / 3.0, 0.5));
    assert_eq!(overlap("", "x"), (1.0, 0.0));
    assert_eq!(overlap("x", ""), (0.0, 0.0));
}
