//! /api/pdf's reader on its own: text quality on the generated corpus (known text), metadata,
//! caps, the parse budget inside the work, the refusal codes, and hostile or mangled files
//! (never a panic: `extract` itself is called, not the catch_unwind wrapper).

use crate::support;

use paycall::pdf::{extract, Options, PdfError, Truncation};
use std::collections::HashMap;
use std::time::Duration;
use support::pdf::*;

fn words(s: &str) -> Vec<String> {
    s.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| w.to_lowercase())
        .collect()
}

fn recall(reference: &[String], got: &[String]) -> f64 {
    let mut counts: HashMap<&str, i64> = HashMap::new();
    for w in reference {
        *counts.entry(w).or_default() += 1;
    }
    let mut hit = 0;
    for w in got {
        if let Some(c) = counts.get_mut(w.as_str()) {
            if *c > 0 {
                *c -= 1;
                hit += 1;
            }
        }
    }
    hit as f64 / reference.len().max(1) as f64
}

/// Longest common subsequence of the word sequences / reference length.
fn order(reference: &[String], got: &[String]) -> f64 {
    let m = got.len();
    let mut prev = vec![0u32; m + 1];
    let mut cur = vec![0u32; m + 1];
    for x in reference {
        for j in 1..=m {
            cur[j] = if &got[j - 1] == x {
                prev[j - 1] + 1
            } else {
                prev[j].max(cur[j - 1])
            };
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[m] as f64 / reference.len().max(1) as f64
}

fn all() -> Options {
    Options {
        max_pages: usize::MAX,
        max_chars: usize::MAX,
        budget: Duration::from_secs(60),
        ..Default::default()
    }
}

fn text_of(bytes: &[u8]) -> String {
    let d = extract(bytes, &all()).expect("text");
    d.pages
        .into_iter()
        .map(|p| p.text)
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn every_corpus_file_has_word_recall_of_at_least_0_99_and_reads_in_order() {
    let dir = fixtures().join("corpus");
    let mut seen = 0;
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "pdf"))
        .collect();
    names.sort();
    for path in names {
        let known = std::fs::read_to_string(path.with_extension("txt")).expect("known text");
        let got = text_of(&std::fs::read(&path).unwrap());
        let (kw, gw) = (words(&known), words(&got));
        let r = recall(&kw, &gw);
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        assert!(r >= 0.99, "{name}: recall {r:.4}\n--- got:\n{got}");
        let p = recall(&gw, &kw);
        assert!(p >= 0.99, "{name}: precision {p:.4}\n--- got:\n{got}");
        if kw.len() * gw.len() < 30_000_000 {
            let o = order(&kw, &gw);
            assert!(o >= 0.98, "{name}: order {o:.4}\n--- got:\n{got}");
        }
        seen += 1;
    }
    assert!(seen >= 10, "corpus missing: {seen} files");
}

/// Issue 15's failure modes, one generated file each (scripts/pdf-modes.py): every file reads
/// like its known text (all files are checked before failing, so one run shows every gap).
/// Issue 15: form field values are marked as fields (`Page::fields`, the answer's
/// `pages[].fields`) besides being read where the form shows them; a filled field with no
/// appearance stream is read too (poppler makes one), an empty, unchecked or hidden one is not
/// listed.
#[test]
fn form_field_values_are_listed_as_the_pages_fields() {
    let read = |name: &str| {
        let bytes = std::fs::read(fixtures().join("modes").join(name)).unwrap();
        extract(&bytes, &all()).expect("text").pages.remove(0)
    };
    let listed = |p: &paycall::pdf::Page| {
        p.fields
            .iter()
            .map(|f| format!("{}={}:{}", f.name, f.kind, f.value))
            .collect::<Vec<_>>()
    };
    let p = read("acroform-fields.pdf");
    assert_eq!(
        listed(&p),
        [
            "shipment.consignee=text:Harbour Supplies Ltd",
            "shipment.city=text:Rotterdam",
            "express=checkbox:Yes",
        ]
    );
    assert!(p.text.contains("City: Rotterdam"), "{}", p.text);
    assert!(!p.text.contains("do not show"), "{}", p.text);
    let p = read("acroform.pdf");
    assert_eq!(listed(&p), ["name=text:Jane Doe", "city=text:Rotterdam"]);
    // Pages without a form list nothing.
    assert!(read("bad-content-tokens.pdf").fields.is_empty());
}

#[test]
fn every_failure_mode_file_reads_like_its_known_text() {
    let dir = fixtures().join("modes");
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .expect("fixtures/pdf/modes (scripts/pdf-modes.py)")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "pdf"))
        .collect();
    names.sort();
    let mut failures = Vec::new();
    for path in &names {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let known = std::fs::read_to_string(path.with_extension("txt")).expect("known text");
        let got = match extract(&std::fs::read(path).unwrap(), &all()) {
            Ok(d) => d
                .pages
                .into_iter()
                .map(|p| p.text)
                .collect::<Vec<_>>()
                .join("\n"),
            Err(e) => {
                failures.push(format!("{name}: {} ({e})", e.code()));
                continue;
            }
        };
        let (kw, gw) = (words(&known), words(&got));
        let (r, p, o) = (recall(&kw, &gw), recall(&gw, &kw), order(&kw, &gw));
        if r < 0.99 || p < 0.99 || o < 0.98 {
            failures.push(format!(
                "{name}: recall {r:.3} precision {p:.3} order {o:.3}\n--- got:\n{got}\n--- known:\n{known}"
            ));
        }
    }
    assert!(
        names.len() >= 16,
        "modes corpus missing: {} files",
        names.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn two_column_pages_read_column_by_column() {
    let known = std::fs::read_to_string(fixtures().join("corpus/two-column.txt")).unwrap();
    let got = text_of(&fixture("corpus/two-column.pdf"));
    // Each known line (a whole column line) appears intact, and the right column's first line
    // comes after the left column's last line on the same page.
    let lines: Vec<&str> = known.lines().collect();
    for l in &lines {
        assert!(
            got.contains(l),
            "line missing or split: {l}\n--- got:\n{got}"
        );
    }
    let pos = |s: &str| got.find(s).unwrap();
    // Known text per page: title, left column lines, right column lines.
    let title2 = lines
        .iter()
        .position(|l| l.starts_with("A study") && l.ends_with("part 2"))
        .unwrap();
    let left_last = lines[title2 - 1];
    let page1: Vec<&str> = lines[1..title2].to_vec();
    let left_first = page1[0];
    assert!(pos(left_first) < pos(left_last));
    assert!(pos(lines[title2]) > pos(left_last));
}

#[test]
fn ligatures_and_unicode_come_back_as_written() {
    let got = text_of(&fixture("corpus/ligatures.pdf"));
    assert!(
        !got.contains('\u{FB01}') && !got.contains('\u{FB03}'),
        "{got}"
    );
    let known = std::fs::read_to_string(fixtures().join("corpus/ligatures.txt")).unwrap();
    assert_eq!(words(&got), words(&known));
    let got = text_of(&fixture("corpus/nonlatin.pdf"));
    for w in ["λιμάνι", "гавань", "նավահանգիստ", "ნავსადგური"]
    {
        assert!(
            got.contains(w)
                || !std::fs::read_to_string(fixtures().join("corpus/nonlatin.txt"))
                    .unwrap()
                    .contains(w),
            "{w} missing"
        );
    }
    let got = text_of(&fixture("corpus/tex-like.pdf"));
    let known = std::fs::read_to_string(fixtures().join("corpus/tex-like.txt")).unwrap();
    assert_eq!(
        got.trim(),
        known.trim(),
        "TJ word gaps and Differences ligatures"
    );
}

#[test]
fn rotated_text_reads_as_words_after_the_upright_text() {
    // An arXiv-style margin stamp written bottom to top, and a line upside down.
    let content = b"BT /F1 12 Tf 72 700 Td (Upright body text) Tj ET \
BT /F1 10 Tf 0 1 -1 0 30 200 Tm (arXiv:2401.00001 stamp in the margin) Tj ET \
BT /F1 10 Tf -1 0 0 -1 400 100 Tm (upside down) Tj ET";
    let got = text_of(&pages_pdf(&[content.to_vec()], false));
    let lines: Vec<&str> = got.lines().collect();
    assert_eq!(
        lines,
        [
            "Upright body text",
            "arXiv:2401.00001 stamp in the margin",
            "upside down"
        ],
        "{got}"
    );
}

#[test]
fn hyphenated_line_ends_are_joined_as_pdftotext_joins_them() {
    // `neighb-` / `ourhood` reads `neighbourhood`; the known text has the words whole (its
    // lines end where the words do, ours run on into the next line, as pdftotext's do).
    let got = text_of(&fixture("corpus/hyphenation.pdf"));
    let known = std::fs::read_to_string(fixtures().join("corpus/hyphenation.txt")).unwrap();
    let words = |t: &str| t.split_whitespace().map(str::to_string).collect::<Vec<_>>();
    assert_eq!(words(&got), words(&known), "{got}");
    assert!(!got.contains('-'), "{got}");
}

#[test]
fn metadata_from_info_with_iso_dates_and_unicode() {
    let d = extract(&fixture("corpus/multipage.pdf"), &all()).unwrap();
    assert_eq!(d.meta.title.as_deref(), Some("Multi-page prose"));
    assert_eq!(d.meta.author.as_deref(), Some("Paycall Test Corpus"));
    assert_eq!(
        d.meta.subject.as_deref(),
        Some("Generated PDF with known text")
    );
    assert_eq!(d.meta.creator.as_deref(), Some("scripts/pdf-corpus.py"));
    assert!(d.meta.producer.as_deref().unwrap_or("").contains("fpdf2"));
    assert!(
        d.meta
            .creation_date
            .as_deref()
            .unwrap_or("")
            .starts_with("2026-11-23T09:30:00"),
        "{:?}",
        d.meta.creation_date
    );
    assert_eq!(d.page_count, 6);
    let d = extract(&fixture("corpus/nonlatin.pdf"), &all()).unwrap();
    assert_eq!(d.meta.title.as_deref(), Some("Ελληνικά и русский"));
    assert_eq!(d.meta.author.as_deref(), Some("Σοφία Παπαδοπούλου"));
}

#[test]
fn xmp_fills_what_the_info_dictionary_lacks() {
    let xmp = br#"<?xpacket begin=""?><x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF><rdf:Description xmp:CreateDate="2025-02-03T04:05:06Z">
<dc:title><rdf:Alt><rdf:li xml:lang="x-default">XMP Title</rdf:li></rdf:Alt></dc:title>
<dc:creator><rdf:Seq><rdf:li>Ada</rdf:li></rdf:Seq></dc:creator></rdf:Description></rdf:RDF></x:xmpmeta>"#;
    let objects = vec![
        b"<< /Type /Catalog /Pages 2 0 R /Metadata 6 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [4 0 R] /Count 1 >>".to_vec(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_vec(),
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 5 0 R /Resources << /Font << /F1 3 0 R >> >> >>".to_vec(),
        stream(&text_op("Hello XMP", 700.0), false),
        {
            let mut s = format!("<< /Type /Metadata /Subtype /XML /Length {} >>\nstream\n", xmp.len()).into_bytes();
            s.extend_from_slice(xmp);
            s.extend_from_slice(b"\nendstream");
            s
        },
        b"<< /Producer (Hand) >>".to_vec(),
    ];
    let d = extract(&raw_pdf(&objects, "/Info 7 0 R "), &all()).unwrap();
    assert_eq!(d.meta.title.as_deref(), Some("XMP Title"));
    assert_eq!(d.meta.author.as_deref(), Some("Ada"));
    assert_eq!(d.meta.producer.as_deref(), Some("Hand"));
    assert_eq!(
        d.meta.creation_date.as_deref(),
        Some("2025-02-03T04:05:06Z")
    );
    assert_eq!(d.pages[0].text, "Hello XMP");
}

#[test]
fn page_and_character_caps() {
    let bytes = fixture("corpus/multipage.pdf");
    let d = extract(
        &bytes,
        &Options {
            max_pages: 2,
            ..all()
        },
    )
    .unwrap();
    assert_eq!(d.pages.len(), 2);
    assert_eq!(d.page_count, 6);
    assert_eq!(
        d.truncated, None,
        "the page count is the caller's choice, not a truncation"
    );
    let d = extract(
        &bytes,
        &Options {
            max_chars: 500,
            ..all()
        },
    )
    .unwrap();
    assert_eq!(d.chars, 500);
    assert_eq!(
        d.pages
            .iter()
            .map(|p| p.text.chars().count())
            .sum::<usize>(),
        500
    );
    assert_eq!(d.truncated, Some(Truncation::Chars));
    // The default caps (docs/decisions.md#limits): 50 pages, 100,000 characters.
    let d = extract(&fixture("corpus/large.pdf"), &Options::default()).unwrap();
    assert_eq!(d.page_count, 60);
    assert!(d.pages.len() <= 50);
    assert!(d.chars <= 100_000);
    assert_eq!(d.truncated, Some(Truncation::Chars));
}

#[test]
fn the_parse_budget_holds_inside_the_work() {
    // Page 1 is quick; page 2 alone takes far longer than the budget.
    let bytes = pages_pdf(
        &[
            text_op("first page text", 700.0),
            heavy_content(3_000_000, "late"),
        ],
        true,
    );
    let t = std::time::Instant::now();
    let d = extract(
        &bytes,
        &Options {
            budget: Duration::from_millis(400),
            ..all()
        },
    )
    .unwrap();
    let took = t.elapsed();
    assert_eq!(d.truncated, Some(Truncation::Time));
    assert_eq!(d.pages[0].text, "first page text");
    assert!(!d.pages.iter().any(|p| p.text.contains("late")));
    assert!(took < Duration::from_secs(5), "budget overrun: {took:?}");
    // Before any text: a timeout error.
    let bytes = pages_pdf(&[heavy_content(3_000_000, "late")], true);
    let e = extract(
        &bytes,
        &Options {
            budget: Duration::from_millis(200),
            ..all()
        },
    )
    .unwrap_err();
    assert_eq!(e, PdfError::Timeout);
    assert_eq!(e.code(), "parse_timeout");
}

#[test]
fn refusals_have_distinct_codes() {
    let cases = [
        ("refused/encrypted.pdf", "pdf_encrypted"),
        ("refused/image-only.pdf", "pdf_image_only"),
        ("refused/damaged.pdf", "pdf_corrupt"),
        ("refused/not-a-pdf.pdf", "not_a_pdf"),
    ];
    for (file, code) in cases {
        let e = extract(&fixture(file), &all()).unwrap_err();
        assert_eq!(e.code(), code, "{file}: {e}");
    }
    // A page with nothing on it.
    let e = extract(&pages_pdf(&[b"q Q\n".to_vec()], false), &all()).unwrap_err();
    assert_eq!(e.code(), "pdf_no_text");
}

fn assert_no_panic(name: &str, bytes: &[u8]) {
    let opts = Options {
        budget: Duration::from_secs(3),
        ..Default::default()
    };
    let r = std::panic::catch_unwind(|| extract(bytes, &opts).map(|d| d.chars));
    assert!(r.is_ok(), "{name}: extract panicked");
}

#[test]
fn hostile_files_never_panic() {
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let font = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_vec();
    let page = |content: &str, res: &str| -> Vec<Vec<u8>> {
        vec![
            b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
            b"<< /Type /Pages /Kids [4 0 R] /Count 1 >>".to_vec(),
            font.clone(),
            format!("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 5 0 R /Resources {res} >>").into_bytes(),
            stream(content.as_bytes(), true),
        ]
    };
    let f1 = "<< /Font << /F1 3 0 R >> >>";
    let mut cases: Vec<(&str, Vec<u8>)> = vec![
        ("deep arrays in content", pages_pdf(&[deep.clone().into_bytes()], true)),
        ("deep arrays in an object", raw_pdf(&[b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(), deep.clone().into_bytes()], "")),
        ("q without Q", pages_pdf(&["q ".repeat(200_000).into_bytes()], true)),
        ("Q without q", pages_pdf(&["Q ".repeat(1000).into_bytes()], true)),
        ("absurd numbers", pages_pdf(&[b"BT /F1 1e308 Tf 1e38 1e38 Td 0 Tz (x) Tj -1e308 TL T* (y) Tj 3 Tr 1e400 0 0 0 0 0 Tm (z) Tj ET".to_vec()], false)),
        ("NaN-ish and wrong operands", pages_pdf(&[b"BT /F1 Tf /X /Y Td (a) (b) Tm [1 2 3] Tj [(a) /N 5 (b)] TJ ' \" Tj ET cm cm 1 2 cm".to_vec()], false)),
        ("text outside BT and no font", pages_pdf(&[b"(loose) Tj [(x)] TJ BT (nofont) Tj ET".to_vec()], false)),
        ("garbage content", pages_pdf(&[(0..5000u32).map(|i| (i * 7919 % 256) as u8).collect()], true)),
    ];
    // A form XObject that draws itself, and two that draw each other.
    let mut o = page(
        "/Fm1 Do",
        "<< /Font << /F1 3 0 R >> /XObject << /Fm1 6 0 R >> >>",
    );
    o.push({
        let c = b"BT /F1 12 Tf 72 700 Td (form) Tj ET /Fm1 Do";
        let mut s = format!("<< /Type /XObject /Subtype /Form /BBox [0 0 612 792] /Length {} /Resources << /Font << /F1 3 0 R >> /XObject << /Fm1 6 0 R >> >> >>\nstream\n", c.len()).into_bytes();
        s.extend_from_slice(c);
        s.extend_from_slice(b"\nendstream");
        s
    });
    cases.push(("self-drawing form", raw_pdf(&o, "")));
    // Page tree cycles.
    cases.push((
        "page tree cycle",
        raw_pdf(
            &[
                b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
                b"<< /Type /Pages /Kids [2 0 R 3 0 R] /Count 2 >>".to_vec(),
                b"<< /Type /Pages /Kids [2 0 R] /Parent 3 0 R /Count 1 >>".to_vec(),
            ],
            "",
        ),
    ));
    // Parent chain cycle for resources.
    cases.push((
        "resources parent cycle",
        raw_pdf(
            &[
                b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
                b"<< /Type /Pages /Kids [3 0 R] /Count 1 /Parent 3 0 R >>".to_vec(),
                b"<< /Type /Page /Parent 2 0 R /Contents 4 0 R >>".to_vec(),
                stream(b"BT /F1 12 Tf (x) Tj ET", false),
            ],
            "",
        ),
    ));
    // Fonts with hostile widths, encodings and CMaps.
    for (name, font_dict) in [
        ("huge W range", "<< /Type /Font /Subtype /Type0 /BaseFont /X /Encoding /Identity-H /DescendantFonts [<< /Type /Font /Subtype /CIDFontType2 /W [0 4294967295 500 1 [1 2 3] 7] /DW -5 >>] >>"),
        ("W garbage", "<< /Type /Font /Subtype /Type0 /Encoding /Identity-H /DescendantFonts [<< /W [(a) /b [/c] 1] >>] >>"),
        ("Widths garbage", "<< /Type /Font /Subtype /TrueType /FirstChar -9999999999 /Widths [1 (x) /n [2] 1e39] >>"),
        ("Differences garbage", "<< /Type /Font /Subtype /Type1 /Encoding << /Differences [-5 /a 300 /b 65 /notaglyph /uniZZZZ /u110000 /f_f_i /. /_ 1e9 (s)] >> >>"),
        ("Type3 matrix", "<< /Type /Font /Subtype /Type3 /FontMatrix [1e30 0 0 1e30 0 0] /FirstChar 0 /Widths [1e30] >>"),
        ("ToUnicode garbage", "<< /Type /Font /Subtype /Type1 /ToUnicode 6 0 R >>"),
        ("font is not a dict", "(not a font)"),
    ] {
        let mut objs = page(
            "BT /F1 12 Tf 72 700 Td (Hello) Tj <00410042FFFF> Tj [<0041> -5000 (x)] TJ ET",
            f1,
        );
        objs[2] = font_dict.as_bytes().to_vec();
        objs.push(stream(
            b"begincmap 1 begincodespacerange <00> <FF> endcodespacerange 2 beginbfrange <00> <FF> <0000> <0000FFFF> [<41> <42>] endbfrange 1 beginbfchar <41> <D800> endbfchar endcmap",
            false,
        ));
        cases.push((name, raw_pdf(&objs, "")));
    }
    // A deflate bomb: 200 MB of zeros in one content stream (over the 16 MB stream cap).
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    let zeros = vec![b' '; 1 << 20];
    for _ in 0..200 {
        std::io::Write::write_all(&mut z, &zeros).unwrap();
    }
    let z = z.finish().unwrap();
    let mut bomb = format!("<< /Length {} /Filter /FlateDecode >>\nstream\n", z.len()).into_bytes();
    bomb.extend_from_slice(&z);
    bomb.extend_from_slice(b"\nendstream");
    let mut objs = page("", f1);
    objs[4] = bomb;
    cases.push(("deflate bomb", raw_pdf(&objs, "")));
    cases.push(("lying xref and length", {
        let mut b = pages_pdf(&[text_op("ok", 700.0)], false);
        let s = String::from_utf8_lossy(&b).replace("/Length ", "/Length 99999");
        b = s.into_bytes();
        b
    }));
    cases.push(("only a header", b"%PDF-1.7\n".to_vec()));
    cases.push(("empty", Vec::new()));
    for (name, bytes) in &cases {
        assert_no_panic(name, bytes);
    }
}

#[test]
fn truncated_and_mangled_corpus_files_never_panic() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let files = [
        "corpus/two-column.pdf",
        "corpus/nonlatin.pdf",
        "corpus/tex-like.pdf",
        "corpus/core-helvetica.pdf",
        "refused/encrypted.pdf",
        "refused/image-only.pdf",
    ];
    let mut runs = 0;
    for f in files {
        let orig = fixture(f);
        // Truncations at spread-out offsets.
        for i in 1..=25 {
            let cut = orig.len() * i / 26;
            assert_no_panic(&format!("{f} cut at {cut}"), &orig[..cut]);
            runs += 1;
        }
        // Random byte flips, deletions and duplications.
        for k in 0..60 {
            let mut b = orig.clone();
            match k % 3 {
                0 => {
                    for _ in 0..1 + rng.below(20) {
                        let i = rng.below(b.len());
                        b[i] = rng.next() as u8;
                    }
                }
                1 => {
                    let a = rng.below(b.len());
                    let n = rng.below(400).min(b.len() - a);
                    b.drain(a..a + n);
                }
                _ => {
                    let a = rng.below(b.len());
                    let n = rng.below(400).min(b.len() - a);
                    let chunk = b[a..a + n].to_vec();
                    let at = rng.below(b.len());
                    b.splice(at..at, chunk);
                }
            }
            assert_no_panic(&format!("{f} mutation {k}"), &b);
            runs += 1;
        }
    }
    assert!(runs > 400);
}
