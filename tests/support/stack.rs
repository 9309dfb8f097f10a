//! A real local x402 payment stack for integration tests: anvil (chain id 8453) with the test
//! USDC at Base's USDC address, Multicall3, and the official facilitator (tests/e2e/stack.mjs),
//! plus the official client (tests/e2e/pay.mjs) to pay any URL for real; and a Solana leg (a
//! Solana JSON-RPC over litesvm, settled by the same facilitator) paid with `PayOptions::solana()`.
//!
//!
//! Everything here blocks the calling thread. The calls that make a request to the service under
//! test (`pay`, `sign_only`, `send_signed`) have `_async` twins: inside a current-thread tokio
//! runtime that also runs the service, the blocking versions would deadlock, so they refuse to run
//! there and say which twin to use. Facilitator and chain calls (`calls`, `set_mode`,
//! `usdc_balance`, ...) only talk to the stack's own processes and are safe anywhere.
//!
//! Every wait is bounded; every failure panics with what the stack or the client printed.

use std::collections::BTreeMap;
use std::fs;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// How long the stack may take to come up (cold start is ~5 s, compiling contracts included).
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// Bound on one pay.mjs run; pay.mjs gives up on the HTTP exchange itself after PAY_TIMEOUT_MS.
const PAY_TIMEOUT_MS: u64 = 60_000;
const NODE_RUN_TIMEOUT: Duration = Duration::from_secs(90);
const HTTP_TIMEOUT: Duration = Duration::from_secs(30);

/// The running stack. Dropping it stops the facilitator and anvil.
pub struct LocalStack {
    pub rpc_url: String,
    pub facilitator_url: String,
    pub usdc: String,
    pub pay_to: String,
    pub buyer: String,
    pub buyer_key: String,
    pub chain_id: u64,
    /// The whole state JSON stack.mjs wrote (spare accounts, facilitator signer, pids, ...).
    pub state: Value,
    pub state_file: PathBuf,
    runner: NodeRunner,
    anvil_pid: Option<u32>,
    child: Child,
    _dir: tempfile::TempDir,
}

/// What pay.mjs saw: the final response of a paid request and the on-chain balances around it.
#[derive(Debug, Clone)]
pub struct PayResult {
    pub status: u16,
    /// Response headers, names lower-case.
    pub headers: BTreeMap<String, String>,
    /// Body parsed as JSON when it parses, else a JSON string of the text.
    pub body: Value,
    /// Decoded PAYMENT-RESPONSE header, if any.
    pub payment_response: Option<Value>,
    pub buyer: String,
    pub buyer_before: u128,
    pub buyer_after: u128,
    pub pay_to_before: u128,
    pub pay_to_after: u128,
    /// The full JSON line pay.mjs printed.
    pub raw: Value,
}

impl PayResult {
    /// USDC (atomic) the buyer lost during the request.
    pub fn buyer_spent(&self) -> i128 {
        self.buyer_before as i128 - self.buyer_after as i128
    }
    /// USDC (atomic) payTo gained during the request.
    pub fn pay_to_received(&self) -> i128 {
        self.pay_to_after as i128 - self.pay_to_before as i128
    }
}

/// A PAYMENT-SIGNATURE built by the official client from a 402, not sent.
#[derive(Debug, Clone)]
pub struct SignOnly {
    /// The raw header value (base64 JSON), ready to replay.
    pub payment_signature: String,
    /// The decoded PAYMENT-REQUIRED of the 402.
    pub payment_required: Value,
    /// The decoded payment payload (what `payment_signature` encodes).
    pub payload: Value,
}

/// Optional knobs for a payment.
#[derive(Debug, Clone, Default)]
pub struct PayOptions {
    /// Pay with this private key instead of the funded buyer (e.g. a spare, unfunded account).
    pub key: Option<String>,
    /// Extra request headers.
    pub headers: Vec<(String, String)>,
    /// Which offer the client pays: None or "base" (EVM), or "solana" (the stack's Solana leg;
    /// `key` is then a 32-byte seed in hex, e.g. `state.solana.poorBuyerKey`).
    pub network: Option<String>,
}

