//! The README's promise: every request is logged once with its request id (the `X-Request-Id`
//! sent back), route, status, whether it was charged and the time it took — paid routes' 402s,
//! demo twins (first run, cached hit and 429 alike, never charged), /status, discovery and 404s.

mod support;

use serde_json::Value;
use std::io::Write;
use std::sync::{Arc, Mutex};
use support::server::*;

/// Collects the JSON log lines of the whole test binary.
#[derive(Clone, Default)]
struct Lines(Arc<Mutex<Vec<u8>>>);

impl Write for Lines {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Lines {
    fn requests(&self) -> Vec<Value> {
        let bytes = self.0.lock().unwrap().clone();
        String::from_utf8_lossy(&bytes)
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v["message"] == "request")
            .collect()
    }
}

const ROUTES: &str = r#"routes:
  - path: /api/echo
    methods: [GET]
    price_usd: "0.01"
    summary: Echo
    pipeline: paid_static
    demo:
      ttl_s: 600
      describe: a fixed answer
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_is_logged_once_with_its_id_and_demos_are_not_charged() {
    let lines = Lines::default();
    let writer = lines.clone();
    tracing_subscriber::fmt()
        .json()
        .flatten_event(true)
        .with_env_filter("info")
        .with_writer(move || writer.clone())
        .init();

    // Burst 2: the third demo request in a row is a 429.
    let yaml = format!("{}{ROUTES}", service_yaml(NO_FACILITATOR, 2, 2, &[]));
    let (_dir, server) = serve_yaml(&yaml, &[("paid_static", PAID_STATIC)]).await;
    let c = client();
    let asks = [
        ("/api/demo/echo", 200), // first run
        ("/api/demo/echo", 200), // cached hit
        ("/api/demo/echo", 429), // over the demo quota
        ("/status", 200),
        ("/api/echo", 402),
        ("/openapi.json", 200),
        ("/no/such/route", 404),
    ];
    let mut ids = Vec::new();
    for (path, want) in asks {
        let r = c.get(server.url(path)).send().await.unwrap();
        assert_eq!(r.status().as_u16(), want, "{path}");
        let id = r.headers()["x-request-id"].to_str().unwrap().to_string();
        let _ = r.bytes().await;
        ids.push((path, want, id));
    }
    server.shutdown().await;

    let logged = lines.requests();
    assert_eq!(
        logged.len(),
        asks.len(),
        "one line per request, no more (a demo's sample run is not a second line): {logged:#?}"
    );
    for (path, status, id) in &ids {
        let line = logged
            .iter()
            .find(|l| l["request_id"] == id.as_str())
            .unwrap_or_else(|| panic!("no line for {path} ({id}): {logged:#?}"));
        assert_eq!(line["route"], *path, "{line}");
        assert_eq!(line["status"], *status, "{line}");
        assert_eq!(line["charged"], false, "{line}");
        assert!(line["elapsed_ms"].is_u64(), "{line}");
        assert_eq!(line["demo"], path.starts_with("/api/demo/"), "{line}");
    }
}
