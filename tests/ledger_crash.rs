//! The SQLite ledger across a crash, with the real binary, the real chain and the official
//! facilitator: a paycall SIGKILLed while its settlement is in flight, restarted on the same
//! file, serves the kept reply to the same PAYMENT-SIGNATURE once the transfer is confirmed on
//! chain — with exactly one settlement in the facilitator's trace; a payment-identifier retry
//! after a restart gets the first reply byte for byte; `paycall ledger` totals equal what
//! reached payTo on chain.

#[path = "support/server.rs"]
mod server_support;
#[path = "support/stack.rs"]
mod stack;
#[path = "support/upstream.rs"]
mod upstream;

use base64::Engine;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use server_support::enc;
use stack::LocalStack;

/// One paycall process on a fixed port and ledger file; restartable.
struct Paycall {
    port: u16,
    db: PathBuf,
    stack_env: Vec<(String, String)>,
    child: Option<Child>,
    log: PathBuf,
}

impl Paycall {
    fn routes() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("routes.yaml")
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    fn env(&self) -> Vec<(String, String)> {
        let mut v = self.stack_env.clone();
        v.push(("PAYCALL_LISTEN".into(), format!("127.0.0.1:{}", self.port)));
        v.push(("PAYCALL_BASE_URL".into(), self.url("")));
        v.push((
            "PAYCALL_LEDGER_URL".into(),
            format!("sqlite://{}", self.db.display()),
        ));
        v.push(("PAYCALL_INSTANCE".into(), "crash-test".into()));
        v
    }

