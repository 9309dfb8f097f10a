//! The ready-made unpaid 402 (rendered when the gate is built and when the facilitator's
//! /supported changes, served before the filter tree): the same challenge as the chain's own
//! answer for every method and probe, the Solana offer appears with its feePayer once the
//! facilitator names one (without a restart), and a changed feePayer is in the next 402s.

use crate::support;

use base64::Engine;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::server::*;
use warp::Filter;

const SOLANA: &str = "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp";
const PAID: &str = "name: paid\nstages:\n  - stage: payment_gate\n  - stage: static_reply\n    with: { body: { ok: true } }\n  - stage: bill\n  - stage: settle\n";

/// A facilitator whose /supported names the Solana feePayer held in `fee_payer` (none: the
/// Solana kind without one).
async fn facilitator(fee_payer: Arc<Mutex<Option<String>>>) -> String {
    let routes = warp::path("supported").and(warp::path::end()).map(move || {
        let mut solana = json!({"x402Version": 2, "scheme": "exact", "network": SOLANA});
        if let Some(fp) = fee_payer.lock().unwrap().clone() {
            solana["extra"] = json!({ "feePayer": fp });
        }
        warp::reply::json(&json!({
            "kinds": [{"x402Version": 2, "scheme": "exact", "network": "eip155:8453"}, solana],
            "extensions": ["bazaar"]
        }))
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    tokio::spawn(warp::serve(routes).incoming(listener).run());
    url
}

fn routes_yaml(facilitator: &str) -> String {
    let service = service_yaml(facilitator, 30, 10, &[]);
    format!(
        "{service}routes:\n  - path: /api/paid\n    methods: [GET, POST]\n    price_usd: \"0.01\"\n    summary: Paid\n    pipeline: paid\n"
    )
}

/// Status, PAYMENT-REQUIRED decoded, and the body of one request.
async fn ask(method: reqwest::Method, url: &str, accept: Option<&str>) -> (u16, Value, Value) {
    let mut req = client().request(method, url);
    if let Some(a) = accept {
        req = req.header("accept", a);
    }
    let r = req.send().await.unwrap();
    let status = r.status().as_u16();
    let header = r
        .headers()
        .get("payment-required")
        .map(|v| {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(v.as_bytes())
                .unwrap();
            serde_json::from_slice(&bytes).unwrap()
        })
        .unwrap_or(Value::Null);
    assert_eq!(r.headers()["cache-control"], "no-store");
    assert_eq!(r.headers()["access-control-allow-origin"], "*");
    assert!(r.headers().contains_key("x-request-id"));
    let bytes = r.bytes().await.unwrap();
    let body = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes).unwrap()
    };
    (status, header, body)
}

