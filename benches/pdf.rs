//! /api/pdf's text layer against poppler's `pdftotext` (run as a separate process only: it is
//! GPL), on PDFs whose true text is known.
//!
//!     cargo bench --bench pdf -- fixtures/pdf/corpus [more dirs or .pdf files]
//!
//! For every `<name>.pdf` with a `<name>.txt` beside it (the text as written, see
//! scripts/pdf-corpus.py) it prints word recall and precision (multisets of lower-cased
//! alphanumeric words) of our text and of pdftotext's, the order score (longest common
//! subsequence of the word sequences / reference words: 1.0 is the written order; two-column
//! pages read row by row fall well below), and the median time of each over a few runs with
//! their ratio. A `.pdf` without `.txt` (a real-world file) is compared with pdftotext's text as
//! the reference instead. All pages and all characters are read here (no service caps).
//! `PDF_BENCH_RUNS` sets the runs per file (default 5); `PDF_BENCH_DUMP=<dir>` writes our text.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn words(s: &str) -> Vec<String> {
    s.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| w.to_lowercase())
        .collect()
}

fn recall_precision(reference: &[String], got: &[String]) -> (f64, f64) {
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

fn main() {
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
    println!(
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
    let (mut total_ours, mut total_p2t) = (Duration::ZERO, Duration::ZERO);
    let mut worst_recall = f64::INFINITY;
    for path in files {
        let name = path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) => {
                println!("{name:<24} unreadable: {e}");
                continue;
            }
        };
        let (our_text, t_ours) = timed(runs, || ours(&bytes));
        if let (Ok(dir), Ok(text)) = (std::env::var("PDF_BENCH_DUMP"), &our_text) {
            let _ = std::fs::create_dir_all(&dir);
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
        let fmt = |t: &Result<String, String>| match t {
            Ok(text) => {
                let w = words(text);
                let (r, p) = recall_precision(&rw, &w);
                let o = order_score(&rw, &w).map_or("-".to_string(), |o| format!("{o:.3}"));
                (format!("{r:>7.3} {p:>7.3} {o:>6}"), Some(r))
            }
            Err(e) => (
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
        println!(
            "{name:<24} {kind:>6} | {ours_cols} | {p2t_cols} | {:>9.2} {:>9.2} {:>6.2}",
            t_ours.as_secs_f64() * 1000.0,
            t_p2t.as_secs_f64() * 1000.0,
            ratio
        );
    }
    println!(
        "total: ours {:.1} ms, pdftotext {:.1} ms, time ratio {:.2}; worst recall on known text {:.3} (median of {runs} runs each; pdftotext includes its process start)",
        total_ours.as_secs_f64() * 1000.0,
        total_p2t.as_secs_f64() * 1000.0,
        total_ours.as_secs_f64() / total_p2t.as_secs_f64().max(1e-9),
        if worst_recall.is_finite() { worst_recall } else { f64::NAN },
    );
}
