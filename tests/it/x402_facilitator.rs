//! Facilitator client against a scripted mock facilitator on 127.0.0.1, answering in the
//! styles real facilitators use (TS, x402-rs, CDP), plus broken and silent servers.

use crate::support;

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine;
use paycall::x402::{
    encode_header, FacilitatorAuth, FacilitatorClient, FacilitatorConfig, FacilitatorError,
    Requirement, SettleOutcome,
};
use serde_json::{json, Value};
use url::Url;
use warp::Filter;

#[derive(Clone)]
struct Canned {
    status: u16,
    body: String,
    headers: Vec<(&'static str, String)>,
}

fn reply(status: u16, body: Value) -> Canned {
    Canned {
        status,
        body: body.to_string(),
        headers: vec![("content-type", "application/json".into())],
    }
}

#[derive(Debug, Clone)]
struct Seen {
    method: String,
    path: String,
    authorization: Option<String>,
    content_type: Option<String>,
    body: Value,
}

#[derive(Clone, Default)]
struct Mock {
    script: Arc<Mutex<HashMap<String, VecDeque<Canned>>>>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Mock {
    /// Queue answers for a path (e.g. "/verify"); each request consumes one.
    fn push(&self, path: &str, canned: Canned) {
        self.script
            .lock()
            .unwrap()
            .entry(path.to_string())
            .or_default()
            .push_back(canned);
    }

    fn seen(&self, path: &str) -> Vec<Seen> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|s| s.path == path)
            .cloned()
            .collect()
    }

    async fn start(&self) -> SocketAddr {
        let mock = self.clone();
        let route = warp::method()
            .and(warp::path::full())
            .and(warp::header::headers_cloned())
            .and(warp::body::bytes())
            .and_then(
                move |method: warp::http::Method,
                      path: warp::path::FullPath,
                      headers: warp::http::HeaderMap,
                      body: bytes::Bytes| {
                    let mock = mock.clone();
                    async move {
                        let h = |n: &str| {
                            headers
                                .get(n)
                                .and_then(|v| v.to_str().ok())
                                .map(str::to_string)
                        };
                        mock.seen.lock().unwrap().push(Seen {
                            method: method.to_string(),
                            path: path.as_str().to_string(),
                            authorization: h("authorization"),
                            content_type: h("content-type"),
                            body: serde_json::from_slice(&body).unwrap_or(Value::Null),
                        });
                        let canned = mock
                            .script
                            .lock()
                            .unwrap()
                            .get_mut(path.as_str())
                            .and_then(VecDeque::pop_front)
                            .unwrap_or_else(|| reply(599, json!({"error": "unscripted request"})));
                        let mut resp = warp::http::Response::builder().status(canned.status);
                        for (k, v) in &canned.headers {
                            resp = resp.header(*k, v);
                        }
                        Ok::<_, Infallible>(resp.body(canned.body).unwrap())
                    }
                },
            );
        let addr = support::net::serve_forever(route).await;
        addr
    }
}

fn config(base: &str) -> FacilitatorConfig {
    let mut c = FacilitatorConfig::new(Url::parse(base).unwrap());
    c.verify_timeout = Duration::from_secs(5);
    c.settle_timeout = Duration::from_secs(5);
    c
}

fn client(addr: SocketAddr) -> FacilitatorClient {
    FacilitatorClient::new(config(&format!("http://{addr}"))).unwrap()
}

fn requirement() -> Requirement {
    Requirement {
        extra: json!({"name": "USD Coin", "version": "2"})
            .as_object()
            .cloned()
            .unwrap(),
        ..support::server::requirement()
    }
}

