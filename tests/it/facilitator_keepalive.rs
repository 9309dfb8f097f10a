//! Issue 19, part 2: settlements must not fail on connections the facilitator has closed.
//!
//! The stub facilitator here keeps HTTP/1.1 connections alive for a short keep-alive (Node's is
//! 5 s; 1 s here) and then treats them as closed: a request that arrives on a connection idle
//! for longer is answered with a TCP reset and never processed — what a client sees when it
//! writes to a connection the server closed a moment before. Before the fix, a settle that came
//! after the keep-alive went out on the verify's pooled connection and ended as an unknown
//! outcome (503 settlement_pending). Now: idle connections are dropped below the keep-alive,
//! /settle goes out on a fresh connection, and a /verify that was reset before any answer is
//! sent once more — while a /settle that may have been delivered is never resent.

use crate::support;
use support::upstream;

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use url::Url;

use paycall::config;
use paycall::server;
use paycall::x402::{
    FacilitatorClient, FacilitatorConfig, FacilitatorError, Requirement, SettleOutcome,
};
use support::server::enc;

const KEEP_ALIVE: Duration = Duration::from_millis(1000);

#[derive(Default)]
struct Counts {
    verify: AtomicUsize,
    settle: AtomicUsize,
    supported: AtomicUsize,
    /// Requests refused with a reset because their connection outlived the keep-alive.
    stale_resets: AtomicUsize,
    connections: AtomicUsize,
}

impl Counts {
    fn get(&self) -> (usize, usize, usize) {
        (
            self.verify.load(Ordering::SeqCst),
            self.settle.load(Ordering::SeqCst),
            self.stale_resets.load(Ordering::SeqCst),
        )
    }
}

/// What the stub does with a `/settle` it has read.
#[derive(Clone, Copy, PartialEq)]
enum SettleMode {
    Answer,
    /// Read it, count it, reset the connection without a word (an outcome the client cannot know).
    ResetAfterReading,
}

struct Stub {
    url: String,
    counts: Arc<Counts>,
}

async fn stub(settle_mode: SettleMode) -> Stub {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let counts = Arc::new(Counts::default());
    let c = counts.clone();
    tokio::spawn(async move {
        // Bounded: the stub stops accepting after a minute.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        while let Ok(Ok((sock, _))) = tokio::time::timeout_at(deadline, listener.accept()).await {
            c.connections.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(serve_connection(sock, c.clone(), settle_mode));
        }
    });
    Stub { url, counts }
}

async fn serve_connection(mut sock: tokio::net::TcpStream, c: Arc<Counts>, mode: SettleMode) {
    let mut idle_since = Instant::now();
    let mut buf = Vec::new();
    loop {
        // Read one request: headers, then Content-Length bytes of body.
        let head_end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            let mut chunk = [0u8; 4096];
            match tokio::time::timeout(Duration::from_secs(30), sock.read(&mut chunk)).await {
                Ok(Ok(n)) if n > 0 => {
                    if idle_since.elapsed() > KEEP_ALIVE {
                        // The keep-alive ran out: this connection is closed for the server.
                        c.stale_resets.fetch_add(1, Ordering::SeqCst);
                        let _ = sock.set_zero_linger();
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                }
                _ => return,
            }
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
        let len = support::net::content_length(&head);
        while buf.len() < head_end + len {
            let mut chunk = [0u8; 4096];
            match sock.read(&mut chunk).await {
                Ok(n) if n > 0 => buf.extend_from_slice(&chunk[..n]),
                _ => return,
            }
        }
        let body: Value =
            serde_json::from_slice(&buf[head_end..head_end + len]).unwrap_or(Value::Null);
        buf.drain(..head_end + len);
        let path = head.split_whitespace().nth(1).unwrap_or("").to_string();
        let payer = body["paymentPayload"]["payload"]["authorization"]["from"].clone();
        let answer = match path.as_str() {
            "/verify" => {
                c.verify.fetch_add(1, Ordering::SeqCst);
                json!({"isValid": true, "payer": payer})
            }
            "/settle" => {
                c.settle.fetch_add(1, Ordering::SeqCst);
                if mode == SettleMode::ResetAfterReading {
                    let _ = sock.set_zero_linger();
                    return;
                }
                json!({"success": true, "transaction": format!("0x{}", "ab".repeat(32)), "network": "eip155:8453", "payer": payer})
            }
            "/supported" => {
                c.supported.fetch_add(1, Ordering::SeqCst);
                json!({"kinds": [{"x402Version": 2, "scheme": "exact", "network": "eip155:8453"}], "extensions": [], "signers": {}})
            }
            _ => json!({"error": "unknown path"}),
        };
        let text = answer.to_string();
        let resp = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: keep-alive\r\n\r\n{text}",
            text.len()
        );
        if sock.write_all(resp.as_bytes()).await.is_err() {
            return;
        }
        idle_since = Instant::now();
    }
}

fn requirement() -> Requirement {
    support::server::requirement()
}

fn client(url: &str, pool_idle: Duration) -> FacilitatorClient {
    let mut cfg = FacilitatorConfig::new(Url::parse(url).unwrap());
    cfg.verify_timeout = Duration::from_secs(5);
    cfg.settle_timeout = Duration::from_secs(5);
    cfg.pool_idle_timeout = pool_idle;
    FacilitatorClient::new(cfg).unwrap()
}

