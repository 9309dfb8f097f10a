//! `paycall markdown` on local files: one page, or many pages in one process.
//!
//! A corpus run through one process per page is dominated by process starts (issue 13 measured
//! ~73 pages/s either way); batch mode reads every input once, converts on all cores and writes
//! one output per input, so what the command shows is the extractor's own speed.
//!
//! Parameters (the command's flags):
//! - sources: files and directories. A directory contributes every regular, non-hidden file
//!   under it (at most [`MAX_DEPTH`] levels, [`MAX_FILES`] files in all).
//! - `--out DIR`: where outputs go. A file argument becomes `DIR/<name>.md`; a file found under
//!   a directory argument keeps its path relative to that directory (`DIR/a/b.md`). Two inputs
//!   that would write the same output are refused before anything runs.
//! - `--jobs N`: worker threads (default: the machine's cores).
//!
//! What a file is, is told by its name, as the single-file command always did: `.md`, `.json`,
//! `.txt` pass through like those content types on /api/fetch; anything else is HTML. A
//! trailing `.gz` is decompressed first (at most [`MAX_GUNZIPPED`] bytes). Each page is decoded
//! and extracted exactly as /api/fetch does (`page_text::decode_text`, the service's node
//! budget) with a per-page deadline of [`PAGE_DEADLINE`].

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use url::Url;

use super::markdown::{html_to_markdown_within, passthrough, MarkdownDoc};
use super::page_text::{decode_text, kind_of, Kind};
use super::parse::Budget;

/// Directory levels walked below a directory argument.
pub const MAX_DEPTH: usize = 32;
/// Inputs one run takes (a guard against pointing the command at `/`).
pub const MAX_FILES: usize = 1_000_000;
/// Largest decompressed `.gz` input.
pub const MAX_GUNZIPPED: u64 = 64 * 1024 * 1024;
/// Time one page may take to parse (the service's is 8 s; a local run is allowed more).
pub const PAGE_DEADLINE: Duration = Duration::from_secs(20);

/// One input and where its output goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    pub input: PathBuf,
    pub output: PathBuf,
}

/// The content type a local file is read as, from its name (a trailing `.gz` ignored).
pub fn content_type_for(name: &str) -> &'static str {
    let name = name.strip_suffix(".gz").unwrap_or(name);
    let ext = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    match ext.as_deref() {
        Some("md") | Some("markdown") => "text/markdown",
        Some("json") => "application/json",
        Some("txt") => "text/plain",
        _ => "text/html",
    }
}

/// The output path for `rel` (an input's path relative to its argument): under `out`, with a
/// trailing `.gz` and the last extension replaced by `.md`.
pub fn output_for(out: &Path, rel: &Path) -> PathBuf {
    let mut rel = rel.to_path_buf();
    if rel.extension().is_some_and(|e| e == "gz") {
        rel.set_extension("");
    }
    rel.set_extension("md");
    out.join(rel)
}

/// Every job for `sources`, in a stable order; an error names the problem (unreadable argument,
/// too many files, two inputs with one output, an output that would overwrite its input).
pub fn plan(sources: &[PathBuf], out: &Path) -> Result<Vec<Job>, String> {
    let mut jobs = Vec::new();
    for src in sources {
        let meta =
            std::fs::metadata(src).map_err(|e| format!("cannot read {}: {e}", src.display()))?;
        if meta.is_dir() {
            let mut files = walk(src)?;
            files.sort();
            for f in files {
                let rel = f.strip_prefix(src).unwrap_or(&f).to_path_buf();
                jobs.push(Job {
                    output: output_for(out, &rel),
                    input: f,
                });
            }
        } else {
            let name = src.file_name().map(PathBuf::from).unwrap_or_default();
            jobs.push(Job {
                output: output_for(out, &name),
                input: src.clone(),
            });
        }
        if jobs.len() > MAX_FILES {
            return Err(format!("more than {MAX_FILES} inputs"));
        }
    }
    if jobs.is_empty() {
        return Err("no input files".into());
    }
    check_outputs(&jobs)?;
    Ok(jobs)
}

