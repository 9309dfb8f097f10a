//! Extraction quality and speed, per set of annotated pages.
//!
//! ```text
//! cargo bench --bench extraction -- <dir> [options]
//!   (default)                   <dir> is scrapinghub's article-extraction-benchmark:
//!                               ground-truth.json and html/<id>.html.gz
//!   --readability               <dir> is Mozilla Readability's `test-pages/`: each
//!                               `<case>/source.html` against the text of `<case>/expected.html`
//!   --set                       <dir> holds manifest.json, html/<id>.html and truth/<id>.txt
//!                               (scripts/extraction-data.py makes one; tokens per character
//!                               for Chinese, Japanese, Thai… see `score::Tokens::Scripts`);
//!                               or, when the manifest's pages carry "with"/"without"
//!                               passages (scripts/extraction-passages.py), no truth files:
//!                               passages are scored trafilatura's way (`score::score_passages`)
//!   --split dev|holdout|holdout2|holdout3|holdout4|holdout5|all
//!                               with --set: which pages (default dev; score holdout,
//!                               holdout2, holdout3, holdout4 and holdout5, the pages added later, only
//!                               at the end of a piece of work)
//!   --score-output <file.json>  score stored predictions ({id: text} or {id: {articleBody}},
//!                               optionally under "output") instead of running our extractor
//!   --as-markdown               with --score-output: predictions are markdown, strip it first
//!   --dump <dir>                write each page's markdown to <dir>/<id>.md and its
//!                               metadata to <dir>/<id>.meta
//!   --only <id prefix>          run on matching pages only
//!   --worst <n>                 how many of the worst pages to list (default 10)
//!   --repeat <n>                extraction rounds for the in-process speed (default 1)
//!   --no-command                skip the speed through `paycall markdown --out` (batch mode)
//!   --check-bounds              only check that the lean input the extractor parses (scripts,
//!                               styles, unread attributes dropped) builds the page's tree,
//!                               and that extraction's own tree sink builds scraper's tree
//! ```
//!
//! Quality is scored on `markdown_to_text(markdown)` with the benchmark's own metric (see
//! `paycall::doc::score`). Speed is printed twice: in-process (`html_to_markdown` alone, one
//! thread) and through the command (one `paycall markdown --out` process over the same pages,
//! all cores, wall clock including reading, decoding and writing).

use paycall::doc::page_text::decode_text;
use paycall::doc::score::{
    score_passages, shingle_overlap_with, summarize, Overlap, Passages, Tokens,
};
use paycall::doc::{html_to_markdown, markdown_to_text};
use serde_json::Value;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Scrapinghub,
    Readability,
    Set,
}

struct Args {
    dir: PathBuf,
    kind: Kind,
    split: String,
    score_output: Option<PathBuf>,
    as_markdown: bool,
    dump: Option<PathBuf>,
    only: Option<String>,
    worst: usize,
    repeat: usize,
    command: bool,
    check_bounds: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let mut a = Args {
        dir: PathBuf::new(),
        kind: Kind::Scrapinghub,
        split: "dev".into(),
        score_output: None,
        as_markdown: false,
        dump: None,
        only: None,
        worst: 10,
        repeat: 1,
        command: true,
        check_bounds: false,
    };
    let mut dir = None;
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--bench" => {} // added by `cargo bench`
            "--score-output" => a.score_output = Some(value("--score-output")?.into()),
            "--as-markdown" => a.as_markdown = true,
            "--readability" => a.kind = Kind::Readability,
            "--set" => a.kind = Kind::Set,
            "--split" => a.split = value("--split")?,
            "--no-command" => a.command = false,
            "--check-bounds" => a.check_bounds = true,
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
    if ![
        "dev", "holdout", "holdout2", "holdout3", "holdout4", "holdout5", "all",
    ]
    .contains(&a.split.as_str())
    {
        return Err(format!(
            "--split {}: dev, holdout, holdout2, holdout3, holdout4, holdout5 or all",
            a.split
        ));
    }
    a.dir = dir.ok_or("usage: cargo bench --bench extraction -- <dir> [options]")?;
    Ok(a)
}

/// One annotated page.
struct Page {
    id: String,
    /// The file as stored (what the command reads).
    file: PathBuf,
    html: String,
    base: Option<url::Url>,
    truth: String,
    url: String,
    /// Passage sets only: the passages that must be in the output and those that must not.
    passages: Option<(Vec<String>, Vec<String>)>,
}