    /// Starts the binary and waits (bounded) until /status answers.
    fn start(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_paycall"))
            .env_clear()
            .envs(self.env())
            .arg("--config")
            .arg(Self::routes())
            .arg("serve")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("run paycall");
        self.child = Some(child);
        let started = Instant::now();
        loop {
            if let Ok((200, _)) = stack::http_request("GET", &self.url("/status"), None) {
                return;
            }
            if let Some(Ok(Some(status))) = self.child.as_mut().map(|c| c.try_wait()) {
                panic!("paycall exited ({status}):\n{}", self.log_text());
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "paycall not ready in 30 s:\n{}",
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill(); // SIGKILL
            let _ = c.wait();
        }
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// `paycall ledger --json` on the same configuration.
    fn ledger_json(&self) -> Value {
        let out = Command::new(env!("CARGO_BIN_EXE_paycall"))
            .env_clear()
            .envs(self.env())
            .arg("--config")
            .arg(Self::routes())
            .args(["ledger", "--json", "--since", "1d"])
            .output()
            .expect("run paycall ledger");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("ledger --json prints JSON")
    }
}

impl Drop for Paycall {
    fn drop(&mut self) {
        self.kill();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn decode(v: &str) -> Value {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(v.trim())
        .expect("base64");
    serde_json::from_slice(&bytes).expect("json")
}

/// GET with a PAYMENT-SIGNATURE: status, PAYMENT-RESPONSE header, raw body.
async fn send(url: &str, sig: &str) -> (u16, Option<String>, Vec<u8>) {
    let r = server_support::client()
        .get(url)
        .header("PAYMENT-SIGNATURE", sig)
        .timeout(Duration::from_secs(60))
        .send()
        .await
        .expect("request to paycall");
    let status = r.status().as_u16();
    let receipt = r
        .headers()
        .get("payment-response")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    (
        status,
        receipt,
        r.bytes().await.unwrap_or_default().to_vec(),
    )
}

fn with_identifier(payload: &Value, id: &str) -> String {
    let mut p = payload.clone();
    p["extensions"]["payment-identifier"] = json!({"info": {"required": false, "id": id}});
    base64::engine::general_purpose::STANDARD.encode(p.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_mid_settlement_and_restarts_never_lose_or_double_a_payment() {
    let stack = LocalStack::start();
    let canary = upstream::canary("127.0.0.2").await;
    let up = upstream::start(&canary.url()).await;
    let dir = tempfile::tempdir().unwrap();
    let mut paycall = Paycall {
        port: free_port(),
        db: dir.path().join("ledger.db"),
        stack_env: vec![
            (
                "PAYCALL_FACILITATOR_URL".into(),
                stack.facilitator_url.clone(),
            ),
            ("PAYCALL_EVM_PAY_TO".into(), stack.pay_to.clone()),
            ("PAYCALL_SOLANA_PAY_TO".into(), stack.solana("payTo")),
            ("PAYCALL_UPSTREAM_SOLANA_RPC".into(), stack.solana("rpcUrl")),
            ("PAYCALL_ALLOW_CIDRS".into(), "127.0.0.1/32".into()),
            ("PAYCALL_UPSTREAM_BASE_RPC".into(), stack.rpc_url.clone()),
            ("PAYCALL_LOG".into(), "info".into()),
        ],
        child: None,
        log: dir.path().join("paycall.log"),
    };
    paycall.start();
    let buyer_start = stack.usdc_balance(&stack.buyer);
    let pay_to_start = stack.usdc_balance(&stack.pay_to);
    let target = paycall.url(&format!("/api/http?url={}", enc(&up.url("/hello"))));

    // 1. SIGKILL while the facilitator holds /settle (it has settled on chain meanwhile).
    stack.set_slow_ms(8_000);
    stack.set_mode("normal", "slow");
    stack.reset_calls();
    let sig = stack
        .sign_only_async(&target, "GET", None)
        .await
        .payment_signature;
    let in_flight = {
        let (t, s) = (target.clone(), sig.clone());
        tokio::spawn(async move {
            server_support::client()
                .get(&t)
                .header("PAYMENT-SIGNATURE", s)
                .timeout(Duration::from_secs(60))
                .send()
                .await
                .map(|r| r.status().as_u16())
        })
    };
    let started = Instant::now();
    while stack.settle_calls() == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no /settle reached the facilitator"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    paycall.kill();
    assert!(
        in_flight.await.unwrap().is_err(),
        "the killed server gave no answer"
    );
    let started = Instant::now();
    while stack.usdc_balance(&stack.buyer) == buyer_start {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the transfer never landed"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(up.total(), 1, "the work was done once");

    // 2. Restart on the same file; the buyer repeats the same PAYMENT-SIGNATURE.
    stack.set_mode("normal", "normal");
    paycall.start();
    let (s, receipt, body) = send(&target, &sig).await;
    let b: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(s, 200, "{b}\n{}", paycall.log_text());
    assert_eq!(b["body"], "hello");
    let receipt = decode(&receipt.expect("PAYMENT-RESPONSE on the kept reply"));
    assert_eq!(receipt["success"], true, "{receipt}");
    assert!(
        receipt["transaction"]
            .as_str()
            .is_some_and(|t| t.len() == 66),
        "{receipt}"
    );
    assert_eq!(
        stack.settle_calls(),
        1,
        "confirmed on chain, not settled again"
    );
    assert_eq!(up.total(), 1, "the kept reply, not new work");
    assert_eq!(stack.usdc_balance(&stack.buyer), buyer_start - 10_000);
    assert_eq!(stack.usdc_balance(&stack.pay_to), pay_to_start + 10_000);
    // Asked again: the same kept answer, still one settlement.
    let (s, _, body2) = send(&target, &sig).await;
    assert_eq!(s, 200);
    assert_eq!(body2, body);
    assert_eq!(stack.settle_calls(), 1);

    // 3. payment-identifier: the first reply byte for byte after a crash and a restart.
    stack.reset_calls();
    let pid_target = paycall.url(&format!("/api/http?url={}", enc(&up.url("/json"))));
    let signed = stack.sign_only_async(&pid_target, "GET", None).await;
    let first = with_identifier(&signed.payload, "crash-test-0123456789abcdef");
    let (s1, r1, b1) = send(&pid_target, &first).await;
    assert_eq!(s1, 200, "{}", String::from_utf8_lossy(&b1));
    assert_eq!(stack.settle_calls(), 1);
    paycall.kill();
    paycall.start();
    let (s2, r2, b2) = send(&pid_target, &first).await;
    assert_eq!(
        (s2, &r2, &b2),
        (s1, &r1, &b1),
        "byte for byte, receipt included"
    );
    assert_eq!(stack.settle_calls(), 1, "no second settlement");
    assert_eq!(stack.verify_calls(), 1, "no second verify");
    // The same id with another payment: 409, before any facilitator call.
    let other = stack.sign_only_async(&pid_target, "GET", None).await;
    let clash = with_identifier(&other.payload, "crash-test-0123456789abcdef");
    let (s3, _, b3) = send(&pid_target, &clash).await;
    let b3: Value = serde_json::from_slice(&b3).unwrap();
    assert_eq!(
        (s3, b3["error"].as_str()),
        (409, Some("payment_identifier_conflict")),
        "{b3}"
    );
    assert_eq!(stack.verify_calls(), 1);
    // A malformed id: 400 before any facilitator call.
    let bad = with_identifier(&other.payload, "short");
    let (s4, _, b4) = send(&pid_target, &bad).await;
    let b4: Value = serde_json::from_slice(&b4).unwrap();
    assert_eq!(
        (s4, b4["error"].as_str()),
        (400, Some("invalid_payment_identifier")),
        "{b4}"
    );
    assert_eq!(stack.verify_calls(), 1);

    // 4. The operator's view equals the chain.
    paycall.kill();
    let report = paycall.ledger_json();
    let total: u128 = report["totals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["atomic"].as_str().unwrap().parse::<u128>().unwrap())
        .sum();
    assert_eq!(
        total as i128,
        stack.usdc_balance(&stack.pay_to) as i128 - pay_to_start as i128,
        "{report}"
    );
    assert_eq!(report["states"]["settled"], 2, "{report}");
    assert_eq!(canary.hits(), 0);
}