fn networks(challenge: &Value) -> Vec<String> {
    challenge["accepts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["network"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ready_made_402_is_the_chains_and_follows_the_facilitators_fee_payer() {
    let fee_payer = Arc::new(Mutex::new(None));
    let fac = facilitator(fee_payer.clone()).await;
    let (_dir, server) = serve_yaml(&routes_yaml(&fac), &[("paid", PAID)]).await;
    let url = server.url("/api/paid?anything=at-all");

    // No feePayer yet: Base only. The fast path and the chain (an Accept naming text/html sends
    // the request down the chain) give the same challenge.
    let (s, header, body) = ask(reqwest::Method::GET, &url, None).await;
    assert_eq!(s, 402);
    assert_eq!(networks(&header), ["eip155:8453"]);
    assert_eq!(header["accepts"], body["accepts"]);
    // The body is the header's challenge without the Bazaar schemas, plus a message
    // (docs/decisions.md#challenge).
    assert!(header["extensions"]["bazaar"].is_object(), "{header}");
    let mut expected = header.clone();
    expected.as_object_mut().unwrap().remove("extensions");
    expected["message"] = body["message"].clone();
    assert!(body["message"].is_string(), "{body}");
    assert_eq!(body, expected);
    assert_eq!(
        header["resource"]["url"],
        "https://api.paycall.test/api/paid"
    );
    // (An Accept naming text/html but preferring JSON: the chain answers JSON; a browser's,
    // preferring HTML, gets the page with this same header, tests/it/challenge_page.rs.)
    let (s2, header2, body2) = ask(
        reqwest::Method::GET,
        &url,
        Some("application/json, text/html;q=0.5"),
    )
    .await;
    assert_eq!((s2, &header2), (402, &header));
    assert_eq!(body2, body);

    // Each method its own bazaar declaration; HEAD and OPTIONS probes get the challenge too.
    let (_, post, _) = ask(reqwest::Method::POST, &url, None).await;
    assert_eq!(
        post["extensions"]["bazaar"]["info"]["input"]["method"],
        "POST"
    );
    assert_eq!(
        header["extensions"]["bazaar"]["info"]["input"]["method"],
        "GET"
    );
    let (s, head, head_body) = ask(reqwest::Method::HEAD, &url, None).await;
    assert_eq!((s, &head, head_body), (402, &header, Value::Null));
    let (s, options, _) = ask(reqwest::Method::OPTIONS, &url, None).await;
    assert_eq!((s, &options), (402, &header));
    // A v1 client is told where the payment goes.
    let r = client()
        .get(&url)
        .header("x-payment", "e30=")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 402);
    let v = json_of(r).await;
    assert!(
        v["message"].as_str().unwrap().contains("not X-PAYMENT"),
        "{v}"
    );
    // A method the route does not serve is still 405.
    let r = client().delete(&url).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 405);

    // The facilitator names a feePayer: the 402 path itself asks /supported again (at most every
    // 5 s) and the next challenges carry the Solana offer, without a restart.
    *fee_payer.lock().unwrap() = Some("FeePayer1111111111111111111111111111111111".into());
    let started = Instant::now();
    let solana = loop {
        let (_, h, b) = ask(reqwest::Method::GET, &url, None).await;
        if networks(&h).len() == 2 {
            assert_eq!(h["accepts"], b["accepts"]);
            break h["accepts"][1].clone();
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the Solana offer never appeared: {h}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(solana["network"], SOLANA);
    assert_eq!(
        solana["extra"]["feePayer"],
        "FeePayer1111111111111111111111111111111111"
    );
    let (_, chain, _) = ask(
        reqwest::Method::GET,
        &url,
        Some("application/json, text/html;q=0.5"),
    )
    .await;
    assert_eq!(chain["accepts"][1], solana);
    server.shutdown().await;
}

/// One response read off a raw connection: the head's lines (status line first) and the body.
async fn read_response(
    conn: &mut tokio::net::TcpStream,
    pending: &mut Vec<u8>,
) -> (Vec<String>, Vec<u8>) {
    use tokio::io::AsyncReadExt;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8(pending[..end].to_vec()).unwrap();
            let lines: Vec<String> = head.split("\r\n").map(str::to_string).collect();
            let length: usize = lines
                .iter()
                .find_map(|l| l.strip_prefix("content-length: "))
                .expect("content-length")
                .parse()
                .unwrap();
            if pending.len() >= end + 4 + length {
                let body = pending[end + 4..end + 4 + length].to_vec();
                pending.drain(..end + 4 + length);
                return (lines, body);
            }
        }
        assert!(Instant::now() < deadline, "no whole response in 10 s");
        let mut chunk = [0u8; 16384];
        let n = tokio::time::timeout(Duration::from_secs(10), conn.read(&mut chunk))
            .await
            .expect("an answer in 10 s")
            .unwrap();
        assert!(n > 0, "the connection closed mid-response");
        pending.extend_from_slice(&chunk[..n]);
    }
}

