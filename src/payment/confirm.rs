//! Confirming a settlement on chain: the only proof, besides the facilitator's own success with
//! a transaction hash, that releases a kept reply.
//!
//! A facilitator that says an EIP-3009 authorization "is used" proves nothing: USDC says "used
//! or canceled", and the payer may have cancelled it or spent the nonce elsewhere. On chain the
//! two differ: the token emits `AuthorizationUsed(authorizer, nonce)` next to the `Transfer`,
//! and `AuthorizationCanceled(authorizer, nonce)` on a cancel. We look for those events (by the
//! transaction hash when we know it, else by the authorizer and nonce over recent blocks) and
//! accept only a `Transfer` from the payer to our payTo of exactly the price.
//!
//! Solana has no nonce and the transaction's id is the fee payer's signature, which the
//! facilitator adds after we last see the transaction. What we do know is the message the payer
//! signed (the ledger's key is its SHA-256) and the payer, who signs every transaction that
//! spends from their token account. So we list the payer's recent transactions
//! (`getSignaturesForAddress`), read each (`getTransaction`), and accept the one whose message
//! is ours, landed without error, and raised payTo's balance of the mint by exactly the price
//! (the meta's pre/post token balances). A transaction that is not on chain while its blockhash
//! has expired can never land: that payment is spent.

use base64::Engine;
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

/// What an x402 Solana payment says about itself, for a search on chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SolanaPayment {
    /// SHA-256 of the signed message (the ledger key's tail).
    pub message_hash: [u8; 32],
    /// The payer: the token transfer's authority (base58).
    pub authority: String,
    /// payTo, the owner of the receiving token account (base58).
    pub pay_to: String,
    pub mint: String,
    pub amount: u64,
    /// The transaction's recent blockhash (base58), when the transaction is at hand.
    pub blockhash: Option<String>,
    /// Unix seconds when the payment first reached us: it cannot have landed before.
    pub arrived_s: i64,
}

impl SolanaPayment {
    /// From a decoded x402 `exact` Solana payload and the offer it matched.
    pub fn from_payload(
        payload: &Value,
        pay_to: &str,
        mint: &str,
        arrived_s: i64,
    ) -> Option<SolanaPayment> {
        use crate::x402::solana_tx;
        let b64 = payload.get("payload")?.get("transaction")?.as_str()?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(b64.trim())
            .ok()?;
        let tx = solana_tx::parse(&bytes).ok()?;
        let transfer = tx.token_transfer()?;
        Some(SolanaPayment {
            message_hash: solana_tx::message_hash(tx.message),
            authority: solana_tx::base58(&transfer.authority),
            pay_to: pay_to.to_string(),
            mint: mint.to_string(),
            amount: transfer.amount,
            blockhash: Some(solana_tx::base58(&tx.blockhash)),
            arrived_s,
        })
    }

    /// From a ledger row's facts (`solana|<hex message hash>`, the verified payer); the
    /// blockhash is not kept, so only the search and the validity window decide.
    pub fn from_row(
        key: &str,
        payer: &str,
        pay_to: &str,
        mint: &str,
        amount: &str,
        arrived_s: i64,
    ) -> Option<SolanaPayment> {
        let hex = key.strip_prefix("solana|")?;
        if hex.len() != 64 {
            return None;
        }
        let mut message_hash = [0u8; 32];
        for (i, b) in message_hash.iter_mut().enumerate() {
            *b = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
        }
        Some(SolanaPayment {
            message_hash,
            authority: payer.to_string(),
            pay_to: pay_to.to_string(),
            mint: mint.to_string(),
            amount: amount.parse().ok()?,
            blockhash: None,
            arrived_s,
        })
    }
}

/// What the chain is asked about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Payment {
    Evm(Authorization),
    Solana(SolanaPayment),
}

/// The payer's transactions read back per search (newest first).
const SOLANA_SEARCH_LIMIT: u64 = 100;

/// How long after a payment's arrival an unknown blockhash proves it expired: a blockhash lives
/// 150 slots (about 60–90 s), and an RPC node a little behind the payer's may not know a fresh
/// one yet, so "not valid" means "expired" only once the blockhash is surely that old.
pub const SOLANA_BLOCKHASH_LIFETIME_S: i64 = 120;

