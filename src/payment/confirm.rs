//! Confirming a settlement on chain: the only proof, besides the facilitator's own success with
//! a transaction hash, that releases a kept reply.
//!
//! A facilitator that says an EIP-3009 authorization "is used" proves nothing: USDC says "used
//! or canceled", and the payer may have cancelled it or spent the nonce elsewhere. On chain the
//! two differ: the token emits `AuthorizationUsed(authorizer, nonce)` next to the `Transfer`,
//! and `AuthorizationCanceled(authorizer, nonce)` on a cancel. We look for those events (by the
//! transaction hash when we know it, else by the authorizer and nonce over recent blocks) and
//! accept only a `Transfer` from the payer to our payTo of exactly the price.

use serde_json::{json, Value};
use std::collections::HashMap;
use std::time::Duration;
use tiny_keccak::{Hasher, Keccak};
use url::Url;

/// What the chain says about one authorization.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Onchain {
    /// The exact transfer to us happened in this transaction.
    Transferred { transaction: String },
    /// The authorization can never pay us: cancelled, or its nonce spent on another transfer.
    Spent,
    /// No trace (yet): not broadcast, not mined, or older than the look-back.
    NotFound,
}

/// The EIP-3009 facts of an EVM payment, lower-case hex.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authorization {
    pub asset: String,
    pub from: String,
    pub to: String,
    pub value: u128,
    pub nonce: String,
}

impl Authorization {
    /// From a decoded x402 `exact` EVM payload and the offer it matched.
    pub fn from_payload(payload: &Value, asset: &str) -> Option<Authorization> {
        let auth = payload.get("payload")?.get("authorization")?;
        let hex = |k: &str, len: usize| -> Option<String> {
            let s = auth.get(k)?.as_str()?.to_ascii_lowercase();
            (s.len() == 2 + len
                && s.starts_with("0x")
                && s[2..].bytes().all(|b| b.is_ascii_hexdigit()))
            .then_some(s)
        };
        Some(Authorization {
            asset: asset.to_ascii_lowercase(),
            from: hex("from", 40)?,
            to: hex("to", 40)?,
            value: auth.get("value")?.as_str()?.parse().ok()?,
            nonce: hex("nonce", 64)?,
        })
    }
}

fn topic(signature: &str) -> String {
    let mut k = Keccak::v256();
    k.update(signature.as_bytes());
    let mut out = [0u8; 32];
    k.finalize(&mut out);
    format!(
        "0x{}",
        out.iter().map(|b| format!("{b:02x}")).collect::<String>()
    )
}

fn pad_address(a: &str) -> String {
    format!("0x{:0>64}", a.trim_start_matches("0x"))
}

/// What a set of logs says about one authorization.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogVerdict {
    /// `AuthorizationUsed` with the exact `Transfer` to us.
    Paid,
    /// Cancelled, or used for another transfer.
    Spent,
}

fn hex_u128(data: &str) -> Option<u128> {
    let digits = data.trim_start_matches("0x").trim_start_matches('0');
    if digits.is_empty() {
        return Some(0);
    }
    u128::from_str_radix(digits, 16).ok()
}

