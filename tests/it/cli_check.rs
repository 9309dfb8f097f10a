//! The built binary's `check` and `routes` commands on fixture configs: located errors with a
//! fix hint and exit 1, exit 0 on a valid config, the catalogue printed.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const EVM: &str = "0xdF1D7b5C056D78F5aA14138a5695f7FF6F7aCFf3";
const SOL: &str = "FYA23SLFVpETuY13UnwTDJA9W6ipiL1sKXd6XJUhViA1";

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/config")
        .join(name)
        .join("routes.yaml")
}

/// Runs paycall with a clean environment: only the payTo variables (when `pay_to`) are set.
fn paycall(args: &[&str], config: &Path, pay_to: bool) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_paycall"));
    cmd.env_clear().arg("--config").arg(config).args(args);
    if pay_to {
        cmd.env("PAYCALL_EVM_PAY_TO", EVM)
            .env("PAYCALL_SOLANA_PAY_TO", SOL);
    }
    cmd.output().expect("run the paycall binary")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Finds `<file>:<line>:<col>:` in stderr and returns (line, col).
fn location(stderr: &str, file: &str) -> (usize, usize) {
    let at = stderr
        .find(&format!("{file}:"))
        .unwrap_or_else(|| panic!("no {file}:<line>:<col> in:\n{stderr}"));
    let rest = &stderr[at + file.len() + 1..];
    let mut parts = rest.splitn(3, ':');
    let line = parts.next().unwrap().parse().expect("line number");
    let col = parts.next().unwrap().parse().expect("column number");
    (line, col)
}

#[test]
fn check_on_a_broken_config_exits_1_with_the_location_and_a_fix() {
    let path = fixture("broken");
    let out = paycall(&["check"], &path, true);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let (line, col) = location(&stderr, "routes.yaml");
    let src = std::fs::read_to_string(&path).unwrap();
    let text_at = src.lines().nth(line - 1).unwrap();
    assert!(
        text_at.contains("pipeline: pingg"),
        "line {line} is `{text_at}`"
    );
    assert!(col >= 5, "column {col}");
    assert!(stderr.contains("unknown pipeline `pingg`"), "{stderr}");
    assert!(
        stderr.contains("fix: ") && stderr.contains("ping"),
        "a hint naming the known pipelines: {stderr}"
    );
    assert!(stderr.contains("1 problem(s)"), "{stderr}");
    assert!(
        out.stdout.is_empty(),
        "nothing on stdout: {}",
        text(&out.stdout)
    );
}

#[test]
fn check_on_an_unbuildable_chain_points_at_the_pipeline_file() {
    let path = fixture("bad-stage");
    let out = paycall(&["check"], &path, true);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let (line, _) = location(&stderr, "ping.yaml");
    let src = std::fs::read_to_string(path.parent().unwrap().join("pipelines/ping.yaml")).unwrap();
    assert!(
        src.lines().nth(line - 1).unwrap().contains("statuss"),
        "{stderr}"
    );
    assert!(stderr.contains("fix: "), "{stderr}");
}

#[test]
fn check_without_pay_to_names_the_variable_to_set() {
    let out = paycall(&["check"], &fixture("free"), false);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("PAYCALL_EVM_PAY_TO") && stderr.contains("PAYCALL_SOLANA_PAY_TO"),
        "{stderr}"
    );
    location(&stderr, "routes.yaml");
}

#[test]
fn check_on_a_valid_config_exits_0() {
    let out = paycall(&["check", "--stages"], &fixture("free"), true);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        stdout.contains("ok: 2 routes, 1 pipelines, 2 payment options"),
        "{stdout}"
    );
    assert!(
        stdout.lines().any(|l| l.starts_with("static_reply")),
        "stage list: {stdout}"
    );
}

#[test]
fn routes_prints_the_catalogue() {
    let out = paycall(&["routes"], &fixture("free"), true);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let mut lines = stdout.lines();
    let header = lines.next().unwrap();
    assert!(
        header.contains("PATH") && header.contains("PIPELINE"),
        "{header}"
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(
        rows,
        vec![
            vec!["/api/ping", "GET", "free", "-", "ping"],
            vec!["/api/echo", "POST", "free", "-", "ping"],
        ]
    );
}

/// Issue 21: `paycall markdown` on the 200 KB adoption-agency page took 10.4 GB and was killed
/// at 30 s. Now it stops at the node budget: exit 1 with the reason, in well under a second.
#[test]
fn markdown_refuses_a_page_whose_tree_would_outgrow_its_budget() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("adoption.html");
    std::fs::write(
        &page,
        paycall::doc::parse::adoption_agency_page(500, 199_997),
    )
    .unwrap();
    let t = std::time::Instant::now();
    let out = paycall(
        &["markdown", page.to_str().unwrap()],
        &fixture("free"),
        true,
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("html_too_complex"),
        "{}",
        text(&out.stderr)
    );
    assert!(
        t.elapsed() < std::time::Duration::from_secs(10),
        "{:?}",
        t.elapsed()
    );
}