impl PayOptions {
    /// Pays the Solana offer as the stack's funded Solana buyer.
    pub fn solana() -> PayOptions {
        PayOptions {
            network: Some("solana".into()),
            ..Default::default()
        }
    }
}

/// The official @x402/express seller (tests/e2e/seller.mjs): GET/POST /paid priced in test USDC,
/// GET /free. Stops when dropped.
pub struct Seller {
    pub url: String,
    pub price: String,
    child: Child,
}

impl Drop for Seller {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        stop_child(&mut self.child, Duration::from_secs(3));
    }
}

impl LocalStack {
    /// Starts anvil + contracts + facilitator and waits (bounded) until they are ready.
    /// Panics with the stack's stderr if it fails, or with "run scripts/setup.sh" when the
    /// node packages are not installed.
    pub fn start() -> LocalStack {
        let e2e_dir = e2e_dir();
        check_installed(&e2e_dir);
        let dir = tempfile::Builder::new()
            .prefix("paycall-stack-")
            .tempdir()
            .expect("cannot create a temp dir for the stack");
        let state_file = dir.path().join("state.json");
        let stderr_file = dir.path().join("stack.stderr");
        let stderr = fs::File::create(&stderr_file).expect("cannot create the stack's stderr file");
        let started = Instant::now();
        let mut child = Command::new(node_bin())
            .arg(e2e_dir.join("stack.mjs"))
            .arg("--state")
            .arg(&state_file)
            .arg("--exit-on-stdin-close")
            .current_dir(&e2e_dir)
            // stdin stays open while we hold the Child: closing it (drop, or our death) stops the stack
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run `node` ({e}): run scripts/setup.sh"));

        let state = loop {
            if let Ok(text) = fs::read_to_string(&state_file) {
                if let Ok(v) = serde_json::from_str::<Value>(&text) {
                    break v;
                }
            }
            if let Ok(Some(status)) = child.try_wait() {
                panic!(
                    "the payment stack exited during start-up ({status}). Its stderr:\n{}",
                    read_lossy(&stderr_file)
                );
            }
            if started.elapsed() > START_TIMEOUT {
                stop_child(&mut child, Duration::from_secs(2));
                panic!(
                    "the payment stack was not ready within {START_TIMEOUT:?}. Its stderr:\n{}",
                    read_lossy(&stderr_file)
                );
            }
            std::thread::sleep(Duration::from_millis(25));
        };

        let field = |name: &str| -> String {
            state[name]
                .as_str()
                .unwrap_or_else(|| panic!("stack state has no string field {name}: {state}"))
                .to_string()
        };
        LocalStack {
            rpc_url: field("rpcUrl"),
            facilitator_url: field("facilitatorUrl"),
            usdc: field("usdc"),
            pay_to: field("payTo"),
            buyer: field("buyer"),
            buyer_key: field("buyerKey"),
            chain_id: state["chainId"].as_u64().unwrap_or(0),
            anvil_pid: state["pids"]["anvil"].as_u64().map(|p| p as u32),
            runner: NodeRunner {
                e2e_dir,
                state_file: state_file.clone(),
                scratch: dir.path().to_path_buf(),
                counter: Arc::new(AtomicUsize::new(0)),
            },
            state,
            state_file,
            child,
            _dir: dir,
        }
    }

    /// Process id of the stack's anvil (to check it is gone after drop).
    pub fn anvil_pid(&self) -> Option<u32> {
        self.anvil_pid
    }

    // ---- facilitator ----

    /// GET /supported of the facilitator.
    pub fn supported(&self) -> Value {
        self.facilitator_json("GET", "/supported", None)
    }

    /// Every /verify and /settle call the facilitator received so far, oldest first:
    /// `{seq, endpoint, body, status, response, mode, at, ms}`.
    pub fn calls(&self) -> Vec<Value> {
        match self.facilitator_json("GET", "/_calls", None) {
            Value::Array(calls) => calls,
            other => panic!("facilitator /_calls answered a non-array: {other}"),
        }
    }