/// A client payload with things a typed round trip would lose.
fn payload() -> Value {
    let mut accepted = requirement().to_value();
    // The client spelled payTo in lower case and added an extra key: we forward as is.
    accepted["payTo"] = json!("0xdf1d7b5c056d78f5aa14138a5695f7ff6f7acff3");
    accepted["extra"]["assetTransferMethod"] = json!("eip3009");
    json!({
        "x402Version": 2,
        "resource": {
            "url": "https://paycall.example/api/pulse",
            "description": "Prices",
            "mimeType": "application/json",
            "serviceName": "paycall",
            "tags": ["crypto"]
        },
        "accepted": accepted,
        "payload": {
            "signature": "0xce9d0f2068a2641b7efe85986e1804fdedddaa81ff7dde3122c21b14c50db1285998c72846f9fb9023bf76f92efe0d867fba0d244afa2ac44b67bff45518b9931c",
            "authorization": {
                "from": "0x07680410500c834d36e40246d40F6072029C3759",
                "to": "0xdF1D7b5C056D78F5aA14138a5695f7FF6F7aCFf3",
                "value": "5000",
                "validAfter": "0",
                "validBefore": "1795313843",
                "nonce": "0x5db1a2ec6497d535a328f3bf58590e4ebcbd2dad9fa4767ba7063bdf68c4a452"
            }
        },
        "extensions": {"bazaar": {"info": {"input": {"type": "http", "method": "GET"}}, "schema": {}}},
        "futureField": {"nested": [1, 2.5, "x"]}
    })
}

fn assert_forwarded(seen: &Seen) {
    assert_eq!(seen.method, "POST");
    assert_eq!(seen.content_type.as_deref(), Some("application/json"));
    assert_eq!(seen.authorization, None);
    assert_eq!(seen.body["x402Version"], json!(2));
    assert_eq!(
        seen.body["paymentPayload"],
        payload(),
        "payload must be verbatim"
    );
    assert_eq!(
        seen.body["paymentPayload"]["resource"]["serviceName"],
        "paycall"
    );
    assert_eq!(
        seen.body["paymentPayload"]["futureField"]["nested"][1],
        json!(2.5)
    );
    assert_eq!(seen.body["paymentRequirements"], requirement().to_value());
    assert_eq!(seen.body.as_object().unwrap().len(), 3);
}

#[tokio::test]
async fn ts_style_verify_and_settle() {
    let mock = Mock::default();
    mock.push(
        "/verify",
        reply(200, json!({"isValid": false, "invalidReason": "invalid_exact_evm_nonce_already_used",
                          "invalidMessage": "FiatTokenV2: authorization is used", "payer": "0x0768"})),
    );
    mock.push(
        "/verify",
        reply(200, json!({"isValid": true, "payer": "0x0768"})),
    );
    let settled = json!({"success": true, "transaction": "0xf6ac", "network": "eip155:8453", "payer": "0x0768"});
    mock.push("/settle", reply(200, settled.clone()));
    let c = client(mock.start().await);

    let v = c.verify(&payload(), &requirement()).await.unwrap();
    assert!(!v.is_valid);
    assert_eq!(
        v.invalid_reason.as_deref(),
        Some("invalid_exact_evm_nonce_already_used")
    );
    assert_eq!(
        v.invalid_message.as_deref(),
        Some("FiatTokenV2: authorization is used")
    );
    assert_eq!(v.payer.as_deref(), Some("0x0768"));
    assert_eq!(v.extension_responses, None);

    let v = c.verify(&payload(), &requirement()).await.unwrap();
    assert!(v.is_valid);
    assert_eq!(v.invalid_reason, None);

    let s = c.settle(&payload(), &requirement()).await.unwrap();
    assert_eq!(s, SettleOutcome::Settled { response: settled });

    let verifies = mock.seen("/verify");
    assert_eq!(verifies.len(), 2);
    verifies.iter().for_each(assert_forwarded);
    let settles = mock.seen("/settle");
    assert_eq!(settles.len(), 1);
    assert_forwarded(&settles[0]);
}