/// Issue 13: batch mode. One process converts files and folders, one output per input (a
/// folder's layout kept, `.gz` unpacked); a page that fails is named and makes the exit code 1
/// while the others are still written; several sources without --out are refused.
#[test]
fn markdown_batch_writes_one_output_per_input() {
    let dir = tempfile::tempdir().unwrap();
    let (site, out) = (dir.path().join("site"), dir.path().join("out"));
    std::fs::create_dir_all(site.join("news")).unwrap();
    let article = |topic: &str| {
        format!(
            "<html><body><nav><a href=\"/\">Home</a></nav><article><p>The report on {topic} \
             was published this morning, and it says, in short, that the work goes on.</p>\
             </article></body></html>"
        )
    };
    std::fs::write(site.join("index.html"), article("harbours")).unwrap();
    std::fs::write(site.join("news/today.htm"), article("bridges")).unwrap();
    let lone = dir.path().join("lone.html");
    std::fs::write(&lone, article("tunnels")).unwrap();
    let ok = paycall(
        &[
            "markdown",
            "--out",
            out.to_str().unwrap(),
            site.to_str().unwrap(),
            lone.to_str().unwrap(),
        ],
        &fixture("free"),
        true,
    );
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok.stderr));
    assert!(
        text(&ok.stderr).contains("3 pages (0 failed)"),
        "{}",
        text(&ok.stderr)
    );
    for (file, topic) in [
        ("index.md", "harbours"),
        ("news/today.md", "bridges"),
        ("lone.md", "tunnels"),
    ] {
        let md = std::fs::read_to_string(out.join(file)).unwrap();
        assert!(
            md.contains(&format!("The report on {topic}")),
            "{file}: {md}"
        );
        assert!(!md.contains("Home"), "{file}: {md}");
    }

    std::fs::write(
        site.join("news/huge.html"),
        paycall::doc::parse::adoption_agency_page(500, 199_997),
    )
    .unwrap();
    let failed = paycall(
        &[
            "markdown",
            "--out",
            out.to_str().unwrap(),
            site.to_str().unwrap(),
        ],
        &fixture("free"),
        true,
    );
    let stderr = text(&failed.stderr);
    assert_eq!(failed.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("huge.html") && stderr.contains("html_too_complex"),
        "{stderr}"
    );
    assert!(out.join("news/today.md").is_file());

    let refused = paycall(
        &["markdown", lone.to_str().unwrap(), lone.to_str().unwrap()],
        &fixture("free"),
        true,
    );
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused.stderr));
    assert!(
        text(&refused.stderr).contains("--out"),
        "{}",
        text(&refused.stderr)
    );
}

#[test]
fn check_and_ledger_report_the_ledger_without_creating_it() {
    let db = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/config/free/paycall.db");
    let out = paycall(&["check"], &fixture("free"), true);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        stdout.contains("ledger: sqlite://") && stdout.contains("does not exist yet"),
        "{stdout}"
    );
    let out = paycall(&["ledger"], &fixture("free"), true);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("nothing was sold"),
        "{}",
        text(&out.stdout)
    );
    assert!(!db.exists(), "neither command creates the ledger");

    // A bad ledger URL is a located config error that says what to write.
    let dir = tempfile::tempdir().unwrap();
    let routes = std::fs::read_to_string(fixture("free")).unwrap();
    std::fs::create_dir_all(dir.path().join("pipelines")).unwrap();
    for e in std::fs::read_dir(fixture("free").parent().unwrap().join("pipelines")).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(
            &p,
            dir.path().join("pipelines").join(p.file_name().unwrap()),
        )
        .unwrap();
    }
    let path = dir.path().join("routes.yaml");
    std::fs::write(&path, routes).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_paycall"));
    let out = cmd
        .env_clear()
        .env("PAYCALL_EVM_PAY_TO", EVM)
        .env("PAYCALL_SOLANA_PAY_TO", SOL)
        .env("PAYCALL_LEDGER_URL", "mysql://u:hunter2@db/x")
        .arg("--config")
        .arg(&path)
        .arg("check")
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("PAYCALL_LEDGER_URL"), "{stderr}");
    assert!(
        stderr.contains("sqlite://"),
        "names what to write: {stderr}"
    );
    assert!(!stderr.contains("hunter2"), "never the password: {stderr}");
}