/// Whether a Solana transaction not found on chain can still land (pure: unit-tested below).
pub fn solana_can_still_land(blockhash_valid: Option<bool>, arrived_s: i64, now_s: i64) -> bool {
    match blockhash_valid {
        Some(false) => now_s < arrived_s + SOLANA_BLOCKHASH_LIFETIME_S,
        _ => true,
    }
}

/// The verdict on one `getTransaction` result for a Solana payment (pure: unit-tested below);
/// None when the transaction is not this payment.
pub fn judge_solana_transaction(result: &Value, p: &SolanaPayment) -> Option<Onchain> {
    use crate::x402::solana_tx;
    let tx = result.get("transaction")?;
    let b64 = match tx {
        Value::Array(parts) => parts.first()?.as_str()?,
        Value::String(s) => s.as_str(),
        _ => return None,
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64.trim())
        .ok()?;
    let parsed = solana_tx::parse(&bytes).ok()?;
    if solana_tx::message_hash(parsed.message) != p.message_hash {
        return None;
    }
    let meta = result.get("meta")?;
    if !meta.get("err").is_none_or(Value::is_null) {
        // It landed and failed: its signatures are used, the same message can never land again.
        return Some(Onchain::Spent);
    }
    let balance = |key: &str| -> u128 {
        meta.get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|b| {
                b.get("owner").and_then(Value::as_str) == Some(p.pay_to.as_str())
                    && b.get("mint").and_then(Value::as_str) == Some(p.mint.as_str())
            })
            .filter_map(|b| {
                b.get("uiTokenAmount")?
                    .get("amount")?
                    .as_str()?
                    .parse::<u128>()
                    .ok()
            })
            .sum()
    };
    let (pre, post) = (balance("preTokenBalances"), balance("postTokenBalances"));
    if post.checked_sub(pre) == Some(p.amount as u128) {
        Some(Onchain::Transferred {
            transaction: solana_tx::base58(parsed.signatures.first()?),
        })
    } else {
        Some(Onchain::Spent)
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
        (network.starts_with("eip155:") || network.starts_with("solana:"))
            && self.rpcs.contains_key(network)
    }

    /// The chain's verdict on a payment; `tx_hint` is a transaction id the facilitator gave.
    pub async fn check(
        &self,
        network: &str,
        payment: &Payment,
        tx_hint: Option<&str>,
    ) -> Result<Onchain, String> {
        match payment {
            Payment::Evm(a) if network.starts_with("eip155:") => {
                self.check_evm(network, a, tx_hint).await
            }
            Payment::Solana(p) if network.starts_with("solana:") => {
                self.check_solana(network, p, tx_hint).await
            }
            _ => Err(format!("a payment of another kind than {network}")),
        }
    }

    /// Searches the payer's recent transactions for this payment's message.
    async fn check_solana(
        &self,
        network: &str,
        p: &SolanaPayment,
        tx_hint: Option<&str>,
    ) -> Result<Onchain, String> {
        let rpc = self
            .rpcs
            .get(network)
            .ok_or_else(|| format!("no RPC configured for {network}"))?;
        let get = |sig: String| {
            self.call(
                rpc,
                "getTransaction",
                json!([sig, {"encoding": "base64", "commitment": "confirmed", "maxSupportedTransactionVersion": 0}]),
            )
        };
        let is_signature = |s: &str| bs58::decode(s).into_vec().is_ok_and(|b| b.len() == 64);
        if let Some(sig) = tx_hint.filter(|s| is_signature(s)) {
            let r = get(sig.to_string()).await?;
            if let Some(v) = judge_solana_transaction(&r, p) {
                return Ok(v);
            }
        }
        // Asked before the search: a blockhash already expired then cannot land after it.
        let blockhash_valid = match &p.blockhash {
            Some(h) => self
                .call(
                    rpc,
                    "isBlockhashValid",
                    json!([h, {"commitment": "confirmed"}]),
                )
                .await?
                .get("value")
                .and_then(Value::as_bool),
            None => None,
        };
        let listed = self
            .call(
                rpc,
                "getSignaturesForAddress",
                json!([p.authority, {"limit": SOLANA_SEARCH_LIMIT, "commitment": "confirmed"}]),
            )
            .await?;
        // Newest first; a payment cannot land before it reached us (a minute's clock slack).
        for entry in listed.as_array().into_iter().flatten() {
            if entry
                .get("blockTime")
                .and_then(Value::as_i64)
                .is_some_and(|t| t < p.arrived_s - 60)
            {
                break;
            }
            let Some(sig) = entry.get("signature").and_then(Value::as_str) else {
                continue;
            };
            let r = get(sig.to_string()).await?;
            if let Some(v) = judge_solana_transaction(&r, p) {
                return Ok(v);
            }
        }
        let now_s = chrono::Utc::now().timestamp();
        Ok(
            if solana_can_still_land(blockhash_valid, p.arrived_s, now_s) {
                Onchain::NotFound
            } else {
                Onchain::Spent
            },
        )
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

    /// The chain's verdict on an EIP-3009 authorization; `tx_hint` is a hash the facilitator gave.
    async fn check_evm(
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

    fn solana_payment(amount: u64) -> (Vec<u8>, SolanaPayment) {
        let bytes = crate::x402::solana_tx::tests::sample(amount);
        let tx = crate::x402::solana_tx::parse(&bytes).unwrap();
        let p = SolanaPayment {
            message_hash: crate::x402::solana_tx::message_hash(tx.message),
            authority: "payer".into(),
            pay_to: "PayTo1111".into(),
            mint: "Mint1111".into(),
            amount,
            blockhash: None,
            arrived_s: 1_000,
        };
        (bytes, p)
    }

    fn got(bytes: &[u8], err: Value, pre: u64, post: u64, owner: &str) -> Value {
        let b64 = base64::engine::general_purpose::STANDARD.encode(bytes);
        let bal = |amount: u64| {
            json!([{"accountIndex": 3, "mint": "Mint1111", "owner": owner,
                    "uiTokenAmount": {"amount": amount.to_string(), "decimals": 6}}])
        };
        json!({
            "slot": 7,
            "transaction": [b64, "base64"],
            "meta": {"err": err, "preTokenBalances": bal(pre), "postTokenBalances": bal(post)}
        })
    }

    #[test]
    fn a_solana_payment_is_paid_only_by_its_own_message_moving_the_exact_price() {
        let (bytes, p) = solana_payment(10_000);
        let sig0 = bs58::encode([0u8; 64]).into_string();
        assert_eq!(
            judge_solana_transaction(&got(&bytes, Value::Null, 5, 10_005, "PayTo1111"), &p),
            Some(Onchain::Transferred { transaction: sig0 })
        );
        // Landed but failed: spent for good.
        assert_eq!(
            judge_solana_transaction(
                &got(
                    &bytes,
                    json!({"InstructionError": [1, "x"]}),
                    5,
                    5,
                    "PayTo1111"
                ),
                &p
            ),
            Some(Onchain::Spent)
        );
        // Our message, but payTo did not receive exactly the price.
        assert_eq!(
            judge_solana_transaction(&got(&bytes, Value::Null, 0, 9_999, "PayTo1111"), &p),
            Some(Onchain::Spent)
        );
        assert_eq!(
            judge_solana_transaction(&got(&bytes, Value::Null, 0, 10_000, "Someone"), &p),
            Some(Onchain::Spent)
        );
        // Another payment's transaction says nothing about this one.
        let (other, _) = solana_payment(10_001);
        assert_eq!(
            judge_solana_transaction(&got(&other, Value::Null, 0, 10_000, "PayTo1111"), &p),
            None
        );
        assert_eq!(judge_solana_transaction(&Value::Null, &p), None);
    }

    #[test]
    fn an_unknown_blockhash_proves_expiry_only_once_it_is_surely_old() {
        assert!(solana_can_still_land(None, 1_000, 5_000));
        assert!(solana_can_still_land(Some(true), 1_000, 5_000));
        assert!(solana_can_still_land(Some(false), 1_000, 1_000 + 119));
        assert!(!solana_can_still_land(Some(false), 1_000, 1_000 + 120));
    }

    #[test]
    fn a_solana_row_names_its_message_hash() {
        let key = format!("solana|{}", "0f".repeat(32));
        let p = SolanaPayment::from_row(&key, "payer", "to", "mint", "10000", 5).unwrap();
        assert_eq!(p.message_hash, [0x0f; 32]);
        assert_eq!(p.amount, 10_000);
        assert!(SolanaPayment::from_row("solana|zz", "p", "t", "m", "1", 5).is_none());
        assert!(SolanaPayment::from_row(&key, "p", "t", "m", "-1", 5).is_none());
        assert!(SolanaPayment::from_row("eip155:8453|0xa|0xb", "p", "t", "m", "1", 5).is_none());
    }
}