    pub fn settle_calls(&self) -> usize {
        self.calls()
            .iter()
            .filter(|c| c["endpoint"] == "/settle")
            .count()
    }

    pub fn verify_calls(&self) -> usize {
        self.calls()
            .iter()
            .filter(|c| c["endpoint"] == "/verify")
            .count()
    }

    /// Each of `queries` on `base` with the signature `sig` is a 400 with an error and a message
    /// and no receipt, and none of them reached the facilitator.
    pub async fn assert_refused_before_payment(&self, base: &str, queries: &[String], sig: &str) {
        for q in queries {
            let (s, h, b) = super::server::send_signed(&format!("{base}{q}"), sig).await;
            assert_eq!(s, 400, "{q}: {b}");
            assert!(b["error"].is_string() && b["message"].is_string(), "{b}");
            assert!(h.get("payment-response").is_none());
        }
        assert_eq!(
            self.verify_calls(),
            0,
            "bad input never reaches the facilitator"
        );
    }

    /// Polls (bounded: 30 s) until the facilitator has received a /settle.
    pub async fn settle_reached(&self) {
        let started = Instant::now();
        while self.settle_calls() == 0 {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "no /settle reached the facilitator"
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    pub fn reset_calls(&self) {
        self.facilitator_json("POST", "/_calls/reset", Some("{}"));
    }

    /// Fault injection. verify: normal | down | unavailable | hang | garbage;
    /// settle: normal | fail | pending | down | unavailable | hang | garbage
    /// (see tests/e2e/lib/facilitator.mjs). Panics on an unknown mode.
    pub fn set_mode(&self, verify: &str, settle: &str) {
        let body = json!({ "verify": verify, "settle": settle }).to_string();
        self.facilitator_json("POST", "/_mode", Some(&body));
    }

    /// The buyer cancels one of its EIP-3009 authorizations on chain (tests/e2e/cancel.mjs);
    /// returns the transaction hash.
    pub fn cancel_authorization(&self, nonce: &str) -> String {
        let out = Command::new(node_bin())
            .arg(e2e_dir().join("cancel.mjs"))
            .arg("--state")
            .arg(&self.state_file)
            .arg("--nonce")
            .arg(nonce)
            .current_dir(e2e_dir())
            .output()
            .expect("run node cancel.mjs");
        assert!(
            out.status.success(),
            "cancel.mjs failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout).expect("cancel.mjs prints JSON");
        v["transaction"].as_str().unwrap_or_default().to_string()
    }

    /// How long the `slow` settle mode holds its answer after settling on chain.
    pub fn set_slow_ms(&self, ms: u64) {
        let body = json!({ "slowMs": ms }).to_string();
        self.facilitator_json("POST", "/_mode", Some(&body));
    }

    /// Mints test USDC (atomic units) to `to`; returns the transaction hash.
    pub fn mint(&self, to: &str, amount: u128) -> String {
        let body = json!({ "to": to, "amount": amount.to_string() }).to_string();
        let v = self.facilitator_json("POST", "/_mint", Some(&body));
        v["transaction"].as_str().unwrap_or_default().to_string()
    }

    fn facilitator_json(&self, method: &str, path: &str, body: Option<&str>) -> Value {
        let url = format!("{}{}", self.facilitator_url, path);
        let (status, text) = http_request(method, &url, body)
            .unwrap_or_else(|e| panic!("facilitator {method} {path} failed: {e}"));
        if status != 200 {
            panic!("facilitator {method} {path} answered {status}: {text}");
        }
        serde_json::from_str(&text).unwrap_or_else(|e| {
            panic!("facilitator {method} {path} sent invalid JSON ({e}): {text}")
        })
    }

    // ---- chain ----

    /// One JSON-RPC call to anvil; returns `result`, panics on an RPC error.
    pub fn rpc(&self, method: &str, params: Value) -> Value {
        let body =
            json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params }).to_string();
        let (status, text) = http_request("POST", &self.rpc_url, Some(&body))
            .unwrap_or_else(|e| panic!("anvil {method} failed: {e}"));
        let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| {
            panic!("anvil {method} answered {status} with invalid JSON ({e}): {text}")
        });
        if let Some(err) = v.get("error") {
            panic!("anvil {method} error: {err}");
        }
        v["result"].clone()
    }