/// The verdict from logs (pure: unit-tested below); None when they do not name the
/// authorization.
pub fn judge_logs(logs: &[Value], a: &Authorization) -> Option<LogVerdict> {
    let used = topic("AuthorizationUsed(address,bytes32)");
    let canceled = topic("AuthorizationCanceled(address,bytes32)");
    let transfer = topic("Transfer(address,address,uint256)");
    let ours = |l: &Value| {
        l.get("address")
            .and_then(Value::as_str)
            .is_some_and(|x| x.eq_ignore_ascii_case(&a.asset))
    };
    let topics = |l: &Value| -> Vec<String> {
        l.get("topics")
            .and_then(Value::as_array)
            .map(|t| {
                t.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_ascii_lowercase)
                    .collect()
            })
            .unwrap_or_default()
    };
    let mine = |t: &[String], sig: &str| {
        t.len() == 3 && t[0] == sig && t[1] == pad_address(&a.from) && t[2] == a.nonce
    };
    let mut authorization_used = false;
    for l in logs.iter().filter(|l| ours(l)) {
        let t = topics(l);
        if mine(&t, &canceled) {
            return Some(LogVerdict::Spent);
        }
        if mine(&t, &used) {
            authorization_used = true;
        }
    }
    if !authorization_used {
        return None;
    }
    let paid = logs.iter().filter(|l| ours(l)).any(|l| {
        let t = topics(l);
        let value = l.get("data").and_then(Value::as_str).and_then(hex_u128);
        t.len() == 3
            && t[0] == transfer
            && t[1] == pad_address(&a.from)
            && t[2] == pad_address(&a.to)
            && value == Some(a.value)
    });
    Some(if paid {
        LogVerdict::Paid
    } else {
        LogVerdict::Spent
    })
}

/// JSON-RPC clients per network (the offers' `rpc` upstreams).
pub struct Confirmer {
    client: reqwest::Client,
    rpcs: HashMap<String, Url>,
    /// Blocks searched back for the authorization's events when no hash is known.
    lookback: u64,
}

impl std::fmt::Debug for Confirmer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Confirmer({:?})", self.rpcs.keys().collect::<Vec<_>>())
    }
}

impl Confirmer {
    pub fn new(rpcs: HashMap<String, Url>) -> Result<Confirmer, String> {
        Ok(Confirmer {
            client: reqwest::Client::builder()
                .timeout(Duration::from_secs(5))
                .pool_idle_timeout(Duration::from_secs(4))
                .build()
                .map_err(|e| e.to_string())?,
            rpcs,
            lookback: 5_000,
        })
    }

    /// Whether this network can be confirmed on chain here.
    pub fn covers(&self, network: &str) -> bool {
        // EIP-3009 events only: a Solana offer's `rpc` serves startup's token-account check, and
        // a Solana payment must not be judged "not on chain" by an EVM log search.
        network.starts_with("eip155:") && self.rpcs.contains_key(network)
    }

    async fn call(&self, rpc: &Url, method: &str, params: Value) -> Result<Value, String> {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let r = self
            .client
            .post(rpc.clone())
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .map_err(|e| format!("{method}: {e}"))?;
        let bytes = r.bytes().await.map_err(|e| format!("{method}: {e}"))?;
        let v: Value = serde_json::from_slice(&bytes).map_err(|e| format!("{method}: {e}"))?;
        if let Some(e) = v.get("error") {
            return Err(format!("{method}: {e}"));
        }
        Ok(v.get("result").cloned().unwrap_or(Value::Null))
    }

    async fn receipt_verdict(
        &self,
        rpc: &Url,
        tx: &str,
        a: &Authorization,
    ) -> Result<Option<Onchain>, String> {
        let r = self
            .call(rpc, "eth_getTransactionReceipt", json!([tx]))
            .await?;
        if r.is_null() || r.get("status").and_then(Value::as_str) != Some("0x1") {
            return Ok(None);
        }
        let logs = r
            .get("logs")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        Ok(judge_logs(&logs, a).map(|v| match v {
            LogVerdict::Paid => Onchain::Transferred {
                transaction: tx.to_ascii_lowercase(),
            },
            LogVerdict::Spent => Onchain::Spent,
        }))
    }

