//! Extraction quality and speed on the article-extraction benchmark (scrapinghub).
//!
//! ```text
//! cargo bench --bench extraction -- <benchmark dir> [options]
//!   --score-output <file.json>  score a stored prediction file (e.g. output/trafilatura.json)
//!                               instead of running our extractor — checks the metric
//!   --as-markdown               with --score-output: predictions are markdown, strip it first
//!   --dump <dir>                write each page's markdown to <dir>/<id>.md
//!   --only <id prefix>          run on matching pages only
//!   --worst <n>                 how many of the worst pages to list (default 10)
//!   --repeat <n>                extraction rounds for the speed figures (default 1)
//!   --readability               the directory is Mozilla Readability's `test-pages/` instead:
//!                               each `<case>/source.html` is extracted and scored against the
//!                               text of `<case>/expected.html` with the same metric (held-out
//!                               check: the engine was never tuned on these pages)
//! ```
//!
//! The benchmark directory holds `ground-truth.json` and `html/<id>.html.gz`. Quality is scored
//! on `markdown_to_text(markdown)` with the benchmark's own metric (see `paycall::doc::score`);
//! speed times `html_to_markdown` alone.

use paycall::doc::score::{shingle_overlap, summarize, Overlap};
use paycall::doc::{html_to_markdown, markdown_to_text};
use serde_json::Value;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

struct Args {
    dir: PathBuf,
    score_output: Option<PathBuf>,
    as_markdown: bool,
    dump: Option<PathBuf>,
    only: Option<String>,
    worst: usize,
    repeat: usize,
    readability: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let mut a = Args {
        dir: PathBuf::new(),
        score_output: None,
        as_markdown: false,
        dump: None,
        only: None,
        worst: 10,
        repeat: 1,
        readability: false,
    };
    let mut dir = None;
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--bench" => {} // added by `cargo bench`
            "--score-output" => a.score_output = Some(value("--score-output")?.into()),
            "--as-markdown" => a.as_markdown = true,
            "--readability" => a.readability = true,
            "--dump" => a.dump = Some(value("--dump")?.into()),
            "--only" => a.only = Some(value("--only")?),
            "--worst" => {
                a.worst = value("--worst")?
                    .parse()
                    .map_err(|e| format!("--worst: {e}"))?
            }
            "--repeat" => {
                a.repeat = value("--repeat")?
                    .parse()
                    .map_err(|e| format!("--repeat: {e}"))?
            }
            s if s.starts_with("--") => return Err(format!("unknown option {s}")),
            s => dir = Some(PathBuf::from(s)),
        }
    }
    a.dir = dir.ok_or(
        "usage: cargo bench --bench extraction -- <article-extraction-benchmark dir> [options]",
    )?;
    Ok(a)
}

fn load_json(path: &Path) -> Result<Value, String> {
    let s = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    serde_json::from_str(&s).map_err(|e| format!("{} is not JSON: {e}", path.display()))
}

fn body_of(v: &Value) -> &str {
    v.get("articleBody").and_then(Value::as_str).unwrap_or("")
}

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(2);
    }
}

fn run() -> Result<(), String> {
    let args = parse_args()?;
    if args.readability {
        return run_readability(&args);
    }
    let truth = load_json(&args.dir.join("ground-truth.json"))?;
    let truth = truth
        .as_object()
        .ok_or("ground-truth.json is not an object")?;
    let mut ids: Vec<&String> = truth
        .keys()
        .filter(|k| args.only.as_ref().is_none_or(|p| k.starts_with(p.as_str())))
        .collect();
    ids.sort();
    if ids.is_empty() {
        return Err("no documents selected".into());
    }

    if let Some(path) = &args.score_output {
        let pred = load_json(path)?;
        let pred = pred.get("output").unwrap_or(&pred);
        let mut rows = Vec::new();
        for id in &ids {
            let p = pred
                .get(id.as_str())
                .ok_or(format!("{} lacks document {id}", path.display()))?;
            let text = if args.as_markdown {
                markdown_to_text(body_of(p))
            } else {
                body_of(p).to_string()
            };
            rows.push((
                id.as_str(),
                shingle_overlap(body_of(&truth[id.as_str()]), &text),
            ));
        }
        report(&rows, truth, args.worst);
        return Ok(());
    }

    if let Some(d) = &args.dump {
        std::fs::create_dir_all(d).map_err(|e| format!("cannot create {}: {e}", d.display()))?;
    }
    let mut pages = Vec::new();
    for id in &ids {
        let path = args.dir.join("html").join(format!("{id}.html.gz"));
        let file = std::fs::File::open(&path)
            .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        let mut raw = Vec::new();
        flate2::read::GzDecoder::new(file)
            .read_to_end(&mut raw)
            .map_err(|e| format!("cannot gunzip {}: {e}", path.display()))?;
        let html = String::from_utf8_lossy(&raw).into_owned();
        let base = truth[id.as_str()]
            .get("url")
            .and_then(Value::as_str)
            .and_then(|u| url::Url::parse(u).ok());
        pages.push((id.as_str(), html, base));
    }

    let mut elapsed = Duration::ZERO;
    let mut outputs = Vec::new();
    for round in 0..args.repeat.max(1) {
        for (_, html, base) in &pages {
            let t = Instant::now();
            let doc = html_to_markdown(html, base.as_ref()).unwrap_or_default();
            elapsed += t.elapsed();
            if round == 0 {
                outputs.push(doc);
            }
        }
    }
    let mut rows = Vec::new();
    for ((id, _, _), doc) in pages.iter().zip(&outputs) {
        if let Some(d) = &args.dump {
            let _ = std::fs::write(d.join(format!("{id}.md")), &doc.markdown);
        }
        let text = markdown_to_text(&doc.markdown);
        rows.push((*id, shingle_overlap(body_of(&truth[*id]), &text)));
    }
    report(&rows, truth, args.worst);
    let bytes: usize = pages.iter().map(|(_, h, _)| h.len()).sum::<usize>() * args.repeat.max(1);
    let n = pages.len() * args.repeat.max(1);
    let secs = elapsed.as_secs_f64();
    println!(
        "speed: {n} pages, {:.1} MB in {:.3} s → {:.1} pages/s, {:.1} MB/s (html_to_markdown only)",
        bytes as f64 / 1e6,
        secs,
        n as f64 / secs,
        bytes as f64 / 1e6 / secs
    );
    Ok(())
}