fn load_json(path: &Path) -> Result<Value, String> {
    let s = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    serde_json::from_str(&s).map_err(|e| format!("{} is not JSON: {e}", path.display()))
}

fn read(path: &Path) -> Result<Vec<u8>, String> {
    let raw = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if path.extension().is_some_and(|e| e == "gz") {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(&raw[..])
            .read_to_end(&mut out)
            .map_err(|e| format!("cannot gunzip {}: {e}", path.display()))?;
        return Ok(out);
    }
    Ok(raw)
}

/// The page as the route would decode it (no HTTP charset: BOM, meta, UTF-8, detection).
fn decode(raw: &[u8]) -> String {
    decode_text("text/html", raw)
}

fn body_of(v: &Value) -> &str {
    v.as_str()
        .or_else(|| v.get("articleBody").and_then(Value::as_str))
        .unwrap_or("")
}

fn selected(args: &Args, id: &str) -> bool {
    args.only
        .as_ref()
        .is_none_or(|p| id.starts_with(p.as_str()))
}

fn load_scrapinghub(args: &Args) -> Result<Vec<Page>, String> {
    let truth = load_json(&args.dir.join("ground-truth.json"))?;
    let truth = truth
        .as_object()
        .ok_or("ground-truth.json is not an object")?;
    let mut pages = Vec::new();
    for (id, t) in truth {
        if !selected(args, id) {
            continue;
        }
        let file = args.dir.join("html").join(format!("{id}.html.gz"));
        let url = t
            .get("url")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        pages.push(Page {
            id: id.clone(),
            html: decode(&read(&file)?),
            file,
            base: url::Url::parse(&url).ok(),
            truth: body_of(t).to_string(),
            url,
            passages: None,
        });
    }
    Ok(pages)
}

fn load_readability(args: &Args) -> Result<Vec<Page>, String> {
    let mut pages = Vec::new();
    let entries = std::fs::read_dir(&args.dir)
        .map_err(|e| format!("cannot read {}: {e}", args.dir.display()))?;
    for case in entries.filter_map(|e| e.ok().map(|e| e.path())) {
        let id = case
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("")
            .to_string();
        let (file, expected) = (case.join("source.html"), case.join("expected.html"));
        if !file.is_file() || !expected.is_file() || !selected(args, &id) {
            continue;
        }
        pages.push(Page {
            id,
            html: decode(&read(&file)?),
            file,
            base: url::Url::parse("http://fakehost/test/page.html").ok(),
            truth: html_text(&decode(&read(&expected)?)),
            url: String::new(),
            passages: None,
        });
    }
    Ok(pages)
}

fn load_set(args: &Args) -> Result<Vec<Page>, String> {
    let manifest = load_json(&args.dir.join("manifest.json"))?;
    let list = manifest
        .get("pages")
        .and_then(Value::as_array)
        .ok_or("manifest.json has no pages")?;
    let mut pages = Vec::new();
    for p in list {
        let id = p.get("id").and_then(Value::as_str).unwrap_or("");
        let split = p.get("split").and_then(Value::as_str).unwrap_or("dev");
        if id.is_empty()
            || p.get("left_out").is_some()
            || !selected(args, id)
            || (args.split != "all" && args.split != split)
        {
            continue;
        }
        let file = args.dir.join("html").join(format!("{id}.html"));
        let strings = |key: &str| -> Vec<String> {
            p.get(key)
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(String::from)
                        .collect()
                })
                .unwrap_or_default()
        };
        let passages = p
            .get("with")
            .is_some()
            .then(|| (strings("with"), strings("without")));
        let truth = if passages.is_some() {
            String::new()
        } else {
            String::from_utf8(read(&args.dir.join("truth").join(format!("{id}.txt")))?)
                .map_err(|e| format!("truth of {id} is not UTF-8: {e}"))?
        };
        let url = p
            .get("url")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        pages.push(Page {
            id: id.to_string(),
            html: decode(&read(&file)?),
            file,
            base: url::Url::parse(&url).ok(),
            truth,
            url,
            passages,
        });
    }
    // Passages or truth files: one kind per set, whatever page comes first.
    let with_passages = pages.iter().filter(|p| p.passages.is_some()).count();
    if with_passages != 0 && with_passages != pages.len() {
        return Err(format!(
            "{}: {with_passages} of {} pages have passages, the others truth files: one kind per set",
            args.dir.display(),
            pages.len()
        ));
    }
    Ok(pages)
}

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(2);
    }
}