/// A copy of the shipped routes.yaml and pipelines/ (not static/) in a temp dir, one pipeline
/// file edited.
fn shipped_copy(pipeline_edit: Option<(&str, &str, &str)>) -> tempfile::TempDir {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("pipelines")).unwrap();
    for e in std::fs::read_dir(root.join("pipelines")).unwrap() {
        let p = e.unwrap().path();
        let mut text = std::fs::read_to_string(&p).unwrap();
        if let Some((file, from, to)) = pipeline_edit {
            if p.file_name().unwrap() == file {
                assert!(text.contains(from), "{file} has no `{from}`");
                text = text.replacen(from, to, 1);
            }
        }
        std::fs::write(
            dir.path().join("pipelines").join(p.file_name().unwrap()),
            text,
        )
        .unwrap();
    }
    std::fs::copy(root.join("routes.yaml"), dir.path().join("routes.yaml")).unwrap();
    dir
}

fn copy_static(dir: &Path) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::create_dir(dir.join("static")).unwrap();
    for e in std::fs::read_dir(root.join("static")).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, dir.join("static").join(p.file_name().unwrap())).unwrap();
    }
}

#[test]
fn a_config_elsewhere_without_static_names_each_file_and_where_it_was_looked_for() {
    let dir = shipped_copy(None);
    let out = paycall(&["check"], &dir.path().join("routes.yaml"), true);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let looked = dir.path().join("static/harbour-guide.html");
    assert!(
        stderr.contains("file `static/harbour-guide.html` not found")
            && stderr.contains(&format!("looked for {}", looked.display())),
        "{stderr}"
    );
    assert!(stderr.contains("static/paycall-sample.pdf"), "{stderr}");
    assert!(stderr.contains("beside the routes.yaml"), "{stderr}");
    assert!(!stderr.contains("module documentation"), "{stderr}");
    // One error per missing file: not again for every route whose demo reads it.
    assert!(stderr.contains("2 problem(s)"), "{stderr}");
}

#[test]
fn a_stage_typo_is_one_error_with_a_did_you_mean() {
    let dir = shipped_copy(Some(("http.yaml", "- stage: fetch", "- stage: fecth")));
    copy_static(dir.path());
    let out = paycall(&["check"], &dir.path().join("routes.yaml"), true);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("unknown stage `fecth`"), "{stderr}");
    assert!(stderr.contains("did you mean `fetch`?"), "{stderr}");
    assert!(
        !stderr.contains("which no earlier stage provides"),
        "a cascade: {stderr}"
    );
    assert!(stderr.contains("1 problem(s)"), "{stderr}");
}

#[test]
fn routes_needs_no_pay_to_and_aligns_its_columns() {
    let out = paycall(
        &["routes"],
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("routes.yaml"),
        false,
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 17, "a header and 16 routes: {stdout}");
    // Every column starts where its header does.
    let header = lines[0];
    let starts: Vec<usize> = ["METHODS", "USD", "ATOMIC", "PIPELINE"]
        .iter()
        .map(|h| header.find(h).unwrap())
        .collect();
    for l in &lines[1..] {
        for &s in &starts {
            assert!(
                l.len() > s && l.as_bytes()[s - 1] == b' ' && l.as_bytes()[s] != b' ',
                "misaligned at column {s}:\n{header}\n{l}"
            );
        }
    }
    assert!(stdout.contains("/api/bazaar-check"), "{stdout}");
}

/// `paycall routes | head -1`: the reader is gone before paycall writes. Before, `println!`
/// panicked ("failed printing to stdout: Broken pipe", exit 101); a command-line tool ends quietly
/// on SIGPIPE instead, like any Unix tool in a pipeline.
#[test]
fn routes_into_a_closed_pipe_ends_quietly() {
    use std::os::fd::FromRawFd;
    use std::os::unix::process::ExitStatusExt;
    let mut fds = [0; 2];
    // SAFETY: a fresh pipe; the read end is closed at once, the write end handed to the child.
    let write_end = unsafe {
        assert_eq!(libc::pipe(fds.as_mut_ptr()), 0);
        libc::close(fds[0]);
        std::process::Stdio::from_raw_fd(fds[1])
    };
    let out = Command::new(env!("CARGO_BIN_EXE_paycall"))
        .env_clear()
        .arg("--config")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("routes.yaml"))
        .arg("routes")
        .stdout(write_end)
        .stderr(std::process::Stdio::piped())
        .output()
        .expect("run the paycall binary");
    let stderr = text(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGPIPE),
        "{:?} {stderr}",
        out.status
    );
}
