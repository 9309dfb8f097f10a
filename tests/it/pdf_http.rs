//! /api/pdf end to end with the SHIPPED routes.yaml and pipelines: a real local chain with the
//! official x402 facilitator and client (tests/e2e), a local upstream on 127.0.0.1 serving the
//! generated corpus (fixtures/pdf), canaries on 127.0.0.2.
//!
//! Billing: charged only when text is returned (settled once, the price moved on-chain); every
//! refusal — 400 input, 413 over 10 MB (declared or streamed), 415 not a PDF, 422 encrypted /
//! corrupt / image-only, 502, 504 download or parse timeout — is checked against what the
//! facilitator saw: no settle call, nothing moved. The demo twin reads the service's own sample.

use crate::support;
use support::shipped;
use support::shipped::send_fresh;
use support::{stack, upstream};

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use stack::LocalStack;
use warp::http::{HeaderValue, StatusCode};
use warp::reply::Response;
use warp::Filter;

use support::server::enc;

/// A copy of the shipped configuration (routes.yaml, pipelines/, static/) with `edit` applied
/// to pipelines/pdf.yaml.
fn shipped_copy(edit: impl Fn(String) -> String) -> tempfile::TempDir {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(root.join("routes.yaml"), dir.path().join("routes.yaml")).unwrap();
    std::fs::create_dir(dir.path().join("pipelines")).unwrap();
    for e in std::fs::read_dir(root.join("pipelines")).unwrap().flatten() {
        let mut text = std::fs::read_to_string(e.path()).unwrap();
        if e.file_name() == "pdf.yaml" {
            text = edit(text);
        }
        std::fs::write(dir.path().join("pipelines").join(e.file_name()), text).unwrap();
    }
    std::fs::create_dir(dir.path().join("static")).unwrap();
    for e in std::fs::read_dir(root.join("static")).unwrap().flatten() {
        std::fs::copy(e.path(), dir.path().join("static").join(e.file_name())).unwrap();
    }
    dir
}

async fn paycall_at(routes: PathBuf, stack: &LocalStack) -> support::server::TestServer {
    shipped::start(shipped::config(&routes, shipped::vars(stack, &[])))
        .await
        .0
}

