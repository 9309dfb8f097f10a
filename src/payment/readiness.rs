//! Can every offer we advertise be paid? Checked by `paycall check` and at startup, per offered
//! network, and shown on `/status`:
//!
//! - the facilitator's `/supported` lists `exact` v2 for the network (Solana: with a `feePayer`);
//! - Solana, when its JSON-RPC is configured (`rpc`, the `solana_rpc` upstream by default): payTo
//!   owns a token account for the asset. The official client pays into payTo's associated token
//!   account and does not create it; without one every payment fails verify
//!   (`invalid_exact_svm_transaction_simulation_failed`).
//!
//! A definite "no" follows `payment.unsupported_network`: `refuse` → startup and `paycall check`
//! fail with the reason and the fix; `leave_out` → the offer is dropped from every challenge with a
//! warning. A check that could not be made (facilitator or RPC unreachable) is a warning, never a
//! drop: the gate then offers as before (Solana only once the facilitator names its fee payer).

use serde_json::{json, Value};
use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::RwLock;
use std::time::Duration;

use crate::config::{AcceptOption, Config, UnsupportedNetwork};
use crate::x402::facilitator::FacilitatorClient;

/// The verdict on one offered network.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkCheck {
    pub network: String,
    pub name: String,
    pub pay_to: String,
    /// `listed`, `not_listed` or `unknown` (facilitator unreachable).
    pub facilitator: &'static str,
    pub fee_payer: Option<String>,
    /// Solana: `present`, `missing`, `unknown` (RPC unreachable) or `not_checked` (no RPC).
    pub token_account: Option<&'static str>,
    /// Why this offer cannot be paid (a definite "no"), with the fix.
    pub problem: Option<String>,
    /// Why it could not be checked.
    pub warning: Option<String>,
}

impl NetworkCheck {
    pub fn to_json(&self, offered: bool) -> Value {
        json!({
            "network": self.network,
            "name": self.name,
            "payTo": self.pay_to,
            "offered": offered,
            "ready": offered && self.problem.is_none() && self.warning.is_none(),
            "facilitator": self.facilitator,
            "feePayer": self.fee_payer,
            "tokenAccount": self.token_account,
            "problem": self.problem,
            "warning": self.warning,
        })
    }
}

/// What startup decided, read by the gate (offers left out) and `/status`.
#[derive(Debug, Default)]
pub struct Readiness {
    checks: RwLock<Vec<NetworkCheck>>,
    left_out: RwLock<HashSet<String>>,
    /// Bumped by every `record`: the gate renders its ready-made 402s again.
    generation: AtomicU64,
}

impl Readiness {
    /// Records the checks; under `leave_out`, every network with a problem is dropped.
    pub fn record(&self, checks: Vec<NetworkCheck>, rule: UnsupportedNetwork) {
        let out: HashSet<String> = match rule {
            UnsupportedNetwork::LeaveOut => checks
                .iter()
                .filter(|c| c.problem.is_some())
                .map(|c| c.network.clone())
                .collect(),
            UnsupportedNetwork::Refuse => HashSet::new(),
        };
        if let Ok(mut l) = self.left_out.write() {
            *l = out;
        }
        if let Ok(mut c) = self.checks.write() {
            *c = checks;
        }
        self.generation.fetch_add(1, Ordering::Release);
    }

    /// Changes whenever the checks are recorded again (one atomic load).
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    pub fn is_left_out(&self, network: &str) -> bool {
        self.left_out
            .read()
            .map(|l| l.contains(network))
            .unwrap_or(false)
    }

    /// `/status`'s `networks`: one entry per configured offer (unchecked ones say so).
    pub fn status(&self, config: &Config) -> Vec<Value> {
        let checks = self.checks.read().map(|c| c.clone()).unwrap_or_default();
        config
            .payment
            .accepts
            .iter()
            .map(|a| {
                let offered = !self.is_left_out(&a.network);
                match checks.iter().find(|c| c.network == a.network) {
                    Some(c) => c.to_json(offered),
                    None => json!({
                        "network": a.network,
                        "name": a.name,
                        "payTo": a.pay_to,
                        "offered": offered,
                        "ready": null,
                        "facilitator": "not_checked",
                    }),
                }
            })
            .collect()
    }
}

/// `/status`'s `networks` for an app (what startup found, per offered network).
pub fn status_of(app: &crate::server::App) -> Vec<Value> {
    match app.services.get::<Readiness>() {
        Some(r) => r.status(&app.config),
        None => Readiness::default().status(&app.config),
    }
}