/// The head's lines without the two that differ on every response.
fn stable(lines: &[String]) -> Vec<String> {
    lines
        .iter()
        .filter(|l| !l.starts_with("x-request-id: ") && !l.starts_with("date: "))
        .cloned()
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_unpaid_gets_are_answered_before_hyper_with_the_same_bytes_and_the_rest_is_handed_over(
) {
    use tokio::io::AsyncWriteExt;
    let fac = facilitator(Arc::new(Mutex::new(None))).await;
    let (_dir, server) = serve_yaml(&routes_yaml(&fac), &[("paid", PAID)]).await;
    let plain = b"GET /api/paid?q=1 HTTP/1.1\r\nHost: a\r\nConnection: keep-alive\r\n\r\n";
    // A Content-Length (even 0) is not a plain GET: hyper answers it, on the same connection.
    let other = b"GET /api/paid?q=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n";

    let mut conn = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let mut pending = Vec::new();
    conn.write_all(plain).await.unwrap();
    let (fast, fast_body) = read_response(&mut conn, &mut pending).await;
    assert_eq!(fast[0], "HTTP/1.1 402 Payment Required");
    conn.write_all(other).await.unwrap();
    let (hyper, hyper_body) = read_response(&mut conn, &mut pending).await;
    // Same status line, same headers in the same order, same body; a request id and a date each.
    assert_eq!(stable(&fast), stable(&hyper));
    assert_eq!(fast_body, hyper_body);
    for lines in [&fast, &hyper] {
        assert_eq!(lines.iter().filter(|l| l.starts_with("date: ")).count(), 1);
        assert_eq!(
            lines
                .iter()
                .filter(|l| l.starts_with("x-request-id: "))
                .count(),
            1
        );
    }
    assert_ne!(
        fast.iter().find(|l| l.starts_with("x-request-id: ")),
        hyper.iter().find(|l| l.starts_with("x-request-id: "))
    );
    let challenge: Value = serde_json::from_slice(&fast_body).unwrap();
    assert_eq!(networks(&challenge), ["eip155:8453"]);
    // After the handover, hyper keeps the connection: a plain GET is answered there too, and a
    // paid route's unknown path is its 404.
    conn.write_all(plain).await.unwrap();
    let (again, again_body) = read_response(&mut conn, &mut pending).await;
    assert_eq!(
        (stable(&again), again_body),
        (stable(&fast), fast_body.clone())
    );
    conn.write_all(b"GET /api/nothing HTTP/1.1\r\nHost: a\r\n\r\n")
        .await
        .unwrap();
    let (missing, _) = read_response(&mut conn, &mut pending).await;
    assert_eq!(missing[0], "HTTP/1.1 404 Not Found");

    // A fresh connection: two requests in one write, then one written in three pieces, then a
    // path that is not a paid route (handed over: 404) — each answered, in order.
    let mut conn = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let mut pending = Vec::new();
    conn.write_all(&[&plain[..], &plain[..]].concat())
        .await
        .unwrap();
    for _ in 0..2 {
        let (lines, body) = read_response(&mut conn, &mut pending).await;
        assert_eq!((stable(&lines), body), (stable(&fast), fast_body.clone()));
    }
    for piece in [&plain[..10], &plain[10..30], &plain[30..]] {
        conn.write_all(piece).await.unwrap();
        conn.flush().await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (lines, body) = read_response(&mut conn, &mut pending).await;
    assert_eq!((stable(&lines), body), (stable(&fast), fast_body.clone()));
    conn.write_all(b"GET /status/nope HTTP/1.1\r\nHost: a\r\n\r\n")
        .await
        .unwrap();
    let (missing, _) = read_response(&mut conn, &mut pending).await;
    assert_eq!(missing[0], "HTTP/1.1 404 Not Found");
    drop(conn);

    // At shutdown a connection waiting on this path is closed and does not hold the shutdown
    // up — idle, or with half a request head read (as hyper's graceful shutdown closes one).
    let mut idle = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let mut pending = Vec::new();
    idle.write_all(plain).await.unwrap();
    read_response(&mut idle, &mut pending).await;
    let mut half = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    half.write_all(&plain[..20]).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = Instant::now();
    server.shutdown().await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "the shutdown took {:?}",
        started.elapsed()
    );
    for conn in [&mut idle, &mut half] {
        use tokio::io::AsyncReadExt;
        let mut rest = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(5), conn.read_to_end(&mut rest)).await;
        assert!(matches!(read, Ok(Ok(0)) | Ok(Err(_))), "{read:?} {rest:?}");
    }
}