    /// On-chain test-USDC balance of `addr` in atomic units (eth_call balanceOf).
    pub fn usdc_balance(&self, addr: &str) -> u128 {
        let hex_addr = addr.trim_start_matches("0x").to_ascii_lowercase();
        assert!(
            hex_addr.len() == 40 && hex_addr.bytes().all(|b| b.is_ascii_hexdigit()),
            "usdc_balance: {addr:?} is not a 0x-prefixed 20-byte address"
        );
        // balanceOf(address) selector 0x70a08231, address left-padded to 32 bytes
        let data = format!("0x70a08231{hex_addr:0>64}");
        let result = self.rpc(
            "eth_call",
            json!([{ "to": self.usdc, "data": data }, "latest"]),
        );
        let hex = result
            .as_str()
            .unwrap_or_else(|| panic!("eth_call returned {result}"));
        let digits = hex.trim_start_matches("0x").trim_start_matches('0');
        if digits.is_empty() {
            return 0;
        }
        u128::from_str_radix(digits, 16)
            .unwrap_or_else(|e| panic!("cannot parse balance {hex}: {e}"))
    }

    // ---- the Solana leg (tests/e2e/lib/solana.mjs) ----

    /// A string field of `state.solana` (rpcUrl, payTo, buyer, poorBuyerKey, feePayer, ...).
    pub fn solana(&self, name: &str) -> String {
        self.state["solana"][name]
            .as_str()
            .unwrap_or_else(|| panic!("stack state has no solana.{name}: {}", self.state))
            .to_string()
    }

