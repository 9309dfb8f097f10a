//! docs/ says what the service runs: each paid route's reference page (docs/routes/<name>.md) is
//! what `paycall docs` generates from the shipped routes.yaml, pipelines/ and stages; the README
//! links every route to its page; every relative link in README.md and docs/ names a file that
//! exists; and nothing points at a document that is not in the repository.

use regex::Regex;
use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn each_paid_route_has_its_generated_page_and_it_is_current() {
    let app = paycall::server::reference::docs_app(&root().join("routes.yaml"))
        .unwrap_or_else(|e| panic!("{e}"));
    let pages = paycall::server::reference::pages(&app);
    assert_eq!(pages.len(), 14, "one page per paid route");
    let mut stale = Vec::new();
    for (name, text) in &pages {
        let file = root().join("docs/routes").join(name);
        match std::fs::read_to_string(&file) {
            Ok(on_disk) if on_disk == *text => {}
            Ok(_) => stale.push(format!("{} differs", file.display())),
            Err(e) => stale.push(format!("{}: {e}", file.display())),
        }
        for section in [
            "## Parameters",
            "## Answer",
            "## Errors",
            "## Billing",
            "## Examples",
        ] {
            assert!(text.contains(section), "{name} has no {section}");
        }
        assert!(text.contains("curl -i "), "{name}: a curl example");
        assert!(
            text.contains("node tests/e2e/pay.mjs"),
            "{name}: a paid call"
        );
    }
    assert!(
        stale.is_empty(),
        "out of date (run `cargo run -- docs`):\n{}",
        stale.join("\n")
    );
    let on_disk = std::fs::read_dir(root().join("docs/routes"))
        .unwrap()
        .count();
    assert_eq!(on_disk, pages.len(), "no page for a route that is gone");

    // The README's table links each route to its reference page.
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    for entry in app.routes.iter().filter(|r| r.spec.is_paid()) {
        let row = readme
            .lines()
            .find(|l| l.starts_with(&format!("| {} |", entry.spec.path)))
            .unwrap_or_else(|| panic!("no README row for {}", entry.spec.path));
        let page = paycall::server::reference::page_path(entry);
        assert!(row.contains(&format!("]({page})")), "{row}");
    }
}

#[test]
fn the_http_page_says_an_upstream_404_is_charged() {
    let text = std::fs::read_to_string(root().join("docs/routes/http.md")).unwrap();
    let billing = text.split("## Billing").nth(1).unwrap();
    assert!(
        billing.contains("delivered in a 200 record: charged"),
        "{billing}"
    );
    let fetch = std::fs::read_to_string(root().join("docs/routes/fetch.md")).unwrap();
    assert!(fetch.contains("is a 502 upstream_status error: not charged"));
}

fn files(dir: &Path, exts: &[&str], out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        if p.is_dir() {
            if !matches!(
                name.as_str(),
                "node_modules" | "target" | ".venv" | ".stack" | "fixtures"
            ) {
                files(&p, exts, out);
            }
        } else if exts.iter().any(|x| name.ends_with(x)) {
            out.push(p);
        }
    }
}

#[test]
fn nothing_points_at_a_document_outside_the_repository() {
    let mut all = vec![root().join("README.md"), root().join("routes.yaml")];
    for dir in ["src", "docs", "pipelines", "tests", "scripts", "benches"] {
        files(
            &root().join(dir),
            &[".rs", ".md", ".yaml", ".sh", ".mjs"],
            &mut all,
        );
    }
    // "spec 2.4", "spec §9", "the spec's limits", "DESIGN §9", "service-interface.md",
    // "reference §5.3" (the team's x402 notes, not in the repository).
    let outside = Regex::new(
        r"(?i)\bspec (§ ?)?\d|spec limits|the spec's|DESIGN ?§|DESIGN\.md|service-interface|\breference §|x402-v2-reference",
    )
    .unwrap();
    let this = file!().rsplit('/').next().unwrap();
    let mut found = Vec::new();
    for f in &all {
        if f.ends_with(this) {
            continue;
        }
        let text = std::fs::read_to_string(f).unwrap_or_default();
        for (i, l) in text.lines().enumerate() {
            if outside.is_match(l) {
                found.push(format!("{}:{}: {l}", f.display(), i + 1));
            }
        }
    }
    assert!(
        found.is_empty(),
        "point at docs/decisions.md instead:\n{}",
        found.join("\n")
    );
}

#[test]
fn every_relative_link_in_the_docs_names_a_file_that_exists() {
    let mut docs = vec![root().join("README.md")];
    files(&root().join("docs"), &[".md"], &mut docs);
    let link = Regex::new(r"\]\(([^)#:\s]+)(#[^)]*)?\)").unwrap();
    let mut broken = Vec::new();
    for f in &docs {
        let text = std::fs::read_to_string(f).unwrap();
        for c in link.captures_iter(&text) {
            let target = f.parent().unwrap().join(&c[1]);
            if !target.exists() {
                broken.push(format!("{}: {}", f.display(), &c[1]));
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}