#[tokio::test]
async fn x402rs_style_statuses() {
    let mock = Mock::default();
    mock.push(
        "/verify",
        reply(
            400,
            json!({"isValid": false, "invalidReason": "invalid_signature",
                          "invalidReasonDetails": "signature does not recover", "payer": ""}),
        ),
    );
    mock.push(
        "/verify",
        reply(
            412,
            json!({"isValid": false, "invalidReason": "permit2_allowance_required", "payer": ""}),
        ),
    );
    mock.push(
        "/settle",
        reply(500, json!({"success": false, "network": "", "transaction": "",
                          "errorReason": "transaction_simulation", "errorMessage": "reverted", "payer": ""})),
    );
    mock.push(
        "/settle",
        reply(
            400,
            json!({"success": false, "errorReason": "invalid_payment_expired", "transaction": ""}),
        ),
    );
    let c = client(mock.start().await);

    let v = c.verify(&payload(), &requirement()).await.unwrap();
    assert!(!v.is_valid);
    assert_eq!(v.invalid_reason.as_deref(), Some("invalid_signature"));
    assert_eq!(
        v.invalid_message.as_deref(),
        Some("signature does not recover")
    );
    assert_eq!(v.payer, None, "empty payer is no payer");
    let v = c.verify(&payload(), &requirement()).await.unwrap();
    assert_eq!(
        v.invalid_reason.as_deref(),
        Some("permit2_allowance_required")
    );

    match c.settle(&payload(), &requirement()).await.unwrap() {
        SettleOutcome::Failed {
            reason,
            message,
            response,
        } => {
            assert_eq!(reason, "transaction_simulation");
            assert_eq!(message.as_deref(), Some("reverted"));
            assert_eq!(response["success"], false);
        }
        other => panic!("expected Failed, got {other:?}"),
    }
    match c.settle(&payload(), &requirement()).await.unwrap() {
        SettleOutcome::Failed { reason, .. } => assert_eq!(reason, "invalid_payment_expired"),
        other => panic!("expected Failed, got {other:?}"),
    }
    assert_eq!(mock.seen("/settle").len(), 2, "failures are not retried");
}

#[tokio::test]
async fn cdp_style_errors_and_extension_responses() {
    let mock = Mock::default();
    mock.push(
        "/verify",
        reply(
            400,
            json!({"errorType": "invalid_request",
                          "errorMessage": "resource.description must be at most 500 characters",
                          "errorLink": "https://docs.example/errors#invalid_request"}),
        ),
    );
    let mut valid = reply(200, json!({"isValid": true, "payer": "0x0768"}));
    valid.headers.push((
        "EXTENSION-RESPONSES",
        encode_header(&json!({"bazaar": {"status": "processing"}})),
    ));
    mock.push("/verify", valid);
    mock.push(
        "/settle",
        reply(
            400,
            json!({"errorType": "invalid_request", "errorMessage": "bad amount"}),
        ),
    );
    mock.push(
        "/verify",
        reply(
            401,
            json!({"errorType": "unauthorized", "errorMessage": "no"}),
        ),
    );
    mock.push("/settle", reply(403, json!({"errorType": "forbidden"})));
    mock.push(
        "/verify",
        reply(500, json!({"errorType": "internal_server_error"})),
    );
    let c = client(mock.start().await);

    let v = c.verify(&payload(), &requirement()).await.unwrap();
    assert!(!v.is_valid);
    assert_eq!(v.invalid_reason.as_deref(), Some("invalid_request"));
    assert!(v.invalid_message.unwrap().contains("500 characters"));

    let v = c.verify(&payload(), &requirement()).await.unwrap();
    assert!(v.is_valid);
    assert_eq!(
        v.extension_responses,
        Some(json!({"bazaar": {"status": "processing"}}))
    );

    match c.settle(&payload(), &requirement()).await.unwrap() {
        SettleOutcome::Failed {
            reason, message, ..
        } => {
            assert_eq!(reason, "invalid_request");
            assert_eq!(message.as_deref(), Some("bad amount"));
        }
        other => panic!("expected Failed, got {other:?}"),
    }
    let e = c.verify(&payload(), &requirement()).await.unwrap_err();
    assert!(matches!(e, FacilitatorError::Unauthorized(_)), "{e:?}");
    assert_eq!((e.status(), e.code()), (502, "facilitator_unauthorized"));
    let e = c.settle(&payload(), &requirement()).await.unwrap_err();
    assert!(matches!(e, FacilitatorError::Unauthorized(_)), "{e:?}");
    let e = c.verify(&payload(), &requirement()).await.unwrap_err();
    assert!(
        matches!(e, FacilitatorError::BadResponse(_)),
        "a 5xx is not a verdict: {e:?}"
    );
}