    /// The chain's verdict on an authorization; `tx_hint` is a hash the facilitator gave.
    pub async fn check(
        &self,
        network: &str,
        a: &Authorization,
        tx_hint: Option<&str>,
    ) -> Result<Onchain, String> {
        let rpc = self
            .rpcs
            .get(network)
            .ok_or_else(|| format!("no RPC configured for {network}"))?;
        if let Some(tx) = tx_hint.filter(|t| t.len() == 66 && t.starts_with("0x")) {
            if let Some(v) = self.receipt_verdict(rpc, tx, a).await? {
                return Ok(v);
            }
        }
        let latest = self.call(rpc, "eth_blockNumber", json!([])).await?;
        let latest = latest
            .as_str()
            .and_then(|s| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok())
            .ok_or("eth_blockNumber: not a hex number")?;
        let from_block = latest.saturating_sub(self.lookback);
        let logs = self
            .call(
                rpc,
                "eth_getLogs",
                json!([{
                    "address": a.asset,
                    "fromBlock": format!("0x{from_block:x}"),
                    "toBlock": "latest",
                    "topics": [
                        [topic("AuthorizationUsed(address,bytes32)"), topic("AuthorizationCanceled(address,bytes32)")],
                        pad_address(&a.from),
                        a.nonce,
                    ]
                }]),
            )
            .await?;
        let logs = logs.as_array().cloned().unwrap_or_default();
        let canceled = topic("AuthorizationCanceled(address,bytes32)");
        for l in &logs {
            let first = l
                .get("topics")
                .and_then(|t| t.get(0))
                .and_then(Value::as_str)
                .map(str::to_ascii_lowercase);
            if first.as_deref() == Some(canceled.as_str()) {
                return Ok(Onchain::Spent);
            }
        }
        // AuthorizationUsed: its transaction's receipt says whether the transfer was ours.
        for l in &logs {
            if let Some(tx) = l.get("transactionHash").and_then(Value::as_str) {
                if let Some(v) = self.receipt_verdict(rpc, tx, a).await? {
                    return Ok(v);
                }
            }
        }
        Ok(Onchain::NotFound)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auth() -> Authorization {
        Authorization {
            asset: "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913".into(),
            from: "0x1111111111111111111111111111111111111111".into(),
            to: "0x2222222222222222222222222222222222222222".into(),
            value: 10_000,
            nonce: format!("0x{}", "ab".repeat(32)),
        }
    }

    fn log(a: &Authorization, topics: Vec<String>, data: &str) -> Value {
        json!({"address": a.asset, "topics": topics, "data": data})
    }

    #[test]
    fn topics_are_the_usdc_event_signatures() {
        assert_eq!(
            topic("Transfer(address,address,uint256)"),
            "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"
        );
    }

    #[test]
    fn only_the_exact_transfer_next_to_authorization_used_counts() {
        let a = auth();
        let used = log(
            &a,
            vec![
                topic("AuthorizationUsed(address,bytes32)"),
                pad_address(&a.from),
                a.nonce.clone(),
            ],
            "0x",
        );
        let transfer = |to: &str, value: u128| {
            log(
                &a,
                vec![
                    topic("Transfer(address,address,uint256)"),
                    pad_address(&a.from),
                    pad_address(to),
                ],
                &format!("0x{value:064x}"),
            )
        };
        assert_eq!(
            judge_logs(&[used.clone(), transfer(&a.to, 10_000)], &a),
            Some(LogVerdict::Paid)
        );
        assert_eq!(
            judge_logs(&[used.clone(), transfer(&a.to, 9_999)], &a),
            Some(LogVerdict::Spent)
        );
        assert_eq!(
            judge_logs(
                &[
                    used.clone(),
                    transfer("0x3333333333333333333333333333333333333333", 10_000)
                ],
                &a
            ),
            Some(LogVerdict::Spent)
        );
        let canceled = log(
            &a,
            vec![
                topic("AuthorizationCanceled(address,bytes32)"),
                pad_address(&a.from),
                a.nonce.clone(),
            ],
            "0x",
        );
        assert_eq!(judge_logs(&[canceled], &a), Some(LogVerdict::Spent));
        assert_eq!(
            judge_logs(&[transfer(&a.to, 10_000)], &a),
            None,
            "a transfer alone is not ours"
        );
        let mut other_token = transfer(&a.to, 10_000);
        other_token["address"] = json!("0x9999999999999999999999999999999999999999");
        assert_eq!(
            judge_logs(&[used, other_token], &a),
            Some(LogVerdict::Spent)
        );
    }
}