    /// One JSON-RPC call to the Solana RPC; the whole answer (`result` or `error`).
    pub fn solana_rpc(&self, method: &str, params: Value) -> Value {
        let body =
            json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params }).to_string();
        let (status, text) = http_request("POST", &self.solana("rpcUrl"), Some(&body))
            .unwrap_or_else(|e| panic!("solana rpc {method} failed: {e}"));
        serde_json::from_str(&text).unwrap_or_else(|e| {
            panic!("solana rpc {method} answered {status} with invalid JSON ({e}): {text}")
        })
    }

    /// USDC (atomic) in a Solana token account, read from the RPC (getTokenAccountBalance);
    /// 0 when the account does not exist.
    pub fn solana_token_balance(&self, token_account: &str) -> u128 {
        let v = self.solana_rpc("getTokenAccountBalance", json!([token_account]));
        if v.get("error").is_some() {
            return 0;
        }
        v["result"]["value"]["amount"]
            .as_str()
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("getTokenAccountBalance {token_account}: {v}"))
    }

    // ---- the official client ----

    /// Pays `url` with the official client as the funded buyer. Panics if the client itself fails
    /// (no 402, offer refused, timeout); a refused payment is a normal result (status 402 ...).
    pub fn pay(&self, url: &str, method: &str, body: Option<&str>) -> PayResult {
        refuse_current_thread_runtime("pay", "pay_async");
        self.runner
            .pay(url, method, body, &PayOptions::default())
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// `pay` with options (other key, extra headers); Err carries the client's error.
    pub fn try_pay(
        &self,
        url: &str,
        method: &str,
        body: Option<&str>,
        opts: &PayOptions,
    ) -> Result<PayResult, String> {
        refuse_current_thread_runtime("try_pay", "try_pay_async");
        self.runner.pay(url, method, body, opts)
    }

    /// One unpaid request; from its 402 the official client builds the PAYMENT-SIGNATURE, which is
    /// returned unsent for replays and variations.
    pub fn sign_only(&self, url: &str, method: &str, body: Option<&str>) -> SignOnly {
        refuse_current_thread_runtime("sign_only", "sign_only_async");
        self.runner
            .sign_only(url, method, body)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// Sends the request once with the given PAYMENT-SIGNATURE (e.g. from `sign_only`).
    pub fn send_signed(
        &self,
        url: &str,
        method: &str,
        body: Option<&str>,
        payment_signature: &str,
    ) -> PayResult {
        refuse_current_thread_runtime("send_signed", "send_signed_async");
        self.runner
            .send_signed(url, method, body, payment_signature)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    pub async fn pay_async(&self, url: &str, method: &str, body: Option<&str>) -> PayResult {
        self.try_pay_async(url, method, body, &PayOptions::default())
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    }

    pub async fn try_pay_async(
        &self,
        url: &str,
        method: &str,
        body: Option<&str>,
        opts: &PayOptions,
    ) -> Result<PayResult, String> {
        let (runner, url, method, body, opts) =
            owned(&self.runner, url, method, body, opts.clone());
        tokio::task::spawn_blocking(move || runner.pay(&url, &method, body.as_deref(), &opts))
            .await
            .expect("pay.mjs runner thread panicked")
    }

    pub async fn sign_only_async(&self, url: &str, method: &str, body: Option<&str>) -> SignOnly {
        self.sign_only_with_async(url, method, body, &PayOptions::default())
            .await
    }

    pub async fn send_signed_async(
        &self,
        url: &str,
        method: &str,
        body: Option<&str>,
        payment_signature: &str,
    ) -> PayResult {
        self.send_signed_with_async(url, method, body, payment_signature, &PayOptions::default())
            .await
    }

    /// `sign_only_async` with options (`network`, `key`).
    pub async fn sign_only_with_async(
        &self,
        url: &str,
        method: &str,
        body: Option<&str>,
        opts: &PayOptions,
    ) -> SignOnly {
        let (runner, url, method, body, opts) =
            owned(&self.runner, url, method, body, opts.clone());
        tokio::task::spawn_blocking(move || {
            runner.sign_only_with(&url, &method, body.as_deref(), &opts)
        })
        .await
        .expect("pay.mjs runner thread panicked")
        .unwrap_or_else(|e| panic!("{e}"))
    }

    /// `send_signed_async` with options (`network` decides whose balances are read).
    pub async fn send_signed_with_async(
        &self,
        url: &str,
        method: &str,
        body: Option<&str>,
        payment_signature: &str,
        opts: &PayOptions,
    ) -> PayResult {
        let (runner, url, method, body, opts) =
            owned(&self.runner, url, method, body, opts.clone());
        let sig = payment_signature.to_string();
        tokio::task::spawn_blocking(move || {
            runner.send_signed_with(&url, &method, body.as_deref(), &sig, &opts)
        })
        .await
        .expect("pay.mjs runner thread panicked")
        .unwrap_or_else(|e| panic!("{e}"))
    }

    /// Runs tests/e2e/mcp.mjs (the official MCP TypeScript SDK client, paying with the official
    /// x402 client) with `args`; its JSON line, or the error it printed.
    pub async fn mcp_async(&self, args: &[&str]) -> Result<Value, String> {
        let runner = self.runner.clone();
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        tokio::task::spawn_blocking(move || runner.run_script("mcp.mjs", &args))
            .await
            .expect("mcp.mjs runner thread panicked")
    }

    /// Starts the official @x402/express seller against this stack, priced `price` (e.g. "$0.005").
    pub fn start_seller(&self, price: &str) -> Seller {
        let stdout_file = self.runner.scratch_file("seller.stdout");
        let stderr_file = self.runner.scratch_file("seller.stderr");
        let mut child = Command::new(node_bin())
            .arg(self.runner.e2e_dir.join("seller.mjs"))
            .arg("--state")
            .arg(&self.state_file)
            .arg("--price")
            .arg(price)
            .current_dir(&self.runner.e2e_dir)
            .stdin(Stdio::piped())
            .stdout(fs::File::create(&stdout_file).expect("seller stdout file"))
            .stderr(fs::File::create(&stderr_file).expect("seller stderr file"))
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run `node` ({e}): run scripts/setup.sh"));
        let started = Instant::now();
        loop {
            let out = read_lossy(&stdout_file);
            if let Some(line) = out.lines().find(|l| l.starts_with('{')) {
                if let Ok(v) = serde_json::from_str::<Value>(line) {
                    let url = v["url"]
                        .as_str()
                        .expect("seller printed no url")
                        .to_string();
                    return Seller {
                        url,
                        price: price.to_string(),
                        child,
                    };
                }
            }
            if let Ok(Some(status)) = child.try_wait() {
                panic!(
                    "seller.mjs exited ({status}). stderr:\n{}",
                    read_lossy(&stderr_file)
                );
            }
            if started.elapsed() > Duration::from_secs(30) {
                stop_child(&mut child, Duration::from_secs(1));
                panic!(
                    "seller.mjs not listening within 30 s. stderr:\n{}",
                    read_lossy(&stderr_file)
                );
            }
            std::thread::sleep(Duration::from_millis(25));
        }
    }
}

impl Drop for LocalStack {
    fn drop(&mut self) {
        // Closing stdin is the stack's cue to stop anvil and exit cleanly.
        drop(self.child.stdin.take());
        stop_child(&mut self.child, Duration::from_secs(5));
        // Belt and braces: anvil's guard stops it when the stack dies, but never leave one behind.
        if let Some(pid) = self.anvil_pid {
            let deadline = Instant::now() + Duration::from_secs(3);
            while is_anvil(pid) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            if is_anvil(pid) {
                let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
            }
        }
    }
}

/// True while `pid` is a live (not zombie) anvil process.
pub fn is_anvil(pid: u32) -> bool {
    let comm = fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    if comm.trim() != "anvil" {
        return false;
    }
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // state is the field after "(comm)"; Z = zombie (already dead, waiting to be reaped)
    let state = stat
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .next()
        .unwrap_or("");
    !state.is_empty() && state != "Z"
}

/// Runs pay.mjs; cloneable so the async twins can move it into spawn_blocking.
#[derive(Clone)]
struct NodeRunner {
    e2e_dir: PathBuf,
    state_file: PathBuf,
    scratch: PathBuf,
    counter: Arc<AtomicUsize>,
}

impl NodeRunner {
    fn scratch_file(&self, name: &str) -> PathBuf {
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        self.scratch.join(format!("{n:05}-{name}"))
    }

    fn pay(
        &self,
        url: &str,
        method: &str,
        body: Option<&str>,
        opts: &PayOptions,
    ) -> Result<PayResult, String> {
        let mut args = request_args(url, method, body);
        option_args(&mut args, opts);
        parse_pay(self.run_pay(&args)?)
    }

    fn send_signed(
        &self,
        url: &str,
        method: &str,
        body: Option<&str>,
        sig: &str,
    ) -> Result<PayResult, String> {
        self.send_signed_with(url, method, body, sig, &PayOptions::default())
    }

    fn send_signed_with(
        &self,
        url: &str,
        method: &str,
        body: Option<&str>,
        sig: &str,
        opts: &PayOptions,
    ) -> Result<PayResult, String> {
        let mut args = request_args(url, method, body);
        option_args(&mut args, opts);
        args.extend(["--payment-signature".to_string(), sig.to_string()]);
        parse_pay(self.run_pay(&args)?)
    }

    fn sign_only(&self, url: &str, method: &str, body: Option<&str>) -> Result<SignOnly, String> {
        self.sign_only_with(url, method, body, &PayOptions::default())
    }

    fn sign_only_with(
        &self,
        url: &str,
        method: &str,
        body: Option<&str>,
        opts: &PayOptions,
    ) -> Result<SignOnly, String> {
        let mut args = request_args(url, method, body);
        option_args(&mut args, opts);
        args.push("--sign-only".to_string());
        let v = self.run_pay(&args)?;
        let payment_signature = v["paymentSignature"]
            .as_str()
            .ok_or_else(|| format!("pay.mjs --sign-only printed no paymentSignature: {v}"))?
            .to_string();
        Ok(SignOnly {
            payment_signature,
            payment_required: v["paymentRequired"].clone(),
            payload: v["payload"].clone(),
        })
    }

    /// Runs `node pay.mjs --state <f> <args>`, bounded; returns its JSON line or the error it printed.
    fn run_pay(&self, args: &[String]) -> Result<Value, String> {
        self.run_script("pay.mjs", args)
    }

    /// Runs `node <script> --state <f> --timeout-ms N <args>` (pay.mjs, mcp.mjs), bounded.
    fn run_script(&self, script: &str, args: &[String]) -> Result<Value, String> {
        let out_file = self.scratch_file("pay.stdout");
        let err_file = self.scratch_file("pay.stderr");
        let mut child = Command::new(node_bin())
            .arg(self.e2e_dir.join(script))
            .arg("--state")
            .arg(&self.state_file)
            .arg("--timeout-ms")
            .arg(PAY_TIMEOUT_MS.to_string())
            .args(args)
            .current_dir(&self.e2e_dir)
            .stdin(Stdio::null())
            .stdout(fs::File::create(&out_file).map_err(|e| e.to_string())?)
            .stderr(fs::File::create(&err_file).map_err(|e| e.to_string())?)
            .spawn()
            .map_err(|e| format!("cannot run `node` ({e}): run scripts/setup.sh"))?;
        let started = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
                break status;
            }
            if started.elapsed() > NODE_RUN_TIMEOUT {
                stop_child(&mut child, Duration::from_secs(1));
                return Err(format!(
                    "{script} {args:?} did not finish within {NODE_RUN_TIMEOUT:?}"
                ));
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let stdout = read_lossy(&out_file);
        let line = stdout
            .lines()
            .rev()
            .find(|l| l.trim_start().starts_with('{'));
        let parsed = line.and_then(|l| serde_json::from_str::<Value>(l).ok());
        match parsed {
            Some(v) if status.success() => Ok(v),
            Some(v) => Err(format!(
                "{script} {args:?} failed: {}\n{}",
                v["error"].as_str().unwrap_or("(no message)"),
                v["stack"].as_str().unwrap_or("")
            )),
            None => Err(format!(
                "{script} {args:?} printed no JSON ({status}). stdout:\n{stdout}\nstderr:\n{}",
                read_lossy(&err_file)
            )),
        }
    }
}

fn request_args(url: &str, method: &str, body: Option<&str>) -> Vec<String> {
    let mut args = vec![
        "--url".to_string(),
        url.to_string(),
        "--method".to_string(),
        method.to_string(),
    ];
    if let Some(body) = body {
        args.extend(["--body".to_string(), body.to_string()]);
    }
    args
}

fn option_args(args: &mut Vec<String>, opts: &PayOptions) {
    if let Some(key) = &opts.key {
        args.extend(["--key".to_string(), key.clone()]);
    }
    if let Some(network) = &opts.network {
        args.extend(["--network".to_string(), network.clone()]);
    }
    for (name, value) in &opts.headers {
        args.extend(["--header".to_string(), format!("{name}: {value}")]);
    }
}

fn parse_pay(v: Value) -> Result<PayResult, String> {
    let amount = |name: &str| -> Result<u128, String> {
        v[name]
            .as_str()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| format!("pay.mjs output has no numeric {name}: {v}"))
    };
    let headers = v["headers"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, val)| (k.clone(), val.as_str().unwrap_or_default().to_string()))
                .collect()
        })
        .unwrap_or_default();
    Ok(PayResult {
        status: v["status"]
            .as_u64()
            .ok_or_else(|| format!("pay.mjs output has no status: {v}"))? as u16,
        headers,
        body: v["body"].clone(),
        payment_response: match &v["paymentResponse"] {
            Value::Null => None,
            other => Some(other.clone()),
        },
        buyer: v["buyer"].as_str().unwrap_or_default().to_string(),
        buyer_before: amount("buyerBefore")?,
        buyer_after: amount("buyerAfter")?,
        pay_to_before: amount("payToBefore")?,
        pay_to_after: amount("payToAfter")?,
        raw: v,
    })
}