fn run() -> Result<(), String> {
    let args = parse_args()?;
    let mut pages = match args.kind {
        Kind::Scrapinghub => load_scrapinghub(&args)?,
        Kind::Readability => load_readability(&args)?,
        Kind::Set => load_set(&args)?,
    };
    pages.sort_by(|a, b| a.id.cmp(&b.id));
    if pages.is_empty() {
        return Err("no pages selected".into());
    }
    let tokens = if args.kind == Kind::Set {
        Tokens::Scripts
    } else {
        Tokens::Words
    };

    if let Some(path) = &args.score_output {
        let pred = load_json(path)?;
        let pred = pred.get("output").unwrap_or(&pred);
        let mut texts = Vec::new();
        for p in &pages {
            let v = pred.get(p.id.as_str()).ok_or(format!(
                "{} lacks document {}",
                path.display(),
                p.id
            ))?;
            let text = if args.as_markdown {
                markdown_to_text(body_of(v))
            } else {
                body_of(v).to_string()
            };
            texts.push(text);
        }
        if pages[0].passages.is_some() {
            report_passages(&pages, &texts, args.worst);
        } else {
            let rows: Vec<Overlap> = pages
                .iter()
                .zip(&texts)
                .map(|(p, t)| shingle_overlap_with(&p.truth, t, tokens))
                .collect();
            report(&pages, &rows, args.worst);
        }
        return Ok(());
    }

    if args.check_bounds {
        // The lean input the extractor parses must build the same tree (raw text and unread
        // attributes aside) as the page; and the sink extraction parses into must build the
        // tree scraper builds.
        let (mut bounds, mut sink) = (0, 0);
        for p in &pages {
            if let Some(d) = paycall::doc::markdown::text_bounds_differ(&p.html) {
                println!("  {}: bounds: {d}", p.id);
                bounds += 1;
            }
            if let Some(d) = paycall::doc::markdown::sink_tree_differs(&p.html) {
                println!("  {}: sink: {d}", p.id);
                sink += 1;
            }
        }
        println!("check-bounds: {bounds} of {} pages differ", pages.len());
        println!("check-sink: {sink} of {} pages differ", pages.len());
        return Ok(());
    }
    if let Some(d) = &args.dump {
        std::fs::create_dir_all(d).map_err(|e| format!("cannot create {}: {e}", d.display()))?;
    }
    let mut elapsed = Duration::ZERO;
    let mut outputs = Vec::new();
    for round in 0..args.repeat.max(1) {
        for p in &pages {
            let t = Instant::now();
            let doc = html_to_markdown(&p.html, p.base.as_ref()).unwrap_or_default();
            elapsed += t.elapsed();
            if round == 0 {
                outputs.push(doc);
            }
        }
    }
    let mut rows = Vec::new();
    let mut texts = Vec::new();
    for (p, doc) in pages.iter().zip(&outputs) {
        if let Some(d) = &args.dump {
            let _ = std::fs::write(d.join(format!("{}.md", p.id)), &doc.markdown);
            // The metadata beside it, so a dump compares whole results (speed work must not
            // change either).
            let meta = format!(
                "title: {:?}\ndescription: {:?}\nlanguage: {:?}\nbyline: {:?}\npublished: {:?}\nwords: {}\n",
                doc.title, doc.description, doc.language, doc.byline, doc.published, doc.word_count
            );
            let _ = std::fs::write(d.join(format!("{}.meta", p.id)), meta);
        }
        let text = markdown_to_text(&doc.markdown);
        if p.passages.is_none() {
            rows.push(shingle_overlap_with(&p.truth, &text, tokens));
        }
        texts.push(text);
    }
    if pages[0].passages.is_some() {
        report_passages(&pages, &texts, args.worst);
    } else {
        report(&pages, &rows, args.worst);
    }
    let empty = outputs
        .iter()
        .filter(|d| d.markdown.trim().is_empty())
        .count();
    println!("empty outputs: {empty}");
    let bytes: usize = pages.iter().map(|p| p.html.len()).sum::<usize>() * args.repeat.max(1);
    let n = pages.len() * args.repeat.max(1);
    let secs = elapsed.as_secs_f64();
    println!(
        "speed in-process: {n} pages, {:.1} MB in {:.3} s → {:.1} pages/s, {:.1} MB/s \
         (html_to_markdown only, one thread)",
        bytes as f64 / 1e6,
        secs,
        n as f64 / secs,
        bytes as f64 / 1e6 / secs
    );
    if args.command {
        command_speed(&pages)?;
    }
    Ok(())
}

