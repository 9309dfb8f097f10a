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
    };
    let mut dir = None;
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--bench" => {} // added by `cargo bench`
            "--score-output" => a.score_output = Some(value("--score-output")?.into()),
            "--as-markdown" => a.as_markdown = true,
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
            let doc = html_to_markdown(html, base.as_ref());
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

fn report(rows: &[(&str, Overlap)], truth: &serde_json::Map<String, Value>, worst: usize) {
    let overlaps: Vec<Overlap> = rows.iter().map(|(_, o)| *o).collect();
    let s = summarize(&overlaps);
    println!(
        "F1 {:.3}  precision {:.3}  recall {:.3}  ({} docs: {} with a prediction, {} with a truth)",
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
        let url = truth[*id].get("url").and_then(Value::as_str).unwrap_or("");
        println!(
            "  {}  F1 {:.3}  P {:.3}  R {:.3}  {url}",
            &id[..id.len().min(16)],
            o.f1(),
            o.precision(),
            o.recall()
        );
    }
}