#[tokio::test]
async fn settlement_pending_is_retried_once() {
    let pending = json!({"success": false, "errorReason": "settlement_pending",
                         "transaction": "0xabc", "network": "eip155:8453"});
    let done = json!({"success": true, "transaction": "0xabc", "network": "eip155:8453"});

    // Pending, then settled on the retry.
    let mock = Mock::default();
    mock.push("/settle", reply(200, pending.clone()));
    mock.push("/settle", reply(200, done.clone()));
    let c = client(mock.start().await);
    let s = c.settle(&payload(), &requirement()).await.unwrap();
    assert_eq!(s, SettleOutcome::Settled { response: done });
    let calls = mock.seen("/settle");
    assert_eq!(calls.len(), 2, "exactly one retry");
    assert_eq!(
        calls[0].body, calls[1].body,
        "the retry re-sends the same body"
    );
    assert_forwarded(&calls[1]);

    // Pending twice: Pending, and no third call.
    let mock = Mock::default();
    mock.push("/settle", reply(200, pending.clone()));
    mock.push("/settle", reply(500, pending.clone()));
    let c = client(mock.start().await);
    let s = c.settle(&payload(), &requirement()).await.unwrap();
    assert_eq!(
        s,
        SettleOutcome::Pending {
            transaction: Some("0xabc".into()),
            response: pending.clone()
        }
    );
    assert_eq!(mock.seen("/settle").len(), 2);

    // Pending, then the retry gets garbage: still Pending (the tx was broadcast).
    let mock = Mock::default();
    mock.push("/settle", reply(200, pending.clone()));
    mock.push(
        "/settle",
        Canned {
            status: 502,
            body: "<html>bad gateway</html>".into(),
            headers: vec![],
        },
    );
    let c = client(mock.start().await);
    let s = c.settle(&payload(), &requirement()).await.unwrap();
    assert!(
        matches!(s, SettleOutcome::Pending { ref transaction, .. } if transaction.as_deref() == Some("0xabc"))
    );
    assert_eq!(mock.seen("/settle").len(), 2);
}

#[tokio::test]
async fn malformed_answers_are_bad_responses() {
    let mock = Mock::default();
    let garbage = Canned {
        status: 200,
        body: "{\"isValid\": tru".into(),
        headers: vec![],
    };
    mock.push("/verify", garbage.clone());
    mock.push("/settle", garbage);
    mock.push("/verify", reply(200, json!({"valid": true})));
    mock.push("/settle", reply(200, json!({"ok": true})));
    mock.push(
        "/settle",
        reply(200, json!({"success": "true", "transaction": "0x1"})),
    );
    let c = client(mock.start().await);
    for _ in 0..2 {
        let e = c.verify(&payload(), &requirement()).await.unwrap_err();
        assert!(matches!(e, FacilitatorError::BadResponse(_)), "{e:?}");
        assert_eq!((e.status(), e.code()), (502, "facilitator_bad_response"));
        let e = c.settle(&payload(), &requirement()).await.unwrap_err();
        assert!(matches!(e, FacilitatorError::BadResponse(_)), "{e:?}");
    }
    // "success": "true" (a string) is not a success.
    assert!(matches!(
        c.settle(&payload(), &requirement()).await.unwrap(),
        SettleOutcome::Failed { .. }
    ));
}

#[tokio::test]
async fn silent_server_times_out() {
    // Accepts connections and never answers (bounded: the task ends after 20 s).
    let (listener, addr) = support::net::listen().await;
    tokio::spawn(async move {
        let mut held = Vec::new();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        while let Ok(Ok((sock, _))) = tokio::time::timeout_at(deadline, listener.accept()).await {
            held.push(sock);
        }
    });
    let mut cfg = config(&format!("http://{addr}/"));
    cfg.verify_timeout = Duration::from_millis(300);
    cfg.settle_timeout = Duration::from_millis(300);
    let c = FacilitatorClient::new(cfg).unwrap();

    let t = Instant::now();
    let e = c.settle(&payload(), &requirement()).await.unwrap_err();
    assert_eq!(e, FacilitatorError::Timeout);
    assert!(e.outcome_unknown(), "a timed-out settle may have settled");
    assert_eq!((e.status(), e.code()), (504, "facilitator_timeout"));
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "took {:?}",
        t.elapsed()
    );
    assert_eq!(
        c.verify(&payload(), &requirement()).await.unwrap_err(),
        FacilitatorError::Timeout
    );
    assert_eq!(c.supported().await.unwrap_err(), FacilitatorError::Timeout);
}