/// Waits (at most 5 s) for the server to close `conn`; the bytes it sent meanwhile.
async fn closed_by_server(conn: &mut tokio::net::TcpStream) -> Vec<u8> {
    use tokio::io::AsyncReadExt;
    let mut rest = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), conn.read_to_end(&mut rest)).await;
    assert!(
        matches!(read, Ok(Ok(_)) | Ok(Err(_))),
        "still open after 5 s: {rest:?}"
    );
    rest
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_does_not_send_a_whole_request_head_in_time_is_closed_on_both_paths() {
    use tokio::io::AsyncWriteExt;
    let fac = facilitator(Arc::new(Mutex::new(None))).await;
    let yaml = routes_yaml(&fac).replace(
        "shutdown_grace_s: 5",
        "shutdown_grace_s: 5\n  header_read_timeout_s: 1",
    );
    assert!(yaml.contains("header_read_timeout_s: 1"));
    let (_dir, server) = serve_yaml(&yaml, &[("paid", PAID)]).await;
    let plain = b"GET /api/paid HTTP/1.1\r\nHost: a\r\n\r\n";
    let to_hyper = b"GET /api/paid HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n";
    let connect = || tokio::net::TcpStream::connect(server.addr);

    // Silent from the start; half a head; idle after a 402 of the fast path; idle and half a
    // head after the handover to hyper. Each with the moment before its last request (or its
    // connect) was sent: the server's wait for the next head cannot have begun earlier.
    let mut conns = Vec::new();
    let since = Instant::now();
    conns.push(("silent", since, connect().await.unwrap()));
    let since = Instant::now();
    let mut half = connect().await.unwrap();
    half.write_all(&plain[..20]).await.unwrap();
    conns.push(("half", since, half));
    let mut idle = connect().await.unwrap();
    let since = Instant::now();
    idle.write_all(plain).await.unwrap();
    read_response(&mut idle, &mut Vec::new()).await;
    conns.push(("idle", since, idle));
    let mut hyper_idle = connect().await.unwrap();
    let since = Instant::now();
    hyper_idle.write_all(to_hyper).await.unwrap();
    read_response(&mut hyper_idle, &mut Vec::new()).await;
    conns.push(("hyper idle", since, hyper_idle));
    let mut hyper_half = connect().await.unwrap();
    let since = Instant::now();
    hyper_half.write_all(to_hyper).await.unwrap();
    read_response(&mut hyper_half, &mut Vec::new()).await;
    hyper_half.write_all(&plain[..20]).await.unwrap();
    conns.push(("hyper half", since, hyper_half));

    // Watched all at once: every one is closed, none before the timeout.
    let closed = futures_util::future::join_all(conns.iter_mut().map(|(_, _, c)| async move {
        let rest = closed_by_server(c).await;
        (Instant::now(), rest)
    }))
    .await;
    for ((name, since, _), (at, rest)) in conns.iter().zip(closed) {
        assert!(
            at.duration_since(*since) >= Duration::from_secs(1),
            "{name}: closed {:?} after its last request",
            at.duration_since(*since)
        );
        // hyper may answer a half-read head 408 before closing; the fast path closes silently.
        assert!(
            rest.is_empty() || rest.starts_with(b"HTTP/1.1 408"),
            "{name}: {:?}",
            String::from_utf8_lossy(&rest)
        );
    }
    server.shutdown().await;
}