struct PdfUpstream {
    base: String,
    hits: Arc<AtomicUsize>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl PdfUpstream {
    fn url(&self, p: &str) -> String {
        format!("{}{p}", self.base)
    }
}

fn resp(status: u16, ct: &str, body: impl Into<Bytes>) -> Response {
    let mut r = Response::new(body.into().into());
    *r.status_mut() = StatusCode::from_u16(status).unwrap();
    r.headers_mut()
        .insert("content-type", HeaderValue::from_str(ct).unwrap());
    r
}

/// Serves fixtures/pdf/<path> under /f/, generated files under /g/<name>, and misbehaviours.
async fn pdf_upstream(generated: HashMap<&'static str, Vec<u8>>) -> PdfUpstream {
    let hits = Arc::new(AtomicUsize::new(0));
    let h = hits.clone();
    let count = warp::any()
        .map(move || {
            h.fetch_add(1, Ordering::SeqCst);
        })
        .untuple_one();
    let generated = Arc::new(generated);
    let files = warp::path("f")
        .and(warp::path::tail())
        .map(|tail: warp::path::Tail| {
            match std::fs::read(support::pdf::fixtures().join(tail.as_str())) {
                Ok(b) => resp(200, "application/pdf", b),
                Err(_) => resp(404, "text/plain", "no such file"),
            }
        });
    let gen =
        warp::path!("g" / String).map(move |name: String| match generated.get(name.as_str()) {
            Some(b) => resp(200, "application/pdf", b.clone()),
            None => resp(404, "text/plain", "no such file"),
        });
    let html = warp::path!("html").map(|| {
        resp(
            200,
            "text/html",
            "<!doctype html><html><body><p>Not a PDF</p></body></html>",
        )
    });
    // The 10 MB cap at its edge: one byte over is refused from the declared length; exactly
    // 10,000,000 bytes passes the cap and is judged as a PDF (this one has no body: corrupt).
    let declared_big = warp::path!("declared-big").map(|| {
        let mut body = b"%PDF-1.7\n".to_vec();
        body.resize(10_000_001, b' ');
        resp(200, "application/pdf", body)
    });
    let at_cap = warp::path!("at-cap").map(|| {
        let mut body = b"%PDF-1.7\n".to_vec();
        body.resize(10_000_000, b' ');
        resp(200, "application/pdf", body)
    });
    let redirect = warp::path!("redirect" / u32).map(|n: u32| {
        let to = if n <= 1 {
            "/f/corpus/two-column.pdf".to_string()
        } else {
            format!("/redirect/{}", n - 1)
        };
        let mut r = resp(302, "text/plain", "");
        r.headers_mut()
            .insert("location", HeaderValue::from_str(&to).unwrap());
        r
    });
    let missing = warp::path!("missing").map(|| resp(404, "text/plain", "gone"));
    let slow = warp::path!("slow").then(|| async {
        tokio::time::sleep(Duration::from_secs(30)).await;
        resp(200, "application/pdf", "%PDF-1.7\n")
    });
    let routes = count.and(
        files
            .or(gen)
            .unify()
            .or(html)
            .unify()
            .or(declared_big)
            .unify()
            .or(at_cap)
            .unify()
            .or(redirect)
            .unify()
            .or(missing)
            .unify()
            .or(slow)
            .unify(),
    );
    let (addr, tx) = support::net::serve(routes).await;
    PdfUpstream {
        base: format!("http://{addr}"),
        hits,
        _stop: tx,
    }
}

use support::server::send_signed;

fn known_lines(name: &str) -> Vec<String> {
    std::fs::read_to_string(support::pdf::fixtures().join(format!("corpus/{name}.txt")))
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pdf_is_paid_for_text_and_never_for_a_refusal() {
    let stack = LocalStack::start();
    let canary = upstream::canary("127.0.0.2").await;
    let up = pdf_upstream(HashMap::new()).await;
    let streamed_big = upstream::chunked(10_000_001).await;
    let routes = Path::new(env!("CARGO_MANIFEST_DIR")).join("routes.yaml");
    let paycall = paycall_at(routes, &stack).await;
    let base = paycall.url("/api/pdf");

    // Unpaid: 402 with the price; no download.
    let url = format!("{base}?url={}", enc(&up.url("/f/corpus/two-column.pdf")));
    let r = support::server::client().get(&url).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 402);
    assert_eq!(up.hits.load(Ordering::SeqCst), 0);
    assert_eq!(stack.verify_calls() + stack.settle_calls(), 0);

    // Paid: text per page in column order, metadata, charged once.
    let paid = stack.pay_async(&url, "GET", None).await;
    assert_eq!(paid.status, 200, "{:?}", paid.body);
    let b = &paid.body;
    assert_eq!(b["source"], "pdf");
    assert_eq!(b["priced"]["amountAtomic"], "20000");
    assert_eq!(b["title"], "Two-column article");
    assert_eq!(b["author"], "Paycall Test Corpus");
    assert_eq!(b["metadata"]["producer"], "fpdf2");
    assert_eq!(b["pageCount"], 2);
    assert_eq!(b["pagesReturned"], 2);
    assert_eq!(b["truncated"], false);
    let p1 = b["pages"][0]["text"].as_str().unwrap();
    assert_eq!(b["pages"][0]["page"], 1);
    let lines = known_lines("two-column");
    // The page's left column ends before its right column begins.
    let l_last = lines
        .iter()
        .position(|l| l.starts_with("A study") && l.ends_with("part 2"))
        .unwrap()
        - 1;
    assert!(
        p1.contains(&lines[1]) && p1.contains(&lines[l_last]),
        "{p1}"
    );
    let left_col_end = p1.find(&lines[1]).unwrap();
    assert!(left_col_end < p1.find(&lines[l_last]).unwrap());
    assert_eq!(paid.buyer_spent(), 20_000);
    assert_eq!(paid.pay_to_received(), 20_000);
    assert_eq!(stack.settle_calls(), 1);

    // Paid, pages=1, through three redirects (the limit).
    stack.reset_calls();
    let url1 = format!("{base}?pages=1&url={}", enc(&up.url("/redirect/3")));
    let paid = stack.pay_async(&url1, "GET", None).await;
    assert_eq!(paid.status, 200, "{:?}", paid.body);
    assert_eq!(paid.body["pagesReturned"], 1);
    assert_eq!(paid.body["pageCount"], 2);
    assert_eq!(paid.body["pages"].as_array().unwrap().len(), 1);
    assert!(paid.body["finalUrl"]
        .as_str()
        .unwrap()
        .ends_with("/f/corpus/two-column.pdf"));
    assert_eq!(stack.settle_calls(), 1);

    // One signed payment replayed against every refusal: never settled.
    let buyer_start = stack.usdc_balance(&stack.buyer);
    let sig = stack
        .sign_only_async(&url, "GET", None)
        .await
        .payment_signature;
    stack.reset_calls();
    let hits_before = up.hits.load(Ordering::SeqCst);
    // Input refusals answer before the facilitator and before any download.
    let bad = [
        String::new(),
        "?url=notaurl".into(),
        format!("?pages=0&url={}", enc(&up.url("/f/corpus/two-column.pdf"))),
        format!("?pages=51&url={}", enc(&up.url("/f/corpus/two-column.pdf"))),
        format!(
            "?pages=two&url={}",
            enc(&up.url("/f/corpus/two-column.pdf"))
        ),
        format!("?url={}", enc("http://127.0.0.2/paper.pdf")),
        format!("?url={}", enc("http://169.254.169.254/latest/meta-data/")),
    ];
    stack.assert_refused_before_payment(&base, &bad, &sig).await;
    assert_eq!(
        up.hits.load(Ordering::SeqCst),
        hits_before,
        "nor the upstream"
    );

    let cases: Vec<(String, u16, &str)> = vec![
        (up.url("/html"), 415, "not_a_pdf"),
        (up.url("/f/refused/not-a-pdf.pdf"), 415, "not_a_pdf"),
        (up.url("/declared-big"), 413, "upstream_too_large"),
        (streamed_big.clone(), 413, "upstream_too_large"),
        (up.url("/at-cap"), 422, "pdf_corrupt"),
        (up.url("/f/refused/encrypted.pdf"), 422, "pdf_encrypted"),
        (up.url("/f/refused/image-only.pdf"), 422, "pdf_image_only"),
        (up.url("/f/refused/damaged.pdf"), 422, "pdf_corrupt"),
        (up.url("/missing"), 502, "upstream_status"),
        (up.url("/redirect/4"), 502, "too_many_redirects"),
        (
            "http://127.0.0.1:9/x.pdf".to_string(),
            502,
            "connect_failed",
        ),
    ];
    for (target, status, code) in &cases {
        let (s, h, b) = send_fresh(&stack, &format!("{base}?url={}", enc(target))).await;
        assert_eq!(
            (s, b["error"].as_str().unwrap_or("")),
            (*status, *code),
            "{target}: {b}"
        );
        assert!(h.get("payment-response").is_none(), "{target}: no receipt");
    }
    // The download deadline is 12 s.
    let t = std::time::Instant::now();
    let (s, _, b) = send_fresh(&stack, &format!("{base}?url={}", enc(&up.url("/slow")))).await;
    assert_eq!(
        (s, b["error"].as_str().unwrap_or("")),
        (504, "upstream_timeout"),
        "{b}"
    );
    assert!(t.elapsed() >= Duration::from_secs(11) && t.elapsed() < Duration::from_secs(25));
    assert_eq!(stack.verify_calls(), cases.len() + 1);
    assert_eq!(stack.settle_calls(), 0, "no refusal settles");
    assert_eq!(
        stack.usdc_balance(&stack.buyer),
        buyer_start,
        "nothing moved on-chain"
    );
    assert_eq!(canary.hits(), 0);

    // The same signature, used for a PDF with text, is charged once.
    let (s, h, b) = send_signed(&url, &sig).await;
    assert_eq!(s, 200, "{b}");
    assert!(h.get("payment-response").is_some());
    assert_eq!(stack.settle_calls(), 1);
    assert_eq!(stack.usdc_balance(&stack.buyer), buyer_start - 20_000);

    // Demo twin: the service's own sample, read from disk, free.
    stack.reset_calls();
    let hits_before = up.hits.load(Ordering::SeqCst);
    let (s, _, d) = support::server::get_json(&paycall.url("/api/demo/pdf")).await;
    assert_eq!(s, 200, "{d}");
    assert_eq!(d["demo"], true);
    assert_eq!(d["sample_status"], 200, "{d}");
    assert_eq!(d["sample"]["title"], "Paycall sample PDF");
    assert_eq!(d["sample"]["pageCount"], 2);
    let t1 = d["sample"]["pages"][0]["text"].as_str().unwrap();
    assert!(
        t1.contains("efficient, fluffy and offline"),
        "ligatures expanded: {t1}"
    );
    assert_eq!(stack.verify_calls() + stack.settle_calls(), 0);
    assert_eq!(up.hits.load(Ordering::SeqCst), hits_before);
    // The sample itself is served as a PDF.
    let r = support::server::client()
        .get(paycall.url("/samples/paycall-sample.pdf"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(r.headers()["content-type"], "application/pdf");
    let bytes = r.bytes().await.unwrap();
    assert_eq!(
        bytes.as_ref(),
        std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("static/paycall-sample.pdf"))
            .unwrap()
            .as_slice()
    );
    // Discovery: every parameter and error of /api/pdf, the llms.txt lines.
    let (s, _, api) = support::server::get_json(&paycall.url("/openapi.json")).await;
    assert_eq!(s, 200);
    let op = &api["paths"]["/api/pdf"]["get"];
    let params: Vec<&str> = op["parameters"]
        .as_array()
        .expect("parameters")
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert!(
        params.contains(&"url") && params.contains(&"pages"),
        "{params:?}"
    );
    for status in ["200", "400", "402", "413", "415", "422", "502", "504"] {
        assert!(
            op["responses"].get(status).is_some(),
            "{status} missing: {}",
            op["responses"]
        );
    }
    let r = support::server::client()
        .get(paycall.url("/llms.txt"))
        .send()
        .await
        .unwrap();
    let llms = r.text().await.unwrap();
    assert!(
        llms.contains("/api/pdf") && llms.contains("/api/demo/pdf"),
        "{llms}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_parse_budget_gives_partial_text_charged_or_504_not_charged() {
    use support::pdf::{heavy_content, pages_pdf, text_op};
    let stack = LocalStack::start();
    let mut generated = HashMap::new();
    generated.insert(
        "heavy-second.pdf",
        pages_pdf(
            &[
                text_op("first page text", 700.0),
                heavy_content(3_000_000, "late"),
            ],
            true,
        ),
    );
    generated.insert(
        "heavy-first.pdf",
        pages_pdf(&[heavy_content(3_000_000, "late")], true),
    );
    let up = pdf_upstream(generated).await;
    // The shipped config with a 400 ms parse budget instead of 10 s.
    let dir = shipped_copy(|t| t.replace("parse_budget_ms: 10000", "parse_budget_ms: 400"));
    let paycall = paycall_at(dir.path().join("routes.yaml"), &stack).await;
    let base = paycall.url("/api/pdf");

    let url = format!("{base}?url={}", enc(&up.url("/g/heavy-second.pdf")));
    let sig = stack
        .sign_only_async(&url, "GET", None)
        .await
        .payment_signature;
    let buyer_start = stack.usdc_balance(&stack.buyer);
    stack.reset_calls();
    let (s, h, b) = send_fresh(
        &stack,
        &format!("{base}?url={}", enc(&up.url("/g/heavy-first.pdf"))),
    )
    .await;
    assert_eq!(
        (s, b["error"].as_str().unwrap_or("")),
        (504, "parse_timeout"),
        "{b}"
    );
    assert!(h.get("payment-response").is_none());
    // Verified, worked, not charged: the phases say so (docs/decisions.md#server-timing).
    let timing = h["server-timing"].to_str().unwrap();
    assert!(
        timing.starts_with("verify;dur=")
            && timing.contains(", work;dur=")
            && !timing.contains("settle")
            && timing.contains(", total;dur="),
        "{timing}"
    );
    assert_eq!(stack.settle_calls(), 0);
    assert_eq!(stack.usdc_balance(&stack.buyer), buyer_start);

    let (s, h, b) = send_signed(&url, &sig).await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["truncated"], true);
    assert_eq!(b["truncatedReason"], "parse_budget");
    assert_eq!(b["pages"][0]["text"], "first page text");
    assert!(h.get("payment-response").is_some());
    let timing = h["server-timing"].to_str().unwrap();
    let phases: Vec<&str> = timing
        .split(", ")
        .map(|p| p.split(';').next().unwrap())
        .collect();
    assert_eq!(phases, ["verify", "work", "settle", "total"], "{timing}");
    assert_eq!(stack.settle_calls(), 1);
    assert_eq!(stack.usdc_balance(&stack.buyer), buyer_start - 20_000);
}