/// Refuses two jobs writing one file, and a job whose output is its own input.
pub fn check_outputs(jobs: &[Job]) -> Result<(), String> {
    let mut seen: std::collections::HashMap<&Path, &Path> = std::collections::HashMap::new();
    for j in jobs {
        // Also under another spelling (`a.md --out sub/..`): the same file.
        if j.output == j.input || same_file(&j.input, &j.output) {
            return Err(format!("{} would overwrite itself", j.input.display()));
        }
        if let Some(first) = seen.insert(&j.output, &j.input) {
            return Err(format!(
                "{} and {} would both write {}",
                first.display(),
                j.input.display(),
                j.output.display()
            ));
        }
    }
    Ok(())
}

/// Regular, non-hidden files under `dir` (links followed), breadth first, bounded in depth
/// (which also ends a link loop) and count.
fn walk(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut files = Vec::new();
    let mut level = vec![dir.to_path_buf()];
    for _ in 0..=MAX_DEPTH {
        let mut next = Vec::new();
        for d in &level {
            let entries =
                std::fs::read_dir(d).map_err(|e| format!("cannot read {}: {e}", d.display()))?;
            for e in entries.flatten() {
                if e.file_name().to_string_lossy().starts_with('.') {
                    continue;
                }
                // Links are followed (a corpus is often a folder of links to the pages).
                let Ok(ft) = std::fs::metadata(e.path()).map(|m| m.file_type()) else {
                    continue;
                };
                if ft.is_dir() {
                    next.push(e.path());
                } else if ft.is_file() {
                    files.push(e.path());
                    if files.len() > MAX_FILES {
                        return Err(format!(
                            "more than {MAX_FILES} files under {}",
                            dir.display()
                        ));
                    }
                }
            }
        }
        if next.is_empty() {
            break;
        }
        level = next;
    }
    Ok(files)
}

/// A page's bytes as the command reads them: gunzipped when the name ends in `.gz`.
pub fn read_input(path: &Path) -> Result<Vec<u8>, String> {
    let raw = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if path.extension().is_none_or(|e| e != "gz") {
        return Ok(raw);
    }
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(&raw[..])
        .take(MAX_GUNZIPPED + 1)
        .read_to_end(&mut out)
        .map_err(|e| format!("cannot gunzip {}: {e}", path.display()))?;
    if out.len() as u64 > MAX_GUNZIPPED {
        return Err(format!(
            "{} unpacks to more than {MAX_GUNZIPPED} bytes",
            path.display()
        ));
    }
    Ok(out)
}

/// What one input became.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Converted {
    /// An HTML page's main content.
    Page(MarkdownDoc),
    /// Text, JSON or markdown, passed through as /api/fetch does.
    Text(String),
}

impl Converted {
    pub fn body(&self) -> &str {
        match self {
            Converted::Page(d) => &d.markdown,
            Converted::Text(t) => t,
        }
    }
}

/// One body → what /api/fetch makes of it: decoded (BOM, charset, meta, detection), then HTML
/// extracted under the service's node budget and `deadline`, other kinds passed through. The
/// error is the reason, with the refusal's code for a page over the budget.
pub fn convert(
    body: &[u8],
    content_type: &str,
    base: Option<&Url>,
    deadline: Instant,
) -> Result<Converted, String> {
    let text = decode_text(content_type, body);
    // The route's own reading of the content type (sniffed when absent), so the command and
    // /api/fetch never disagree on what a body is.
    match kind_of(content_type, body) {
        Some(Kind::Html) => {
            let budget = Budget::default().with_deadline(deadline);
            html_to_markdown_within(&text, base, &budget)
                .map(Converted::Page)
                .map_err(|e| format!("{e} ({})", e.code()))
        }
        Some(kind) => Ok(Converted::Text(
            passthrough(kind.mime(), &text).unwrap_or(text),
        )),
        None => Err(format!(
            "`{content_type}` is not HTML, text, JSON or markdown"
        )),
    }
}

/// A local file converted: links resolve against its `file://` URL, as in single-file mode.
pub fn convert_file(path: &Path) -> Result<Converted, String> {
    convert_read(path, &read_input(path)?)
}

fn convert_read(path: &Path, body: &[u8]) -> Result<Converted, String> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    let base = std::fs::canonicalize(path)
        .ok()
        .and_then(|p| Url::from_file_path(p).ok());
    convert(
        body,
        content_type_for(&name),
        base.as_ref(),
        Instant::now() + PAGE_DEADLINE,
    )
}

