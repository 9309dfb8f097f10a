//! /api/pdf's text layer against poppler's `pdftotext` (run as a separate process only: it is
//! GPL), on PDFs whose true text is known.
//!
//!     cargo bench --bench pdf -- fixtures/pdf/corpus [more dirs or .pdf files]
//!
//! For every `<name>.pdf` with a `<name>.txt` beside it (the text as written, see
//! scripts/pdf-corpus.py) it prints word recall and precision (multisets of words, see
//! `words`) of our text and of pdftotext's, the order score (longest common
//! subsequence of the word sequences / reference words: 1.0 is the written order; two-column
//! pages read row by row fall well below), and the median time of each over a few runs with
//! their ratio. A `.pdf` without `.txt` (a real-world file) is compared with pdftotext's text as
//! the reference instead. All pages and all characters are read here (no service caps).
//! `PDF_BENCH_RUNS` sets the runs per file (default 5); `PDF_BENCH_DUMP=<dir>` writes our text.
//! `PDF_BENCH_READERS="name=program args;…"` adds other readers, each run as its own process
//! with the file's path last and its text on stdout (docs/pdf.md: the scratch build of
//! pdf_oxide and pdf-extract), so no other PDF crate enters the service's build. The closing
//! summary gives, per reader over the files scored against pdftotext, the mean recall and
//! precision per document, the word-weighted recall, the files with no text (errors; ours
//! would be a 422), the files below 0.97 and the total time. Against pdftotext each document is
//! also scored page by page (`support/pdf_pages.rs`: pdftotext ends each page with a form
//! feed, we join ours with one): the row's `pages` column is the mean recall and precision
//! over the document's pages, and the summary gives that mean over documents, the figures
//! over all pages of the set, the pages below 0.97 and the documents whose page counts differ.
//!
//! `--aggregate-only` (for a held-out set: `-- --aggregate-only fixtures/pdf/realworld/held3`)
//! prints no file's name, row or figure, only the closing totals (mean recall and precision,
//! word-weighted recall and precision, the number of errors and of files below 0.97, the time
//! ratio, and the page-by-page totals), so scoring a held-out set shows nothing to tune on;
//! `PDF_BENCH_DUMP` is ignored.

#[path = "support/pdf_pages.rs"]
mod pdf_pages;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Han and kana: scripts written without spaces, each character a word here.
fn unspaced(c: char) -> bool {
    matches!(c as u32, 0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0x20000..=0x3FFFF)
}

/// Words as compared: the text NFKC-normalised (a ligature glyph, an Arabic presentation form,
/// a Kangxi radical or a full-width letter is the character it stands for, whichever of the
/// two a reader writes), lower-cased runs of letters, digits and combining marks, and every
/// Han or kana character a word of its own (where a reader puts spaces in Japanese or Chinese
/// is no loss of text).
fn words(s: &str) -> Vec<String> {
    use unicode_normalization::{char::is_combining_mark, UnicodeNormalization};
    let norm: String = s.nfkc().collect();
    let mut out = Vec::new();
    let mut cur = String::new();
    for c in norm.chars() {
        if unspaced(c) {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur).to_lowercase());
            }
            out.push(c.to_string());
        } else if c.is_alphanumeric() || (is_combining_mark(c) && !cur.is_empty()) {
            cur.push(c);
        } else if !cur.is_empty() {
            out.push(std::mem::take(&mut cur).to_lowercase());
        }
    }
    if !cur.is_empty() {
        out.push(cur.to_lowercase());
    }
    out
}

