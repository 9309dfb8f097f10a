//! /api/extract's blocking work, timed: parse + page facts + fields on ordinary pages, and the
//! hostile pages and selectors the 2 s budget must stop. Prints figures; asserts nothing.
//!
//! Run: `cargo bench --bench extract` (optionally a directory of .html files as the argument:
//! each is timed as an ordinary page).

use paycall::doc::fields::{evaluate, parse_spec};
use paycall::doc::page::Page;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const BUDGET: Duration = Duration::from_secs(2);

fn fixture() -> String {
    std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/pages/extract/article.html"),
    )
    .expect("fixture page")
}

/// Median of `runs` timings of `f`.
fn time(runs: usize, mut f: impl FnMut()) -> Duration {
    let mut v: Vec<Duration> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .collect();
    v.sort();
    v[v.len() / 2]
}

fn ordinary(name: &str, html: &str, fields: &Value) {
    let specs = parse_spec(fields.as_object().unwrap()).unwrap();
    let base = url::Url::parse("https://example.com/a/b").unwrap();
    let runs = if html.len() > 100_000 { 15 } else { 60 };
    let parse = time(runs, || {
        std::hint::black_box(Page::parse(html, Some(&base), &Default::default()).unwrap());
    });
    let page = Page::parse(html, Some(&base), &Default::default()).unwrap();
    let facts = time(runs, || {
        std::hint::black_box(page.facts());
    });
    let eval = time(runs, || {
        std::hint::black_box(evaluate(&page, &specs, Instant::now() + BUDGET));
    });
    let total = parse + facts + eval;
    println!(
        "{name:<28} {:>8} B  parse {:>9.2?}  facts {:>9.2?}  {} fields {:>9.2?}  total {:>9.2?}  {:>6.1} MB/s",
        html.len(),
        parse,
        facts,
        specs.len(),
        eval,
        total,
        html.len() as f64 / total.as_secs_f64() / 1e6
    );
}

fn hostile(name: &str, html: &str, fields: &Value) {
    let specs = parse_spec(fields.as_object().unwrap()).unwrap();
    let t = Instant::now();
    let page = Page::parse(html, None, &Default::default()).unwrap();
    let parsed = t.elapsed();
    let _ = page.facts();
    let r = evaluate(&page, &specs, t + BUDGET);
    let took = t.elapsed();
    let codes: Vec<String> = r
        .iter()
        .map(|(k, v)| match v {
            Ok(_) => format!("{k}=ok"),
            Err(e) => format!("{k}={}", e.code()),
        })
        .collect();
    println!(
        "{name:<28} {:>8} B  parse {:>9.2?}  end {:>9.2?} (over budget by {:>8.2?})  {}",
        html.len(),
        parsed,
        took,
        took.saturating_sub(BUDGET),
        codes.join(" ")
    );
}

fn main() {
    let article = fixture();
    let typical = json!({
        "title": "h1",
        "lead": {"selector": "p.lead", "attr": "html"},
        "harbours": {"selector": "li.harbour a", "attr": "href", "all": true},
        "codes": {"selector": "li[data-code]", "attr": "data-code", "all": true, "limit": 10},
        "tall": "li:has(.height):nth-child(3) .height"
    });
    println!("== ordinary pages (median)");
    ordinary("fixture article", &article, &typical);
    // ~200 KB: the article's main part repeated up to the size cap.
    let main_start = article.find("<main>").unwrap();
    let main_end = article.find("</main>").unwrap() + 7;
    let mut big = article[..main_start].to_string();
    while big.len() < 195_000 {
        big.push_str(&article[main_start..main_end]);
    }
    big.push_str("</body></html>");
    ordinary("article x90 (200 KB)", &big, &typical);
    if let Some(dir) = std::env::args().nth(1).filter(|a| !a.starts_with('-')) {
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .expect("a readable directory")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "html"))
            .collect();
        files.sort();
        for p in files.iter().take(50) {
            let html = String::from_utf8_lossy(&std::fs::read(p).unwrap()).into_owned();
            let mut cut = html.len().min(200_000);
            while !html.is_char_boundary(cut) {
                cut -= 1;
            }
            let html = &html[..cut];
            ordinary(
                &p.file_name().unwrap().to_string_lossy(),
                html,
                &json!({"h1": "h1", "links": {"selector": "a", "attr": "href", "all": true}}),
            );
        }
    }

    println!("== hostile pages and selectors (budget {BUDGET:?})");
    let mut wide = String::from("<html><body>");
    wide.push_str(&"<div>".repeat(200));
    while wide.len() < 195_000 {
        wide.push_str("<i class=a></i>");
    }
    hostile(
        "19k siblings, quadratic :has",
        &wide,
        &json!({"q": "i:has(~ :nth-last-child(-n+0))", "after": "i"}),
    );
    hostile(
        "19k siblings, :not chains",
        &wide,
        &json!({"q": "*:has(:not(* * * * * * * * * * *) :not(* * * * * * * * * * * *) i.zz)"}),
    );
    hostile(
        "19k siblings, nth soup",
        &wide,
        &json!({"q": "i:nth-child(n+20000):nth-last-child(n+20000):nth-of-type(n+20000)"}),
    );
    let mut attrs = String::from("<html><body><p ");
    let mut k = 0;
    while attrs.len() < 195_000 {
        attrs.push_str(&format!("a{k} "));
        k += 1;
    }
    attrs.push_str(">x</p>");
    hostile(
        "28k attributes on one tag",
        &attrs,
        &json!({"p": "p[a255]"}),
    );
    let deep = format!("<body>{}x", "<div>".repeat(18_000));
    hostile("18k nested divs", &deep, &json!({"x": "div"}));
}