/// What a batch run did.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub pages: usize,
    /// Inputs that could not be read, converted or written, with the reason.
    pub failed: Vec<(PathBuf, String)>,
    /// Input bytes read (after decompression).
    pub bytes: u64,
    pub elapsed: Duration,
}

impl Report {
    pub fn pages_per_sec(&self) -> f64 {
        self.pages as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// One line for the operator: how many, how fast.
    pub fn summary(&self, workers: usize) -> String {
        format!(
            "{} pages ({} failed), {:.1} MB in {:.3} s: {:.1} pages/s on {workers} threads",
            self.pages,
            self.failed.len(),
            self.bytes as f64 / 1e6,
            self.elapsed.as_secs_f64(),
            self.pages_per_sec()
        )
    }
}

/// Runs `jobs` on `workers` threads (each takes the next job until none is left), writing each
/// output and creating its folder. A failure is recorded and the run goes on. The largest
/// inputs go first ([`largest_first`]).
pub fn run(jobs: &[Job], workers: usize) -> Report {
    let start = Instant::now();
    let sizes: Vec<u64> = jobs
        .iter()
        .map(|j| std::fs::metadata(&j.input).map_or(0, |m| m.len()))
        .collect();
    let order = largest_first(&sizes);
    let next = AtomicUsize::new(0);
    let bytes = AtomicUsize::new(0);
    let failed = Mutex::new(Vec::new());
    let workers = workers.clamp(1, jobs.len().max(1));
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(job) = order.get(i).map(|&j| &jobs[j]) else {
                    break;
                };
                if let Err(e) = run_one(job, &bytes) {
                    failed
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push((job.input.clone(), e));
                }
            });
        }
    });
    let mut failed = failed.into_inner().unwrap_or_else(|p| p.into_inner());
    failed.sort();
    Report {
        pages: jobs.len(),
        failed,
        bytes: bytes.into_inner() as u64,
        elapsed: start.elapsed(),
    }
}

/// Job indices by input size, largest first (ties in plan order). Workers take jobs in this
/// order, so the run does not end with one core converting the biggest page while the others
/// idle (longest-processing-time-first; measured in docs/doc.md, "Batch mode"). Sizes stand
/// in for conversion time: a `.gz` counts by its compressed size, an unreadable input as 0.
pub fn largest_first(sizes: &[u64]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..sizes.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(sizes[i]));
    order
}

fn run_one(job: &Job, bytes: &AtomicUsize) -> Result<(), String> {
    let body = read_input(&job.input)?;
    bytes.fetch_add(body.len(), Ordering::Relaxed);
    let out = convert_read(&job.input, &body)?;
    if let Some(dir) = job.output.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let mut text = out.body().to_string();
    text.push('\n');
    // A new file rather than the old one truncated: ext4 flushes a file rewritten in place at
    // close (`auto_da_alloc`), which made a re-run into the same folder ~12 % slower by wall
    // time (0.44 s → 0.50 s for 181 pages). `create_new`: whatever appears at the path after
    // the unlink (a symlink) is refused, never written through. (An input that is its own
    // output is refused by `check_outputs`, before anything runs.)
    let _ = std::fs::remove_file(&job.output);
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&job.output)
        .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()))
        .map_err(|e| format!("cannot write {}: {e}", job.output.display()))
}