fn owned(
    runner: &NodeRunner,
    url: &str,
    method: &str,
    body: Option<&str>,
    opts: PayOptions,
) -> (NodeRunner, String, String, Option<String>, PayOptions) {
    (
        runner.clone(),
        url.to_string(),
        method.to_string(),
        body.map(str::to_string),
        opts,
    )
}

/// The blocking client calls would starve a current-thread runtime that also runs the server
/// under test (a deadlock until pay.mjs times out): refuse loudly instead.
fn refuse_current_thread_runtime(name: &str, twin: &str) {
    if let Ok(handle) = tokio::runtime::Handle::try_current() {
        if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::CurrentThread {
            panic!(
                "LocalStack::{name} blocks the thread and would deadlock this current-thread tokio \
                 runtime: use LocalStack::{twin}().await (or a multi_thread runtime)"
            );
        }
    }
}

fn e2e_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("e2e")
}

fn node_bin() -> String {
    std::env::var("PAYCALL_NODE").unwrap_or_else(|_| "node".to_string())
}

fn check_installed(e2e_dir: &Path) {
    let needed = [
        "node_modules/@x402/core/package.json",
        "node_modules/@x402/evm/package.json",
        "node_modules/@x402/fetch/package.json",
        "node_modules/@modelcontextprotocol/sdk/package.json",
        "node_modules/viem/package.json",
        "node_modules/@x402/svm/package.json",
        "node_modules/litesvm-linux-x64-gnu/package.json",
        "node_modules/solc/package.json",
        "node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil",
    ];
    for rel in needed {
        if !e2e_dir.join(rel).exists() {
            panic!(
                "{} is missing: the e2e node packages are not installed. Run scripts/setup.sh \
                 (it runs `npm ci --ignore-scripts` in tests/e2e).",
                e2e_dir.join(rel).display()
            );
        }
    }
    match Command::new(node_bin()).arg("--version").output() {
        Ok(out) if out.status.success() => {}
        _ => panic!("`node` is not runnable: run scripts/setup.sh (it installs nodejs)"),
    }
}