/// LCS length / reference length (None when too large to compute here).
fn order_score(reference: &[String], got: &[String]) -> Option<f64> {
    let (n, m) = (reference.len(), got.len());
    if n == 0 || m == 0 || (n as u64) * (m as u64) > 60_000_000 {
        return None;
    }
    let mut ids: HashMap<&str, u32> = HashMap::new();
    let a: Vec<u32> = reference
        .iter()
        .map(|w| {
            let k = ids.len() as u32;
            *ids.entry(w).or_insert(k)
        })
        .collect();
    let b: Vec<u32> = got
        .iter()
        .map(|w| ids.get(w.as_str()).copied().unwrap_or(u32::MAX))
        .collect();
    let mut prev = vec![0u32; m + 1];
    let mut cur = vec![0u32; m + 1];
    for &x in &a {
        for j in 1..=m {
            cur[j] = if b[j - 1] == x {
                prev[j - 1] + 1
            } else {
                prev[j].max(cur[j - 1])
            };
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    Some(prev[m] as f64 / n as f64)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ours(bytes: &[u8]) -> Result<String, String> {
    let opts = paycall::pdf::Options {
        max_pages: usize::MAX,
        max_chars: usize::MAX,
        budget: Duration::from_secs(120),
        ..Default::default()
    };
    paycall::pdf::extract_guarded(bytes, &opts)
        .map(|d| {
            d.pages
                .into_iter()
                .map(|p| p.text)
                .collect::<Vec<_>>()
                .join("\n\x0c")
        })
        .map_err(|e| e.to_string())
}

fn pdftotext(path: &Path) -> Result<String, String> {
    let out = Command::new("pdftotext")
        .arg("-enc")
        .arg("UTF-8")
        .arg(path)
        .arg("-")
        .output()
        .map_err(|e| format!("pdftotext: {e} (install poppler-utils)"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn timed<T>(runs: usize, mut f: impl FnMut() -> T) -> (T, Duration) {
    let mut times = Vec::new();
    let mut last = None;
    for _ in 0..runs {
        let t = Instant::now();
        last = Some(f());
        times.push(t.elapsed());
    }
    (last.expect("runs > 0"), median(times))
}

fn collect(arg: &str, out: &mut Vec<PathBuf>) {
    let p = PathBuf::from(arg);
    if p.is_dir() {
        let mut files: Vec<PathBuf> = std::fs::read_dir(&p)
            .map(|rd| rd.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        files.retain(|f| f.extension().is_some_and(|e| e == "pdf"));
        files.sort();
        out.extend(files);
    } else if p.is_file() {
        out.push(p);
    } else {
        eprintln!("skipping {arg}: not a file or folder");
    }
}

/// A comparison reader run as its own process, like pdftotext: `name=program args…`, the file's
/// path appended, its text on stdout (e.g. a scratch build of another Rust PDF crate, see
/// docs/pdf.md). Never a dependency of the service.
struct Other {
    name: String,
    argv: Vec<String>,
}

fn others() -> Vec<Other> {
    std::env::var("PDF_BENCH_READERS")
        .unwrap_or_default()
        .split(';')
        .filter_map(|spec| {
            let (name, cmd) = spec.split_once('=')?;
            let argv: Vec<String> = cmd.split_whitespace().map(String::from).collect();
            (!argv.is_empty()).then(|| Other {
                name: name.trim().to_string(),
                argv,
            })
        })
        .collect()
}

fn run_other(o: &Other, path: &Path) -> Result<String, String> {
    let out = Command::new(&o.argv[0])
        .args(&o.argv[1..])
        .arg(path)
        .output()
        .map_err(|e| format!("{}: {e}", o.name))?;
    if !out.status.success() {
        let e = String::from_utf8_lossy(&out.stderr);
        return Err(e.trim().lines().last().unwrap_or("failed").to_string());
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Per reader over the files scored against pdftotext: sums for the closing summary.
#[derive(Default)]
struct Tally {
    files: usize,
    recall: f64,
    precision: f64,
    hit_words: f64,
    ref_words: usize,
    got_hit_words: f64,
    got_words: usize,
    errors: Vec<String>,
    below: Vec<String>,
    time: Duration,
    /// Page by page: documents with a page scored, the sums of their per-page means, the
    /// pages scored over the set and the sums of their figures, pages below 0.97, and the
    /// documents whose page counts differ from pdftotext's.
    page_docs: usize,
    page_doc_recall: f64,
    page_doc_precision: f64,
    pages: usize,
    page_recall: f64,
    page_precision: f64,
    pages_below: usize,
    page_count_differs: usize,
}

impl Tally {
    /// rw: the reference's words; r: recall, precision and the reader's number of words.
    fn add(&mut self, name: &str, rw: usize, r: Option<(f64, f64, usize)>, t: Duration) {
        self.files += 1;
        self.ref_words += rw;
        self.time += t;
        match r {
            Some((r, p, gw)) => {
                self.recall += r;
                self.precision += p;
                self.hit_words += r * rw as f64;
                self.got_words += gw;
                self.got_hit_words += p * gw as f64;
                if r < 0.97 || p < 0.97 {
                    self.below.push(format!("{name} {r:.2}/{p:.2}"));
                }
            }
            None => self.errors.push(name.to_string()),
        }
    }

    fn add_pages(&mut self, s: &pdf_pages::PageScores) {
        if let Some((r, p)) = s.mean() {
            self.page_docs += 1;
            self.page_doc_recall += r;
            self.page_doc_precision += p;
        }
        for &(r, p) in &s.pages {
            self.pages += 1;
            self.page_recall += r;
            self.page_precision += p;
            if r < 0.97 || p < 0.97 {
                self.pages_below += 1;
            }
        }
        if s.count_differs {
            self.page_count_differs += 1;
        }
    }

    fn page_line(&self, reader: &str) -> String {
        let (d, n) = (self.page_docs.max(1) as f64, self.pages.max(1) as f64);
        format!(
            "{reader:<10} per page: documents {:>3}  mean recall {:.3}  mean precision {:.3}  |  all {} pages: mean recall {:.3}  mean precision {:.3}  below 0.97 {}  |  page count differs {}",
            self.page_docs,
            self.page_doc_recall / d,
            self.page_doc_precision / d,
            self.pages,
            self.page_recall / n,
            self.page_precision / n,
            self.pages_below,
            self.page_count_differs
        )
    }

    fn line(&self, reader: &str, p2t: Duration) -> String {
        let n = self.files.max(1) as f64;
        format!(
            "{reader:<10} files {:>3}  mean recall {:.3}  mean precision {:.3}  word-weighted recall {:.3}  precision {:.3}  errors {:>2}  below 0.97 {:>2}  time {:.0} ms ({:.2}x pdftotext)",
            self.files,
            self.recall / n,
            self.precision / n,
            self.hit_words / self.ref_words.max(1) as f64,
            self.got_hit_words / self.got_words.max(1) as f64,
            self.errors.len(),
            self.below.len(),
            self.time.as_secs_f64() * 1000.0,
            self.time.as_secs_f64() / p2t.as_secs_f64().max(1e-9)
        )
    }
}

fn main() {
    let aggregate_only = std::env::args().any(|a| a == "--aggregate-only");
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let mut files = Vec::new();
    let defaults = ["fixtures/pdf/corpus".to_string()];
    for a in if args.is_empty() {
        &defaults[..]
    } else {
        &args[..]
    } {
        collect(a, &mut files);
    }
    let runs: usize = std::env::var("PDF_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let others = others();
    let mut header = format!(
        "{:<24} {:>6} | {:>7} {:>7} {:>6} | {:>7} {:>7} {:>6} | {:>9} {:>9} {:>6}",
        "file",
        "ref",
        "recall",
        "prec",
        "order",
        "p2t rec",
        "p2t prc",
        "order",
        "ours ms",
        "p2t ms",
        "ratio"
    );
    for o in &others {
        header += &format!(" | {:>7} {:>7} {:>9}", o.name, "prec", "ms");
    }
    if !aggregate_only {
        println!("{header}");
    }
    let (mut total_ours, mut total_p2t) = (Duration::ZERO, Duration::ZERO);
    let mut worst_recall = f64::INFINITY;
    let mut tally_ours = Tally::default();
    let mut tally_others: Vec<Tally> = others.iter().map(|_| Tally::default()).collect();
    let mut p2t_scored = Duration::ZERO;
    for path in files {
        let name = path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) => {
                if !aggregate_only {
                    println!("{name:<24} unreadable: {e}");
                }
                continue;
            }
        };
        let (our_text, t_ours) = timed(runs, || ours(&bytes));
        if let Some(dir) = std::env::var("PDF_BENCH_DUMP")
            .ok()
            .filter(|_| !aggregate_only)
        {
            let _ = std::fs::create_dir_all(&dir);
            let text = our_text.clone().unwrap_or_else(|e| format!("ERROR {e}"));
            let _ = std::fs::write(Path::new(&dir).join(format!("{name}.txt")), text);
        }
        let (p2t_text, t_p2t) = timed(runs, || pdftotext(&path));
        let known = std::fs::read_to_string(path.with_extension("txt")).ok();
        let (reference, kind) = match (&known, &p2t_text) {
            (Some(k), _) => (k.clone(), "known"),
            (None, Ok(p)) => (p.clone(), "p2t"),
            (None, Err(_)) => (String::new(), "none"),
        };
        let rw = words(&reference);
        let score = |t: &Result<String, String>| {
            t.as_ref().ok().map(|text| {
                let w = words(text);
                let (r, p) = pdf_pages::recall_precision(&rw, &w);
                (r, p, order_score(&rw, &w))
            })
        };
        let fmt = |t: &Result<String, String>| match (score(t), t) {
            (Some((r, p, o)), _) => {
                let o = o.map_or("-".to_string(), |o| format!("{o:.3}"));
                (format!("{r:>7.3} {p:>7.3} {o:>6}"), Some(r))
            }
            (None, Err(e)) | (None, Ok(e)) => (
                format!(
                    "{:>22}",
                    format!("error: {}", e.chars().take(14).collect::<String>())
                ),
                None,
            ),
        };
        let (ours_cols, our_recall) = fmt(&our_text);
        let (p2t_cols, _) = if kind == "p2t" {
            ("      (reference)      ".to_string(), None)
        } else {
            fmt(&p2t_text)
        };
        if kind == "known" {
            if let Some(r) = our_recall {
                worst_recall = worst_recall.min(r);
            } else {
                worst_recall = 0.0;
            }
        }
        total_ours += t_ours;
        total_p2t += t_p2t;
        let ratio = t_ours.as_secs_f64() / t_p2t.as_secs_f64().max(1e-9);
        let mut row = format!(
            "{name:<24} {kind:>6} | {ours_cols} | {p2t_cols} | {:>9.2} {:>9.2} {:>6.2}",
            t_ours.as_secs_f64() * 1000.0,
            t_p2t.as_secs_f64() * 1000.0,
            ratio
        );
        let rp = |t: &Result<String, String>| {
            let gw = t.as_ref().map_or(0, |text| words(text).len());
            score(t).map(|(r, p, _)| (r, p, gw))
        };
        if kind == "p2t" {
            p2t_scored += t_p2t;
            tally_ours.add(&name, rw.len(), rp(&our_text), t_ours);
            if let Ok(text) = &our_text {
                let per_page = pdf_pages::score_pages(
                    &reference,
                    text,
                    |r, g| pdf_pages::recall_precision(&words(r), &words(g)),
                    |p| words(p).is_empty(),
                );
                tally_ours.add_pages(&per_page);
                row += &match per_page.mean() {
                    Some((r, p)) => format!(" | pages {r:.3} {p:.3}"),
                    None => " | pages -".to_string(),
                };
            }
        }
        for (o, tally) in others.iter().zip(tally_others.iter_mut()) {
            let (text, t) = timed(runs, || run_other(o, &path));
            let s = rp(&text);
            row += &match s {
                Some((r, p, _)) => {
                    format!(" | {r:>7.3} {p:>7.3} {:>9.2}", t.as_secs_f64() * 1000.0)
                }
                None => format!(" | {:>17} {:>9.2}", "error", t.as_secs_f64() * 1000.0),
            };
            if kind == "p2t" {
                tally.add(&name, rw.len(), s, t);
            }
        }
        if !aggregate_only {
            println!("{row}");
        }
    }
    println!(
        "total: ours {:.1} ms, pdftotext {:.1} ms, time ratio {:.2}; worst recall on known text {:.3} (median of {runs} runs each; pdftotext includes its process start)",
        total_ours.as_secs_f64() * 1000.0,
        total_p2t.as_secs_f64() * 1000.0,
        total_ours.as_secs_f64() / total_p2t.as_secs_f64().max(1e-9),
        if worst_recall.is_finite() { worst_recall } else { f64::NAN },
    );
    if tally_ours.files > 0 {
        println!(
            "against pdftotext ({} files, per document; errors = no text, e.g. 422):",
            tally_ours.files
        );
        println!("{}", tally_ours.line("paycall", p2t_scored));
        println!("{}", tally_ours.page_line("paycall"));
        for (o, t) in others.iter().zip(&tally_others) {
            println!("{}", t.line(&o.name, p2t_scored));
        }
        if !aggregate_only {
            println!("paycall below 0.97: {}", tally_ours.below.join(", "));
            println!("paycall errors: {}", tally_ours.errors.join(", "));
        }
    }
}
