//! Can every offer we advertise be paid? Checked by `paycall check` and at startup, per offered
//! network, and shown on `/status`:
//!
//! - the facilitator's `/supported` lists `exact` v2 for the network (Solana: with a `feePayer`);
//! - Solana, when its JSON-RPC is configured (`rpc`, the `solana_rpc` upstream by default): payTo's
//!   associated token account for the asset exists (its exact address, derived as the clients
//!   derive it: another token account of payTo's does not count). The official client pays into
//!   that account and does not create it; without it every payment fails verify
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
use crate::x402::facilitators::Facilitators;

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

/// `/status`'s `networks`: what startup found, per offered network (every one unchecked when
/// the services hold no readiness).
pub fn status_of(readiness: Option<&Readiness>, config: &Config) -> Vec<Value> {
    match readiness {
        Some(r) => r.status(config),
        None => Readiness::default().status(config),
    }
}

/// Checks every offered network (bounded: the facilitator's own timeouts, 5 s per RPC call).
pub async fn check(config: &Config, facilitator: &Facilitators) -> Vec<NetworkCheck> {
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
                        "{} does not list `exact` x402 v2 for {} ({}){}: no buyer could pay this offer. Use a facilitator that settles {}, or remove this entry from payment.accepts",
                        match facilitator.client_at(0) {
                            Some(only) if facilitator.len() == 1 => format!("the facilitator at {}", only.endpoint_url("supported")),
                            _ => format!("none of the facilitators {}", facilitator.describe()),
                        },
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
    use crate::x402::solana_ata::associated_token_address;
    use crate::x402::solana_tx::{TOKEN_2022_PROGRAM, TOKEN_PROGRAM};
    // The mint lives under one of the two token programs; its ATA is derived under that one.
    let candidates: Vec<(&str, String)> = [TOKEN_PROGRAM, TOKEN_2022_PROGRAM]
        .into_iter()
        .filter_map(|p| Some((p, associated_token_address(&a.pay_to, &a.asset, p)?)))
        .collect();
    let Some(expected) = candidates.first().map(|(_, ata)| ata.clone()) else {
        c.token_account = Some("unknown");
        c.warning = Some(format!(
            "Solana payTo {} or asset {} is not a base58 address: the token account was not checked",
            a.pay_to, a.asset
        ));
        return;
    };
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "getMultipleAccounts",
        "params": [candidates.iter().map(|(_, ata)| ata).collect::<Vec<_>>(), {"encoding": "base64"}],
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
            let accounts = v["result"]["value"].as_array().cloned().unwrap_or_default();
            let present = candidates
                .iter()
                .zip(&accounts)
                .any(|((program, _), acc)| is_token_account_of(acc, program, &a.pay_to, &a.asset));
            if present {
                c.token_account = Some("present");
            } else {
                c.token_account = Some("missing");
                let problem = format!(
                    "Solana payTo {} has no associated token account for the asset {} (expected at {expected}): the official client pays into exactly that account and does not create it, so every Solana payment would fail verify (invalid_exact_svm_transaction_simulation_failed). Create it once (about 0.002 SOL of rent), e.g. `spl-token create-account {} --owner {} --fee-payer <your keypair>`, or send any amount of USDC to {} from a wallet that creates it",
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
                "the Solana RPC at {url} did not answer getMultipleAccounts: {}",
                v.get("error").unwrap_or(&v)
            ));
        }
        Err(e) => {
            c.token_account = Some("unknown");
            c.warning = Some(format!("cannot reach the Solana RPC at {url}: {e}"));
        }
    }
}

/// Whether an RPC account (base64 data) is an initialized SPL token account of `program` holding
/// `mint` for `owner` (pure: unit-tested below). Layout: mint 0..32, owner 32..64, amount,
/// delegate (36 bytes), state at 108 (1 = initialized).
fn is_token_account_of(account: &Value, program: &str, owner: &str, mint: &str) -> bool {
    use base64::Engine;
    if account.get("owner").and_then(Value::as_str) != Some(program) {
        return false;
    }
    let Some(data) = account
        .get("data")
        .and_then(|d| d.get(0))
        .and_then(Value::as_str)
        .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
    else {
        return false;
    };
    let b58 = |r: std::ops::Range<usize>| data.get(r).map(crate::x402::solana_tx::base58);
    data.len() >= 165
        && b58(0..32).as_deref() == Some(mint)
        && b58(32..64).as_deref() == Some(owner)
        && data[108] == 1
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

#[cfg(test)]
mod tests {
    use super::is_token_account_of;
    use crate::x402::solana_tx::{base58, TOKEN_PROGRAM};
    use base64::Engine;
    use serde_json::json;

    fn account(program: &str, mint: [u8; 32], owner: [u8; 32], state: u8) -> serde_json::Value {
        let mut data = vec![0u8; 165];
        data[..32].copy_from_slice(&mint);
        data[32..64].copy_from_slice(&owner);
        data[108] = state;
        let b64 = base64::engine::general_purpose::STANDARD.encode(&data);
        json!({"owner": program, "data": [b64, "base64"], "lamports": 2039280})
    }

    #[test]
    fn only_an_initialized_account_of_the_owner_for_the_mint_counts() {
        let (mint, owner) = ([7u8; 32], [9u8; 32]);
        let (m, o) = (base58(&mint), base58(&owner));
        assert!(is_token_account_of(
            &account(TOKEN_PROGRAM, mint, owner, 1),
            TOKEN_PROGRAM,
            &o,
            &m
        ));
        assert!(!is_token_account_of(
            &account(TOKEN_PROGRAM, mint, owner, 0),
            TOKEN_PROGRAM,
            &o,
            &m
        ));
        assert!(!is_token_account_of(
            &account(TOKEN_PROGRAM, owner, mint, 1),
            TOKEN_PROGRAM,
            &o,
            &m
        ));
        assert!(!is_token_account_of(
            &account("11111111111111111111111111111111", mint, owner, 1),
            TOKEN_PROGRAM,
            &o,
            &m
        ));
        assert!(!is_token_account_of(
            &serde_json::Value::Null,
            TOKEN_PROGRAM,
            &o,
            &m
        ));
    }
}