#[tokio::test]
async fn closed_connection_is_interrupted() {
    // Reads the request, then hangs up without a word.
    let (listener, addr) = support::net::listen().await;
    tokio::spawn(async move {
        use tokio::io::AsyncReadExt;
        for _ in 0..4 {
            let Ok(Ok((mut sock, _))) =
                tokio::time::timeout(Duration::from_secs(10), listener.accept()).await
            else {
                return;
            };
            let mut buf = [0u8; 4096];
            let _ = tokio::time::timeout(Duration::from_secs(2), sock.read(&mut buf)).await;
            drop(sock);
        }
    });
    let c = client(addr);
    let e = c.settle(&payload(), &requirement()).await.unwrap_err();
    assert!(matches!(e, FacilitatorError::Interrupted(_)), "{e:?}");
    assert!(e.outcome_unknown());
}

#[tokio::test]
async fn nothing_listening_is_unreachable() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let c = client(SocketAddr::from(([127, 0, 0, 1], port)));
    let e = c.verify(&payload(), &requirement()).await.unwrap_err();
    assert!(matches!(e, FacilitatorError::Unreachable(_)), "{e:?}");
    assert!(!e.outcome_unknown());
    assert_eq!((e.status(), e.code()), (502, "facilitator_unreachable"));
    let e = c.settle(&payload(), &requirement()).await.unwrap_err();
    assert!(matches!(e, FacilitatorError::Unreachable(_)), "{e:?}");
}

const SOL: &str = "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp";

fn supported(fee_payer: &str, signers: &[&str]) -> Canned {
    reply(
        200,
        json!({
            "kinds": [
                {"x402Version": 2, "scheme": "exact", "network": "eip155:8453"},
                {"x402Version": "two", "scheme": "exact"},
                {"x402Version": 2, "scheme": "exact", "network": SOL, "extra": {"feePayer": fee_payer}},
                {"x402Version": 1, "scheme": "exact", "network": "solana", "extra": {"feePayer": "V1ONLY"}}
            ],
            "extensions": ["bazaar"],
            "signers": {"eip155:*": ["0x7099"], "solana:*": signers}
        }),
    )
}

#[tokio::test]
async fn supported_is_cached_and_survives_errors() {
    let mock = Mock::default();
    mock.push("/supported", supported("FEE1", &["FEE1"]));
    mock.push(
        "/supported",
        Canned {
            status: 500,
            body: "oops".into(),
            headers: vec![],
        },
    );
    mock.push("/supported", supported("FEE1", &["FEE1"]));
    let addr = mock.start().await;
    let mut cfg = config(&format!("http://{addr}"));
    cfg.supported_ttl = Duration::from_millis(1500);
    let c = FacilitatorClient::new(cfg).unwrap();

    assert_eq!(c.fee_payer(SOL), None, "nothing cached yet");
    let s = c.supported().await.unwrap();
    assert_eq!(s.kinds.len(), 3, "the garbage kind is skipped");
    assert_eq!(s.extensions, ["bazaar"]);
    assert!(s.supports(2, "exact", "eip155:8453"));
    assert_eq!(c.fee_payer(SOL).as_deref(), Some("FEE1"));
    assert_eq!(c.fee_payer("solana"), None, "v1 kinds do not count");

    // Within the TTL: served from cache, the mock is not asked again.
    let again = c.supported().await.unwrap();
    assert!(std::sync::Arc::ptr_eq(&s, &again));
    assert_eq!(mock.seen("/supported").len(), 1);
    assert_eq!(mock.seen("/supported")[0].method, "GET");

    // After the TTL the refresh fails: the last good copy is kept.
    tokio::time::sleep(Duration::from_millis(1600)).await;
    let stale = c.supported().await.unwrap();
    assert_eq!(*stale, *s);
    assert_eq!(mock.seen("/supported").len(), 2);
    // ...and the failed refresh does not turn into a request per call.
    let _ = c.supported().await.unwrap();
    assert_eq!(mock.seen("/supported").len(), 2);

    // Without any good copy, the error comes through.
    let empty = Mock::default();
    empty.push("/supported", reply(200, json!({"kinds": "none"})));
    let c2 = client(empty.start().await);
    assert!(matches!(
        c2.supported().await.unwrap_err(),
        FacilitatorError::BadResponse(_)
    ));
}