/// Times one `paycall markdown --out` process over the same pages (linked under unique names
/// into a scratch folder, so every page is one input).
fn command_speed(pages: &[Page]) -> Result<(), String> {
    let scratch = std::env::temp_dir().join(format!("paycall-extraction-{}", std::process::id()));
    let (input, out) = (scratch.join("in"), scratch.join("out"));
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&input)
        .map_err(|e| format!("cannot create {}: {e}", input.display()))?;
    for (i, p) in pages.iter().enumerate() {
        let name = p
            .file
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("page.html");
        let abs = std::fs::canonicalize(&p.file)
            .map_err(|e| format!("cannot resolve {}: {e}", p.file.display()))?;
        std::os::unix::fs::symlink(&abs, input.join(format!("{i:05}-{name}")))
            .map_err(|e| format!("cannot link {}: {e}", abs.display()))?;
    }
    let t = Instant::now();
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_paycall"))
        .arg("markdown")
        .arg("--out")
        .arg(&out)
        .arg(&input)
        .stderr(std::process::Stdio::null())
        .status()
        .map_err(|e| format!("cannot run paycall: {e}"))?;
    let secs = t.elapsed().as_secs_f64();
    let written = std::fs::read_dir(&out).map(|d| d.count()).unwrap_or(0);
    let _ = std::fs::remove_dir_all(&scratch);
    println!(
        "speed through `paycall markdown --out`: {} pages in {secs:.3} s → {:.1} pages/s \
         (one process, all cores, {written} outputs, exit {})",
        pages.len(),
        pages.len() as f64 / secs,
        status.code().unwrap_or(-1)
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

fn report(pages: &[Page], rows: &[Overlap], worst: usize) {
    let s = summarize(rows);
    println!(
        "F1 {:.4}  precision {:.4}  recall {:.4}  ({} docs: {} with a prediction, {} with a truth)",
        s.f1,
        s.precision,
        s.recall,
        rows.len(),
        s.predicted,
        s.truthful
    );
    let none = rows.iter().filter(|o| o.tp == 0.0 && o.fn_ > 0.0).count();
    println!("pages with none of the main text: {none}");
    let mut sorted: Vec<(&Page, &Overlap)> = pages.iter().zip(rows).collect();
    sorted.sort_by(|a, b| a.1.f1().total_cmp(&b.1.f1()));
    println!("worst {worst}:");
    for (p, o) in sorted.iter().take(worst) {
        println!(
            "  {}  F1 {:.3}  P {:.3}  R {:.3}  {}",
            &p.id[..p.id.len().min(24)],
            o.f1(),
            o.precision(),
            o.recall(),
            p.url
        );
    }
}

/// Passage sets: precision, recall and F1 over all passages of the selected pages, the pages
/// given none of their main-text passages, and the pages that lose most.
fn report_passages(pages: &[Page], texts: &[String], worst: usize) {
    let mut all = Passages::default();
    let mut rows = Vec::new();
    for (p, text) in pages.iter().zip(texts) {
        let (with, without) = p
            .passages
            .as_ref()
            .map(|(a, b)| (&a[..], &b[..]))
            .unwrap_or_default();
        let s = score_passages(text, with, without);
        all.add(s);
        rows.push((p, s, with, without, text));
    }
    println!(
        "passages: F1 {:.4}  precision {:.4}  recall {:.4}  ({} pages; with: {} found, {} missing; \
         without: {} found, {} absent)",
        all.f1(),
        all.precision(),
        all.recall(),
        pages.len(),
        all.tp,
        all.fn_,
        all.fp,
        all.tn
    );
    let none = rows.iter().filter(|r| r.1.tp == 0 && r.1.fn_ > 0).count();
    println!("pages with none of the with passages: {none}");
    // Worst first: most main-text passages lost, then most boilerplate let through.
    rows.sort_by_key(|r| (std::cmp::Reverse(r.1.fn_), std::cmp::Reverse(r.1.fp)));
    println!("worst {worst}:");
    for (p, s, with, without, text) in rows.iter().take(worst) {
        if s.fn_ == 0 && s.fp == 0 {
            break;
        }
        println!(
            "  {}  with {}/{}  without found {}/{}",
            p.id,
            s.tp,
            with.len(),
            s.fp,
            without.len()
        );
        let norm = paycall::doc::score::passage_text(text);
        for w in with.iter() {
            if !norm.contains(&paycall::doc::score::passage_text(w)) {
                println!("    missing: {w}");
            }
        }
        for w in without.iter() {
            if norm.contains(&paycall::doc::score::passage_text(w)) {
                println!("    leaked:  {w}");
            }
        }
    }
}