fn payload() -> Value {
    json!({"x402Version": 2, "accepted": requirement().to_value(), "payload": {"authorization": {"from": "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"}}})
}

#[tokio::test]
async fn a_settle_after_the_keep_alive_settles() {
    let s = stub(SettleMode::Answer).await;
    // Idle connections dropped below the stub's keep-alive, as the default is below Node's.
    let c = client(&s.url, KEEP_ALIVE / 2);
    assert!(c.verify(&payload(), &requirement()).await.unwrap().is_valid);
    tokio::time::sleep(KEEP_ALIVE + Duration::from_millis(500)).await;
    let out = c.settle(&payload(), &requirement()).await.unwrap();
    assert!(matches!(out, SettleOutcome::Settled { .. }), "{out:?}");
    tokio::time::sleep(KEEP_ALIVE + Duration::from_millis(500)).await;
    assert!(c.verify(&payload(), &requirement()).await.unwrap().is_valid);
    assert_eq!(
        s.counts.get(),
        (2, 1, 0),
        "no request met a stale connection"
    );
}

#[tokio::test]
async fn stale_pooled_connections_never_fail_a_settle_and_verify_is_resent_once() {
    let s = stub(SettleMode::Answer).await;
    // Pool idle timeout far above the server's keep-alive (reqwest's default is 90 s).
    let c = client(&s.url, Duration::from_secs(60));
    assert!(c.verify(&payload(), &requirement()).await.unwrap().is_valid);
    tokio::time::sleep(KEEP_ALIVE + Duration::from_millis(500)).await;
    // /settle always goes out on a fresh connection.
    let out = c.settle(&payload(), &requirement()).await.unwrap();
    assert!(matches!(out, SettleOutcome::Settled { .. }), "{out:?}");
    assert_eq!(s.counts.get(), (1, 1, 0));
    // /verify on the stale pooled connection is reset before any answer, and sent once more.
    let out = c.verify(&payload(), &requirement()).await.unwrap();
    assert!(out.is_valid);
    assert_eq!(
        s.counts.get(),
        (2, 1, 1),
        "one reset, then one verify on a fresh connection"
    );
}

#[tokio::test]
async fn a_settle_that_may_have_been_delivered_is_never_resent() {
    let s = stub(SettleMode::ResetAfterReading).await;
    let c = client(&s.url, KEEP_ALIVE / 2);
    let e = c.settle(&payload(), &requirement()).await.unwrap_err();
    assert!(matches!(e, FacilitatorError::Interrupted(_)), "{e:?}");
    assert!(e.outcome_unknown());
    assert_eq!(
        s.counts.settle.load(Ordering::SeqCst),
        1,
        "sent once, not twice"
    );
}

// ---- through paycall: verify, work longer than the keep-alive, settle -----------------------

const KEY: &str = "59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";

/// A correctly signed EIP-3009 payment for the challenge's first (EVM) offer, its nonce random.
fn sign_payment(challenge: &Value) -> String {
    support::eip3009::sign(&support::eip3009::key(KEY), challenge, rand::random())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paid_call_whose_work_outlasts_the_keep_alive_settles() {
    let s = stub(SettleMode::Answer).await;
    let canary = upstream::canary("127.0.0.2").await;
    let up = upstream::start(&canary.url()).await;
    let routes = Path::new(env!("CARGO_MANIFEST_DIR")).join("routes.yaml");
    let fac = s.url.clone();
    let env = move |k: &str| -> Option<String> {
        match k {
            "PAYCALL_FACILITATOR_URL" => Some(fac.clone()),
            "PAYCALL_EVM_PAY_TO" => Some(support::server::EVM_PAY_TO.into()),
            "PAYCALL_SOLANA_PAY_TO" => Some(support::server::SOL_PAY_TO.into()),
            "PAYCALL_ALLOW_CIDRS" => Some("127.0.0.1/32".into()),
            "PAYCALL_LEDGER_URL" => Some("sqlite::memory:".into()),
            "PAYCALL_UPSTREAM_BASE_RPC" => Some("http://127.0.0.1:9/".into()),
            _ => None,
        }
    };
    let cfg = config::load_with_env(&routes, &env).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        cfg.payment.facilitator.pool_idle_timeout,
        Duration::from_secs(4),
        "the shipped idle timeout is below Node's 5 s keep-alive"
    );
    let services = server::services::build(&cfg).expect("services");
    let app = server::build_app(cfg, services).unwrap_or_else(|e| panic!("{e}"));
    let paycall = support::server::start_app(app).await;

    // The work (a slow upstream) takes longer than the facilitator's keep-alive.
    let url = paycall.url(&format!(
        "/api/http?url={}",
        enc(&up.url(&format!("/slow?ms={}", KEEP_ALIVE.as_millis() + 800)))
    ));
    let r = support::server::client().get(&url).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 402);
    let challenge: Value = serde_json::from_slice(
        &base64::engine::general_purpose::STANDARD
            .decode(r.headers()["payment-required"].to_str().unwrap())
            .unwrap(),
    )
    .unwrap();
    for round in 0..2 {
        let sig = sign_payment(&challenge);
        let (status, headers, body) = support::server::send_signed(&url, &sig).await;
        assert_eq!(status, 200, "round {round}: {body}");
        assert!(headers.get("payment-response").is_some());
    }
    let (verify, settle, _) = s.counts.get();
    assert_eq!(
        (verify, settle),
        (2, 2),
        "each paid call verified and settled once"
    );
}
