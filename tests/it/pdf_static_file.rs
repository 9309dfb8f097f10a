//! The generic `static_file` and `own_file` stages on their own config: a file served with its
//! content type, a missing or oversized file refused at startup with its path, and `own_file`
//! handing a demo run the service's own file (paid runs always fetch: tests/it/pdf_http.rs).

use crate::support;

use support::server::*;

const PIPELINES: &[(&str, &str)] = &[
    (
        "file",
        "name: file\nstages:\n  - stage: static_file\n    with: { file: doc.txt, content_type: text/plain; charset=utf-8, max_age_s: 60 }\n",
    ),
    (
        "read",
        "name: read\nstages:\n  - stage: payment_gate\n  - stage: url_guard\n  - stage: own_file\n  - stage: fetch\n    with: { max_bytes: 1000, timeout_ms: 2000 }\n  - stage: markdown\n  - stage: bill\n  - stage: settle\n",
    ),
];

fn routes(file_route_caps: &str) -> String {
    format!(
        "{}routes:\n  - path: /files/doc.txt\n    methods: [GET]\n    summary: A fixed file\n    pipeline: file\n{file_route_caps}\n  - path: /api/read\n    methods: [GET]\n    summary: Reads a URL\n    pipeline: read\n    price_usd: \"0.01\"\n    input:\n      - name: url\n        type: string\n        required: true\n        format: uri\n        description: URL\n    demo:\n      input: {{ url: \"https://unreachable.invalid/files/doc.txt\" }}\n      ttl_s: 60\n      describe: our own file\n",
        service_yaml(NO_FACILITATOR, 100, 100, &[])
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_static_file_is_served_and_a_demo_reads_it_from_disk() {
    let dir = write_config(&routes(""), PIPELINES);
    std::fs::write(dir.dir.path().join("doc.txt"), "hello from disk\n").unwrap();
    let cfg = load(&dir).unwrap_or_else(|e| panic!("{e}"));
    let server = start(cfg).await;

    let r = client()
        .get(server.url("/files/doc.txt"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(r.headers()["content-type"], "text/plain; charset=utf-8");
    assert_eq!(r.headers()["cache-control"], "public, max-age=60");
    assert_eq!(r.text().await.unwrap(), "hello from disk\n");

    // The demo's target host does not exist: only the path matters, read from disk.
    let (s, _, d) = get_json(&server.url("/api/demo/read")).await;
    assert_eq!(s, 200, "{d}");
    assert_eq!(d["sample_status"], 200, "{d}");
    assert!(
        d["sample"]["content"]
            .as_str()
            .unwrap()
            .contains("hello from disk"),
        "{d}"
    );
}

#[test]
fn a_missing_or_oversized_file_is_a_startup_error_naming_it() {
    let dir = write_config(&routes(""), PIPELINES);
    let cfg = load(&dir).unwrap_or_else(|e| panic!("{e}"));
    let err = build(cfg).err().expect("missing file refused").to_string();
    assert!(err.contains("doc.txt"), "{err}");

    let dir = write_config(
        &routes("    caps:\n      static_file: { max_bytes: 3 }"),
        PIPELINES,
    );
    std::fs::write(dir.dir.path().join("doc.txt"), "too long").unwrap();
    let cfg = load(&dir).unwrap_or_else(|e| panic!("{e}"));
    let err = build(cfg)
        .err()
        .expect("oversized file refused")
        .to_string();
    assert!(err.contains("over max_bytes 3"), "{err}");
}