/// Checks every offered network (bounded: the facilitator's own timeouts, 5 s per RPC call).
pub async fn check(config: &Config, facilitator: &FacilitatorClient) -> Vec<NetworkCheck> {
    let supported = facilitator.supported().await;
    let rpc = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(5))
        .build()
        .ok();
    let mut out = Vec::new();
    for a in &config.payment.accepts {
        let mut c = NetworkCheck {
            network: a.network.clone(),
            name: a.name.clone(),
            pay_to: a.pay_to.clone(),
            facilitator: "unknown",
            fee_payer: None,
            token_account: None,
            problem: None,
            warning: None,
        };
        match &supported {
            Ok(s) => {
                let listed = s.supports(2, "exact", &a.network);
                c.fee_payer = s.fee_payers(&a.network).into_iter().next();
                if !listed || (a.is_solana() && c.fee_payer.is_none()) {
                    c.facilitator = "not_listed";
                    c.problem = Some(format!(
                        "the facilitator at {} does not list `exact` x402 v2 for {} ({}){}: no buyer could pay this offer. Use a facilitator that settles {}, or remove this entry from payment.accepts",
                        facilitator.endpoint_url("supported"),
                        a.network,
                        a.name,
                        if listed { " with a feePayer" } else { "" },
                        a.name,
                    ));
                } else {
                    c.facilitator = "listed";
                }
            }
            Err(e) => {
                c.warning = Some(format!(
                    "cannot read the facilitator's /supported ({e}): {} not verified",
                    a.network
                ));
            }
        }
        if a.is_solana() {
            c.token_account = Some("not_checked");
            if let (Some(name), Some(client)) = (&a.rpc, &rpc) {
                if let Some(url) = config.upstreams.get(name) {
                    check_token_account(client, url.as_str(), a, &mut c).await;
                }
            }
        }
        out.push(c);
    }
    out
}

async fn check_token_account(
    client: &reqwest::Client,
    url: &str,
    a: &AcceptOption,
    c: &mut NetworkCheck,
) {
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "getTokenAccountsByOwner",
        "params": [a.pay_to, {"mint": a.asset}, {"encoding": "base64"}],
    });
    let answer: Result<Value, String> = async {
        let r = client
            .post(url)
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let bytes = r.bytes().await.map_err(|e| e.to_string())?;
        serde_json::from_slice::<Value>(&bytes).map_err(|e| e.to_string())
    }
    .await;
    match answer {
        Ok(v) if v["result"]["value"].is_array() => {
            if v["result"]["value"]
                .as_array()
                .is_some_and(|l| !l.is_empty())
            {
                c.token_account = Some("present");
            } else {
                c.token_account = Some("missing");
                let problem = format!(
                    "Solana payTo {} has no token account for the asset {}: the official client pays into payTo's associated token account and does not create it, so every Solana payment would fail verify (invalid_exact_svm_transaction_simulation_failed). Create it once (about 0.002 SOL of rent), e.g. `spl-token create-account {} --owner {} --fee-payer <your keypair>`, or send any amount of USDC to {} from a wallet that creates it",
                    a.pay_to, a.asset, a.asset, a.pay_to, a.pay_to
                );
                c.problem = Some(match c.problem.take() {
                    Some(p) => format!("{p}; {problem}"),
                    None => problem,
                });
            }
        }
        Ok(v) => {
            c.token_account = Some("unknown");
            c.warning = Some(format!(
                "the Solana RPC at {url} did not answer getTokenAccountsByOwner: {}",
                v.get("error").unwrap_or(&v)
            ));
        }
        Err(e) => {
            c.token_account = Some("unknown");
            c.warning = Some(format!("cannot reach the Solana RPC at {url}: {e}"));
        }
    }
}

/// Applies `payment.unsupported_network` to the checks: Err(the refusal) under `refuse` when any
/// offer cannot be paid; else Ok(warnings to log, one line each).
pub fn verdict(checks: &[NetworkCheck], rule: UnsupportedNetwork) -> Result<Vec<String>, String> {
    let problems: Vec<String> = checks.iter().filter_map(|c| c.problem.clone()).collect();
    let mut warnings: Vec<String> = checks.iter().filter_map(|c| c.warning.clone()).collect();
    match rule {
        UnsupportedNetwork::Refuse if !problems.is_empty() => Err(format!(
            "{} (payment.unsupported_network is `refuse`; set it to `leave_out` to serve without these offers)",
            problems.join("; ")
        )),
        UnsupportedNetwork::Refuse => Ok(warnings),
        UnsupportedNetwork::LeaveOut => {
            warnings.extend(checks.iter().filter(|c| c.problem.is_some()).map(|c| {
                format!(
                    "{} ({}) left out of every offer: {}",
                    c.network,
                    c.name,
                    c.problem.as_deref().unwrap_or("")
                )
            }));
            Ok(warnings)
        }
    }
}