/// Whether two paths name one existing file (device and inode), whatever their spelling.
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn largest_inputs_go_first_and_ties_keep_plan_order() {
        assert_eq!(largest_first(&[5, 900, 5, 0, 70]), vec![1, 4, 0, 2, 3]);
        assert_eq!(largest_first(&[]), Vec::<usize>::new());
    }

    #[test]
    fn names_tell_the_kind() {
        assert_eq!(content_type_for("a.html"), "text/html");
        assert_eq!(content_type_for("a.html.gz"), "text/html");
        assert_eq!(content_type_for("noext"), "text/html");
        assert_eq!(content_type_for("notes.MD"), "text/markdown");
        assert_eq!(content_type_for("data.json.gz"), "application/json");
        assert_eq!(content_type_for("a.txt"), "text/plain");
    }

    #[test]
    fn outputs_replace_the_extension_and_keep_folders() {
        let out = Path::new("/o");
        assert_eq!(
            output_for(out, Path::new("a.html")),
            PathBuf::from("/o/a.md")
        );
        assert_eq!(
            output_for(out, Path::new("x/a.html.gz")),
            PathBuf::from("/o/x/a.md")
        );
        assert_eq!(
            output_for(out, Path::new("README")),
            PathBuf::from("/o/README.md")
        );
        assert_eq!(
            output_for(out, Path::new("v1.2.htm")),
            PathBuf::from("/o/v1.2.md")
        );
    }

    #[test]
    fn one_output_per_input_or_refused() {
        let job = |i: &str, o: &str| Job {
            input: i.into(),
            output: o.into(),
        };
        assert!(check_outputs(&[job("a.html", "o/a.md"), job("b.html", "o/b.md")]).is_ok());
        let e = check_outputs(&[job("a.html", "o/a.md"), job("a.htm", "o/a.md")]).unwrap_err();
        assert!(e.contains("a.htm") && e.contains("o/a.md"), "{e}");
        assert!(check_outputs(&[job("o/a.md", "o/a.md")]).is_err());
    }

    #[test]
    fn converts_like_the_route() {
        let far = Instant::now() + PAGE_DEADLINE;
        let html = b"<html><head><meta charset=\"windows-1252\"><title>T</title></head><body>\
            <article><p>Caf\xe9 au lait is coffee with hot milk, served in a bowl in France, \
            and a cup almost everywhere else; it is older than the espresso drinks.</p>\
            </article></body></html>";
        let Converted::Page(doc) = convert(html, "text/html", None, far).unwrap() else {
            panic!("an HTML page is extracted");
        };
        assert!(doc.markdown.contains("Café au lait"), "{}", doc.markdown);
        assert_eq!(
            convert(b"{\"a\":1}", "application/json", None, far).unwrap(),
            Converted::Text("```json\n{\n  \"a\": 1\n}\n```".into())
        );
        assert!(convert(b"x", "image/png", None, far).is_err());
        // A deadline already past refuses the page with the route's code.
        let e = convert(&[b'<'; 40_000], "text/html", None, Instant::now()).unwrap_err();
        assert!(e.contains("parse_timeout"), "{e}");
    }

    #[test]
    fn a_batch_writes_one_output_per_input_and_reports_failures() {
        let dir = std::env::temp_dir().join(format!("paycall-batch-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let src = dir.join("in");
        std::fs::create_dir_all(src.join("sub")).unwrap();
        std::fs::write(
            src.join("one.html"),
            "<p>The first page says one thing.</p>",
        )
        .unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, b"<p>The second page, gzipped.</p>").unwrap();
        std::fs::write(src.join("sub/two.html.gz"), gz.finish().unwrap()).unwrap();
        std::fs::write(src.join("sub/bad.html.gz"), b"not gzip").unwrap();
        std::fs::write(src.join(".hidden.html"), "<p>skipped</p>").unwrap();
        let out = dir.join("out");
        let jobs = plan(std::slice::from_ref(&src), &out).unwrap();
        assert_eq!(jobs.len(), 3, "{jobs:?}");
        let report = run(&jobs, 2);
        assert_eq!(report.pages, 3);
        assert_eq!(report.failed.len(), 1, "{:?}", report.failed);
        assert!(report.failed[0].0.ends_with("sub/bad.html.gz"));
        let one = std::fs::read_to_string(out.join("one.md")).unwrap();
        assert!(one.contains("The first page says one thing."), "{one}");
        let two = std::fs::read_to_string(out.join("sub/two.md")).unwrap();
        assert!(two.contains("The second page, gzipped."), "{two}");
        assert!(!out.join("sub/bad.md").exists());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn an_input_that_is_its_own_output_under_another_spelling_is_kept() {
        let dir = std::env::temp_dir().join(format!("paycall-batch-self-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let input = dir.join("a.md");
        std::fs::write(&input, "# kept as it was\n").unwrap();
        // `dir/sub/../a.md`: paths compare by components, so `dir/./a.md` would already equal
        // the input's path; `..` does not.
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        let err = plan(std::slice::from_ref(&input), &dir.join("sub").join("..")).unwrap_err();
        assert!(err.contains("would overwrite itself"), "{err}");
        assert_eq!(
            std::fs::read_to_string(&input).unwrap(),
            "# kept as it was\n"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