#[tokio::test]
async fn fee_payer_stays_stable_while_listed() {
    let mock = Mock::default();
    mock.push("/supported", supported("FEE1", &["FEE1"]));
    // A second signer appears and /supported now names it: keep FEE1 (still a signer).
    mock.push("/supported", supported("FEE2", &["FEE1", "FEE2"]));
    // FEE1 is retired: switch to FEE2.
    mock.push("/supported", supported("FEE2", &["FEE2"]));
    let addr = mock.start().await;
    let mut cfg = config(&format!("http://{addr}"));
    cfg.supported_ttl = Duration::from_millis(1);
    let c = FacilitatorClient::new(cfg).unwrap();

    c.supported().await.unwrap();
    assert_eq!(c.fee_payer(SOL).as_deref(), Some("FEE1"));
    tokio::time::sleep(Duration::from_millis(20)).await;
    let s = c.supported().await.unwrap();
    assert_eq!(
        s.fee_payers(SOL),
        ["FEE2"],
        "the facilitator now names FEE2"
    );
    assert_eq!(
        c.fee_payer(SOL).as_deref(),
        Some("FEE1"),
        "but FEE1 is still listed"
    );
    assert_eq!(c.fee_payer(SOL).as_deref(), Some("FEE1"));
    tokio::time::sleep(Duration::from_millis(20)).await;
    c.supported().await.unwrap();
    assert_eq!(c.fee_payer(SOL).as_deref(), Some("FEE2"));
    assert_eq!(mock.seen("/supported").len(), 3);
}

#[tokio::test]
async fn cdp_auth_sends_a_fresh_bound_jwt_per_request() {
    use ring::rand::SystemRandom;
    use ring::signature::{
        EcdsaKeyPair, KeyPair, UnparsedPublicKey, ECDSA_P256_SHA256_FIXED,
        ECDSA_P256_SHA256_FIXED_SIGNING,
    };
    let rng = SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
    let public = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
        .unwrap()
        .public_key()
        .as_ref()
        .to_vec();
    let pem = format!(
        "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
        STANDARD.encode(pkcs8.as_ref())
    );

    let mock = Mock::default();
    mock.push(
        "/platform/v2/x402/verify",
        reply(200, json!({"isValid": true})),
    );
    mock.push(
        "/platform/v2/x402/settle",
        reply(200, json!({"success": true, "transaction": "0x1"})),
    );
    mock.push("/platform/v2/x402/supported", supported("FEE1", &["FEE1"]));
    let addr = mock.start().await;
    // No trailing slash, like the CDP base URL.
    let mut cfg = config(&format!("http://{addr}/platform/v2/x402"));
    cfg.auth = FacilitatorAuth::Cdp {
        key_id: "organizations/o/apiKeys/k".into(),
        key_secret: pem,
    };
    let c = FacilitatorClient::new(cfg).unwrap();

    assert!(c.verify(&payload(), &requirement()).await.unwrap().is_valid);
    assert!(matches!(
        c.settle(&payload(), &requirement()).await.unwrap(),
        SettleOutcome::Settled { .. }
    ));
    c.supported().await.unwrap();

    let mut nonces = Vec::new();
    for (path, method) in [("verify", "POST"), ("settle", "POST"), ("supported", "GET")] {
        let seen = mock.seen(&format!("/platform/v2/x402/{path}"));
        assert_eq!(seen.len(), 1, "{path}");
        let auth = seen[0].authorization.clone().expect("Authorization header");
        let jwt = auth.strip_prefix("Bearer ").expect("Bearer token");
        let parts: Vec<&str> = jwt.split('.').collect();
        assert_eq!(parts.len(), 3);
        let header: Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[0]).unwrap()).unwrap();
        let claims: Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
        assert_eq!(header["alg"], "ES256");
        assert_eq!(header["kid"], "organizations/o/apiKeys/k");
        assert_eq!(
            claims["uris"],
            json!([format!("{method} {addr}/platform/v2/x402/{path}")])
        );
        assert_eq!(claims["iss"], "cdp");
        let iat = claims["iat"].as_u64().unwrap();
        assert_eq!(claims["exp"].as_u64().unwrap(), iat + 120);
        let sig = URL_SAFE_NO_PAD.decode(parts[2]).unwrap();
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, &public)
            .verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &sig)
            .expect("JWT verifies with the key's public half");
        nonces.push(header["nonce"].clone());
    }
    nonces.sort_by_key(|n| n.to_string());
    nonces.dedup();
    assert_eq!(nonces.len(), 3, "a fresh token per request");
}