fn stop_child(child: &mut Child, grace: Duration) {
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

fn read_lossy(path: &Path) -> String {
    fs::read(path)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default()
}

/// Minimal HTTP/1.1 client for the stack's own loopback endpoints (facilitator control, anvil
/// JSON-RPC). Blocking std::net on purpose: usable from any test, sync or async, with no runtime.
/// Returns (status, body).
pub fn http_request(method: &str, url: &str, body: Option<&str>) -> Result<(u16, String), String> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| format!("{url}: only http:// is supported"))?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let addr = authority
        .parse::<std::net::SocketAddr>()
        .map_err(|e| format!("{url}: the stack only listens on IP:port ({e})"))?;
    let mut stream = TcpStream::connect_timeout(&addr, HTTP_TIMEOUT)
        .map_err(|e| format!("connect {url}: {e}"))?;
    stream
        .set_read_timeout(Some(HTTP_TIMEOUT))
        .map_err(|e| e.to_string())?;
    stream
        .set_write_timeout(Some(HTTP_TIMEOUT))
        .map_err(|e| e.to_string())?;
    let body = body.unwrap_or("");
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream
        .write_all(request.as_bytes())
        .map_err(|e| format!("send to {url}: {e}"))?;
    let mut raw = Vec::new();
    stream
        .read_to_end(&mut raw)
        .map_err(|e| format!("read from {url}: {e}"))?;
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| format!("{url}: response without a header end"))?;
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut payload = raw[split + 4..].to_vec();
    let status: u16 = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("{url}: bad status line in {head:?}"))?;
    let chunked = head.lines().any(|l| {
        let l = l.to_ascii_lowercase();
        l.starts_with("transfer-encoding:") && l.contains("chunked")
    });
    if chunked {
        payload = dechunk(&payload).ok_or_else(|| format!("{url}: malformed chunked body"))?;
    }
    Ok((status, String::from_utf8_lossy(&payload).into_owned()))
}

fn dechunk(mut data: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let line_end = data.windows(2).position(|w| w == b"\r\n")?;
        let size_text = std::str::from_utf8(&data[..line_end]).ok()?;
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        data = &data[line_end + 2..];
        if size == 0 {
            return Some(out);
        }
        if data.len() < size + 2 {
            return None;
        }
        out.extend_from_slice(&data[..size]);
        data = &data[size + 2..];
    }
}