/// Held-out check on Readability's test pages: our markdown's text against the text of the
/// expected HTML.
fn run_readability(args: &Args) -> Result<(), String> {
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&args.dir)
        .map_err(|e| format!("cannot read {}: {e}", args.dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("source.html").is_file() && p.join("expected.html").is_file())
        .filter(|p| {
            args.only.as_ref().is_none_or(|o| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(o.as_str()))
            })
        })
        .collect();
    cases.sort();
    if cases.is_empty() {
        return Err("no test pages selected".into());
    }
    if let Some(d) = &args.dump {
        std::fs::create_dir_all(d).map_err(|e| format!("cannot create {}: {e}", d.display()))?;
    }
    let base = url::Url::parse("http://fakehost/test/page.html").ok();
    let mut names = Vec::new();
    let mut rows_owned = Vec::new();
    let mut elapsed = Duration::ZERO;
    let mut bytes = 0usize;
    for case in &cases {
        let read = |f: &str| {
            std::fs::read_to_string(case.join(f))
                .map_err(|e| format!("cannot read {}/{f}: {e}", case.display()))
        };
        let (source, expected) = (read("source.html")?, read("expected.html")?);
        bytes += source.len();
        let t = Instant::now();
        let doc = html_to_markdown(&source, base.as_ref()).unwrap_or_default();
        elapsed += t.elapsed();
        let name = case
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("")
            .to_string();
        if let Some(d) = &args.dump {
            let _ = std::fs::write(d.join(format!("{name}.md")), &doc.markdown);
        }
        let o = shingle_overlap(&html_text(&expected), &markdown_to_text(&doc.markdown));
        names.push(name);
        rows_owned.push(o);
    }
    let rows: Vec<(&str, Overlap)> = names
        .iter()
        .map(String::as_str)
        .zip(rows_owned.iter().copied())
        .collect();
    report(&rows, &serde_json::Map::new(), args.worst);
    let secs = elapsed.as_secs_f64();
    println!(
        "speed: {} pages, {:.1} MB in {:.3} s → {:.1} pages/s (html_to_markdown only)",
        cases.len(),
        bytes as f64 / 1e6,
        secs,
        cases.len() as f64 / secs
    );
    Ok(())
}

/// Text of an HTML fragment, with block boundaries as line breaks.
fn html_text(html: &str) -> String {
    const BLOCKS: &[&str] = &[
        "address",
        "article",
        "aside",
        "blockquote",
        "br",
        "dd",
        "div",
        "dl",
        "dt",
        "figcaption",
        "figure",
        "footer",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "header",
        "hr",
        "li",
        "main",
        "nav",
        "ol",
        "p",
        "pre",
        "section",
        "table",
        "td",
        "th",
        "tr",
        "ul",
    ];
    let is_block =
        |n: &scraper::Node| matches!(n, scraper::Node::Element(e) if BLOCKS.contains(&e.name()));
    let doc = scraper::Html::parse_document(html);
    let mut out = String::new();
    for n in doc.tree.root().descendants() {
        match n.value() {
            scraper::Node::Text(t) => {
                // Text after a closed block starts a new line.
                if n.prev_sibling().is_some_and(|p| is_block(p.value())) {
                    out.push('\n');
                }
                out.push_str(t);
            }
            v if is_block(v) => out.push('\n'),
            _ => {}
        }
    }
    out
}

fn report(rows: &[(&str, Overlap)], truth: &serde_json::Map<String, Value>, worst: usize) {
    let overlaps: Vec<Overlap> = rows.iter().map(|(_, o)| *o).collect();
    let s = summarize(&overlaps);
    println!(
        "F1 {:.4}  precision {:.4}  recall {:.4}  ({} docs: {} with a prediction, {} with a truth)",
        s.f1,
        s.precision,
        s.recall,
        rows.len(),
        s.predicted,
        s.truthful
    );
    let mut sorted: Vec<&(&str, Overlap)> = rows.iter().collect();
    sorted.sort_by(|a, b| a.1.f1().total_cmp(&b.1.f1()));
    println!("worst {worst}:");
    for (id, o) in sorted.iter().take(worst) {
        let url = truth
            .get(*id)
            .and_then(|t| t.get("url"))
            .and_then(Value::as_str)
            .unwrap_or("");
        println!(
            "  {}  F1 {:.3}  P {:.3}  R {:.3}  {url}",
            &id[..id.len().min(16)],
            o.f1(),
            o.precision(),
            o.recall()
        );
    }
}
